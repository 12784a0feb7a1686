/* attribution_view.c — the Attention pane's direct logit attribution view (a row of
 * attention_views.c): for the selected position and a target token, what each head (a
 * grid of layers by heads), each layer's MLP (a column) and, on models with per-layer
 * inputs (Gemma 4's E2B, E4B), its per-layer input (a PLE column), the embedding (a row)
 * and the control vectors wrote toward the target's logit, shaded by sign and size, then the
 * largest of them listed. 't' steps through the targets, the layer and head keys move
 * the cursor. Lines from the top: the title (target, position, logit); the
 * heads' labels; the embedding row (and the control vectors when any are in force);
 * one row per layer, its heads' parts then its MLP's, each cell shaded by sign and
 * size against the largest part (when not all fit, the layers and heads around the
 * cursor, with scroll markers where the others are); the sum against the logit (and,
 * for a family whose split is not the logit's, by how much: the final soft-cap's
 * residual, the post-norms' scales held), for which the layers give way; the largest
 * parts, "…" where more than fit.
 *
 * Reads the pane's cursor (attention_views.h: the target, the layer and head), which is
 * its state; owns nothing. The engine computes the attribution when it is drawn
 * (source_attribution); a trace cannot (it holds no weights). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention_views.h"
#include "attribution.h"
#include "format.h"

/* What the view shows. */
typedef struct {
    int pos;         /* the selected position */
    int target;      /* which target (source_attribution_target) */
    int layer, head; /* the cursor, from 0 */
} attribution_view;

enum {
    LIST_MAX = 24, /* the most parts listed */
    MLP_W = 7,     /* the MLP column and the embedding's cell: "+12.34" and a gap */
};

/* The largest |part|, against which the cells are shaded. */
static float largest(const step_attribution *a)
{
    float ref = fmaxf(fabsf(a->embedding), fabsf(a->vectors));
    for (int l = 0; l < a->n_layers; l++) {
        ref = fmaxf(ref, fabsf(a->mlp[l]));
        if (a->layer_input)
            ref = fmaxf(ref, fabsf(a->layer_input[l]));
        for (int h = 0; h < a->n_heads; h++)
            ref = fmaxf(ref, fabsf(a->head[(size_t)l * a->n_heads + h]));
    }
    return ref;
}

/* One cell of cw columns (its text in cw - 1, a gap after): v shaded against ref, or
 * "out" for a knocked-out head. */
static void draw_cell(const tui_screen *scr, WINDOW *w, int y, int x, int cw, float v, float ref,
                      bool out)
{
    char text[32], fitted[32];
    if (out)
        snprintf(text, sizeof text, "%s", cw - 1 >= 3 ? "out" : "x");
    else
        tuifmt_signed(v, cw - 1, text, sizeof text);
    int cols = tuifmt_fit(text, cw - 1, scr->utf8, fitted, sizeof fitted);
    attr_t a = out ? A_DIM : draw_signed_attr(scr, v, ref);
    wattron(w, a);
    mvwaddstr(w, y, x, fitted);
    for (int k = cols; k < cw - 1; k++)
        waddch(w, ' ');
    wattroff(w, a);
}

/* The largest parts, as many as fit lines y..y_last, each in its sign's colour. */
static void draw_largest(const tui_screen *scr, WINDOW *w, int y, int y_last, int width,
                         const step_attribution *a, float ref)
{
    static const char head[] = "largest: ";
    attribution_part top[LIST_MAX];
    int n = attribution_top(a, LIST_MAX, top);
    if (y > y_last || n == 0)
        return;
    draw_text(scr, w, y, 1, width, head, A_UNDERLINE);
    int x = 1 + (int)strlen(head);
    for (int i = 0; i < n; i++) {
        char item[48];
        tuifmt_attribution_part(&top[i], item, sizeof item);
        int len = (int)strlen(item);
        if (x + len > width + 1 && x > 1) { /* the next line */
            if (y + 1 > y_last) { /* no line left: "…" says there are more */
                draw_text(scr, w, y, x <= width ? x : width, 1, scr->utf8 ? "\xe2\x80\xa6" : "~", A_DIM);
                return;
            }
            y++;
            x = 1;
        }
        draw_text(scr, w, y, x, width + 1 - x, item, draw_signed_attr(scr, top[i].value, ref));
        x += len + 2;
    }
}

/* The title: the target, where, which candidate and its logit; shorter when it does
 * not fit. */
static void draw_title(const tui_source *src, const tui_screen *scr, WINDOW *w, int width,
                       const attribution_view *v, const step_record *r, int id, int rank,
                       const step_attribution *a)
{
    char piece[64], which[32], logit[32] = "", line[256], fitted[256];
    source_token(src, id, piece, sizeof piece);
    if (id == r->next)
        snprintf(which, sizeof which, "next");
    else
        snprintf(which, sizeof which, "top %d", rank);
    if (a)
        snprintf(logit, sizeof logit, ", logit %.2f", a->logit);
    snprintf(line, sizeof line, "attribution to %s at pos %d (%s%s)  (t)", piece, v->pos, which,
             logit);
    if (tuifmt_fit(line, (int)sizeof line, scr->utf8, fitted, sizeof fitted) > width)
        line[strlen(line) - 5] = '\0'; /* without "  (t)" */
    if (tuifmt_fit(line, (int)sizeof line, scr->utf8, fitted, sizeof fitted) > width)
        snprintf(line, sizeof line, "DLA %s pos %d (%s%s)", piece, v->pos, which, logit);
    draw_text(scr, w, 1, 1, width, line, A_BOLD);
}

/* The notes on what the split holds fixed (sum_notes): where a final soft-cap makes
 * the sum the logit before it, the cap; where post-norms scale the blocks, that their
 * scales are this position's. */
static void sum_notes(const step_attribution *a, char *cap, size_t size, const char **post)
{
    cap[0] = '\0';
    if (a->softcap != 0.0f)
        snprintf(cap, size, "soft-capped: logit = %g tanh(sum / %g)", a->softcap, a->softcap);
    *post = a->post_norms ? "post-norms: scales as at this position" : "";
}

/* The lines draw_sum takes: the sum, and its notes (on one line when it is wide
 * enough). */
static int sum_lines(const step_attribution *a, int width)
{
    char cap[64];
    const char *post;
    sum_notes(a, cap, sizeof cap, &post);
    if (cap[0] && post[0])
        return (int)(strlen(cap) + strlen(post) + 2) <= width ? 2 : 3;
    return 1 + (cap[0] != '\0') + (post[0] != '\0');
}

/* The parts' sum against the logit (with a soft-cap, the residual logit − sum), and
 * its notes, on lines y..y_last; notes that do not fit there are said to be left out
 * ("…" after the sum). Returns the next free line. */
static int draw_sum(const tui_screen *scr, WINDOW *w, int y, int y_last, int width,
                    const step_attribution *a)
{
    char line[200], cap[64];
    const char *post;
    if (y > y_last)
        return y;
    sum_notes(a, cap, sizeof cap, &post);
    double sum = attribution_sum(a);
    if (a->softcap == 0.0f)
        snprintf(line, sizeof line, "parts sum %.3f, logit %.3f, norm scale %.3g", sum, a->logit,
                 a->norm_scale);
    else
        snprintf(line, sizeof line, "parts sum %.3f, logit %.3f, residual %+.3f", sum, a->logit,
                 a->logit - sum);
    if (y + sum_lines(a, width) - 1 > y_last && (cap[0] || post[0]))
        strcat(line, scr->utf8 ? " \xe2\x80\xa6" : " ~");
    draw_text(scr, w, y++, 1, width, line, A_DIM);
    if (cap[0] && post[0] && (int)(strlen(cap) + strlen(post) + 2) <= width && y <= y_last) {
        snprintf(line, sizeof line, "%s; %s", cap, post);
        draw_text(scr, w, y++, 1, width, line, A_DIM);
        return y;
    }
    if (cap[0] && y <= y_last)
        draw_text(scr, w, y++, 1, width, cap, A_DIM);
    if (post[0] && y <= y_last)
        draw_text(scr, w, y++, 1, width, post, A_DIM);
    return y;
}

/* The view v into w's h x width inside (from row 1, column 1). */
static void draw_attribution(const tui_source *src, const tui_screen *scr, WINDOW *w, int h,
                             int width, const attribution_view *v)
{
    const step_record *r = source_record(src, v->pos);
    int id, rank;
    if (!r || source_attribution_target(r, v->target, &id, &rank) == 0) {
        draw_text(scr, w, 1, 1, width, "attribution: no candidates at this position", A_DIM);
        return;
    }
    const step_attribution *a = source_attribution(src, v->pos, id);
    draw_title(src, scr, w, width, v, r, id, rank, a);
    if (!a) {
        draw_text(scr, w, 2, 1, width,
                  source_live(src) ? "no attribution: out of memory"
                                   : "attribution needs the model: a trace has no weights",
                  A_DIM);
        return;
    }
    int nl = a->n_layers, nh = a->n_heads;
    /* the heads' cells: "+2.31" at most, "+.12" at least (fewer heads, around the
     * cursor, when not all fit); the MLP column keeps "+12.34" */
    bool ple = a->layer_input != NULL; /* a PLE column after the MLP's */
    tuifmt_grid_want want = {.label_min = 4, .label_pref = 4, .cell_min = 5, .cell_max = 7,
                             .reserve = ple ? 2 * MLP_W : MLP_W};
    tuifmt_grid g;
    tuifmt_grid_columns(&want, width, nh, v->head, &g);
    /* below the layers: the sum (and its notes) and at least one line of the largest
     * parts; the layers get the rest (at least one, scrolled by the layer cursor) */
    int list_min = h >= 6 ? 1 : 0, sums = sum_lines(a, width);
    int layer_rows = h - 3 - sums - list_min;
    if (layer_rows < 1 && sums > 1) /* the notes give way first (the sum says so) */
        layer_rows = h - 4 - list_min;
    tuifmt_span rows;
    tuifmt_span_compute(nl, v->layer, layer_rows, &rows);
    if (g.cols.count < 1 || rows.count < 1)
        return;
    float ref = largest(a);
    int lw = g.label_w, cw = g.cell_w, h0 = g.cols.first, shown = g.cols.count;
    int mlp_x = 1 + lw + shown * cw, mw = width + 1 - mlp_x; /* the MLP column: what is left */
    mw = mw > MLP_W ? MLP_W : mw;
    int ple_x = mlp_x + mw, pw = ple ? width + 1 - ple_x : 0; /* then the PLE column */
    pw = pw > MLP_W ? MLP_W : pw;
    char label[24];
    for (int hd = h0; hd < h0 + shown; hd++) {
        snprintf(label, sizeof label, cw >= 4 ? "H%d" : "%d", hd + 1);
        draw_text(scr, w, 2, 1 + lw + (hd - h0) * cw, cw - 1, label,
                  hd == v->head ? A_REVERSE : A_DIM);
    }
    if (g.cols.before)
        draw_scroll_mark(scr, w, 2, lw, '<');
    if (g.cols.after)
        draw_scroll_mark(scr, w, 2, mlp_x - 1, '>');
    draw_text(scr, w, 2, mlp_x, width + 1 - mlp_x, "MLP", A_DIM);
    if (pw >= 2)
        draw_text(scr, w, 2, ple_x, pw, "PLE", A_DIM);
    draw_text(scr, w, 3, 1, lw - 1, "emb", A_DIM);
    draw_cell(scr, w, 3, 1 + lw, MLP_W, a->embedding, ref, false);
    if (a->vectors != 0.0f && 1 + lw + 2 * MLP_W + 8 <= width + 1) {
        draw_text(scr, w, 3, 1 + lw + MLP_W, 8, "vectors", A_DIM);
        draw_cell(scr, w, 3, 1 + lw + MLP_W + 8, MLP_W, a->vectors, ref, false);
    }
    for (int i = 0; i < rows.count; i++) {
        int l = rows.first + i, y = 4 + i;
        snprintf(label, sizeof label, "L%d", l + 1);
        draw_text(scr, w, y, 1, lw - 1, label, l == v->layer ? A_REVERSE : A_DIM);
        if (i == 0 && rows.before)
            draw_scroll_mark(scr, w, y, lw, '^');
        if (i == rows.count - 1 && rows.after)
            draw_scroll_mark(scr, w, y, lw, 'v');
        for (int hd = h0; hd < h0 + shown; hd++)
            draw_cell(scr, w, y, 1 + lw + (hd - h0) * cw, cw,
                      a->head[(size_t)l * nh + hd], ref, source_head_out(src, l, hd));
        if (mw >= 2)
            draw_cell(scr, w, y, mlp_x, mw, a->mlp[l], ref, false);
        if (pw >= 2)
            draw_cell(scr, w, y, ple_x, pw, a->layer_input[l], ref, false);
    }
    int y = draw_sum(scr, w, 4 + rows.count, h - list_min, width, a);
    draw_largest(scr, w, y, h, width, a, ref);
}

static void attribution_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    const attn_cursor *c = state;
    attribution_view v = {selection_get(c->sel, c->src), c->target, c->layer, c->head};
    draw_attribution(c->src, scr, w, getmaxy(w) - 2, getmaxx(w) - 2, &v);
}

const view_ops attribution_view_ops = {
    .name = "attribution",
    .keys = KEYS_ATTN,
    .place = VIEW_IN_PANE,
    .draw = attribution_draw,
};
