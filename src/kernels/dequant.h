/* dequant.h — decoding ggml tensor data to fp32: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0, MXFP4 and the K types Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
 *
 * Each value comes out as the reference implementation computes it in fp32 (the same
 * operations in the same order), so results match llama.cpp's bit for bit. Plain C,
 * single-threaded and reentrant: callers parallelise over rows. Owns nothing; reads
 * blocks at any alignment. Other types (IQ*, Q8_K, ...) are not decoded:
 * dequant_supported says which. */
#ifndef LLMCHAT_DEQUANT_H
#define LLMCHAT_DEQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True for the ggml types this module decodes. */
bool dequant_supported(uint32_t type);

/* Values [first, first + n) of a tensor of `type` whose data (its blocks, laid over
 * the flattened values) starts at `data`, written to out (n). A range may start and
 * end inside blocks: rows whose length is not a multiple of the block (rows of 172
 * in 32-value blocks) straddle blocks, and a row is such a range. type must be
 * supported. */
void dequant_range(uint32_t type, const void *data, uint64_t first, float *out, size_t n);

#endif
