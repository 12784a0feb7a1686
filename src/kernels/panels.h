/* kernels/panels.h — the panel layout of a GGUF Q8_0 tensor (tensor.panels), internal
 * to the kernels: its values repacked at load so that the decode kernel reads 16 rows
 * with one load and one multiply-add per 4 columns (kernels/panels.c packs them,
 * kernels/x86-avx512-panels.c reads them).
 *
 * Rows are taken 16 at a time (a panel; the last one padded with zero rows). Panel p
 * of a tensor with B = cols / 32 blocks a row is PANEL bytes at p * panel_bytes(B):
 *   scales: B x 16 IEEE halves, block b's 16 rows at 16 b (the file's halves, as they
 *           are), padded to a multiple of 64 bytes;
 *   values: B x 512 bytes, block b at 512 b: 8 pieces of 64 bytes, piece k holding
 *           values 4k..4k+3 of the block for row 0, then row 1, ... row 15, each value
 *           plus 128 (as unsigned bytes: what vpdpbusd multiplies unsigned).
 * So a piece is a multiply-add of 16 rows by 4 values of x (broadcast), and a block's
 * sums of 16 rows are one vector of int32: Σ (w + 128) x = Σ w x + 128 Σ x. */
#ifndef LLMCHAT_KERNELS_PANELS_H
#define LLMCHAT_KERNELS_PANELS_H

#include <stddef.h>
#include <stdint.h>

enum {
    PANEL_ROWS = 16,
    PANEL_BLOCK_VALUES = PANEL_ROWS * 32, /* bytes of one block's values in a panel */
};

/* Bytes of a panel's scales (padded to 64) and of a whole panel. */
static inline size_t panel_scale_bytes(size_t blocks)
{
    return (blocks * PANEL_ROWS * 2 + 63) / 64 * 64;
}
static inline size_t panel_bytes(size_t blocks)
{
    return panel_scale_bytes(blocks) + blocks * PANEL_BLOCK_VALUES;
}

#endif
