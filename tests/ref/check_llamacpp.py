#!/usr/bin/env python3
"""check_llamacpp.py — checks the reference pass (forward.py) against what llama.cpp computed
on the tiny models (the golden lines of make_llamacpp_goldens.py):

    check_llamacpp.py GOLDEN.jsonl [GOLDEN.jsonl...] [--keep DIR] [--only MODEL]

For each line it writes the model with make_arch_gguf.py (once per model and seed; into DIR
with --keep, else a temporary directory) and requires its sha256 to be the golden's: the
file llama.cpp ran, byte for byte. Then:

- greedy lines (arch_greedy.jsonl): the reference's greedy ids from prompt_ids equal
  llama-cli's token for token; where llama-cli stopped on an end-of-generation id, the
  reference's next choice is one too. Printed: the ids agreeing and the smallest margin of
  the reference's choices (top logit minus the runner-up: how far the case is from a tie).
- mixture-of-experts lines (moe_greedy.jsonl, llama.cpp 0.4.0; they have "routes"): the
  reference's greedy ids equal llama.cpp's (all n_predict of them), and over the prompt and
  the ids its chosen experts (ffn_moe_topk) at every position and layer are llama.cpp's, in
  the same order. Printed: the ids and routes agreeing, the smallest margin and the
  smallest routing gap (the log-probability between consecutive chosen experts, and
  between the last chosen and the first left out: how far the routing is from a tie).
- perplexity lines (arch_perplexity.jsonl): the reference scores the ids as
  llama-perplexity does (chunks of ctx, BOS in each chunk's first place when the
  vocabulary adds one, the second half of each chunk scored) and its running perplexity
  after each chunk matches llama-perplexity's: |ln ppl - ln ppl_llama.cpp| <= 1e-4. ggml's
  CPU GELU rounds through half precision (a table), which moves the Gemma families' values
  by up to ~1e-2: for them the check runs twice, with the reference's exact GELU within
  0.05 and with that rounding imitated (forward.py --gelu ggml-f16) within 1e-3.

Exits 1 on any difference. Python 3 with numpy.
"""
import argparse
import hashlib
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward  # noqa: E402
import make_arch_gguf  # noqa: E402

PPL_TOL = 1e-4
PPL_TOL_GELU = {'tanh': 0.05, 'ggml-f16': 1e-3}


def greedy(g, path):
    model = forward.Model(path, g['ctx'])
    want = g['ids']
    got, margins = forward.run_greedy(model, g['prompt_ids'], len(want) + (1 if g['eog'] else 0), stop=False)
    agree = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(want))
    ok = agree == len(want) and (not g['eog'] or got[-1] in model.hp.eog)
    tail = ''
    if g['eog']:
        tail = ', then end-of-generation' + ('' if got[-1] in model.hp.eog else ' NOT reproduced (%d)' % got[-1])
    print('%s greedy     %-13s ctx %-5d %2d prompt ids: %2d/%2d ids agree%s; smallest margin %.3f'
          % ('ok  ' if ok else 'FAIL', g['model'], g['ctx'], len(g['prompt_ids']), agree, len(want), tail, min(margins)))
    if agree < len(want):
        print('     llama.cpp: %s\n     reference: %s' % (want, got[:len(want)]))
    return ok


def moe(g, path):
    model = forward.Model(path, g['ctx'])
    want, seq = g['ids'], g['prompt_ids'] + g['ids']
    p, probs, margins, got = forward.Pass(model), {}, [], []

    def emit(name, layer, value):
        if name == 'ffn_moe_probs':
            probs[(p.pos, layer)] = value
    for i, tok in enumerate(seq[:-1]):
        logits = p.step(tok, emit)
        if i >= len(g['prompt_ids']) - 1:
            top2 = np.argsort(logits)[-2:]
            got.append(int(top2[1]))
            margins.append(float(logits[top2[1]] - logits[top2[0]]))
    agree = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(want))
    k = model.hp.n_expert_used
    ref = {(pos, il): experts for pos, il, experts, _ in p.routes}
    routes = [((pos, il), r) for pos, layers in enumerate(g['routes']) for il, r in enumerate(layers)]
    same = sum(1 for key, r in routes if ref.get(key) == r)
    gaps = []
    for pr in probs.values():
        lp = np.sort(np.log(pr))[::-1][:k + 1]
        gaps.append(float(np.min(lp[:-1] - lp[1:])))
    ok = agree == len(want) and same == len(routes) and len(routes) == len(ref)
    print('%s moe        %-13s ctx %-5d %2d prompt ids: %2d/%2d ids agree, %3d/%3d routes (positions x layers) '
          'agree; smallest margin %.3f, smallest routing gap %.1e'
          % ('ok  ' if ok else 'FAIL', g['model'], g['ctx'], len(g['prompt_ids']), agree, len(want), same,
             len(routes), min(margins), min(gaps)))
    if agree < len(want):
        print('     llama.cpp: %s\n     reference: %s' % (want, got))
    for key, r in routes:
        if ref.get(key) != r:
            print('     position %d layer %d: llama.cpp chose %s, the reference %s' % (key + (r, ref.get(key))))
    return ok


def chunk_perplexities(model, ids, ctx, add_bos):
    """llama-perplexity's running perplexity after each chunk of ctx ids."""
    first, nll, count, out = ctx // 2, 0.0, 0, []
    for c in range(len(ids) // ctx):
        chunk = list(ids[c * ctx:(c + 1) * ctx])
        if add_bos:
            chunk[0] = model.hp.bos
        p = forward.Pass(model)
        logits = [p.step(t) for t in chunk]
        for j in range(first, ctx - 1):
            nll -= forward.log_softmax_at(logits[j], ids[c * ctx + j + 1])
            count += 1
        out.append(math.exp(nll / count))
    return out


def perplexity(g, path):
    gelus = ['tanh', 'ggml-f16'] if forward.FAMILIES[forward.Model(path).hp.arch]['act'] == 'gelu' else ['tanh']
    ok = True
    for gelu in gelus:
        model = forward.Model(path, g['ctx'], gelu)
        got = chunk_perplexities(model, g['ids'], g['ctx'], g['add_bos'])
        tol = PPL_TOL if len(gelus) == 1 else PPL_TOL_GELU[gelu]
        diff = max(abs(math.log(a) - math.log(b)) for a, b in zip(got, g['ppl'])) if len(got) == len(g['ppl']) else math.inf
        good = diff <= tol
        ok = ok and good
        print('%s perplexity %-13s ctx %-5d %3d ids, %d chunks%s: largest |ln ppl - llama.cpp\'s| %.1e (<= %g); ppl %.6g'
              % ('ok  ' if good else 'FAIL', g['model'], g['ctx'], len(g['ids']), len(g['ppl']),
                 '' if len(gelus) == 1 else ', GELU ' + gelu, diff, tol, got[-1] if got else float('nan')))
    return ok


def check(lines, workdir, only=None):
    made, bad, total = {}, 0, 0
    for g in lines:
        if only and g['model'] != only:
            continue
        key = (g['model'], g['seed'])
        if key not in made:
            path = os.path.join(workdir, '%s-seed%d.gguf' % key)
            make_arch_gguf.make(g['model'], path, g['seed'])
            sha = hashlib.sha256(open(path, 'rb').read()).hexdigest()
            if sha != g['sha256']:
                print('FAIL %s seed %d: the model written here (sha256 %s) is not the one llama.cpp ran (%s)'
                      % (g['model'], g['seed'], sha[:16], g['sha256'][:16]))
                return 1
            made[key] = path
        ok = (perplexity(g, made[key]) if 'ppl' in g else moe(g, made[key]) if 'routes' in g
              else greedy(g, made[key]))
        total += 1
        bad += not ok
    print('%d of %d cases agree with llama.cpp' % (total - bad, total))
    return 1 if bad or not total else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('golden', nargs='+')
    ap.add_argument('--keep', help='write the models into this directory and keep them')
    ap.add_argument('--only', help='only the lines of this model')
    a = ap.parse_args(argv)
    lines = [json.loads(l) for path in a.golden for l in open(path) if l.strip()]
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        return check(lines, a.keep, a.only)
    with tempfile.TemporaryDirectory() as tmp:
        return check(lines, tmp, a.only)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
