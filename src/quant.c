/* quant.c — Q8_0 quantization and the matrix kernels (see quant.h).
 *
 * Owns the kernel dispatch table. The plain-C kernels here are the reference every
 * SIMD kernel is tested against. Parallelism: matvec/matmul split output rows over
 * OpenMP threads; the per-row dot products are single-threaded. */
#include "quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef float (*dot_q8_fn)(const int8_t *a, const float *as, const int8_t *b,
                           const float *bs, int len, int group);

static quant_isa selected_isa = QUANT_ISA_SCALAR;
static dot_q8_fn dot_q8 = quant_dot_q8_ref;

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
    return isa == QUANT_ISA_SCALAR;
}

quant_isa quant_init(quant_isa wanted)
{
    (void)wanted;
    selected_isa = QUANT_ISA_SCALAR;
    dot_q8 = quant_dot_q8_ref;
    return selected_isa;
}

int quant_stride(int cols, int group)
{
    if (group <= 0)
        return cols;
    return (cols + group - 1) / group * group;
}

void quant_quantize_row(int8_t *q, float *scale, const float *x, int n, int stride, int group)
{
    for (int g = 0; g < stride / group; g++) {
        int lo = g * group;
        int hi = lo + group < n ? lo + group : n;
        float amax = 0.0f;
        for (int i = lo; i < hi; i++) {
            float a = fabsf(x[i]);
            if (a > amax)
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

float quant_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                   int len, int group)
{
    return dot_q8(a, as, b, bs, len, group);
}

static float dot_f32(const float *a, const float *b, int n)
{
    float sum = 0.0f;
    for (int i = 0; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

void quant_matvec(float *out, const tensor *w, const float *x, const qbatch *xq)
{
    quant_matmul(out, w, x, xq, 1);
}

void quant_matmul(float *out, const tensor *w, const float *x, const qbatch *xq, int n)
{
    int rows = w->rows;
    if (w->type == TENSOR_F32) {
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < n; i++)
                out[(size_t)i * rows + r] = dot_f32(w->f + (size_t)r * w->stride,
                                                    x + (size_t)i * w->cols, w->cols);
        return;
    }
    int groups = w->stride / w->group;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        const int8_t *wr = w->q + (size_t)r * w->stride;
        const float *ws = w->scale + (size_t)r * groups;
        for (int i = 0; i < n; i++)
            out[(size_t)i * rows + r] =
                dot_q8(wr, ws, xq->q + (size_t)i * xq->stride, xq->scale + (size_t)i * groups,
                       w->stride, w->group);
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
