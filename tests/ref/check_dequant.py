#!/usr/bin/env python3
"""check_dequant.py — checks gguf.py's dequantization against llama.cpp's, recorded in a
golden file of lines {"file", "tensor", "type", "shape", "first16", "row_sums", "sum",
"sumsq"} (tests/data/golden/gguf_dequant.jsonl, or the shared set's larger one):

    check_dequant.py GOLDEN.jsonl DIR [DIR...] [--require N]

Each line's "file" is looked for under the DIRs, first match wins; lines whose file is in
none of them are counted as absent. For each tensor found: the type and shape must be the
golden's, first16 (the first 16 values) must agree to 1e-6 relative (1e-9 absolute),
row_sums (the first rows' sums, a row being ne[0] values) and sum to 1e-5 absolute and 1e-7
relative, sumsq to 1e-7 relative. Prints one line per file (tensors agreeing / checked, the
largest differences) and a total; exits 1 on any disagreement, or when fewer than N lines
(--require) were checked. Python 3 with numpy.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402


def compare(g, values, ti):
    """A list of what disagrees between the golden line g and the decoded tensor."""
    bad = []
    if ti.type_name != g['type']:
        bad.append('type %s, golden %s' % (ti.type_name, g['type']))
    if list(ti.ne) != list(g['shape']):
        bad.append('shape %s, golden %s' % (ti.ne, g['shape']))
        return bad, 0.0
    flat = values.reshape(-1).astype(np.float64)
    first = np.array(g['first16'], np.float64)
    got = flat[:len(first)]
    err16 = float(np.max(np.abs(got - first) / np.maximum(np.abs(first), 1e-3))) if len(first) else 0.0
    if not np.allclose(got, first, rtol=1e-6, atol=1e-9):
        bad.append('first16 differ (largest relative %.3g)' % err16)
    rows = flat.reshape(-1, ti.ne[0])
    sums = rows[:len(g['row_sums'])].sum(axis=1)
    if not np.allclose(sums, g['row_sums'], rtol=1e-7, atol=1e-5):
        bad.append('row sums %s, golden %s' % (sums.tolist(), g['row_sums']))
    if not np.isclose(flat.sum(), g['sum'], rtol=1e-7, atol=1e-5):
        bad.append('sum %.10g, golden %.10g' % (flat.sum(), g['sum']))
    if not np.isclose((flat * flat).sum(), g['sumsq'], rtol=1e-7, atol=0):
        bad.append('sumsq %.10g, golden %.10g' % ((flat * flat).sum(), g['sumsq']))
    return bad, err16


def main(argv):
    require = 0
    if '--require' in argv:
        i = argv.index('--require')
        require = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    golden, dirs = argv[0], argv[1:]
    lines = [json.loads(l) for l in open(golden) if l.strip()]
    by_file = {}
    for g in lines:
        by_file.setdefault(g['file'], []).append(g)
    checked = agreed = absent = 0
    failures = []
    types_seen = set()
    for fname, gs in by_file.items():
        path = next((os.path.join(d, fname) for d in dirs if os.path.exists(os.path.join(d, fname))), None)
        if path is None:
            absent += len(gs)
            continue
        f = gguf.GGUFFile(path)
        ok, worst = 0, 0.0
        for g in gs:
            checked += 1
            if g['tensor'] not in f.tensors:
                failures.append('%s: %s: not in the file' % (fname, g['tensor']))
                continue
            ti = f.tensors[g['tensor']]
            bad, err16 = compare(g, f.tensor(g['tensor']), ti)
            worst = max(worst, err16)
            types_seen.add(ti.type_name)
            if bad:
                failures.append('%s: %s (%s): %s' % (fname, g['tensor'], g['type'], '; '.join(bad)))
            else:
                ok += 1
        agreed += ok
        print('%-34s %3d/%-3d tensors agree (types %s; first16 largest relative difference %.2g)'
              % (fname, ok, len(gs), ','.join(sorted({g['type'] for g in gs})), worst))
    for msg in failures:
        print('DISAGREE: ' + msg)
    print('total: %d of %d golden lines checked agree; %d lines name files not found under %s; types: %s'
          % (agreed, checked, absent, ' '.join(dirs), ' '.join(sorted(types_seen))))
    if failures or checked < require:
        if checked < require:
            print('only %d lines checked, %d required' % (checked, require))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
