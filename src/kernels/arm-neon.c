/* kernels/arm-neon.c — the plain NEON (Advanced SIMD) kernel table, for AArch64 CPUs
 * without the Armv8.2 dot-product instructions (Cortex-A53, A72: the Raspberry Pi 3 and
 * 4), see kernels/table.h. Its fp32 kernels serve the dot-product table too; its row
 * dots of the ggml block types (Q4_0 ... Q6_K) are kernels/arm-neon-blocks-body.h's.
 *
 * Without sdot the int8 products are widening multiplies: smull / smlal2 give int16
 * sums of two products, which cannot overflow while one factor is a quantized
 * activation (|x| <= 127, so each product is at most 128 * 127), and sadalp adds their
 * pairs into int32 lanes. The fp32 attention runs one query at a time over the row
 * kernels (kernels.c). */
#include "arm-neon.h"

#include <math.h>

/* acc + a · b over 16 int8 pairs, in int32 lanes (see the top of the file). */
INLINE int32x4_t dot_widening(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    p = vmlal_high_s8(p, a, b);
    return vpadalq_s16(acc, p);
}

/* The row dots of ggml block types, over the widening step. */
#define BLK(name) blocks_neon_##name
#define BLK_DOT dot_widening
#include "arm-neon-blocks-body.h"
#undef BLK
#undef BLK_DOT

/* The Q8_0 row walk and single dot, over the widening step. */
#define Q8_FN(name) name##_neon
#define Q8_DOT dot_widening
#include "arm-neon-q8-body.h"
#undef Q8_FN
#undef Q8_DOT

/* F32 block: R rows x N vectors, 4 floats a step, plain C for the last cols % 4. */
INLINE void f32_block_neon(int R, int N, float *out, int ldo, const float *w, int wstride,
                           const float *x, int cols)
{
    float32x4_t acc[BLOCK_ROWS][BLOCK_VECS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            acc[r][v] = vdupq_n_f32(0.0f);
    int k = 0;
    for (; k + 4 <= cols; k += 4) {
        float32x4_t xv[BLOCK_VECS];
#pragma GCC unroll 4
        for (int v = 0; v < N; v++)
            xv[v] = vld1q_f32(x + (size_t)v * cols + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const float *wr = w + (size_t)r * wstride + k;
            float32x4_t wv = vld1q_f32(wr);
            if (k % 16 == 0)
                prefetch_weights((const char *)wr + prefetch_bytes(4 * (size_t)wstride));
#pragma GCC unroll 4
            for (int v = 0; v < N; v++)
                acc[r][v] = vfmaq_f32(acc[r][v], wv, xv[v]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < N; v++) {
            float s = vaddvq_f32(acc[r][v]);
            for (int j = k; j < cols; j++)
                s += w[(size_t)r * wstride + j] * x[(size_t)v * cols + j];
            out[(size_t)v * ldo + r] = s;
        }
}

#define F32_CALL(R, N, out, w, x, r, v)                                                   \
    f32_block_neon(R, N, out + (size_t)(v) * w->rows + (r), w->rows,                      \
                   w->f + (size_t)(r) * w->stride, w->stride, x + (size_t)(v) * w->cols, w->cols)

void kernels_neon_rows_f32(float *out, const tensor *w, const float *x, int n, int r0, int r1)
{
#define CALL(r, R, v, N) BLOCK_DISPATCH(F32_CALL, R, N, out, w, x, r, v)
    WALK_BLOCKS(n, r0, r1, CALL, 0);
#undef CALL
}

void kernels_neon_rows_dot(float *out, const float *rows, size_t row_stride, int n_rows,
                           const float *x, int len)
{
    for (int r = 0; r < n_rows; r++) {
        const float *row = rows + (size_t)r * row_stride;
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
        int j = 0;
        for (; j + 8 <= len; j += 8) {
            a0 = vfmaq_f32(a0, vld1q_f32(row + j), vld1q_f32(x + j));
            a1 = vfmaq_f32(a1, vld1q_f32(row + j + 4), vld1q_f32(x + j + 4));
        }
        for (; j + 4 <= len; j += 4)
            a0 = vfmaq_f32(a0, vld1q_f32(row + j), vld1q_f32(x + j));
        float sum = vaddvq_f32(vaddq_f32(a0, a1));
        for (; j < len; j++)
            sum += row[j] * x[j];
        out[r] = sum;
    }
}

void kernels_neon_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
                            const float *a, int len)
{
    int j = 0;
    for (; j + 16 <= len; j += 16) {
        float32x4_t o0 = vld1q_f32(out + j), o1 = vld1q_f32(out + j + 4);
        float32x4_t o2 = vld1q_f32(out + j + 8), o3 = vld1q_f32(out + j + 12);
        for (int r = 0; r < n_rows; r++) {
            const float *row = rows + (size_t)r * row_stride + j;
            o0 = vfmaq_n_f32(o0, vld1q_f32(row), a[r]);
            o1 = vfmaq_n_f32(o1, vld1q_f32(row + 4), a[r]);
            o2 = vfmaq_n_f32(o2, vld1q_f32(row + 8), a[r]);
            o3 = vfmaq_n_f32(o3, vld1q_f32(row + 12), a[r]);
        }
        vst1q_f32(out + j, o0);
        vst1q_f32(out + j + 4, o1);
        vst1q_f32(out + j + 8, o2);
        vst1q_f32(out + j + 12, o3);
    }
    for (; j + 4 <= len; j += 4) {
        float32x4_t o = vld1q_f32(out + j);
        for (int r = 0; r < n_rows; r++)
            o = vfmaq_n_f32(o, vld1q_f32(rows + (size_t)r * row_stride + j), a[r]);
        vst1q_f32(out + j, o);
    }
    if (j < len)
        kernels_scalar_rows_axpy(out + j, rows + j, row_stride, n_rows, a, len - j);
}

/* exp(x) for x <= 88.3 (see EXP_* in kernels/simd.h): the x86 kernels' operations. */
INLINE float32x4_t exp_neon(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
    float32x4_t k = vrndnq_f32(vmulq_n_f32(x, EXP_LOG2E));
    float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(EXP_LN2_HI));
    r = vfmsq_f32(r, k, vdupq_n_f32(EXP_LN2_LO));
    float32x4_t p = vdupq_n_f32(EXP_P0);
    p = vfmaq_f32(vdupq_n_f32(EXP_P1), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_P2), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_P3), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_P4), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_P5), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
    /* 2^k through the exponent bits; k >= -126 after the clamp, and an integer */
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

/* kernels_scalar_geglu's operations, 4 at a time, with exp_neon for expf (which holds its
 * argument at 88.3, where g / (1 + e) is already 0 to float). */
void kernels_neon_geglu(float *gate, const float *up, int n)
{
    const float32x4_t one = vdupq_n_f32(1.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t g = vld1q_f32(gate + i);
        float32x4_t g3 = vmulq_f32(vmulq_f32(g, g), g);
        float32x4_t u = vmulq_n_f32(vfmaq_n_f32(g, g3, 0.044715f), 0.79788456080286535588f);
        float32x4_t e = exp_neon(vmulq_n_f32(u, -2.0f));
        float32x4_t s = vdivq_f32(g, vaddq_f32(one, e));
        vst1q_f32(gate + i, vmulq_f32(s, vld1q_f32(up + i)));
    }
    if (i < n)
        kernels_scalar_geglu(gate + i, up + i, n - i);
}

/* swiglu_scalar's operations, 4 at a time, with exp_neon for expf. */
void kernels_neon_swiglu(float *gate, const float *up, int n)
{
    const float32x4_t one = vdupq_n_f32(1.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t g = vld1q_f32(gate + i);
        float32x4_t e = exp_neon(vnegq_f32(g));
        float32x4_t s = vmulq_f32(g, vdivq_f32(one, vaddq_f32(one, e)));
        vst1q_f32(gate + i, vmulq_f32(s, vld1q_f32(up + i)));
    }
    for (; i < n; i++) {
        float val = gate[i];
        val *= 1.0f / (1.0f + expf(-val));
        gate[i] = val * up[i];
    }
}

void kernels_neon_softmax(float *x, int n)
{
    int i = 0;
    float32x4_t vmax = vdupq_n_f32(x[0]);
    for (; i + 4 <= n; i += 4)
        vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
    float max = vmaxvq_f32(vmax);
    for (; i < n; i++)
        if (x[i] > max)
            max = x[i];
    float32x4_t vm = vdupq_n_f32(max), vsum = vdupq_n_f32(0.0f);
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t xi = vld1q_f32(x + i);
        /* exp(-inf) is 0, as expf gives it (exp_neon stops at exp(-87.3)) */
        uint32x4_t inf = vceqq_f32(xi, vdupq_n_f32(-INFINITY));
        float32x4_t e = vbslq_f32(inf, vdupq_n_f32(0.0f), exp_neon(vsubq_f32(xi, vm)));
        vst1q_f32(x + i, e);
        vsum = vaddq_f32(vsum, e);
    }
    float sum = vaddvq_f32(vsum);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++)
        x[i] *= inv;
}

/* 8 int8 at p as fp32, in two halves */
INLINE void q8x8_f32(const int8_t *p, float32x4_t *lo, float32x4_t *hi)
{
    int16x8_t s = vmovl_s8(vld1_s8(p));
    *lo = vcvtq_f32_s32(vmovl_s16(vget_low_s16(s)));
    *hi = vcvtq_f32_s32(vmovl_high_s16(s));
}

/* s[t] = scale * ks[t] * (q · k[t]), 8 values a step, the last hs % 8 in plain C. */
static void scores_q8_neon(float *s, const float *q, const int8_t *k, const float *ks,
                           int n_keys, int hs, float scale)
{
    for (int t = 0; t < n_keys; t++) {
        const int8_t *kr = k + (size_t)t * hs;
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, lo, hi;
        int j = 0;
        for (; j + 8 <= hs; j += 8) {
            q8x8_f32(kr + j, &lo, &hi);
            a0 = vfmaq_f32(a0, lo, vld1q_f32(q + j));
            a1 = vfmaq_f32(a1, hi, vld1q_f32(q + j + 4));
        }
        float d = vaddvq_f32(vaddq_f32(a0, a1));
        for (; j < hs; j++)
            d += q[j] * (float)kr[j];
        s[t] = d * scale * ks[t];
    }
}

/* Values are summed in slices of this many, their accumulators in 16 registers: one
 * pass over V for a head of 64, two for 128. */
enum { NEON_SLICE = 64 };

/* out (C * 8 values) = Σ_t att[t] * vs[t] * v[t][0..8C), v rows hs apart. */
INLINE void values_q8_neon(int C, float *out, const float *att, const int8_t *v,
                           const float *vs, int n_keys, int hs)
{
    float32x4_t acc[2 * NEON_SLICE / 8], lo, hi;
#pragma GCC unroll 16
    for (int c = 0; c < 2 * C; c++)
        acc[c] = vdupq_n_f32(0.0f);
    for (int t = 0; t < n_keys; t++) {
        const int8_t *vr = v + (size_t)t * hs;
        float wt = att[t] * vs[t];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            q8x8_f32(vr + 8 * c, &lo, &hi);
            acc[2 * c] = vfmaq_n_f32(acc[2 * c], lo, wt);
            acc[2 * c + 1] = vfmaq_n_f32(acc[2 * c + 1], hi, wt);
        }
    }
#pragma GCC unroll 16
    for (int c = 0; c < 2 * C; c++)
        vst1q_f32(out + 4 * c, acc[c]);
}

void kernels_neon_attention_q8(float *out, float *att, const float *q, const int8_t *k,
                               const float *ks, const int8_t *v, const float *vs, int n_keys,
                               int hs, float scale)
{
    scores_q8_neon(att, q, k, ks, n_keys, hs, scale);
    kernels_neon_softmax(att, n_keys);
    int j = 0;
    for (; j + NEON_SLICE <= hs; j += NEON_SLICE)
        values_q8_neon(NEON_SLICE / 8, out + j, att, v + j, vs, n_keys, hs);
    for (; j + 8 <= hs; j += 8)
        values_q8_neon(1, out + j, att, v + j, vs, n_keys, hs);
    for (; j < hs; j++) {
        float sum = 0.0f;
        for (int t = 0; t < n_keys; t++)
            sum += att[t] * vs[t] * (float)v[(size_t)t * hs + j];
        out[j] = sum;
    }
}

void kernels_neon_dequantize_rows(float *out, const int8_t *q, const float *s, int n_rows,
                                  int hs)
{
    for (int r = 0; r < n_rows; r++) {
        const int8_t *qr = q + (size_t)r * hs;
        float *o = out + (size_t)r * hs;
        float32x4_t lo, hi;
        int j = 0;
        for (; j + 8 <= hs; j += 8) {
            q8x8_f32(qr + j, &lo, &hi);
            vst1q_f32(o + j, vmulq_n_f32(lo, s[r]));
            vst1q_f32(o + j + 4, vmulq_n_f32(hi, s[r]));
        }
        for (; j < hs; j++)
            o[j] = (float)qr[j] * s[r];
    }
}

/* Advanced SIMD is part of every AArch64 CPU. */
static bool neon_supported(void)
{
    return true;
}

const kernel_table kernels_arm_neon = {
    .isa = KERNELS_NEON,
    .cpu_supports = neon_supported,
    .rows_q8 = rows_q8_neon,
    .gemm_q8 = NULL, /* kernels_gemm is kernels_matmul */
    .matvec_q8b = NULL, /* rows_q8 over rows made Q8_0 a few at a time (kernels.c) */
    .dot_blocks = NEON_DOT_BLOCKS(blocks_neon),
    .dot_blocks_multi = NEON_DOT_BLOCKS_MULTI(blocks_neon),
    .rows_f32 = kernels_neon_rows_f32,
    .dot_q8 = dot_q8_neon,
    .quantize_row = NULL, /* the scalar one */
    .dequantize_rows = kernels_neon_dequantize_rows,
    .rows_dot = kernels_neon_rows_dot,
    .rows_axpy = kernels_neon_rows_axpy,
    .softmax = kernels_neon_softmax,
    .swiglu = kernels_neon_swiglu,
    .geglu = kernels_neon_geglu,
    .attention_f32 = NULL, /* one query at a time over the row kernels above */
    .attention_q8 = kernels_neon_attention_q8,
};
