/* patch_view.c — the patching view (see patch_view.h): the grid's heatmap, its cursor
 * and a cell's top tokens. */
#include "patch_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "patch_board.h"

enum { TOP_SHOWN = 5, LIST_ROWS = TOP_SHOWN + 2, LINE_MAX = 800 };

typedef struct {
    patch_board *board;       /* the controller's */
    const tui_source *src;    /* pieces */
    bool open;
    int row, col;             /* the cursor */
    int page;                 /* layer rows shown (PgUp, PgDn) */
    bool list;                /* the cursor cell's top tokens are shown */
    int list_row, list_col;   /* the cell they are of */
    int ids[TOP_SHOWN];
    float probs[TOP_SHOWN];
    int n_top;
    char why[600];            /* what the last key said (a cell without tokens, a metric
                                 that changed) */
} patch_view;

static void *patch_new(const view_env *env)
{
    patch_view *pv = calloc(1, sizeof *pv);
    if (!pv)
        tui_die("out of memory");
    pv->board = env->patch;
    pv->src = env->src;
    return pv;
}

static void patch_free(void *state)
{
    free(state);
}

static const char *patch_why_closed(void *state)
{
    patch_view *pv = state;
    if (!pv->board || !patch_board_has_grid(pv->board))
        return "patching: no grid yet (/patch TEXT: the newest message against TEXT in its "
               "place)";
    return NULL;
}

static bool patch_is_open(const void *state)
{
    const patch_view *pv = state;
    return pv->open;
}

static void patch_open(void *state)
{
    patch_view *pv = state;
    pv->open = true;
    pv->list = false;
    patch_grid g;
    if (patch_board_grid(pv->board, &g)) { /* the last row, the last column: the answer */
        pv->row = pv->row < g.rows ? pv->row : g.rows - 1;
        pv->col = g.cols - 1;
    }
}

/* ---- the top tokens ---- */

/* The k most probable tokens of logits (vocab) and their probabilities, best first. */
static int top_tokens(const float *logits, int vocab, int k, int *ids, float *probs)
{
    double max = -INFINITY, sum = 0.0;
    for (int i = 0; i < vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    int n = 0;
    for (int i = 0; i < vocab; i++) {
        if (n == k && logits[i] <= logits[ids[n - 1]])
            continue;
        int j = n < k ? n++ : n - 1;
        while (j > 0 && logits[ids[j - 1]] < logits[i]) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = i;
    }
    for (int i = 0; i < n; i++)
        probs[i] = (float)(exp((double)logits[ids[i]] - max) / sum);
    return n;
}

/* Runs the cursor's cell again for its top tokens. */
static void fill_list(patch_view *pv)
{
    pv->list = true;
    pv->list_row = pv->row;
    pv->list_col = pv->col;
    pv->n_top = 0;
    pv->why[0] = '\0';
    const float *logits;
    llm_err err;
    if (patch_board_cell_logits(pv->board, pv->row, pv->col, &logits, &err) != LLM_OK) {
        snprintf(pv->why, sizeof pv->why, "%s", err.text);
        return;
    }
    pv->n_top = top_tokens(logits, pv->src->cfg->vocab_size, TOP_SHOWN, pv->ids, pv->probs);
}

/* ---- keys ---- */

static bool own_action(key_action a)
{
    switch (a) {
    case ACT_PATCH: case ACT_PATCH_BACK: case ACT_PATCH_SITE: case ACT_PATCH_METRIC:
    case ACT_CELL_UP: case ACT_CELL_DOWN: case ACT_PAGE_UP: case ACT_PAGE_DOWN:
    case ACT_SEL_PREV: case ACT_SEL_NEXT: case ACT_SEL_FIRST: case ACT_SEL_NEWEST:
    case ACT_OPEN_HEAD:
        return true;
    default: return false;
    }
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* s and m: the same prompts again with the next site the model has (the expert site
 * only with experts) or the other metric. */
static void run_again(patch_view *pv, const patch_grid *g, bool next_site)
{
    patch_site site = g->site;
    patch_metric metric = g->metric;
    if (next_site) {
        site = (patch_site)((site + 1) % PATCH_SITE_COUNT);
        if (site == PATCH_EXPERT && pv->src->cfg->n_experts == 0)
            site = (patch_site)((site + 1) % PATCH_SITE_COUNT);
    } else
        metric = metric == PATCH_KL ? PATCH_LOGIT_DIFF : PATCH_KL;
    char note[sizeof pv->why];
    llm_err err;
    pv->list = false;
    if (patch_board_restart(pv->board, site, metric, note, sizeof note, &err) != LLM_OK)
        snprintf(pv->why, sizeof pv->why, "%s", err.text);
    else
        snprintf(pv->why, sizeof pv->why, "%s", note);
    patch_grid now;
    if (patch_board_grid(pv->board, &now)) {
        pv->row = clamp(pv->row, 0, now.rows - 1);
        pv->col = clamp(pv->col, 0, now.cols - 1);
    }
}

static bool patch_act(void *state, key_action a)
{
    patch_view *pv = state;
    if (!own_action(a))
        return false;
    patch_grid g;
    if (!patch_board_grid(pv->board, &g)) {
        pv->open = false;
        return true;
    }
    int page = pv->page > 1 ? pv->page : 1;
    pv->why[0] = '\0'; /* what the last key said */
    switch (a) {
    case ACT_PATCH: pv->open = false; break;
    case ACT_PATCH_BACK:
        if (g.running)
            patch_board_stop(pv->board);
        else if (pv->list)
            pv->list = false;
        else
            pv->open = false;
        break;
    case ACT_PATCH_SITE: run_again(pv, &g, true); break;
    case ACT_PATCH_METRIC: run_again(pv, &g, false); break;
    case ACT_CELL_UP: pv->row = clamp(pv->row - 1, 0, g.rows - 1); break;
    case ACT_CELL_DOWN: pv->row = clamp(pv->row + 1, 0, g.rows - 1); break;
    case ACT_PAGE_UP: pv->row = clamp(pv->row - page, 0, g.rows - 1); break;
    case ACT_PAGE_DOWN: pv->row = clamp(pv->row + page, 0, g.rows - 1); break;
    case ACT_SEL_PREV: pv->col = clamp(pv->col - 1, 0, g.cols - 1); break;
    case ACT_SEL_NEXT: pv->col = clamp(pv->col + 1, 0, g.cols - 1); break;
    case ACT_SEL_FIRST: pv->col = 0; break;
    case ACT_SEL_NEWEST: pv->col = g.cols - 1; break;
    case ACT_OPEN_HEAD: fill_list(pv); break;
    default: break;
    }
    if (pv->list && (pv->row != pv->list_row || pv->col != pv->list_col) && g.live)
        fill_list(pv); /* the list follows the cursor */
    return true;
}

static const char *patch_why_not(void *state, key_action a)
{
    patch_view *pv = state;
    patch_grid g;
    if (!own_action(a) || !patch_board_grid(pv->board, &g))
        return NULL;
    switch (a) {
    case ACT_CELL_UP: case ACT_PAGE_UP: return pv->row == 0 ? "already at the first layer" : NULL;
    case ACT_CELL_DOWN: case ACT_PAGE_DOWN:
        return pv->row == g.rows - 1 ? "already at the last layer" : NULL;
    case ACT_SEL_PREV: case ACT_SEL_FIRST: return pv->col == 0 ? "already at the first column" : NULL;
    case ACT_SEL_NEXT: case ACT_SEL_NEWEST:
        return pv->col == g.cols - 1 ? "already at the last column" : NULL;
    case ACT_PATCH_SITE: case ACT_PATCH_METRIC:
        return g.live ? NULL : "a trace's grid cannot run again (llmchat MODEL --replay FILE)";
    case ACT_OPEN_HEAD:
        return g.live ? NULL : "a trace keeps no cell's tokens (llmchat MODEL --replay FILE "
                               "runs the cells again)";
    default: return NULL;
    }
}

/* ---- drawing ---- */


/* Token id's piece as the grid's labels show it: terminal-safe, spaces as '_' so that
 * the columns stay apart, fitted to width columns. */
static void label_piece(const patch_view *pv, int id, int width, const tui_screen *scr, char *out,
                        size_t size)
{
    char piece[128];
    source_token(pv->src, id, piece, sizeof piece);
    for (char *c = piece; *c; c++)
        *c = *c == ' ' ? '_' : *c;
    tuifmt_fit(piece, width, scr->utf8, out, size);
}

/* A cell's value as the grid shows it: the normalised logit difference, or the KL
 * divergence as a fraction of the corrupted run's (both 0 and 1 at the two runs, the
 * other way round). */
static float shown(const patch_grid *g, float v)
{
    if (g->metric != PATCH_KL)
        return v;
    return g->corrupt_value > 0 ? v / (float)g->corrupt_value : 0.0f;
}

/* How much of the clean run a cell's value brings back, 0..1 (its shade). */
static float recovered(const patch_grid *g, float v)
{
    float r = g->metric == PATCH_KL ? 1.0f - shown(g, v) : v;
    return r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
}

static void draw_title(const patch_view *pv, const patch_grid *g, WINDOW *w, const tui_screen *scr,
                       int width)
{
    char answer[64] = "", wrong[64] = "", t[3][LINE_MAX], progress[64];
    if (g->metric == PATCH_LOGIT_DIFF) {
        label_piece(pv, g->answer, 16, scr, answer, sizeof answer);
        label_piece(pv, g->wrong, 16, scr, wrong, sizeof wrong);
    }
    if (g->running)
        snprintf(progress, sizeof progress, "%d/%d cells (Esc stops)", g->done, g->total);
    else if (g->done < g->total)
        snprintf(progress, sizeof progress, "stopped at %d/%d cells", g->done, g->total);
    else
        snprintf(progress, sizeof progress, "%d cells", g->total);
    if (g->metric == PATCH_KL) {
        snprintf(t[0], sizeof t[0], "patching %s: KL from the clean run over the corrupted "
                 "run's %.3g (0 = clean, 1 = corrupted)  %s", patch_site_name(g->site),
                 g->corrupt_value, progress);
        snprintf(t[1], sizeof t[1], "%s KL / %.3g  %s", patch_site_name(g->site),
                 g->corrupt_value, progress);
    } else {
        snprintf(t[0], sizeof t[0], "patching %s: logit diff %s - %s (clean %.3g = 1, corrupted "
                 "%.3g = 0)  %s", patch_site_name(g->site), answer, wrong, g->clean_value,
                 g->corrupt_value, progress);
        snprintf(t[1], sizeof t[1], "%s %s-%s  %s", patch_site_name(g->site), answer, wrong,
                 progress);
    }
    snprintf(t[2], sizeof t[2], "%s %d/%d", patch_site_name(g->site), g->done, g->total);
    const char *const titles[] = {t[0], t[1], t[2]};
    draw_text(scr, w, 0, 0, width, titles[tuifmt_pick(titles, 3, width)], A_BOLD);
}

/* The column labels: positions' tokens (the corrupted prompt's under them where it
 * differs) or heads. */
static void draw_labels(const patch_view *pv, const patch_grid *g, const tuifmt_grid *cg, WINDOW *w,
                        const tui_screen *scr)
{
    bool heads = !patch_site_positions(g->site);
    bool roomy = cg->label_w >= 5;
    draw_text(scr, w, 1, 0, cg->label_w,
              heads ? (g->site == PATCH_EXPERT ? "exp" : "head") : roomy ? "clean" : "cln", A_DIM);
    if (!heads)
        draw_text(scr, w, 2, 0, cg->label_w, roomy ? "corr" : "cor", A_DIM);
    for (int i = 0; i < cg->cols.count; i++) {
        int c = cg->cols.first + i, x = cg->label_w + 1 + i * cg->cell_w;
        char text[128];
        attr_t at = c == pv->col ? A_BOLD | A_UNDERLINE : A_NORMAL;
        if (heads) {
            snprintf(text, sizeof text, g->site == PATCH_EXPERT ? "E%d" : "H%d", c);
            draw_text(scr, w, 1, x, cg->cell_w - 1, text, at);
            continue;
        }
        label_piece(pv, g->clean[c], cg->cell_w - 1, scr, text, sizeof text);
        draw_text(scr, w, 1, x, cg->cell_w - 1, text, at);
        if (g->corrupt[c] != g->clean[c]) {
            label_piece(pv, g->corrupt[c], cg->cell_w - 1, scr, text, sizeof text);
            draw_text(scr, w, 2, x, cg->cell_w - 1, text, A_BOLD);
        }
    }
    if (cg->cols.before)
        draw_scroll_mark(scr, w, 1, cg->label_w, '<');
    if (cg->cols.after)
        draw_scroll_mark(scr, w, 1, cg->label_w + 1 + cg->cols.count * cg->cell_w - 1, '>');
}

static void draw_cells(const patch_view *pv, const patch_grid *g, const tuifmt_grid *cg,
                       const tuifmt_span *rows, int y0, WINDOW *w, const tui_screen *scr)
{
    for (int i = 0; i < rows->count; i++) {
        int r = rows->first + i, y = y0 + i;
        char label[16];
        snprintf(label, sizeof label, "L%d", g->layer_first + r);
        draw_text(scr, w, y, 0, cg->label_w, label, r == pv->row ? A_BOLD | A_UNDERLINE : A_NORMAL);
        for (int j = 0; j < cg->cols.count; j++) {
            int c = cg->cols.first + j, x = cg->label_w + 1 + j * cg->cell_w;
            float v = g->grid[(size_t)r * g->cols + c];
            bool ran = patch_board_cell_ran(pv->board, r, c) || (!g->live && !isnan(v));
            bool cursor = r == pv->row && c == pv->col;
            char text[32];
            attr_t at;
            if (!ran || isnan(v)) {
                snprintf(text, sizeof text, "%*s", cg->cell_w - 1,
                         !ran ? (scr->utf8 ? "\xc2\xb7" : ".") : "-");
                at = A_DIM;
            } else {
                tuifmt_fixed(shown(g, v), cg->cell_w - 1, 2, false, text, sizeof text);
                int b = (int)lroundf(recovered(g, v) * (float)(scr->n_shades - 1));
                at = draw_shade_attr(scr, b);
            }
            char cell[40];
            snprintf(cell, sizeof cell, "%*s", cg->cell_w - 1, text);
            draw_text(scr, w, y, x, cg->cell_w - 1, cell, cursor ? A_REVERSE | A_BOLD : at);
        }
        if (i == 0 && rows->before)
            draw_scroll_mark(scr, w, y, 0, '^');
        if (i == rows->count - 1 && rows->after)
            draw_scroll_mark(scr, w, y, 0, 'v');
    }
}

/* One column of the list: a heading and the top tokens of logits (or of the cell's
 * list). */
static void draw_top_column(const patch_view *pv, WINDOW *w, const tui_screen *scr, int y, int x,
                            int width, const char *heading, const int *ids, const float *probs,
                            int n)
{
    draw_text(scr, w, y, x, width, heading, A_UNDERLINE);
    for (int i = 0; i < n; i++) {
        char piece[64], prob[16], line[128];
        label_piece(pv, ids[i], width - 8 > 4 ? width - 8 : 4, scr, piece, sizeof piece);
        tuifmt_prob(probs[i], prob, sizeof prob);
        snprintf(line, sizeof line, "%6s  %s", prob, piece);
        draw_text(scr, w, y + 1 + i, x, width, line, A_NORMAL);
    }
}

static void draw_list(const patch_view *pv, const patch_grid *g, WINDOW *w, const tui_screen *scr,
                      int y, int width)
{
    char heading[96];
    if (!patch_site_positions(g->site))
        snprintf(heading, sizeof heading, "patched L%d %s%d", g->layer_first + pv->list_row,
                 g->site == PATCH_EXPERT ? "E" : "H", pv->list_col);
    else
        snprintf(heading, sizeof heading, "patched L%d pos %d", g->layer_first + pv->list_row,
                 pv->list_col);
    if (!g->clean_logits || pv->n_top == 0) {
        char line[LINE_MAX];
        snprintf(line, sizeof line, "%s: %s", heading,
                 pv->why[0] ? pv->why : "no tokens (a trace keeps none)");
        draw_text(scr, w, y, 0, width, line, A_DIM);
        return;
    }
    int col_w = width / 3, ids[TOP_SHOWN];
    float probs[TOP_SHOWN];
    int vocab = pv->src->cfg->vocab_size;
    int n = top_tokens(g->clean_logits, vocab, TOP_SHOWN, ids, probs);
    draw_top_column(pv, w, scr, y, 0, col_w - 1, "clean run", ids, probs, n);
    draw_top_column(pv, w, scr, y, col_w, col_w - 1, heading, pv->ids, pv->probs, pv->n_top);
    n = top_tokens(g->corrupt_logits, vocab, TOP_SHOWN, ids, probs);
    draw_top_column(pv, w, scr, y, 2 * col_w, width - 2 * col_w, "corrupted run", ids, probs, n);
}

static void patch_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    (void)focused;
    patch_view *pv = state;
    werase(w);
    int h = getmaxy(w), width = getmaxx(w);
    patch_grid g;
    if (h < 6 || width < 30) {
        draw_text(scr, w, 0, 0, width, "the patching view needs 30 x 8", A_DIM);
        return;
    }
    if (!patch_board_grid(pv->board, &g)) {
        draw_text(scr, w, 0, 0, width, patch_why_closed(pv), A_DIM);
        return;
    }
    pv->row = clamp(pv->row, 0, g.rows - 1);
    pv->col = clamp(pv->col, 0, g.cols - 1);
    draw_title(pv, &g, w, scr, width);
    bool heads = !patch_site_positions(g.site);
    int y0 = heads ? 2 : 3;
    int list_h = pv->list && h - y0 - 1 - LIST_ROWS >= 3 ? LIST_ROWS : 0;
    int avail = h - y0 - 1 - list_h;
    tuifmt_grid_want want = {.label_min = 3, .label_pref = 5, .cell_min = 5, .cell_max = 8};
    tuifmt_grid cg;
    tuifmt_grid_columns(&want, width, g.cols, pv->col, &cg);
    tuifmt_span rows;
    tuifmt_span_compute(g.rows, pv->row, avail, &rows);
    pv->page = avail;
    draw_labels(pv, &g, &cg, w, scr);
    draw_cells(pv, &g, &cg, &rows, y0, w, scr);
    if (list_h)
        draw_list(pv, &g, w, scr, h - 1 - list_h, width);
    char hint[LINE_MAX];
    if (pv->why[0] && !pv->list)
        snprintf(hint, sizeof hint, "%s", pv->why);
    else {
        static const char *const keys[] = {
            "arrows a cell, Enter its top tokens, s site, m metric, Esc stop / back / close",
            "arrows, Enter tokens, s site, m metric, Esc", "Enter, s, m, Esc"};
        snprintf(hint, sizeof hint, "%s", keys[tuifmt_pick(keys, 3, width)]);
    }
    draw_text(scr, w, h - 1, 0, width, hint, A_DIM);
}

const view_ops patch_view_ops = {
    .name = "patching view",
    .keys = KEYS_PATCH,
    .place = VIEW_SCREEN,
    .min_cols = 30,
    .min_rows = 8, /* six lines above the status and input lines */
    .new = patch_new,
    .free = patch_free,
    .open = patch_open,
    .why_closed = patch_why_closed,
    .is_open = patch_is_open,
    .draw = patch_draw,
    .act = patch_act,
    .why_not = patch_why_not,
};
