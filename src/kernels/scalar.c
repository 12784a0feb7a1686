/* kernels/scalar.c — the plain-C kernel table: the reference twin of every SIMD kernel
 * and the fallback on any CPU (see kernels/table.h).
 *
 * Written for clarity, in the order the math reads: each SIMD kernel's result is
 * compared with these by tests (exactly where the operations are the same, within
 * rounding bounds where the SIMD order of summation differs). */
#include "table.h"

#include <math.h>
#include <string.h>

static bool scalar_supported(void)
{
    return true;
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

float kernels_scalar_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs,
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

static void rows_q8_scalar(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                           int n, int r0, int r1)
{
    int groups = w->stride / w->group;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * w->stride;  /* (stride) */
        const float *ws = w->scale + (size_t)r * groups;  /* (groups) */
        for (int i = 0; i < n; i++)
            out[(size_t)i * w->rows + r] =
                kernels_scalar_dot_q8(wr, ws, xq->q + (size_t)i * xq->stride,
                                      xq->scale + (size_t)i * groups, w->stride, w->group);
    }
}

/* rows_q8_scalar's sum over a Q8_0_BLOCKS row, block by block: the same operations on
 * the same values (each block's half scale made fp32), so the same bits. */
static void matvec_q8b_scalar(kernels_scratch *s, float *out, const tensor *w,
                              const qbatch *xq, int r0, int r1)
{
    for (int r = r0; r < r1; r++) {
        float sum = 0.0f;
        for (int g = 0; g < w->cols / QUANT_BLOCK; g++) {
            const uint8_t *b = tensor_block(w, r, g);
            const int8_t *q = quant_block_values(b);
            const int8_t *x = xq->q + (size_t)g * QUANT_BLOCK;
            int32_t acc = 0;
            for (int i = 0; i < QUANT_BLOCK; i++)
                acc += (int32_t)q[i] * (int32_t)x[i];
            sum += (float)acc * quant_block_scale(b) * xq->scale[g];
        }
        out[r] = sum;
    }
}

static void q8b_to_rows_scalar(int8_t *q, float *scale, const tensor *w, int r0, int n)
{
    int blocks = w->cols / QUANT_BLOCK;
    for (int r = 0; r < n; r++)
        for (int g = 0; g < blocks; g++) {
            const uint8_t *b = tensor_block(w, r0 + r, g);
            memcpy(q + (size_t)r * w->cols + (size_t)g * QUANT_BLOCK, quant_block_values(b),
                   QUANT_BLOCK);
            scale[(size_t)r * blocks + g] = quant_block_scale(b);
        }
}

/* The GEMM over packed activations, in the order every GEMM kernel keeps (see
 * gemm_pack): per vector and row, groups in order, each group's int32 sum of
 * (x + 128) * w less 128 * Σ w, then one fused multiply-add of it times x's and w's
 * scales (their product rounded first) into the float sum. */
static void gemm_q8_scalar(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                           int r0, int r1)
{
    const int stride = w->stride, group = w->group, groups = stride / group;
    for (int r = r0; r < r1; r++) {
        const int8_t *wr = w->q + (size_t)r * stride;
        const float *ws = w->scale + (size_t)r * groups;
        for (int t = 0; t < xp->n; t++) {
            int b = t / GEMM_VECS, v = t % GEMM_VECS;
            const uint8_t *xb = xp->q + (size_t)b * stride * GEMM_VECS;
            const float *xs = xp->scale + (size_t)b * groups * GEMM_VECS;
            float sum = 0.0f;
            for (int g = 0; g < groups; g++) {
                int32_t acc = 0, wsum = 0;
                for (int i = g * group; i < (g + 1) * group; i++) {
                    acc += (int32_t)xb[((size_t)(i / 4) * GEMM_VECS + v) * 4 + i % 4] * wr[i];
                    wsum += wr[i];
                }
                acc -= 128 * wsum;
                sum = fmaf((float)acc, xs[g * GEMM_VECS + v] * ws[g], sum);
            }
            out[(size_t)t * w->rows + r] = sum;
        }
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

void kernels_scalar_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
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

/* run.c's SwiGLU: silu(gate) = gate * (1 / (1 + expf(-gate))), times up. */
static void swiglu_scalar(float *gate, const float *up, int n)
{
    for (int i = 0; i < n; i++) {
        float val = gate[i];
        val *= 1.0f / (1.0f + expf(-val));
        gate[i] = val * up[i];
    }
}

/* GELU's tanh form as g / (1 + expf(-2u)), u = sqrt(2/pi) (g + 0.044715 g^3), times up
 * (kernels.h). */
void kernels_scalar_geglu(float *gate, const float *up, int n)
{
    const float c = 0.79788456080286535588f; /* sqrt(2 / pi) */
    for (int i = 0; i < n; i++) {
        float g = gate[i], u = c * (g + 0.044715f * g * g * g);
        gate[i] = g / (1.0f + expf(-2.0f * u)) * up[i];
    }
}

/* The int8 KV attention as the fp32 attention of the dequantized rows, operation for
 * operation: each score is (q · (k[t] * ks[t])) * scale, summed in order, the softmax
 * is the scalar one, and out sums the dequantized value rows in key order, each times
 * att[t]. So the scalar decode step gives the bits of the scalar batched attention over
 * quant_dequantize_rows' output (prefill's path), and a key rounded the same way in
 * both stays the same key. */
static void attention_q8_scalar(float *out, float *att, const float *q, const int8_t *k,
                                const float *ks, const int8_t *v, const float *vs, int n_keys,
                                int hs, float scale)
{
    for (int t = 0; t < n_keys; t++) {
        const int8_t *kr = k + (size_t)t * hs;
        float d = 0.0f;
        for (int j = 0; j < hs; j++)
            d += ((float)kr[j] * ks[t]) * q[j];
        att[t] = d * scale;
    }
    softmax_scalar(att, n_keys);
    for (int j = 0; j < hs; j++)
        out[j] = 0.0f;
    for (int t = 0; t < n_keys; t++) {
        const int8_t *vr = v + (size_t)t * hs;
        for (int j = 0; j < hs; j++)
            out[j] += att[t] * ((float)vr[j] * vs[t]);
    }
}

static void dequantize_rows_scalar(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    for (int r = 0; r < n_rows; r++)
        for (int j = 0; j < hs; j++)
            out[(size_t)r * hs + j] = (float)q[(size_t)r * hs + j] * s[r];
}

const kernel_table kernels_scalar = {
    .isa = KERNELS_SCALAR,
    .cpu_supports = scalar_supported,
    .rows_q8 = rows_q8_scalar,
    .gemm_q8 = gemm_q8_scalar,
    .matvec_q8b = matvec_q8b_scalar,
    .q8b_to_rows = q8b_to_rows_scalar,
    .dot_blocks =
        {
            [GGML_TYPE_Q4_0] = kernels_scalar_dot_q4_0,
            [GGML_TYPE_Q4_1] = kernels_scalar_dot_q4_1,
            [GGML_TYPE_Q5_0] = kernels_scalar_dot_q5_0,
            [GGML_TYPE_Q5_1] = kernels_scalar_dot_q5_1,
            [GGML_TYPE_Q4_K] = kernels_scalar_dot_q4_k,
            [GGML_TYPE_Q5_K] = kernels_scalar_dot_q5_k,
            [GGML_TYPE_Q6_K] = kernels_scalar_dot_q6_k,
            [GGML_TYPE_MXFP4] = kernels_scalar_dot_mxfp4,
        },
    .rows_f32 = rows_f32_scalar,
    .dot_q8 = kernels_scalar_dot_q8,
    .quantize_row = quantize_row_scalar,
    .dequantize_rows = dequantize_rows_scalar,
    .unpack_row = kernels_unpack_row,
    .rows_dot = rows_dot_scalar,
    .rows_axpy = kernels_scalar_rows_axpy,
    .softmax = softmax_scalar,
    .swiglu = swiglu_scalar,
    .geglu = kernels_scalar_geglu,
    .attention_f32 = NULL, /* one query at a time over the row kernels (kernels.c) */
    .attention_q8 = attention_q8_scalar,
};
