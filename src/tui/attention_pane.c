/* attention_pane.c — the Attention pane: a heatmap of one layer's attention.
 *
 * Rows are query positions, columns key positions, each cell shaded by the weight
 * the query gave the key in the selected layer and head (or the mean over heads),
 * relative to the row's largest weight, on a linear or log scale; the first (BOS
 * "sink") column can be masked so the rest stand out. The window ends at the
 * selected (or newest) position. Axes are labelled with token pieces: the rows on
 * the left, the columns vertically above. 'c' turns the engine's capture off and on
 * (positions run without it show as not captured). Reads the step records' captured
 * attention; owns only the view settings' keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "format.h"

/* Weight the query of r gave key k in the chosen layer and head (or head mean). */
static float weight(const tui *t, const step_record *r, int k)
{
    int nh = t->m->config.n_heads, q1 = r->pos + 1;
    const float *a = r->attn + (size_t)t->layer * nh * q1;
    if (!t->mean_heads)
        return a[(size_t)t->head * q1 + k];
    float s = 0.0f;
    for (int h = 0; h < nh; h++)
        s += a[(size_t)h * q1 + k];
    return s / (float)nh;
}

static void label_piece(const tui *t, int id, char *buf, size_t size)
{
    tuifmt_piece(tokenizer_piece(t->tok, id), tokenizer_is_control(t->tok, id), buf, size);
}

/* The footer: the keys the selected query attends to most (true weights, BOS included). */
static void draw_strongest(tui *t, WINDOW *w, int y, int width, const step_record *r)
{
    if (!r || !r->attn)
        return;
    int n = r->pos + 1;
    if (n > t->attn_row_cap) {
        float *p = realloc(t->attn_row, (size_t)n * sizeof *p);
        if (!p)
            return;
        t->attn_row = p;
        t->attn_row_cap = n;
    }
    float *row = t->attn_row;
    for (int k = 0; k < n; k++)
        row[k] = weight(t, r, k);
    int top[3];
    int m = tuifmt_top_indices(row, n, 3, top);
    char line[256];
    size_t o = (size_t)snprintf(line, sizeof line, "pos %d %s", r->pos, t->utf8 ? "\xe2\x86\x92" : "->");
    const int *toks = engine_tokens(t->e);
    for (int i = 0; i < m && o < sizeof line; i++) {
        char piece[64], pct[16];
        label_piece(t, toks[top[i]], piece, sizeof piece);
        tuifmt_prob(row[top[i]], pct, sizeof pct);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s %s@%d %s", i ? " " : "", piece, top[i], pct);
    }
    draw_text(t, w, y, 1, width, line, A_DIM);
}

void attn_draw(tui *t)
{
    WINDOW *w = t->w_attn;
    if (!w)
        return;
    draw_box(t, w, "Attention", t->focus == FOCUS_ATTN);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    if (h <= 0 || width <= 0)
        return;
    const model_config *cfg = &t->m->config;
    char line[256];
    int focus = tui_selected(t);
    const char *scale = t->log_scale ? "log" : "linear";
    const char *bos = !t->capture ? "  capture OFF (c)" : t->mask_bos ? "  BOS masked" : "";
    if (width >= 44 && t->mean_heads)
        snprintf(line, sizeof line, "layer %d/%d  mean of %d heads  %s%s", t->layer + 1, cfg->n_layers,
                 cfg->n_heads, scale, bos);
    else if (width >= 44)
        snprintf(line, sizeof line, "layer %d/%d  head %d/%d  %s%s", t->layer + 1, cfg->n_layers, t->head + 1,
                 cfg->n_heads, scale, bos);
    else if (t->mean_heads)
        snprintf(line, sizeof line, "L%d/%d mean of %d %s%s", t->layer + 1, cfg->n_layers, cfg->n_heads,
                 t->log_scale ? "log" : "lin", !t->capture ? " off" : t->mask_bos ? " -BOS" : "");
    else
        snprintf(line, sizeof line, "L%d/%d H%d/%d %s%s", t->layer + 1, cfg->n_layers, t->head + 1, cfg->n_heads,
                 t->log_scale ? "log" : "lin", !t->capture ? " off" : t->mask_bos ? " -BOS" : "");
    draw_text(t, w, 1, 1, width, line, A_BOLD);
    if (focus < 0) {
        if (h >= 2)
            draw_text(t, w, 2, 1, width, "no tokens yet", A_DIM);
        return;
    }
    int label_rows = h >= 14 ? 3 : h >= 8 ? 1 : 0;
    int footer = h >= 10 ? 1 : 0;
    int lw = width >= 30 ? 8 : width >= 16 ? 4 : 0;
    int rows_avail = h - 1 - label_rows - footer, cols_avail = width - lw;
    if (footer)
        draw_strongest(t, w, h, width, engine_record(t->e, focus));
    tuifmt_heat_window win;
    tuifmt_heat_window_compute(engine_pos(t->e), focus, rows_avail, cols_avail, &win);
    if (win.n_rows == 0 || win.n_cols == 0)
        return;
    const int *toks = engine_tokens(t->e);
    int gy = 2 + label_rows, gx = 1 + lw; /* grid origin */

    /* column labels: each key's piece written downwards, one character per row */
    for (int c = 0; c < win.n_cols && label_rows > 0; c++) {
        int k = win.col0 + c;
        char piece[64];
        label_piece(t, toks[k], piece, sizeof piece);
        size_t off = 0, len = strlen(piece);
        attr_t a = k == focus ? A_BOLD | A_UNDERLINE : A_DIM;
        for (int i = 0; i < label_rows && off < len; i++) {
            int b, cw = tuifmt_char_width(piece + off, len - off, &b);
            wattron(w, a);
            if (cw == 1)
                mvwaddnstr(w, 2 + i, gx + c, piece + off, b);
            else
                mvwaddch(w, 2 + i, gx + c, '?');
            wattroff(w, a);
            off += (size_t)b;
        }
    }

    for (int rr = 0; rr < win.n_rows; rr++) {
        int q = win.row0 + rr, y = gy + rr;
        const step_record *r = engine_record(t->e, q);
        if (lw > 0) {
            char piece[64];
            label_piece(t, toks[q], piece, sizeof piece);
            draw_text(t, w, y, 1, lw - 1, piece, q == focus ? A_REVERSE : A_DIM);
        }
        if (!r || !r->attn) {
            draw_text(t, w, y, gx, win.n_cols, "(not captured)", A_DIM);
            continue;
        }
        float ref = 0.0f;
        for (int k = t->mask_bos ? 1 : 0; k <= q; k++) {
            float v = weight(t, r, k);
            if (v > ref)
                ref = v;
        }
        for (int c = 0; c < win.n_cols; c++) {
            int k = win.col0 + c;
            if (k > q)
                break; /* causal: the query cannot see later keys */
            if (k == 0 && t->mask_bos) {
                wattron(w, A_DIM);
                mvwaddstr(w, y, gx + c, t->utf8 ? "\xc2\xb7" : ".");
                wattroff(w, A_DIM);
                continue;
            }
            draw_shade(t, w, y, gx + c, tuifmt_shade(weight(t, r, k), ref, t->n_shades, t->log_scale));
        }
    }
}

bool attn_act(tui *t, key_action a)
{
    const model_config *cfg = &t->m->config;
    switch (a) {
    case ACT_LAYER_NEXT: t->layer = (t->layer + 1) % cfg->n_layers; break;
    case ACT_LAYER_PREV: t->layer = (t->layer + cfg->n_layers - 1) % cfg->n_layers; break;
    case ACT_HEAD_NEXT: t->head = (t->head + 1) % cfg->n_heads; t->mean_heads = false; break;
    case ACT_HEAD_PREV: t->head = (t->head + cfg->n_heads - 1) % cfg->n_heads; t->mean_heads = false; break;
    case ACT_HEAD_MEAN: t->mean_heads = !t->mean_heads; break;
    case ACT_LOG_SCALE: t->log_scale = !t->log_scale; break;
    case ACT_MASK_BOS: t->mask_bos = !t->mask_bos; break;
    case ACT_CAPTURE: /* capturing costs decode speed on small models: let the user choose */
        t->capture = !t->capture;
        engine_set_capture(t->e, t->capture);
        break;
    case ACT_SEL_PREV:
    case ACT_SEL_NEXT:
    case ACT_SEL_BACK10:
    case ACT_SEL_AHEAD10:
    case ACT_SEL_FIRST:
    case ACT_SEL_NEWEST:
        return tokens_act(t, a); /* the selection is shared with Tokens */
    default:
        return false;
    }
    t->dirty |= DIRTY_ATTN;
    return true;
}
