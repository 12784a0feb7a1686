/* compute_view.c — the compute view (see compute_view.h): the list of a layer's steps,
 * a step's whole tensor, the weight behind a step. Its text is compute_format.c's;
 * this file keeps the state, moves it on keys and draws. */
#include "compute_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute_format.h"
#include "format.h"

enum { STEPS_MAX = 48, CELL_W = 9, INDEX_W = 7 };

typedef enum { LEVEL_LIST = 0, LEVEL_TENSOR, LEVEL_WEIGHT } view_level;

typedef struct {
    const tui_source *src;
    tui_selection *sel;      /* shared with Tokens and Attention */
    bool open;
    view_level level;
    view_level weight_from;  /* where Esc goes back to from the weight */
    int pos;                 /* the position shown */
    int layer;               /* -1: before the layers; n_layers: after; else a layer */
    int near;                /* the last real layer shown (its pass has the others) */
    int step;                /* the selected step in the list */
    char step_name[STEP_TENSOR_NAME]; /* kept across layers */
    int head;                /* the tensor's head shown */
    int elem;                /* the tensor's cursor, within the head's values */
    int top;                 /* the tensor's first row shown; the weight's first line */
    int page;                /* rows of the tensor or lines of the weight a page shows */
    int cols;                /* values a row of the tensor shows */
    int row, group;          /* the weight's output element and input group */
    source_step steps[STEPS_MAX];
    int n_steps;
    const char *why;         /* why there are no steps */
    step_weight weight;
    compute_text text;
} compute_view;

static void *compute_new(const view_env *env)
{
    compute_view *cv = calloc(1, sizeof *cv);
    if (!cv)
        tui_die("out of memory");
    cv->src = env->src;
    cv->sel = env->sel;
    return cv;
}

static void compute_free(void *state)
{
    free(state);
}

static bool compute_is_open(const void *state)
{
    const compute_view *cv = state;
    return cv->open;
}

/* Opens the list at the selected position (the layer and step it showed last). */
static void compute_open(void *state)
{
    compute_view *cv = state;
    cv->open = true;
    cv->level = LEVEL_LIST;
    cv->pos = selection_get(cv->sel, cv->src);
}

/* ---- what is shown ---- */

static int n_layers(const compute_view *cv)
{
    return cv->src->cfg->n_layers;
}

/* The steps of the position and layer into cv->steps; the selected one kept by name. */
static void load_steps(compute_view *cv)
{
    int count = source_count(cv->src);
    if (cv->pos >= count)
        cv->pos = count - 1;
    cv->n_steps = cv->pos < 0 ? 0
                              : source_steps(cv->src, cv->pos, cv->layer, cv->near, cv->steps,
                                             STEPS_MAX, &cv->why);
    if (cv->pos < 0)
        cv->why = "no tokens yet";
    for (int i = 0; i < cv->n_steps; i++)
        if (!strcmp(cv->steps[i].sum.name, cv->step_name))
            cv->step = i;
    if (cv->step >= cv->n_steps)
        cv->step = cv->n_steps > 0 ? cv->n_steps - 1 : 0;
    if (cv->step < 0)
        cv->step = 0;
    if (cv->n_steps > 0)
        snprintf(cv->step_name, sizeof cv->step_name, "%s", cv->steps[cv->step].sum.name);
}

static const source_step *current(const compute_view *cv)
{
    return cv->n_steps > 0 ? &cv->steps[cv->step] : NULL;
}

/* Heads of the step (its rows when it has two dimensions), and values a head has. */
static int heads_of(const source_step *s)
{
    return s->sum.n_dims == 2 ? s->sum.shape[0] : 1;
}

static int per_head(const source_step *s)
{
    return s->sum.n_dims == 2 ? s->sum.shape[1] : s->sum.n;
}

/* "layer 2/5 (il 1)", "embedding", "output". */
static void layer_label(const compute_view *cv, char *out, size_t size)
{
    if (cv->layer < 0)
        snprintf(out, size, "before the layers");
    else if (cv->layer >= n_layers(cv))
        snprintf(out, size, "after the layers");
    else
        snprintf(out, size, "layer %d/%d (il %d)", cv->layer + 1, n_layers(cv), cv->layer);
}

/* ---- keys ---- */

static void move_layer(compute_view *cv, int d)
{
    int span = n_layers(cv) + 2; /* -1 .. n_layers */
    cv->layer = (cv->layer + 1 + d + span) % span - 1;
    if (cv->layer >= 0 && cv->layer < n_layers(cv))
        cv->near = cv->layer;
    cv->head = cv->elem = cv->top = 0;
}

static void move_position(compute_view *cv, key_action a)
{
    selection_set(cv->sel, cv->src, cv->pos);
    selection_act(cv->sel, cv->src, a);
    cv->pos = selection_get(cv->sel, cv->src);
}

/* The element the weight of the list opens at: the largest logit (the token the model
 * predicts), else the largest |value|; 0 without values. */
static int largest_element(const source_step *s)
{
    int best = 0;
    bool logits = s->point == HOOK_RESULT_OUTPUT;
    for (int i = 1; s->values && i < s->sum.n; i++) {
        float v = logits ? s->values[i] : fabsf(s->values[i]);
        float b = logits ? s->values[best] : fabsf(s->values[best]);
        if (v > b || !isfinite(b))
            best = i;
    }
    return best;
}

static void open_weight(compute_view *cv)
{
    const source_step *s = current(cv);
    if (!s)
        return;
    cv->weight_from = cv->level;
    cv->row = cv->level == LEVEL_TENSOR ? cv->head * per_head(s) + cv->elem : largest_element(s);
    cv->group = 0;
    cv->top = 0;
    cv->level = LEVEL_WEIGHT;
}

static void back(compute_view *cv)
{
    if (cv->level == LEVEL_WEIGHT) {
        cv->level = cv->weight_from;
        cv->top = 0;
    } else if (cv->level == LEVEL_TENSOR) {
        cv->level = LEVEL_LIST;
    } else {
        cv->open = false;
    }
}

/* The tensor's cursor moved by d values (within the head), the page following it. */
static void move_elem(compute_view *cv, int d)
{
    const source_step *s = current(cv);
    if (!s)
        return;
    int n = s->values ? per_head(s) : s->sum.n_first;
    cv->elem += d;
    cv->elem = cv->elem < 0 ? 0 : cv->elem >= n ? n - 1 : cv->elem;
    int cols = cv->cols > 0 ? cv->cols : 1, row = cv->elem / cols;
    if (row < cv->top)
        cv->top = row;
    if (cv->page > 0 && row >= cv->top + cv->page)
        cv->top = row - cv->page + 1;
}

static bool act_list(compute_view *cv, key_action a)
{
    switch (a) {
    case ACT_CELL_UP: cv->step--; break;
    case ACT_CELL_DOWN: cv->step++; break;
    case ACT_PAGE_UP: cv->step -= cv->page > 1 ? cv->page : 1; break;
    case ACT_PAGE_DOWN: cv->step += cv->page > 1 ? cv->page : 1; break;
    case ACT_SEL_PREV: case ACT_SEL_NEXT: case ACT_SEL_FIRST: case ACT_SEL_NEWEST:
    case ACT_SEL_BACK10: case ACT_SEL_AHEAD10:
        move_position(cv, a);
        return true;
    case ACT_OPEN_HEAD:
        if (current(cv)) {
            cv->level = LEVEL_TENSOR;
            cv->head = cv->elem = cv->top = 0;
        }
        return true;
    default: return false;
    }
    cv->step = cv->step < 0 ? 0 : cv->step >= cv->n_steps ? cv->n_steps - 1 : cv->step;
    if (current(cv))
        snprintf(cv->step_name, sizeof cv->step_name, "%s", current(cv)->sum.name);
    return true;
}

static bool act_tensor(compute_view *cv, key_action a)
{
    const source_step *s = current(cv);
    int cols = cv->cols > 0 ? cv->cols : 1, page = cv->page > 0 ? cv->page : 1;
    switch (a) {
    case ACT_SEL_PREV: move_elem(cv, -1); return true;
    case ACT_SEL_NEXT: move_elem(cv, 1); return true;
    case ACT_CELL_UP: move_elem(cv, -cols); return true;
    case ACT_CELL_DOWN: move_elem(cv, cols); return true;
    case ACT_PAGE_UP: move_elem(cv, -cols * page); return true;
    case ACT_PAGE_DOWN: move_elem(cv, cols * page); return true;
    case ACT_SEL_FIRST: move_elem(cv, -(1 << 30)); return true;
    case ACT_SEL_NEWEST: move_elem(cv, 1 << 30); return true;
    case ACT_HEAD_PREV:
    case ACT_HEAD_NEXT:
        if (s && s->values && heads_of(s) > 1)
            cv->head = (cv->head + (a == ACT_HEAD_NEXT ? 1 : heads_of(s) - 1)) % heads_of(s);
        return true;
    default: return false;
    }
}

static bool act_weight(compute_view *cv, key_action a)
{
    int page = cv->page > 1 ? cv->page - 1 : 1;
    switch (a) {
    case ACT_CELL_UP: cv->top--; break;
    case ACT_CELL_DOWN: cv->top++; break;
    case ACT_PAGE_UP: cv->top -= page; break;
    case ACT_PAGE_DOWN: cv->top += page; break;
    case ACT_SEL_FIRST: cv->top = 0; break;
    case ACT_SEL_NEWEST: cv->top = 1 << 20; break;
    case ACT_SEL_PREV: cv->group = cv->group > 0 ? cv->group - 1 : 0; return true;
    case ACT_SEL_NEXT: cv->group++; return true; /* clamped by step_weight_explain */
    default: return false;
    }
    return true; /* the scroll is clamped when drawn */
}

/* Is a one of the view's actions (the key table's Compute view rows but p and n)? */
static bool own_action(key_action a)
{
    switch (a) {
    case ACT_COMPUTE: case ACT_COMPUTE_BACK: case ACT_COMPUTE_WEIGHT:
    case ACT_LAYER_PREV: case ACT_LAYER_NEXT: case ACT_HEAD_PREV: case ACT_HEAD_NEXT:
    case ACT_CELL_UP: case ACT_CELL_DOWN: case ACT_PAGE_UP: case ACT_PAGE_DOWN:
    case ACT_SEL_PREV: case ACT_SEL_NEXT: case ACT_SEL_FIRST: case ACT_SEL_NEWEST:
    case ACT_SEL_BACK10: case ACT_SEL_AHEAD10: case ACT_OPEN_HEAD:
        return true;
    default: return false;
    }
}

/* Runs one of its actions, whatever the level makes of it (compute_why_not says when
 * it does nothing); ACT_COMPUTE_BACK at the list, and ACT_COMPUTE, close it. False for
 * any other action: the controller's. */
static bool compute_act(void *state, key_action a)
{
    compute_view *cv = state;
    if (!own_action(a))
        return false;
    switch (a) {
    case ACT_COMPUTE: cv->open = false; return true;
    case ACT_COMPUTE_BACK: back(cv); return true;
    case ACT_LAYER_PREV:
    case ACT_LAYER_NEXT:
        move_layer(cv, a == ACT_LAYER_NEXT ? 1 : -1);
        if (cv->level == LEVEL_WEIGHT)
            cv->level = cv->weight_from;
        return true;
    case ACT_COMPUTE_WEIGHT:
        if (cv->level != LEVEL_WEIGHT)
            open_weight(cv);
        return true;
    default: break;
    }
    if (cv->level == LEVEL_LIST)
        act_list(cv, a);
    else if (cv->level == LEVEL_TENSOR)
        act_tensor(cv, a);
    else
        act_weight(cv, a);
    return true;
}

/* Why a would change nothing now (the status line says it), or NULL. */
static const char *compute_why_not(void *state, key_action a)
{
    compute_view *cv = state;
    if (!own_action(a))
        return NULL;
    load_steps(cv);
    const source_step *s = current(cv);
    bool head = a == ACT_HEAD_PREV || a == ACT_HEAD_NEXT;
    if (a == ACT_COMPUTE_WEIGHT && cv->level != LEVEL_WEIGHT) {
        if (!s)
            return cv->why;
        if (!source_live(cv->src))
            return "the weights need the model: a trace has none";
        if (s->point >= HOOK_COUNT || !step_weight_has(s->point))
            return "this step multiplies by no weight (w works on Qcur, Kcur, Vcur, kqv_out, "
                   "ffn_gate, ffn_up, ffn_out, result_output)";
    }
    if (head && cv->level != LEVEL_TENSOR)
        return "{ and } pick the head of a step's tensor: Enter opens it";
    if (head && s && (!s->values || heads_of(s) < 2))
        return "this step has no heads to pick";
    if (a == ACT_OPEN_HEAD && cv->level == LEVEL_LIST && !s)
        return cv->why;
    if (a == ACT_OPEN_HEAD && cv->level != LEVEL_LIST)
        return "Enter opens a step from the list: Esc goes back to it";
    bool back = a == ACT_SEL_PREV || a == ACT_SEL_BACK10 || a == ACT_SEL_FIRST;
    bool ahead = a == ACT_SEL_NEXT || a == ACT_SEL_AHEAD10 || a == ACT_SEL_NEWEST;
    if (cv->level == LEVEL_LIST && back && cv->pos <= 0)
        return "already at the first position";
    if (cv->level == LEVEL_LIST && ahead && cv->pos >= source_count(cv->src) - 1)
        return "already at the newest position";
    return NULL;
}

/* ---- drawing ---- */

/* The list: title, header, a row a step (around the selected one, with scroll markers
 * where the others are), what the step is, the keys. */
static void draw_list(compute_view *cv, WINDOW *w, const tui_screen *scr, int h, int width)
{
    char line[COMPUTE_LINE_MAX], label[64], piece[64];
    layer_label(cv, label, sizeof label);
    const int *toks = source_tokens(cv->src);
    piece[0] = '\0';
    if (cv->pos >= 0)
        source_token(cv->src, toks[cv->pos], piece, sizeof piece);
    const char *titles[3];
    char full[256], shorter[256], shortest[128];
    char at[96]; /* the position and its token, or that there is none yet */
    if (cv->pos >= 0)
        snprintf(at, sizeof at, "pos %d %s", cv->pos, piece);
    else
        snprintf(at, sizeof at, "no position yet");
    snprintf(full, sizeof full, "compute  %s  %s  ([ ] layer, Left Right position)", at, label);
    snprintf(shorter, sizeof shorter, "compute  %s  %s", at, label);
    if (cv->pos >= 0)
        snprintf(shortest, sizeof shortest, "pos %d  %s", cv->pos, label);
    else
        snprintf(shortest, sizeof shortest, "no position  %s", label);
    titles[0] = full;
    titles[1] = shorter;
    titles[2] = shortest;
    draw_text(scr, w, 0, 0, width, titles[tuifmt_pick(titles, 3, width)], A_BOLD);
    if (cv->n_steps == 0) {
        draw_text(scr, w, 2, 0, width, cv->why, A_DIM);
        return;
    }
    int shape_w = 5, name_w = 9;
    for (int i = 0; i < cv->n_steps; i++) {
        char sh[32];
        int n = cfmt_shape(&cv->steps[i].sum, sh, sizeof sh), m = (int)strlen(cv->steps[i].sum.name);
        shape_w = n > shape_w ? n : shape_w;
        name_w = m > name_w ? m : name_w;
    }
    compute_columns cols;
    compute_columns_for(width - 1, name_w, shape_w, &cols); /* a column for the scroll markers */
    compute_header(&cols, line, sizeof line);
    draw_text(scr, w, 1, 1, width - 1, line, A_UNDERLINE);
    int rows = h - 4; /* title, header, about, keys */
    cv->page = rows;
    tuifmt_span span;
    tuifmt_span_compute(cv->n_steps, cv->step, rows, &span);
    for (int i = 0; i < span.count; i++) {
        int k = span.first + i;
        compute_row(&cv->steps[k].sum, &cols, scr->utf8, line, sizeof line);
        draw_text(scr, w, 2 + i, 1, width - 1, line, k == cv->step ? A_REVERSE : A_NORMAL);
        if (i == 0 && span.before)
            draw_scroll_mark(scr, w, 2, 0, '^');
        if (i == span.count - 1 && span.after)
            draw_scroll_mark(scr, w, 2 + i, 0, 'v');
    }
    const source_step *s = current(cv);
    bool weight = s->point < HOOK_COUNT && step_weight_has(s->point);
    snprintf(line, sizeof line, "%s: %s%s", s->sum.name, compute_step_about(s->sum.name),
             weight ? "  (w: its weight)" : "");
    draw_text(scr, w, h - 2, 0, width, line, A_DIM);
    char keys[2][192];
    snprintf(keys[0], sizeof keys[0], "%s%s%sUp Down step, Enter its values, w weight, Esc close",
             cols.hidden[0] ? "not shown at this width: " : "", cols.hidden,
             cols.hidden[0] ? "; " : "");
    snprintf(keys[1], sizeof keys[1], "%s%s%sEnter values, w weight, Esc",
             cols.hidden[0] ? "hidden: " : "", cols.hidden, cols.hidden[0] ? "; " : "");
    const char *const pick[] = {keys[0], keys[1]};
    draw_text(scr, w, h - 1, 0, width, pick[tuifmt_pick(pick, 2, width)], A_DIM);
}

/* The tensor's footer: the cursor's element and value (a key's piece at the scores,
 * a token's at the logits). */
static void tensor_footer(compute_view *cv, const source_step *s, const float *v, int n, char *out,
                          size_t size)
{
    char num[32], extra[96] = "";
    int flat = cv->head * per_head(s) + cv->elem;
    cfmt_number(cv->elem < n ? v[cv->elem] : NAN, 12, num, sizeof num);
    if (hook_per_head(s->point)) {
        char piece[64];
        source_token(cv->src, source_tokens(cv->src)[cv->elem], piece, sizeof piece);
        snprintf(extra, sizeof extra, " (key %d %s)", cv->elem, piece);
    } else if (s->point == HOOK_RESULT_OUTPUT) {
        char piece[64];
        source_token(cv->src, cv->elem, piece, sizeof piece);
        snprintf(extra, sizeof extra, " (token %s)", piece);
    }
    char at[48];
    if (s->sum.n_dims == 2)
        snprintf(at, sizeof at, "[%d,%d] (flat %d)", cv->head, cv->elem, flat);
    else
        snprintf(at, sizeof at, "[%d]", flat);
    snprintf(out, size, "%s%s = %s%s%s", s->sum.name, at, num, extra,
             s->values && step_weight_has(s->point) ? "; w: its weight" : "");
}

/* A step's tensor: one head at a time where it has heads, rows of values with the
 * index of each row's first, the cursor's value below. A trace: its first values. */
static void draw_tensor(compute_view *cv, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const source_step *s = current(cv);
    char line[COMPUTE_LINE_MAX], label[64], shape[32];
    if (!s) {
        cv->level = LEVEL_LIST;
        return;
    }
    layer_label(cv, label, sizeof label);
    cfmt_shape(&s->sum, shape, sizeof shape);
    int heads = heads_of(s), n = s->values ? per_head(s) : s->sum.n_first;
    if (cv->head >= heads)
        cv->head = 0;
    if (s->values && heads > 1)
        snprintf(line, sizeof line, "%s %s  %s  pos %d  head %d/%d ({ })", s->sum.name, shape,
                 label, cv->pos, cv->head + 1, heads);
    else
        snprintf(line, sizeof line, "%s %s  %s  pos %d%s", s->sum.name, shape, label, cv->pos,
                 s->values ? "" : "  (a trace keeps the first values only)");
    draw_text(scr, w, 0, 0, width, line, A_BOLD);
    const float *v = s->values ? s->values + (size_t)cv->head * per_head(s) : s->sum.first;
    int fit = (width - INDEX_W) / CELL_W;
    for (cv->cols = 1; cv->cols * 2 <= fit; cv->cols *= 2) /* a power of two: heads line up */
        ;
    cv->page = h - 2 > 1 ? h - 2 : 1;
    int rows = (n + cv->cols - 1) / cv->cols;
    if (cv->elem >= n)
        cv->elem = n > 0 ? n - 1 : 0;
    move_elem(cv, 0); /* the page follows the cursor */
    for (int r = 0; r < cv->page && cv->top + r < rows; r++) {
        int first = (cv->top + r) * cv->cols;
        snprintf(line, sizeof line, "%*d", INDEX_W - 1, first);
        draw_text(scr, w, 1 + r, 0, INDEX_W - 1, line, A_DIM);
        for (int c = 0; c < cv->cols && first + c < n; c++) {
            char num[32];
            cfmt_number(v[first + c], CELL_W - 1, num, sizeof num);
            snprintf(line, sizeof line, "%*s", CELL_W - 1, num);
            draw_text(scr, w, 1 + r, INDEX_W + c * CELL_W, CELL_W - 1, line,
                      first + c == cv->elem ? A_REVERSE : A_NORMAL);
        }
    }
    if (cv->top > 0)
        draw_scroll_mark(scr, w, 1, 0, '^');
    if (cv->top + cv->page < rows)
        draw_scroll_mark(scr, w, cv->page, 0, 'v');
    tensor_footer(cv, s, v, n, line, sizeof line);
    char keyed[COMPUTE_LINE_MAX + 32];
    snprintf(keyed, sizeof keyed, "%s  PgUp PgDn, Esc back", line);
    const char *const pick[] = {keyed, line};
    draw_text(scr, w, h - 1, 0, width, pick[tuifmt_pick(pick, 2, width)], A_DIM);
}

/* The weight behind the step: compute_format's lines, scrolled. */
static void draw_weight(compute_view *cv, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const source_step *s = current(cv);
    const char *why = "no step";
    char line[COMPUTE_LINE_MAX], label[64];
    layer_label(cv, label, sizeof label);
    char piece[64] = "";
    if (s && s->point == HOOK_RESULT_OUTPUT) /* the row is a token's */
        source_token(cv->src, cv->row, piece, sizeof piece);
    snprintf(line, sizeof line, "the weight behind %s%s%s  %s  pos %d", s ? s->sum.name : "?",
             *piece ? " of " : "", piece, label, cv->pos);
    draw_text(scr, w, 0, 0, width, line, A_BOLD);
    if (!s || !source_step_weight(cv->src, cv->pos, cv->layer, cv->near, s->point, cv->row,
                                  cv->group, &cv->weight, &why)) {
        draw_text(scr, w, 1, 0, width, why, A_DIM);
        return;
    }
    cv->group = cv->weight.group;
    compute_weight_text(&cv->weight, width - 1, &cv->text);
    cv->page = h - 2 > 1 ? h - 2 : 1;
    int most = cv->text.n - cv->page > 0 ? cv->text.n - cv->page : 0;
    cv->top = cv->top < 0 ? 0 : cv->top > most ? most : cv->top;
    for (int i = 0; i < cv->page && cv->top + i < cv->text.n; i++)
        draw_text(scr, w, 1 + i, 1, width - 1, cv->text.line[cv->top + i], A_NORMAL);
    if (cv->top > 0)
        draw_scroll_mark(scr, w, 1, 0, '^');
    if (cv->top < most)
        draw_scroll_mark(scr, w, cv->page, 0, 'v');
    static const char *const keys[] = {
        "Up Down PgUp PgDn scroll, Left Right the input group, Esc back",
        "PgUp PgDn scroll, Left Right group, Esc back", "Left Right group, Esc"};
    draw_text(scr, w, h - 1, 0, width, keys[tuifmt_pick(keys, 3, width)], A_DIM);
}

/* Draws the view into w (the whole screen but the status line). */
static void compute_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    compute_view *cv = state;
    werase(w);
    int h = getmaxy(w), width = getmaxx(w);
    if (h < 3 || width < 20) {
        draw_text(scr, w, 0, 0, width, "the compute view needs 20 x 3", A_DIM);
        return;
    }
    load_steps(cv);
    if (cv->level == LEVEL_TENSOR)
        draw_tensor(cv, w, scr, h, width);
    else if (cv->level == LEVEL_WEIGHT)
        draw_weight(cv, w, scr, h, width);
    else
        draw_list(cv, w, scr, h, width);
}

const view_ops compute_view_ops = {
    .name = "compute view",
    .keys = KEYS_COMPUTE,
    .place = VIEW_SCREEN,
    .min_cols = 20,
    .min_rows = 5, /* three lines above the status and input lines */
    .new = compute_new,
    .free = compute_free,
    .open = compute_open,
    .is_open = compute_is_open,
    .draw = compute_draw,
    .act = compute_act,
    .why_not = compute_why_not,
};
