#!/usr/bin/env python3
"""check_llmchat.py — checks llmchat's forward pass on the tiny models of each family
(make_arch_gguf.py) against llama.cpp's greedy ids and the reference pass (forward.py):

    check_llmchat.py --llmchat BIN --work DIR greedy GOLDEN.jsonl...
    check_llmchat.py --llmchat BIN --work DIR nll --text FILE ARCH...
    check_llmchat.py --llmchat BIN --work DIR quantized [ARCH:TYPE...]
    check_llmchat.py --llmchat BIN --work DIR native GOLDEN.jsonl...
    check_llmchat.py --llmchat BIN --work DIR moe GOLDEN.jsonl...
    check_llmchat.py --llmchat BIN --work DIR effective GOLDEN.jsonl...
    check_llmchat.py --llmchat BIN --work DIR patch MODEL.gguf|ARCH...

- greedy: for each golden line (make_llamacpp_goldens.py's: llama-cli's greedy ids, or the
  reference's for qwen3 and gemma3), the model written from its seed (sha256 checked),
  `llmchat -m generate --weights f32 --kv-cache f32 -t 0` on the golden's prompt text with
  --trace: the prompt's ids are the golden's (llmchat tokenizes as llama.cpp did) and the
  new ids are llama-cli's, every one, then its end-of-generation id where it stopped.
- nll: `llmchat -m perplexity --weights f32 --kv-cache f32 -c 1024` on the text, its trace's
  probability of each next token against the reference's log-softmax on the same ids:
  every token within NLL_TOKEN_TOL nats, the mean within NLL_MEAN_TOL (tokens below 1e-30,
  which the trace rounds, are left out and counted).
- quantized: phi3-k (fused attn_qkv and gate-up, rows of 256) with every matrix Q4_K,
  qwen2 (biases) with every matrix Q8_0 and llama with every matrix MXFP4, written by
  quantize.py (or the ARCH:TYPE pairs given, such as qwen35:Q8_0): with --weights f32 (the
  blocks decoded exactly) llmchat's greedy ids are the reference's on the same file; with
  --weights native (the blocks in place, activations rounded to 8 bits) teacher-forced over
  the text its top choice agrees with the reference's at TOP1_MIN of the positions and its
  mean NLL is within NLL_QUANT_REL of the reference's.
- native: for each golden line of a Q8_0 file (make_llamacpp_goldens.py greedy-q8_0:
  llama-cli's greedy ids on the model made Q8_0 by quantize.py, sha256 checked), `llmchat -m
  generate --weights native --kv-cache f32 -t 0`, with --panels on and off. Both engines
  round activations to 8 bits, each its own way (llama.cpp's scales in half precision), so
  a near-tie may go either way: llmchat's ids must be llama-cli's, at least NATIVE_MIN of
  them, up to the end of either text or to a choice where llama-cli's id is less than
  NATIVE_MARGIN below llmchat's by llmchat's own logits (its trace's top list).

- moe: for each line of llama.cpp 0.4.0's mixture-of-experts goldens (moe_greedy.jsonl:
  qwen3moe, olmoe, mixtral, gpt-oss; make_llamacpp_goldens.py moe), the fixture written from its seed
  (sha256 checked): (1) greedy as above (`-m generate --weights f32 --kv-cache f32 -t 0`):
  the prompt's ids and all the golden's ids; (2) routing: `llmchat -m tensors --weights f32
  --position all -i PROMPT` (every prompt position in turn), its ffn_moe_topk steps (one a layer:
  the chosen experts' ids as numbers, in llmchat's order) against llama.cpp's, in the same
  order. A route may differ only where the reference (forward.py on the golden's ids) has
  two of the experts involved within ROUTE_TIE of each other in log-probability (a tie
  single-precision rounding may break either way); at least ROUTES_MIN of the routes must
  agree exactly, and a layer without an ffn_moe_topk step fails. A line of a family
  forward.py does not run (gemma4_moe_greedy.jsonl: gemma4, make_llamacpp_goldens.py
  gemma4moe) has no reference to tell a near-tie: every route must agree exactly, and an
  end-of-generation id is the file's tokenizer.ggml.eos_token_id. A line with "quant"
  (moe_greedy_mxfp4.jsonl: gpt-oss made MXFP4_MOE by quantize.py, sha256 checked) is
  checked instead by (1) --weights f32: the greedy ids are the reference's on the same file,
  all of them, and (2) --weights native, panels on and off: llama.cpp's ids by the native
  rule above.

- effective: for each line of a hybrid model's goldens (hybrid_greedy.jsonl: qwen35), the
  fixture written from its seed (sha256 checked), `llmchat -m generate --weights f32
  --kv-cache f32 -t 0 --trace-attn` on the prompt: at every EFFECTIVE_EVERY-th position, each
  Gated DeltaNet layer's value heads' attention rows (the effective attention) against the
  reference's finite differences (forward.Pass.effective: the recurrence run again in
  float64 with one value changed at a time), every weight within EFFECTIVE_TOL of the row's
  largest; and every attention layer's rows against the reference's softmax within the
  same tolerance, so that the rows are the layers' own.

Prints one line a check, 'ok' or 'FAIL', then a summary; exits 1 on any failure. A golden
line whose run llmchat refuses (it exits non-zero) is one FAIL line; the lines after it
are still checked. Python 3 with numpy.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward  # noqa: E402
import gguf  # noqa: E402
import make_arch_gguf  # noqa: E402
import quantize  # noqa: E402

NLL_TOKEN_TOL = 5e-3     # nats: fp32 rounding of deep, peaked random models (README)
NLL_MEAN_TOL = 2e-4
TOP1_MIN = 0.8
NLL_QUANT_REL = 0.01
GREEDY_QUANT = 40
NATIVE_MARGIN = 0.5      # logits: the two ways of rounding activations differ by ~0.1-0.3 here
NATIVE_MIN = 16
ROUTE_TIE = 1e-3         # log-probability: the goldens' closest routes are 2e-4 apart
ROUTES_MIN = 0.99
EFFECTIVE_TOL = 1e-4     # of a row's largest weight: fp32 against float64 (3e-5 seen)
EFFECTIVE_EVERY = 4


class Checker:
    def __init__(self, llmchat, work):
        self.llmchat, self.work, self.made, self.bad, self.total = llmchat, work, {}, 0, 0

    def result(self, ok, text):
        self.total += 1
        self.bad += not ok
        print('%s %s' % ('ok  ' if ok else 'FAIL', text))
        sys.stdout.flush()

    def model(self, arch, seed=1, sha=None):
        key = (arch, seed)
        if key not in self.made:
            path = os.path.join(self.work, '%s-seed%d.gguf' % key)
            make_arch_gguf.make(arch, path, seed)
            self.made[key] = path
        path = self.made[key]
        if sha and hashlib.sha256(open(path, 'rb').read()).hexdigest() != sha:
            raise SystemExit('FAIL %s seed %d: not the file llama.cpp ran (sha256)' % key)
        return path

    def run(self, args):
        """llmchat with args and --trace; the trace's step records."""
        trace = os.path.join(self.work, 'trace.jsonl')
        r = subprocess.run([self.llmchat, '--no-config', '--trace', trace] + args,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError('llmchat %s: exit %d: %s' % (' '.join(args), r.returncode, r.stderr.strip()[-400:]))
        return [json.loads(l) for l in open(trace)][1:]


def reference(path, ctx=None):
    """forward.py's model of the file, or None for a family it does not run (gemma4)."""
    try:
        return forward.Model(path, ctx)
    except forward.ModelError as e:
        if 'is not one the reference knows' not in str(e):
            raise
        return None


def eog_ids(path):
    """The file's end-of-generation ids: the reference's, else tokenizer.ggml.eos_token_id."""
    model = reference(path)
    if model is not None:
        return model.hp.eog
    eos = gguf.GGUFFile(path).get('tokenizer.ggml.eos_token_id')
    return {int(eos)} if eos is not None else set()


def ids_of(recs):
    """The ids a trace ran, then the last record's next (when it has one)."""
    return [r['token'] for r in recs] + ([recs[-1]['next']] if recs[-1]['next'] >= 0 else [])


def check_greedy(c, g):
    path = c.model(g['model'], g['seed'], g['sha256'])
    n = len(g['ids']) + (1 if g['eog'] else 0)
    model_ctx = make_arch_gguf.SHAPES[g['model']]['ctx']
    ctx = ['-c', str(g['ctx'])] if g['ctx'] <= model_ctx else []  # llama.cpp ran past it
    recs = c.run(['-m', 'generate', '--weights', 'f32', '--kv-cache', 'f32', '-t', '0', '-n', str(n)]
                 + ctx + ['-i', g['prompt'], path])
    prompt = [r['token'] for r in recs if r['phase'] == 'prompt']
    new = ids_of(recs)[len(prompt):]
    want = g['ids']
    agree = next((i for i, (a, b) in enumerate(zip(new, want)) if a != b), min(len(new), len(want)))
    eog_ok = not g['eog'] or (len(new) > len(want) and new[len(want)] in eog_ids(path))
    ok = prompt == g['prompt_ids'] and agree == len(want) and eog_ok
    c.result(ok, 'greedy     %-13s ctx %-5d %2d prompt ids %s, %2d/%2d ids agree%s'
             % (g['model'], g['ctx'], len(prompt), 'as the golden' if prompt == g['prompt_ids'] else 'DIFFER',
                agree, len(want), ', then end-of-generation' if g['eog'] and eog_ok else
                ', end-of-generation NOT reproduced' if g['eog'] else ''))
    if not ok:
        print('     want %s %s\n     got  %s %s' % (g['prompt_ids'], want, prompt, new))


def teacher_forced(c, path, text, weights, ctx):
    """llmchat's trace over text (perplexity mode) and the reference's logits on its ids."""
    recs = c.run(['-m', 'perplexity', '--weights', weights, '--kv-cache', 'f32', '-c', str(ctx),
                  '-f', text, path])
    recs = recs[:-1]   # the last position predicts nothing
    ids = ids_of(recs)
    p = forward.Pass(forward.Model(path, ctx))
    return recs, ids, [p.step(t) for t in ids[:-1]]


def check_nll(c, arch, text):
    path = c.model(arch)
    ctx = min(1024, make_arch_gguf.SHAPES[arch]['ctx'])
    recs, ids, logits = teacher_forced(c, path, text, 'f32', ctx)
    worst, diff, n, low = 0.0, 0.0, 0, 0
    for t, r in enumerate(recs):
        ref = -forward.log_softmax_at(logits[t], ids[t + 1])
        if r['next_prob'] is None or r['next_prob'] < 1e-30:
            low += 1
            continue
        d = -math.log(r['next_prob']) - ref
        worst, diff, n = max(worst, abs(d)), diff + d, n + 1
    ok = n > 0 and worst <= NLL_TOKEN_TOL and abs(diff / n) <= NLL_MEAN_TOL
    c.result(ok, 'nll        %-13s ctx %-5d %3d tokens%s: largest |NLL - reference| %.1e (<= %g), mean %.1e (<= %g)'
             % (arch, ctx, n, ' (%d below 1e-30 left out)' % low if low else '', worst, NLL_TOKEN_TOL,
                abs(diff / n) if n else math.inf, NLL_MEAN_TOL))


def check_quantized(c, arch, qtype, text):
    path = os.path.join(c.work, '%s-%s.gguf' % (arch, qtype.lower()))
    quantize.quantize(c.model(arch), path, qtype)
    model = forward.Model(path)
    recs = c.run(['-m', 'generate', '--weights', 'f32', '--kv-cache', 'f32', '-t', '0', '-n',
                  str(GREEDY_QUANT), '-i', 'Once upon a time', path])
    prompt = [r['token'] for r in recs if r['phase'] == 'prompt']
    new = ids_of(recs)[len(prompt):]
    want, margins = forward.run_greedy(model, prompt, len(new), stop=False)
    agree = next((i for i, (a, b) in enumerate(zip(new, want)) if a != b), len(want))
    c.result(agree == len(want), 'quantized  %-13s %-5s --weights f32:    %2d/%2d greedy ids agree with the reference on the '
             'same file (smallest margin %.3f)' % (arch, qtype, agree, len(want), min(margins)))
    ctx = min(1024, make_arch_gguf.SHAPES[arch]['ctx'])
    recs, ids, logits = teacher_forced(c, path, text, 'native', ctx)
    top1 = sum(1 for r, l in zip(recs, logits) if r['top'][0][0] == int(l.argmax()))
    nll = sum(-math.log(max(r['next_prob'] or 1e-30, 1e-30)) for r in recs) / len(recs)
    ref = sum(-forward.log_softmax_at(l, ids[t + 1]) for t, l in enumerate(logits)) / len(recs)
    ok = top1 >= TOP1_MIN * len(recs) and abs(nll - ref) <= NLL_QUANT_REL * ref
    c.result(ok, 'quantized  %-13s %-5s --weights native: top choice agrees at %d of %d positions (>= %d%%), '
             'mean NLL %.4f vs %.4f (within %g%%)' % (arch, qtype, top1, len(recs), TOP1_MIN * 100, nll, ref,
                                                     NLL_QUANT_REL * 100))


def quantized_model(c, g):
    """The quantized file a golden line's llama.cpp ran: its fixture written from the seed,
    then quantize.py's g['quant']; sha256 checked."""
    f32 = c.model(g['model'], g['seed'])
    path = os.path.join(c.work, '%s-seed%d-%s.gguf' % (g['model'], g['seed'], g['quant'].lower()))
    quantize.quantize(f32, path, g['quant'])
    if hashlib.sha256(open(path, 'rb').read()).hexdigest() != g['sha256']:
        raise SystemExit('FAIL %s %s: not the file llama.cpp ran (sha256)' % (g['model'], g['quant']))
    return path


def native_vs_golden(c, g, path, hp, who='llama-cli', ctx=()):
    """`--weights native` greedy with panels on and off against the golden's ids, by the
    native rule (NATIVE_MIN ids, then the end or a choice within NATIVE_MARGIN)."""
    want = g['ids'][:-1] if g['eog'] else g['ids']
    for panels in ('on', 'off'):
        recs = c.run(['-m', 'generate', '--weights', 'native', '--panels', panels, '--kv-cache', 'f32',
                      '-t', '0', '-n', str(len(g['prompt_ids']) + len(want) + 1)] + list(ctx) + ['-i', g['prompt'], path])
        prompt = [r['token'] for r in recs if r['phase'] == 'prompt']
        new = ids_of(recs)[len(prompt):]
        agree = next((i for i, (a, b) in enumerate(zip(new, want)) if a != b), min(len(new), len(want)))
        if agree == len(want):
            why, ok = 'all of them', True
        elif agree == len(new) and new and (new[-1] in hp.eog or new[-1] == hp.bos):
            why, ok = 'then llmchat ends the text at id %d' % new[-1], True
        elif agree < len(new):
            # the record that chose new[agree]: how far the golden's choice is below it
            top = recs[len(prompt) - 1 + agree]['top']
            theirs = next((l for t, l, _ in top if t == want[agree]), None)
            gap = top[0][1] - theirs if theirs is not None else math.inf
            why, ok = 'then a near-tie: %s\'s id %d is %.3f below llmchat\'s %d (< %g)' % (
                who, want[agree], gap, new[agree], NATIVE_MARGIN), gap < NATIVE_MARGIN
        else:
            why, ok = 'then llmchat stops', False
        ok = ok and prompt == g['prompt_ids'] and agree >= NATIVE_MIN
        c.result(ok, 'native     %-13s %-9s panels %-3s %2d prompt ids %s, %2d/%2d ids agree with %s (>= %d), %s'
                 % (g['model'], g['quant'], panels, len(prompt),
                    'as the golden' if prompt == g['prompt_ids'] else 'DIFFER', agree, len(want), who, NATIVE_MIN,
                    why))
        if not ok:
            print('     want %s %s\n     got  %s %s' % (g['prompt_ids'], want, prompt, new))


def check_native(c, g):
    path = quantized_model(c, g)
    native_vs_golden(c, g, path, forward.Model(path, g['ctx']).hp)


def check_moe_quant(c, g):
    """A golden line of a quantized fixture (moe_greedy_mxfp4.jsonl: gpt-oss made MXFP4_MOE,
    its expert stacks MXFP4 and its other matrices Q8_0): the blocks decoded (--weights f32), llmchat's greedy ids are the
    reference's on the same file, all of them; in place (--weights native), llama.cpp's by
    the native rule."""
    path = quantized_model(c, g)
    model = forward.Model(path, g['ctx'])
    n = len(g['ids']) - (1 if g['eog'] else 0)
    recs = c.run(['-m', 'generate', '--weights', 'f32', '--kv-cache', 'f32', '-t', '0', '-n', str(n),
                  '-c', str(g['ctx']), '-i', g['prompt'], path])
    prompt = [r['token'] for r in recs if r['phase'] == 'prompt']
    new = ids_of(recs)[len(prompt):]
    want, margins = forward.run_greedy(model, g['prompt_ids'], n, stop=False)
    agree = next((i for i, (a, b) in enumerate(zip(new, want)) if a != b), min(len(new), len(want)))
    ok = prompt == g['prompt_ids'] and agree == len(want)
    c.result(ok, 'quantized  %-13s %-9s --weights f32: %2d prompt ids %s, %2d/%2d greedy ids agree with the '
             'reference on the same file (smallest margin %.3f)'
             % (g['model'], g['quant'], len(prompt), 'as the golden' if prompt == g['prompt_ids'] else 'DIFFER',
                agree, len(want), min(margins)))
    if not ok:
        print('     want %s %s\n     got  %s %s' % (g['prompt_ids'], want, prompt, new))
    native_vs_golden(c, g, path, model.hp, 'llama.cpp', ['-c', str(g['ctx'])])


def check_moe(c, g):
    if g.get('quant'):
        return check_moe_quant(c, g)
    want = g['ids'][:-1] if g['eog'] else g['ids']
    check_greedy(c, dict(g, ids=want))
    path = c.model(g['model'], g['seed'], g['sha256'])
    model = reference(path, g['ctx'])   # None: no near-ties allowed, every route exact
    n_prompt, probs = len(g['prompt_ids']), {}
    k = model.hp.n_expert_used if model else len(g['routes'][0][0])
    if model:
        p = forward.Pass(model)

        def emit(name, layer, value):
            if name == 'ffn_moe_probs':
                probs[(p.pos, layer)] = value
        for tok in g['prompt_ids']:
            p.step(tok, emit)
    same, ties, bad = 0, 0, []
    r = subprocess.run([c.llmchat, '--no-config', '-m', 'tensors', '--weights', 'f32', '--kv-cache', 'f32',
                        '--position', 'all', '-i', g['prompt'], path],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('llmchat -m tensors --position all: exit %d: %s' % (r.returncode, r.stderr.strip()[-400:]))
    routes = {}  # position: {layer: the chosen experts}
    for rec in map(json.loads, r.stdout.splitlines()):
        if rec['name'] == 'ffn_moe_topk':
            routes.setdefault(rec['pos'], {})[rec['layer']] = [int(round(v)) for v in rec['values']]
    for pos in range(n_prompt):
        got = routes.get(pos, {})
        for il, theirs in enumerate(g['routes'][pos]):
            mine = got.get(il)
            if mine == theirs:
                same += 1
                continue
            if not model:
                bad.append('position %d layer %d: llmchat %s, llama.cpp %s' % (pos, il, mine, theirs))
                continue
            lp = np.log(probs[(pos, il)])
            involved = sorted(set(mine or []) ^ set(theirs)) or [e for e, f in zip(mine or [], theirs) if e != f]
            near = mine is not None and len(mine) == k and any(
                abs(lp[a] - lp[b]) < ROUTE_TIE for a in involved for b in set(mine) | set(theirs) if a != b)
            ties += near
            if not near:
                bad.append('position %d layer %d: llmchat %s, llama.cpp %s' % (pos, il, mine, theirs))
    total = n_prompt * len(g['routes'][0])
    ok = not bad and same >= ROUTES_MIN * total
    c.result(ok, 'moe routes %-13s %2d prompt positions: %3d/%3d routes agree with llama.cpp%s (%s)'
             % (g['model'], n_prompt, same, total, ', %d near-ties (< %g apart) differ' % (ties, ROUTE_TIE) if ties else '',
                '>= %d%%' % (ROUTES_MIN * 100) if model else 'all: no reference to tell a near-tie'))
    for line in bad[:8]:
        print('     ' + line)


def check_effective(c, g):
    path = c.model(g['model'], g['seed'], g['sha256'])
    recs = c.run(['-m', 'generate', '--weights', 'f32', '--kv-cache', 'f32', '-t', '0', '-n', '4',
                  '--trace-attn', '-i', g['prompt'], path])
    model = forward.Model(path, g['ctx'])
    p, soft = forward.Pass(model), {}

    def emit(name, layer, value):
        if name == 'kq_soft_max':
            soft[(p.pos, layer)] = value
    for r in recs:
        p.step(r['token'], emit)
    worst = {True: 0.0, False: 0.0}
    rows = {True: 0, False: 0}
    for r in recs[::EFFECTIVE_EVERY]:
        t, attn = r['pos'], np.array(r['attn'])   # (layers, heads, t + 1)
        for il, L in enumerate(model.layers):
            heads = model.hp.dn_v_heads if L.recurrent else model.hp.n_head
            for j in range(heads):
                want = p.effective(il, j, t) if L.recurrent else soft[(t, il)][j]
                d = np.max(np.abs(attn[il][j] - want)) / max(np.max(np.abs(want)), 1e-30)
                worst[L.recurrent] = max(worst[L.recurrent], d)
                rows[L.recurrent] += 1
    ok = rows[True] > 0 and max(worst.values()) <= EFFECTIVE_TOL
    c.result(ok, 'effective  %-13s %3d DeltaNet rows (finite differences) within %.1e, %3d softmax rows '
             'within %.1e of the row\'s largest (<= %g)'
             % (g['model'], rows[True], worst[True], rows[False], worst[False], EFFECTIVE_TOL))


# Activation patching: a clean and a corrupted prompt of the same length (the two names
# swapped), the clean answer against the corrupted one.
PATCH_CLEAN = 'Lily and Tim went to the park. Lily said to'
PATCH_CORRUPT = 'Tim and Lily went to the park. Lily said to'
PATCH_ANSWER, PATCH_WRONG = 'Tim', 'Lily'
PATCH_TOL = 1e-4         # a cell's logit difference (or KL): fp32 against float64


def reference_patch(model, clean, corrupt, site, layers, answer, wrong, kl, memo):
    """The patching grid by the reference pass, from the definitions: each cell a
    corrupted run with the clean run's activation (Pass.patch) put in at one layer and
    position (head: one head's slice of kqv at every position). A cell at position p
    goes on from a copy of the corrupted run before p (Pass.fork), which no patch has
    touched yet. Returns (the cells' logit differences or KLs, the clean and corrupted
    runs' LD). memo keeps each cell's logits for the other metric of the same grid."""
    hp = model.hp
    name = {'resid_pre': 'resid_pre', 'attn_out': 'attn_out', 'mlp_out': 'mlp_out', 'head': 'kqv',
            'head_q': 'q', 'head_k': 'k', 'head_v': 'v', 'expert': 'expert'}[site]
    kept = {}

    def keep(s, il, pos, value):
        kept[(s, il, pos)] = value.copy()
        return value

    def run(ids, patch=None, p=None):
        p = p or forward.Pass(model)
        p.patch = patch
        for t in ids:
            logits = p.step(t)
        return logits

    def softmax_log(x):
        x = x - x.max()
        return x - math.log(np.exp(x).sum())

    lc, lx = run(clean, keep), run(corrupt)
    pc = softmax_log(lc)
    measure = (lambda lg: float(np.sum(np.exp(pc) * (pc - softmax_log(lg))))) if kl else \
        (lambda lg: float(lg[answer] - lg[wrong]))
    def one_head(il, part):
        """A patch of layer il's head: the clean run's part (a slice of the flat kqv, or a
        row of the (heads, size) q, k, v) at every position."""
        def put(s, l, pos, v):
            if s != name or l != il:
                return v
            v = v.copy()
            v[part] = kept[(s, l, pos)][part]
            return v
        return put

    key = (site, tuple(clean), tuple(corrupt), tuple(layers))
    if key not in memo:
        heads_max = max(hp.n_head, getattr(hp, 'dn_v_heads', 0) if any(hp.recurrent) else 0)
        before = []   # a position's site: the corrupted run before each position
        if site in ('resid_pre', 'attn_out', 'mlp_out'):
            p = forward.Pass(model)
            for t in corrupt:
                before.append(p.fork())
                p.step(t)
        grid = []
        for il in range(layers[0], layers[1] + 1):
            row = []
            if site == 'expert':   # expert e's weighted output at every position
                row = [run(corrupt, one_head(il, e)) for e in range(hp.n_expert)]
            elif site.startswith('head'):
                dn = hp.recurrent[il]
                size = hp.dn_head if dn else hp.head_v
                cols = hp.n_head_kv if site in ('head_k', 'head_v') else heads_max
                heads = (hp.dn_v_heads if dn else hp.n_head) if site == 'head' else \
                    0 if dn else hp.n_head if site == 'head_q' else hp.n_head_kv
                for h in range(cols):
                    part = slice(h * size, (h + 1) * size) if site == 'head' else h
                    row.append(run(corrupt, one_head(il, part)) if h < heads else None)
            else:
                for pos in range(len(clean)):
                    def put(s, l, at, v, il=il, pos=pos):
                        return kept[(s, l, at)] if (s, l, at) == (name, il, pos) else v
                    row.append(run(corrupt[pos:], put, before[pos].fork()))
            grid.append(row)
        memo[key] = grid
    grid = [[None if lg is None else measure(lg) for lg in row] for row in memo[key]]
    return grid, measure(lc), measure(lx)


def check_patch(c, spec):
    """`-m patch --json` on model spec (an arch of make_arch_gguf.py, or a GGUF path) for
    every site, against reference_patch: each cell's logit difference (normalised back
    from the grid with the baselines) and, for heads, its KL within PATCH_TOL."""
    path = spec if spec.endswith('.gguf') else c.model(spec)
    model = forward.Model(path, 64)
    memo = {}
    name = os.path.basename(spec) if spec.endswith('.gguf') else spec
    sites = [('resid_pre', False), ('attn_out', False), ('mlp_out', False), ('head', False),
             ('head', True), ('head_q', False), ('head_k', False), ('head_v', False)]
    if getattr(model.hp, 'n_expert', 0):
        sites += [('expert', False), ('expert', True)]
    for site, kl in sites:
        args = ['--no-config', '-m', 'patch', '--json', '--weights', 'f32', '--kv-cache', 'f32',
                '--site', site, '--clean', PATCH_CLEAN, '--corrupt', PATCH_CORRUPT, path]
        args += ['--metric', 'kl'] if kl else ['--answer', PATCH_ANSWER, '--wrong', PATCH_WRONG]
        r = subprocess.run([c.llmchat] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError('llmchat -m patch --site %s: exit %d: %s' % (site, r.returncode, r.stderr.strip()[-400:]))
        got = json.loads(r.stdout)
        answer = got.get('answer', {}).get('id', 0)
        wrong = got.get('wrong', {}).get('id', 0)
        want, lc, lx = reference_patch(model, got['ids'], got['corrupt_ids'], site, got['layers'],
                                       answer, wrong, kl, memo)
        worst, cells = 0.0, 0
        for row_got, row_want in zip(got['grid'], want):
            for g, w in zip(row_got, row_want):
                if w is None or g is None:
                    worst = max(worst, 0.0 if w is None and g is None else math.inf)
                    continue
                value = g if kl else g * (got['clean'] - got['corrupt']) + got['corrupt']
                worst = max(worst, abs(value - w))
                cells += 1
        base = 0.0 if kl else max(abs(got['clean'] - lc), abs(got['corrupt'] - lx))
        ok = worst <= PATCH_TOL and base <= PATCH_TOL and len(got['grid']) == len(want) and cells > 0
        c.result(ok, 'patch      %-13s %-9s %-10s %3d cells: largest |cell - reference| %.1e, baselines %.1e (<= %g)'
                 % (name, site, 'KL' if kl else 'logit diff', cells, worst, base, PATCH_TOL))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--llmchat', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--text', help='nll, quantized: the text scored')
    ap.add_argument('what', choices=('greedy', 'nll', 'quantized', 'native', 'moe', 'effective',
                                     'patch'))
    ap.add_argument('args', nargs='*')
    a = ap.parse_args(argv)
    os.makedirs(a.work, exist_ok=True)
    c = Checker(a.llmchat, a.work)
    try:
        if a.what in ('greedy', 'native', 'moe', 'effective'):
            check = {'greedy': check_greedy, 'native': check_native, 'moe': check_moe,
                     'effective': check_effective}[a.what]
            for path in a.args:
                for line in open(path):
                    if line.strip():
                        g = json.loads(line)
                        try:   # a case llmchat cannot run fails alone; the others still run
                            check(c, g)
                        except RuntimeError as e:
                            c.result(False, '%-10s %-13s %s' % (a.what, g['model'], e))
        elif a.what == 'nll':
            for arch in a.args:
                check_nll(c, arch, a.text)
        elif a.what == 'patch':
            for spec in a.args:
                check_patch(c, spec)
        elif a.args:   # ARCH:TYPE each
            for arg in a.args:
                arch, qtype = arg.split(':')
                check_quantized(c, arch, qtype, a.text)
        else:
            check_quantized(c, 'phi3-k', 'Q4_K', a.text)
            check_quantized(c, 'qwen2', 'Q8_0', a.text)
            check_quantized(c, 'llama', 'MXFP4', a.text)
    except RuntimeError as e:
        c.result(False, str(e))
    print('%d of %d checks agree' % (c.total - c.bad, c.total))
    return 1 if c.bad or not c.total else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
