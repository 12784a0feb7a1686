/* kernels/x86-avx512-panels.c — the AVX-512 VNNI product of a GGUF Q8_0 tensor read
 * from its panels (kernels/panels.h): the decode kernel of the AVX-512 and AMX tables
 * (matmul_q8p), and their product of a few vectors.
 *
 * One panel is 16 rows, one zmm lane each. Per block of 32 values, 8 vpdpbusd add
 * (w + 128) · x over 4 values of all 16 rows at once, x's 4 bytes broadcast from
 * memory (two chains of 4, so two multiply-adds are in flight); 128 Σ x of the block
 * (the same for every row, computed once a call) is taken away, leaving each row's
 * exact Σ w x. Then the block's float step for 16 rows, that of the scalar GEMM
 * (scalar.c, gemm_q8_scalar): acc = fma(float(sum), xs · ws, acc), blocks in order. So
 * a row gets the bits of the prefill GEMM, whatever the panel, the batch or the split
 * of rows between threads. One vector reads four whole panels side by side (four
 * streams, x's pieces broadcast once for the four), the rest of the range a panel at
 * a time (a panel the range cuts with its rows masked). Up to four vectors share a
 * panel's loads; more are taken four at a time while the panel is still in cache.
 * Each panel is one stream of 16 x cols bytes, prefetched ahead (prefetch_weights). */
#include "x86.h"

#include "panels.h"

#include <stdlib.h>

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

/* Vectors a pass over a panel multiplies at once. */
enum { PANEL_VECS = 4 };

/* Panels a one-vector product reads side by side: four streams a thread keep more of
 * the memory's lines in flight than one (docs/performance.md, "Decode panels"). */
enum { PANEL_STREAMS = 4 };

/* How far ahead of its loads a panel's stream is prefetched: one stream a thread
 * needs less than the row kernels' several; a whole panel ahead (32 KiB at 2,048
 * columns) was slower (docs/performance.md, "Decode panels"). */
enum { PANEL_AHEAD = 4096 };

/* 4 bytes of x, as one int32 to broadcast. */
INLINE int32_t x_piece(const int8_t *x)
{
    int32_t v;
    memcpy(&v, x, 4);
    return v;
}

/* N vectors (x[j], their scales xs[j], 128 Σ x of each block in c128[j]) times the
 * panel: out[j * ldo + i] for the panel's rows i that `keep` selects. */
INLINE void panel_vectors(int N, float *out, size_t ldo, const uint8_t *panel, size_t blocks,
                          const int8_t *const x[PANEL_VECS], const float *const xs[PANEL_VECS],
                          const int32_t *const c128[PANEL_VECS], __mmask16 keep, size_t pf)
{
    const uint16_t *scales = (const uint16_t *)panel;
    const uint8_t *values = panel + panel_scale_bytes(blocks);
    __m512 acc[PANEL_VECS];
#pragma GCC unroll 4
    for (int j = 0; j < N; j++)
        acc[j] = _mm512_setzero_ps();
    for (size_t b = 0; b < blocks; b++) {
        const uint8_t *v = values + b * PANEL_BLOCK_VALUES;
        __m512i s0[PANEL_VECS], s1[PANEL_VECS];
#pragma GCC unroll 4
        for (int j = 0; j < N; j++) {
            s0[j] = _mm512_set1_epi32(-c128[j][b]);
            s1[j] = _mm512_setzero_si512();
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k += 2) {
            prefetch_weights(v + pf + 64 * k);
            prefetch_weights(v + pf + 64 * k + 64);
            __m512i w0 = _mm512_load_si512(v + 64 * k), w1 = _mm512_load_si512(v + 64 * k + 64);
#pragma GCC unroll 4
            for (int j = 0; j < N; j++) {
                const int8_t *xb = x[j] + 32 * b + 4 * k;
                s0[j] = _mm512_dpbusd_epi32(s0[j], w0, _mm512_set1_epi32(x_piece(xb)));
                s1[j] = _mm512_dpbusd_epi32(s1[j], w1, _mm512_set1_epi32(x_piece(xb + 4)));
            }
        }
        __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + PANEL_ROWS * b)));
#pragma GCC unroll 4
        for (int j = 0; j < N; j++) {
            __m512 sum = _mm512_cvtepi32_ps(_mm512_add_epi32(s0[j], s1[j]));
            acc[j] = _mm512_fmadd_ps(sum, _mm512_mul_ps(_mm512_set1_ps(xs[j][b]), ws), acc[j]);
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < N; j++)
        _mm512_mask_storeu_ps(out + (size_t)j * ldo, keep, acc[j]);
}

/* One vector times PANEL_STREAMS consecutive panels (from panel p0, `bytes` apart) side
 * by side, x's pieces broadcast once for all. Each panel's operations are those of
 * panel_vectors, in the same order. */
static void panel_streams(float *out, const uint8_t *p0, size_t bytes, size_t blocks,
                          const int8_t *x, const float *xs, const int32_t *c128, size_t pf)
{
    enum { P = PANEL_STREAMS };
    const size_t sb = panel_scale_bytes(blocks);
    __m512 acc[PANEL_STREAMS];
#pragma GCC unroll 4
    for (int q = 0; q < P; q++)
        acc[q] = _mm512_setzero_ps();
    for (size_t b = 0; b < blocks; b++) {
        __m512i s0[PANEL_STREAMS], s1[PANEL_STREAMS];
#pragma GCC unroll 4
        for (int q = 0; q < P; q++) {
            s0[q] = _mm512_set1_epi32(-c128[b]);
            s1[q] = _mm512_setzero_si512();
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k += 2) {
            __m512i x0 = _mm512_set1_epi32(x_piece(x + 32 * b + 4 * k));
            __m512i x1 = _mm512_set1_epi32(x_piece(x + 32 * b + 4 * k + 4));
#pragma GCC unroll 4
            for (int q = 0; q < P; q++) {
                const uint8_t *v = p0 + (size_t)q * bytes + sb + b * PANEL_BLOCK_VALUES + 64 * k;
                prefetch_weights(v + pf);
                prefetch_weights(v + pf + 64);
                s0[q] = _mm512_dpbusd_epi32(s0[q], _mm512_load_si512(v), x0);
                s1[q] = _mm512_dpbusd_epi32(s1[q], _mm512_load_si512(v + 64), x1);
            }
        }
        __m512 xsv = _mm512_set1_ps(xs[b]);
#pragma GCC unroll 4
        for (int q = 0; q < P; q++) {
            const uint16_t *sc = (const uint16_t *)(p0 + (size_t)q * bytes) + PANEL_ROWS * b;
            __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sc));
            acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0[q], s1[q])),
                                     _mm512_mul_ps(xsv, ws), acc[q]);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < P; q++)
        _mm512_storeu_ps(out + PANEL_ROWS * q, acc[q]);
}

/* 128 Σ x over each block of the first n vectors of xq, into the PANEL_SUMS slot of
 * `scratch` ((n, blocks)); NULL when out of memory (counted there). */
static int32_t *block_sums(kernels_scratch *scratch, const qbatch *xq, int n, size_t blocks)
{
    int32_t *buf = kernels_scratch_get(scratch, SCRATCH_PANEL_SUMS,
                                       sizeof(int32_t) * (size_t)n * blocks);
    if (!buf)
        return NULL;
    const __m256i ones = _mm256_set1_epi8(1);
    for (int j = 0; j < n; j++) {
        const int8_t *x = xq->q + (size_t)j * xq->stride;
        for (size_t b = 0; b < blocks; b++) {
            /* Σ of 32 int8 as 8 int32 (vpdpbusd of ones and x), then across */
            __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones,
                                            _mm256_loadu_si256((const __m256i *)(x + 32 * b)));
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
            buf[(size_t)j * blocks + b] = 128 * _mm_cvtsi128_si32(h);
        }
    }
    return buf;
}

/* out[v * w->rows + r] = row r of w · vector v of xq, v < n, r in [r0, r1), from w's
 * panels. A range that does not start or end on a panel computes the panels it touches
 * and stores its rows alone. */
void kernels_avx512_matmul_q8p(kernels_scratch *s, float *out, const tensor *w,
                               const qbatch *xq, int n, int r0, int r1)
{
    const size_t blocks = (size_t)w->cols / QUANT_BLOCK;
    const size_t bytes = panel_bytes(blocks);
    const size_t pf = PANEL_AHEAD;
    const int32_t *sums = block_sums(s, xq, n, blocks);
    if (!sums)
        return;
    for (int p = r0 / PANEL_ROWS; p * PANEL_ROWS < r1;) {
        /* one vector: PANEL_STREAMS whole panels of the range side by side */
        if (n == 1 && p * PANEL_ROWS >= r0 && (p + PANEL_STREAMS) * PANEL_ROWS <= r1) {
            panel_streams(out + (size_t)p * PANEL_ROWS, w->panels + (size_t)p * bytes, bytes,
                          blocks, xq->q, xq->scale, sums, pf);
            p += PANEL_STREAMS;
            continue;
        }
        const uint8_t *panel = w->panels + (size_t)p * bytes;
        int lo = r0 - p * PANEL_ROWS, hi = r1 - p * PANEL_ROWS;
        __mmask16 keep = (__mmask16)((hi >= 16 ? 0xFFFFu : (1u << hi) - 1) &
                                     (lo <= 0 ? 0xFFFFu : ~((1u << lo) - 1)));
        for (int v0 = 0; v0 < n; v0 += PANEL_VECS) {
            int nv = n - v0 < PANEL_VECS ? n - v0 : PANEL_VECS;
            const int8_t *x[PANEL_VECS];
            const float *xs[PANEL_VECS];
            const int32_t *c128[PANEL_VECS];
            for (int j = 0; j < nv; j++) {
                x[j] = xq->q + (size_t)(v0 + j) * xq->stride;
                xs[j] = xq->scale + (size_t)(v0 + j) * (xq->stride / xq->group);
                c128[j] = sums + (size_t)(v0 + j) * blocks;
            }
            float *o = out + (size_t)v0 * w->rows + (size_t)p * PANEL_ROWS;
            switch (nv) {
            case 1: panel_vectors(1, o, w->rows, panel, blocks, x, xs, c128, keep, pf); break;
            case 2: panel_vectors(2, o, w->rows, panel, blocks, x, xs, c128, keep, pf); break;
            case 3: panel_vectors(3, o, w->rows, panel, blocks, x, xs, c128, keep, pf); break;
            default: panel_vectors(4, o, w->rows, panel, blocks, x, xs, c128, keep, pf); break;
            }
        }
        p++;
    }
}

TARGET_END
