/* kernels/x86-avx2-gemm.c — the AVX2 table's prefill GEMM (gemm_q8, see kernels/table.h):
 * Q8_0 rows times activations packed 16 vectors a block (gemm_pack), asked for as
 * signed x (gemm_signed), since without VNNI the product is maddubs, which multiplies
 * unsigned by signed bytes: each weight's sign is moved onto x and |w| is multiplied by
 * it (dot_s8_avx2), which cannot saturate (|w| <= 128, |x| <= 127).
 *
 * A register block is 4 rows x 16 vectors: a row's 4-byte piece k, broadcast, meets
 * piece k of 8 vectors in one 32-byte load (the pack's layout), so one maddubs + madd
 * gives 8 vectors' int32 sums of 4 products. A group's int32 sums then take one fused
 * multiply-add each into the float sums: the scalar GEMM's operations per row and
 * vector (kernels/scalar.c: gemm_q8_scalar), so its bits. Vectors are walked in token
 * tiles, so that a row block reads its tile's packed activations from L2. K-quant and
 * Q8_0 block rows reach this kernel made Q8_0 a few rows at a time (kernels.c). */
#include "x86.h"

#include <string.h>

/* Rows of a register block: 4 x 2 int32 accumulators and as many float ones. */
enum { GEMM2_ROWS = 4 };

/* Packed bytes of activations a row block keeps reading: token tiles are cut to about
 * this much (the L2 of the smallest AVX2 cores, less the rows and the results). */
enum { GEMM2_TILE_BYTES = 256 << 10 };

TARGET_BEGIN("avx2,fma")

/* R rows from w (stride values, scales ws) x the 16 vectors of block b of xp:
 * out[v * ldo + r] for the block's real vectors. */
INLINE void gemm_block_avx2(int R, float *out, size_t ldo, const int8_t *w, const float *ws,
                            const gemm_pack *xp, int b, int stride, int group)
{
    const int groups = stride / group, k4 = group / 4;
    const uint8_t *x0 = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        facc[r][0] = facc[r][1] = _mm256_setzero_ps();
    for (int g = 0; g < groups; g++) {
        __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_si256();
        const uint8_t *xg = x0 + (size_t)g * k4 * 64;
        const int8_t *wg = w + (size_t)g * group;
        for (int k = 0; k < k4; k++) {
            /* piece k of vectors 0-7 and of 8-15 */
            __m256i x_lo = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64));
            __m256i x_hi = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 32));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                int32_t piece;
                memcpy(&piece, wg + (size_t)r * stride + 4 * k, 4);
                __m256i wv = _mm256_set1_epi32(piece);
                acc[r][0] = _mm256_add_epi32(acc[r][0], dot_s8_avx2(wv, x_lo));
                acc[r][1] = _mm256_add_epi32(acc[r][1], dot_s8_avx2(wv, x_hi));
            }
        }
        __m256 xs_lo = _mm256_loadu_ps(xs0 + (size_t)g * GEMM_VECS);
        __m256 xs_hi = _mm256_loadu_ps(xs0 + (size_t)g * GEMM_VECS + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 wsv = _mm256_set1_ps(ws[(size_t)r * groups + g]);
            facc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][0]), _mm256_mul_ps(xs_lo, wsv),
                                         facc[r][0]);
            facc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][1]), _mm256_mul_ps(xs_hi, wsv),
                                         facc[r][1]);
        }
    }
    int left = xp->n - b * GEMM_VECS;
    int nv = left < GEMM_VECS ? left : GEMM_VECS;
    float *o = out + (size_t)b * GEMM_VECS * ldo;
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        float f[GEMM_VECS];
        _mm256_storeu_ps(f, facc[r][0]);
        _mm256_storeu_ps(f + 8, facc[r][1]);
        for (int v = 0; v < nv; v++)
            o[(size_t)v * ldo + r] = f[v];
    }
}

void kernels_avx2_gemm_q8(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                          int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group;
    const size_t ldo = (size_t)w->rows;
    int tile_blocks = (int)(GEMM2_TILE_BYTES / ((size_t)stride * GEMM_VECS));
    if (tile_blocks < 1)
        tile_blocks = 1;
    for (int b0 = 0; b0 < xp->blocks; b0 += tile_blocks) {
        int b1 = b0 + tile_blocks < xp->blocks ? b0 + tile_blocks : xp->blocks;
        for (int r = r0; r < r1; r += GEMM2_ROWS) {
            int R = r1 - r < GEMM2_ROWS ? r1 - r : GEMM2_ROWS;
            const int8_t *wr = w->q + (size_t)r * stride;
            const float *ws = w->scale + (size_t)r * groups;
            for (int b = b0; b < b1; b++) {
                switch (R) {
                case 4: gemm_block_avx2(4, out + r, ldo, wr, ws, xp, b, stride, group); break;
                case 3: gemm_block_avx2(3, out + r, ldo, wr, ws, xp, b, stride, group); break;
                case 2: gemm_block_avx2(2, out + r, ldo, wr, ws, xp, b, stride, group); break;
                default: gemm_block_avx2(1, out + r, ldo, wr, ws, xp, b, stride, group); break;
                }
            }
        }
    }
}

TARGET_END
