#!/usr/bin/env python3
"""cut_gguf.py — writes a small GGUF file holding some tensors of a bigger one.

    cut_gguf.py IN.gguf OUT.gguf TENSOR [TENSOR...]

The output keeps the input's general.* metadata (other keys, such as the tokenizer,
are dropped), adds general.description naming the source, and holds the named
tensors byte for byte (same names, shapes, types and data), laid out again with the
default alignment of 32. It is not a model: it exists so that the test suite can
check the dequantizers against the reference values of those tensors
(tests/data/golden/gguf_dequant.jsonl) without carrying whole models.

How tests/data/gguf-types/ was made (see tests/data/README.md), from the project's
shared reference set (models/gguf-types/):

    for t in f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k_m q4_k_m q5_k_m q6_k; do
        python3 tests/data/cut_gguf.py ../shared/models/gguf-types/rand256-$t.gguf \\
            tests/data/gguf-types/rand256-$t.gguf blk.0.attn_q.weight
    done

MXFP4 (not in the shared set) was made from the same F32 model by llama.cpp 0.4.0's
llama-quantize, every layer matrix overridden to MXFP4 (token_embd and output stay Q8_0):

    Q=/work/shared/anchors/llama.cpp-0.4.0/llama-quantize
    $Q $(for t in attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down; do
           printf -- '--tensor-type %s=mxfp4 ' $t; done) \
        ../shared/models/gguf-types/rand256-f32.gguf /tmp/rand256-mxfp4.gguf Q8_0 1
    python3 tests/data/cut_gguf.py /tmp/rand256-mxfp4.gguf \
        tests/data/gguf-types/rand256-mxfp4.gguf blk.0.attn_q.weight

Python 3 standard library only. Same input, same output, byte for byte.
"""
import os
import struct
import sys

ALIGN = 32
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
# ggml type: (values per block, bytes per block), for the types the fixtures use
BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22),
          7: (32, 24), 8: (32, 34), 10: (256, 84), 11: (256, 110), 12: (256, 144),
          13: (256, 176), 14: (256, 210), 39: (32, 17)}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        vals = struct.unpack_from('<' + fmt, self.data, self.pos)
        self.pos += struct.calcsize('<' + fmt)
        return vals

    def string(self):
        (n,) = self.take('Q')
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def skip_value(self, t):
        if t in SCALAR:
            self.pos += SCALAR[t]
        elif t == 8:
            self.string()
        elif t == 9:
            et, n = self.take('IQ')
            for _ in range(n):
                self.skip_value(et)
        else:
            raise SystemExit('unknown value type %d' % t)


def gguf_string(b):
    return struct.pack('<Q', len(b)) + b


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    src, dst, wanted = sys.argv[1], sys.argv[2], [w.encode() for w in sys.argv[3:]]
    data = open(src, 'rb').read()
    r = Reader(data)
    magic, version, n_tensors, n_kv = r.take('4sIQQ')
    if magic != b'GGUF' or version not in (2, 3):
        raise SystemExit('%s: not a GGUF v2/v3 file' % src)
    kvs = []
    align = ALIGN
    for _ in range(n_kv):
        start = r.pos
        key = r.string()
        (t,) = r.take('I')
        vstart = r.pos
        r.skip_value(t)
        if key == b'general.alignment':
            (align,) = struct.unpack_from('<I', data, vstart)
        elif key.startswith(b'general.'):
            kvs.append(data[start:r.pos])
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        (nd,) = r.take('I')
        dims = r.take('Q' * nd)
        t, off = r.take('IQ')
        tensors[name] = (dims, t, off)
    base = (r.pos + align - 1) // align * align

    desc = b'cut from %s: %s' % (os.path.basename(src).encode(), b', '.join(wanted))
    kvs.append(gguf_string(b'general.description') + struct.pack('<I', 8) + gguf_string(desc))
    infos, blobs, offset = [], [], 0
    for name in wanted:
        if name not in tensors:
            raise SystemExit('%s: no tensor %s' % (src, name.decode()))
        dims, t, off = tensors[name]
        n = 1
        for d in dims:
            n *= d
        per_block, block_bytes = BLOCKS[t]
        size = n // per_block * block_bytes
        infos.append(gguf_string(name) + struct.pack('<I', len(dims)) +
                     struct.pack('<%dQ' % len(dims), *dims) + struct.pack('<IQ', t, offset))
        blob = data[base + off:base + off + size]
        blob += b'\0' * ((ALIGN - len(blob) % ALIGN) % ALIGN)
        blobs.append(blob)
        offset += len(blob)

    head = struct.pack('<4sIQQ', b'GGUF', 3, len(infos), len(kvs)) + b''.join(kvs) + b''.join(infos)
    head += b'\0' * ((ALIGN - len(head) % ALIGN) % ALIGN)
    with open(dst, 'wb') as f:
        f.write(head + b''.join(blobs))


if __name__ == '__main__':
    main()
