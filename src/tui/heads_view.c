/* heads_view.c — the Attention pane's two views of the heads (rows of
 * attention_views.c) at the selected position:
 *   heads      every head of the cursor's layer: its weights over the keys, its entropy
 *              (or its weight on BOS), the key it attends to most, and where the model
 *              has attention sinks (gpt-oss) the sink's share, what the keys do not get;
 *   head grid  layers x heads ("layers x heads"), each head's entropy (or BOS weight)
 *              as a heat; Enter opens the cursor's layer and head in the heatmap.
 * Both keep the head cursor on screen: when not every head or layer fits, those around
 * it, with scroll markers where the others are.
 *
 * Read the pane's cursor (attention_views.h), which is their state; own nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention_views.h"
#include "format.h"
#include "textfmt.h"

typedef struct {
    float entropy;   /* of the head's weights over keys 0..pos, nats */
    float bos;       /* weight on key 0 */
    int top_key;     /* the most attended key */
    float top_w;
    float sink;      /* 1 - the weights' sum: the sink's share (0 without sinks) */
} head_summary;

static head_summary summarize_softmax(const float *row, int n)
{
    head_summary s = {0.0f, n > 0 ? row[0] : 0.0f, 0, n > 0 ? row[0] : 0.0f, 0.0f};
    double ent = 0.0, sum = 0.0;
    for (int k = 0; k < n; k++) {
        sum += row[k];
        if (row[k] > 0.0f)
            ent -= row[k] * log(row[k]);
        if (row[k] > s.top_w) {
            s.top_w = row[k];
            s.top_key = k;
        }
    }
    s.entropy = (float)ent;
    s.sink = sum < 1.0 ? (float)(1.0 - sum) : 0.0f;
    return s;
}

/* A Gated DeltaNet head's effective attention (signed, any sum): summarized as the
 * shares of its weights' magnitudes, so that its entropy and BOS weight read as a
 * softmax head's would; no sink. */
static head_summary summarize_linear(const float *row, int n)
{
    double total = 0.0, ent = 0.0;
    for (int k = 0; k < n; k++)
        total += fabs(row[k]);
    head_summary s = {0.0f, 0.0f, 0, 0.0f, 0.0f};
    for (int k = 0; k < n && total > 0.0; k++) {
        double p = fabs(row[k]) / total;
        if (p > 0.0)
            ent -= p * log(p);
        if (p > s.top_w) {
            s.top_w = (float)p;
            s.top_key = k;
        }
    }
    s.entropy = (float)ent;
    s.bos = n > 0 && total > 0.0 ? (float)(fabs(row[0]) / total) : 0.0f;
    return s;
}

/* The summary of layer l's head row (n keys), by the layer's kind. */
static head_summary summarize(const attn_cursor *c, int l, const float *row, int n)
{
    return source_recurrent(c->src, l) ? summarize_linear(row, n) : summarize_softmax(row, n);
}

/* The heads views' shade of a head: its entropy against the most a row of n keys can
 * have (log n: 1 = spread evenly), or its weight on BOS. */
static int head_shade(const attn_cursor *c, const tui_screen *scr, const head_summary *s, int n)
{
    float v = c->bos_metric ? s->bos : n > 1 ? s->entropy / logf((float)n) : 0.0f;
    return tuifmt_shade(v, 1.0f, scr->n_shades, false);
}

/* The attention row of (layer l, head h) of r, over keys 0..r->pos. */
static const float *head_row(const attn_cursor *c, const step_record *r, int l, int h)
{
    int nh = c->cfg->n_heads, q1 = r->pos + 1;
    return r->attn + ((size_t)l * nh + h) * q1;
}

/* The record of focus with its attention rows, or NULL after saying on line 2 why there
 * are none. */
static const step_record *attn_or_say(const attn_cursor *c, const tui_screen *scr, WINDOW *w, int width,
                                      int focus)
{
    const step_record *r = source_record(c->src, focus);
    if (!r || !r->attn) {
        draw_text(scr, w, 2, 1, width,
                  source_live(c->src) ? "no attention: capture is off (c), or it is larger than --attention-mib"
                                      : "this trace has no attention here (--trace-attn)",
                  A_DIM);
        return NULL;
    }
    return r;
}

/* A heads view row's summary in at most width columns: the metric (entropy, or the
 * weight on BOS) and the key the head attends to most with its weight, "H 1.03
 * ␣p@57 74.2%", and "s 61.0%" after it where the model has sinks and it fits; narrower,
 * without the metric's letter (the title names it), then with the key's piece cut
 * ("…"), then without the piece. */
static void head_info(const attn_cursor *c, const tui_screen *scr, const head_summary *s, int width,
                      char *out, size_t size)
{
    char metric[16], piece[64], pct[16], at[16], fitted[64];
    snprintf(metric, sizeof metric, "%.2f", c->bos_metric ? s->bos : s->entropy);
    source_token(c->src, source_tokens(c->src)[s->top_key], piece, sizeof piece);
    tuifmt_prob(s->top_w, pct, sizeof pct);
    snprintf(at, sizeof at, "@%d", s->top_key);
    int fixed = (int)strlen(metric) + 1 + (int)strlen(at) + 1 + (int)strlen(pct);
    int pw = textfmt_width(piece);
    const char *letter = c->bos_metric ? "B " : "H ";
    char sink[24] = "";
    if (c->cfg->arch.attn_sinks) {
        char sp[16];
        tuifmt_prob(s->sink, sp, sizeof sp);
        snprintf(sink, sizeof sink, " s %s", sp);
    }
    if (fixed + pw + 2 + (int)strlen(sink) <= width) {
        snprintf(out, size, "%s%s %s%s %s%s", letter, metric, piece, at, pct, sink);
    } else if (fixed + pw + 2 <= width) {
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
static void heads_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    const attn_cursor *c = state;
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2, focus = selection_get(c->sel, c->src);
    char full[160], shorter[160], shortest[160], wbuf[32];
    const char *metric = c->bos_metric ? "BOS weight" : "entropy";
    const char *win = attn_window_note(c, c->layer, wbuf, sizeof wbuf);
    if (source_recurrent(c->src, c->layer)) /* its rows: the effective attention's |weights| */
        win = "  linear attention (effective)";
    snprintf(full, sizeof full, "heads of layer %d/%d at pos %d%s  %s%s  (e)", c->layer + 1,
             c->cfg->n_layers, focus, win, metric, c->cfg->arch.attn_sinks ? ", s: sink" : "");
    snprintf(shorter, sizeof shorter, "heads L%d/%d pos %d%s  %s (e)", c->layer + 1,
             c->cfg->n_layers, focus, win, metric);
    snprintf(shortest, sizeof shortest, "L%d/%d pos %d %s", c->layer + 1, c->cfg->n_layers, focus,
             metric);
    const char *title[] = {full, shorter, shortest};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 3, width)], A_BOLD);
    const step_record *r = attn_or_say(c, scr, w, width, focus);
    if (!r)
        return;
    enum { KEYS_MIN = 8 }; /* the narrowest strip of keys beside the summary */
    int n = r->pos + 1;
    int info = width - 4 - KEYS_MIN;
    info = info > 30 ? 30 : info < 10 ? 0 : info;
    int first = attn_first_visible(c, c->layer, r->pos);
    int keys_w = width - 4 - info; /* from column 5; the summary from width - info + 2 */
    bool keys_cut = keys_w > 1 && n > keys_w;
    int k0 = keys_cut ? n - (keys_w - 1) : 0; /* the first key shown */
    int kx = keys_cut ? 6 : 5;                /* its column: after the "◀" */
    tuifmt_span rows;
    tuifmt_span_compute(source_layer_heads(c->src, c->layer), c->head, h - 1, &rows);
    for (int i = 0; i < rows.count; i++) {
        int hd = rows.first + i, y = 2 + i;
        const float *row = head_row(c, r, c->layer, hd);
        head_summary s = summarize(c, c->layer, row, n);
        char label[16];
        snprintf(label, sizeof label, "%s%d", source_head_out(c->src, c->layer, hd) ? "x" : "H", hd + 1);
        draw_text(scr, w, y, 1, 3, label,
                  hd == c->head ? A_REVERSE : draw_shade_attr(scr, head_shade(c, scr, &s, n - first)));
        if (i == 0 && rows.before)
            draw_scroll_mark(scr, w, y, 4, '^');
        if (i == rows.count - 1 && rows.after)
            draw_scroll_mark(scr, w, y, 4, 'v');
        if (keys_cut)
            draw_scroll_mark(scr, w, y, 5, '<');
        float ref = 0.0f;
        for (int k = c->mask_bos ? 1 : 0; k < n; k++)
            ref = row[k] > ref ? row[k] : ref;
        for (int k = k0; k < n && keys_w > 0; k++) {
            if (k < first)
                attn_draw_outside(scr, w, y, kx + k - k0);
            else if (k == 0 && c->mask_bos)
                draw_text(scr, w, y, kx + k - k0, 1, scr->utf8 ? "\xc2\xb7" : ".", A_DIM);
            else
                draw_shade(scr, w, y, kx + k - k0, tuifmt_shade(row[k], ref, scr->n_shades, c->log_scale));
        }
        if (info > 0) {
            char line[160];
            head_info(c, scr, &s, info - 1, line, sizeof line);
            draw_text(scr, w, y, 1 + width - info + 1, info - 1, line, A_NORMAL);
        }
    }
}

/* A head grid cell's text in width columns: "out", the BOS weight ("93%", "100"), or
 * the entropy as precise as fits ("1.23", "1.2", ".93"). */
static void head_cell(const attn_cursor *c, const head_summary *s, bool out, int width, char *cell,
                      size_t size)
{
    if (out)
        snprintf(cell, size, "%s", width >= 3 ? "out" : "x");
    else if (!c->bos_metric)
        tuifmt_fixed(s->entropy, width, 2, false, cell, size);
    else if (snprintf(cell, size, "%.0f%%", 100.0 * s->bos) > width)
        snprintf(cell, size, "%.0f", 100.0 * s->bos);
}

/* Layers (rows) x heads (columns) at the selected position, each cell the head's
 * entropy (or BOS weight) shaded; the cursor is the layer and head the heatmap shows,
 * and Enter opens it there. Cells get the room there is; when not every head or layer
 * fits, those around the cursor are shown with scroll markers where the others are. */
static void head_grid_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    const attn_cursor *c = state;
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2, focus = selection_get(c->sel, c->src);
    char full[128], shorter[128], shortest[128];
    const char *metric = c->bos_metric ? "BOS weight" : "entropy";
    snprintf(full, sizeof full, "layers x heads  pos %d  %s (e)  arrows, Enter", focus, metric);
    snprintf(shorter, sizeof shorter, "layers x heads  pos %d  %s (e)", focus, metric);
    snprintf(shortest, sizeof shortest, "L x H  pos %d  %s", focus, metric);
    const char *title[] = {full, shorter, shortest};
    draw_text(scr, w, 1, 1, width, title[tuifmt_pick(title, 3, width)], A_BOLD);
    const step_record *r = attn_or_say(c, scr, w, width, focus);
    if (!r || h < 3)
        return;
    int n = r->pos + 1, nl = c->cfg->n_layers, nh = c->cfg->n_heads;
    char label[16];
    int label_need = snprintf(label, sizeof label, "L%d", nl) + 1;
    /* "L1  1.23 " at most; a cell of 3 ("1.2") and a label of "L1 " at least */
    tuifmt_grid_want want = {.label_min = label_need, .label_pref = label_need > 4 ? label_need : 4,
                             .cell_min = 4, .cell_max = 6, .reserve = 0};
    tuifmt_grid g;
    tuifmt_grid_columns(&want, width, nh, c->head, &g);
    tuifmt_span rows;
    tuifmt_span_compute(nl, c->layer, h - 2, &rows);
    if (g.cols.count < 1 || rows.count < 1)
        return;
    int lw = g.label_w, cw = g.cell_w, h0 = g.cols.first;
    for (int i = 0; i < g.cols.count; i++) {
        int hd = h0 + i;
        snprintf(label, sizeof label, cw >= 4 ? "H%d" : "%d", hd + 1);
        draw_text(scr, w, 2, 1 + lw + i * cw, cw - 1, label, hd == c->head ? A_BOLD | A_UNDERLINE : A_DIM);
    }
    if (g.cols.before)
        draw_scroll_mark(scr, w, 2, lw, '<');
    if (g.cols.after)
        draw_scroll_mark(scr, w, 2, lw + g.cols.count * cw, '>');
    for (int i = 0; i < rows.count; i++) {
        int l = rows.first + i, y = 3 + i;
        snprintf(label, sizeof label, "L%d", l + 1);
        draw_text(scr, w, y, 1, lw - 1, label, l == c->layer ? A_BOLD : A_DIM);
        if (i == 0 && rows.before)
            draw_scroll_mark(scr, w, y, lw, '^');
        if (i == rows.count - 1 && rows.after)
            draw_scroll_mark(scr, w, y, lw, 'v');
        for (int j = 0; j < g.cols.count; j++) {
            int hd = h0 + j;
            if (hd >= source_layer_heads(c->src, l))
                continue; /* a hybrid's layer with fewer heads than the widest */
            head_summary s = summarize(c, l, head_row(c, r, l, hd), n);
            char cell[16], fitted[16];
            head_cell(c, &s, source_head_out(c->src, l, hd), cw - 1, cell, sizeof cell);
            int cols = tuifmt_fit(cell, cw - 1, scr->utf8, fitted, sizeof fitted);
            attr_t a = l == c->layer && hd == c->head
                           ? A_REVERSE | A_BOLD
                           : draw_shade_attr(scr, head_shade(c, scr, &s, n - attn_first_visible(c, l, r->pos)));
            wattron(w, a);
            mvwaddstr(w, y, 1 + lw + j * cw, fitted);
            for (int k = cols; k < cw - 1; k++)
                waddch(w, ' ');
            wattroff(w, a);
        }
    }
}

const view_ops heads_view_ops = {
    .name = "heads",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .draw = heads_draw,
};

const view_ops head_grid_view_ops = {
    .name = "layers x heads",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .draw = head_grid_draw,
};
