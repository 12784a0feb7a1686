/* quant.c — Q8_0 quantization and the matrix kernels (see quant.h).
 *
 * Owns the kernel dispatch table and every kernel: the plain-C reference kernels,
 * which always build and which every SIMD kernel is tested against, and on x86-64
 * the AVX2+FMA and AVX-512 (F, BW, VL, VNNI) kernels. The SIMD kernels are compiled
 * with per-function target pragmas, so the program builds with plain -O2 and runs on
 * any x86-64; quant_init picks what the CPU supports (__builtin_cpu_supports).
 *
 * Parallelism: quant_matvec / quant_matmul open their own OpenMP parallel region
 * (callers call them from outside any parallel region) and hand out contiguous
 * ranges of output rows as threads come free (guided: big ones first); a range streams
 * its weights front to back, prefetching a row block ahead (matvec). Within a range
 * the batch kernels block over 4 rows x 4 input vectors: every weight chunk loaded is
 * used for 4 vectors and every activation chunk for 4 rows, and vectors are walked in
 * tiles of 64 that stay in cache while a range's rows are reused across them. The
 * one-vector (decode) kernels read rows one at a time instead, one stream (AVX-512
 * always, AVX2 rows of 2 KiB or more).
 * The fp32 attention helpers are single-threaded: they run inside the caller's region.
 *
 * The int8 KV-cache attention (quant_attention_q8) streams one head's int8 key rows,
 * then its value rows, converting each byte to fp32 on the fly (sign-extend, convert,
 * FMA): exact up to fp32 rounding. From memory it is as fast as a VNNI dot with an
 * int8-quantized query (both within a few percent of a plain read of the cache; VNNI
 * only wins when the cache sits in L2/L3), so the query is not quantized. Keys go 4 at
 * a time, each row prefetched KV_AHEAD bytes ahead, and the start of both streams
 * is prefetched before the first key.
 *
 * The int8 trick (AVX-512 VNNI): vpdpbusd multiplies unsigned by signed bytes, so
 * the weights are offset to unsigned (w + 128, an XOR with 0x80) and the excess
 * 128 * sum(x), computed once per activation chunk with another vpdpbusd, seeds the
 * accumulator with its negation. The int32 dot of each 4-byte lane is then exact;
 * each lane is scaled by its own group's weight and activation scales (a 64-byte
 * chunk spans one group, or two when the group is an odd multiple of 32).
 * AVX2 has no VNNI: it moves the weight signs onto x and uses maddubs on |w|.
 *
 * Does not own tensors; knows nothing of layers or attention layouts. */
#include "quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define QUANT_X86 1
#include <immintrin.h>
/* Compile a section of functions for an instruction set the build does not assume. */
#if defined(__clang__)
#define TARGET_BEGIN(isa) _Pragma(TARGET_STR(clang attribute push(__attribute__((target(isa))), apply_to = function)))
#define TARGET_END _Pragma("clang attribute pop")
#else
#define TARGET_BEGIN(isa) _Pragma("GCC push_options") _Pragma(TARGET_STR(GCC target(isa)))
#define TARGET_END _Pragma("GCC pop_options")
#endif
#define TARGET_STR(x) #x
#else
#define QUANT_X86 0
#endif

/* Computes out[v * rows + r] for r in [r0, r1), v in [0, n). */
typedef void (*rows_q8_fn)(float *out, const tensor *w, const qbatch *xq, int n, int r0, int r1);
typedef void (*rows_f32_fn)(float *out, const tensor *w, const float *x, int n, int r0, int r1);
typedef float (*dot_q8_fn)(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                           int len, int group);
typedef void (*rows_dot_fn)(float *out, const float *rows, size_t row_stride, int n_rows,
                            const float *x, int len);
typedef void (*rows_axpy_fn)(float *out, const float *rows, size_t row_stride, int n_rows,
                             const float *a, int len);
typedef void (*softmax_fn)(float *x, int n);
typedef void (*attention_fn)(float *out, size_t out_stride, float *att, size_t att_stride,
                             const float *q, size_t q_stride, const float *k, const float *v,
                             size_t kv_stride, int n, int pos, int hs, float scale);
typedef void (*quantize_fn)(int8_t *q, float *scale, const float *x, int n, int stride, int group);
typedef void (*attention_q8_fn)(float *out, float *att, const float *q, const int8_t *k,
                                const float *ks, const int8_t *v, const float *vs, int n_keys,
                                int hs, float scale);
typedef void (*dequantize_rows_fn)(float *out, const int8_t *q, const float *s, int n_rows, int hs);

static struct {
    bool ready;
    quant_isa isa;
    rows_q8_fn rows_q8;   /* for groups that are a multiple of 32 */
    rows_f32_fn rows_f32;
    dot_q8_fn dot_q8;
    quantize_fn quantize; /* for groups that are a multiple of 16 */
    rows_dot_fn rows_dot;
    rows_axpy_fn rows_axpy;
    softmax_fn softmax;
    attention_fn attention;
    attention_q8_fn attention_q8;
    dequantize_rows_fn dequantize_rows;
} kern;

enum {
    BLOCK_ROWS = 4,  /* rows per register block */
    BLOCK_VECS = 4,  /* input vectors per register block */
    TILE_VECS = 64,  /* input vectors per cache tile */
};

/* ---------------------------------------------------------------- scalar */

int quant_stride(int cols, int group)
{
    if (group <= 0)
        return cols;
    return (cols + group - 1) / group * group;
}

static void quantize_row_scalar(int8_t *q, float *scale, const float *x, int n, int stride,
                                int group)
{
    for (int g = 0; g < stride / group; g++) {
        int lo = g * group;
        int hi = lo + group < n ? lo + group : n;
        float amax = 0.0f;
        for (int i = lo; i < hi; i++) {
            float a = fabsf(x[i]);
            if (a > amax || a != a) /* a NaN sticks: the scale says the group is bad */
                amax = a;
        }
        float s = amax / 127.0f;
        float inv = s > 0.0f ? 1.0f / s : 0.0f;
        scale[g] = s;
        for (int i = lo; i < lo + group; i++)
            q[i] = i < hi ? (int8_t)lrintf(x[i] * inv) : 0;
    }
}

qbatch *qbatch_new(int n, int len, int group)
{
    if (n <= 0 || len <= 0 || group <= 0)
        return NULL;
    qbatch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->n = n;
    b->len = len;
    b->group = group;
    b->stride = quant_stride(len, group);
    b->q = aligned_alloc(64, ((size_t)n * b->stride + 63) / 64 * 64);
    b->scale = malloc(sizeof(float) * (size_t)n * (b->stride / group));
    if (!b->q || !b->scale) {
        qbatch_free(b);
        return NULL;
    }
    return b;
}

void qbatch_free(qbatch *b)
{
    if (!b)
        return;
    free(b->q);
    free(b->scale);
    free(b);
}

void qbatch_quantize(qbatch *b, const float *x, int n)
{
    int groups = b->stride / b->group;
#pragma omp parallel for schedule(static) if (n > 8)
    for (int i = 0; i < n; i++)
        quant_quantize_row(b->q + (size_t)i * b->stride, b->scale + (size_t)i * groups,
                           x + (size_t)i * b->len, b->len, b->stride, b->group);
}

float quant_dot_q8_ref(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                       int len, int group)
{
    float sum = 0.0f;
    for (int g = 0; g < len / group; g++) {
        int32_t acc = 0;
        for (int i = 0; i < group; i++)
            acc += (int32_t)a[g * group + i] * (int32_t)b[g * group + i];
        sum += (float)acc * as[g] * bs[g];
    }
    return sum;
}

static void rows_q8_scalar(float *out, const tensor *w, const qbatch *xq, int n, int r0, int r1)
{
    int groups = w->stride / w->group;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * w->stride;  /* (stride) */
        const float *ws = w->scale + (size_t)r * groups;  /* (groups) */
        for (int i = 0; i < n; i++)
            out[(size_t)i * w->rows + r] =
                quant_dot_q8_ref(wr, ws, xq->q + (size_t)i * xq->stride,
                                 xq->scale + (size_t)i * groups, w->stride, w->group);
    }
}

static void rows_f32_scalar(float *out, const tensor *w, const float *x, int n, int r0, int r1)
{
    for (int r = r0; r < r1; r++) {
        const float *wr = w->f + (size_t)r * w->stride;
        for (int i = 0; i < n; i++) {
            const float *xi = x + (size_t)i * w->cols;
            float sum = 0.0f;
            for (int k = 0; k < w->cols; k++)
                sum += wr[k] * xi[k];
            out[(size_t)i * w->rows + r] = sum;
        }
    }
}

static void rows_dot_scalar(float *out, const float *rows, size_t row_stride, int n_rows,
                            const float *x, int len)
{
    for (int r = 0; r < n_rows; r++) {
        const float *row = rows + (size_t)r * row_stride;
        float sum = 0.0f;
        for (int j = 0; j < len; j++)
            sum += row[j] * x[j];
        out[r] = sum;
    }
}

static void rows_axpy_scalar(float *out, const float *rows, size_t row_stride, int n_rows,
                             const float *a, int len)
{
    for (int r = 0; r < n_rows; r++) {
        const float *row = rows + (size_t)r * row_stride;
        for (int j = 0; j < len; j++)
            out[j] += a[r] * row[j];
    }
}

static void softmax_scalar(float *x, int n)
{
    float max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max)
            max = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

/* Attention one query at a time through the row helpers of the selected kernel set:
 * the reference (with the scalar helpers) and the AVX2 version. */
static void attention_rows(float *out, size_t out_stride, float *att, size_t att_stride,
                           const float *q, size_t q_stride, const float *k, const float *v,
                           size_t kv_stride, int n, int pos, int hs, float scale)
{
    for (int i = 0; i < n; i++) {
        int keys = pos + i + 1;
        float *a = att + (size_t)i * att_stride;
        float *o = out + (size_t)i * out_stride;
        kern.rows_dot(a, k, kv_stride, keys, q + (size_t)i * q_stride, hs);
        for (int t = 0; t < keys; t++)
            a[t] *= scale;
        kern.softmax(a, keys);
        for (int t = keys; t < pos + n; t++)
            a[t] = 0.0f;
        memset(o, 0, sizeof(float) * hs);
        kern.rows_axpy(o, v, kv_stride, keys, a, hs);
    }
}

/* The int8 KV attention, plain C: each score is (q · k[t]) * scale * ks[t], the dot summed
 * in fp32 in order, the softmax is the scalar one, and out sums the value rows in key order,
 * each weighted by att[t] * vs[t]. */
static void attention_q8_scalar(float *out, float *att, const float *q, const int8_t *k,
                                const float *ks, const int8_t *v, const float *vs, int n_keys,
                                int hs, float scale)
{
    for (int t = 0; t < n_keys; t++) {
        const int8_t *kr = k + (size_t)t * hs;
        float d = 0.0f;
        for (int j = 0; j < hs; j++)
            d += q[j] * (float)kr[j];
        att[t] = d * scale * ks[t];
    }
    softmax_scalar(att, n_keys);
    for (int j = 0; j < hs; j++)
        out[j] = 0.0f;
    for (int t = 0; t < n_keys; t++) {
        const int8_t *vr = v + (size_t)t * hs;
        float w = att[t] * vs[t];
        for (int j = 0; j < hs; j++)
            out[j] += w * (float)vr[j];
    }
}

static void dequantize_rows_scalar(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    for (int r = 0; r < n_rows; r++)
        for (int j = 0; j < hs; j++)
            out[(size_t)r * hs + j] = (float)q[(size_t)r * hs + j] * s[r];
}

/* exp for the SIMD softmax (Cephes expf): x = k ln2 + r, |r| <= ln2 / 2, exp(r) by a
 * degree-7 polynomial, times 2^k. Inputs are <= 0 here (x - max). Below -87.3 it
 * returns exp(-87.3) ~ 1e-38 where expf gives a denormal or 0: invisible once divided
 * by the sum, which is at least 1. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

/* ---------------------------------------------------------------- x86-64 SIMD */
#if QUANT_X86

#define INLINE static inline __attribute__((always_inline))

/* Calls block(R, N, ...) with literal R in {1, BLOCK_ROWS} and N in 1..BLOCK_VECS, so
 * each call site is specialised and its loops over R and N unroll into registers. */
#define BLOCK_DISPATCH(block, R, N, ...)                                   \
    do {                                                                   \
        if ((R) == BLOCK_ROWS) {                                           \
            switch (N) {                                                   \
            case 4: block(4, 4, __VA_ARGS__); break;                       \
            case 3: block(4, 3, __VA_ARGS__); break;                       \
            case 2: block(4, 2, __VA_ARGS__); break;                       \
            default: block(4, 1, __VA_ARGS__); break;                      \
            }                                                              \
        } else {                                                           \
            switch (N) {                                                   \
            case 4: block(1, 4, __VA_ARGS__); break;                       \
            case 3: block(1, 3, __VA_ARGS__); break;                       \
            case 2: block(1, 2, __VA_ARGS__); break;                       \
            default: block(1, 1, __VA_ARGS__); break;                      \
            }                                                              \
        }                                                                  \
    } while (0)

/* Walks rows [r0, r1) x vectors [0, n) in cache tiles of TILE_VECS vectors, row
 * blocks of BLOCK_ROWS (or single rows when `one_row`) and vector blocks of
 * BLOCK_VECS; a leftover row is done one at a time. `call(r, R, v, N)` computes one
 * block. */
#define WALK_BLOCKS(n, r0, r1, call, one_row)                              \
    do {                                                                   \
        for (int vt_ = 0; vt_ < (n); vt_ += TILE_VECS) {                   \
            int ve_ = vt_ + TILE_VECS < (n) ? vt_ + TILE_VECS : (n);       \
            for (int r_ = (r0); r_ < (r1);) {                              \
                int R_ = (r1) - r_ >= BLOCK_ROWS && !(one_row) ? BLOCK_ROWS : 1; \
                for (int v_ = vt_; v_ < ve_; v_ += BLOCK_VECS) {           \
                    int N_ = ve_ - v_ < BLOCK_VECS ? ve_ - v_ : BLOCK_VECS; \
                    call(r_, R_, v_, N_);                                  \
                }                                                          \
                r_ += R_;                                                  \
            }                                                              \
        }                                                                  \
    } while (0)

/* How far ahead a matvec prefetches its weights: the same offset one row block
 * further, and at least 8 KiB. Hardware prefetchers stop at 4 KiB pages; without
 * this a single thread streams mapped weights at about half the memory bandwidth. */
static inline size_t prefetch_bytes(size_t row_bytes)
{
    size_t block = BLOCK_ROWS * row_bytes;
    return block > 8192 ? block : 8192;
}

/* How far ahead attention prefetches a head's key and value rows, and how much of
 * each it prefetches before it starts. At short contexts a head's keys are only a few
 * KiB (100 positions x 64 bytes), less than prefetch_bytes' 8 KiB: with that distance
 * no row was prefetched below about 128 positions, and after a token's pass over the
 * weights the cache comes from memory. Per head of 64 after a 64 MiB sweep, against
 * the 8 KiB distance: 100 keys 1.30 -> 0.87 us (AVX-512), 2.04 -> 1.29 us (AVX2);
 * 30 keys 0.79 -> 0.62 us (AVX2); 400 keys 3.9 -> 3.1 us (AVX2); 2,000 keys the same.
 * Ahead 2 KiB was as good at 100 keys but 10% slower at 2,000; 8 KiB for both the
 * distance and the start was slower at both. */
enum { KV_AHEAD = 4096 };

/* Prefetches the first KV_AHEAD bytes of a head's keys, then of its values (each
 * `bytes` long), so that neither stream starts with a run of misses. */
INLINE void prefetch_kv_start(const int8_t *k, const int8_t *v, size_t bytes)
{
    if (bytes > KV_AHEAD)
        bytes = KV_AHEAD;
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)k + o, _MM_HINT_T0);
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)v + o, _MM_HINT_T0);
}

/* Prefetches the KV row at `row` (len bytes) KV_AHEAD bytes on. Rows are contiguous,
 * so one prefetch per 64 bytes of each row reaches every line of the stream. Forced
 * inline: as a call GCC finds it free of side effects and deletes it. */
INLINE void prefetch_kv_row(const int8_t *row, int len)
{
    for (int o = 0; o < len; o += 64)
        _mm_prefetch((const char *)row + KV_AHEAD + o, _MM_HINT_T0);
}

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

/* Value rows are summed in slices of this many values, each slice's accumulators in
 * registers (8 zmm or 16 ymm); a head of 128 is one slice, so one pass over V. */
enum { KV_SLICE = 128 };

/* ---- AVX2 + FMA ---- */
TARGET_BEGIN("avx2,fma")

INLINE float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

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
    const __m256i ones = _mm256_set1_epi16(1);
    int groups = stride / group;
    for (int off = 0, g = 0, k = 0; off < stride; off += 32) {
        __m256i xv[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            xv[v] = _mm256_loadu_si256((const __m256i *)(x + (size_t)v * stride + off));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i wv = _mm256_loadu_si256((const __m256i *)(w + (size_t)r * stride + off));
            __m256i aw = _mm256_abs_epi8(wv);
            if (N == 1 && off % 64 == 0)
                _mm_prefetch((const char *)(w + (size_t)r * stride + off + prefetch_bytes(stride)),
                             _MM_HINT_T0);
            float wsc = ws[r * groups + g];
            #pragma GCC unroll 4
            for (int v = 0; v < N; v++) {
                __m256i sx = _mm256_sign_epi8(xv[v], wv);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), ones);
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
    const __m256i ones = _mm256_set1_epi16(1);
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
                    _mm_prefetch((const char *)(wr + off + pf), _MM_HINT_T0);
                __m256i sx = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(x + off)), wv);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(wv), sx), ones);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc);
            }
        }
        out[r] = hsum256(acc);
    }
}

/* Rows of at least this many bytes are read one at a time by the AVX2 decode kernel.
 * Paired in-process A/B (AVX2 kernels forced on this machine), one row at a time
 * against blocks of four: 1B +16-25%, 110M +0-6%, 42M 0.91x, 15M 0.82x. AVX2 does
 * twice the instructions per byte of AVX-512, so short rows are bound by the work
 * per row and long rows by the four interleaved streams. */
enum { AVX2_ONE_ROW_BYTES = 2048 };

static void rows_q8_avx2(float *out, const tensor *w, const qbatch *xq, int n, int r0, int r1)
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
        return quant_dot_q8_ref(a, as, b, bs, len, group);
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
            if (N == 1 && k % 16 == 0)
                _mm_prefetch((const char *)(w + (size_t)r * wstride + k) + prefetch_bytes(4 * wstride),
                             _MM_HINT_T0);
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
        rows_axpy_scalar(out + j, rows + j, row_stride, n_rows, a, len - j);
}

INLINE __m256 exp256(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
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

static void softmax_avx2(float *x, int n)
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
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
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
    softmax_avx2(att, n_keys);
    for (int j0 = 0; j0 < hs; j0 += KV_SLICE) {
        int len = hs - j0 < KV_SLICE ? hs - j0 : KV_SLICE;
        CHUNK_DISPATCH16(VALUES_Q8_AVX2, len / 8, out + j0, att, v + j0, vs, n_keys, hs, len);
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

/* ---- AVX-512 F/BW/VL + VNNI ---- */
TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")

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
        /* non-temporal: weights are read once per token; keeping them out of the
         * caches' recently-used places measured 2-6% faster decode on 110M */
        if (N == 1)
            _mm_prefetch((const char *)(w + (size_t)r * stride + off + prefetch_bytes(stride)),
                         _MM_HINT_NTA);
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
        _mm_prefetch((const char *)(w + pf), _MM_HINT_NTA);
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

/* Rows [r0, r1) of w times vector 0 of xq, one row after the other (see
 * rows_q8_avx512 for why); group 32 or a multiple of 64. */
static void rows_q8_one_avx512(float *out, const tensor *w, const qbatch *xq, int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group;
    const size_t pf = prefetch_bytes(stride);
    const int8_t *x = xq->q;
    const float *xs = xq->scale;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * stride;
        const float *ws = w->scale + (size_t)r * groups;
        __m512 acc = _mm512_setzero_ps();
        if (group == 32) {
            int c = 0;
            for (; 64 * c + 64 <= stride; c++)
                acc = decode_chunk_avx512(acc, wr + 64 * c, x + 64 * c, scale_pair(xs + 2 * c),
                                          scale_pair(ws + 2 * c), pf, 0);
            if (64 * c < stride) /* an odd number of groups: the last one alone */
                acc = decode_chunk_avx512(acc, wr + 64 * c, x + 64 * c,
                                          _mm512_set1_ps(xs[2 * c]),
                                          _mm512_set1_ps(ws[2 * c]), pf, 1);
        } else {
            for (int g = 0, off = 0; g < groups; g++) {
                __m512 xsv = _mm512_set1_ps(xs[g]), wsv = _mm512_set1_ps(ws[g]);
                for (int end = off + group; off < end; off += 64)
                    acc = decode_chunk_avx512(acc, wr + off, x + off, xsv, wsv, pf, 0);
            }
        }
        out[r] = hsum1_512(acc);
    }
}

/* The one-vector (decode) kernel reads its rows one at a time, front to back: a
 * single stream per thread. Four rows side by side (the batch kernels' blocks) are
 * four interleaved streams. Paired in-process A/B runs, one row at a time against
 * blocks of four: +12-21% decode on 110M (768-byte rows), +5-15% on 42M, +4-6% on 15M
 * (in L3), and 18-30% on 1B and 7B (measured earlier, with the generic kernel below).
 * A kernel-only loop over the 110M weights read 52 GB/s this way against 43 GB/s in
 * blocks, as fast as a plain read of the same bytes. rows_q8_one_avx512 is the
 * generic kernel's R = N = 1 case without its general group walk (which cost 10-40%
 * on 32-groups); both give the same bits as a batch (see hsum1_512), so a matvec
 * equals vector 0 of a matmul. AVX2 does so only for long rows (AVX2_ONE_ROW_BYTES). */
static void rows_q8_avx512(float *out, const tensor *w, const qbatch *xq, int n, int r0, int r1)
{
    if (n == 1 && (w->group == 32 || w->group % 64 == 0)) {
        rows_q8_one_avx512(out, w, xq, r0, r1);
        return;
    }
#define CALL(r, R, v, N) BLOCK_DISPATCH(Q8_AVX512_CALL, R, N, out, w, xq, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, n == 1);
#undef CALL
}

static float dot_q8_avx512(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                           int len, int group)
{
    if (group % 32)
        return quant_dot_q8_ref(a, as, b, bs, len, group);
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
        __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
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
            if (N == 1)
                _mm_prefetch((const char *)(w + (size_t)r * wstride + k) + prefetch_bytes(4 * wstride),
                             _MM_HINT_T0);
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

/* Attention in blocks of 4 queries: scores with the 4 x 4 fp32 block (4 keys x 4
 * queries), then softmax per query, then out = att · V with 4 queries x 64 values in
 * registers, each value row loaded once per block. */
static void attention_avx512(float *out, size_t out_stride, float *att, size_t att_stride,
                             const float *q, size_t q_stride, const float *k, const float *v,
                             size_t kv_stride, int n, int pos, int hs, float scale)
{
    for (int i0 = 0; i0 < n; i0 += BLOCK_VECS) {
        int nq = n - i0 < BLOCK_VECS ? n - i0 : BLOCK_VECS;
        int keys = pos + i0 + nq; /* the block's last query sees this many */
        float *a0 = att + (size_t)i0 * att_stride;
        const float *q0 = q + (size_t)i0 * q_stride;
        for (int t = 0; t < keys;) {
            int nk = keys - t >= BLOCK_ROWS ? BLOCK_ROWS : 1;
#define ATT_CALL(R, N, t_)                                                                \
    f32_block_avx512(R, N, a0 + (t_), att_stride, k + (size_t)(t_) * kv_stride, kv_stride, q0, \
                     q_stride, hs)
            BLOCK_DISPATCH(ATT_CALL, nk, nq, t);
#undef ATT_CALL
            t += nk;
        }
        for (int i = 0; i < nq; i++) {
            float *a = a0 + (size_t)i * att_stride;
            int ki = pos + i0 + i + 1;
            __m512 vs = _mm512_set1_ps(scale);
            for (int t = 0; t < ki; t += 16) {
                __mmask16 m = ki - t >= 16 ? 0xFFFF : (__mmask16)((1u << (ki - t)) - 1);
                _mm512_mask_storeu_ps(a + t, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + t), vs));
            }
            softmax_avx512(a, ki);
            for (int t = ki; t < pos + n; t++)
                a[t] = 0.0f;
        }
        for (int j = 0; j < hs; j += 64) {
            /* values j..j+63 of the block's queries */
            __mmask16 m[4];
            for (int c = 0; c < 4; c++) {
                int left = hs - j - 16 * c;
                m[c] = left >= 16 ? 0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
            }
            __m512 acc[BLOCK_VECS][4];
            for (int i = 0; i < BLOCK_VECS; i++)
                for (int c = 0; c < 4; c++)
                    acc[i][c] = _mm512_setzero_ps();
            for (int t = 0; t < keys; t++) {
                const float *vr = v + (size_t)t * kv_stride + j;
                __m512 v0 = _mm512_maskz_loadu_ps(m[0], vr);
                __m512 v1 = _mm512_maskz_loadu_ps(m[1], vr + 16);
                __m512 v2 = _mm512_maskz_loadu_ps(m[2], vr + 32);
                __m512 v3 = _mm512_maskz_loadu_ps(m[3], vr + 48);
#pragma GCC unroll 4
                for (int i = 0; i < BLOCK_VECS; i++) {
                    if (i >= nq)
                        break;
                    __m512 w = _mm512_set1_ps(a0[(size_t)i * att_stride + t]);
                    acc[i][0] = _mm512_fmadd_ps(w, v0, acc[i][0]);
                    acc[i][1] = _mm512_fmadd_ps(w, v1, acc[i][1]);
                    acc[i][2] = _mm512_fmadd_ps(w, v2, acc[i][2]);
                    acc[i][3] = _mm512_fmadd_ps(w, v3, acc[i][3]);
                }
            }
            for (int i = 0; i < nq; i++) {
                float *o = out + (size_t)(i0 + i) * out_stride + j;
                for (int c = 0; c < 4; c++)
                    _mm512_mask_storeu_ps(o + 16 * c, m[c], acc[i][c]);
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

INLINE __mmask16 mask16_upto(int n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
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

#endif /* QUANT_X86 */

/* ---------------------------------------------------------------- dispatch */

const char *quant_isa_name(quant_isa isa)
{
    switch (isa) {
    case QUANT_ISA_AUTO: return "auto";
    case QUANT_ISA_SCALAR: return "scalar";
    case QUANT_ISA_AVX2: return "avx2";
    case QUANT_ISA_AVX512_VNNI: return "avx512-vnni";
    default: return "?";
    }
}

bool quant_isa_supported(quant_isa isa)
{
    switch (isa) {
    case QUANT_ISA_AUTO:
    case QUANT_ISA_SCALAR:
        return true;
#if QUANT_X86
    case QUANT_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case QUANT_ISA_AVX512_VNNI:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    default:
        return false;
    }
}

quant_isa quant_init(quant_isa wanted)
{
    quant_isa isa = QUANT_ISA_SCALAR;
    if (wanted != QUANT_ISA_AUTO && wanted < QUANT_ISA_COUNT && quant_isa_supported(wanted))
        isa = wanted;
    else if (quant_isa_supported(QUANT_ISA_AVX512_VNNI))
        isa = QUANT_ISA_AVX512_VNNI;
    else if (quant_isa_supported(QUANT_ISA_AVX2))
        isa = QUANT_ISA_AVX2;

    kern.isa = isa;
    kern.rows_q8 = rows_q8_scalar;
    kern.rows_f32 = rows_f32_scalar;
    kern.dot_q8 = quant_dot_q8_ref;
    kern.quantize = quantize_row_scalar;
    kern.rows_dot = rows_dot_scalar;
    kern.rows_axpy = rows_axpy_scalar;
    kern.softmax = softmax_scalar;
    kern.attention = attention_rows;
    kern.attention_q8 = attention_q8_scalar;
    kern.dequantize_rows = dequantize_rows_scalar;
#if QUANT_X86
    if (isa == QUANT_ISA_AVX2) {
        kern.rows_q8 = rows_q8_avx2;
        kern.rows_f32 = rows_f32_avx2;
        kern.dot_q8 = dot_q8_avx2;
        kern.rows_dot = rows_dot_avx2;
        kern.rows_axpy = rows_axpy_avx2;
        kern.softmax = softmax_avx2;
        kern.attention_q8 = attention_q8_avx2;
        kern.dequantize_rows = dequantize_rows_avx2;
    } else if (isa == QUANT_ISA_AVX512_VNNI) {
        kern.rows_q8 = rows_q8_avx512;
        kern.rows_f32 = rows_f32_avx512;
        kern.dot_q8 = dot_q8_avx512;
        kern.quantize = quantize_row_avx512;
        kern.rows_dot = rows_dot_avx512;
        kern.rows_axpy = rows_axpy_avx512;
        kern.softmax = softmax_avx512;
        kern.attention = attention_avx512;
        kern.attention_q8 = attention_q8_avx512;
        kern.dequantize_rows = dequantize_rows_avx512;
    }
#endif
    __atomic_store_n(&kern.ready, true, __ATOMIC_RELEASE);
    return isa;
}

/* First use without quant_init picks the best kernels; safe inside parallel regions
 * (the attention helpers may be the first call a thread makes). */
static void ensure_init(void)
{
    if (__atomic_load_n(&kern.ready, __ATOMIC_ACQUIRE))
        return;
#pragma omp critical(quant_init)
    if (!__atomic_load_n(&kern.ready, __ATOMIC_ACQUIRE))
        quant_init(QUANT_ISA_AUTO);
}

void quant_quantize_row(int8_t *q, float *scale, const float *x, int n, int stride, int group)
{
    ensure_init();
    if (group % 16 == 0)
        kern.quantize(q, scale, x, n, stride, group);
    else
        quantize_row_scalar(q, scale, x, n, stride, group);
}

void quant_rows_dot_f32(float *out, const float *rows, size_t row_stride, int n_rows,
                        const float *x, int len)
{
    ensure_init();
    kern.rows_dot(out, rows, row_stride, n_rows, x, len);
}

void quant_rows_axpy_f32(float *out, const float *rows, size_t row_stride, int n_rows,
                         const float *a, int len)
{
    ensure_init();
    kern.rows_axpy(out, rows, row_stride, n_rows, a, len);
}

void quant_softmax_f32(float *x, int n)
{
    ensure_init();
    kern.softmax(x, n);
}

void quant_attention_f32(float *out, size_t out_stride, float *att, size_t att_stride,
                         const float *q, size_t q_stride, const float *k, const float *v,
                         size_t kv_stride, int n, int pos, int hs, float scale)
{
    ensure_init();
    kern.attention(out, out_stride, att, att_stride, q, q_stride, k, v, kv_stride, n, pos, hs,
                   scale);
}

void quant_attention_q8(float *out, float *att, const float *q, const int8_t *k, const float *ks,
                        const int8_t *v, const float *vs, int n_keys, int hs, float scale)
{
    ensure_init();
    kern.attention_q8(out, att, q, k, ks, v, vs, n_keys, hs, scale);
}

void quant_dequantize_q8_rows(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    ensure_init();
    kern.dequantize_rows(out, q, s, n_rows, hs);
}

float quant_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                   int len, int group)
{
    ensure_init();
    return kern.dot_q8(a, as, b, bs, len, group);
}

void quant_matvec(float *out, const tensor *w, const float *x, const qbatch *xq)
{
    quant_matmul(out, w, x, xq, 1);
}

/* Below this many multiply-adds a matmul runs on the calling thread. */
enum { PARALLEL_MIN_WORK = 1 << 16, ROW_RANGES_PER_THREAD = 16, MIN_RANGE_ROWS = 16 };

void quant_matmul_rows(float *out, const tensor *w, const float *x, const qbatch *xq, int n,
                       int r0, int r1)
{
    ensure_init();
    if (w->type == TENSOR_F32)
        kern.rows_f32(out, w, x, n, r0, r1);
    else if (w->group % 32 == 0)
        kern.rows_q8(out, w, xq, n, r0, r1);
    else
        rows_q8_scalar(out, w, xq, n, r0, r1);
}

int quant_row_block(void)
{
    return BLOCK_ROWS;
}

void quant_matmul(float *out, const tensor *w, const float *x, const qbatch *xq, int n)
{
    ensure_init();
    if (n <= 0 || w->rows <= 0)
        return;
    int rows = w->rows;
    long long work = (long long)rows * w->stride * n;
    (void)work; /* unused without OpenMP */

#pragma omp parallel if (work >= PARALLEL_MIN_WORK)
    {
        int nt = 1;
#ifdef _OPENMP
        nt = omp_get_num_threads();
#endif
        /* Row ranges handed out as threads come free, big ones first (guided): a
         * thread slowed by another process on its core takes fewer, and the last
         * ones are small so nobody waits long at the end. Each range is contiguous,
         * a multiple of the row block, and streams front to back. */
        int per = rows / (nt * ROW_RANGES_PER_THREAD);
        per = (per + BLOCK_ROWS - 1) / BLOCK_ROWS * BLOCK_ROWS;
        if (per < MIN_RANGE_ROWS)
            per = MIN_RANGE_ROWS;
        int ranges = (rows + per - 1) / per;
#pragma omp for schedule(guided, 1)
        for (int i = 0; i < ranges; i++) {
            int r0 = i * per;
            quant_matmul_rows(out, w, x, xq, n, r0, r0 + per < rows ? r0 + per : rows);
        }
    }
}

void quant_dequantize_row(float *out, const tensor *w, int row)
{
    if (w->type == TENSOR_F32) {
        memcpy(out, w->f + (size_t)row * w->stride, sizeof(float) * w->cols);
        return;
    }
    const int8_t *q = w->q + (size_t)row * w->stride;
    const float *s = w->scale + (size_t)row * (w->stride / w->group);
    for (int i = 0; i < w->cols; i++)
        out[i] = q[i] * s[i / w->group];
}
