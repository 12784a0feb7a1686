/* attention_pane.c — the Attention pane (see attention_pane.h), in six views that 'v'
 * cycles:
 *   heatmap    rows are query positions, columns key positions, each cell shaded by
 *              the weight the query gave the key in the selected layer and head (or
 *              the mean over heads), relative to the row's largest weight, linear or
 *              log; the first (BOS "sink") column can be masked. The window ends at
 *              the selected (or newest) position; axes are labelled with pieces.
 *   lens       the logit lens of the selected position: per layer, the top 3 of what
 *              its residual stream predicts and the rank of the token that came next.
 *   lens grid  the lens's top token per layer (rows) and position (columns), shaded
 *              by probability, so one sees at which depth each prediction settles.
 *   heads      every head of the selected layer at the selected position: its
 *              weights over the keys, its entropy (or BOS weight), the key it
 *              attends to most.
 * No view leaves out silently what it shows: at any size, text that does not fit
 * ends in "…", and rows or columns that do not fit (keys, queries, layers, heads) are
 * marked with scroll markers, the cursor's kept on screen.
 *   head grid  layers x heads, each head's entropy (or BOS weight) as a heat; Enter
 *              opens the cursor's layer and head in the heatmap.
 *   attribution  what each head, MLP and the embedding wrote toward the logit of a
 *              target token at the selected position (attribution_view.c); 't' steps
 *              through the targets, the layer and head keys move the cursor.
 * 'c' turns a live engine's capture off and on; the selected position's rows are
 * computed again when they were not kept. Reads step records, attention rows and lenses
 * through the source (engine or trace); owns the view settings and a scratch row. */
#include "attention_pane.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_views.h"
#include "attribution_view.h"
#include "sampler.h"
#include "textfmt.h"
#include "format.h"


struct attn_pane {
    attn_view view;
    bool bos_metric;    /* the heads views shade by the weight on BOS, not the entropy */
    const tui_source *src; /* the engine (its capture is switched by 'c'), or a trace */
    const model_config *cfg;
    tui_selection *sel; /* shared with Tokens */
    int layer, head;
    int target;         /* the attribution's target (source_attribution_target) */
    bool mean_heads, log_scale, mask_bos;
    bool capture;       /* the engine keeps attention rows */
    bool lens_cut;      /* the lens view last drawn could not show every layer: the
                           layer keys scroll it */
    float *row;         /* (row_cap) scratch: one query's weights */
    int row_cap;
};

attn_pane *attn_new(const tui_source *src, tui_selection *sel)
{
    attn_pane *ap = calloc(1, sizeof *ap);
    if (!ap)
        tui_die("out of memory");
    ap->src = src;
    ap->cfg = src->cfg;
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

/* The first key query q sees at layer l: those before it are outside the layer's
 * sliding window (0 when it has none). */
static int first_visible(const attn_pane *ap, int l, int q)
{
    int window = source_window(ap->src, l);
    return window > 0 && q >= window ? q - window + 1 : 0;
}

/* How a key outside the window is drawn: a dim dash, which no shade looks like. */
static void draw_outside(const tui_screen *scr, WINDOW *w, int y, int x)
{
    draw_text(scr, w, y, x, 1, "-", A_DIM);
}

/* " window N" for a layer with a sliding window (its keys before the last N are
 * masked: drawn as dashes), else "". */
static const char *window_note(const attn_pane *ap, int l, char *buf, size_t size)
{
    int window = source_window(ap->src, l);
    if (window <= 0)
        return "";
    snprintf(buf, size, "  window %d", window);
    return buf;
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
    const int *toks = source_tokens(ap->src);
    for (int i = 0; i < m && o < sizeof line; i++) {
        char piece[64], pct[16];
        source_token(ap->src, toks[top[i]], piece, sizeof piece);
        tuifmt_prob(row[top[i]], pct, sizeof pct);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s %s@%d %s", i ? " " : "", piece, top[i], pct);
    }
    draw_text(scr, w, y, 1, width, line, A_DIM);
}

/* The heatmap view: queries x keys of one layer and head (or the head mean). */
static void draw_heatmap(attn_pane *ap, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const model_config *cfg = ap->cfg;
    char line[256];
    int focus = selection_get(ap->sel, ap->src);
    const char *scale = ap->log_scale ? "log" : "linear";
    const char *bos = !ap->capture ? "  capture OFF (c)" : ap->mask_bos ? "  BOS masked" : "";
    char wbuf[32], wshort[16] = "";
    const char *win_note = window_note(ap, ap->layer, wbuf, sizeof wbuf);
    if (source_window(ap->src, ap->layer) > 0)
        snprintf(wshort, sizeof wshort, " w%d", source_window(ap->src, ap->layer));
    if (width >= 44 && ap->mean_heads)
        snprintf(line, sizeof line, "layer %d/%d  mean of %d heads%s  %s%s", ap->layer + 1,
                 cfg->n_layers, cfg->n_heads, win_note, scale, bos);
    else if (width >= 44)
        snprintf(line, sizeof line, "layer %d/%d  head %d/%d%s  %s%s", ap->layer + 1, cfg->n_layers,
                 ap->head + 1, cfg->n_heads, win_note, scale, bos);
    else if (ap->mean_heads)
        snprintf(line, sizeof line, "L%d/%d mean of %d%s %s%s", ap->layer + 1, cfg->n_layers,
                 cfg->n_heads, wshort,
                 ap->log_scale ? "log" : "lin", !ap->capture ? " off" : ap->mask_bos ? " -BOS" : "");
    else
        snprintf(line, sizeof line, "L%d/%d H%d/%d%s %s%s", ap->layer + 1, cfg->n_layers,
                 ap->head + 1, cfg->n_heads, wshort,
                 ap->log_scale ? "log" : "lin", !ap->capture ? " off" : ap->mask_bos ? " -BOS" : "");
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
        draw_strongest(ap, scr, w, h, width, source_record(ap->src, focus));
    tuifmt_heat_window win;
    tuifmt_heat_window_compute(source_count(ap->src), focus, rows_avail, cols_avail, &win);
    if (win.n_rows == 0 || win.n_cols == 0)
        return;
    const int *toks = source_tokens(ap->src);
    int gy = 2 + label_rows, gx = 1 + lw; /* grid origin */
    /* earlier keys and queries than fit: markers in the gap before the grid */
    if (lw > 0 && win.col0 > 0)
        draw_scroll_mark(scr, w, label_rows > 0 ? 2 : gy, gx - 1, '<');
    if (lw > 0 && win.row0 > 0 && (label_rows > 0 || win.col0 == 0))
        draw_scroll_mark(scr, w, gy, gx - 1, '^');

    /* column labels: each key's piece written downwards, one character per row */
    for (int c = 0; c < win.n_cols && label_rows > 0; c++) {
        int k = win.col0 + c;
        char piece[64];
        source_token(ap->src, toks[k], piece, sizeof piece);
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
        const step_record *r = source_record(ap->src, q);
        if (lw > 0) {
            char piece[64];
            source_token(ap->src, toks[q], piece, sizeof piece);
            draw_text(scr, w, y, 1, lw - 1, piece, q == focus ? A_REVERSE : A_DIM);
        }
        if (!r || !r->attn) {
            draw_text(scr, w, y, gx, win.n_cols, "(not kept)", A_DIM);
            continue;
        }
        float ref = 0.0f;
        for (int k = ap->mask_bos ? 1 : 0; k <= q; k++) {
            float v = weight(ap, r, k);
            if (v > ref)
                ref = v;
        }
        int first = first_visible(ap, ap->layer, q);
        for (int c = 0; c < win.n_cols; c++) {
            int k = win.col0 + c;
            if (k > q)
                break; /* causal: the query cannot see later keys */
            if (k < first) { /* outside the layer's sliding window */
                draw_outside(scr, w, y, gx + c);
                continue;
            }
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

/* Does the view shown have a cursor on a layer and head? */
static bool head_cursor(const attn_pane *ap)
{
    return ap->view == VIEW_HEADS || ap->view == VIEW_HEAD_GRID || ap->view == VIEW_ATTRIBUTION;
}

static bool attn_act(void *state, key_action a)
{
    attn_pane *ap = state;
    const model_config *cfg = ap->cfg;
    /* the layers x heads grid: the arrows move its cell; the heads view: Up/Down the head */
    if (ap->view == VIEW_HEAD_GRID && (a == ACT_SEL_PREV || a == ACT_SEL_NEXT))
        a = a == ACT_SEL_PREV ? ACT_HEAD_PREV : ACT_HEAD_NEXT;
    if (a == ACT_CELL_UP || a == ACT_CELL_DOWN) {
        bool up = a == ACT_CELL_UP;
        if (ap->view == VIEW_HEADS)
            a = up ? ACT_HEAD_PREV : ACT_HEAD_NEXT;
        else
            a = up ? ACT_LAYER_PREV : ACT_LAYER_NEXT;
    }
    switch (a) {
    case ACT_LAYER_NEXT: ap->layer = (ap->layer + 1) % cfg->n_layers; return true;
    case ACT_LAYER_PREV: ap->layer = (ap->layer + cfg->n_layers - 1) % cfg->n_layers; return true;
    case ACT_HEAD_NEXT: ap->head = (ap->head + 1) % cfg->n_heads; ap->mean_heads = false; return true;
    case ACT_HEAD_PREV: ap->head = (ap->head + cfg->n_heads - 1) % cfg->n_heads; ap->mean_heads = false; return true;
    case ACT_HEAD_MEAN: ap->mean_heads = !ap->mean_heads; return true;
    case ACT_LOG_SCALE: ap->log_scale = !ap->log_scale; return true;
    case ACT_MASK_BOS: ap->mask_bos = !ap->mask_bos; return true;
    case ACT_VIEW_NEXT: ap->view = (attn_view)((ap->view + 1) % VIEW_COUNT); return true;
    case ACT_VIEW_PREV: ap->view = (attn_view)((ap->view + VIEW_COUNT - 1) % VIEW_COUNT); return true;
    case ACT_HEAD_METRIC: ap->bos_metric = !ap->bos_metric; return true;
    case ACT_TARGET_NEXT: ap->target++; return true;
    case ACT_TARGET_PREV: ap->target--; return true;
    case ACT_OPEN_HEAD: /* the head views: the layer and head under the cursor, as a heatmap */
        if (head_cursor(ap)) {
            ap->view = VIEW_HEATMAP;
            ap->mean_heads = false;
        }
        return true;
    case ACT_CAPTURE: /* the user may not want it (a trace without attention, say) */
        if (!source_live(ap->src))
            return true; /* a trace: what it holds is what there is */
        ap->capture = !ap->capture;
        engine_set_capture(ap->src->e, ap->capture);
        return true;
    default: return selection_act(ap->sel, ap->src, a); /* shared with Tokens */
    }
}

/* Why a key would change nothing in the view shown (the status line says it). */
static const char *attn_why_not(void *state, key_action a)
{
    attn_pane *ap = state;
    bool lens = ap->view == VIEW_LENS || ap->view == VIEW_LENS_GRID;
    bool heads = ap->view == VIEW_HEADS || ap->view == VIEW_HEAD_GRID;
    bool grid = ap->view == VIEW_HEAD_GRID;
    bool layer = a == ACT_LAYER_PREV || a == ACT_LAYER_NEXT ||
                 ((a == ACT_CELL_UP || a == ACT_CELL_DOWN) && ap->view != VIEW_HEADS);
    bool head = a == ACT_HEAD_PREV || a == ACT_HEAD_NEXT || (grid && (a == ACT_SEL_PREV || a == ACT_SEL_NEXT)) ||
                ((a == ACT_CELL_UP || a == ACT_CELL_DOWN) && ap->view == VIEW_HEADS);
    if ((head || (layer && !ap->lens_cut)) && lens) /* the layer keys scroll cut layers */
        return "the logit lens shows every layer: v goes on to the heatmap and the heads views";
    if (layer && ap->cfg->n_layers == 1)
        return "the model has one layer";
    if (head && ap->cfg->n_heads == 1)
        return "the model has one head per layer";
    if ((a == ACT_HEAD_MEAN && ap->view != VIEW_HEATMAP) ||
        ((a == ACT_LOG_SCALE || a == ACT_MASK_BOS) && ap->view != VIEW_HEATMAP && ap->view != VIEW_HEADS))
        return "m, l and b change how the heatmap shades (l and b the heads view too): v shows it";
    if (a == ACT_HEAD_METRIC && !heads)
        return "e works in the heads views: v shows them";
    if (a == ACT_OPEN_HEAD && !heads && ap->view != VIEW_ATTRIBUTION)
        return "Enter works in the heads and attribution views: v shows them";
    if ((a == ACT_TARGET_NEXT || a == ACT_TARGET_PREV) && ap->view != VIEW_ATTRIBUTION)
        return "t and T pick the attribution's target: v shows the attribution view";
    if (a == ACT_CAPTURE && !source_live(ap->src))
        return "a trace holds the attention it was written with: c works with a model";
    if (grid && (a == ACT_SEL_PREV || a == ACT_SEL_NEXT))
        return NULL;
    return selection_why_not(ap->sel, ap->src, a);
}

/* ---- the logit lens ---- */

/* The lens of pos, or NULL after saying why on line y. */
static const step_lens_layer *lens_or_say(attn_pane *ap, const tui_screen *scr, WINDOW *w, int y,
                                          int width, int pos)
{
    const step_lens_layer *L = source_lens(ap->src, pos);
    if (!L)
        draw_text(scr, w, y, 1, width,
                  source_live(ap->src) ? "no logit lens: out of memory"
                                       : "this trace has no logit lens (write it with --trace-lens)",
                  A_DIM);
    return L;
}

/* "' Lily' 99.1%" of one lens candidate, fitted to width columns. */
static void lens_cell(const attn_pane *ap, const tui_screen *scr, int id, float p, int width, char *out,
                      size_t size)
{
    char piece[64], pct[16];
    if (id < 0) {
        snprintf(out, size, "%s", "");
        return;
    }
    source_token(ap->src, id, piece, sizeof piece);
    tuifmt_prob(p, pct, sizeof pct);
    /* the piece gives way: the number is never cut */
    int pw = width - (int)strlen(pct) - 1;
    if (pw < 2) {
        tuifmt_fit(piece, width, scr->utf8, out, size);
        return;
    }
    char fitted[64];
    tuifmt_fit(piece, pw, scr->utf8, fitted, sizeof fitted);
    snprintf(out, size, "%s %s", fitted, pct);
}

/* The layers a lens view shows in `avail` rows: all, or those around the layer cursor
 * (the layer keys scroll them), with markers at column x of rows y0.. where the others
 * are. Remembers whether they were cut, for attn_why_not. */
static void lens_rows(attn_pane *ap, const tui_screen *scr, WINDOW *w, int y0, int x, int avail,
                      tuifmt_span *rows)
{
    tuifmt_span_compute(ap->cfg->n_layers, ap->layer, avail, rows);
    ap->lens_cut = rows->before || rows->after;
    if (rows->count > 0 && rows->before)
        draw_scroll_mark(scr, w, y0, x, '^');
    if (rows->count > 0 && rows->after)
        draw_scroll_mark(scr, w, y0 + rows->count - 1, x, 'v');
}

/* A lens view's row label: the layer (from 1), bold at the cursor when the layers
 * scroll. */
static void lens_label(const attn_pane *ap, const tui_screen *scr, WINDOW *w, int y, int width, int l)
{
    char label[16];
    snprintf(label, sizeof label, "%d", l + 1);
    draw_text(scr, w, y, 1, width, label, ap->lens_cut && l == ap->layer ? A_BOLD : A_DIM);
}

/* The lens view: for each layer, the top 3 of its prediction for pos + 1, and the rank
 * and probability of the token that came next. Narrower, fewer of the top 3 (the
 * column heading ends in "…"); the next token's column stays while one candidate
 * fits beside it. */
static void draw_lens(attn_pane *ap, WINDOW *w, const tui_screen *scr, int h, int width, int focus)
{
    const step_record *r = source_record(ap->src, focus);
    const int *toks = source_tokens(ap->src);
    const char *arrow = scr->utf8 ? "\xe2\x86\x92" : "->";
    char full[256], brief[256], piece[64], next[64], line[256];
    source_token(ap->src, toks[focus], piece, sizeof piece);
    bool next_known = r && r->next >= 0;
    if (next_known) {
        source_token(ap->src, r->next, next, sizeof next);
        snprintf(full, sizeof full, "logit lens  pos %d %s %s %s", focus, piece, arrow, next);
        snprintf(brief, sizeof brief, "lens pos %d %s%s%s", focus, piece, arrow, next);
    } else {
        snprintf(full, sizeof full, "logit lens  pos %d %s (next not known yet)", focus, piece);
        snprintf(brief, sizeof brief, "lens pos %d %s%s? (not yet)", focus, piece, arrow);
    }
    const char *title[] = {full, brief};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 2, width)], A_BOLD);
    const step_lens_layer *L = lens_or_say(ap, scr, w, 2, width, focus);
    if (!L || h < 3)
        return;
    enum { CELL_MIN = 13, NEXT_W = 13 }; /* "␣named 99.8%" and a gap; "rank 123 45%" */
    bool with_next = next_known && width >= 4 + CELL_MIN + NEXT_W;
    int nw = with_next ? NEXT_W : 0;
    /* as many of the top 3 as get cells of CELL_MIN columns, at least one */
    int avail = width - 4 - nw, shown = 3;
    while (shown > 1 && avail / shown < CELL_MIN)
        shown--;
    int cw = avail / shown;
    static const char *heads[] = {"top 1", "top 1 / top 2", "top 1 / top 2 / top 3"};
    bool cut = shown < 3 || (next_known && !with_next);
    snprintf(line, sizeof line, "%s%s", heads[shown - 1], cut ? " \xe2\x80\xa6" : "");
    if (!scr->utf8 && cut)
        snprintf(line, sizeof line, "%s ~", heads[shown - 1]);
    char header[300];
    snprintf(header, sizeof header, "%-3s %s%*s%s", "L", line,
             cw * shown - textfmt_width(line) > 0 ? cw * shown - textfmt_width(line) : 0, "",
             with_next ? " next: rank p" : "");
    draw_text(scr, w, 2, 1, width, header, A_UNDERLINE);
    tuifmt_span rows;
    lens_rows(ap, scr, w, 3, 4, h - 2, &rows);
    for (int i = 0; i < rows.count; i++) {
        int l = rows.first + i, y = 3 + i;
        lens_label(ap, scr, w, y, 3, l);
        for (int j = 0; j < shown; j++) {
            char cell[128];
            lens_cell(ap, scr, L[l].id[j], L[l].prob[j], cw - 1, cell, sizeof cell);
            bool is_next = r && L[l].id[j] == r->next;
            attr_t a = j == 0 ? draw_shade_attr(scr, tuifmt_shade(L[l].prob[0], 1.0f, scr->n_shades, false))
                              : A_NORMAL;
            draw_text(scr, w, y, 5 + j * cw, cw - 1, cell, a | (is_next ? A_UNDERLINE : 0));
        }
        if (with_next && L[l].next_rank > 0) {
            char pct[16];
            tuifmt_prob(L[l].next_prob, pct, sizeof pct);
            snprintf(line, sizeof line, "%5d %6s", L[l].next_rank, pct);
            draw_text(scr, w, y, 1 + width - nw + 1, nw - 1, line,
                      L[l].next_rank <= 3 ? A_BOLD : A_NORMAL);
        }
    }
}

/* The lens grid: each cell the top token of a layer (rows) at a position (columns, the
 * window ending at the selected one, a marker where earlier ones are), shaded by its
 * probability; underlined where it is the token that came next. The legend goes below
 * the rows, or into the title when the rows take every line. */
static void draw_lens_grid(attn_pane *ap, WINDOW *w, const tui_screen *scr, int h, int width, int focus)
{
    int n_layers = ap->cfg->n_layers, cw = 7, lw = 3;
    static const char legend[] = "shade: probability; underlined: the token that came next";
    int legend_lines = (int)strlen(legend) <= width ? 1 : 2;
    bool legend_below = n_layers + legend_lines <= h - 2;
    static const char *const titles[] = {"logit lens grid  top token per layer (rows) and position",
                                         "logit lens grid  top token, layers x positions"};
    static const char *const titles_legend[] = {"logit lens grid  shade: probability, underlined: next",
                                                "lens grid  shade: p, underlined: next",
                                                "lens grid  shade p, _ next"};
    if (legend_below)
        draw_text(scr, w, 1, 1, width, titles[tuifmt_pick(titles, 2, width)], A_BOLD);
    else
        draw_text(scr, w, 1, 1, width, titles_legend[tuifmt_pick(titles_legend, 3, width)], A_BOLD);
    int n_cols = (width - lw) / cw;
    if (n_cols <= 0 || h < 3)
        return;
    int first = focus - n_cols + 1 < 0 ? 0 : focus - n_cols + 1;
    if (first > 0)
        draw_scroll_mark(scr, w, 2, lw, '<');
    const int *toks = source_tokens(ap->src);
    for (int c = 0; first + c <= focus && c < n_cols; c++) { /* the input token of each column */
        int pos = first + c;
        char piece[64], cell[32];
        source_token(ap->src, toks[pos], piece, sizeof piece);
        tuifmt_fit(piece, cw - 1, scr->utf8, cell, sizeof cell);
        draw_text(scr, w, 2, 1 + lw + c * cw, cw - 1, cell, pos == focus ? A_BOLD | A_UNDERLINE : A_DIM);
    }
    tuifmt_span rows;
    lens_rows(ap, scr, w, 3, lw, h - 2, &rows);
    for (int i = 0; i < rows.count; i++)
        lens_label(ap, scr, w, 3 + i, lw - 1, rows.first + i);
    for (int c = 0; first + c <= focus && c < n_cols; c++) {
        int pos = first + c;
        const step_lens_layer *L = source_lens(ap->src, pos);
        const step_record *r = source_record(ap->src, pos);
        for (int i = 0; i < rows.count; i++) {
            int l = rows.first + i, x = 1 + lw + c * cw, y = 3 + i;
            if (!L) {
                draw_text(scr, w, y, x, cw - 1, "-", A_DIM);
                continue;
            }
            char piece[64], cell[32];
            source_token(ap->src, L[l].id[0], piece, sizeof piece);
            int cols = tuifmt_fit(piece, cw - 1, scr->utf8, cell, sizeof cell);
            attr_t a = draw_shade_attr(scr, tuifmt_shade(L[l].prob[0], 1.0f, scr->n_shades, false));
            if (r && r->next >= 0 && L[l].id[0] == r->next)
                a |= A_UNDERLINE;
            wattron(w, a);
            mvwaddstr(w, y, x, cell);
            for (int k = cols; k < cw - 1; k++)
                waddch(w, ' ');
            wattroff(w, a);
        }
    }
    if (!legend_below)
        return;
    if (legend_lines == 1) {
        draw_text(scr, w, 3 + n_layers, 1, width, legend, A_DIM);
    } else {
        draw_text(scr, w, 3 + n_layers, 1, width, "shade: probability", A_DIM);
        draw_text(scr, w, 4 + n_layers, 1, width, "underlined: the token that came next", A_DIM);
    }
}

/* ---- every head at the selected position ---- */

typedef struct {
    float entropy;   /* of the head's weights over keys 0..pos, nats */
    float bos;       /* weight on key 0 */
    int top_key;     /* the most attended key */
    float top_w;
} head_summary;

static head_summary summarize(const float *row, int n)
{
    head_summary s = {0.0f, n > 0 ? row[0] : 0.0f, 0, n > 0 ? row[0] : 0.0f};
    double ent = 0.0;
    for (int k = 0; k < n; k++) {
        if (row[k] > 0.0f)
            ent -= row[k] * log(row[k]);
        if (row[k] > s.top_w) {
            s.top_w = row[k];
            s.top_key = k;
        }
    }
    s.entropy = (float)ent;
    return s;
}

/* The heads views' shade of a head: its entropy against the most a row of n keys can
 * have (log n: 1 = spread evenly), or its weight on BOS. */
static int head_shade(const attn_pane *ap, const tui_screen *scr, const head_summary *s, int n)
{
    float v = ap->bos_metric ? s->bos : n > 1 ? s->entropy / logf((float)n) : 0.0f;
    return tuifmt_shade(v, 1.0f, scr->n_shades, false);
}

/* The attention row of (layer l, head h) of r, over keys 0..r->pos. */
static const float *head_row(const attn_pane *ap, const step_record *r, int l, int h)
{
    int nh = ap->cfg->n_heads, q1 = r->pos + 1;
    return r->attn + ((size_t)l * nh + h) * q1;
}

static const step_record *attn_or_say(attn_pane *ap, const tui_screen *scr, WINDOW *w, int width,
                                      int focus)
{
    const step_record *r = source_record(ap->src, focus);
    if (!r || !r->attn) {
        draw_text(scr, w, 2, 1, width,
                  source_live(ap->src) ? "no attention: capture is off (c), or it is larger than --attention-mib"
                                       : "this trace has no attention here (--trace-attn)",
                  A_DIM);
        return NULL;
    }
    return r;
}

/* A heads view row's summary in at most width columns: the metric (entropy, or the
 * weight on BOS) and the key the head attends to most with its weight, "H 1.03
 * ␣p@57 74.2%"; narrower, without the metric's letter (the title names it), then
 * with the key's piece cut ("…"), then without the piece. */
static void head_info(const attn_pane *ap, const tui_screen *scr, const head_summary *s, int width,
                      char *out, size_t size)
{
    char metric[16], piece[64], pct[16], at[16], fitted[64];
    snprintf(metric, sizeof metric, "%.2f", ap->bos_metric ? s->bos : s->entropy);
    source_token(ap->src, source_tokens(ap->src)[s->top_key], piece, sizeof piece);
    tuifmt_prob(s->top_w, pct, sizeof pct);
    snprintf(at, sizeof at, "@%d", s->top_key);
    int fixed = (int)strlen(metric) + 1 + (int)strlen(at) + 1 + (int)strlen(pct);
    int pw = textfmt_width(piece);
    const char *letter = ap->bos_metric ? "B " : "H ";
    if (fixed + pw + 2 <= width) {
        snprintf(out, size, "%s%s %s%s %s", letter, metric, piece, at, pct);
    } else if (fixed + (pw < 2 ? pw : 2) <= width) {
        tuifmt_fit(piece, width - fixed, scr->utf8, fitted, sizeof fitted);
        snprintf(out, size, "%s %s%s %s", metric, fitted, at, pct);
    } else {
        snprintf(out, size, "%s %s %s", metric, at, pct);
    }
}

/* Every head of the selected layer, one row each: its weights over the keys (the
 * window ending at the query, a "◀" first where earlier keys are left out), then its
 * summary (head_info). When not every head fits, those around the head cursor, with
 * markers where the others are: moving the cursor scrolls them. */
static void draw_heads(attn_pane *ap, WINDOW *w, const tui_screen *scr, int h, int width, int focus)
{
    char full[160], shorter[160], shortest[160], wbuf[32];
    const char *metric = ap->bos_metric ? "BOS weight" : "entropy";
    const char *win = window_note(ap, ap->layer, wbuf, sizeof wbuf);
    snprintf(full, sizeof full, "heads of layer %d/%d at pos %d%s  %s  (e)", ap->layer + 1,
             ap->cfg->n_layers, focus, win, metric);
    snprintf(shorter, sizeof shorter, "heads L%d/%d pos %d%s  %s (e)", ap->layer + 1,
             ap->cfg->n_layers, focus, win, metric);
    snprintf(shortest, sizeof shortest, "L%d/%d pos %d %s", ap->layer + 1, ap->cfg->n_layers, focus,
             metric);
    const char *title[] = {full, shorter, shortest};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 3, width)], A_BOLD);
    const step_record *r = attn_or_say(ap, scr, w, width, focus);
    if (!r)
        return;
    enum { KEYS_MIN = 8 }; /* the narrowest strip of keys beside the summary */
    int n = r->pos + 1;
    int info = width - 4 - KEYS_MIN;
    info = info > 30 ? 30 : info < 10 ? 0 : info;
    int first = first_visible(ap, ap->layer, r->pos);
    int keys_w = width - 4 - info; /* from column 5; the summary from width - info + 2 */
    bool keys_cut = keys_w > 1 && n > keys_w;
    int k0 = keys_cut ? n - (keys_w - 1) : 0; /* the first key shown */
    int kx = keys_cut ? 6 : 5;                /* its column: after the "◀" */
    tuifmt_span rows;
    tuifmt_span_compute(ap->cfg->n_heads, ap->head, h - 1, &rows);
    for (int i = 0; i < rows.count; i++) {
        int hd = rows.first + i, y = 2 + i;
        const float *row = head_row(ap, r, ap->layer, hd);
        head_summary s = summarize(row, n);
        char label[16];
        snprintf(label, sizeof label, "%s%d", source_head_out(ap->src, ap->layer, hd) ? "x" : "H", hd + 1);
        draw_text(scr, w, y, 1, 3, label,
                  hd == ap->head ? A_REVERSE : draw_shade_attr(scr, head_shade(ap, scr, &s, n - first)));
        if (i == 0 && rows.before)
            draw_scroll_mark(scr, w, y, 4, '^');
        if (i == rows.count - 1 && rows.after)
            draw_scroll_mark(scr, w, y, 4, 'v');
        if (keys_cut)
            draw_scroll_mark(scr, w, y, 5, '<');
        float ref = 0.0f;
        for (int k = ap->mask_bos ? 1 : 0; k < n; k++)
            ref = row[k] > ref ? row[k] : ref;
        for (int k = k0; k < n && keys_w > 0; k++) {
            if (k < first)
                draw_outside(scr, w, y, kx + k - k0);
            else if (k == 0 && ap->mask_bos)
                draw_text(scr, w, y, kx + k - k0, 1, scr->utf8 ? "\xc2\xb7" : ".", A_DIM);
            else
                draw_shade(scr, w, y, kx + k - k0, tuifmt_shade(row[k], ref, scr->n_shades, ap->log_scale));
        }
        if (info > 0) {
            char line[160];
            head_info(ap, scr, &s, info - 1, line, sizeof line);
            draw_text(scr, w, y, 1 + width - info + 1, info - 1, line, A_NORMAL);
        }
    }
}

/* A head grid cell's text in width columns: "out", the BOS weight ("93%", "100"), or
 * the entropy as precise as fits ("1.23", "1.2", ".93"). */
static void head_cell(const attn_pane *ap, const head_summary *s, bool out, int width, char *cell,
                      size_t size)
{
    if (out)
        snprintf(cell, size, "%s", width >= 3 ? "out" : "x");
    else if (!ap->bos_metric)
        tuifmt_fixed(s->entropy, width, 2, false, cell, size);
    else if (snprintf(cell, size, "%.0f%%", 100.0 * s->bos) > width)
        snprintf(cell, size, "%.0f", 100.0 * s->bos);
}

/* Layers (rows) x heads (columns) at the selected position, each cell the head's
 * entropy (or BOS weight) shaded; the cursor is the layer and head the heatmap shows,
 * and Enter opens it there. Cells get the room there is; when not every head or layer
 * fits, those around the cursor are shown with scroll markers where the others are. */
static void draw_head_grid(attn_pane *ap, WINDOW *w, const tui_screen *scr, int h, int width, int focus)
{
    char full[128], shorter[128], shortest[128];
    const char *metric = ap->bos_metric ? "BOS weight" : "entropy";
    snprintf(full, sizeof full, "layers x heads  pos %d  %s (e)  arrows, Enter", focus, metric);
    snprintf(shorter, sizeof shorter, "layers x heads  pos %d  %s (e)", focus, metric);
    snprintf(shortest, sizeof shortest, "L x H  pos %d  %s", focus, metric);
    const char *title[] = {full, shorter, shortest};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 3, width)], A_BOLD);
    const step_record *r = attn_or_say(ap, scr, w, width, focus);
    if (!r || h < 3)
        return;
    int n = r->pos + 1, nl = ap->cfg->n_layers, nh = ap->cfg->n_heads;
    char label[16];
    int label_need = snprintf(label, sizeof label, "L%d", nl) + 1;
    /* "L1  1.23 " at most; a cell of 3 ("1.2") and a label of "L1 " at least */
    tuifmt_grid_want want = {.label_min = label_need, .label_pref = label_need > 4 ? label_need : 4,
                             .cell_min = 4, .cell_max = 6, .reserve = 0};
    tuifmt_grid g;
    tuifmt_grid_columns(&want, width, nh, ap->head, &g);
    tuifmt_span rows;
    tuifmt_span_compute(nl, ap->layer, h - 2, &rows);
    if (g.cols.count < 1 || rows.count < 1)
        return;
    int lw = g.label_w, cw = g.cell_w, h0 = g.cols.first;
    for (int i = 0; i < g.cols.count; i++) {
        int hd = h0 + i;
        snprintf(label, sizeof label, cw >= 4 ? "H%d" : "%d", hd + 1);
        draw_text(scr, w, 2, 1 + lw + i * cw, cw - 1, label, hd == ap->head ? A_BOLD | A_UNDERLINE : A_DIM);
    }
    if (g.cols.before)
        draw_scroll_mark(scr, w, 2, lw, '<');
    if (g.cols.after)
        draw_scroll_mark(scr, w, 2, lw + g.cols.count * cw, '>');
    for (int i = 0; i < rows.count; i++) {
        int l = rows.first + i, y = 3 + i;
        snprintf(label, sizeof label, "L%d", l + 1);
        draw_text(scr, w, y, 1, lw - 1, label, l == ap->layer ? A_BOLD : A_DIM);
        if (i == 0 && rows.before)
            draw_scroll_mark(scr, w, y, lw, '^');
        if (i == rows.count - 1 && rows.after)
            draw_scroll_mark(scr, w, y, lw, 'v');
        for (int j = 0; j < g.cols.count; j++) {
            int hd = h0 + j;
            head_summary s = summarize(head_row(ap, r, l, hd), n);
            char cell[16], fitted[16];
            head_cell(ap, &s, source_head_out(ap->src, l, hd), cw - 1, cell, sizeof cell);
            int cols = tuifmt_fit(cell, cw - 1, scr->utf8, fitted, sizeof fitted);
            attr_t a = l == ap->layer && hd == ap->head ? A_REVERSE | A_BOLD
                                                       : draw_shade_attr(scr, head_shade(ap, scr, &s,
                                                                         n - first_visible(ap, l, r->pos)));
            wattron(w, a);
            mvwaddstr(w, y, 1 + lw + j * cw, fitted);
            for (int k = cols; k < cw - 1; k++)
                waddch(w, ' ');
            wattroff(w, a);
        }
    }
}

static void attn_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    attn_pane *ap = state;
    draw_box(scr, w, attn_pane_ops.title, focused);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    if (h <= 0 || width <= 0)
        return;
    int focus = selection_get(ap->sel, ap->src);
    if (focus >= 0 && ap->view != VIEW_LENS && ap->view != VIEW_LENS_GRID &&
        ap->view != VIEW_ATTRIBUTION)
        source_attention(ap->src, focus); /* a live engine computes dropped rows again */
    if (ap->view == VIEW_HEATMAP || focus < 0) {
        draw_heatmap(ap, w, scr, h, width);
        return;
    }
    switch (ap->view) {
    case VIEW_LENS: draw_lens(ap, w, scr, h, width, focus); break;
    case VIEW_LENS_GRID: draw_lens_grid(ap, w, scr, h, width, focus); break;
    case VIEW_HEADS: draw_heads(ap, w, scr, h, width, focus); break;
    case VIEW_HEAD_GRID: draw_head_grid(ap, w, scr, h, width, focus); break;
    case VIEW_ATTRIBUTION: {
        attribution_view v = {focus, ap->target, ap->layer, ap->head};
        attribution_view_draw(ap->src, scr, w, h, width, &v);
        break;
    }
    default: break;
    }
}

bool attn_head_cursor(const attn_pane *ap, int *layer, int *head)
{
    *layer = ap->layer;
    *head = ap->head;
    return head_cursor(ap);
}

const pane_ops attn_pane_ops = {"Attention", KEYS_ATTN, attn_draw, attn_act, attn_why_not};
