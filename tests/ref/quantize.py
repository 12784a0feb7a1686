#!/usr/bin/env python3
"""quantize.py — writes a copy of a GGUF model with its matrices quantized to Q8_0, Q4_K or
MXFP4,
from ggml's published block layouts (ggml-common.h), for tests that need quantized files of
the tiny models without llama.cpp's llama-quantize:

    quantize.py IN.gguf OUT.gguf Q8_0|Q4_K|MXFP4|MXFP4_MOE

Every 2-D tensor whose rows are whole blocks (32 values for Q8_0 and MXFP4, 256 for Q4_K) is
quantized; vectors (norms, biases, RoPE factors) and other matrices stay as they are.
MXFP4_MOE is the layout llama-quantize's type of that name writes (llama.cpp 0.4.0's
llama-quant.cpp), gpt-oss's: the mixture-of-experts stacks (3-D `*_exps.weight`) MXFP4,
every other matrix (`*.weight`) Q8_0 except the router (`ffn_gate_inp`), which stays as it
is, as do the biases. The
encoders are simple (ggml's Q8_0 rounding; Q4_K with each group's scale and minimum from
its range, not llama.cpp's search for the best ones; MXFP4 with each block's power of two
from its largest value, each value the nearest E2M1): what a test needs is valid blocks,
which gguf.py decodes independently of llmchat. Python 3 with numpy.
"""
import struct
import sys
import os

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

BLOCK = {'Q8_0': 32, 'Q4_K': gguf.QK_K, 'MXFP4': 32, 'MXFP4_MOE': 32}


def q8_0(x):
    """(n,) float32, n a multiple of 32 -> Q8_0 bytes: per block an f16 scale, 32 int8."""
    b = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(b).max(axis=1)
    d = (amax / 127.0).astype(np.float16)
    inv = np.where(d > 0, 1.0 / np.maximum(d.astype(np.float32), 1e-30), 0.0)
    q = np.clip(np.round(b * inv[:, None]), -127, 127).astype(np.int8)
    out = np.zeros((b.shape[0], 34), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:34] = q.view(np.uint8)
    return out.tobytes()


def q4_k(x):
    """(n,) float32, n a multiple of 256 -> Q4_K bytes: d, dmin (f16), 12 bytes of six-bit
    scales and mins of the 8 groups of 32, 128 bytes of nibbles; value = d·s·q − dmin·m."""
    b = x.reshape(-1, 8, 32).astype(np.float32)
    lo = np.minimum(b.min(axis=2), 0.0)            # each group's minimum (at most 0)
    scale = (b.max(axis=2) - lo) / 15.0            # each group's step
    d = (scale.max(axis=1) / 63.0).astype(np.float16).astype(np.float32)
    dmin = ((-lo).max(axis=1) / 63.0).astype(np.float16).astype(np.float32)
    s = np.clip(np.round(scale / np.where(d > 0, d, 1)[:, None]), 0, 63).astype(np.int32)
    m = np.clip(np.round(-lo / np.where(dmin > 0, dmin, 1)[:, None]), 0, 63).astype(np.int32)
    step = d[:, None] * s                          # (nb, 8)
    q = np.round((b + (dmin[:, None] * m)[:, :, None]) / np.where(step > 0, step, 1)[:, :, None])
    q = np.clip(q, 0, 15).astype(np.uint8)
    out = np.zeros((b.shape[0], 144), np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = dmin.astype(np.float16).view(np.uint8).reshape(-1, 2)
    for j in range(4):   # the inverse of gguf._k4_scale_min
        out[:, 4 + j] = (s[:, j] | ((s[:, j + 4] >> 4) << 6)).astype(np.uint8)
        out[:, 8 + j] = (m[:, j] | ((m[:, j + 4] >> 4) << 6)).astype(np.uint8)
        out[:, 12 + j] = ((s[:, j + 4] & 0xF) | ((m[:, j + 4] & 0xF) << 4)).astype(np.uint8)
    for g in range(0, 8, 2):   # groups 2k and 2k+1 share 32 bytes: low and high nibbles
        out[:, 16 + 16 * g:16 + 16 * g + 32] = q[:, g, :] | (q[:, g + 1, :] << 4)
    return out.tobytes()


def mxfp4(x):
    """(n,) float32, n a multiple of 32 -> MXFP4 bytes: per block the E8M0 exponent e (scale
    2^(e - 127), the largest value at most 6 scales: 4 <= max|x| / scale < 8, clipped to 6),
    16 bytes of E2M1 codes (value j the low nibble of byte j, j + 16 the high one)."""
    b = x.reshape(-1, 32).astype(np.float64)
    amax = np.abs(b).max(axis=1)
    e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - 2 + 127, 0)
    e = np.clip(e, 0, 254).astype(np.int64)
    v = b / np.ldexp(1.0, e - 127)[:, None]
    codes = np.abs(v[:, :, None] - gguf.E2M1[None, None, :]).argmin(axis=2).astype(np.uint8)
    out = np.zeros((b.shape[0], 17), np.uint8)
    out[:, 0] = e.astype(np.uint8)
    out[:, 1:17] = codes[:, :16] | (codes[:, 16:] << 4)
    return out.tobytes()


ENCODE = {'Q8_0': q8_0, 'Q4_K': q4_k, 'MXFP4': mxfp4, 'MXFP4_MOE': None}


def choose(name, ne, qtype):
    """The type a tensor is written as (None: as it is)."""
    if qtype != 'MXFP4_MOE':
        return qtype if len(ne) == 2 and ne[0] % BLOCK[qtype] == 0 else None
    if len(ne) == 3 and name.endswith('_exps.weight'):
        if ne[0] % 32:
            raise SystemExit('%s: rows of %d values, not whole MXFP4 blocks' % (name, ne[0]))
        return 'MXFP4'
    if len(ne) == 2 and ne[0] % 32 == 0 and name.endswith('.weight') and 'ffn_gate_inp' not in name:
        return 'Q8_0'
    return None


def quantize(src, dst, qtype):
    f = gguf.GGUFFile(src)
    records = [gguf.copy_kv(f, k) for k in f.meta]
    infos, blobs, offset, align = [], [], 0, 32
    for name, ti in f.tensors.items():
        t = choose(name, ti.ne, qtype)
        if t:
            data, type_id = ENCODE[t](f.tensor(name).reshape(-1)), gguf.TYPE_ID[t]
        else:
            data, type_id = bytes(f.raw(name)), ti.type_id
        infos.append(gguf._pack_str(name) + struct.pack('<I', len(ti.ne)) +
                     struct.pack('<%dQ' % len(ti.ne), *ti.ne) + struct.pack('<IQ', type_id, offset))
        pad = (-len(data)) % align
        blobs.append(data + b'\0' * pad)
        offset += len(data) + pad
    header = struct.pack('<4sIQQ', b'GGUF', 3, len(infos), len(records)) + b''.join(records) + b''.join(infos)
    with open(dst, 'wb') as out:
        out.write(header + b'\0' * ((-len(header)) % align))
        for blob in blobs:
            out.write(blob)


def main(argv):
    if len(argv) != 3 or argv[2] not in ENCODE:
        print('usage: quantize.py IN.gguf OUT.gguf Q8_0|Q4_K|MXFP4|MXFP4_MOE', file=sys.stderr)
        return 2
    quantize(argv[0], argv[1], argv[2])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
