/* test_tensors.h — random weight tensors for the GEMM tables' tests (test_kernels_amx,
 * test_kernels_avx_vnni): Q8_0 rows quantized from random values, ggml's Q8_0 blocks,
 * and random bytes in the block types with every half scale near 2^-8, all drawn from
 * test_rng.h so that each test sees the same values on every machine. */
#ifndef LLMCHAT_TEST_TENSORS_H
#define LLMCHAT_TEST_TENSORS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "quant.h"
#include "test_rng.h"

/* A random Q8_0 tensor (quantized from values in [-0.5, 0.5]). */
typedef struct {
    tensor t;
    int8_t *q;
    float *scale;
} q8_tensor;

static inline q8_tensor q8_new(int rows, int cols, int group)
{
    q8_tensor w;
    int stride = quant_stride(cols, group);
    float *f = malloc(sizeof(float) * cols);
    w.q = malloc((size_t)rows * stride);
    w.scale = malloc(sizeof(float) * (size_t)rows * (stride / group));
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < cols; i++)
            f[i] = 0.5f * rng_f();
        quant_quantize_row(w.q + (size_t)r * stride, w.scale + (size_t)r * (stride / group), f,
                           cols, stride, group);
    }
    free(f);
    w.t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = stride,
                   .group = group, .q = w.q, .scale = w.scale};
    return w;
}

static inline void q8_free(q8_tensor *w)
{
    free(w->q);
    free(w->scale);
}

/* rows x cols of ggml's 34-byte Q8_0 blocks: half scales of about 2^-8, values in
 * [-127, 127]. */
static inline uint8_t *q8_blocks_random(int rows, int cols)
{
    int blocks = rows * (cols / 32);
    uint8_t *b = malloc((size_t)blocks * QUANT_BLOCK_BYTES);
    for (int i = 0; i < blocks; i++) {
        uint8_t *blk = b + (size_t)i * QUANT_BLOCK_BYTES;
        uint16_t h = ggml_f32_to_fp16(ldexpf(1.0f + 0.5f * rng_f(), -8));
        memcpy(blk, &h, 2);
        for (int j = 0; j < 32; j++)
            blk[2 + j] = (uint8_t)(int8_t)((int)(rng_u32() % 255) - 127);
    }
    return b;
}

/* The block types the GEMM tests take through kernels_gemm's BLOCKS path (one with an
 * offset, one with mins, the K-quants with mins, Q6_K and its two parts). */
enum { BLOCK_TEST_TYPES = 5 };
static const ggml_type block_test_types[BLOCK_TEST_TYPES] = {
    GGML_TYPE_Q4_0, GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
};

static inline size_t blocks_row_bytes(ggml_type type, int cols)
{
    const ggml_type_info *info = ggml_type_get(type);
    return (size_t)cols / info->block * info->bytes;
}

/* rows x cols of random bytes in blocks of `type`, every fp16 half in a block (d, dmin,
 * Q6_K's d) about 2^-8. */
static inline uint8_t *blocks_random(ggml_type type, int rows, int cols)
{
    int halves[2] = {0, -1}; /* byte offsets of the block's halves, -1: none */
    if (type == GGML_TYPE_Q5_1 || type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K)
        halves[1] = 2;
    else if (type == GGML_TYPE_Q6_K)
        halves[0] = 208;
    const ggml_type_info *info = ggml_type_get(type);
    size_t bytes = blocks_row_bytes(type, cols) * rows;
    uint8_t *b = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        b[i] = (uint8_t)rng_u32();
    for (size_t blk = 0; blk < bytes / info->bytes; blk++)
        for (int h = 0; h < 2; h++)
            if (halves[h] >= 0) {
                uint16_t v = ggml_f32_to_fp16(ldexpf(1.0f + 0.5f * rng_f(), -8));
                memcpy(b + blk * info->bytes + halves[h], &v, 2);
            }
    return b;
}

#endif
