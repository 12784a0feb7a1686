#!/usr/bin/env python3
"""make_llama3_shaped.py — writes a random-weight model of Llama 3.1's kind as GGUF:
Llama 3's 128,256-token byte-level BPE vocabulary (copied from VOCAB.gguf, the
decompressed llama3-vocab.gguf.gz), tied embeddings (no output.weight), grouped-query
attention, RoPE base 500000 with rope_freqs.weight factors, all tensors F32:

    make_llama3_shaped.py VOCAB.gguf OUT.gguf [smollm]

dim 32, hidden 64, 2 layers, 4 heads, 2 KV heads (head size 8: 4 RoPE factors, 0.25,
4, 0.5 and 8, large enough to change the text), linear RoPE scaling by 2, context 256. The weights come
from Python's random.Random(25) (Mersenne Twister: the same file on every machine);
matrices are uniform in +-0.5 / sqrt(cols) * 4 (query and key * 40, so that attention
is peaked and depends on position) so that the logits have clear winners,
and the embedding uniform in +-1. e2e_llama3 makes it at test time and compares
llmchat's greedy text on it with llama.cpp's (llama-cli --temp 0) recorded in
golden/llama3_shaped.jsonl. With "smollm" (and VOCAB.gguf the decompressed
smollm-pre-vocab.gguf.gz: GPT-2's merges under SmolLM's pre-tokenizer) it is a model
of SmolLM2's kind instead: RoPE base 100000 without factors or scaling, a ChatML chat
template, the rest alike. Python 3 standard library only.
"""
import random
import struct
import sys
from array import array

DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, CTX = 32, 64, 2, 4, 2, 256
ROPE_FACTORS = [0.25, 4.0, 0.5, 8.0]
ROPE_SCALE = 2.0  # llama.rope.scaling.factor, type linear
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gstr(b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    return struct.pack('<Q', len(b)) + b


def vocab_kvs(path):
    """The raw tokenizer.* key-value records of a GGUF file, and its vocabulary size."""
    data = open(path, 'rb').read()
    _, _, _, n_kv = struct.unpack_from('<4sIQQ', data, 0)
    pos = 24
    out, n_vocab = [], 0

    def skip(t):
        nonlocal pos
        if t in SCALAR:
            pos += SCALAR[t]
        elif t == 8:
            (n,) = struct.unpack_from('<Q', data, pos)
            pos += 8 + n
        else:
            et, n = struct.unpack_from('<IQ', data, pos)
            pos += 12
            if et in SCALAR:
                pos += SCALAR[et] * n
            else:
                for _ in range(n):
                    skip(et)

    for _ in range(n_kv):
        start = pos
        (n,) = struct.unpack_from('<Q', data, pos)
        key = data[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        (t,) = struct.unpack_from('<I', data, pos)
        pos += 4
        if key == 'tokenizer.ggml.tokens':
            n_vocab = struct.unpack_from('<Q', data, pos + 4)[0]
        skip(t)
        if key.startswith('tokenizer.'):
            out.append(data[start:pos])
    return out, n_vocab


CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")


def main(vocab_path, out_path, kind='llama3'):
    smollm = kind == 'smollm'
    kvs, n_vocab = vocab_kvs(vocab_path)
    rng = random.Random(25)
    u32 = lambda k, v: gstr(k) + struct.pack('<II', 4, v)
    f32 = lambda k, v: gstr(k) + struct.pack('<If', 6, v)
    meta = [gstr('general.architecture') + struct.pack('<I', 8) + gstr('llama'),
            u32('llama.block_count', LAYERS), u32('llama.context_length', CTX),
            u32('llama.embedding_length', DIM), u32('llama.feed_forward_length', HIDDEN),
            u32('llama.attention.head_count', HEADS), u32('llama.attention.head_count_kv', KV_HEADS),
            f32('llama.rope.freq_base', 100000.0 if smollm else 500000.0), f32('llama.attention.layer_norm_rms_epsilon', 1e-5),
            u32('llama.rope.dimension_count', DIM // HEADS), u32('llama.vocab_size', n_vocab),
            u32('general.file_type', 0)] + kvs
    if smollm:
        meta = [m for m in meta if not m.startswith(gstr('tokenizer.chat_template'))]
        meta.append(gstr('tokenizer.chat_template') + struct.pack('<I', 8) + gstr(CHATML))
    else:
        meta += [f32('llama.rope.scaling.factor', ROPE_SCALE),
                 gstr('llama.rope.scaling.type') + struct.pack('<I', 8) + gstr('linear')]

    head = DIM // HEADS
    kv_dim = KV_HEADS * head
    tensors = []  # (name, dims (ggml order: cols first), values)

    def mat(name, rows, cols, scale):
        a = 0.5 / cols ** 0.5 * scale
        tensors.append((name, [cols, rows], array('f', (rng.uniform(-a, a) for _ in range(rows * cols)))))

    emb = array('f', (b / 128.0 - 1.0 for b in rng.randbytes(n_vocab * DIM)))
    tensors.append(('token_embd.weight', [DIM, n_vocab], emb))
    tensors.append(('output_norm.weight', [DIM], array('f', [1.0] * DIM)))
    if not smollm:
        tensors.append(('rope_freqs.weight', [head // 2], array('f', ROPE_FACTORS)))
    for l in range(LAYERS):
        tensors.append((f'blk.{l}.attn_norm.weight', [DIM], array('f', [1.0] * DIM)))
        tensors.append((f'blk.{l}.ffn_norm.weight', [DIM], array('f', [1.0] * DIM)))
        mat(f'blk.{l}.attn_q.weight', DIM, DIM, 40)
        mat(f'blk.{l}.attn_k.weight', kv_dim, DIM, 40)
        mat(f'blk.{l}.attn_v.weight', kv_dim, DIM, 4)
        mat(f'blk.{l}.attn_output.weight', DIM, DIM, 4)
        mat(f'blk.{l}.ffn_gate.weight', HIDDEN, DIM, 4)
        mat(f'blk.{l}.ffn_down.weight', DIM, HIDDEN, 4)
        mat(f'blk.{l}.ffn_up.weight', HIDDEN, DIM, 4)

    infos, offset = [], 0
    for name, dims, vals in tensors:
        infos.append(gstr(name) + struct.pack('<I', len(dims)) +
                     struct.pack('<%dQ' % len(dims), *dims) + struct.pack('<IQ', 0, offset))
        offset += (len(vals) * 4 + 31) // 32 * 32
    header = struct.pack('<4sIQQ', b'GGUF', 3, len(tensors), len(meta)) + b''.join(meta) + b''.join(infos)
    with open(out_path, 'wb') as f:
        f.write(header + b'\0' * ((-len(header)) % 32))
        for _, _, vals in tensors:
            b = vals.tobytes()
            f.write(b + b'\0' * ((-len(b)) % 32))


if __name__ == '__main__':
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
