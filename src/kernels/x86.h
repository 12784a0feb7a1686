/* kernels/x86.h — what the x86-64 kernel files share: the attention's prefetch
 * distances and prefetches (compiling a file for an instruction set the build does not
 * assume, the block walks and the exp constants are every SIMD file's: kernels/simd.h).
 * Included by src/kernels/x86-*.c only.
 *
 * A file compiled with TARGET_BEGIN runs only after kernels_init has checked the CPU
 * (its table's cpu_supports), so the program itself builds with plain -O2 and runs on
 * any x86-64. */
#ifndef LLMCHAT_KERNELS_X86_H
#define LLMCHAT_KERNELS_X86_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "simd.h"
#include "table.h"

/* How far ahead attention prefetches a head's key and value rows, and how much of
 * each it prefetches before it starts: at short contexts a head's keys are only a
 * few KiB, and after a token's pass over the weights they come from memory. */
enum { KV_AHEAD = 4096 };

/* Value rows are summed in slices of this many values, each slice's accumulators in
 * registers (8 zmm or 16 ymm); a head of 128 is one slice, so one pass over V. */
enum { KV_SLICE = 128 };

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

/* Σ of the 8 floats of v. Compiled for AVX2, so that the code of every x86 table
 * (whose targets all include AVX2) can inline it. */
static inline __attribute__((always_inline, target("avx2,fma"))) float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 4 bytes at p (a row's piece, x's 4 values, a pair of int16), broadcast to every
 * 32-bit lane. Compiled for AVX2, as hsum256. */
static inline __attribute__((always_inline, target("avx2"))) __m256i broadcast4_256(
    const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* 8 int32 sums of 4 products w · x of signed bytes, the AVX2 way (no VNNI): w's signs
 * moved onto x, then maddubs of |w| (unsigned) by it and madd with ones. Exact while
 * |x| <= 127, which the quantizer keeps: |w| · |x| pairs fit int16. */
static inline __attribute__((always_inline, target("avx2"))) __m256i dot_s8_avx2(__m256i w,
                                                                                  __m256i x)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)),
                             _mm256_set1_epi16(1));
}

/* A Q4_K / Q5_K super-block's 12 bytes of 6-bit scales and mins at s (followed by at
 * least 4 readable bytes) as 16 bytes: scales 0-7, then mins 0-7 (simd.h:
 * k4_scales_mins's bytes, in registers). Scale j < 4 is s[j] & 63 and min j < 4 is
 * s[j + 4] & 63; for j >= 4 the low 4 bits are s[j + 4]'s low (scale) or high (min)
 * nibble and the top 2 bits those of s[j - 4] (scale) or s[j] (min). */
static inline __attribute__((always_inline, target("ssse3"))) __m128i k4_scales_mins_x86(
    const uint8_t *s)
{
    const __m128i raw = _mm_loadu_si128((const __m128i *)s);
    /* the bytes holding each output's low bits, and its top 2 bits */
    const __m128i a = _mm_shuffle_epi8(raw, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7,
                                                          8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(raw, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1,
                                                          -1, 4, 5, 6, 7));
    const __m128i low6 = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
    const __m128i high4 = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
    const __m128i top2 = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
    return _mm_or_si128(_mm_or_si128(_mm_and_si128(a, low6),
                                     _mm_and_si128(_mm_srli_epi16(a, 4), high4)),
                        _mm_and_si128(_mm_srli_epi16(b, 2), top2));
}

/* The little-endian half-precision float at p, and the two at p in lanes 0 and 1 (a
 * block's d and its min or dmin), by F16C: compiled for F16C, which both x86 tables
 * require. */
static inline __attribute__((always_inline, target("f16c"))) float half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline __attribute__((always_inline, target("f16c"))) __m128 two_halves(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)v));
}

/* A block type's one-vector and several-vector row dots, kernels_<isa>_dot_<name> and
 * kernels_<isa>_dot_<name>_multi (blocks_dot_fn, blocks_dot_multi_fn), both made by the
 * includer's several-vector dot `multi` (the one-vector dot is n = 1, so that a vector
 * gets the same bits alone or among others), the type's own arguments, if any, after
 * its own. */
#define X86_BLOCK_DOTS(isa, name, multi, ...)                                                    \
    float kernels_##isa##_dot_##name(const uint8_t *row, const int8_t *x, const float *xs,       \
                                     const float *xsum, int cols)                                \
    {                                                                                            \
        float r;                                                                                 \
        multi(row, x, 0, xs, 0, xsum, 0, cols, 1, &r, 0, ##__VA_ARGS__);                         \
        return r;                                                                                \
    }                                                                                            \
    void kernels_##isa##_dot_##name##_multi(const uint8_t *row, const int8_t *x,                 \
                                            size_t x_stride, const float *xs, size_t xs_stride,  \
                                            const float *xsum, size_t xsum_stride, int cols,     \
                                            int n, float *out, size_t out_stride)                \
    {                                                                                            \
        multi(row, x, x_stride, xs, xs_stride, xsum, xsum_stride, cols, n, out, out_stride,      \
              ##__VA_ARGS__);                                                                    \
    }

/* The four little-endian 32-bit words at p, p + stride, p + 2 stride, p + 3 stride, in
 * one register: moved in through general registers, so that no 16-byte load has to be
 * served from four 4-byte stores (a store-forwarding stall the compiler's own
 * _mm_setr_epi32 of memcpy'd words can make). */
static inline __attribute__((always_inline, target("sse4.1"))) __m128i four_words(
    const uint8_t *p, size_t stride)
{
    uint32_t w[4];
    for (int k = 0; k < 4; k++)
        memcpy(&w[k], p + (size_t)k * stride, 4);
    __m128i v = _mm_cvtsi32_si128((int)w[0]);
    v = _mm_insert_epi32(v, (int)w[1], 1);
    v = _mm_insert_epi32(v, (int)w[2], 2);
    return _mm_insert_epi32(v, (int)w[3], 3);
}

/* Rows become columns: m[r] lane v becomes m[v] lane r (16 x 16 32-bit values in
 * registers). Compiled for AVX-512F, so that the AVX-512 tables' code can inline it. */
static inline __attribute__((always_inline, target("avx512f"))) void transpose16(__m512 m[16])
{
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(m[2 * i], m[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(m[2 * i], m[2 * i + 1]);
    }
    /* m[4i + j], in each 128-bit lane L: rows 4i..4i+3 of column 4L + j */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        m[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        m[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        m[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        m[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    /* t[j]: rows 0-3 and 4-7 of columns j, 8 + j; t[4 + j]: of 4 + j, 12 + j; t[8..15]
     * the same for rows 8-15 */
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            t[8 * h + j] = _mm512_shuffle_f32x4(m[8 * h + j], m[8 * h + 4 + j], 0x88);
            t[8 * h + 4 + j] = _mm512_shuffle_f32x4(m[8 * h + j], m[8 * h + 4 + j], 0xDD);
        }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        m[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        m[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
        m[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        m[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
    }
}

/* 16 rows of `groups` floats each (a row after another) laid out group by group:
 * dst[g * 16 + i] = src[i * groups + g] for i < nr, 0 for the rows past them; 16 x 16
 * at a time through transpose16. The AMX GEMM's row scales, the mins' kernel's mins. */
static inline __attribute__((always_inline, target("avx512f"))) void by_group16(
    float *dst, const float *src, int groups, int nr)
{
    for (int g = 0; g < groups; g += 16) {
        const int cols = groups - g < 16 ? groups - g : 16;
        const __mmask16 m = cols == 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
        __m512 t[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            t[i] = i < nr ? _mm512_maskz_loadu_ps(m, src + (size_t)i * groups + g)
                          : _mm512_setzero_ps();
        transpose16(t);
        for (int j = 0; j < cols; j++)
            _mm512_storeu_ps(dst + 16 * (size_t)(g + j), t[j]);
    }
}

/* q8b_to_rows of both x86 tables (kernels/x86-avx2-blocks.c): 32-byte moves and F16C. */
void kernels_x86_q8b_to_rows(int8_t *q, float *scale, const tensor *w, int r0, int n);

/* The AVX2 table's matvec_q8b (kernels/x86-avx2-blocks.c): Q8_0_BLOCKS rows in place. */
void kernels_avx2_matvec_q8b(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                             int r0, int r1);
/* ... and its matmul_q8b: the same for up to BLOCKS_MULTI_MAX vectors at once. */
void kernels_avx2_matmul_q8b(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                             int n, int r0, int r1);

/* The x86 tables' matvec_k4p and matmul_k4p (kernels/x86-k4-panels.c): Q4_K rows from
 * panels, with the bits of the x86 Q4_K row dots (kernels_avx2_dot_q4_k, and the AVX-512
 * one, which has the same): by vpmaddubsw for the AVX2 table, by vpdpbusd for the
 * AVX-512 ones (EVEX) and the AVX-VNNI one (VEX). */
void kernels_avx2_matvec_k4p(float *out, const tensor *w, const int8_t *x, const float *xs,
                             const float *xsum, int r0, int r1);
void kernels_avx512_matvec_k4p(float *out, const tensor *w, const int8_t *x, const float *xs,
                               const float *xsum, int r0, int r1);
void kernels_avx2_matmul_k4p(float *out, size_t ldo, const tensor *w, const int8_t *x,
                             size_t x_stride, const float *xs, size_t xs_stride,
                             const float *xsum, size_t xsum_stride, int n, int r0, int r1);
void kernels_avx512_matmul_k4p(float *out, size_t ldo, const tensor *w, const int8_t *x,
                               size_t x_stride, const float *xs, size_t xs_stride,
                               const float *xsum, size_t xsum_stride, int n, int r0, int r1);
/* The same by the VEX vpdpbusd, for the AVX-VNNI table (built where configure defines
 * HAVE_KERNELS_AVX_VNNI). */
void kernels_avx_vnni_matvec_k4p(float *out, const tensor *w, const int8_t *x, const float *xs,
                                 const float *xsum, int r0, int r1);
void kernels_avx_vnni_matmul_k4p(float *out, size_t ldo, const tensor *w, const int8_t *x,
                                 size_t x_stride, const float *xs, size_t xs_stride,
                                 const float *xsum, size_t xsum_stride, int n, int r0, int r1);

/* The AVX2 table's gemm_q8 (kernels/x86-avx2-gemm.c), on packs of signed x. */
void kernels_avx2_gemm_q8(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                          int r0, int r1);

/* Its gemm_q8_small and gemm_q8_halves (the same file), on packs of unsigned x; its
 * gemm_q8_nibbles, on packs of signed x bytes; and its gemm_mins. */
void kernels_avx2_gemm_q8_small(kernels_scratch *s, float *out, const tensor *w,
                                const gemm_pack *xp, int r0, int r1);
void kernels_avx2_gemm_q8_halves(kernels_scratch *s, float *out, const tensor *w,
                                 const gemm_pack *xp, int r0, int r1);
void kernels_avx2_gemm_q8_nibbles(kernels_scratch *s, float *out, const tensor *w,
                                  const gemm_pack *xp, int r0, int r1);
void kernels_avx2_gemm_mins(kernels_scratch *s, float *out, size_t ldo, const float *min,
                            int groups, const float *xsum, int n, int nr);

/* The AVX2 table's softmax (kernels/x86-avx2.c) and its batched attention_f32
 * (kernels/x86-avx2-attention.c). */
void kernels_avx2_softmax(float *x, int n);
void kernels_avx2_attention_f32(kernels_scratch *s, float *out, size_t out_stride, float *att,
                                size_t att_stride, const float *q, size_t q_stride,
                                const float *k, const float *v, size_t kv_stride, int n, int pos,
                                int hs, float scale);

/* The block-type row dots of kernels/x86-avx2-blocks.c and x86-avx512-blocks.c
 * (blocks_dot_fn). */
float kernels_avx2_dot_q4_0(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q4_1(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q5_0(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q5_1(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q5_k(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q4_k(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
float kernels_avx2_dot_q6_k(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols);
/* The same dots for several vectors at once (blocks_dot_multi_fn). */
void kernels_avx2_dot_q4_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out, size_t out_stride);
void kernels_avx2_dot_q5_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out, size_t out_stride);
void kernels_avx2_dot_q6_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out, size_t out_stride);
float kernels_avx2_dot_mxfp4(const uint8_t *row, const int8_t *x, const float *xs,
                             const float *xsum, int cols);
/* ... and of the 32-value types (blocks_dot_multi_fn). */
void kernels_avx2_dot_q4_0_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out,
                                 size_t out_stride);
void kernels_avx2_dot_q4_1_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out,
                                 size_t out_stride);
void kernels_avx2_dot_q5_0_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out,
                                 size_t out_stride);
void kernels_avx2_dot_q5_1_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out,
                                 size_t out_stride);
void kernels_avx2_dot_mxfp4_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                  const float *xs, size_t xs_stride, const float *xsum,
                                  size_t xsum_stride, int cols, int n, float *out,
                                  size_t out_stride);
/* The order the AVX-512 dots of every block type but Q6_K read x in (blocks_x_fn). */
void kernels_avx512_x_halves(int8_t *dst, const int8_t *x, int cols);
float kernels_avx512_dot_q4_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q4_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q5_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q5_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q5_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q4_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_q6_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_avx512_dot_mxfp4(const uint8_t *row, const int8_t *x, const float *xs,
                               const float *xsum, int cols);
/* The same dots for several vectors at once (blocks_dot_multi_fn). */
void kernels_avx512_dot_q4_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q5_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q6_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q4_0_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q4_1_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q5_0_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_q5_1_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                   const float *xs, size_t xs_stride, const float *xsum,
                                   size_t xsum_stride, int cols, int n, float *out,
                                   size_t out_stride);
void kernels_avx512_dot_mxfp4_multi(const uint8_t *row, const int8_t *x, size_t x_stride,
                                    const float *xs, size_t xs_stride, const float *xsum,
                                    size_t xsum_stride, int cols, int n, float *out,
                                    size_t out_stride);
/* The product from panels on AVX-512 VNNI (matmul_q8p; kernels/x86-avx512-panels.c). */
void kernels_avx512_matmul_q8p(kernels_scratch *s, float *out, const tensor *w,
                               const qbatch *xq, int n, int r0, int r1);
/* The GEMM pack of 16 vectors on AVX-512 (gemm_pack16; kernels/x86-avx512.c). */
void kernels_avx512_gemm_pack16(uint8_t *dst, const int8_t *const rows[16], int stride,
                                uint32_t offset);
/* The prefill's mins part on AVX-512 (gemm_mins; kernels/x86-avx512-mins.c). */
void kernels_avx512_gemm_mins(kernels_scratch *s, float *out, size_t ldo, const float *min,
                              int groups, const float *xsum, int n, int nr);

#endif
