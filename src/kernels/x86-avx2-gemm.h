/* kernels/x86-avx2-gemm.h — what the 256-bit prefill GEMMs share (the AVX2 table's,
 * kernels/x86-avx2-gemm.c, and the AVX-VNNI table's, kernels/x86-avx-vnni.c): the register
 * block's rows, the token tiles and the walk over them, a row piece's broadcast, the rows'
 * group sums, the float step of a group and the store of a block's sums. Included by
 * those two files only. */
#ifndef LLMCHAT_KERNELS_X86_AVX2_GEMM_H
#define LLMCHAT_KERNELS_X86_AVX2_GEMM_H

#include "x86.h"

/* Rows of a register block: 4 x 2 int32 accumulators and as many float ones. */
enum { GEMM2_ROWS = 4 };

/* Packed bytes of activations a row block keeps reading: token tiles are cut to about
 * this much (the L2 of the smallest AVX2 cores, less the rows and the results). */
enum { GEMM2_TILE_BYTES = 256 << 10 };

/* The walk of a GEMM over rows [r0, r1) and the vectors of pack xp: token tiles of
 * about GEMM2_TILE_BYTES (a block of GEMM_VECS vectors is x_bytes), in each the rows in
 * register blocks of up to GEMM2_ROWS, each block by every block of vectors of the tile:
 * CALL(R, H, b, r) with R and H literals (rows 1..4, units a group 1..2), so that each
 * call is specialised. */
#define GEMM2_WALK(CALL, H, xp, x_bytes, r0, r1)                                          \
    do {                                                                                  \
        int tile_blocks_ = (int)(GEMM2_TILE_BYTES / (x_bytes));                           \
        if (tile_blocks_ < 1)                                                             \
            tile_blocks_ = 1;                                                             \
        for (int b0_ = 0; b0_ < (xp)->blocks; b0_ += tile_blocks_) {                      \
            int b1_ = b0_ + tile_blocks_ < (xp)->blocks ? b0_ + tile_blocks_ : (xp)->blocks; \
            for (int r_ = (r0); r_ < (r1); r_ += GEMM2_ROWS) {                            \
                int R_ = (r1) - r_ < GEMM2_ROWS ? (r1) - r_ : GEMM2_ROWS;                 \
                for (int b_ = b0_; b_ < b1_; b_++) {                                      \
                    switch (R_ + 4 * ((H) - 1)) {                                         \
                    case 8: CALL(4, 2, b_, r_); break;                                    \
                    case 7: CALL(3, 2, b_, r_); break;                                    \
                    case 6: CALL(2, 2, b_, r_); break;                                    \
                    case 5: CALL(1, 2, b_, r_); break;                                    \
                    case 4: CALL(4, 1, b_, r_); break;                                    \
                    case 3: CALL(3, 1, b_, r_); break;                                    \
                    case 2: CALL(2, 1, b_, r_); break;                                    \
                    default: CALL(1, 1, b_, r_); break;                                   \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* Σ w over each unit of rows [r0, r1) of w (r1 - r0 rows of units: groups, or with
 * H = 2 (group 32) each group's halves), in s's GEMM_BIAS slot; NULL when out of memory
 * (counted in s). */
int32_t *kernels_avx2_unit_sums(kernels_scratch *s, const tensor *w, int r0, int r1, int H);

TARGET_BEGIN("avx2,fma")

/* The float part of a register block, the same for every kernel: R rows' int32 sums of
 * group g (acc) times x's and w's scales into facc, groups in order. */
INLINE void gemm_scale_avx2(int R, __m256 facc[][2], __m256i acc[][2], const float *ws,
                            const float *xs0, int g, int groups, int H)
{
    __m256 xs_lo = _mm256_loadu_ps(xs0 + (size_t)g * GEMM_VECS);
    __m256 xs_hi = _mm256_loadu_ps(xs0 + (size_t)g * GEMM_VECS + 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m256 wsv = _mm256_set1_ps(ws[((size_t)r * groups + g) * H]);
        facc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][0]), _mm256_mul_ps(xs_lo, wsv),
                                     facc[r][0]);
        facc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][1]), _mm256_mul_ps(xs_hi, wsv),
                                     facc[r][1]);
    }
}

/* Block b's real vectors of R rows' float sums to out[v * ldo + r], or added to what
 * is there (add). */
INLINE void gemm_store_avx2(int R, float *out, size_t ldo, __m256 facc[][2], const gemm_pack *xp,
                            int b, bool add)
{
    int left = xp->n - b * GEMM_VECS;
    int nv = left < GEMM_VECS ? left : GEMM_VECS;
    float *o = out + (size_t)b * GEMM_VECS * ldo;
    if (R == 4 && nv == GEMM_VECS) { /* 4 x 8 transposed: a vector's 4 rows, one store */
        for (int h = 0; h < 2; h++) {
            __m256 t0 = _mm256_unpacklo_ps(facc[0][h], facc[1][h]);
            __m256 t1 = _mm256_unpackhi_ps(facc[0][h], facc[1][h]);
            __m256 t2 = _mm256_unpacklo_ps(facc[2][h], facc[3][h]);
            __m256 t3 = _mm256_unpackhi_ps(facc[2][h], facc[3][h]);
            __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                           _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
            float *oh = o + (size_t)h * 8 * ldo;
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                float *p0 = oh + (size_t)v * ldo, *p1 = oh + (size_t)(v + 4) * ldo;
                __m128 lo = _mm256_castps256_ps128(u[v]), hi = _mm256_extractf128_ps(u[v], 1);
                if (add) { /* each value added to its own, as the loop below does */
                    lo = _mm_add_ps(_mm_loadu_ps(p0), lo);
                    hi = _mm_add_ps(_mm_loadu_ps(p1), hi);
                }
                _mm_storeu_ps(p0, lo);
                _mm_storeu_ps(p1, hi);
            }
        }
        return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float f[GEMM_VECS];
        _mm256_storeu_ps(f, facc[r][0]);
        _mm256_storeu_ps(f + 8, facc[r][1]);
        for (int v = 0; v < nv; v++)
            o[(size_t)v * ldo + r] = add ? o[(size_t)v * ldo + r] + f[v] : f[v];
    }
}

TARGET_END

#endif
