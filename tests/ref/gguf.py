"""gguf.py — an independent numpy reader and writer of GGUF files (versions 2 and 3) and a
dequantizer of ggml's block types, for the reference checks (not used by llmchat itself).

Owns: parsing the header, the typed metadata and the tensor table; turning a tensor's bytes
into float32 values (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
Q6_K, MXFP4) following the block layouts ggml publishes in ggml-common.h (MXFP4's values
from the OCP Microscaling Formats (MX) v1.0 specification's E8M0 and E2M1); writing a GGUF v3 file
from typed metadata and F32 / F16 tensors. Does not: run a model (forward.py does), or
quantize (llama-quantize does).

Shapes: GGUF lists a tensor's dimensions fastest-first (ggml's ne[0], ne[1], ...);
`GGUFFile.tensor(name)` returns the values as a numpy array of shape (ne[n-1], ..., ne[0]),
so a matrix of ne = [cols, rows] comes back as (rows, cols): row r is output r of a matmul.
Quantized blocks run along the flattened tensor, so a block may straddle two rows (rows
of 172 values in stories260K-q8_0.gguf): the dequantizer decodes the whole tensor first,
then reshapes.

Python 3 and numpy only.
"""
import gzip
import struct

import numpy as np

# GGUF metadata value types (gguf.h)
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR = {UINT8: '<B', INT8: '<b', UINT16: '<H', INT16: '<h', UINT32: '<I', INT32: '<i',
           FLOAT32: '<f', BOOL: '<?', UINT64: '<Q', INT64: '<q', FLOAT64: '<d'}
_NUMPY = {UINT8: '<u1', INT8: '<i1', UINT16: '<u2', INT16: '<i2', UINT32: '<u4', INT32: '<i4',
          FLOAT32: '<f4', BOOL: '<u1', UINT64: '<u8', INT64: '<i8', FLOAT64: '<f8'}

QK_K = 256
# ggml tensor types: id -> (name, values per block, bytes per block)
TYPES = {
    0: ('F32', 1, 4), 1: ('F16', 1, 2), 2: ('Q4_0', 32, 18), 3: ('Q4_1', 32, 20),
    6: ('Q5_0', 32, 22), 7: ('Q5_1', 32, 24), 8: ('Q8_0', 32, 34),
    10: ('Q2_K', QK_K, 84), 11: ('Q3_K', QK_K, 110), 12: ('Q4_K', QK_K, 144),
    13: ('Q5_K', QK_K, 176), 14: ('Q6_K', QK_K, 210), 30: ('BF16', 1, 2),
    39: ('MXFP4', 32, 17),
}
# MXFP4's 4-bit codes (OCP MX v1.0, E2M1): bit 3 the sign, then 2 exponent bits, 1 mantissa bit
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                 -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
TYPE_ID = {v[0]: k for k, v in TYPES.items()}


class GGUFError(Exception):
    pass


class TensorInfo:
    def __init__(self, name, ne, type_id, offset):
        self.name, self.ne, self.type_id, self.offset = name, ne, type_id, offset

    @property
    def type_name(self):
        return TYPES[self.type_id][0] if self.type_id in TYPES else 'type%d' % self.type_id

    @property
    def n_elements(self):
        n = 1
        for d in self.ne:
            n *= d
        return n

    @property
    def n_bytes(self):
        if self.type_id not in TYPES:
            raise GGUFError('%s: tensor type %d is not supported' % (self.name, self.type_id))
        _, per_block, block_bytes = TYPES[self.type_id]
        if self.n_elements % per_block:
            raise GGUFError('%s: %d values are not a whole number of %s blocks'
                            % (self.name, self.n_elements, self.type_name))
        return self.n_elements // per_block * block_bytes


class GGUFFile:
    """A parsed GGUF file (a .gz one is decompressed in memory). `meta` maps key -> value (numbers, str, bool, lists; arrays of
    numbers are numpy arrays); `types` maps key -> (type, element type or None), enough to
    write the same record again; `tensors` maps name -> TensorInfo, in file order."""

    def __init__(self, path):
        self.path = path
        with (gzip.open(path, 'rb') if str(path).endswith('.gz') else open(path, 'rb')) as f:
            self.data = f.read()
        self.meta, self.types, self.tensors = {}, {}, {}
        self._parse()

    # ---- parsing ----
    def _take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise GGUFError('%s: truncated at byte %d' % (self.path, self.pos))
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v[0] if len(v) == 1 else v

    def _string(self):
        n = self._take('<Q')
        if self.pos + n > len(self.data):
            raise GGUFError('%s: a string of %d bytes runs past the end' % (self.path, n))
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode('utf-8', errors='surrogateescape')

    def _value(self, t):
        if t in _SCALAR:
            return self._take(_SCALAR[t])
        if t == STRING:
            return self._string()
        raise GGUFError('%s: unknown value type %d' % (self.path, t))

    def _parse(self):
        self.pos = 0
        magic = self._take('<4s')
        if magic != b'GGUF':
            raise GGUFError('%s: not a GGUF file (magic %r)' % (self.path, magic))
        self.version = self._take('<I')
        if self.version not in (2, 3):
            raise GGUFError('%s: GGUF version %d (2 and 3 are supported)' % (self.path, self.version))
        n_tensors, n_kv = self._take('<QQ')
        for _ in range(n_kv):
            key = self._string()
            t = self._take('<I')
            if t == ARRAY:
                et, n = self._take('<IQ')
                if et in _NUMPY:
                    size = np.dtype(_NUMPY[et]).itemsize * n
                    v = np.frombuffer(self.data, _NUMPY[et], n, self.pos)
                    self.pos += size
                elif et == STRING:
                    v = [self._string() for _ in range(n)]
                else:
                    raise GGUFError('%s: %s: arrays of type %d are not supported' % (self.path, key, et))
                self.meta[key], self.types[key] = v, (ARRAY, et)
            else:
                self.meta[key], self.types[key] = self._value(t), (t, None)
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._take('<I')
            if n_dims > 4:
                raise GGUFError('%s: %s has %d dimensions' % (self.path, name, n_dims))
            ne = [self._take('<Q') for _ in range(n_dims)]
            type_id, offset = self._take('<IQ')
            infos.append(TensorInfo(name, ne, type_id, offset))
        self.alignment = int(self.meta.get('general.alignment', 32))
        if self.alignment <= 0 or self.alignment % 8:
            raise GGUFError('%s: alignment %d' % (self.path, self.alignment))
        self.data_offset = (self.pos + self.alignment - 1) // self.alignment * self.alignment
        for ti in infos:
            end = self.data_offset + ti.offset + ti.n_bytes
            if end > len(self.data):
                raise GGUFError('%s: tensor %s ends at byte %d, past the end (%d)'
                                % (self.path, ti.name, end, len(self.data)))
            self.tensors[ti.name] = ti

    # ---- access ----
    @property
    def arch(self):
        return self.meta.get('general.architecture')

    def get(self, key, default=None):
        return self.meta.get(key, default)

    def raw(self, name):
        ti = self.tensors[name]
        start = self.data_offset + ti.offset
        return self.data[start:start + ti.n_bytes]

    def tensor(self, name):
        """The tensor's values as float32, shape (ne[n-1], ..., ne[0])."""
        ti = self.tensors[name]
        flat = dequantize(self.raw(name), ti.type_id, ti.n_elements)
        return flat.reshape(list(reversed(ti.ne)) if ti.ne else [1])


# ---- dequantization (ggml-common.h block layouts; float32 arithmetic as ggml does) ----

def _f16(b):
    """(nb, 2) bytes -> (nb,) float32 values of the little-endian halves."""
    return np.ascontiguousarray(b).view('<f2')[:, 0].astype(np.float32)


def _blocks(raw, type_id, n):
    _, per_block, block_bytes = TYPES[type_id]
    nb = n // per_block
    return np.frombuffer(raw, np.uint8, nb * block_bytes).reshape(nb, block_bytes)


def _nibbles(qs):
    """(nb, 16) bytes -> (nb, 32): the low nibbles give values 0..15, the high 16..31."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)


def _high_bits32(qh):
    """(nb, 4) bytes of Q5_0 / Q5_1 -> (nb, 32) fifth bits (bit j of the little-endian word)."""
    word = np.ascontiguousarray(qh).view('<u4')[:, 0].astype(np.uint32)
    return ((word[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)


def _q4_0(b):
    d = _f16(b[:, 0:2])
    return (_nibbles(b[:, 2:18]) - 8).astype(np.float32) * d[:, None]


def _q4_1(b):
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    return _nibbles(b[:, 4:20]).astype(np.float32) * d[:, None] + m[:, None]


def _q5_0(b):
    d = _f16(b[:, 0:2])
    q = _nibbles(b[:, 6:22]) | (_high_bits32(b[:, 2:6]) << 4)
    return (q - 16).astype(np.float32) * d[:, None]


def _q5_1(b):
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    q = _nibbles(b[:, 8:24]) | (_high_bits32(b[:, 4:8]) << 4)
    return q.astype(np.float32) * d[:, None] + m[:, None]


def _q8_0(b):
    d = _f16(b[:, 0:2])
    return b[:, 2:34].copy().view(np.int8).astype(np.float32) * d[:, None]


def _q2_k(b):
    # scales[16], qs[64], d, dmin. 16 groups of 16; group g: 128-half h = g // 8,
    # shift 2 * ((g % 8) // 2), bytes qs[32h + 16 (g % 2) .. +16]
    scales, qs = b[:, 0:16], b[:, 16:80]
    d, dmin = _f16(b[:, 80:82]), _f16(b[:, 82:84])
    out = np.empty((b.shape[0], 16, 16), np.float32)
    for g in range(16):
        h, j, odd = g // 8, (g % 8) // 2, g % 2
        q = (qs[:, 32 * h + 16 * odd:32 * h + 16 * odd + 16] >> (2 * j)) & 3
        dl = d * (scales[:, g] & 0xF).astype(np.float32)
        ml = dmin * (scales[:, g] >> 4).astype(np.float32)
        out[:, g, :] = dl[:, None] * q.astype(np.float32) - ml[:, None]
    return out.reshape(-1, QK_K)


def _q3_k_scales(sc):
    """12 bytes -> 16 six-bit scales (minus 32): low 4 bits from bytes 0..7, high 2 from 8..11."""
    sc = sc.astype(np.int32)
    out = np.empty((sc.shape[0], 16), np.int32)
    for i in range(16):
        low = (sc[:, i] & 0xF) if i < 8 else (sc[:, i - 8] >> 4)
        high = (sc[:, 8 + i % 4] >> (2 * (i // 4))) & 3
        out[:, i] = (low | (high << 4)) - 32
    return out


def _q3_k(b):
    # hmask[32], qs[64], scales[12], d
    hmask, qs, d = b[:, 0:32], b[:, 32:96], _f16(b[:, 108:110])
    scales = _q3_k_scales(b[:, 96:108])
    out = np.empty((b.shape[0], 16, 16), np.float32)
    for g in range(16):
        h, j, odd = g // 8, (g % 8) // 2, g % 2
        lo = 32 * h + 16 * odd
        q = ((qs[:, lo:lo + 16] >> (2 * j)) & 3).astype(np.int32)
        hbit = (hmask[:, 16 * odd:16 * odd + 16] >> (4 * h + j)) & 1
        q = q - np.where(hbit == 0, 4, 0)
        out[:, g, :] = (d * scales[:, g].astype(np.float32))[:, None] * q.astype(np.float32)
    return out.reshape(-1, QK_K)


def _k4_scale_min(sc):
    """The 12-byte scale field of Q4_K / Q5_K -> 8 six-bit scales and 8 six-bit mins."""
    sc = sc.astype(np.int32)
    s, m = np.empty((sc.shape[0], 8), np.int32), np.empty((sc.shape[0], 8), np.int32)
    for j in range(8):
        if j < 4:
            s[:, j], m[:, j] = sc[:, j] & 63, sc[:, j + 4] & 63
        else:
            s[:, j] = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
            m[:, j] = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
    return s, m


def _q4_k(b):
    # d, dmin, scales[12], qs[128]; 8 groups of 32: group 2k low nibbles of qs[32k..], 2k+1 high
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    s, m = _k4_scale_min(b[:, 4:16])
    qs = b[:, 16:144]
    out = np.empty((b.shape[0], 8, 32), np.float32)
    for g in range(8):
        chunk = qs[:, 32 * (g // 2):32 * (g // 2) + 32]
        q = (chunk & 0xF) if g % 2 == 0 else (chunk >> 4)
        out[:, g, :] = ((d * s[:, g].astype(np.float32))[:, None] * q.astype(np.float32)
                        - (dmin * m[:, g].astype(np.float32))[:, None])
    return out.reshape(-1, QK_K)


def _q5_k(b):
    # d, dmin, scales[12], qh[32], qs[128]; the fifth bit of group g is bit g of qh[l]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    s, m = _k4_scale_min(b[:, 4:16])
    qh, qs = b[:, 16:48], b[:, 48:176]
    out = np.empty((b.shape[0], 8, 32), np.float32)
    for g in range(8):
        chunk = qs[:, 32 * (g // 2):32 * (g // 2) + 32]
        q = ((chunk & 0xF) if g % 2 == 0 else (chunk >> 4)).astype(np.int32)
        q = q + 16 * ((qh >> g) & 1).astype(np.int32)
        out[:, g, :] = ((d * s[:, g].astype(np.float32))[:, None] * q.astype(np.float32)
                        - (dmin * m[:, g].astype(np.float32))[:, None])
    return out.reshape(-1, QK_K)


def _q6_k(b):
    # ql[128], qh[64], scales[16] (int8), d. Two halves of 128; in half h, value 32 i + l
    # (i = 0..3, l = 0..31) has low 4 bits from ql[64h + l + 32 (i % 2)] (low nibble for
    # i < 2, high for i >= 2), high 2 bits from qh[32h + l] >> 2i, scale scales[8h + 2i + l // 16]
    ql, qh = b[:, 0:128], b[:, 128:192]
    sc = b[:, 192:208].copy().view(np.int8).astype(np.float32)
    d = _f16(b[:, 208:210])
    out = np.empty((b.shape[0], 2, 4, 32), np.float32)
    for h in range(2):
        for i in range(4):
            lo = ql[:, 64 * h + 32 * (i % 2):64 * h + 32 * (i % 2) + 32]
            lo = (lo & 0xF) if i < 2 else (lo >> 4)
            hi = (qh[:, 32 * h:32 * h + 32] >> (2 * i)) & 3
            q = (lo.astype(np.int32) | (hi.astype(np.int32) << 4)) - 32
            scale = np.repeat(sc[:, 8 * h + 2 * i:8 * h + 2 * i + 2], 16, axis=1)
            out[:, h, i, :] = (d[:, None] * scale) * q.astype(np.float32)
    return out.reshape(-1, QK_K)


def _mxfp4(b):
    """MXFP4: byte 0 the E8M0 scale 2^(e - 127), then 16 bytes of E2M1 codes packed as
    Q4_0's nibbles; value = E2M1[code] * scale, made float32 (e2m1 zero's sign is dropped,
    as ggml's integer table does; the largest scales overflow to infinity)."""
    scale = np.ldexp(1.0, b[:, 0].astype(np.int64) - 127)
    with np.errstate(over='ignore'):
        return (E2M1[_nibbles(b[:, 1:17])] * scale[:, None] + 0.0).astype(np.float32)


_DECODERS = {2: _q4_0, 3: _q4_1, 6: _q5_0, 7: _q5_1, 8: _q8_0,
             10: _q2_k, 11: _q3_k, 12: _q4_k, 13: _q5_k, 14: _q6_k, 39: _mxfp4}


def dequantize(raw, type_id, n):
    """The first n values of a tensor of type type_id stored in raw, as float32."""
    if type_id == 0:
        return np.frombuffer(raw, '<f4', n).astype(np.float32)
    if type_id == 1:
        return np.frombuffer(raw, '<f2', n).astype(np.float32)
    if type_id == 30:
        return (np.frombuffer(raw, '<u2', n).astype(np.uint32) << 16).view(np.float32)
    if type_id not in _DECODERS:
        raise GGUFError('tensor type %d is not supported' % type_id)
    return _DECODERS[type_id](_blocks(raw, type_id, n)).reshape(-1)[:n]


# ---- writing ----

def _pack_str(s):
    b = s.encode('utf-8', errors='surrogateescape') if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def pack_kv(key, t, value, elem=None):
    """One metadata record: key, type t (an element type elem for arrays), value."""
    out = _pack_str(key) + struct.pack('<I', t)
    if t == ARRAY:
        out += struct.pack('<IQ', elem, len(value))
        if elem == STRING:
            return out + b''.join(_pack_str(v) for v in value)
        return out + np.asarray(value, dtype=_NUMPY[elem]).tobytes()
    if t == STRING:
        return out + _pack_str(value)
    return out + struct.pack(_SCALAR[t], value)


def copy_kv(src, key):
    """The record of key in GGUFFile src, packed again (tokenizer keys copied as they are)."""
    t, elem = src.types[key]
    return pack_kv(key, t, src.meta[key], elem)


def write_gguf(path, records, tensors, alignment=32):
    """Writes a GGUF v3 file: records are packed metadata records (pack_kv / copy_kv);
    tensors a list of (name, numpy array of shape (ne[n-1], ..., ne[0]), type name 'F32'
    or 'F16')."""
    infos, blobs, offset = [], [], 0
    for name, arr, tname in tensors:
        arr = np.ascontiguousarray(arr)
        data = arr.astype('<f4' if tname == 'F32' else '<f2').tobytes()
        ne = list(reversed(arr.shape))
        infos.append(_pack_str(name) + struct.pack('<I', len(ne)) + struct.pack('<%dQ' % len(ne), *ne)
                     + struct.pack('<IQ', TYPE_ID[tname], offset))
        pad = (-len(data)) % alignment
        blobs.append(data + b'\0' * pad)
        offset += len(data) + pad
    header = struct.pack('<4sIQQ', b'GGUF', 3, len(tensors), len(records)) + b''.join(records) + b''.join(infos)
    with open(path, 'wb') as f:
        f.write(header + b'\0' * ((-len(header)) % alignment))
        for blob in blobs:
            f.write(blob)
