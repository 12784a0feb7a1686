/* bench/random_blocks.c — random inputs for the kernel timing tools (see
 * random_blocks.h). */
#include "random_blocks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 0x9e3779b97f4a7c15ull;

uint32_t random_u32(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 11);
}

/* The byte offsets of a block's half scales (d, and dmin or m; -1: none). */
static void half_offsets(ggml_type type, int at[2])
{
    at[0] = type == GGML_TYPE_Q6_K ? 208 : type == GGML_TYPE_MXFP4 ? -1 : 0; /* MXFP4: E8M0 */
    at[1] = type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1 || type == GGML_TYPE_Q4_K ||
                    type == GGML_TYPE_Q5_K
                ? 2
                : -1;
}

uint8_t *random_rows(ggml_type type, int rows, int cols, size_t *row_bytes)
{
    const ggml_type_info *info = ggml_type_get(type);
    *row_bytes = (size_t)cols / info->block * info->bytes;
    size_t bytes = *row_bytes * rows;
    uint8_t *b = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!b)
        return NULL;
    for (size_t i = 0; i < bytes; i++)
        b[i] = (uint8_t)random_u32();
    int at[2];
    half_offsets(type, at);
    for (size_t blk = 0; blk < bytes / info->bytes; blk++)
        for (int h = 0; h < 2; h++)
            if (at[h] >= 0) {
                uint16_t v = ggml_f32_to_fp16(
                    ldexpf(1.0f + (float)(random_u32() % 1000) / 2000.0f, -8));
                memcpy(b + blk * info->bytes + at[h], &v, 2);
            }
    if (type == GGML_TYPE_MXFP4) /* exponents near 2^0, as a model's: no subnormals, no inf */
        for (size_t blk = 0; blk < bytes / info->bytes; blk++)
            b[blk * info->bytes] = (uint8_t)(120 + random_u32() % 12);
    return b;
}
