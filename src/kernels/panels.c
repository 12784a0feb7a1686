/* kernels/panels.c — packs a matrix's values into panels (kernels/panels.h): a GGUF
 * Q8_0 tensor's for the decode kernel of the AVX-512 tables, a Q4_K tensor's for the
 * x86 tables'; and tells the loader which matrices the chosen kernels read panels of.
 * The packing is a reordering: a Q8_0 panel's values are the file's plus 128, its
 * scales the file's halves, so a product read from panels has the same integer sums and
 * scales as one read from the blocks; a Q4_K panel holds the file's bytes, its 6-bit
 * scales and mins unpacked. */
#include "config.h"

#include "kernels.h"
#include "panels.h"
#include "table.h"

#include <string.h>

bool kernels_panels_wanted(void)
{
    return kernels_active()->matmul_q8p != NULL;
}

bool kernels_panels_read(const tensor *w)
{
    const kernel_table *k = kernels_active();
    if (w->type == TENSOR_Q8_0_BLOCKS)
        return k->matmul_q8p != NULL;
    return w->type == TENSOR_BLOCKS && w->btype == GGML_TYPE_Q4_K && k->matvec_k4p &&
           w->rows >= K4_PANEL_ROWS;
}

bool kernels_panels_by_default(void)
{
    return kernels_panels_wanted() && kernels_decode_streams() > 1;
}

size_t kernels_panels_bytes(const tensor *w)
{
    if (w->type == TENSOR_BLOCKS) /* Q4_K: whole groups only */
        return (size_t)(w->rows / K4_PANEL_ROWS) * k4_panel_bytes((size_t)w->cols / 256);
    size_t panels = ((size_t)w->rows + PANEL_ROWS - 1) / PANEL_ROWS;
    return panels * panel_bytes((size_t)w->cols / QUANT_BLOCK);
}

/* Panel p of w into dst (panel_bytes(blocks)). */
static void pack_panel(uint8_t *dst, const tensor *w, int p)
{
    const size_t blocks = (size_t)w->cols / QUANT_BLOCK;
    uint8_t *scales = dst, *values = dst + panel_scale_bytes(blocks);
    memset(scales, 0, panel_scale_bytes(blocks));
    for (int i = 0; i < PANEL_ROWS; i++) {
        int r = p * PANEL_ROWS + i;
        for (size_t b = 0; b < blocks; b++) {
            uint8_t *piece = values + b * PANEL_BLOCK_VALUES + 4 * (size_t)i;
            if (r >= w->rows) { /* padding: zero values (128 as unsigned), zero scale */
                for (int k = 0; k < 8; k++)
                    memset(piece + 64 * k, 0x80, 4);
                continue;
            }
            const uint8_t *block = tensor_block(w, r, (int)b);
            memcpy(scales + (b * PANEL_ROWS + (size_t)i) * 2, block, 2);
            for (int k = 0; k < 8; k++) { /* 4 values, each + 128 (the top bit flipped) */
                uint32_t v;
                memcpy(&v, block + 2 + 4 * k, 4);
                v ^= 0x80808080u;
                memcpy(piece + 64 * k, &v, 4);
            }
        }
    }
}

/* Group g of the Q4_K tensor w into dst (k4_panel_bytes(cols / 256)). */
static void pack_k4_group(uint8_t *dst, const tensor *w, int g)
{
    const int superblocks = w->cols / 256;
    for (int i = 0; i < K4_PANEL_ROWS; i++) {
        const uint8_t *row = tensor_row_blocks(w, g * K4_PANEL_ROWS + i);
        for (int b = 0; b < superblocks; b++) {
            const uint8_t *s = row + (size_t)b * 144; /* d, dmin, 12 bytes, 128 of qs */
            uint8_t *p = dst + (size_t)b * K4_PANEL_BLOCK;
            memcpy(p + 2 * i, s, 2);
            memcpy(p + 16 + 2 * i, s + 2, 2);
            for (int j = 0; j < 8; j++) {
                int sc, m;
                kernels_k4_scale_min(s + 4, j, &sc, &m);
                p[32 + 8 * j + i] = (uint8_t)sc;
                p[96 + 8 * j + i] = (uint8_t)m;
            }
            for (int piece = 0; piece < 32; piece++)
                memcpy(p + 160 + 32 * piece + 4 * i, s + 16 + 4 * piece, 4);
        }
    }
}

void kernels_panels_pack(uint8_t *dst, const tensor *w)
{
    if (w->type == TENSOR_BLOCKS) {
        const int groups = w->rows / K4_PANEL_ROWS;
        const size_t bytes = k4_panel_bytes((size_t)w->cols / 256);
#pragma omp parallel for schedule(static)
        for (int g = 0; g < groups; g++)
            pack_k4_group(dst + (size_t)g * bytes, w, g);
        return;
    }
    const int panels = (w->rows + PANEL_ROWS - 1) / PANEL_ROWS;
    const size_t bytes = panel_bytes((size_t)w->cols / QUANT_BLOCK);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < panels; p++)
        pack_panel(dst + (size_t)p * bytes, w, p);
}
