/* kernels/panels.c — packs a GGUF Q8_0 tensor's values into panels (kernels/panels.h),
 * the layout the decode kernel of the AVX-512 tables reads; and tells the loader
 * whether the chosen kernels read panels at all. The packing is a reordering: the
 * panel's values are the file's plus 128, its scales the file's halves, so a product
 * read from panels has the same integer sums and scales as one read from the blocks. */
#include "config.h"

#include "kernels.h"
#include "panels.h"
#include "table.h"

#include <string.h>

bool kernels_panels_wanted(void)
{
    return kernels_active()->matmul_q8p != NULL;
}

bool kernels_panels_by_default(void)
{
    return kernels_panels_wanted() && kernels_decode_streams() > 1;
}

size_t kernels_panels_bytes(const tensor *w)
{
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

void kernels_panels_pack(uint8_t *dst, const tensor *w)
{
    const int panels = (w->rows + PANEL_ROWS - 1) / PANEL_ROWS;
    const size_t bytes = panel_bytes((size_t)w->cols / QUANT_BLOCK);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < panels; p++)
        pack_panel(dst + (size_t)p * bytes, w, p);
}
