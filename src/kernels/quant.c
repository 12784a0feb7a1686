/* quant.c — the Q8_0 format: strides, quantizing rows and activation batches,
 * dequantizing rows of every tensor type (see quant.h; the ggml block types through
 * dequant.h).
 *
 * Quantizing and the KV cache's dequantizing go through the chosen kernel table (the
 * AVX-512 quantizer gives the scalar one's bytes); everything else here is plain C.
 * Owns the qbatch buffers it allocates; no tensors. */
#include "quant.h"

#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "table.h"

int quant_stride(int cols, int group)
{
    if (group <= 0)
        return cols;
    return (cols + group - 1) / group * group;
}

void quant_quantize_row(int8_t *q, float *scale, const float *x, int n, int stride, int group)
{
    if (group % 16 == 0)
        kernels_active()->quantize_row(q, scale, x, n, stride, group);
    else
        kernels_scalar.quantize_row(q, scale, x, n, stride, group);
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

float quant_half_to_float(uint16_t h)
{
    return ggml_fp16_to_f32(h);
}

void quant_dequantize_row(float *out, const tensor *w, int row)
{
    if (w->type == TENSOR_F32) {
        memcpy(out, w->f + (size_t)row * w->stride, sizeof(float) * w->cols);
        return;
    }
    if (tensor_row_in_panels(w, row)) { /* a Q4_K block at a time, gathered */
        uint8_t block[TENSOR_K4_BLOCK_BYTES];
        for (int b = 0; b < w->cols / 256; b++)
            dequant_range((uint32_t)w->btype, tensor_blocks_read(w, row, b, 1, block), 0,
                          out + (size_t)b * 256, 256);
        return;
    }
    if (w->type == TENSOR_BLOCKS) {
        dequant_range((uint32_t)w->btype, tensor_row_blocks(w, row), 0, out, (size_t)w->cols);
        return;
    }
    if (w->type == TENSOR_Q8_0_BLOCKS) {
        for (int g = 0; g < w->cols / QUANT_BLOCK; g++) {
            const uint8_t *b = tensor_block(w, row, g);
            float s = quant_block_scale(b);
            const int8_t *q = quant_block_values(b);
            for (int i = 0; i < QUANT_BLOCK; i++)
                out[g * QUANT_BLOCK + i] = q[i] * s;
        }
        return;
    }
    const int8_t *q = w->q + (size_t)row * w->stride;
    const float *s = w->scale + (size_t)row * (w->stride / w->group);
    for (int i = 0; i < w->cols; i++)
        out[i] = q[i] * s[i / w->group];
}

void quant_dequantize_rows(float *out, const int8_t *q, const float *s, int n_rows, int hs)
{
    kernels_active()->dequantize_rows(out, q, s, n_rows, hs);
}
