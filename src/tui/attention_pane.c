/* attention_pane.c — the Attention pane (see attention_pane.h).
 *
 * Rows are query positions, columns key positions, each cell shaded by the weight
 * the query gave the key in the selected layer and head (or the mean over heads),
 * relative to the row's largest weight, on a linear or log scale; the first (BOS
 * "sink") column can be masked so the rest stand out. The window ends at the
 * selected (or newest) position. Axes are labelled with token pieces: the rows on
 * the left, the columns vertically above. 'c' turns the engine's capture off and on
 * (positions run without it show as not captured). Reads the step records' captured
 * attention; owns the view settings and a scratch row. */
#include "attention_pane.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sampler.h"
#include "format.h"

struct attn_pane {
    engine *e;          /* its capture is switched by 'c' */
    const model_config *cfg;
    const tokenizer *tok;
    tui_selection *sel; /* shared with Tokens */
    int layer, head;
    bool mean_heads, log_scale, mask_bos;
    bool capture;       /* the engine keeps attention rows (off: faster) */
    float *row;         /* (row_cap) scratch: one query's weights */
    int row_cap;
};

attn_pane *attn_new(engine *e, tui_selection *sel)
{
    attn_pane *ap = calloc(1, sizeof *ap);
    if (!ap)
        tui_die("out of memory");
    ap->e = e;
    ap->cfg = &engine_model(e)->config;
    ap->tok = engine_tokenizer(e);
    ap->sel = sel;
    ap->mask_bos = true;
    ap->capture = true;
    return ap;
}

void attn_free(attn_pane *ap)
{
    if (!ap)
        return;
    free(ap->row);
    free(ap);
}

/* Weight the query of r gave key k in the chosen layer and head (or head mean). */
static float weight(const attn_pane *ap, const step_record *r, int k)
{
    int nh = ap->cfg->n_heads, q1 = r->pos + 1;
    const float *a = r->attn + (size_t)ap->layer * nh * q1;
    if (!ap->mean_heads)
        return a[(size_t)ap->head * q1 + k];
    float s = 0.0f;
    for (int h = 0; h < nh; h++)
        s += a[(size_t)h * q1 + k];
    return s / (float)nh;
}

/* The footer: the keys the selected query attends to most (true weights, BOS included). */
static void draw_strongest(attn_pane *ap, const tui_screen *scr, WINDOW *w, int y, int width,
                           const step_record *r)
{
    if (!r || !r->attn)
        return;
    int n = r->pos + 1;
    if (n > ap->row_cap) {
        float *p = realloc(ap->row, (size_t)n * sizeof *p);
        if (!p)
            return;
        ap->row = p;
        ap->row_cap = n;
    }
    float *row = ap->row;
    for (int k = 0; k < n; k++)
        row[k] = weight(ap, r, k);
    int top[3];
    int m = sampler_top_k(row, n, 3, top);
    char line[256];
    size_t o = (size_t)snprintf(line, sizeof line, "pos %d %s", r->pos, scr->utf8 ? "\xe2\x86\x92" : "->");
    const int *toks = engine_tokens(ap->e);
    for (int i = 0; i < m && o < sizeof line; i++) {
        char piece[64], pct[16];
        tuifmt_token(ap->tok, toks[top[i]], piece, sizeof piece);
        tuifmt_prob(row[top[i]], pct, sizeof pct);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s %s@%d %s", i ? " " : "", piece, top[i], pct);
    }
    draw_text(scr, w, y, 1, width, line, A_DIM);
}

static void attn_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    attn_pane *ap = state;
    draw_box(scr, w, attn_pane_ops.title, focused);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    if (h <= 0 || width <= 0)
        return;
    const model_config *cfg = ap->cfg;
    char line[256];
    int focus = selection_get(ap->sel, ap->e);
    const char *scale = ap->log_scale ? "log" : "linear";
    const char *bos = !ap->capture ? "  capture OFF (c)" : ap->mask_bos ? "  BOS masked" : "";
    if (width >= 44 && ap->mean_heads)
        snprintf(line, sizeof line, "layer %d/%d  mean of %d heads  %s%s", ap->layer + 1, cfg->n_layers,
                 cfg->n_heads, scale, bos);
    else if (width >= 44)
        snprintf(line, sizeof line, "layer %d/%d  head %d/%d  %s%s", ap->layer + 1, cfg->n_layers, ap->head + 1,
                 cfg->n_heads, scale, bos);
    else if (ap->mean_heads)
        snprintf(line, sizeof line, "L%d/%d mean of %d %s%s", ap->layer + 1, cfg->n_layers, cfg->n_heads,
                 ap->log_scale ? "log" : "lin", !ap->capture ? " off" : ap->mask_bos ? " -BOS" : "");
    else
        snprintf(line, sizeof line, "L%d/%d H%d/%d %s%s", ap->layer + 1, cfg->n_layers, ap->head + 1, cfg->n_heads,
                 ap->log_scale ? "log" : "lin", !ap->capture ? " off" : ap->mask_bos ? " -BOS" : "");
    draw_text(scr, w, 1, 1, width, line, A_BOLD);
    if (focus < 0) {
        if (h >= 2)
            draw_text(scr, w, 2, 1, width, "no tokens yet", A_DIM);
        return;
    }
    int label_rows = h >= 14 ? 3 : h >= 8 ? 1 : 0;
    int footer = h >= 10 ? 1 : 0;
    int lw = width >= 30 ? 8 : width >= 16 ? 4 : 0;
    int rows_avail = h - 1 - label_rows - footer, cols_avail = width - lw;
    if (footer)
        draw_strongest(ap, scr, w, h, width, engine_record(ap->e, focus));
    tuifmt_heat_window win;
    tuifmt_heat_window_compute(engine_pos(ap->e), focus, rows_avail, cols_avail, &win);
    if (win.n_rows == 0 || win.n_cols == 0)
        return;
    const int *toks = engine_tokens(ap->e);
    int gy = 2 + label_rows, gx = 1 + lw; /* grid origin */

    /* column labels: each key's piece written downwards, one character per row */
    for (int c = 0; c < win.n_cols && label_rows > 0; c++) {
        int k = win.col0 + c;
        char piece[64];
        tuifmt_token(ap->tok, toks[k], piece, sizeof piece);
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
        const step_record *r = engine_record(ap->e, q);
        if (lw > 0) {
            char piece[64];
            tuifmt_token(ap->tok, toks[q], piece, sizeof piece);
            draw_text(scr, w, y, 1, lw - 1, piece, q == focus ? A_REVERSE : A_DIM);
        }
        if (!r || !r->attn) {
            draw_text(scr, w, y, gx, win.n_cols, "(not captured)", A_DIM);
            continue;
        }
        float ref = 0.0f;
        for (int k = ap->mask_bos ? 1 : 0; k <= q; k++) {
            float v = weight(ap, r, k);
            if (v > ref)
                ref = v;
        }
        for (int c = 0; c < win.n_cols; c++) {
            int k = win.col0 + c;
            if (k > q)
                break; /* causal: the query cannot see later keys */
            if (k == 0 && ap->mask_bos) {
                wattron(w, A_DIM);
                mvwaddstr(w, y, gx + c, scr->utf8 ? "\xc2\xb7" : ".");
                wattroff(w, A_DIM);
                continue;
            }
            draw_shade(scr, w, y, gx + c, tuifmt_shade(weight(ap, r, k), ref, scr->n_shades, ap->log_scale));
        }
    }
}

static bool attn_act(void *state, key_action a)
{
    attn_pane *ap = state;
    const model_config *cfg = ap->cfg;
    switch (a) {
    case ACT_LAYER_NEXT: ap->layer = (ap->layer + 1) % cfg->n_layers; return true;
    case ACT_LAYER_PREV: ap->layer = (ap->layer + cfg->n_layers - 1) % cfg->n_layers; return true;
    case ACT_HEAD_NEXT: ap->head = (ap->head + 1) % cfg->n_heads; ap->mean_heads = false; return true;
    case ACT_HEAD_PREV: ap->head = (ap->head + cfg->n_heads - 1) % cfg->n_heads; ap->mean_heads = false; return true;
    case ACT_HEAD_MEAN: ap->mean_heads = !ap->mean_heads; return true;
    case ACT_LOG_SCALE: ap->log_scale = !ap->log_scale; return true;
    case ACT_MASK_BOS: ap->mask_bos = !ap->mask_bos; return true;
    case ACT_CAPTURE: /* capturing costs decode speed on small models: let the user choose */
        ap->capture = !ap->capture;
        engine_set_capture(ap->e, ap->capture);
        return true;
    default: return selection_act(ap->sel, ap->e, a); /* shared with Tokens */
    }
}

const pane_ops attn_pane_ops = {"Attention", KEYS_ATTN, attn_draw, attn_act};
