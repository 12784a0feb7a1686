/* kernels/arm-neon.h — what the two AArch64 kernel files share: the Q8_0 register block
 * written once over an int8 dot-product step (each file passes its own: widening
 * multiplies in arm-neon.c, sdot in arm-neon-dotprod.c), a table's entries for the
 * ggml block types' row dots, and the plain-NEON kernels the dot-product table
 * reuses. Included by src/kernels/arm-neon*.c only.
 *
 * NEON (Advanced SIMD) is part of every AArch64 CPU, so arm-neon.c builds with the
 * compiler's defaults; arm-neon-dotprod.c is compiled for Armv8.2-A + dotprod and runs
 * only after kernels_init has checked the CPU. */
#ifndef LLMCHAT_KERNELS_ARM_NEON_H
#define LLMCHAT_KERNELS_ARM_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

#include "simd.h"
#include "table.h"

/* acc + the int8 products of a and b, summed in int32 lanes (which products go to which
 * lane is the step's own: only the sum of the four lanes is defined). */
typedef int32x4_t (*neon_dot_step)(int32x4_t acc, int8x16_t a, int8x16_t b);

/* Q8_0 block: R rows x N vectors, 32 values a step (each inside one group, as group %
 * 32 == 0): the step's int32 lanes are made fp32 and added to the float lanes times
 * the group's two scales. Every (row, vector) pair goes through the same operations
 * whatever R and N, so a matvec gives the bits of vector 0 of a matmul. Forced inline
 * with a constant `dot`, the step is inlined too. */
INLINE void neon_q8_block(int R, int N, float *out, int ldo, const int8_t *w, const float *ws,
                          const int8_t *x, const float *xs, int stride, int group,
                          neon_dot_step dot)
{
    float32x4_t acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = vdupq_n_f32(0.0f);
    const int groups = stride / group;
    for (int off = 0, g = 0, k = 0; off < stride; off += 32) {
        int8x16_t x0[BLOCK_VECS], x1[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++) {
            x0[v] = vld1q_s8(x + (size_t)v * stride + off);
            x1[v] = vld1q_s8(x + (size_t)v * stride + off + 16);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const int8_t *wr = w + (size_t)r * stride + off;
            int8x16_t w0 = vld1q_s8(wr), w1 = vld1q_s8(wr + 16);
            if (off % 64 == 0)
                prefetch_weights(wr + prefetch_bytes(stride));
            float wsc = ws[r * groups + g];
#pragma GCC unroll 4
            for (int v = 0; v < N; v++) {
                int32x4_t p = dot(dot(vdupq_n_s32(0), w0, x0[v]), w1, x1[v]);
                acc[r][v] = vfmaq_n_f32(acc[r][v], vcvtq_f32_s32(p), wsc * xs[v * groups + g]);
            }
        }
        if ((k += 32) == group) /* g = off / group, without a division per step */
            g++, k = 0;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            out[(size_t)v * ldo + r] = vaddvq_f32(acc[r][v]);
}

#define NEON_Q8_CALL(R, N, out, w, xq, r, v, dot)                                         \
    neon_q8_block(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                       \
                  w->q + (size_t)(r) * w->stride, w->scale + (size_t)(r) * (w->stride / w->group), \
                  xq->q + (size_t)(v) * xq->stride,                                       \
                  xq->scale + (size_t)(v) * (w->stride / w->group), w->stride, w->group, dot)

/* A table's dot_blocks: the row dots kernels/arm-neon-blocks-body.h made with
 * BLK(name) = prefix##_##name. */
#define NEON_DOT_BLOCKS(prefix)                                                           \
    {                                                                                     \
        [GGML_TYPE_Q4_0] = prefix##_dot_q4_0, [GGML_TYPE_Q4_1] = prefix##_dot_q4_1,       \
        [GGML_TYPE_Q5_0] = prefix##_dot_q5_0, [GGML_TYPE_Q5_1] = prefix##_dot_q5_1,       \
        [GGML_TYPE_Q4_K] = prefix##_dot_q4_k, [GGML_TYPE_Q5_K] = prefix##_dot_q5_k,       \
        [GGML_TYPE_Q6_K] = prefix##_dot_q6_k, [GGML_TYPE_MXFP4] = prefix##_dot_mxfp4,     \
    }

/* A table's dot_blocks_multi: the several-vector dots of the same header. */
#define NEON_DOT_BLOCKS_MULTI(prefix)                                                     \
    {                                                                                     \
        [GGML_TYPE_Q4_0] = prefix##_dot_q4_0_multi, [GGML_TYPE_Q4_1] = prefix##_dot_q4_1_multi, \
        [GGML_TYPE_Q5_0] = prefix##_dot_q5_0_multi, [GGML_TYPE_Q5_1] = prefix##_dot_q5_1_multi, \
        [GGML_TYPE_Q4_K] = prefix##_dot_q4_k_multi, [GGML_TYPE_Q5_K] = prefix##_dot_q5_k_multi, \
        [GGML_TYPE_Q6_K] = prefix##_dot_q6_k_multi, [GGML_TYPE_MXFP4] = prefix##_dot_mxfp4_multi, \
    }

/* The plain-NEON kernels (arm-neon.c) that the dot-product table uses as they are:
 * everything but the int8 products. */
void kernels_neon_rows_f32(float *out, const tensor *w, const float *x, int n, int r0, int r1);
void kernels_neon_rows_dot(float *out, const float *rows, size_t row_stride, int n_rows,
                           const float *x, int len);
void kernels_neon_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
                            const float *a, int len);
void kernels_neon_softmax(float *x, int n);
void kernels_neon_swiglu(float *gate, const float *up, int n);
void kernels_neon_geglu(float *gate, const float *up, int n);
void kernels_neon_attention_q8(float *out, float *att, const float *q, const int8_t *k,
                               const float *ks, const int8_t *v, const float *vs, int n_keys,
                               int hs, float scale);
void kernels_neon_dequantize_rows(float *out, const int8_t *q, const float *s, int n_rows,
                                  int hs);

#endif
