/* lens_view.c — the Attention pane's two logit lens views (rows of attention_views.c):
 *   lens       the logit lens of the selected position: per layer, the top 3 of what
 *              its residual stream predicts and the rank of the token that came next;
 *   lens grid  the lens's top token per layer (rows) and position (columns), shaded
 *              by probability, so one sees at which depth each prediction settles.
 * Both show every layer when they fit; when not, those around the layer cursor, with
 * scroll markers, and the layer keys scroll them (which is all they do here: the lens
 * has no heads). Text that does not fit ends in "…".
 *
 * Reads the lens through the source (the engine computes it on demand; a trace has it
 * when written with --trace-lens) and the pane's cursor; each view owns whether it
 * last drew every layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_views.h"
#include "format.h"
#include "textfmt.h"

typedef struct {
    const attn_cursor *c; /* the pane's */
    bool cut;             /* the view last drawn could not show every layer: the layer
                             keys scroll it */
} lens_view;

static void *lens_new(const view_env *env)
{
    lens_view *lv = calloc(1, sizeof *lv);
    if (!lv)
        tui_die("out of memory");
    lv->c = env->host;
    return lv;
}

static void lens_free(void *state)
{
    free(state);
}

/* The head keys, and the layer keys while every layer is shown, do nothing here. */
static const char *lens_why_not(void *state, key_action a)
{
    const lens_view *lv = state;
    bool layer = a == ACT_LAYER_PREV || a == ACT_LAYER_NEXT;
    bool head = a == ACT_HEAD_PREV || a == ACT_HEAD_NEXT;
    if (head || (layer && !lv->cut))
        return "the logit lens shows every layer: v goes on to the heatmap and the heads views";
    return NULL;
}

/* The lens of pos, or NULL after saying why on line y. */
static const step_lens_layer *lens_or_say(const attn_cursor *c, const tui_screen *scr, WINDOW *w, int y,
                                          int width, int pos)
{
    const step_lens_layer *L = source_lens(c->src, pos);
    if (!L)
        draw_text(scr, w, y, 1, width,
                  source_live(c->src) ? "no logit lens: out of memory"
                                      : "this trace has no logit lens (write it with --trace-lens)",
                  A_DIM);
    return L;
}

/* "' Lily' 99.1%" of one lens candidate, fitted to width columns. */
static void lens_cell(const attn_cursor *c, const tui_screen *scr, int id, float p, int width, char *out,
                      size_t size)
{
    char piece[64], pct[16];
    if (id < 0) {
        snprintf(out, size, "%s", "");
        return;
    }
    source_token(c->src, id, piece, sizeof piece);
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
 * are. Remembers whether they were cut, for lens_why_not. */
static void lens_rows(lens_view *lv, const tui_screen *scr, WINDOW *w, int y0, int x, int avail,
                      tuifmt_span *rows)
{
    tuifmt_span_compute(lv->c->cfg->n_layers, lv->c->layer, avail, rows);
    lv->cut = rows->before || rows->after;
    if (rows->count > 0 && rows->before)
        draw_scroll_mark(scr, w, y0, x, '^');
    if (rows->count > 0 && rows->after)
        draw_scroll_mark(scr, w, y0 + rows->count - 1, x, 'v');
}

/* A lens view's row label: the layer (from 1), bold at the cursor when the layers
 * scroll. */
static void lens_label(const lens_view *lv, const tui_screen *scr, WINDOW *w, int y, int width, int l)
{
    char label[16];
    snprintf(label, sizeof label, "%d", l + 1);
    draw_text(scr, w, y, 1, width, label, lv->cut && l == lv->c->layer ? A_BOLD : A_DIM);
}

/* The lens view: for each layer, the top 3 of its prediction for pos + 1, and the rank
 * and probability of the token that came next. Narrower, fewer of the top 3 (the
 * column heading ends in "…"); the next token's column stays while one candidate
 * fits beside it. */
static void lens_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    lens_view *lv = state;
    const attn_cursor *c = lv->c;
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2, focus = selection_get(c->sel, c->src);
    const step_record *r = source_record(c->src, focus);
    const int *toks = source_tokens(c->src);
    const char *arrow = scr->utf8 ? "\xe2\x86\x92" : "->";
    char full[256], brief[256], piece[64], next[64], line[256];
    source_token(c->src, toks[focus], piece, sizeof piece);
    bool next_known = r && r->next >= 0;
    if (next_known) {
        source_token(c->src, r->next, next, sizeof next);
        snprintf(full, sizeof full, "logit lens  pos %d %s %s %s", focus, piece, arrow, next);
        snprintf(brief, sizeof brief, "lens pos %d %s%s%s", focus, piece, arrow, next);
    } else {
        snprintf(full, sizeof full, "logit lens  pos %d %s (next not known yet)", focus, piece);
        snprintf(brief, sizeof brief, "lens pos %d %s%s? (not yet)", focus, piece, arrow);
    }
    const char *title[] = {full, brief};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 2, width)], A_BOLD);
    const step_lens_layer *L = lens_or_say(c, scr, w, 2, width, focus);
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
    lens_rows(lv, scr, w, 3, 4, h - 2, &rows);
    for (int i = 0; i < rows.count; i++) {
        int l = rows.first + i, y = 3 + i;
        lens_label(lv, scr, w, y, 3, l);
        for (int j = 0; j < shown; j++) {
            char cell[128];
            lens_cell(c, scr, L[l].id[j], L[l].prob[j], cw - 1, cell, sizeof cell);
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
static void lens_grid_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    lens_view *lv = state;
    const attn_cursor *c = lv->c;
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2, focus = selection_get(c->sel, c->src);
    int n_layers = c->cfg->n_layers, cw = 7, lw = 3;
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
    const int *toks = source_tokens(c->src);
    for (int col = 0; first + col <= focus && col < n_cols; col++) { /* the input token of each column */
        int pos = first + col;
        char piece[64], cell[32];
        source_token(c->src, toks[pos], piece, sizeof piece);
        tuifmt_fit(piece, cw - 1, scr->utf8, cell, sizeof cell);
        draw_text(scr, w, 2, 1 + lw + col * cw, cw - 1, cell, pos == focus ? A_BOLD | A_UNDERLINE : A_DIM);
    }
    tuifmt_span rows;
    lens_rows(lv, scr, w, 3, lw, h - 2, &rows);
    for (int i = 0; i < rows.count; i++)
        lens_label(lv, scr, w, 3 + i, lw - 1, rows.first + i);
    for (int col = 0; first + col <= focus && col < n_cols; col++) {
        int pos = first + col;
        const step_lens_layer *L = source_lens(c->src, pos);
        const step_record *r = source_record(c->src, pos);
        for (int i = 0; i < rows.count; i++) {
            int l = rows.first + i, x = 1 + lw + col * cw, y = 3 + i;
            if (!L) {
                draw_text(scr, w, y, x, cw - 1, "-", A_DIM);
                continue;
            }
            char piece[64], cell[32];
            source_token(c->src, L[l].id[0], piece, sizeof piece);
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

const view_ops lens_view_ops = {
    .name = "lens",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .new = lens_new,
    .free = lens_free,
    .draw = lens_draw,
    .why_not = lens_why_not,
};

const view_ops lens_grid_view_ops = {
    .name = "lens grid",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .new = lens_new,
    .free = lens_free,
    .draw = lens_grid_draw,
    .why_not = lens_why_not,
};
