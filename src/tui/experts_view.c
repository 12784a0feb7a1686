/* experts_view.c — the experts view (see experts_view.h): the layers' routes and heat
 * strips, a layer's router distribution, the positions that chose an expert. Its text
 * is experts_format.c's; this file keeps the state, moves it on keys and draws. */
#include "experts_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experts_format.h"
#include "format.h"

enum { STEPS_MAX = 48, ROUTE_MAX = 64 };

typedef enum { LEVEL_LAYERS = 0, LEVEL_ROUTER, LEVEL_TOKENS } experts_level;

typedef struct {
    const tui_source *src;
    tui_selection *sel;      /* shared with Tokens and Attention: the position shown */
    bool open;
    experts_level level;
    bool all;                /* the counts over every position, else the reply around */
    int layer;               /* the layers' cursor: the layer Enter opens */
    int rank;                /* the router's cursor: a rank (0: the most probable) */
    int follow;              /* an expert x or f acted on, whose new rank the cursor takes
                                at the next draw (its probability may change); -1: none */
    int expert;              /* the expert whose positions are listed */
    int item;                /* the tokens' cursor */
    int page;                /* rows the level shows (PgUp, PgDn) */
    /* what the last draw or key worked out (ensure) */
    int pos, first, last;    /* the position; the counts' range */
    bool reply;              /* the range is a reply (else the prompt, or all) */
    int cap_experts, cap_pos; /* the scratch's sizes */
    int *counts;             /* (n_experts) at one layer over the range */
    int *cells;              /* (n_experts) the strip's cells */
    int *order;              /* (n_experts) the router's ranking */
    int *chose;              /* (cap_pos) positions that chose `expert` */
    float *chose_w;          /* (cap_pos) its weight there */
    bool *prompt;            /* (cap_pos) each position is the prompt's */
    source_step steps[STEPS_MAX];
} experts_view;

static void *experts_new(const view_env *env)
{
    experts_view *ev = calloc(1, sizeof *ev);
    if (!ev)
        tui_die("out of memory");
    ev->src = env->src;
    ev->sel = env->sel;
    ev->follow = -1;
    return ev;
}

static void experts_free(void *state)
{
    experts_view *ev = state;
    if (!ev)
        return;
    free(ev->counts);
    free(ev->cells);
    free(ev->order);
    free(ev->chose);
    free(ev->chose_w);
    free(ev->prompt);
    free(ev);
}

static const expert_routes *routes(const experts_view *ev)
{
    return source_routes(ev->src);
}

static const char *experts_why_closed(void *state)
{
    experts_view *ev = state;
    if (ev->src->rc)
        return "experts: a served model's routes stay on the server (the view needs a local model)";
    if (!source_live(ev->src))
        return "experts: a trace keeps no routes (the experts view needs the model)";
    if (!routes(ev))
        return "experts: this model has no mixture of experts";
    return NULL;
}

static bool experts_is_open(const void *state)
{
    const experts_view *ev = state;
    return ev->open;
}

static void experts_open(void *state)
{
    experts_view *ev = state;
    ev->open = true;
    ev->level = LEVEL_LAYERS;
}

/* ---- what is shown ---- */

static void *grow(void *p, size_t bytes)
{
    void *q = realloc(p, bytes);
    if (!q)
        tui_die("out of memory");
    return q;
}

/* The position, the range and the scratch for them, as the source has them now. */
static void ensure(experts_view *ev)
{
    const expert_routes *r = routes(ev);
    int n = source_count(ev->src), E = expert_routes_experts(r);
    if (E > ev->cap_experts) {
        ev->counts = grow(ev->counts, sizeof(int) * E);
        ev->cells = grow(ev->cells, sizeof(int) * E);
        ev->order = grow(ev->order, sizeof(int) * E);
        ev->cap_experts = E;
    }
    if (n > ev->cap_pos) {
        int cap = n < 256 ? 256 : n * 2;
        ev->chose = grow(ev->chose, sizeof(int) * cap);
        ev->chose_w = grow(ev->chose_w, sizeof(float) * cap);
        ev->prompt = grow(ev->prompt, sizeof(bool) * cap);
        ev->cap_pos = cap;
    }
    for (int p = 0; p < n; p++) /* the phases only: no pending record is completed */
        ev->prompt[p] = source_phase(ev->src, p) == STEP_PROMPT;
    ev->pos = selection_get(ev->sel, ev->src);
    ev->reply = ev->pos >= 0 && experts_range(ev->prompt, n, ev->pos, ev->all, &ev->first,
                                              &ev->last);
    if (ev->pos < 0) {
        ev->first = 0;
        ev->last = -1;
    }
    int L = expert_routes_layers(r);
    ev->layer = ev->layer < 0 ? 0 : ev->layer >= L ? L - 1 : ev->layer;
}

/* "the reply, positions 30-61", "the prompt, positions 0-29", "every position, 0-61". */
static void range_label(const experts_view *ev, char *out, size_t size)
{
    snprintf(out, size, "%s %d-%d", ev->all ? "every position," : ev->reply ? "the reply, positions"
                                                                            : "the prompt, positions",
             ev->first, ev->last);
}

/* The router's probabilities at the position and the view's layer (ffn_moe_probs), or
 * NULL with *why. Valid until the next call. */
static const float *router_probs(experts_view *ev, const char **why)
{
    if (ev->pos < 0) {
        *why = "no tokens yet";
        return NULL;
    }
    int n = source_steps(ev->src, ev->pos, ev->layer, ev->layer, ev->steps, STEPS_MAX, why);
    for (int i = 0; i < n; i++)
        if (ev->steps[i].point == HOOK_FFN_MOE_PROBS && ev->steps[i].values)
            return ev->steps[i].values;
    if (n > 0)
        *why = "this layer handed no router distribution";
    return NULL;
}

/* How often expert e was chosen at the view's layer over the range (ev->counts). */
static int count_layer(experts_view *ev)
{
    return expert_routes_count(routes(ev), ev->layer, ev->first, ev->last, ev->counts);
}

/* ---- keys ---- */

static void clamp(int *v, int n)
{
    *v = *v >= n ? n - 1 : *v;
    *v = *v < 0 ? 0 : *v;
}

static int rows_of_level(experts_view *ev)
{
    const expert_routes *r = routes(ev);
    switch (ev->level) {
    case LEVEL_LAYERS: return expert_routes_layers(r);
    case LEVEL_ROUTER: return expert_routes_experts(r);
    default:
        return expert_routes_chose(r, ev->layer, ev->expert, ev->first, ev->last, NULL, NULL, 0);
    }
}

static void move_cursor(experts_view *ev, int d)
{
    int *cur = ev->level == LEVEL_LAYERS ? &ev->layer : ev->level == LEVEL_ROUTER ? &ev->rank : &ev->item;
    *cur += d;
    clamp(cur, rows_of_level(ev));
}

static void open_level(experts_view *ev)
{
    if (ev->level == LEVEL_LAYERS) {
        ev->level = LEVEL_ROUTER;
        ev->rank = 0;
        return;
    }
    if (ev->level == LEVEL_ROUTER) {
        const char *why;
        const float *probs = router_probs(ev, &why);
        int E = expert_routes_experts(routes(ev));
        if (!probs)
            return;
        int n = experts_rank(probs, E, ev->order, E);
        clamp(&ev->rank, n);
        ev->expert = ev->order[ev->rank];
        ev->item = 0;
        ev->level = LEVEL_TOKENS;
        return;
    }
    /* tokens: select the position under the cursor and show its layers */
    int n = expert_routes_chose(routes(ev), ev->layer, ev->expert, ev->first, ev->last, ev->chose,
                                ev->chose_w, ev->cap_pos);
    if (n > 0) {
        clamp(&ev->item, n);
        selection_set(ev->sel, ev->src, ev->chose[ev->item]);
        ev->level = LEVEL_LAYERS;
    }
}

static bool own_action(key_action a)
{
    switch (a) {
    case ACT_EXPERTS: case ACT_EXPERTS_BACK: case ACT_EXPERTS_RANGE:
    case ACT_CELL_UP: case ACT_CELL_DOWN: case ACT_PAGE_UP: case ACT_PAGE_DOWN:
    case ACT_SEL_PREV: case ACT_SEL_NEXT: case ACT_SEL_FIRST: case ACT_SEL_NEWEST:
    case ACT_OPEN_HEAD:
        return true;
    default: return false;
    }
}

static bool experts_act(void *state, key_action a)
{
    experts_view *ev = state;
    if (!own_action(a))
        return false;
    if (!routes(ev)) { /* the model changed under it: nothing to show */
        ev->open = false;
        return true;
    }
    ensure(ev);
    int page = ev->page > 1 ? ev->page : 1;
    switch (a) {
    case ACT_EXPERTS: ev->open = false; break;
    case ACT_EXPERTS_BACK:
        if (ev->level == LEVEL_LAYERS)
            ev->open = false;
        else
            ev->level = ev->level == LEVEL_TOKENS ? LEVEL_ROUTER : LEVEL_LAYERS;
        break;
    case ACT_EXPERTS_RANGE: ev->all = !ev->all; break;
    case ACT_CELL_UP: move_cursor(ev, -1); break;
    case ACT_CELL_DOWN: move_cursor(ev, 1); break;
    case ACT_PAGE_UP: move_cursor(ev, -page); break;
    case ACT_PAGE_DOWN: move_cursor(ev, page); break;
    case ACT_OPEN_HEAD: open_level(ev); break;
    default: selection_act(ev->sel, ev->src, a); break;
    }
    return true;
}

static const char *experts_why_not(void *state, key_action a)
{
    experts_view *ev = state;
    if (!own_action(a) || !routes(ev))
        return NULL;
    ensure(ev);
    const char *why = selection_why_not(ev->sel, ev->src, a);
    if (why)
        return why;
    if (a == ACT_OPEN_HEAD && ev->pos < 0)
        return "no tokens yet";
    if (a == ACT_OPEN_HEAD && ev->level == LEVEL_ROUTER && !router_probs(ev, &why))
        return why;
    if (a == ACT_OPEN_HEAD && ev->level == LEVEL_TOKENS && rows_of_level(ev) == 0)
        return "no position of the range chose this expert at this layer";
    return NULL;
}

bool experts_view_cursor(const view_handle *v, int *layer, int *expert, const char **why)
{
    if (!v || v->ops != &experts_view_ops || !v->state) {
        *why = "x and f act on the experts view's router (E, then Enter on a layer)";
        return false;
    }
    experts_view *ev = v->state;
    if (!routes(ev)) {
        *why = experts_why_closed(ev);
        return false;
    }
    ensure(ev);
    if (ev->level == LEVEL_LAYERS) {
        *why = "x and f act on an expert: Enter shows the layer's router, Up Down pick one";
        return false;
    }
    if (ev->level == LEVEL_TOKENS) {
        *layer = ev->layer;
        *expert = ev->expert;
        return true;
    }
    const float *probs = router_probs(ev, why);
    if (!probs)
        return false;
    int E = expert_routes_experts(routes(ev));
    int n = experts_rank(probs, E, ev->order, E);
    clamp(&ev->rank, n);
    *layer = ev->layer;
    *expert = ev->order[ev->rank];
    ev->follow = *expert;
    return true;
}

/* ---- drawing ---- */

/* The title: the first of the texts that fits. */
static void title(const tui_screen *scr, WINDOW *w, int width, const char *const *texts, int n)
{
    draw_text(scr, w, 0, 0, width, texts[tuifmt_pick(texts, n, width)], A_BOLD);
}

static void piece_at(const experts_view *ev, int pos, char *out, size_t size)
{
    const int *toks = source_tokens(ev->src);
    source_token(ev->src, pos >= 0 ? toks[pos] : 0, out, size);
}

/* A row per layer: its label, the position's route, the strip of the counts. */
static void draw_layers(experts_view *ev, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const expert_routes *r = routes(ev);
    int L = expert_routes_layers(r), E = expert_routes_experts(r), K = expert_routes_used(r);
    char line[EXPERTS_LINE_MAX], piece[64], range[96], t[3][256];
    piece_at(ev, ev->pos, piece, sizeof piece);
    range_label(ev, range, sizeof range);
    snprintf(t[0], sizeof t[0], "experts  pos %d %s  %d experts, %d chosen a token  (Left Right position)",
             ev->pos, piece, E, K);
    snprintf(t[1], sizeof t[1], "experts  pos %d %s  %d experts, %d a token", ev->pos, piece, E, K);
    snprintf(t[2], sizeof t[2], "experts  pos %d", ev->pos);
    const char *const titles[] = {t[0], t[1], t[2]};
    title(scr, w, width, titles, 3);
    int label_w = 1 + (L >= 10 ? (L >= 100 ? 3 : 2) : 1) + 2; /* "L12  " */
    int route_w = experts_route_width(K, E);
    int room = width - 1 - label_w; /* a column for the scroll markers */
    if (route_w > room / 2)
        route_w = room / 2;
    int strip_x = 1 + label_w + route_w + 2, strip_room = width - strip_x;
    experts_fold f;
    experts_fold_compute(E, strip_room, &f);
    snprintf(line, sizeof line, "chosen, weight");
    draw_text(scr, w, 1, 1 + label_w, route_w, line, A_DIM);
    if (f.cells > 0) {
        char head[3][160], fold[32] = "";
        const char *kind = ev->all ? "all" : ev->reply ? "reply" : "prompt";
        if (f.per > 1)
            snprintf(fold, sizeof fold, ", %d a column", f.per);
        if (f.per > 1)
            snprintf(head[0], sizeof head[0], "times chosen, %s (%d experts a column)", range, f.per);
        else
            snprintf(head[0], sizeof head[0], "times chosen, %s", range);
        snprintf(head[1], sizeof head[1], "times chosen, %s %d-%d%s", kind, ev->first, ev->last, fold);
        snprintf(head[2], sizeof head[2], "%s %d-%d%s", kind, ev->first, ev->last, fold);
        const char *const heads[] = {head[0], head[1], head[2]};
        draw_text(scr, w, 1, strip_x, strip_room, heads[tuifmt_pick(heads, 3, strip_room)], A_DIM);
        experts_scale(&f, E, line, sizeof line);
        draw_text(scr, w, 2, strip_x, strip_room, line, A_DIM);
    }
    int rows = h - 5; /* title, two header lines, about, keys */
    ev->page = rows;
    tuifmt_span span;
    tuifmt_span_compute(L, ev->layer, rows, &span);
    for (int i = 0; i < span.count; i++) {
        int l = span.first + i, y = 3 + i;
        int ex[ROUTE_MAX];
        float wt[ROUTE_MAX];
        snprintf(line, sizeof line, "L%d", l + 1);
        draw_text(scr, w, y, 1, label_w, line, l == ev->layer ? A_REVERSE : A_BOLD);
        bool have = K <= ROUTE_MAX && expert_routes_of(r, ev->pos, l, ex, wt);
        if (have)
            experts_route_text(ex, wt, K, route_w, line, sizeof line);
        draw_text(scr, w, y, 1 + label_w, route_w, have ? line : "no route", have ? A_NORMAL : A_DIM);
        if (f.cells > 0) {
            expert_routes_count(r, l, ev->first, ev->last, ev->counts);
            int largest = experts_fold_counts(ev->counts, E, &f, ev->cells);
            experts_strip(ev->cells, &f, largest, scr->utf8, line, sizeof line);
            draw_text(scr, w, y, strip_x, strip_room, line, A_NORMAL);
            for (int k = 0; have && k < K; k++) { /* this position's experts stand out */
                int c = experts_fold_cell(&f, ex[k]);
                const char *ch = experts_shade_char(experts_shade(ev->cells[c], largest), scr->utf8);
                int reps = f.cell_w > 1 ? f.cell_w - 1 : 1;
                for (int j = 0; j < reps; j++)
                    draw_text(scr, w, y, strip_x + c * f.cell_w + j, 1, ch, A_REVERSE);
            }
        }
        if (i == 0 && span.before)
            draw_scroll_mark(scr, w, y, 0, '^');
        if (i == span.count - 1 && span.after)
            draw_scroll_mark(scr, w, y, 0, 'v');
    }
    int positions = count_layer(ev), best = 0;
    for (int e = 1; e < E; e++)
        best = ev->counts[e] > ev->counts[best] ? e : best;
    if (positions > 0)
        snprintf(line, sizeof line, "L%d over %s: %d positions; chosen most: #%d, %d times",
                 ev->layer + 1, range, positions, best + 1, ev->counts[best]);
    else
        snprintf(line, sizeof line, "L%d: no routes over %s", ev->layer + 1, range);
    draw_text(scr, w, h - 2, 0, width, line, A_DIM);
    static const char *const keys[] = {
        "Up Down layer, Enter its router, a the reply / all, Left Right position, Esc close",
        "Up Down layer, Enter router, a range, Esc close", "Enter router, Esc"};
    draw_text(scr, w, h - 1, 0, width, keys[tuifmt_pick(keys, 3, width)], A_DIM);
}

/* The layer's router at the position: the experts ranked, each with its probability,
 * a bar, its weight when chosen, its count over the range. */
static void draw_router(experts_view *ev, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const expert_routes *r = routes(ev);
    int L = expert_routes_layers(r), E = expert_routes_experts(r), K = expert_routes_used(r);
    char line[EXPERTS_LINE_MAX], piece[64], range[96], t[2][256];
    piece_at(ev, ev->pos, piece, sizeof piece);
    range_label(ev, range, sizeof range);
    snprintf(t[0], sizeof t[0], "router  layer %d/%d  pos %d %s  ffn_moe_probs of %d experts",
             ev->layer + 1, L, ev->pos, piece, E);
    snprintf(t[1], sizeof t[1], "router  L%d  pos %d", ev->layer + 1, ev->pos);
    const char *const titles[] = {t[0], t[1]};
    title(scr, w, width, titles, 2);
    const char *why = NULL;
    const float *probs = router_probs(ev, &why);
    if (!probs) {
        draw_text(scr, w, 2, 0, width, why, A_DIM);
        return;
    }
    int n = experts_rank(probs, E, ev->order, E);
    for (int k = 0; ev->follow >= 0 && k < n; k++)
        if (ev->order[k] == ev->follow)
            ev->rank = k;
    ev->follow = -1;
    clamp(&ev->rank, n);
    int positions = count_layer(ev);
    int ex[ROUTE_MAX];
    float wt[ROUTE_MAX];
    bool have = K <= ROUTE_MAX && expert_routes_of(r, ev->pos, ev->layer, ex, wt);
    int num_w = 1 + (E >= 10 ? (E >= 100 ? 3 : 2) : 1); /* "#128" */
    /* " #12  61.2%  bar...  weight 0.61  12x" */
    int tail_w = 6 + 2 + 12, bar_w = width - 1 - num_w - 2 - 6 - 2 - tail_w;
    bar_w = bar_w > 40 ? 40 : bar_w < 4 ? 4 : bar_w;
    snprintf(line, sizeof line, "%-*s  %6s  %-*s  %6s  %s", num_w, "exp", "prob", bar_w, "",
             "weight", "times chosen");
    draw_text(scr, w, 1, 1, width - 1, line, A_UNDERLINE);
    int rows = h - 4;
    ev->page = rows;
    tuifmt_span span;
    tuifmt_span_compute(n, ev->rank, rows, &span);
    for (int i = 0; i < span.count; i++) {
        int k = span.first + i, e = ev->order[k], y = 2 + i;
        char num[16], prob[16], bar[256], chosen[32] = "";
        snprintf(num, sizeof num, "#%d", e + 1);
        tuifmt_prob(probs[e], prob, sizeof prob);
        int bw = tuifmt_bar(probs[e], bar_w, scr->utf8, bar, sizeof bar);
        for (int j = 0; have && j < K; j++)
            if (ex[j] == e)
                snprintf(chosen, sizeof chosen, "%.2f", (double)wt[j]);
        snprintf(line, sizeof line, "%-*s  %6s  %s%*s  %6s  %d", num_w, num, prob, bar,
                 bar_w - bw, "", chosen, ev->counts[e]);
        draw_text(scr, w, y, 1, width - 1, line,
                  k == ev->rank ? A_REVERSE : *chosen ? A_BOLD : A_NORMAL);
        if (i == 0 && span.before)
            draw_scroll_mark(scr, w, y, 0, '^');
        if (i == span.count - 1 && span.after)
            draw_scroll_mark(scr, w, y, 0, 'v');
    }
    int e = ev->order[ev->rank];
    snprintf(line, sizeof line, "#%d was chosen at %d of the %d positions of %s", e + 1, ev->counts[e],
             positions, range);
    draw_text(scr, w, h - 2, 0, width, line, A_DIM);
    static const char *const keys[] = {"Up Down expert, Enter the tokens that chose it, Esc back",
                                       "Enter who chose it, Esc back", "Enter, Esc"};
    draw_text(scr, w, h - 1, 0, width, keys[tuifmt_pick(keys, 3, width)], A_DIM);
}

/* The positions of the range that chose the expert at the layer. */
static void draw_tokens(experts_view *ev, WINDOW *w, const tui_screen *scr, int h, int width)
{
    const expert_routes *r = routes(ev);
    int K = expert_routes_used(r);
    char line[EXPERTS_LINE_MAX], range[96], t[2][256];
    range_label(ev, range, sizeof range);
    int n = expert_routes_chose(r, ev->layer, ev->expert, ev->first, ev->last, ev->chose,
                                ev->chose_w, ev->cap_pos);
    int positions = count_layer(ev);
    snprintf(t[0], sizeof t[0], "L%d expert #%d: chosen at %d of %d positions (%s)", ev->layer + 1,
             ev->expert + 1, n, positions, range);
    snprintf(t[1], sizeof t[1], "L%d #%d: %d of %d", ev->layer + 1, ev->expert + 1, n, positions);
    const char *const titles[] = {t[0], t[1]};
    title(scr, w, width, titles, 2);
    if (n == 0) {
        draw_text(scr, w, 2, 0, width, "no position of the range chose it ('a': every position)",
                  A_DIM);
        return;
    }
    snprintf(line, sizeof line, "%6s  %-20s  %6s  %s", "pos", "token", "weight", "its place");
    draw_text(scr, w, 1, 1, width - 1, line, A_UNDERLINE);
    clamp(&ev->item, n);
    int rows = h - 3;
    ev->page = rows;
    tuifmt_span span;
    tuifmt_span_compute(n, ev->item, rows, &span);
    for (int i = 0; i < span.count; i++) {
        int k = span.first + i, p = ev->chose[k], y = 2 + i;
        char piece[64], fit[96];
        int ex[ROUTE_MAX], place = 0;
        piece_at(ev, p, piece, sizeof piece);
        int used = tuifmt_fit(piece, 20, scr->utf8, fit, sizeof fit);
        if (K <= ROUTE_MAX && expert_routes_of(r, p, ev->layer, ex, NULL))
            for (int j = 0; j < K; j++)
                place = ex[j] == ev->expert ? j + 1 : place;
        int pad = 20 - used;
        snprintf(line, sizeof line, "%6d  %s%*s  %6.2f  %d of %d%s", p, fit, pad > 0 ? pad : 0, "",
                 (double)ev->chose_w[k], place, K, p == ev->pos ? "  (selected)" : "");
        draw_text(scr, w, y, 1, width - 1, line, k == ev->item ? A_REVERSE : A_NORMAL);
        if (i == 0 && span.before)
            draw_scroll_mark(scr, w, y, 0, '^');
        if (i == span.count - 1 && span.after)
            draw_scroll_mark(scr, w, y, 0, 'v');
    }
    static const char *const keys[] = {"Up Down a token, Enter select its position, Esc back",
                                       "Enter select, Esc back", "Enter, Esc"};
    draw_text(scr, w, h - 1, 0, width, keys[tuifmt_pick(keys, 3, width)], A_DIM);
}

static void experts_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    (void)focused;
    experts_view *ev = state;
    werase(w);
    int h = getmaxy(w), width = getmaxx(w);
    if (h < 6 || width < 30) {
        draw_text(scr, w, 0, 0, width, "the experts view needs 30 x 6", A_DIM);
        return;
    }
    if (!routes(ev)) {
        draw_text(scr, w, 0, 0, width, experts_why_closed(ev), A_DIM);
        return;
    }
    ensure(ev);
    if (ev->pos < 0) {
        draw_text(scr, w, 0, 0, width, "experts: no tokens yet", A_DIM);
        return;
    }
    if (ev->level == LEVEL_ROUTER)
        draw_router(ev, w, scr, h, width);
    else if (ev->level == LEVEL_TOKENS)
        draw_tokens(ev, w, scr, h, width);
    else
        draw_layers(ev, w, scr, h, width);
}

const view_ops experts_view_ops = {
    .name = "experts view",
    .keys = KEYS_EXPERTS,
    .place = VIEW_SCREEN,
    .min_cols = 30,
    .min_rows = 8, /* six lines above the status and input lines */
    .new = experts_new,
    .free = experts_free,
    .open = experts_open,
    .why_closed = experts_why_closed,
    .is_open = experts_is_open,
    .draw = experts_draw,
    .act = experts_act,
    .why_not = experts_why_not,
};
