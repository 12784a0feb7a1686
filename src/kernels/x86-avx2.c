/* kernels/x86-avx2.c — the AVX2 + FMA kernel table (x86-64 without AVX-512), see
 * kernels/table.h.
 *
 * AVX2 has no VNNI: the int8 products move each weight's sign onto the activation
 * and multiply |w| (unsigned) by it with maddubs, then sum the pairs into int32
 * (dot_s8_avx2, kernels/x86.h). Batch kernels compute 4 rows x 4 vectors per register
 * block; the one-vector (decode) kernel reads long rows one at a time, one stream per
 * thread (GGUF Q8_0 blocks in place: kernels/x86-avx2-blocks.c). Prefill from 16
 * vectors on is the GEMM of kernels/x86-avx2-gemm.c. The fp32 attention runs one query
 * at a time over these row kernels (kernels.c). */
#include "x86.h"

#include <cpuid.h>

#include <math.h>

/* Calls fn(N, ...) with literal N in 0..16 (8-lane chunks of a row). */
#define CHUNK_DISPATCH16(fn, n, ...)                                       \
    do {                                                                   \
        switch (n) {                                                       \
        case 0: fn(0, __VA_ARGS__); break;                                 \
        case 1: fn(1, __VA_ARGS__); break;                                 \
        case 2: fn(2, __VA_ARGS__); break;                                 \
        case 3: fn(3, __VA_ARGS__); break;                                 \
        case 4: fn(4, __VA_ARGS__); break;                                 \
        case 5: fn(5, __VA_ARGS__); break;                                 \
        case 6: fn(6, __VA_ARGS__); break;                                 \
        case 7: fn(7, __VA_ARGS__); break;                                 \
        case 8: fn(8, __VA_ARGS__); break;                                 \
        case 9: fn(9, __VA_ARGS__); break;                                 \
        case 10: fn(10, __VA_ARGS__); break;                               \
        case 11: fn(11, __VA_ARGS__); break;                               \
        case 12: fn(12, __VA_ARGS__); break;                               \
        case 13: fn(13, __VA_ARGS__); break;                               \
        case 14: fn(14, __VA_ARGS__); break;                               \
        case 15: fn(15, __VA_ARGS__); break;                               \
        default: fn(16, __VA_ARGS__); break;                               \
        }                                                                  \
    } while (0)

TARGET_BEGIN("avx2,fma")

/* Q8_0 block: R rows x N vectors, 32-byte chunks (each inside one group, as
 * group % 32 == 0), signs moved onto x so maddubs sees |w| (no saturation). */
INLINE void q8_block_avx2(int R, int N, float *out, int ldo, const int8_t *w, const float *ws,
                          const int8_t *x, const float *xs, int stride, int group)
{
    __m256 acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = _mm256_setzero_ps();
    int groups = stride / group;
    for (int off = 0, g = 0, k = 0; off < stride; off += 32) {
        __m256i xv[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            xv[v] = _mm256_loadu_si256((const __m256i *)(x + (size_t)v * stride + off));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i wv = _mm256_loadu_si256((const __m256i *)(w + (size_t)r * stride + off));
            if (off % 64 == 0)
                prefetch_weights(w + (size_t)r * stride + off + prefetch_bytes(stride));
            float wsc = ws[r * groups + g];
            #pragma GCC unroll 4
            for (int v = 0; v < N; v++) {
                __m256i p = dot_s8_avx2(wv, xv[v]);
                __m256 sc = _mm256_set1_ps(wsc * xs[v * groups + g]);
                acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc[r][v]);
            }
        }
        if ((k += 32) == group) /* g = off / group, without a division per chunk */
            g++, k = 0;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            out[(size_t)v * ldo + r] = hsum256(acc[r][v]);
}

#define Q8_AVX2_CALL(R, N, out, w, xq, r, v)                                              \
    q8_block_avx2(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                       \
                  w->q + (size_t)(r) * w->stride, w->scale + (size_t)(r) * (w->stride / w->group), \
                  xq->q + (size_t)(v) * xq->stride,                                       \
                  xq->scale + (size_t)(v) * (w->stride / w->group), w->stride, w->group)

/* Rows [r0, r1) of w times vector 0 of xq, one row after the other: q8_block_avx2's
 * R = N = 1 case (the same operations in the same order, so the same bits) without
 * its per-chunk group lookup. */
static void rows_q8_one_avx2(float *out, const tensor *w, const qbatch *xq, int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group;
    const size_t pf = prefetch_bytes(stride);
    const int8_t *x = xq->q;
    const float *xs = xq->scale;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * stride;
        const float *ws = w->scale + (size_t)r * groups;
        __m256 acc = _mm256_setzero_ps();
        for (int g = 0, off = 0; g < groups; g++) {
            __m256 sc = _mm256_set1_ps(ws[g] * xs[g]);
            for (int end = off + group; off < end; off += 32) {
                __m256i wv = _mm256_loadu_si256((const __m256i *)(wr + off));
                if (off % 64 == 0)
                    prefetch_weights(wr + off + pf);
                __m256i p = dot_s8_avx2(wv, _mm256_loadu_si256((const __m256i *)(x + off)));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc);
            }
        }
        out[r] = hsum256(acc);
    }
}

/* Rows of at least this many bytes are read one at a time by the decode kernel:
 * AVX2 does twice the instructions per byte of AVX-512, so short rows are bound by the
 * work per row and long rows by the memory streams, where one stream is faster than
 * four interleaved (docs/performance.md). */
enum { AVX2_ONE_ROW_BYTES = 2048 };

static void rows_q8_avx2(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                         int n, int r0, int r1)
{
    if (n == 1 && w->stride >= AVX2_ONE_ROW_BYTES) {
        rows_q8_one_avx2(out, w, xq, r0, r1);
        return;
    }
#define CALL(r, R, v, N) BLOCK_DISPATCH(Q8_AVX2_CALL, R, N, out, w, xq, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, 0);
#undef CALL
}

static float dot_q8_avx2(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                         int len, int group)
{
    if (group % 32)
        return kernels_scalar_dot_q8(a, as, b, bs, len, group);
    float out;
    q8_block_avx2(1, 1, &out, 1, a, as, b, bs, len, group);
    return out;
}

/* F32 block: R rows x N vectors, 8 floats a step, scalar tail. */
INLINE void f32_block_avx2(int R, int N, float *out, int ldo, const float *w, int wstride,
                           const float *x, int cols)
{
    __m256 acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= cols; k += 8) {
        __m256 xv[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            xv[v] = _mm256_loadu_ps(x + (size_t)v * cols + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 wv = _mm256_loadu_ps(w + (size_t)r * wstride + k);
            if (k % 16 == 0)
                prefetch_weights((const char *)(w + (size_t)r * wstride + k) +
                                 prefetch_bytes(4 * wstride));
            #pragma GCC unroll 4
            for (int v = 0; v < N; v++)
                acc[r][v] = _mm256_fmadd_ps(wv, xv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++) {
            float s = hsum256(acc[r][v]);
            for (int j = k; j < cols; j++)
                s += w[(size_t)r * wstride + j] * x[(size_t)v * cols + j];
            out[(size_t)v * ldo + r] = s;
        }
}

#define F32_AVX2_CALL(R, N, out, w, x, r, v)                                              \
    f32_block_avx2(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                      \
                   w->f + (size_t)(r) * w->stride, w->stride, x + (size_t)(v) * w->cols, w->cols)

static void rows_f32_avx2(float *out, const tensor *w, const float *x, int n, int r0, int r1)
{
#define CALL(r, R, v, N) BLOCK_DISPATCH(F32_AVX2_CALL, R, N, out, w, x, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, 0);
#undef CALL
}

static void rows_dot_avx2(float *out, const float *rows, size_t row_stride, int n_rows,
                          const float *x, int len)
{
    for (int r = 0; r < n_rows; r++) {
        const float *row = rows + (size_t)r * row_stride;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        int j = 0;
        for (; j + 16 <= len; j += 16) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(x + j), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + j + 8), _mm256_loadu_ps(x + j + 8), a1);
        }
        for (; j + 8 <= len; j += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(x + j), a0);
        float sum = hsum256(_mm256_add_ps(a0, a1));
        for (; j < len; j++)
            sum += row[j] * x[j];
        out[r] = sum;
    }
}

static void rows_axpy_avx2(float *out, const float *rows, size_t row_stride, int n_rows,
                           const float *a, int len)
{
    int j = 0;
    for (; j + 32 <= len; j += 32) {
        __m256 o0 = _mm256_loadu_ps(out + j), o1 = _mm256_loadu_ps(out + j + 8);
        __m256 o2 = _mm256_loadu_ps(out + j + 16), o3 = _mm256_loadu_ps(out + j + 24);
        for (int r = 0; r < n_rows; r++) {
            const float *row = rows + (size_t)r * row_stride + j;
            __m256 ar = _mm256_set1_ps(a[r]);
            o0 = _mm256_fmadd_ps(ar, _mm256_loadu_ps(row), o0);
            o1 = _mm256_fmadd_ps(ar, _mm256_loadu_ps(row + 8), o1);
            o2 = _mm256_fmadd_ps(ar, _mm256_loadu_ps(row + 16), o2);
            o3 = _mm256_fmadd_ps(ar, _mm256_loadu_ps(row + 24), o3);
        }
        _mm256_storeu_ps(out + j, o0);
        _mm256_storeu_ps(out + j + 8, o1);
        _mm256_storeu_ps(out + j + 16, o2);
        _mm256_storeu_ps(out + j + 24, o3);
    }
    for (; j + 8 <= len; j += 8) {
        __m256 o = _mm256_loadu_ps(out + j);
        for (int r = 0; r < n_rows; r++)
            o = _mm256_fmadd_ps(_mm256_set1_ps(a[r]),
                                _mm256_loadu_ps(rows + (size_t)r * row_stride + j), o);
        _mm256_storeu_ps(out + j, o);
    }
    if (j < len)
        kernels_scalar_rows_axpy(out + j, rows + j, row_stride, n_rows, a, len - j);
}

/* exp(x) for x <= 88.3 (larger x give exp(88.3), about 2e38: the exponent bits below
 * would overflow); see EXP_*. */
INLINE __m256 exp256(__m256 x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^k through the exponent bits; k >= -126 after the clamp */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* A mask of the first `left` lanes of 8 (all from 8 on), for maskload / maskstore: the
 * last values of a row go through the same lanes' arithmetic as the others, so that a
 * value's bits do not depend on where the threads split the row. */
static inline __m256i first_lanes(int left)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* kernels_scalar_geglu's operations, 8 at a time (the last few masked), with exp256 for
 * expf (which holds its argument at 88.3, where g / (1 + e) is already 0 to float). */
static void geglu_avx2(float *gate, const float *up, int n)
{
    const __m256 one = _mm256_set1_ps(1.0f), c = _mm256_set1_ps(0.79788456080286535588f);
    for (int i = 0; i < n; i += 8) {
        __m256i m = first_lanes(n - i);
        __m256 g = _mm256_maskload_ps(gate + i, m);
        __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
        __m256 u = _mm256_mul_ps(c, _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), g3, g));
        __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
        __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(s, _mm256_maskload_ps(up + i, m)));
    }
}

/* swiglu_scalar's operations, 8 at a time (the last few masked), with exp256 for expf. */
static void swiglu_avx2(float *gate, const float *up, int n)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int i = 0; i < n; i += 8) {
        __m256i m = first_lanes(n - i);
        __m256 g = _mm256_maskload_ps(gate + i, m);
        __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
        __m256 s = _mm256_mul_ps(g, _mm256_div_ps(one, _mm256_add_ps(one, e)));
        _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(s, _mm256_maskload_ps(up + i, m)));
    }
}

void kernels_avx2_softmax(float *x, int n)
{
    int i = 0;
    __m256 vmax = _mm256_set1_ps(x[0]);
    for (; i + 8 <= n; i += 8)
        vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float max = _mm_cvtss_f32(m4);
    for (; i < n; i++)
        if (x[i] > max)
            max = x[i];
    __m256 vm = _mm256_set1_ps(max), vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 xi = _mm256_loadu_ps(x + i);
        /* exp(-inf) is 0, as expf gives it (exp256 stops at exp(-87.3)) */
        __m256 e = _mm256_and_ps(_mm256_cmp_ps(xi, _mm256_set1_ps(-INFINITY), _CMP_NEQ_UQ),
                                 exp256(_mm256_sub_ps(xi, vm)));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum256(vsum);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    __m256 inv = _mm256_set1_ps(1.0f / sum);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++)
        x[i] *= 1.0f / sum;
}

/* 8 int8 at p as fp32 */
INLINE __m256 q8x8_ps(const int8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* The horizontal sums of four vectors, in order. */
INLINE __m128 hsum4_256(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* Dots of q with 4 key rows, 8 values a step, the last hs % 8 in plain C. */
INLINE __m128 dots4_q8_avx2(const float *q, const int8_t *r0, const int8_t *r1,
                            const int8_t *r2, const int8_t *r3, int hs)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int j = 0;
    for (; j + 8 <= hs; j += 8) {
        __m256 qv = _mm256_loadu_ps(q + j);
        a0 = _mm256_fmadd_ps(q8x8_ps(r0 + j), qv, a0);
        a1 = _mm256_fmadd_ps(q8x8_ps(r1 + j), qv, a1);
        a2 = _mm256_fmadd_ps(q8x8_ps(r2 + j), qv, a2);
        a3 = _mm256_fmadd_ps(q8x8_ps(r3 + j), qv, a3);
    }
    __m128 d = hsum4_256(a0, a1, a2, a3);
    if (j < hs) {
        float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (; j < hs; j++) {
            t[0] += q[j] * (float)r0[j];
            t[1] += q[j] * (float)r1[j];
            t[2] += q[j] * (float)r2[j];
            t[3] += q[j] * (float)r3[j];
        }
        d = _mm_add_ps(d, _mm_loadu_ps(t));
    }
    return d;
}

/* Scores of all keys, 4 at a time. The last block, when partial, repeats its first row
 * in the missing places and keeps only its own lanes, so a key's score has the same
 * bits whichever block it ends up in. */
static void scores_q8_avx2(float *s, const float *q, const int8_t *k, const float *ks,
                           int n_keys, int hs, float scale)
{
    const __m128 vscale = _mm_set1_ps(scale);
    int t = 0;
    for (; t + 4 <= n_keys; t += 4) {
        const int8_t *kb = k + (size_t)t * hs;
        prefetch_kv_row(kb, 4 * hs);
        __m128 d = dots4_q8_avx2(q, kb, kb + hs, kb + 2 * (size_t)hs, kb + 3 * (size_t)hs, hs);
        _mm_storeu_ps(s + t, _mm_mul_ps(_mm_mul_ps(d, vscale), _mm_loadu_ps(ks + t)));
    }
    if (t < n_keys) {
        int nk = n_keys - t;
        const int8_t *kb = k + (size_t)t * hs;
        const int8_t *r1 = nk > 1 ? kb + hs : kb, *r2 = nk > 2 ? kb + 2 * (size_t)hs : kb;
        float d[4];
        _mm_storeu_ps(d, dots4_q8_avx2(q, kb, r1, r2, kb, hs));
        for (int r = 0; r < nk; r++)
            s[t + r] = d[r] * scale * ks[t + r];
    }
}

/* out (len) = Σ_t att[t] * vs[t] * v[t][0..len), v rows hs apart: N ymm accumulators
 * for the first 8N values (N = len / 8), plain C for the rest. */
INLINE void values_q8_avx2(int N, float *out, const float *att, const int8_t *v, const float *vs,
                           int n_keys, int hs, int len)
{
    __m256 acc[16];
    float tail[8] = {0};
#pragma GCC unroll 16
    for (int c = 0; c < N; c++)
        acc[c] = _mm256_setzero_ps();
    for (int t = 0; t < n_keys; t++) {
        const int8_t *vr = v + (size_t)t * hs;
        prefetch_kv_row(vr, len);
        float wt = att[t] * vs[t];
        __m256 w = _mm256_set1_ps(wt);
#pragma GCC unroll 16
        for (int c = 0; c < N; c++)
            acc[c] = _mm256_fmadd_ps(w, q8x8_ps(vr + 8 * c), acc[c]);
        for (int j = 8 * N; j < len; j++)
            tail[j - 8 * N] += wt * (float)vr[j];
    }
#pragma GCC unroll 16
    for (int c = 0; c < N; c++)
        _mm256_storeu_ps(out + 8 * c, acc[c]);
    for (int j = 8 * N; j < len; j++)
        out[j] = tail[j - 8 * N];
}

#define VALUES_Q8_AVX2(N, ...) values_q8_avx2(N, __VA_ARGS__)

static void attention_q8_avx2(float *out, float *att, const float *q, const int8_t *k,
                              const float *ks, const int8_t *v, const float *vs, int n_keys,
                              int hs, float scale)
{
    prefetch_kv_start(k, v, (size_t)n_keys * hs);
    scores_q8_avx2(att, q, k, ks, n_keys, hs, scale);
    kernels_avx2_softmax(att, n_keys);
    for (int j0 = 0; j0 < hs; j0 += KV_SLICE) {
        int len = hs - j0 < KV_SLICE ? hs - j0 : KV_SLICE;
        CHUNK_DISPATCH16(VALUES_Q8_AVX2, len / 8, out + j0, att, v + j0, vs, n_keys, hs, len);
    }
}

/* The scalar quantizer's bytes and scales (kernels/scalar.c), 32 values a step: a
 * group's |x| maximum 8 lanes at a time, then x / scale rounded to nearest even
 * (cvtps_epi32, as lrintf) and saturated to int8 by two packs. A group that is cut by
 * n, of a size not a multiple of 32, or that holds a NaN or an infinity goes to the
 * scalar quantizer. */
static void quantize_row_avx2(int8_t *q, float *scale, const float *x, int n, int stride,
                              int group)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int g = 0; g < stride / group; g++) {
        const int lo = g * group;
        __m256 amax = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
        bool whole = group % 32 == 0 && lo + group <= n;
        for (int i = lo; whole && i < lo + group; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v));
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        if (!whole || _mm256_movemask_ps(nan) || isinf(_mm_cvtss_f32(m))) {
            int left = n - lo < group ? n - lo : group;
            kernels_scalar.quantize_row(q + lo, scale + g, x + lo, left > 0 ? left : 0, group,
                                        group);
            continue;
        }
        float s = _mm_cvtss_f32(m) / 127.0f;
        float inv = s > 0.0f ? 1.0f / s : 0.0f;
        scale[g] = s;
        const __m256 vinv = _mm256_set1_ps(inv);
        for (int i = lo; i < lo + group; i += 32) {
            __m256i v[4];
            for (int k = 0; k < 4; k++)
                v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vinv));
            /* 4-byte pieces in the order a0 b0 c0 d0 a1 b1 c1 d1 (per 128-bit lane) */
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
                                           _mm256_packs_epi32(v[2], v[3]));
            _mm256_storeu_si256((__m256i *)(q + i), _mm256_permutevar8x32_epi32(p, order));
        }
    }
}

static void dequantize_rows_avx2(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    for (int r = 0; r < n_rows; r++) {
        const int8_t *qr = q + (size_t)r * hs;
        float *o = out + (size_t)r * hs;
        __m256 sv = _mm256_set1_ps(s[r]);
        int j = 0;
        for (; j + 8 <= hs; j += 8)
            _mm256_storeu_ps(o + j, _mm256_mul_ps(q8x8_ps(qr + j), sv));
        for (; j < hs; j++)
            o[j] = (float)qr[j] * s[r];
    }
}

TARGET_END

/* AVX2 and FMA, and F16C (the block kernels' half scales; every AVX2 CPU has it, but
 * __builtin_cpu_supports cannot name it everywhere: CPUID leaf 1, ECX bit 29). */
static bool avx2_supported(void)
{
    __builtin_cpu_init();
    unsigned a, b, c, d;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

const kernel_table kernels_x86_avx2 = {
    .isa = KERNELS_AVX2,
    .cpu_supports = avx2_supported,
    .rows_q8 = rows_q8_avx2,
    .gemm_q8 = kernels_avx2_gemm_q8, /* prefill */
    .gemm_signed = true,
    .gemm_wide = true, /* as int16 pairs */
    .gemm_q8_small = kernels_avx2_gemm_q8_small, /* prefill of ggml blocks */
    .gemm_q8_nibbles = kernels_avx2_gemm_q8_nibbles, /* of Q4_K and Q4_1 */
    .gemm_q8_halves = kernels_avx2_gemm_q8_halves, /* and of Q6_K's */
    .gemm_mins = kernels_avx2_gemm_mins,
    .matvec_q8b = kernels_avx2_matvec_q8b,
    .matmul_q8b = kernels_avx2_matmul_q8b,
    .q8b_to_rows = kernels_x86_q8b_to_rows,
    .matvec_k4p = kernels_avx2_matvec_k4p,
    .matmul_k4p = kernels_avx2_matmul_k4p, /* decode of Q4_K from panels */
    .k4p_dot = kernels_avx2_dot_q4_k,
    .dot_blocks =
        {
            [GGML_TYPE_Q4_0] = kernels_avx2_dot_q4_0,
            [GGML_TYPE_Q4_1] = kernels_avx2_dot_q4_1,
            [GGML_TYPE_Q5_0] = kernels_avx2_dot_q5_0,
            [GGML_TYPE_Q5_1] = kernels_avx2_dot_q5_1,
            [GGML_TYPE_Q4_K] = kernels_avx2_dot_q4_k,
            [GGML_TYPE_Q5_K] = kernels_avx2_dot_q5_k,
            [GGML_TYPE_Q6_K] = kernels_avx2_dot_q6_k,
            [GGML_TYPE_MXFP4] = kernels_avx2_dot_mxfp4,
        },
    .dot_blocks_multi =
        {
            [GGML_TYPE_Q4_0] = kernels_avx2_dot_q4_0_multi,
            [GGML_TYPE_Q4_1] = kernels_avx2_dot_q4_1_multi,
            [GGML_TYPE_Q5_0] = kernels_avx2_dot_q5_0_multi,
            [GGML_TYPE_Q5_1] = kernels_avx2_dot_q5_1_multi,
            [GGML_TYPE_Q4_K] = kernels_avx2_dot_q4_k_multi,
            [GGML_TYPE_Q5_K] = kernels_avx2_dot_q5_k_multi,
            [GGML_TYPE_Q6_K] = kernels_avx2_dot_q6_k_multi,
            [GGML_TYPE_MXFP4] = kernels_avx2_dot_mxfp4_multi,
        },
    .rows_f32 = rows_f32_avx2,
    .dot_q8 = dot_q8_avx2,
    .quantize_row = quantize_row_avx2,
    .dequantize_rows = dequantize_rows_avx2,
    .unpack_row = kernels_x86_unpack_row,
    .unpack_k4_group = kernels_x86_unpack_k4_group,
    .rows_dot = rows_dot_avx2,
    .rows_axpy = rows_axpy_avx2,
    .softmax = kernels_avx2_softmax,
    .swiglu = swiglu_avx2,
    .geglu = geglu_avx2,
    .attention_f32 = kernels_avx2_attention_f32, /* x86-avx2-attention.c */
    .attention_q8 = attention_q8_avx2,
};
