/* bench/random_blocks.h — random inputs for the kernel timing tools (bench-block-dots,
 * bench-gemm): a xorshift stream, and rows of random ggml blocks whose half scales are
 * small and finite. Part of the benchmark; not thread-safe (one stream). */
#ifndef LLMCHAT_BENCH_RANDOM_BLOCKS_H
#define LLMCHAT_BENCH_RANDOM_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "ggml_type.h"

/* The next 32 bits of the stream. */
uint32_t random_u32(void);

/* rows x cols (a multiple of the type's block) of random blocks of `type`, 64-byte
 * aligned, every half scale about 2^-8; *row_bytes the bytes of a row. NULL when out of
 * memory; free() it. */
uint8_t *random_rows(ggml_type type, int rows, int cols, size_t *row_bytes);

#endif
