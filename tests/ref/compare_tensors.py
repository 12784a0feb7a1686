#!/usr/bin/env python3
"""compare_tensors.py — compares two files of step records ({"name", "layer", "pos", "shape",
"values"} a line: forward.py --tensors, llmchat -m tensors) step by step:

    compare_tensors.py REFERENCE.jsonl OTHER.jsonl [--tol 1e-4] [--allow-missing] [--quiet]

For every record of REFERENCE (matched by name, layer and pos) OTHER must hold one of the
same shape whose values are within the tolerance: the relative L2 difference
||other - ref|| / ||ref|| at most --tol (default 1e-4; see tests/ref/README.md for why).
Values that are null in the reference (scores of keys outside a sliding window) are left
out; elsewhere both must be finite numbers. Prints one line per step (relative L2, largest
absolute difference) and a summary; exits 1 when a step differs, has another shape, or is
missing from OTHER (unless --allow-missing). Records only OTHER has are listed, not
judged. Python 3 with numpy.
"""
import argparse
import json
import sys

import numpy as np


def load(path):
    out = {}
    for n, line in enumerate(open(path), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        key = (r['name'], int(r['layer']), int(r['pos']))
        if key in out:
            raise SystemExit('%s:%d: %s layer %d pos %d appears twice' % (path, n, *key))
        out[key] = r
    return out


def compare(ref, got):
    """(relative L2, largest absolute difference, problem or None)."""
    if list(ref['shape']) != list(got['shape']):
        return None, None, 'shape %s, reference %s' % (got['shape'], ref['shape'])
    a = np.array([np.nan if v is None else v for v in ref['values']], np.float64)
    b = np.array([np.nan if v is None else v for v in got['values']], np.float64)
    if a.shape != b.shape:
        return None, None, '%d values, reference %d' % (b.size, a.size)
    keep = ~np.isnan(a)
    if not np.all(np.isfinite(b[keep])):
        return None, None, 'non-finite values where the reference has numbers'
    d = b[keep] - a[keep]
    norm = np.linalg.norm(a[keep])
    rel = np.linalg.norm(d) / norm if norm > 0 else np.linalg.norm(d)
    return float(rel), float(np.max(np.abs(d))) if d.size else 0.0, None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('reference')
    ap.add_argument('other')
    ap.add_argument('--tol', type=float, default=1e-4)
    ap.add_argument('--allow-missing', action='store_true')
    ap.add_argument('--quiet', action='store_true', help='print only the steps that fail and the summary')
    a = ap.parse_args(argv)
    ref, got = load(a.reference), load(a.other)
    bad = missing = 0
    worst = (0.0, None)
    for key, r in ref.items():
        name, layer, pos = key
        if key not in got:
            missing += 1
            if not a.allow_missing:
                print('MISSING %-16s layer %3d pos %d' % key)
            continue
        rel, maxabs, problem = compare(r, got[key])
        failed = problem is not None or rel > a.tol
        bad += failed
        if rel is not None and rel > worst[0]:
            worst = (rel, key)
        if failed or not a.quiet:
            print('%s %-16s layer %3d pos %d  %s' % ('FAIL' if failed else 'ok  ', name, layer, pos,
                  problem or 'relative L2 %.2e, largest |difference| %.2e' % (rel, maxabs)))
    extra = sorted(set(got) - set(ref))
    if extra:
        print('only in %s: %s' % (a.other, ', '.join('%s/%d' % k[:2] for k in extra)))
    print('%d of %d steps within %g%s; largest relative L2 %.2e%s' % (
        len(ref) - bad - missing, len(ref), a.tol, ', %d missing' % missing if missing else '',
        worst[0], ' (%s layer %d pos %d)' % worst[1] if worst[1] else ''))
    return 1 if bad or (missing and not a.allow_missing) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
