/* heatmap_view.c — the Attention pane's heatmap (a row of attention_views.c): rows are
 * query positions, columns key positions, each cell shaded by the weight the query gave
 * the key in the cursor's layer and head (or the mean over heads), relative to the
 * row's largest weight, linear or log; the first (BOS "sink") column can be masked,
 * keys outside a layer's sliding window are dashes. The window ends at the selected
 * (or newest) position; the axes are labelled with pieces, and a footer lists the keys
 * the selected query attends to most. Rows or columns that do not fit are marked with
 * scroll markers.
 *
 * Reads the pane's cursor (attention_views.h); owns a scratch row for the footer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_views.h"
#include "format.h"
#include "sampler.h"

typedef struct {
    const attn_cursor *c; /* the pane's */
    float *row;           /* (row_cap) scratch: one query's weights */
    int row_cap;
} heatmap_view;

static void *heatmap_new(const view_env *env)
{
    heatmap_view *hv = calloc(1, sizeof *hv);
    if (!hv)
        tui_die("out of memory");
    hv->c = env->host;
    return hv;
}

static void heatmap_free(void *state)
{
    heatmap_view *hv = state;
    if (!hv)
        return;
    free(hv->row);
    free(hv);
}

/* Weight the query of r gave key k in the chosen layer and head (or the mean of the
 * layer's heads). A Gated DeltaNet's effective attention is signed: its magnitude is
 * shown. */
static float weight(const attn_cursor *c, const step_record *r, int k)
{
    int nh = c->cfg->n_heads, q1 = r->pos + 1, own = source_layer_heads(c->src, c->layer);
    bool linear = source_recurrent(c->src, c->layer);
    const float *a = r->attn + (size_t)c->layer * nh * q1;
    if (!c->mean_heads) {
        float w = a[(size_t)c->head * q1 + k];
        return linear ? fabsf(w) : w;
    }
    float s = 0.0f;
    for (int h = 0; h < own; h++)
        s += linear ? fabsf(a[(size_t)h * q1 + k]) : a[(size_t)h * q1 + k];
    return s / (float)own;
}

/* The footer: the keys the selected query attends to most (true weights, BOS included). */
static void draw_strongest(heatmap_view *hv, const tui_screen *scr, WINDOW *w, int y, int width,
                           const step_record *r)
{
    if (!r || !r->attn)
        return;
    int n = r->pos + 1;
    if (n > hv->row_cap) {
        float *p = realloc(hv->row, (size_t)n * sizeof *p);
        if (!p)
            return;
        hv->row = p;
        hv->row_cap = n;
    }
    const attn_cursor *c = hv->c;
    float *row = hv->row;
    for (int k = 0; k < n; k++)
        row[k] = weight(c, r, k);
    int top[3];
    int m = sampler_top_k(row, n, 3, top);
    char line[256];
    size_t o = (size_t)snprintf(line, sizeof line, "pos %d %s", r->pos, scr->utf8 ? "\xe2\x86\x92" : "->");
    const int *toks = source_tokens(c->src);
    for (int i = 0; i < m && o < sizeof line; i++) {
        char piece[64], pct[16];
        source_token(c->src, toks[top[i]], piece, sizeof piece);
        tuifmt_prob(row[top[i]], pct, sizeof pct);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s %s@%d %s", i ? " " : "", piece, top[i], pct);
    }
    draw_text(scr, w, y, 1, width, line, A_DIM);
}

/* The view: queries x keys of one layer and head (or the head mean), inside the
 * pane's border. */
static void heatmap_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    heatmap_view *hv = state;
    const attn_cursor *c = hv->c;
    const model_config *cfg = c->cfg;
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    char line[256];
    int focus = selection_get(c->sel, c->src);
    const char *scale = c->log_scale ? "log" : "linear";
    const char *bos = !c->capture ? "  capture OFF (c)" : c->mask_bos ? "  BOS masked" : "";
    char wbuf[32], wshort[16] = "";
    const char *win_note = attn_window_note(c, c->layer, wbuf, sizeof wbuf);
    if (source_window(c->src, c->layer) > 0)
        snprintf(wshort, sizeof wshort, " w%d", source_window(c->src, c->layer));
    int own = source_layer_heads(c->src, c->layer);
    if (source_recurrent(c->src, c->layer)) /* no softmax: the values' weights through the state */
        win_note = width >= 90 ? "  linear attention (effective, |weight|)"
                   : width >= 60 ? "  linear attention (effective)" : " linear";
    if (width >= 44 && c->mean_heads)
        snprintf(line, sizeof line, "layer %d/%d  mean of %d heads%s  %s%s", c->layer + 1,
                 cfg->n_layers, own, win_note, scale, bos);
    else if (width >= 44)
        snprintf(line, sizeof line, "layer %d/%d  head %d/%d%s  %s%s", c->layer + 1, cfg->n_layers,
                 c->head + 1, own, win_note, scale, bos);
    else if (c->mean_heads)
        snprintf(line, sizeof line, "L%d/%d mean of %d%s %s%s", c->layer + 1, cfg->n_layers,
                 own, source_recurrent(c->src, c->layer) ? " lin" : wshort,
                 c->log_scale ? "log" : "lin", !c->capture ? " off" : c->mask_bos ? " -BOS" : "");
    else
        snprintf(line, sizeof line, "L%d/%d H%d/%d%s %s%s", c->layer + 1, cfg->n_layers,
                 c->head + 1, own, source_recurrent(c->src, c->layer) ? " lin" : wshort,
                 c->log_scale ? "log" : "lin", !c->capture ? " off" : c->mask_bos ? " -BOS" : "");
    draw_text(scr, w, 1, 1, width, line, A_BOLD);
    if (focus < 0) {
        if (h >= 2)
            draw_text(scr, w, 2, 1, width, "no tokens yet", A_DIM);
        return;
    }
    /* the keys' labels and the footer stay down to a grid of one row */
    int label_rows = h >= 14 ? 3 : h >= 4 ? 1 : 0;
    int footer = h >= 4 ? 1 : 0;
    int lw = width >= 30 ? 8 : width >= 16 ? 4 : 0;
    int rows_avail = h - 1 - label_rows - footer, cols_avail = width - lw;
    if (footer)
        draw_strongest(hv, scr, w, h, width, source_record(c->src, focus));
    tuifmt_heat_window win;
    tuifmt_heat_window_compute(source_count(c->src), focus, rows_avail, cols_avail, &win);
    if (win.n_rows == 0 || win.n_cols == 0)
        return;
    const int *toks = source_tokens(c->src);
    int gy = 2 + label_rows, gx = 1 + lw; /* grid origin */
    /* earlier keys and queries than fit: markers in the gap before the grid */
    if (lw > 0 && win.col0 > 0)
        draw_scroll_mark(scr, w, label_rows > 0 ? 2 : gy, gx - 1, '<');
    if (lw > 0 && win.row0 > 0 && (label_rows > 0 || win.col0 == 0))
        draw_scroll_mark(scr, w, gy, gx - 1, '^');

    /* column labels: each key's piece written downwards, one character per row */
    for (int col = 0; col < win.n_cols && label_rows > 0; col++) {
        int k = win.col0 + col;
        char piece[64];
        source_token(c->src, toks[k], piece, sizeof piece);
        size_t off = 0, len = strlen(piece);
        attr_t a = k == focus ? A_BOLD | A_UNDERLINE : A_DIM;
        for (int i = 0; i < label_rows && off < len; i++) {
            int b, cw = tuifmt_char_width(piece + off, len - off, &b);
            wattron(w, a);
            if (cw == 1)
                mvwaddnstr(w, 2 + i, gx + col, piece + off, b);
            else
                mvwaddch(w, 2 + i, gx + col, '?');
            wattroff(w, a);
            off += (size_t)b;
        }
    }

    for (int rr = 0; rr < win.n_rows; rr++) {
        int q = win.row0 + rr, y = gy + rr;
        const step_record *r = source_record(c->src, q);
        if (lw > 0) {
            char piece[64];
            source_token(c->src, toks[q], piece, sizeof piece);
            draw_text(scr, w, y, 1, lw - 1, piece, q == focus ? A_REVERSE : A_DIM);
        }
        if (!r || !r->attn) {
            draw_text(scr, w, y, gx, win.n_cols, "(not kept)", A_DIM);
            continue;
        }
        float ref = 0.0f;
        for (int k = c->mask_bos ? 1 : 0; k <= q; k++) {
            float v = weight(c, r, k);
            if (v > ref)
                ref = v;
        }
        int first = attn_first_visible(c, c->layer, q);
        for (int col = 0; col < win.n_cols; col++) {
            int k = win.col0 + col;
            if (k > q)
                break; /* causal: the query cannot see later keys */
            if (k < first) { /* outside the layer's sliding window */
                attn_draw_outside(scr, w, y, gx + col);
                continue;
            }
            if (k == 0 && c->mask_bos) {
                wattron(w, A_DIM);
                mvwaddstr(w, y, gx + col, scr->utf8 ? "\xc2\xb7" : ".");
                wattroff(w, A_DIM);
                continue;
            }
            draw_shade(scr, w, y, gx + col, tuifmt_shade(weight(c, r, k), ref, scr->n_shades, c->log_scale));
        }
    }
}

const view_ops heatmap_view_ops = {
    .name = "heatmap",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .new = heatmap_new,
    .free = heatmap_free,
    .draw = heatmap_draw,
};
