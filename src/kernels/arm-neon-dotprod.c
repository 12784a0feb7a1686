/* kernels/arm-neon-dotprod.c — the NEON kernel table with the Armv8.2 dot-product
 * instructions (sdot: Apple M1 and later, Graviton 2 and later, Cortex-A55/A76: the
 * Raspberry Pi 5), see kernels/table.h. Its int8 products are sdot's (the row dots of
 * the ggml block types too: kernels/arm-neon-blocks-body.h); the fp32 kernels are the
 * plain-NEON table's (arm-neon.c).
 *
 * The CPU is asked at run time: getauxval(AT_HWCAP) & HWCAP_ASIMDDP on Linux,
 * sysctlbyname("hw.optional.arm.FEAT_DotProd") on macOS; elsewhere the table is not
 * used. */
#include "arm-neon.h"

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* the Linux AArch64 ABI's bit, for older headers */
#endif
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

/* Compiled for Armv8.2-A + dotprod; called only when neon_dotprod_supported says so. */
#if defined(__clang__)
TARGET_BEGIN("dotprod")
#else
TARGET_BEGIN("arch=armv8.2-a+dotprod")
#endif

/* acc + a · b over 16 int8 pairs: lane i sums bytes 4i..4i+3. */
INLINE int32x4_t dot_sdot(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    return vdotq_s32(acc, a, b);
}

/* The row dots of ggml block types, over sdot. */
#define BLK(name) blocks_dotprod_##name
#define BLK_DOT dot_sdot
#include "arm-neon-blocks-body.h"
#undef BLK
#undef BLK_DOT

/* The Q8_0 row walk and single dot, over sdot. */
#define Q8_FN(name) name##_dotprod
#define Q8_DOT dot_sdot
#include "arm-neon-q8-body.h"
#undef Q8_FN
#undef Q8_DOT

/* The GEMM's rows at a time: 2 rows x 16 vectors keep 8 int32 and 8 float accumulators. */
enum { GEMM_ROWS = 2 };

/* R rows (1 or 2) x one packed block of 16 vectors (nv of them real), in gemm_pack's
 * order: per row and vector, each group's exact int32 sum of x · w (the packed x + 128
 * made signed again with an exclusive or, so nothing is taken away after), then one
 * fused multiply-add of it times x's and w's scales (their product rounded first): the
 * scalar GEMM's bits. sdot's by-lane form takes 4 weights (lane l of a 16-byte load)
 * against the same 4-byte piece of 4 vectors at once. */
INLINE void gemm_block_dotprod(int R, float *out, int ldo, int nv, const int8_t *w,
                               const float *ws, const uint8_t *xb, const float *xs, int stride,
                               int group)
{
    const int groups = stride / group;
    const uint8x16_t bias = vdupq_n_u8(0x80);
    float32x4_t sum[GEMM_ROWS][4];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            sum[r][q] = vdupq_n_f32(0.0f);
    for (int g = 0; g < groups; g++) {
        int32x4_t acc[GEMM_ROWS][4];
#pragma GCC unroll 2
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++)
                acc[r][q] = vdupq_n_s32(0);
        for (int off = g * group; off < (g + 1) * group; off += 16) {
            int8x16_t wv[GEMM_ROWS];
#pragma GCC unroll 2
            for (int r = 0; r < R; r++)
                wv[r] = vld1q_s8(w + (size_t)r * stride + off);
            const uint8_t *xk = xb + (size_t)(off / 4) * GEMM_VECS * 4; /* piece off / 4 */
#define LANE(l)                                                                           \
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)                                   \
    {                                                                                     \
        int8x16_t xv = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(xk + (l) * 64 + q * 16), bias)); \
        _Pragma("GCC unroll 2") for (int r = 0; r < R; r++)                               \
            acc[r][q] = vdotq_laneq_s32(acc[r][q], xv, wv[r], l);                         \
    }
            LANE(0)
            LANE(1)
            LANE(2)
            LANE(3)
#undef LANE
        }
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            float wsc = ws[r * groups + g];
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++)
                sum[r][q] = vfmaq_f32(sum[r][q], vcvtq_f32_s32(acc[r][q]),
                                      vmulq_n_f32(vld1q_f32(xs + g * GEMM_VECS + 4 * q), wsc));
        }
    }
    for (int r = 0; r < R; r++) {
        float s[GEMM_VECS];
        for (int q = 0; q < 4; q++)
            vst1q_f32(s + 4 * q, sum[r][q]);
        for (int v = 0; v < nv; v++)
            out[(size_t)v * ldo + r] = s[v];
    }
}

static void gemm_q8_dotprod(kernels_scratch *s, float *out, const tensor *w,
                            const gemm_pack *xp, int r0, int r1)
{
    const int stride = w->stride, groups = stride / w->group;
    for (int b = 0; b < xp->blocks; b++) {
        const uint8_t *xb = xp->q + (size_t)b * stride * GEMM_VECS;
        const float *xs = xp->scale + (size_t)b * groups * GEMM_VECS;
        int nv = xp->n - b * GEMM_VECS < GEMM_VECS ? xp->n - b * GEMM_VECS : GEMM_VECS;
        float *ob = out + (size_t)b * GEMM_VECS * w->rows;
        for (int r = r0; r < r1; r += GEMM_ROWS) {
            const int8_t *wr = w->q + (size_t)r * stride;
            const float *wsr = w->scale + (size_t)r * groups;
            if (r1 - r >= GEMM_ROWS)
                gemm_block_dotprod(GEMM_ROWS, ob + r, w->rows, nv, wr, wsr, xb, xs, stride,
                                   w->group);
            else
                gemm_block_dotprod(1, ob + r, w->rows, nv, wr, wsr, xb, xs, stride, w->group);
        }
    }
}

TARGET_END

static bool neon_dotprod_supported(void)
{
#if defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
    int has = 0;
    size_t len = sizeof has;
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &has, &len, NULL, 0) == 0 && has;
#else
    return false;
#endif
}

const kernel_table kernels_arm_neon_dotprod = {
    .isa = KERNELS_NEON_DOTPROD,
    .cpu_supports = neon_dotprod_supported,
    .rows_q8 = rows_q8_dotprod,
    .gemm_q8 = gemm_q8_dotprod,
    .matvec_q8b = NULL, /* rows_q8 over rows made Q8_0 a few at a time (kernels.c) */
    .dot_blocks = NEON_DOT_BLOCKS(blocks_dotprod),
    .dot_blocks_multi = NEON_DOT_BLOCKS_MULTI(blocks_dotprod),
    .rows_f32 = kernels_neon_rows_f32,
    .dot_q8 = dot_q8_dotprod,
    .quantize_row = NULL, /* the scalar one */
    .dequantize_rows = kernels_neon_dequantize_rows,
    .rows_dot = kernels_neon_rows_dot,
    .rows_axpy = kernels_neon_rows_axpy,
    .softmax = kernels_neon_softmax,
    .swiglu = kernels_neon_swiglu,
    .geglu = kernels_neon_geglu,
    .attention_f32 = NULL, /* one query at a time over the row kernels */
    .attention_q8 = kernels_neon_attention_q8,
};
