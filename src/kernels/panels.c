/* kernels/panels.c — packs a matrix's values into panels (kernels/panels.h): a GGUF
 * Q8_0 tensor's for the decode kernel of the AVX-512 tables, a Q4_K tensor's for the
 * x86 tables'; and tells the loader which matrices the chosen kernels read panels of.
 * The packing is a reordering: a Q8_0 panel's values are the file's plus 128, its
 * scales the file's halves, so a product read from panels has the same integer sums and
 * scales as one read from the blocks; a Q4_K group is its 8 rows' bytes reordered, the
 * same size, so it may take their place, and any row of it is gathered back
 * (tensor_row_read) for the readers that want the file's blocks. */
#include "config.h"

#include "ggml_type.h"
#include "kernels.h"
#include "panels.h"
#include "table.h"

#include <stdlib.h>
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

bool kernels_k4_panels_by_default(void)
{
    const kernel_table *k = kernels_active();
    return k->matvec_k4p != NULL;
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

/* The 8 rows of a Q4_K group (rows, row_bytes apart: the file's blocks) into dst
 * (k4_panel_bytes(superblocks)). */
static void pack_k4_group(uint8_t *dst, const uint8_t *rows, size_t row_bytes, int superblocks)
{
    for (int i = 0; i < K4_PANEL_ROWS; i++) {
        const uint8_t *row = rows + (size_t)i * row_bytes;
        for (int b = 0; b < superblocks; b++) {
            /* d, dmin, 12 bytes of scales and mins, 128 of qs */
            const uint8_t *s = row + (size_t)b * TENSOR_K4_BLOCK_BYTES;
            uint8_t *p = dst + (size_t)b * K4_PANEL_BLOCK;
            memcpy(p + 2 * i, s, 2);
            memcpy(p + 16 + 2 * i, s + 2, 2);
            for (int k = 0; k < 12; k++)
                p[K4_PANEL_SCALES + 8 * k + i] = s[4 + k];
            for (int piece = 0; piece < 32; piece++)
                memcpy(p + K4_PANEL_VALUES + 32 * piece + 4 * i, s + 16 + 4 * piece, 4);
        }
    }
}

/* pack_k4_group's inverse for one row: super-block b of row i of the group at `group`,
 * the file's 144 bytes, into out. */
static void k4_group_block(uint8_t *out, const uint8_t *group, int i, int b)
{
    const uint8_t *p = group + (size_t)b * K4_PANEL_BLOCK;
    memcpy(out, p + 2 * i, 2);
    memcpy(out + 2, p + 16 + 2 * i, 2);
    for (int k = 0; k < 12; k++)
        out[4 + k] = p[K4_PANEL_SCALES + 8 * k + i];
    for (int piece = 0; piece < 32; piece++)
        memcpy(out + 16 + 4 * piece, p + K4_PANEL_VALUES + 32 * piece + 4 * i, 4);
}

const uint8_t *tensor_blocks_read(const tensor *t, int r, int b, int n, uint8_t *buf)
{
    if (!tensor_row_in_panels(t, r))
        return tensor_row_blocks(t, r) + (size_t)b * ggml_type_get((uint32_t)t->btype)->bytes;
    const uint8_t *group =
        t->panels + (size_t)(r / K4_PANEL_ROWS) * k4_panel_bytes((size_t)t->cols / 256);
    for (int i = 0; i < n; i++)
        k4_group_block(buf + (size_t)i * TENSOR_K4_BLOCK_BYTES, group, r % K4_PANEL_ROWS, b + i);
    return buf;
}

const uint8_t *tensor_row_read(const tensor *t, int r, uint8_t *buf)
{
    if (!tensor_row_in_panels(t, r))
        return tensor_row_blocks(t, r);
    return tensor_blocks_read(t, r, 0, t->cols / 256, buf);
}

/* A Q4_K tensor's groups into dst; dst may be w's blocks (in place): then each group's
 * rows are copied aside first, a group taking exactly its rows' bytes. */
static bool pack_k4(uint8_t *dst, const tensor *w)
{
    const int groups = w->rows / K4_PANEL_ROWS, superblocks = w->cols / 256;
    const size_t bytes = k4_panel_bytes((size_t)superblocks);
    const bool in_place = dst == w->blocks;
    bool ok = true;
#pragma omp parallel
    {
        uint8_t *aside = in_place ? malloc(bytes) : NULL;
        if (in_place && !aside) {
#pragma omp atomic write
            ok = false;
        }
#pragma omp for schedule(static)
        for (int g = 0; g < groups; g++) {
            const uint8_t *rows = tensor_row_blocks(w, g * K4_PANEL_ROWS);
            if (in_place && !aside)
                continue;
            if (in_place)
                rows = memcpy(aside, rows, bytes);
            pack_k4_group(dst + (size_t)g * bytes, rows, w->row_bytes, superblocks);
        }
        free(aside);
    }
    return ok;
}

bool kernels_panels_pack(uint8_t *dst, const tensor *w)
{
    if (w->type == TENSOR_BLOCKS)
        return pack_k4(dst, w);
    const int panels = (w->rows + PANEL_ROWS - 1) / PANEL_ROWS;
    const size_t bytes = panel_bytes((size_t)w->cols / QUANT_BLOCK);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < panels; p++)
        pack_panel(dst + (size_t)p * bytes, w, p);
    return true;
}
