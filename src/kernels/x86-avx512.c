/* kernels/x86-avx512.c — the AVX-512 (F, BW, VL) + VNNI kernel table, see
 * kernels/table.h.
 *
 * The int8 trick: vpdpbusd multiplies unsigned by signed bytes, so the weights are
 * offset to unsigned (w + 128, an XOR with 0x80) and the excess 128 * sum(x), computed
 * once per activation chunk with another vpdpbusd, seeds the accumulator with its
 * negation. The int32 dot of each 4-byte lane is then exact; each lane is scaled by its
 * own group's weight and activation scales (a 64-byte chunk spans one group, or two
 * when the group is an odd multiple of 32).
 *
 * Batch kernels compute 4 rows x 4 vectors per register block, vectors in cache tiles
 * of 64; the one-vector (decode) kernel reads four rows side by side, or one after
 * the other (kernels_decode_streams), each front to back, prefetching ahead
 * (prefetch_weights). The int8 KV-cache attention streams one head's key rows, then
 * its value rows, converting each byte to fp32 on the fly (sign-extend, convert, FMA),
 * keys 4 at a time, each row prefetched KV_AHEAD bytes ahead. */
#include "x86.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Calls fn(N, FULL, ...) with literal N in 1..8 (16-lane chunks of a row) and FULL
 * (the last chunk is whole), so the chunk loops unroll into registers. */
#define CHUNK_DISPATCH8(fn, n, full, ...)                                  \
    do {                                                                   \
        switch ((n) * 2 + ((full) ? 1 : 0)) {                              \
        case 2: fn(1, 0, __VA_ARGS__); break;                              \
        case 3: fn(1, 1, __VA_ARGS__); break;                              \
        case 4: fn(2, 0, __VA_ARGS__); break;                              \
        case 5: fn(2, 1, __VA_ARGS__); break;                              \
        case 6: fn(3, 0, __VA_ARGS__); break;                              \
        case 7: fn(3, 1, __VA_ARGS__); break;                              \
        case 8: fn(4, 0, __VA_ARGS__); break;                              \
        case 9: fn(4, 1, __VA_ARGS__); break;                              \
        case 10: fn(5, 0, __VA_ARGS__); break;                             \
        case 11: fn(5, 1, __VA_ARGS__); break;                             \
        case 12: fn(6, 0, __VA_ARGS__); break;                             \
        case 13: fn(6, 1, __VA_ARGS__); break;                             \
        case 14: fn(7, 0, __VA_ARGS__); break;                             \
        case 15: fn(7, 1, __VA_ARGS__); break;                             \
        case 16: fn(8, 0, __VA_ARGS__); break;                             \
        default: fn(8, 1, __VA_ARGS__); break;                             \
        }                                                                  \
    } while (0)

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

/* Lanes 0..n-1 of 16. */
INLINE __mmask16 mask16_upto(int n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

INLINE __m256 hi256(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* The horizontal sums of four vectors, in order. */
INLINE __m128 hsum4_512(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    __m256 h0 = _mm256_add_ps(_mm512_castps512_ps256(a0), hi256(a0));
    __m256 h1 = _mm256_add_ps(_mm512_castps512_ps256(a1), hi256(a1));
    __m256 h2 = _mm256_add_ps(_mm512_castps512_ps256(a2), hi256(a2));
    __m256 h3 = _mm256_add_ps(_mm512_castps512_ps256(a3), hi256(a3));
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(h0, h1), _mm256_hadd_ps(h2, h3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* The horizontal sum of one vector, added in the same order as one lane of
 * hsum4_512, so a row gives the same bits whichever block it falls in. */
INLINE float hsum1_512(__m512 a)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), hi256(a));
    h = _mm256_hadd_ps(h, h);
    h = _mm256_hadd_ps(h, h);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

/* Scale vector of one 64-byte chunk: lanes 0-7 (bytes 0-31) take s[g0], lanes 8-15
 * (bytes 32-63) take s[g1]. `whole` means group % 64 == 0 (g0 == g1); `half` marks a
 * last chunk holding only 32 bytes. */
INLINE __m512 chunk_scale(const float *s, int g0, int g1, int whole, int half)
{
    __m512 lo = _mm512_set1_ps(s[g0]);
    if (whole || half)
        return lo;
    return _mm512_mask_blend_ps(0xFF00, lo, _mm512_set1_ps(s[g1]));
}

/* One 64-byte chunk (or its low 32 bytes when half) of an R x N block. */
INLINE void q8_chunk_avx512(int R, int N, __m512 acc[BLOCK_ROWS][BLOCK_VECS], int off, int half,
                            int g0, int g1, const int8_t *w, const float *ws, const int8_t *x,
                            const float *xs, int stride, int groups, int whole)
{
    const __m512i c80 = _mm512_set1_epi8((char)0x80);
    const __mmask64 m = half ? 0xFFFFFFFFull : ~0ull;
    __m512i xv[BLOCK_VECS], negcx[BLOCK_VECS];
    __m512 xsv[BLOCK_VECS];
#pragma GCC unroll 4
    for (int v = 0; v < N; v++) {
        xv[v] = half ? _mm512_maskz_loadu_epi8(m, x + (size_t)v * stride + off)
                     : _mm512_loadu_si512(x + (size_t)v * stride + off);
        /* -128 * (sum of each 4 bytes of x) */
        negcx[v] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), c80, xv[v]));
        xsv[v] = chunk_scale(xs + v * groups, g0, g1, whole, half);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m512i wv = half ? _mm512_maskz_loadu_epi8(m, w + (size_t)r * stride + off)
                          : _mm512_loadu_si512(w + (size_t)r * stride + off);
        __m512i wu = _mm512_xor_si512(wv, c80); /* w + 128, as unsigned */
        prefetch_weights(w + (size_t)r * stride + off + prefetch_bytes(stride));
        __m512 wsv = chunk_scale(ws + r * groups, g0, g1, whole, half);
#pragma GCC unroll 4
        for (int v = 0; v < N; v++) {
            __m512i d = _mm512_dpbusd_epi32(negcx[v], wu, xv[v]);
            acc[r][v] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(d), xsv[v]), wsv,
                                        acc[r][v]);
        }
    }
}

INLINE void q8_block_avx512(int R, int N, float *out, int ldo, const int8_t *w, const float *ws,
                            const int8_t *x, const float *xs, int stride, int group)
{
    __m512 acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = _mm512_setzero_ps();
    int groups = stride / group;
    if (group % 64 == 0) {
        /* whole chunks inside each group */
        for (int g = 0, off = 0; g < groups; g++)
            for (int end = off + group; off < end; off += 64)
                q8_chunk_avx512(R, N, acc, off, 0, g, g, w, ws, x, xs, stride, groups, 1);
    } else {
        /* group an odd multiple of 32: walk 32-byte halves, hpg to a group */
        int hpg = group / 32, g = 0, k = 0, off = 0;
        for (; off + 64 <= stride; off += 64) {
            int g0 = g;
            if (++k == hpg)
                g++, k = 0;
            int g1 = g;
            if (++k == hpg)
                g++, k = 0;
            q8_chunk_avx512(R, N, acc, off, 0, g0, g1, w, ws, x, xs, stride, groups, 0);
        }
        if (off < stride)
            q8_chunk_avx512(R, N, acc, off, 1, g, g, w, ws, x, xs, stride, groups, 0);
    }
    if (R == 4) {
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            _mm_storeu_ps(out + (size_t)v * ldo,
                          hsum4_512(acc[0][v], acc[1][v], acc[2][v], acc[3][v]));
        return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            out[(size_t)v * ldo + r] = hsum1_512(acc[r][v]);
}

#define Q8_AVX512_CALL(R, N, out, w, xq, r, v)                                            \
    q8_block_avx512(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                     \
                    w->q + (size_t)(r) * w->stride, w->scale + (size_t)(r) * (w->stride / w->group), \
                    xq->q + (size_t)(v) * xq->stride,                                     \
                    xq->scale + (size_t)(v) * (w->stride / w->group), w->stride, w->group)

/* ---- the one-vector (decode) kernel ---- */

/* One 64-byte chunk of one row into acc: the operations of q8_chunk_avx512 with
 * R = N = 1, in the same order, so the same bits. half: only the low 32 bytes. */
INLINE __m512 decode_chunk_avx512(__m512 acc, const int8_t *w, const int8_t *x, __m512 xs,
                                  __m512 ws, size_t pf, int half)
{
    const __m512i c80 = _mm512_set1_epi8((char)0x80);
    const __mmask64 m = half ? 0xFFFFFFFFull : ~0ull;
    __m512i xv = half ? _mm512_maskz_loadu_epi8(m, x) : _mm512_loadu_si512(x);
    __m512i negcx = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_dpbusd_epi32(_mm512_setzero_si512(), c80, xv));
    __m512i wv = half ? _mm512_maskz_loadu_epi8(m, w) : _mm512_loadu_si512(w);
    if (!half)
        prefetch_weights(w + pf);
    __m512i d = _mm512_dpbusd_epi32(negcx, _mm512_xor_si512(wv, c80), xv);
    return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(d), xs), ws, acc);
}

/* Lanes 0-7 = s[0], lanes 8-15 = s[1]: the scales of a chunk holding two 32-groups. */
INLINE __m512 scale_pair(const float *s)
{
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    /* movq: an unaligned 8-byte load (scales are only 4-byte aligned) */
    return _mm512_permutexvar_ps(
        idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)s))));
}

/* What every row's 64-byte chunk c needs from the one vector x, the same for all rows:
 * -128 * the sums of x's 4-byte pieces (the unsigned trick's correction) and x's scales
 * across the chunk. Built once per call into the scratch's DECODE_X slot; false when out
 * of memory (counted in s). group is 32 or a multiple of 64; a last half chunk (an odd
 * number of 32-groups) gets its correction from its 32 bytes alone. */
typedef struct {
    __m512i *negcx; /* (chunks) */
    __m512 *xs;     /* (chunks) */
} decode_x;

static bool decode_x_build(kernels_scratch *s, decode_x *d, const qbatch *xq, int stride,
                           int group)
{
    size_t chunks = (size_t)(stride + 63) / 64;
    __m512i *buf = kernels_scratch_get(s, SCRATCH_DECODE_X, sizeof(__m512i) * 2 * chunks);
    if (!buf)
        return false;
    d->negcx = buf;
    d->xs = (__m512 *)(buf + chunks);
    const __m512i c80 = _mm512_set1_epi8((char)0x80);
    for (size_t c = 0; c < chunks; c++) {
        int half = 64 * (int)c + 64 > stride;
        __m512i xv = half ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, xq->q + 64 * c)
                          : _mm512_loadu_si512(xq->q + 64 * c);
        d->negcx[c] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), c80, xv));
        if (group == 32)
            d->xs[c] = half ? _mm512_set1_ps(xq->scale[2 * c]) : scale_pair(xq->scale + 2 * c);
        else
            d->xs[c] = _mm512_set1_ps(xq->scale[64 * c / group]);
    }
    return true;
}

/* One full 64-byte chunk c of a row into acc: decode_chunk_avx512's operations with
 * x's part from the cache, so the same bits. */
INLINE __m512 decode_chunk_cached(__m512 acc, __m512i wv, const int8_t *x, const decode_x *d,
                                  size_t c, __m512 ws)
{
    const __m512i c80 = _mm512_set1_epi8((char)0x80);
    __m512i dv = _mm512_dpbusd_epi32(d->negcx[c], _mm512_xor_si512(wv, c80),
                                     _mm512_loadu_si512(x + 64 * c));
    return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dv), d->xs[c]), ws, acc);
}

/* Rows a decode kernel reads side by side where kernels_decode_streams() is 4: four
 * streams a thread keep more of the memory's lines in flight than one on Intel, and
 * share the loads of x's part; eight were slower than one (docs/performance.md,
 * "Decode reads four rows at a time"). Where it is 1, rows go one after the other
 * with x's part per chunk (decode_chunk_avx512), a single walk the hardware
 * prefetchers follow. */
enum { DECODE_ROWS = 4 };

/* Full 64-byte chunk c of R consecutive rows of a Q8_0 w (row w0 first, `stride` bytes
 * apart) into acc[i], row i scaled by wsv[i]. */
INLINE void q8_rows_chunk(int R, __m512 acc[DECODE_ROWS], const int8_t *w0, int stride,
                          size_t c, const __m512 wsv[DECODE_ROWS], const int8_t *x,
                          const decode_x *d, size_t pf)
{
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) {
        const int8_t *wr = w0 + (size_t)i * stride + 64 * c;
        __m512i wv = _mm512_loadu_si512(wr);
        prefetch_weights(wr + pf);
        acc[i] = decode_chunk_cached(acc[i], wv, x, d, c, wsv[i]);
    }
}

/* R consecutive rows of a Q8_0 w (row w0 first, `stride` bytes apart, scales ws0
 * `groups` apart) times the one vector: each row's sum in acc[i], with the operations
 * of decode_chunk_cached in the order of one row alone, so each row gets the bits it
 * gets alone. Group 32 or a multiple of 64 (full 64-byte chunks only). */
INLINE void q8_rows_cached(int R, __m512 acc[DECODE_ROWS], const int8_t *w0, const float *ws0,
                           int stride, int groups, int group, const int8_t *x,
                           const decode_x *d, size_t pf)
{
    __m512 wsv[DECODE_ROWS];
    if (group == 32) {
        for (size_t c = 0; c < (size_t)stride / 64; c++) {
#pragma GCC unroll 4
            for (int i = 0; i < R; i++)
                wsv[i] = scale_pair(ws0 + (size_t)i * groups + 2 * c);
            q8_rows_chunk(R, acc, w0, stride, c, wsv, x, d, pf);
        }
        return;
    }
    for (int g = 0; g < groups; g++) {
#pragma GCC unroll 4
        for (int i = 0; i < R; i++)
            wsv[i] = _mm512_set1_ps(ws0[(size_t)i * groups + g]);
        for (size_t c = (size_t)g * group / 64; c < (size_t)(g + 1) * group / 64; c++)
            q8_rows_chunk(R, acc, w0, stride, c, wsv, x, d, pf);
    }
}

/* Rows [r0, r1) of w times vector 0 of xq, DECODE_ROWS rows side by side and the rest
 * one after the other (see rows_q8_avx512 for why); group 32 or a multiple of 64. */
static void rows_q8_one_avx512(kernels_scratch *s, float *out, const tensor *w,
                               const qbatch *xq, int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group;
    const size_t pf = prefetch_bytes(stride);
    const int8_t *x = xq->q;
    const float *xs = xq->scale;
    decode_x d;
    bool cached = kernels_decode_streams() > 1;
    if (cached && !decode_x_build(s, &d, xq, stride, group))
        return;
    int r = r0;
    for (; cached && stride % 64 == 0 && r + DECODE_ROWS <= r1; r += DECODE_ROWS) {
        __m512 acc[DECODE_ROWS];
        for (int i = 0; i < DECODE_ROWS; i++)
            acc[i] = _mm512_setzero_ps();
        q8_rows_cached(DECODE_ROWS, acc, w->q + (size_t)r * stride,
                       w->scale + (size_t)r * groups, stride, groups, group, x, &d, pf);
        for (int i = 0; i < DECODE_ROWS; i++)
            out[r + i] = hsum1_512(acc[i]);
    }
    for (; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * stride;
        const float *ws = w->scale + (size_t)r * groups;
        __m512 acc = _mm512_setzero_ps();
        if (group == 32) {
            size_t c = 0;
            for (; 64 * c + 64 <= (size_t)stride; c++) {
                if (!cached) {
                    acc = decode_chunk_avx512(acc, wr + 64 * c, x + 64 * c, scale_pair(xs + 2 * c),
                                              scale_pair(ws + 2 * c), pf, 0);
                    continue;
                }
                __m512i wv = _mm512_loadu_si512(wr + 64 * c);
                prefetch_weights(wr + 64 * c + pf);
                acc = decode_chunk_cached(acc, wv, x, &d, c, scale_pair(ws + 2 * c));
            }
            if (64 * c < (size_t)stride) /* an odd number of groups: the last one alone */
                acc = decode_chunk_avx512(acc, wr + 64 * c, x + 64 * c,
                                          _mm512_set1_ps(xs[2 * c]),
                                          _mm512_set1_ps(ws[2 * c]), pf, 1);
        } else {
            for (int g = 0, off = 0; g < groups; g++) {
                __m512 wsv = _mm512_set1_ps(ws[g]);
                for (int end = off + group; off < end; off += 64) {
                    if (!cached) {
                        acc = decode_chunk_avx512(acc, wr + off, x + off, _mm512_set1_ps(xs[g]),
                                                  wsv, pf, 0);
                        continue;
                    }
                    __m512i wv = _mm512_loadu_si512(wr + off);
                    prefetch_weights(wr + off + pf);
                    acc = decode_chunk_cached(acc, wv, x, &d, (size_t)off / 64, wsv);
                }
            }
        }
        out[r] = hsum1_512(acc);
    }
}

/* The two scales of a pair of blocks (lanes 0-7, 8-15), from their IEEE halves. */
INLINE __m512 block_scale_pair(const uint8_t *b0, const uint8_t *b1)
{
    uint16_t h0, h1;
    memcpy(&h0, b0, 2);
    memcpy(&h1, b1, 2);
    return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(_cvtsh_ss(h0)), _mm512_set1_ps(_cvtsh_ss(h1)));
}

/* The 64 values of blocks b0 and b1 of a Q8_0_BLOCKS row, one after the other. */
INLINE __m512i block_pair_values(const uint8_t *b0, const uint8_t *b1)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b0 + 2))),
                              _mm256_loadu_si256((const __m256i *)(b1 + 2)), 1);
}

/* R consecutive rows of a Q8_0_BLOCKS w (row w0 first, row_bytes apart) times the one
 * vector, over the first `pairs` pairs of blocks: each row's sum in acc[i] with the
 * operations of decode_chunk_cached in the order of one row alone (the same bits). */
INLINE void q8b_rows_cached(int R, __m512 acc[DECODE_ROWS], const uint8_t *w0, size_t row_bytes,
                            int pairs, const int8_t *x, const decode_x *d, size_t pf)
{
    for (int c = 0; c < pairs; c++) {
#pragma GCC unroll 4
        for (int i = 0; i < R; i++) {
            const uint8_t *b0 = w0 + (size_t)i * row_bytes + (size_t)2 * c * QUANT_BLOCK_BYTES,
                          *b1 = b0 + QUANT_BLOCK_BYTES;
            __m512i wv = block_pair_values(b0, b1);
            prefetch_weights(b0 + pf);
            acc[i] = decode_chunk_cached(acc[i], wv, x, d, (size_t)c, block_scale_pair(b0, b1));
        }
    }
}

/* The last block of a row with an odd number of them, alone: acc plus its product. */
INLINE __m512 q8b_last_block(__m512 acc, const uint8_t *b0, const int8_t *x, float xs)
{
    uint16_t h;
    memcpy(&h, b0, 2);
    return decode_chunk_avx512(acc, (const int8_t *)(b0 + 2), x, _mm512_set1_ps(xs),
                               _mm512_set1_ps(_cvtsh_ss(h)), 0, 1);
}

/* rows_q8_one_avx512's group-32 walk over a Q8_0_BLOCKS row: each 64-value chunk is
 * the values of two blocks, scaled by their halves made fp32, in the same operations
 * (decode_chunk_avx512 on the same bytes): the bits of the Q8_0 layout with those
 * scales. DECODE_ROWS rows side by side, the rest one after the other; each row's
 * 34-byte blocks stream front to back, prefetched ahead like rows. */
static void matvec_q8b_avx512(kernels_scratch *s, float *out, const tensor *w,
                              const qbatch *xq, int r0, int r1)
{
    const int blocks = w->cols / QUANT_BLOCK;
    const size_t row_bytes = (size_t)blocks * QUANT_BLOCK_BYTES;
    const size_t pf = prefetch_bytes(row_bytes);
    const int8_t *x = xq->q;
    const float *xs = xq->scale;
    const uint8_t *last = w->blocks + (size_t)(blocks - 1) * QUANT_BLOCK_BYTES;
    decode_x d;
    bool cached = kernels_decode_streams() > 1;
    if (cached && !decode_x_build(s, &d, xq, w->cols, QUANT_BLOCK))
        return;
    int r = r0;
    for (; cached && r + DECODE_ROWS <= r1; r += DECODE_ROWS) {
        __m512 acc[DECODE_ROWS];
        for (int i = 0; i < DECODE_ROWS; i++)
            acc[i] = _mm512_setzero_ps();
        q8b_rows_cached(DECODE_ROWS, acc, w->blocks + (size_t)r * row_bytes, row_bytes,
                        blocks / 2, x, &d, pf);
        for (int i = 0; i < DECODE_ROWS; i++) {
            if (blocks % 2)
                acc[i] = q8b_last_block(acc[i], last + (size_t)(r + i) * row_bytes,
                                        x + 64 * (blocks / 2), xs[blocks - 1]);
            out[r + i] = hsum1_512(acc[i]);
        }
    }
    for (; r < r1; r++) {
        const uint8_t *wr = w->blocks + (size_t)r * row_bytes;
        __m512 acc = _mm512_setzero_ps();
        int c = 0;
        for (; 2 * c + 2 <= blocks; c++) {
            const uint8_t *b0 = wr + (size_t)2 * c * QUANT_BLOCK_BYTES, *b1 = b0 + QUANT_BLOCK_BYTES;
            __m512i wv = block_pair_values(b0, b1);
            prefetch_weights(b0 + pf);
            __m512 wsv = block_scale_pair(b0, b1);
            if (cached) {
                acc = decode_chunk_cached(acc, wv, x, &d, (size_t)c, wsv);
            } else {
                const __m512i c80 = _mm512_set1_epi8((char)0x80);
                __m512i xv = _mm512_loadu_si512(x + 64 * c);
                __m512i negcx = _mm512_sub_epi32(
                    _mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), c80, xv));
                __m512i dv = _mm512_dpbusd_epi32(negcx, _mm512_xor_si512(wv, c80), xv);
                acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dv), scale_pair(xs + 2 * c)),
                                      wsv, acc);
            }
        }
        if (2 * c < blocks) /* an odd number of blocks: the last one alone */
            acc = q8b_last_block(acc, wr + (size_t)2 * c * QUANT_BLOCK_BYTES, x + 64 * c, xs[2 * c]);
        out[r] = hsum1_512(acc);
    }
}

/* The one-vector (decode) kernel is rows_q8_one_avx512: the generic kernel's
 * operations for R = N = 1, DECODE_ROWS rows side by side with x's part computed once
 * a call, or (one stream) a row at a time with x's part once a chunk. Both give the
 * same bits as a batch (see hsum1_512), so a matvec equals vector 0 of a matmul. */
static void rows_q8_avx512(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                           int n, int r0, int r1)
{
    if (n == 1 && (w->group == 32 || w->group % 64 == 0)) {
        rows_q8_one_avx512(s, out, w, xq, r0, r1);
        return;
    }
#define CALL(r, R, v, N) BLOCK_DISPATCH(Q8_AVX512_CALL, R, N, out, w, xq, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, n == 1);
#undef CALL
}

/* ---- the prefill GEMM (packed activations, see gemm_pack) ---- */

/* Rows per register block of the GEMM, and blocks of GEMM_VECS vectors per register
 * block: R x T int32 accumulators (one per row and vector block, 16 vectors each) and
 * as many float ones. */
enum { GEMM_ROWS = 4, GEMM_TILE = 2 };

/* -128 * Σ w over each unit of row w (stride values): the int32 sums start there. A
 * unit is a group, or with H = 2 (group 32) each half of one. */
static void gemm_row_bias(int32_t *bias, const int8_t *w, int stride, int group, int H)
{
    const __m256i ones = _mm256_set1_epi8(1);
    for (int g = 0; g < stride / group; g++) {
        __m256i s = _mm256_setzero_si256();
        for (int i = g * group; i < (g + 1) * group; i += 32)
            s = _mm256_dpbusd_epi32(s, ones, _mm256_loadu_si256((const __m256i *)(w + i)));
        __m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
        __m128i h[2] = {lo, hi}; /* each half's four sums */
        if (H == 1)
            h[0] = _mm_add_epi32(lo, hi);
        for (int u = 0; u < H; u++) {
            __m128i t = _mm_add_epi32(h[u], _mm_shuffle_epi32(h[u], 0x4e));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
            bias[g * H + u] = -128 * _mm_cvtsi128_si32(t);
        }
    }
}

/* R rows (from w, each with its group biases) x T blocks of 16 vectors (from block b
 * of xp): out[v][r] for the block's real vectors. H: the units a group is cut into,
 * each with its own weight scale and bias (1; 2 for the halves of gemm_q8_halves: each
 * half's products summed over the groups apart, the second sum added to the first at
 * the end, as two gemm_q8 products of the halves would be). */
INLINE void gemm_block_avx512(int R, int T, int H, float *out, size_t ldo, const int8_t *w,
                              const float *ws, const int32_t *bias, const gemm_pack *xp, int b,
                              int stride, int group)
{
    const int groups = stride / group, k4 = group / 4, units = groups * H;
    const size_t block_bytes = (size_t)stride * GEMM_VECS;
    const uint8_t *x0 = xp->q + (size_t)b * block_bytes;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m512 facc[2][GEMM_ROWS][GEMM_TILE];
#pragma GCC unroll 2
    for (int h = 0; h < H; h++)
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 2
            for (int t = 0; t < T; t++)
                facc[h][r][t] = _mm512_setzero_ps();
    for (int g = 0; g < groups; g++) {
        const uint8_t *xg = x0 + (size_t)g * k4 * 64;
        const int8_t *wg = w + (size_t)g * group;
#pragma GCC unroll 2
        for (int h = 0; h < H; h++) {
            __m512i acc[GEMM_ROWS][GEMM_TILE];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m512i b0 = _mm512_set1_epi32(bias[r * units + g * H + h]);
#pragma GCC unroll 2
                for (int t = 0; t < T; t++)
                    acc[r][t] = b0;
            }
#pragma GCC unroll 16
            for (int k = h * k4 / H; k < (h + 1) * k4 / H; k++) {
                __m512i xv[GEMM_TILE];
#pragma GCC unroll 2
                for (int t = 0; t < T; t++)
                    xv[t] = _mm512_loadu_si512(xg + t * block_bytes + (size_t)k * 64);
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    int32_t piece;
                    memcpy(&piece, wg + (size_t)r * stride + 4 * k, 4);
                    __m512i wv = _mm512_set1_epi32(piece);
#pragma GCC unroll 2
                    for (int t = 0; t < T; t++)
                        acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], xv[t], wv);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m512 wsv = _mm512_set1_ps(ws[r * units + g * H + h]);
#pragma GCC unroll 2
                for (int t = 0; t < T; t++) {
                    __m512 xsv = _mm512_loadu_ps(xs0 + ((size_t)t * groups + g) * GEMM_VECS);
                    facc[h][r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][t]),
                                                    _mm512_mul_ps(xsv, wsv), facc[h][r][t]);
                }
            }
        }
    }
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32((int)ldo));
#pragma GCC unroll 2
    for (int t = 0; t < T; t++) {
        int left = xp->n - (b + t) * GEMM_VECS;
        __mmask16 m = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
        float *o = out + (size_t)(b + t) * GEMM_VECS * ldo;
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            _mm512_mask_i32scatter_ps(o + r, m, idx,
                                      H == 2 ? _mm512_add_ps(facc[0][r][t], facc[1][r][t])
                                             : facc[0][r][t],
                                      4);
    }
}

/* A register block's call: groups of 32 (GGUF rows) and 64 (llama2.c's int8 files) as
 * constants, so that a group's dot steps unroll and each sum stays in one register (with
 * a group known only at run time, GCC copies the 8 sums between registers around every
 * step); H 2 only with 32. */
#define GEMM_CALL(R, T, o, ld, wr, ws, bs, xp, b, stride, group)                            \
    (group == 64  ? gemm_block_avx512(R, T, 1, o, ld, wr, ws, bs, xp, b, stride, 64)          \
     : group != 32 ? gemm_block_avx512(R, T, 1, o, ld, wr, ws, bs, xp, b, stride, group)      \
     : H == 2     ? gemm_block_avx512(R, T, 2, o, ld, wr, ws, bs, xp, b, stride, 32)          \
                  : gemm_block_avx512(R, T, 1, o, ld, wr, ws, bs, xp, b, stride, 32))

/* Packed bytes of activations a row block keeps reading from L2: token tiles are cut
 * to about this much. */
enum { GEMM_TILE_BYTES = 512 << 10 };

/* L1 sets that the results of 16 vectors, rows `ld` floats apart, fall into (of 64). */
static int l1_sets_hit(size_t ld)
{
    size_t lines = ld * sizeof(float) / 64, g = 64;
    while (lines % g) /* g = gcd(lines, 64) */
        g /= 2;
    return lines ? (int)(64 / g) : 1;
}

/* Results are scattered to 16 vectors' rows at once; when out's row length would put
 * those 16 lines in fewer than 4 L1 sets (an 8-way set then overflows: rows of 1, 2 or
 * 4 KiB), they go to a staging tile (vectors, rows of the range; the scratch's
 * GEMM_TILE slot) whose rows are an odd number of lines long, then row by row into out.
 * A row block's sums (gemm_row_bias) are on the stack, or for rows of more than 512
 * groups in the GEMM_BIAS slot. */
static void gemm_units_avx512(int H, kernels_scratch *s, float *out, const tensor *w,
                              const gemm_pack *xp, int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group,
              units = groups * H;
    bool staged = l1_sets_hit((size_t)w->rows) < 4;
    size_t ld = (size_t)(r1 - r0 + 15) / 16 * 16;
    if ((ld / 16) % 2 == 0)
        ld += 16;
    float *tile = staged ? kernels_scratch_get(s, SCRATCH_GEMM_TILE,
                                               sizeof(float) * ld * (size_t)xp->blocks *
                                                   GEMM_VECS)
                         : out + r0;
    if (!staged)
        ld = (size_t)w->rows;
    int32_t bias[GEMM_ROWS * 512]; /* (rows, units) of a row block */
    int32_t *bs = bias;
    if ((size_t)GEMM_ROWS * units > sizeof bias / sizeof bias[0])
        bs = kernels_scratch_get(s, SCRATCH_GEMM_BIAS,
                                 sizeof(int32_t) * GEMM_ROWS * (size_t)units);
    if (!tile || !bs)
        return;
    int tile_blocks = (int)(GEMM_TILE_BYTES / ((size_t)stride * GEMM_VECS));
    tile_blocks = tile_blocks < GEMM_TILE ? GEMM_TILE : tile_blocks / GEMM_TILE * GEMM_TILE;
    for (int b0 = 0; b0 < xp->blocks; b0 += tile_blocks) {
        int b1 = b0 + tile_blocks < xp->blocks ? b0 + tile_blocks : xp->blocks;
        for (int r = r0; r < r1; r += GEMM_ROWS) {
            int R = r1 - r < GEMM_ROWS ? r1 - r : GEMM_ROWS;
            const int8_t *wr = w->q + (size_t)r * stride;
            const float *ws = w->scale + (size_t)r * units;
            float *o = tile + (r - r0);
            for (int i = 0; i < R; i++)
                gemm_row_bias(bs + i * units, wr + (size_t)i * stride, stride, group, H);
            for (int b = b0; b < b1; b += GEMM_TILE) {
                int T = b1 - b < GEMM_TILE ? b1 - b : GEMM_TILE;
                switch (R * 2 + T - 2) {
                case 8: GEMM_CALL(4, 2, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 7: GEMM_CALL(4, 1, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 6: GEMM_CALL(3, 2, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 5: GEMM_CALL(3, 1, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 4: GEMM_CALL(2, 2, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 3: GEMM_CALL(2, 1, o, ld, wr, ws, bs, xp, b, stride, group); break;
                case 2: GEMM_CALL(1, 2, o, ld, wr, ws, bs, xp, b, stride, group); break;
                default: GEMM_CALL(1, 1, o, ld, wr, ws, bs, xp, b, stride, group); break;
                }
            }
        }
    }
    for (int v = 0; staged && v < xp->n; v++)
        memcpy(out + (size_t)v * w->rows + r0, tile + (size_t)v * ld, sizeof(float) * (r1 - r0));
}

static void gemm_q8_avx512(kernels_scratch *s, float *out, const tensor *w,
                           const gemm_pack *xp, int r0, int r1)
{
    gemm_units_avx512(1, s, out, w, xp, r0, r1);
}

/* Q6_K's rows whole (KERNELS_UNPACK_HALVES): a group's halves summed apart. */
static void gemm_q8_halves_avx512(kernels_scratch *s, float *out, const tensor *w,
                                  const gemm_pack *xp, int r0, int r1)
{
    gemm_units_avx512(2, s, out, w, xp, r0, r1);
}

static float dot_q8_avx512(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                           int len, int group)
{
    if (group % 32)
        return kernels_scalar_dot_q8(a, as, b, bs, len, group);
    float out;
    q8_block_avx512(1, 1, &out, 1, a, as, b, bs, len, group);
    return out;
}

static void rows_dot_avx512(float *out, const float *rows, size_t row_stride, int n_rows,
                            const float *x, int len)
{
    int r = 0;
    for (; r + 4 <= n_rows; r += 4) {
        const float *row = rows + (size_t)r * row_stride;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int j = 0; j < len; j += 16) {
            __mmask16 m = len - j >= 16 ? 0xFFFF : (__mmask16)((1u << (len - j)) - 1);
            __m512 xv = _mm512_maskz_loadu_ps(m, x + j);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + j), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + row_stride + j), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + 2 * row_stride + j), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + 3 * row_stride + j), xv, a3);
        }
        _mm_storeu_ps(out + r, hsum4_512(a0, a1, a2, a3));
    }
    for (; r < n_rows; r++) {
        const float *row = rows + (size_t)r * row_stride;
        __m512 a0 = _mm512_setzero_ps();
        for (int j = 0; j < len; j += 16) {
            __mmask16 m = len - j >= 16 ? 0xFFFF : (__mmask16)((1u << (len - j)) - 1);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row + j), _mm512_maskz_loadu_ps(m, x + j), a0);
        }
        out[r] = hsum1_512(a0);
    }
}

static void rows_axpy_avx512(float *out, const float *rows, size_t row_stride, int n_rows,
                             const float *a, int len)
{
    int j = 0;
    for (; j + 64 <= len; j += 64) {
        __m512 o0 = _mm512_loadu_ps(out + j), o1 = _mm512_loadu_ps(out + j + 16);
        __m512 o2 = _mm512_loadu_ps(out + j + 32), o3 = _mm512_loadu_ps(out + j + 48);
        for (int r = 0; r < n_rows; r++) {
            const float *row = rows + (size_t)r * row_stride + j;
            __m512 ar = _mm512_set1_ps(a[r]);
            o0 = _mm512_fmadd_ps(ar, _mm512_loadu_ps(row), o0);
            o1 = _mm512_fmadd_ps(ar, _mm512_loadu_ps(row + 16), o1);
            o2 = _mm512_fmadd_ps(ar, _mm512_loadu_ps(row + 32), o2);
            o3 = _mm512_fmadd_ps(ar, _mm512_loadu_ps(row + 48), o3);
        }
        _mm512_storeu_ps(out + j, o0);
        _mm512_storeu_ps(out + j + 16, o1);
        _mm512_storeu_ps(out + j + 32, o2);
        _mm512_storeu_ps(out + j + 48, o3);
    }
    for (; j < len; j += 16) {
        __mmask16 m = len - j >= 16 ? 0xFFFF : (__mmask16)((1u << (len - j)) - 1);
        __m512 o = _mm512_maskz_loadu_ps(m, out + j);
        for (int r = 0; r < n_rows; r++)
            o = _mm512_fmadd_ps(_mm512_set1_ps(a[r]),
                                _mm512_maskz_loadu_ps(m, rows + (size_t)r * row_stride + j), o);
        _mm512_mask_storeu_ps(out + j, m, o);
    }
}

INLINE __m512 exp512(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(EXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, k);
}

/* swiglu_scalar's operations, 16 at a time, with exp512 for expf. */
static void swiglu_avx512(float *gate, const float *up, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
        __m512 s = _mm512_mul_ps(g, _mm512_div_ps(one, _mm512_add_ps(one, e)));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

/* kernels_scalar_geglu's operations, 16 at a time, with exp512 for expf; the exponent held
 * at 88 (exp512 has no upper clamp), where g / (1 + e) is already 0 to float. */
static void geglu_avx512(float *gate, const float *up, int n)
{
    const __m512 one = _mm512_set1_ps(1.0f), c = _mm512_set1_ps(0.79788456080286535588f);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
        __m512 u = _mm512_mul_ps(c, _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), g3, g));
        __m512 t = _mm512_min_ps(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u), _mm512_set1_ps(88.0f));
        __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp512(t)));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

static void softmax_avx512(float *x, int n)
{
    __m512 vmax = _mm512_set1_ps(x[0]);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, x + i));
    }
    __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), vsum = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 xi = _mm512_maskz_loadu_ps(m, x + i);
        /* exp(-inf) is 0, as expf gives it (exp512 stops at exp(-87.3)) */
        __m512 e = _mm512_maskz_mov_ps(
            _mm512_cmp_ps_mask(xi, _mm512_set1_ps(-INFINITY), _CMP_NEQ_UQ),
            exp512(_mm512_sub_ps(xi, vm)));
        _mm512_mask_storeu_ps(x + i, m, e);
        vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    }
}

/* quantize_row_scalar with 16 floats a step; the same operations in the same
 * order (max, divide, reciprocal, multiply, round to nearest even), so the same bytes. */
static void quantize_row_avx512(int8_t *q, float *scale, const float *x, int n, int stride,
                                int group)
{
    for (int g = 0; g < stride / group; g++) {
        int lo = g * group;
        int hi = lo + group < n ? lo + group : n;
        __m512 amax = _mm512_setzero_ps();
        __mmask16 nan = 0;
        for (int i = lo; i < hi; i += 16) {
            __mmask16 m = hi - i >= 16 ? 0xFFFF : (__mmask16)((1u << (hi - i)) - 1);
            __m512 v = _mm512_maskz_loadu_ps(m, x + i);
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            amax = _mm512_max_ps(amax, _mm512_abs_ps(v));
        }
        float s = nan ? NAN : _mm512_reduce_max_ps(amax) / 127.0f;
        float inv = s > 0.0f ? 1.0f / s : 0.0f;
        scale[g] = s;
        __m512 vinv = _mm512_set1_ps(inv);
        for (int i = lo; i < lo + group; i += 16) {
            __mmask16 m = hi - i >= 16 ? 0xFFFF : hi - i <= 0 ? 0 : (__mmask16)((1u << (hi - i)) - 1);
            __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv));
            _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtsepi32_epi8(v));
        }
    }
}

/* gemm_pack16: 64 bytes (16 pieces) of each of the 16 vectors loaded, transposed in
 * registers (transpose16), so that register k holds piece k of every vector: one
 * 64-byte row of the pack; a row's last 32 bytes (stride % 64 == 32) masked. */
void kernels_avx512_gemm_pack16(uint8_t *dst, const int8_t *const rows[16], int stride,
                                uint32_t offset)
{
    const __m512i off = _mm512_set1_epi32((int)offset);
    for (int c = 0; c < stride; c += 64) {
        const int pieces = stride - c >= 64 ? 16 : (stride - c) / 4;
        const __mmask16 m = pieces == 16 ? 0xFFFF : (__mmask16)((1u << pieces) - 1);
        __m512 t[16];
#pragma GCC unroll 16
        for (int v = 0; v < 16; v++)
            t[v] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(m, rows[v] + c));
        transpose16(t);
        for (int k = 0; k < pieces; k++)
            _mm512_storeu_si512((void *)(dst + (size_t)(c / 4 + k) * 64),
                                _mm512_xor_si512(_mm512_castps_si512(t[k]), off));
    }
}

/* F32 block: R rows x N vectors (vector v at x + v * xstride), 16 floats a step,
 * masked tail. */
INLINE void f32_block_avx512(int R, int N, float *out, size_t ldo, const float *w,
                             size_t wstride, const float *x, size_t xstride, int cols)
{
    __m512 acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < cols; k += 16) {
        __mmask16 m = cols - k >= 16 ? 0xFFFF : (__mmask16)((1u << (cols - k)) - 1);
        __m512 xv[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            xv[v] = _mm512_maskz_loadu_ps(m, x + (size_t)v * xstride + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 wv = _mm512_maskz_loadu_ps(m, w + (size_t)r * wstride + k);
            prefetch_weights((const char *)(w + (size_t)r * wstride + k) +
                             prefetch_bytes(4 * wstride));
#pragma GCC unroll 4
            for (int v = 0; v < N; v++)
                acc[r][v] = _mm512_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
    if (R == 4) {
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            _mm_storeu_ps(out + (size_t)v * ldo,
                          hsum4_512(acc[0][v], acc[1][v], acc[2][v], acc[3][v]));
        return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            out[(size_t)v * ldo + r] = hsum1_512(acc[r][v]);
}

#define F32_AVX512_CALL(R, N, out, w, x, r, v)                                            \
    f32_block_avx512(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                    \
                     w->f + (size_t)(r) * w->stride, w->stride, x + (size_t)(v) * w->cols, \
                     w->cols, w->cols)

static void rows_f32_avx512(float *out, const tensor *w, const float *x, int n, int r0, int r1)
{
#define CALL(r, R, v, N) BLOCK_DISPATCH(F32_AVX512_CALL, R, N, out, w, x, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, 0);
#undef CALL
}

/* Queries per block of the batched attention's scores (8 accumulators of 16 keys). */
enum { ATT_QUERIES = 8 };

/* Scores of NQ queries (rows of q0) against the NT (1 or 2) key tiles at k0 (see
 * attention_avx512), keys t0..t0 + 16 NT - 1 of which those below `keys` are stored:
 * each score is Σ_j q[j] * k[j] summed in j order, times scale, into rows of a0. */
INLINE void scores_tiles_avx512(int NQ, int NT, float *a0, size_t att_stride, const float *q0,
                                size_t q_stride, const float *k0, int t0, int keys, int hs,
                                const __m512 vscale)
{
    __m512 acc[2][ATT_QUERIES];
#pragma GCC unroll 2
    for (int c = 0; c < NT; c++)
#pragma GCC unroll 8
        for (int i = 0; i < NQ; i++)
            acc[c][i] = _mm512_setzero_ps();
    for (int j = 0; j < hs; j++) {
        __m512 kv[2];
#pragma GCC unroll 2
        for (int c = 0; c < NT; c++)
            kv[c] = _mm512_load_ps(k0 + (size_t)c * 16 * hs + 16 * j);
#pragma GCC unroll 8
        for (int i = 0; i < NQ; i++) {
            __m512 qv = _mm512_set1_ps(q0[(size_t)i * q_stride + j]);
#pragma GCC unroll 2
            for (int c = 0; c < NT; c++)
                acc[c][i] = _mm512_fmadd_ps(qv, kv[c], acc[c][i]);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < NT; c++) {
        int left = keys - t0 - 16 * c;
        __mmask16 m = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 8
        for (int i = 0; i < NQ; i++)
            _mm512_mask_storeu_ps(a0 + (size_t)i * att_stride + t0 + 16 * c, m,
                                  _mm512_mul_ps(acc[c][i], vscale));
    }
}

/* Scores of NQ queries (rows of q0) against keys 0..keys-1 from the key tiles kt, two
 * tiles (32 keys) a step while there are two, so that each query value loaded feeds
 * two FMAs. */
INLINE void scores_block_avx512(int NQ, float *a0, size_t att_stride, const float *q0,
                                size_t q_stride, const float *kt, int keys, int hs, float scale)
{
    const __m512 vscale = _mm512_set1_ps(scale);
    const int tiles = (keys + 15) / 16;
    int T = 0;
    for (; T + 2 <= tiles; T += 2)
        scores_tiles_avx512(NQ, 2, a0, att_stride, q0, q_stride, kt + (size_t)T * 16 * hs,
                            16 * T, keys, hs, vscale);
    if (T < tiles)
        scores_tiles_avx512(NQ, 1, a0, att_stride, q0, q_stride, kt + (size_t)T * 16 * hs,
                            16 * T, keys, hs, vscale);
}

#define SCORES_CALL(NQ, ...) scores_block_avx512(NQ, __VA_ARGS__)

/* out rows (NQ of them) = their weights a0 · V over keys 0..keys-1, 64 values a step
 * in registers, each value row loaded once per step. */
INLINE void values_block_avx512(int NQ, float *o0, size_t out_stride, const float *a0,
                                size_t att_stride, const float *v, size_t kv_stride, int keys,
                                int hs)
{
    for (int j = 0; j < hs; j += 64) {
        __mmask16 m[4];
        for (int c = 0; c < 4; c++)
            m[c] = mask16_upto(hs - j - 16 * c);
        __m512 acc[4][4];
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                acc[i][c] = _mm512_setzero_ps();
        for (int t = 0; t < keys; t++) {
            const float *vr = v + (size_t)t * kv_stride + j;
            __m512 vc[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                vc[c] = _mm512_maskz_loadu_ps(m[c], vr + 16 * c);
#pragma GCC unroll 4
            for (int i = 0; i < NQ; i++) {
                __m512 w = _mm512_set1_ps(a0[(size_t)i * att_stride + t]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++)
                    acc[i][c] = _mm512_fmadd_ps(w, vc[c], acc[i][c]);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                _mm512_mask_storeu_ps(o0 + (size_t)i * out_stride + j + 16 * c, m[c], acc[i][c]);
    }
}

#define VALUES_CALL(NQ, ...) values_block_avx512(NQ, __VA_ARGS__)

/* Attention in blocks of ATT_QUERIES queries: the keys transposed once per call into
 * tiles of 16 in the scratch's ATTENTION slot (so that 16 keys' scores fill one
 * register, no horizontal sums), scores, softmax per query, then out = att · V for 4
 * queries at a time. Returns at once when the slot cannot be had (counted in s). */
static void attention_avx512(kernels_scratch *s, float *out, size_t out_stride, float *att,
                             size_t att_stride, const float *q, size_t q_stride,
                             const float *k, const float *v, size_t kv_stride, int n, int pos,
                             int hs, float scale)
{
    const int all = pos + n;
    const size_t kld = (size_t)(all + 15) / 16 * 16;
    float *kt = kernels_scratch_get(s, SCRATCH_ATTENTION, sizeof(float) * kld * hs);
    if (!kt)
        return;
    /* key tiles: 16 keys' values j side by side, tile after tile (each 16 x hs floats,
     * contiguous, so that a tile's rows do not fall into the same L1 sets) */
    for (int t = 0; t < all; t++) {
        float *kc = kt + (size_t)(t / 16) * 16 * hs + t % 16;
        for (int j = 0; j < hs; j++)
            kc[16 * j] = k[(size_t)t * kv_stride + j];
    }
    for (size_t t = (size_t)all; t < kld; t++)
        for (int j = 0; j < hs; j++)
            kt[t / 16 * 16 * hs + 16 * (size_t)j + t % 16] = 0.0f;

    for (int i0 = 0; i0 < n; i0 += ATT_QUERIES) {
        int nq = n - i0 < ATT_QUERIES ? n - i0 : ATT_QUERIES;
        int keys = pos + i0 + nq; /* the block's last query sees this many */
        float *a0 = att + (size_t)i0 * att_stride;
        const float *q0 = q + (size_t)i0 * q_stride;
        switch (nq) {
        case 8: SCORES_CALL(8, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 7: SCORES_CALL(7, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 6: SCORES_CALL(6, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 5: SCORES_CALL(5, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 4: SCORES_CALL(4, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 3: SCORES_CALL(3, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 2: SCORES_CALL(2, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        default: SCORES_CALL(1, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        }
        for (int i = 0; i < nq; i++) {
            float *a = a0 + (size_t)i * att_stride;
            int ki = pos + i0 + i + 1;
            softmax_avx512(a, ki);
            for (int t = ki; t < all; t++)
                a[t] = 0.0f;
        }
        for (int s0 = 0; s0 < nq; s0 += 4) {
            int ns = nq - s0 < 4 ? nq - s0 : 4;
            int ks = pos + i0 + s0 + ns;
            float *o0 = out + (size_t)(i0 + s0) * out_stride;
            const float *as = a0 + (size_t)s0 * att_stride;
            switch (ns) {
            case 4: VALUES_CALL(4, o0, out_stride, as, att_stride, v, kv_stride, ks, hs); break;
            case 3: VALUES_CALL(3, o0, out_stride, as, att_stride, v, kv_stride, ks, hs); break;
            case 2: VALUES_CALL(2, o0, out_stride, as, att_stride, v, kv_stride, ks, hs); break;
            default: VALUES_CALL(1, o0, out_stride, as, att_stride, v, kv_stride, ks, hs); break;
            }
        }
    }
}

/* 16 int8 at p as fp32: a whole chunk loads 16 bytes, a row's last partial one loads
 * under m (no byte past the row is read). */
INLINE __m512 q8x16_ps(const int8_t *p, __mmask16 m, int whole)
{
    __m128i b = whole ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

/* Scores of all keys for hs <= 128: q in N zmm (N = ceil(hs / 16); FULL: hs % 16 == 0),
 * keys 4 at a time (the 4 x 4-way horizontal sum), the last few one at a time with
 * hsum1_512, which adds in the same order. */
INLINE void scores_q8_avx512(int N, int FULL, float *s, const float *q, const int8_t *k,
                             const float *ks, int n_keys, int hs, float scale)
{
    __m512 qv[8];
    __mmask16 m[8];
#pragma GCC unroll 8
    for (int c = 0; c < N; c++) {
        m[c] = mask16_upto(hs - 16 * c);
        qv[c] = _mm512_maskz_loadu_ps(m[c], q + 16 * c);
    }
    const __m128 vscale = _mm_set1_ps(scale);
    int t = 0;
    for (; t + 4 <= n_keys; t += 4) {
        const int8_t *kb = k + (size_t)t * hs;
        __m512 acc[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            const int8_t *row = kb + (size_t)r * hs;
            prefetch_kv_row(row, hs);
            acc[r] = _mm512_setzero_ps();
#pragma GCC unroll 8
            for (int c = 0; c < N; c++)
                acc[r] = _mm512_fmadd_ps(q8x16_ps(row + 16 * c, m[c], FULL || c < N - 1), qv[c],
                                         acc[r]);
        }
        __m128 d = hsum4_512(acc[0], acc[1], acc[2], acc[3]);
        _mm_storeu_ps(s + t, _mm_mul_ps(_mm_mul_ps(d, vscale), _mm_loadu_ps(ks + t)));
    }
    for (; t < n_keys; t++) {
        const int8_t *row = k + (size_t)t * hs;
        __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int c = 0; c < N; c++)
            acc = _mm512_fmadd_ps(q8x16_ps(row + 16 * c, m[c], FULL || c < N - 1), qv[c], acc);
        s[t] = hsum1_512(acc) * scale * ks[t];
    }
}

/* Scores for hs > 128: one key at a time, q reloaded from L1 every chunk. */
static void scores_q8_any_avx512(float *s, const float *q, const int8_t *k, const float *ks,
                                 int n_keys, int hs, float scale)
{
    for (int t = 0; t < n_keys; t++) {
        const int8_t *row = k + (size_t)t * hs;
        prefetch_kv_row(row, hs);
        __m512 acc = _mm512_setzero_ps();
        for (int j = 0; j < hs; j += 16) {
            __mmask16 m = mask16_upto(hs - j);
            acc = _mm512_fmadd_ps(q8x16_ps(row + j, m, 0), _mm512_maskz_loadu_ps(m, q + j), acc);
        }
        s[t] = hsum1_512(acc) * scale * ks[t];
    }
}

/* out (len) = Σ_t att[t] * vs[t] * v[t][0..len), v rows hs apart, len <= KV_SLICE:
 * N zmm accumulators (N = ceil(len / 16); FULL: len % 16 == 0), keys in order. */
INLINE void values_q8_avx512(int N, int FULL, float *out, const float *att, const int8_t *v,
                             const float *vs, int n_keys, int hs, int len)
{
    __m512 acc[8];
    __mmask16 m[8];
#pragma GCC unroll 8
    for (int c = 0; c < N; c++) {
        acc[c] = _mm512_setzero_ps();
        m[c] = mask16_upto(len - 16 * c);
    }
    for (int t = 0; t < n_keys; t++) {
        const int8_t *vr = v + (size_t)t * hs;
        prefetch_kv_row(vr, len);
        __m512 w = _mm512_set1_ps(att[t] * vs[t]);
#pragma GCC unroll 8
        for (int c = 0; c < N; c++)
            acc[c] = _mm512_fmadd_ps(w, q8x16_ps(vr + 16 * c, m[c], FULL || c < N - 1), acc[c]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < N; c++)
        _mm512_mask_storeu_ps(out + 16 * c, m[c], acc[c]);
}

static void attention_q8_avx512(float *out, float *att, const float *q, const int8_t *k,
                                const float *ks, const int8_t *v, const float *vs, int n_keys,
                                int hs, float scale)
{
    prefetch_kv_start(k, v, (size_t)n_keys * hs);
    if (hs <= KV_SLICE)
        CHUNK_DISPATCH8(scores_q8_avx512, (hs + 15) / 16, hs % 16 == 0, att, q, k, ks, n_keys,
                        hs, scale);
    else
        scores_q8_any_avx512(att, q, k, ks, n_keys, hs, scale);
    softmax_avx512(att, n_keys);
    for (int j0 = 0; j0 < hs; j0 += KV_SLICE) {
        int len = hs - j0 < KV_SLICE ? hs - j0 : KV_SLICE;
        CHUNK_DISPATCH8(values_q8_avx512, (len + 15) / 16, len % 16 == 0, out + j0, att, v + j0,
                        vs, n_keys, hs, len);
    }
}

static void dequantize_rows_avx512(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    for (int r = 0; r < n_rows; r++) {
        const int8_t *qr = q + (size_t)r * hs;
        float *o = out + (size_t)r * hs;
        __m512 sv = _mm512_set1_ps(s[r]);
        for (int j = 0; j < hs; j += 16) {
            __mmask16 m = mask16_upto(hs - j);
            _mm512_mask_storeu_ps(o + j, m, _mm512_mul_ps(q8x16_ps(qr + j, m, hs - j >= 16), sv));
        }
    }
}

TARGET_END

static bool avx512_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

const kernel_table kernels_x86_avx512 = {
    .isa = KERNELS_AVX512,
    .cpu_supports = avx512_supported,
    .rows_q8 = rows_q8_avx512,
    .gemm_q8 = gemm_q8_avx512,
    .gemm_q8_halves = gemm_q8_halves_avx512,
    .gemm_mins = kernels_avx512_gemm_mins,
    .gemm_pack16 = kernels_avx512_gemm_pack16,
    .matmul_q8p = kernels_avx512_matmul_q8p,
    /* Q4_K from panels (x86-k4-panels.c); the AVX2 row dot reads x in its own order
       and has this table's Q4_K dot's bits */
    .matvec_k4p = kernels_avx512_matvec_k4p,
    .matmul_k4p = kernels_avx512_matmul_k4p,
    .k4p_dot = kernels_avx2_dot_q4_k,
    .matvec_q8b = matvec_q8b_avx512,
    .q8b_to_rows = kernels_x86_q8b_to_rows,
    .dot_blocks =
        {
            [GGML_TYPE_Q4_0] = kernels_avx512_dot_q4_0,
            [GGML_TYPE_Q4_1] = kernels_avx512_dot_q4_1,
            [GGML_TYPE_Q5_0] = kernels_avx512_dot_q5_0,
            [GGML_TYPE_Q5_1] = kernels_avx512_dot_q5_1,
            [GGML_TYPE_Q4_K] = kernels_avx512_dot_q4_k,
            [GGML_TYPE_Q5_K] = kernels_avx512_dot_q5_k,
            [GGML_TYPE_Q6_K] = kernels_avx512_dot_q6_k,
            [GGML_TYPE_MXFP4] = kernels_avx512_dot_mxfp4,
        },
    .blocks_x =
        {
            [GGML_TYPE_Q4_0] = kernels_avx512_x_halves,
            [GGML_TYPE_Q4_1] = kernels_avx512_x_halves,
            [GGML_TYPE_Q5_0] = kernels_avx512_x_halves,
            [GGML_TYPE_Q5_1] = kernels_avx512_x_halves,
            [GGML_TYPE_Q4_K] = kernels_avx512_x_halves,
            [GGML_TYPE_Q5_K] = kernels_avx512_x_halves,
            [GGML_TYPE_MXFP4] = kernels_avx512_x_halves,
        },
    .dot_blocks_multi =
        {
            [GGML_TYPE_Q4_0] = kernels_avx512_dot_q4_0_multi,
            [GGML_TYPE_Q4_1] = kernels_avx512_dot_q4_1_multi,
            [GGML_TYPE_Q5_0] = kernels_avx512_dot_q5_0_multi,
            [GGML_TYPE_Q5_1] = kernels_avx512_dot_q5_1_multi,
            [GGML_TYPE_Q4_K] = kernels_avx512_dot_q4_k_multi,
            [GGML_TYPE_Q5_K] = kernels_avx512_dot_q5_k_multi,
            [GGML_TYPE_Q6_K] = kernels_avx512_dot_q6_k_multi,
            [GGML_TYPE_MXFP4] = kernels_avx512_dot_mxfp4_multi,
        },
    .rows_f32 = rows_f32_avx512,
    .dot_q8 = dot_q8_avx512,
    .quantize_row = quantize_row_avx512,
    .dequantize_rows = dequantize_rows_avx512,
    .unpack_row = kernels_x86_unpack_row,
    .unpack_k4_group = kernels_x86_unpack_k4_group,
    .rows_dot = rows_dot_avx512,
    .rows_axpy = rows_axpy_avx512,
    .softmax = softmax_avx512,
    .swiglu = swiglu_avx512,
    .geglu = geglu_avx512,
    .attention_f32 = attention_avx512,
    .attention_q8 = attention_q8_avx512,
};
