#!/usr/bin/env python3
"""make_llamacpp_goldens.py — records what llama.cpp (ggerganov/llama.cpp@c392e509) computes
on the tiny models of make_arch_gguf.py, for the families its tools run: llama, qwen2, phi3
(LongRoPE's long and short factors; partial rotary) gemma and gemma2. Run once, by hand,
where the anchors are (the tests only read its output):

    make_llamacpp_goldens.py ANCHORS greedy     > tests/data/golden/arch_greedy.jsonl
    make_llamacpp_goldens.py ANCHORS perplexity > tests/data/golden/arch_perplexity.jsonl
    make_llamacpp_goldens.py BUILD/bin greedy-new > tests/data/golden/arch_greedy_qwen3_gemma3.jsonl
    make_llamacpp_goldens.py ANCHORS greedy-q8_0 > tests/data/golden/arch_greedy_q8_0.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 moe TOPK > tests/data/golden/moe_greedy.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 moe-mxfp4 TOPK > tests/data/golden/moe_greedy_mxfp4.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 hybrid TOPK > tests/data/golden/hybrid_greedy.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 shexp TOPK > tests/data/golden/moe_shexp_greedy.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 gemma4 TOPK > tests/data/golden/gemma4_greedy.jsonl
    make_llamacpp_goldens.py ANCHORS-0.4.0 gemma4moe TOPK > tests/data/golden/gemma4_moe_greedy.jsonl

ANCHORS is the directory of llama-cli, llama-perplexity and llama-tokenize
(/work/shared/anchors/llama.cpp); ANCHORS-0.4.0 any directory holding llama.cpp 0.4.0's
llama-completion (the anchors' llama.cpp-0.4.0, or a native build's bin/), the only tool the
TOPK kinds run from it. Each case's model is written into a temporary directory.
greedy-new is greedy on qwen3 and gemma3, which c392e509 does not know: BUILD is a llama.cpp
built from the same commit with the two families added (tests/ref/README.md says how).
greedy-q8_0 is greedy on the models with every matrix made Q8_0 by quantize.py (lines with
"quant": "Q8_0"; sha256 is the quantized file's): llama.cpp then rounds its activations to
8 bits as llmchat's --weights native does.

greedy runs  llama-cli -m MODEL -p PROMPT -n N_PREDICT -c CTX --temp 0 -no-cnv --no-warmup
-t 2 -ctk f32 -ctv f32 --seed 1 -v  (an f32 KV cache; -v logs each batch it evaluates as
[ 'piece':id, ... ]) and writes one line per case: {"model", "seed", "sha256", "ctx",
"prompt", "prompt_ids", "n_predict", "ids", "eog", "text", "text_exact", "source"}:
prompt_ids are the ids llama-cli fed (its "tokens:" log line, BOS included where the
vocabulary adds it), ids the generated ids it evaluated (the last of the n_predict sampled
ids is printed but never evaluated, so ids holds n_predict - 1), eog whether it stopped
early on an end-of-generation id (sampled after ids, never evaluated: it printed
" [end of text]", which text leaves out), text what it printed (the two newlines it adds at
the end removed; where a byte token cut a UTF-8 character, U+FFFD in its place and
text_exact false), sha256 the model file's.

perplexity runs  llama-perplexity -m MODEL -f TEXT -c CTX -b CTX -t 2 -ctk f32 -ctv f32  on
PPL_TEXT below and writes {"model", "seed", "sha256", "ctx", "text", "ids", "add_bos",
"ppl", "source"}: ids are llama-tokenize's ids of the text (what llama-perplexity scores:
it cuts them into chunks of CTX, puts BOS in each chunk's first place when the vocabulary
adds one, and scores the second half of each chunk), ppl the running perplexity it prints
after each chunk ([1]..., [2]...).

moe runs llama.cpp 0.4.0 (ANCHORS-0.4.0: /work/shared/anchors/llama.cpp-0.4.0, its
llama-completion; TOPK: tests/ref/llamacpp_moe_topk.c built against the same release's
libraries, its header says how) on the mixture-of-experts fixtures (qwen3moe, olmoe,
mixtral, gpt-oss): TOPK gives the greedy ids and, for every position evaluated, the experts each
layer chose (ffn_moe_topk); llama-completion -m MODEL -p PROMPT -n N_PREDICT -c CTX --temp 0
-no-cnv --no-warmup -t 1 -fa off -ctk f32 -ctv f32 --seed 1 --no-display-prompt (0.4.0's
llama-completion logs no ids) must print the text of those ids, byte for byte (checked
here: the same greedy run by the tool; tried up to 5 times, since llama-completion prints
through its asynchronous log, which at times loses the end of the text at exit). Flash attention is off in both: 0.4.0 turns it on by
default, and its CPU kernel rounds through half precision (1e-4 relative on the attention
output), enough to flip close routes. One line a case: {"model", "seed", "sha256", "ctx",
"prompt", "prompt_ids", "n_predict", "ids", "eog", "text", "routes", "source"}: ids all
N_PREDICT chosen ids (eog: the last is an end-of-generation id), routes[pos][layer] the
chosen experts in llama.cpp's order (descending probability) for positions 0 ..
len(prompt_ids) + len(ids) - 2 (the last id is never evaluated).

moe-mxfp4 is moe on the gpt-oss fixture made MXFP4_MOE by quantize.py (llama-quantize's
layout of that name, gpt-oss's: expert stacks MXFP4, the other matrices Q8_0, the router
F32; lines with "quant": "MXFP4_MOE", sha256 the quantized file's): llama.cpp then rounds
the activations to 8 bits for those matrices (MXFP4's and Q8_0's dot products take Q8_0
activations), as llmchat's --weights native does.

hybrid is moe on the hybrid fixture (qwen35: Gated DeltaNet and gated attention layers),
which has no experts: TOPK's greedy ids alone, checked against llama-completion's text the
same way; the lines are greedy's ({"model", "seed", "sha256", "ctx", "prompt",
"prompt_ids", "n_predict", "ids", "eog", "text", "text_exact", "source"}, ids without an
end-of-generation id, eog saying whether one came after them), prompts of 40 tokens or
more, so that the recurrent state carries many tokens before the first choice. shexp is
moe on the fixtures with a shared expert beside the routed ones (qwen2moe; qwen35moe: the
hybrid's layers with experts), with routes. gemma4 is
the same on the Gemma 4 fixture (per-layer head sizes and KV heads, layers sharing KV
caches, per-layer inputs). gemma4moe is the same on the Gemma 4 mixture-of-experts fixture
(make_arch_gguf.py gemma4moe: Gemma-4-26B-A4B's layout, every layer's dense feed-forward
beside a router over 8 experts, 2 used), with routes: the lines are moe's.

Nothing here runs the reference: check_llamacpp.py compares it with these lines.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402
import make_arch_gguf  # noqa: E402
import quantize  # noqa: E402

ONCE, LILY, CAT = 'Once upon a time', 'Lily and Tom went to the park. They saw a big dog.', 'The little cat sat on the mat.'
# (model, ctx, n_predict, prompts). Phi-3 runs with a context over its original 64 (LongRoPE's
# long factors; its sliding window of 16 is crossed) and within it (the short factors). The
# prompts were picked among eight candidates as those whose greedy choices are farthest from
# ties (each choice's top logit at least 0.04 above the runner-up's, by the reference); on
# the second llama prompt and the first phi3-partial one the model ends with EOS.
GREEDY = [
    ('llama', 4096, 41, [ONCE, LILY]),
    ('qwen2', 4096, 41, ['Rain falls softly on the old stone bridge.', 'Hello, world! 12345 is a number.']),
    ('phi3', 4096, 41, [CAT, ONCE]),
    ('phi3', 64, 33, [LILY, CAT]),
    ('phi3-partial', 4096, 41, [ONCE, LILY]),
    ('gemma', 4096, 41, [LILY, 'The sun was warm and the birds sang.']),
    ('gemma2', 4096, 41, [ONCE, 'Ben had a big blue boat.']),
]
PPL_TEXT = 2 * ('Once upon a time, there was a little girl named Lily. She loved to play outside in the park '
                'with her friends. One day, she saw a big red ball under a tree. She ran to get it, but a small '
                'dog took the ball first. Lily was sad, but then the dog came back and dropped the ball at her '
                'feet. They played together all afternoon, and when the sun went down, Lily went home happy. '
                'Her mom made soup for dinner and Lily told her about the dog. The next day, Lily went back to '
                'the park to look for the dog again.')
# qwen3 and gemma3 came after c392e509: their cases need a llama-cli that runs them (see
# tests/ref/README.md, "qwen3 and gemma3"); prompts picked as above.
GREEDY_NEW = [
    ('qwen3', 4096, 41, ['I think, therefore I am.', 'The capital of France is Paris.']),
    ('gemma3', 4096, 41, ['One day, a girl named Sue found a shiny red ball.', LILY]),
]
# Q8_0 copies (quantize.py) of three of them: llama-cli rounds its activations to 8 bits, as
# llmchat's blocks in place do, each its own way, so near-ties go either way
# (check_llmchat.py native). Prompts kept where llmchat's text follows llama-cli's for at
# least 16 ids with panels on and off; tried and dropped there (a near-tie within the first
# 16 ids): qwen2 on 'Hello, world! 12345 is a number.', 'The capital of France is Paris.',
# 'I think, therefore I am.' (with panels off only), ONCE, LILY and 'Ben had a big blue
# boat.', phi3 on CAT, 'Ben had a big blue boat.' and 'The sun was warm and the birds sang.'.
GREEDY_Q8_0 = [
    ('llama', 4096, 41, [ONCE, LILY, CAT]),
    ('qwen2', 4096, 41, ['Rain falls softly on the old stone bridge.', CAT]),
    ('phi3', 4096, 41, [ONCE, LILY]),
]
# (model, ctx): Phi-3 at 128, over its original context (long factors), and at 64 (short).
PERPLEXITY = [('llama', 64), ('qwen2', 64), ('phi3', 64), ('phi3', 128), ('phi3-partial', 64),
              ('gemma', 64), ('gemma2', 64)]
# The mixture-of-experts fixtures (llama.cpp 0.4.0): the two prompts of each whose greedy
# choices and routes are farthest from ties among six candidates (by the reference: the
# smallest top-1 margin and the smallest log-probability gap between consecutive chosen
# experts and the first one left out; gpt-oss's by the top-1 margin: 0.154 and 0.045, the
# other four 0.003-0.039). gpt-oss runs at its context_length, 512.
MOE = [
    ('qwen3moe', 2048, 40, [ONCE, CAT]),
    ('olmoe', 2048, 40, ['Ben had a big blue boat.', 'One day, a girl named Sue found a shiny red ball.']),
    ('mixtral', 2048, 40, ['The sun was warm and the birds sang.', ONCE]),
    ('gpt-oss', 512, 40, [LILY, ONCE]),
]
# gpt-oss made MXFP4_MOE (moe-mxfp4). Its greedy choices on this file are close (the reference's
# smallest top-1 margins 0.009-0.17), and the two engines round activations each its own
# way: of seven candidates (LILY, ONCE, CAT, 'Ben had a big blue boat.', 'One day, a girl
# named Sue found a shiny red ball.', 'The sun was warm and the birds sang.' and this one)
# llmchat's --weights native follows llama.cpp's ids for at least 16 (the native rule) only
# on this one (40/40); the others part after 1-10 ids, each at a near-tie (llama.cpp's id
# 0.13-0.50 below llmchat's by llmchat's logits) or, on CAT and Ben, where llmchat ends the
# text at BOS (id 1) and llama.cpp goes on. Kept: the one.
MOE_MXFP4 = [
    ('gpt-oss', 512, 40, ['Mia saw a bird in the sky.']),
]
# The hybrid fixture (llama.cpp 0.4.0): prompts of 40+ tokens (55-75) of stories. Dropped:
# those on which the model chooses BOS (id 1) within 40 ids, where llmchat ends the text
# and llama.cpp goes on (the PPL_TEXT's opening sentences, two ways).
HYBRID = [
    ('qwen35', 2048, 40, ['Lily was sad, but then the dog came back and dropped the ball at her feet. They '
                          'played together all afternoon, and when the sun went down, Lily went home happy.',
                          'One day, a girl named Sue found a shiny red ball. She wanted to show it to her '
                          'friend Tom, so she ran to his house. Tom was happy to see her and the ball.',
                          'Ben had a big blue boat. He liked to sail it on the lake with his dad. One sunny '
                          'morning, they took the boat out and saw a family of ducks swimming near the shore.']),]
# The fixtures with a shared expert beside the routed ones (llama.cpp 0.4.0; the lines carry
# the routes, moe_case): qwen2moe (Qwen2's attention), on the qwen3moe fixture's prompts,
# and qwen35moe (the hybrid's layers), on prompts of 55-75 tokens. Dropped for qwen35moe, as
# for the hybrid: 'One day, a girl named Sue ...' (the model chooses BOS second).
SHARED_EXPERTS = [('qwen2moe', 2048, 40, [ONCE, CAT]), ('qwen35moe', 2048, 40, [HYBRID[0][3][0], HYBRID[0][3][2],
                                       'Once upon a time, there was a little girl named Lily. She loved to play '
                                       'outside in the park with her friends. One day, she saw a big red ball under '
                                       'a tree.',
                                       'Tom and his mom went to the store to buy some food. Tom saw a big red apple '
                                       'and wanted it very much. His mom said he could have it if he was good.'])]
# The Gemma 4 fixture (llama.cpp 0.4.0; per-layer heads, shared KV caches, per-layer
# inputs): prompts of 57-75 tokens. Dropped: 'Lily was sad, ... Lily went home happy.',
# where the fifth id is a near-tie (by llmchat's logits 365 at 10.7077, llama.cpp's 299
# at 10.6997).
GEMMA4 = [
    ('gemma4', 2048, 40, ['One day, a girl named Sue found a shiny red ball. She wanted to show it to her '
                          'friend Tom, so she ran to his house. Tom was happy to see her and the ball.',
                          'Ben had a big blue boat. He liked to sail it on the lake with his dad. One sunny '
                          'morning, they took the boat out and saw a family of ducks swimming near the shore.',
                          'Once upon a time, there was a little girl named Lily. She loved to play outside in '
                          'the park with her friends. One day, she saw a big red ball under a tree.',
                          'Tom and his mom went to the store to buy some food. Tom saw a big red apple and '
                          'wanted it very much. His mom said he could have it if he was good.']),]
# The Gemma 4 mixture-of-experts fixture (llama.cpp 0.4.0; the 26B-A4B's layout: a dense
# feed-forward and experts in every layer, no shared KV caches or per-layer inputs): GEMMA4's
# prompts of 62 and 65 tokens. Dropped: 'Ben had a big blue boat. ...' and 'Once upon a
# time, there was a little girl named Lily. ...', on which the model chooses BOS (id 1) as
# the first and the 21st new id. llmchat's GELU is the formula, ggml's a table of halves
# (tests/ref/README.md): their router logits part by up to 4e-3 of their size (1e-7 in layer
# 0, before any GELU), so a route or a greedy choice closer than ~0.05 may go either way,
# and check_llmchat.py has no reference for gemma4 to tell such a tie: at the fixture's
# first sizes (post_ffw_norm_2 0.5, make_arch_gguf.py) each of the four prompts met one or
# BOS; on these two, none (llama.cpp's smallest top-1 margins 0.015 and 0.043).
GEMMA4_MOE = [('gemma4moe', 2048, 40, [GEMMA4[0][3][0], GEMMA4[0][3][3]])]
SEED = 1
BACKPORT = ('built from ggerganov/llama.cpp@c392e509 with qwen3 and gemma3 added by hand after upstream\'s '
            'graphs (tests/ref/README.md)')


def logged_ids(line):
    """The ids of a logged batch: [ 'piece':id, 'piece':id ]."""
    return [int(x) for x in re.findall(r"':(-?\d+)(?=, '|\s*\]\s*$)", line)]


def run(cmd):
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    if r.returncode != 0:
        sys.exit('%s failed:\n%s' % (' '.join(cmd), r.stderr.decode(errors='replace')[-2000:]))
    return r


def greedy_case(anchors, model, prompt, n_predict, ctx):
    cmd = [os.path.join(anchors, 'llama-cli'), '-m', model, '-p', prompt, '-n', str(n_predict),
           '-c', str(ctx), '--temp', '0', '-no-cnv', '--no-warmup', '-t', '2', '-ctk', 'f32', '-ctv', 'f32',
           '--seed', '1', '-v']
    r = run(cmd)
    log = r.stderr.decode('utf-8', errors='replace').splitlines()
    prompt_ids = next(logged_ids(l) for l in log if l.startswith('tokens: ['))
    fed = [i for l in log if l.startswith('eval: [') for i in logged_ids(l)]
    if fed[:len(prompt_ids)] != prompt_ids:
        sys.exit('%s: the evaluated batches do not start with the prompt' % model)
    out = r.stdout[:-2] if r.stdout.endswith(b'\n\n') else r.stdout
    eog = out.endswith(b' [end of text]\n')
    out = out[:-len(b' [end of text]\n')] if eog else out
    try:
        text, exact = out.decode('utf-8'), True
    except UnicodeDecodeError:
        text, exact = out.decode('utf-8', errors='replace'), False
    return dict(ctx=ctx, prompt=prompt, prompt_ids=prompt_ids, n_predict=n_predict,
                ids=fed[len(prompt_ids):], eog=eog, text=text, text_exact=exact,
                source='llama.cpp llama-cli (ggerganov/llama.cpp@c392e509) ' + ' '.join(cmd[1:]).replace(model, 'MODEL'))


def perplexity_case(anchors, model, text_path, ctx):
    tok = run([os.path.join(anchors, 'llama-tokenize'), '-m', model, '-f', text_path, '--ids', '--log-disable'])
    ids = [int(x) for x in re.findall(r'-?\d+', tok.stdout.decode().strip().splitlines()[-1])]
    cmd = [os.path.join(anchors, 'llama-perplexity'), '-m', model, '-f', text_path, '-c', str(ctx), '-b', str(ctx),
           '-t', '2', '-ctk', 'f32', '-ctv', 'f32']
    r = run(cmd)
    line = next(l for l in (r.stdout + r.stderr).decode(errors='replace').splitlines() if l.startswith('[1]'))
    add_bos = bool(gguf.GGUFFile(model).get('tokenizer.ggml.add_bos_token', True))
    return dict(ctx=ctx, text=PPL_TEXT, ids=ids, add_bos=add_bos,
                ppl=[float(x) for x in re.findall(r'\[\d+\]([0-9.]+)', line)],
                source='llama.cpp llama-perplexity (ggerganov/llama.cpp@c392e509) ' +
                       ' '.join(cmd[1:]).replace(model, 'MODEL').replace(text_path, 'TEXT') +
                       '; ids from llama-tokenize -m MODEL -f TEXT --ids')


def spm_text(model, ids):
    """The bytes llama.cpp prints for ids of a SentencePiece vocabulary: each piece with
    U+2581 as a space, byte tokens <0xHH> as their byte, control tokens as nothing."""
    f = gguf.GGUFFile(model)
    tokens, types = f.meta['tokenizer.ggml.tokens'], f.meta['tokenizer.ggml.token_type']
    out = b''
    for i in ids:
        if types[i] == 6:
            out += bytes([int(tokens[i][3:5], 16)])
        elif types[i] != 3:
            out += tokens[i].replace('\u2581', ' ').encode('utf-8')
    return out


def moe_case(anchors, topk, model, prompt, n_predict, ctx):
    r = run([topk, model, prompt, str(n_predict), str(ctx)])
    lines = [json.loads(l) for l in r.stdout.decode().splitlines()]
    head, routes = lines[0], {}
    for l in lines[1:]:
        routes.setdefault(l['pos'], {})[l['layer']] = l['topk']
    n_pos = len(head['prompt_ids']) + len(head['ids']) - 1
    if routes and sorted(routes) != list(range(n_pos)):
        sys.exit('%s: routes for positions %s, expected 0..%d' % (model, sorted(routes), n_pos - 1))
    cmd = [os.path.join(anchors, 'llama-completion'), '-m', model, '-p', prompt, '-n', str(n_predict),
           '-c', str(ctx), '--temp', '0', '-no-cnv', '--no-warmup', '-t', '1', '-fa', 'off', '-ctk', 'f32',
           '-ctv', 'f32', '--seed', '1', '--no-display-prompt']
    want = spm_text(model, head['ids'])
    for _ in range(5):   # its text goes through the asynchronous log, whose end is at times lost at exit
        out = run(cmd).stdout
        out = out[:-2] if out.endswith(b'\n\n') else out
        eog = out.endswith(b' [end of text]\n')
        out = out[:-len(b' [end of text]\n')] if eog else out
        if out == want and eog == head['eog']:
            break
    else:
        sys.exit('%s %r: llama-completion printed %r (eog %s), the tool\'s ids say %r (eog %s)'
                 % (model, prompt, out, eog, want, head['eog']))
    try:
        text, exact = out.decode('utf-8'), True
    except UnicodeDecodeError:
        text, exact = out.decode('utf-8', errors='replace'), False
    if not routes:   # no experts: a greedy line (ids without the end-of-generation id)
        return dict(ctx=ctx, prompt=prompt, prompt_ids=head['prompt_ids'], n_predict=n_predict,
                    ids=head['ids'][:-1] if head['eog'] else head['ids'], eog=head['eog'], text=text,
                    text_exact=exact,
                    source='llama.cpp 0.4.0: ids from tests/ref/llamacpp_moe_topk.c (libllama.v0.4.0.so, '
                           'node-llama-cpp@3.21.1) MODEL PROMPT %d %d; its text printed by llama-completion %s'
                           % (n_predict, ctx, ' '.join(cmd[3:]).replace(prompt, 'PROMPT')))
    return dict(ctx=ctx, prompt=prompt, prompt_ids=head['prompt_ids'], n_predict=n_predict, ids=head['ids'],
                eog=head['eog'], text=text, text_exact=exact,
                routes=[[routes[p][l] for l in sorted(routes[p])] for p in range(n_pos)],
                source='llama.cpp 0.4.0: ids and routes from tests/ref/llamacpp_moe_topk.c (libllama.v0.4.0.so, '
                       'node-llama-cpp@3.21.1) MODEL PROMPT %d %d; its text printed by llama-completion %s'
                       % (n_predict, ctx, ' '.join(cmd[3:]).replace(prompt, 'PROMPT')))


def main(argv):
    if len(argv) == 3 and argv[1] in ('moe', 'moe-mxfp4', 'hybrid', 'shexp', 'gemma4', 'gemma4moe'):
        argv, topk = argv[:2], argv[2]
    elif len(argv) != 2 or argv[1] not in ('greedy', 'perplexity', 'greedy-new', 'greedy-q8_0'):
        sys.exit(__doc__)
    anchors, kind = argv
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, 'text.txt')
        with open(text_path, 'w') as f:
            f.write(PPL_TEXT)
        models = {}
        cases = {'greedy': GREEDY, 'greedy-new': GREEDY_NEW, 'greedy-q8_0': GREEDY_Q8_0, 'moe': MOE,
                 'moe-mxfp4': MOE_MXFP4, 'hybrid': HYBRID, 'shexp': SHARED_EXPERTS,
                 'gemma4': GEMMA4, 'gemma4moe': GEMMA4_MOE}.get(kind) or [(m, c, None, [None]) for m, c in PERPLEXITY]
        for name, ctx, n_predict, prompts in cases:
            if name not in models:
                models[name] = os.path.join(tmp, name + '.gguf')
                make_arch_gguf.make(name, models[name], SEED)
                if kind == 'greedy-q8_0':
                    f32, models[name] = models[name], os.path.join(tmp, name + '-q8_0.gguf')
                    quantize.quantize(f32, models[name], 'Q8_0')
                elif kind == 'moe-mxfp4':
                    f32, models[name] = models[name], os.path.join(tmp, name + '-mxfp4_moe.gguf')
                    quantize.quantize(f32, models[name], 'MXFP4_MOE')
            model = models[name]
            sha = hashlib.sha256(open(model, 'rb').read()).hexdigest()
            for prompt in prompts:
                rec = (perplexity_case(anchors, model, text_path, ctx) if kind == 'perplexity'
                       else moe_case(anchors, topk, model, prompt, n_predict, ctx)
                       if kind.startswith('moe') or kind in ('hybrid', 'shexp', 'gemma4', 'gemma4moe')
                       else greedy_case(anchors, model, prompt, n_predict, ctx))
                if kind == 'greedy-new':
                    rec['source'] = rec['source'].replace('(ggerganov/llama.cpp@c392e509)', BACKPORT)
                rec = dict(model=name, seed=SEED, sha256=sha, **rec)
                rec['source'] += ' on make_arch_gguf.py %s --seed %d' % (name, SEED)
                if kind == 'greedy-q8_0':
                    rec['quant'] = 'Q8_0'
                    rec['source'] += ', made Q8_0 by quantize.py'
                elif kind == 'moe-mxfp4':
                    rec['quant'] = 'MXFP4_MOE'
                    rec['source'] += ', made MXFP4_MOE by quantize.py'
                print(json.dumps(rec, ensure_ascii=False), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
