/* kernels/panels.h — the panel layouts (tensor.panels), internal to the kernels: a
 * matrix's values repacked at load so that a decode kernel reads several rows side by
 * side with one load and one multiply-add per 4 columns (kernels/panels.c packs them).
 * Two layouts: a GGUF Q8_0 tensor's (kernels/x86-avx512-panels.c reads them) and a
 * Q4_K tensor's (kernels/x86-k4-panels.c).
 *
 * GGUF Q8_0: rows are taken 16 at a time (a panel; the last one padded with zero rows).
 * Panel p of a tensor with B = cols / 32 blocks a row is PANEL bytes at
 * p * panel_bytes(B):
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

#include "quant.h"

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

/* Q4_K (a BLOCKS tensor of ggml type Q4_K): rows taken 8 at a time (a group); a
 * tensor's last rows % 8 get no group and stay blocks. A group is its 8 rows' bytes
 * reordered, the same size (8 x 144 bytes a super-block), so it can take their place:
 * group g of a tensor with B = cols / 256 super-blocks is B x K4_PANEL_BLOCK bytes at
 * g * k4_panel_bytes(B), super-block b at b * K4_PANEL_BLOCK:
 *   d, dmin:  8 IEEE halves each (the file's, rows 0..7 in order), bytes 0 and 16;
 *   scales:   the file's 12 bytes of 6-bit scales and mins, byte k of row i at 32 + 8 k + i
 *             (so bytes 0-3, 4-7 and 8-11 of the 8 rows are one 32-byte load each);
 *   values:   32 pieces of 32 bytes at 128: piece 8 p + k holds qs[32 p + 4 k ..
 *             32 p + 4 k + 3] of row 0, then row 1, ... row 7 (the file's bytes): its low
 *             nibbles are values 4 k..4 k + 3 of sub-block 2 p, its high ones of 2 p + 1.
 * So a piece's nibbles times 4 values of x (broadcast) are 8 rows' products at once, and
 * a sub-block's 8 sums land in the 8 lanes of one vector. */
enum {
    K4_PANEL_ROWS = TENSOR_K4_GROUP_ROWS,
    K4_PANEL_SCALES = 32,
    K4_PANEL_VALUES = 128,
    K4_PANEL_BLOCK = K4_PANEL_VALUES + 32 * 32, /* == 8 x 144, a super-block of 8 rows */
};

static inline size_t k4_panel_bytes(size_t superblocks)
{
    return superblocks * K4_PANEL_BLOCK;
}

#endif
