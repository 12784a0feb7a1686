#!/usr/bin/env python3
"""compare_tensors.py — compares two files of step records ({"name", "layer", "pos", "shape",
"values"} a line: forward.py --tensors, llmchat -m tensors) step by step:

    compare_tensors.py REFERENCE.jsonl OTHER.jsonl [--tol 1e-4] [--allow-missing] [--strict]
                       [--quiet]

For every record of REFERENCE (matched by name, layer and pos) OTHER must hold one of the
same shape whose values are within the tolerance: the relative L2 difference
||other - ref|| / ||ref|| at most --tol (default 1e-4; see tests/ref/README.md for why).
Values that are null in the reference (scores of keys outside a sliding window) are left
out; elsewhere both must be finite numbers. Prints one line per step (relative L2, largest
absolute difference) and a summary; exits 1 when a step differs, has another shape, or is
missing from OTHER (unless --allow-missing). Records only OTHER has are listed, not
judged. Python 3 with numpy.

Some steps of llama.cpp's graph exist only in some families (FAMILY_STEPS: Gemma's
inp_scaled, the q/k norms of Qwen3 and Gemma 3, the post-norms of Gemma 2 and 3, gpt-oss's
router logits plus its bias), and not every writer has them: llmchat's -m tensors writes
none of them today. A family
step only REFERENCE holds is listed as not written, and not judged unless --strict. A
file without inp_scaled whose inp_embd is the other's inp_scaled (llmchat names Gemma's
embedding row inp_embd after its scaling by sqrt(n_embd)) has it compared as
inp_scaled, and says so; likewise a file without ffn_moe_logits_biased whose
ffn_moe_logits is the other's ffn_moe_logits_biased (llmchat's gpt-oss router logits
hold the bias already) has it compared as ffn_moe_logits_biased, the unbiased step then
listed as not written.
"""
import argparse
import json
import sys

import numpy as np

# Steps only some families' graphs have (tests/ref/README.md, "The step records").
FAMILY_STEPS = ('inp_scaled', 'Qcur_normed', 'Kcur_normed', 'attn_post_norm', 'ffn_post_norm',
                'ffn_moe_logits_biased')


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


def settle_renamed(has, lacks, plain, family):
    """When lacks has no `family` step where has has one, and lacks's `plain` step at that
    layer and position is closer to has's `family` than to has's `plain`, lacks's `plain` is
    renamed `family`. Returns the keys of the `plain` steps renamed."""
    renamed = set()
    for key in [k for k in has if k[0] == family and k not in lacks]:
        other = (plain,) + key[1:]
        if other not in lacks or other not in has:
            continue
        as_family = compare(has[key], lacks[other])[0]
        as_plain = compare(has[other], lacks[other])[0]
        if as_family is not None and (as_plain is None or as_family < as_plain):
            lacks[key] = dict(lacks.pop(other), name=family)
            renamed.add(other)
    return renamed


def settle_scaled_embedding(has, lacks, lacks_path):
    """When lacks has no inp_scaled but has has one, and lacks's inp_embd is closer to
    has's inp_scaled than to has's inp_embd, lacks's inp_embd is renamed inp_scaled.
    Returns a note saying so (or None) and the inp_embd keys renamed."""
    renamed = settle_renamed(has, lacks, 'inp_embd', 'inp_scaled')
    if not renamed:
        return None, renamed
    return ('note: %s has no inp_scaled; its inp_embd is the embedding already scaled by '
            'sqrt(n_embd), compared as inp_scaled (the unscaled row is not written)'
            % lacks_path), renamed


def settle_biased_router(has, lacks, lacks_path):
    """The same for gpt-oss's router: llmchat's ffn_moe_logits already holds the bias
    (llama.cpp's and the reference's ffn_moe_logits_biased)."""
    renamed = settle_renamed(has, lacks, 'ffn_moe_logits', 'ffn_moe_logits_biased')
    if not renamed:
        return None, renamed
    return ('note: %s has no ffn_moe_logits_biased; its ffn_moe_logits already holds the '
            "router's bias, compared as ffn_moe_logits_biased (the unbiased logits are not "
            'written)' % lacks_path), renamed


def unwritten_summary(keys):
    """'attn_post_norm (26 layers), inp_scaled' for the family steps not written."""
    layers = {}
    for name, layer, _ in keys:
        layers.setdefault(name, set()).add(layer)
    return ', '.join('%s%s' % (n, ' (%d layer%s)' % (len(l), '' if len(l) == 1 else 's')
                               if min(l) >= 0 else '') for n, l in sorted(layers.items()))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('reference')
    ap.add_argument('other')
    ap.add_argument('--tol', type=float, default=1e-4)
    ap.add_argument('--allow-missing', action='store_true')
    ap.add_argument('--strict', action='store_true',
                    help='judge the family steps OTHER does not write as missing too')
    ap.add_argument('--quiet', action='store_true', help='print only the steps that fail and the summary')
    a = ap.parse_args(argv)
    ref, got = load(a.reference), load(a.other)
    note, scaled_only = settle_scaled_embedding(ref, got, a.other)
    note2, _ = settle_scaled_embedding(got, ref, a.reference)
    note3, biased_only = settle_biased_router(ref, got, a.other)
    scaled_only |= biased_only
    for n in (note, note2, note3):
        if n:
            print(n)
    bad = missing = 0
    unwritten = []
    worst = (0.0, None)
    for key, r in ref.items():
        name, layer, pos = key
        if key not in got and (name in FAMILY_STEPS or key in scaled_only) and not a.strict:
            unwritten.append(key)
            continue
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
    if unwritten:
        print('not written by %s (--strict judges them): %s' % (
            a.other, unwritten_summary(unwritten)))
    judged = len(ref) - len(unwritten)
    print('%d of %d steps within %g%s%s; largest relative L2 %.2e%s' % (
        judged - bad - missing, judged, a.tol, ', %d missing' % missing if missing else '',
        ' (%d step%s not written)' % (len(unwritten), '' if len(unwritten) == 1 else 's')
        if unwritten else '',
        worst[0], ' (%s layer %d pos %d)' % worst[1] if worst[1] else ''))
    return 1 if bad or (missing and not a.allow_missing) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
