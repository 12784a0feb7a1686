/* attention_pane.c — the Attention pane (see attention_pane.h): its border, its keys,
 * and the view shown, one of the table of attention_views.c that v / V cycle (the
 * heatmap, the logit lens and its grid, the heads of a layer, layers x heads, the
 * direct logit attribution: each in its own file).
 *
 * Every decision that depends on the view reads the view's row: what the arrows move,
 * which settings (m, l, b, e, t) it shows and so which keys work there, whether it has
 * a head cursor (Enter, x), whether the selected position's attention rows are read
 * (a live engine computes dropped rows again). The view's own why_not speaks first.
 * No view leaves out silently what it shows: at any size, text that does not fit ends
 * in "…", and rows or columns that do not fit are marked with scroll markers, the
 * cursor's kept on screen.
 *
 * Owns the cursor and settings the views share (attn_cursor), each view's state, and
 * whether the engine captures attention ('c'); reads step records, attention rows and
 * lenses through the source (engine or trace). */
#include "attention_pane.h"

#include <stdlib.h>

#include "attention_views.h"

struct attn_pane {
    attn_cursor c; /* what the views read: written here only */
    int view;      /* the row of attn_views shown */
    void **state;  /* (attn_view_count) each view's: its own (its new), else &c */
};

attn_pane *attn_new(const tui_source *src, tui_selection *sel)
{
    attn_pane *ap = calloc(1, sizeof *ap);
    if (!ap)
        tui_die("out of memory");
    ap->c.src = src;
    ap->c.cfg = src->cfg;
    ap->c.sel = sel;
    ap->c.mask_bos = true;
    ap->c.capture = true;
    ap->state = calloc((size_t)attn_view_count, sizeof *ap->state);
    if (!ap->state)
        tui_die("out of memory");
    view_env env = {.src = src, .sel = sel, .host = &ap->c};
    for (int i = 0; i < attn_view_count; i++)
        ap->state[i] = attn_views[i].ops->new ? attn_views[i].ops->new(&env) : &ap->c;
    return ap;
}

void attn_free(attn_pane *ap)
{
    if (!ap)
        return;
    for (int i = 0; i < attn_view_count; i++)
        if (attn_views[i].ops->free)
            attn_views[i].ops->free(ap->state[i]);
    free(ap->state);
    free(ap);
}

/* Action a as the view v takes it: Up / Down and Left / Right move what its row says. */
static key_action along_axes(const attn_view_row *v, key_action a)
{
    attn_axis axis;
    if (a == ACT_CELL_UP || a == ACT_CELL_DOWN)
        axis = v->up_down;
    else if (a == ACT_SEL_PREV || a == ACT_SEL_NEXT)
        axis = v->left_right;
    else
        return a;
    bool back = a == ACT_CELL_UP || a == ACT_SEL_PREV;
    switch (axis) {
    case ATTN_AXIS_LAYER: return back ? ACT_LAYER_PREV : ACT_LAYER_NEXT;
    case ATTN_AXIS_HEAD: return back ? ACT_HEAD_PREV : ACT_HEAD_NEXT;
    case ATTN_AXIS_POSITION: return back ? ACT_SEL_PREV : ACT_SEL_NEXT;
    default: return a;
    }
}

static bool attn_act(void *state, key_action a)
{
    attn_pane *ap = state;
    attn_cursor *c = &ap->c;
    const attn_view_row *v = &attn_views[ap->view];
    const model_config *cfg = c->cfg;
    a = along_axes(v, a);
    if (v->ops->act && v->ops->act(ap->state[ap->view], a))
        return true;
    switch (a) {
    case ACT_LAYER_NEXT:
    case ACT_LAYER_PREV: /* a hybrid's layers may have fewer heads than the head chosen */
        c->layer = (c->layer + (a == ACT_LAYER_NEXT ? 1 : cfg->n_layers - 1)) % cfg->n_layers;
        if (c->head >= source_layer_heads(c->src, c->layer))
            c->head = source_layer_heads(c->src, c->layer) - 1;
        return true;
    case ACT_HEAD_NEXT:
    case ACT_HEAD_PREV: {
        int own = source_layer_heads(c->src, c->layer);
        c->head = (c->head + (a == ACT_HEAD_NEXT ? 1 : own - 1)) % own;
        c->mean_heads = false;
        return true;
    }
    case ACT_HEAD_MEAN: c->mean_heads = !c->mean_heads; return true;
    case ACT_LOG_SCALE: c->log_scale = !c->log_scale; return true;
    case ACT_MASK_BOS: c->mask_bos = !c->mask_bos; return true;
    case ACT_VIEW_NEXT: ap->view = (ap->view + 1) % attn_view_count; return true;
    case ACT_VIEW_PREV: ap->view = (ap->view + attn_view_count - 1) % attn_view_count; return true;
    case ACT_HEAD_METRIC: c->bos_metric = !c->bos_metric; return true;
    case ACT_TARGET_NEXT: c->target++; return true;
    case ACT_TARGET_PREV: c->target--; return true;
    case ACT_OPEN_HEAD: /* a head cursor: its layer and head, as a heatmap */
        if (v->head_cursor) {
            ap->view = ATTN_VIEW_HEATMAP;
            c->mean_heads = false;
        }
        return true;
    case ACT_CAPTURE: /* the user may not want it (a trace without attention, say) */
        if (!source_live(c->src))
            return true; /* a trace: what it holds is what there is */
        c->capture = !c->capture;
        engine_set_capture(c->src->e, c->capture);
        return true;
    default: return selection_act(c->sel, c->src, a); /* shared with Tokens */
    }
}

/* Why a key would change nothing in the view shown (the status line says it): the
 * view's own reason, then what its row says it does not show. */
static const char *attn_why_not(void *state, key_action a)
{
    attn_pane *ap = state;
    const attn_cursor *c = &ap->c;
    const attn_view_row *v = &attn_views[ap->view];
    a = along_axes(v, a);
    const char *why = v->ops->why_not ? v->ops->why_not(ap->state[ap->view], a) : NULL;
    if (why)
        return why;
    bool layer = a == ACT_LAYER_PREV || a == ACT_LAYER_NEXT;
    bool head = a == ACT_HEAD_PREV || a == ACT_HEAD_NEXT;
    if (layer && c->cfg->n_layers == 1)
        return "the model has one layer";
    if (head && c->cfg->n_heads == 1)
        return "the model has one head per layer";
    if ((a == ACT_HEAD_MEAN && !(v->shows & ATTN_SHOWS_MEAN)) ||
        ((a == ACT_LOG_SCALE || a == ACT_MASK_BOS) && !(v->shows & ATTN_SHOWS_SHADE)))
        return "m, l and b change how the heatmap shades (l and b the heads view too): v shows it";
    if (a == ACT_HEAD_METRIC && !(v->shows & ATTN_SHOWS_METRIC))
        return "e works in the heads views: v shows them";
    if (a == ACT_OPEN_HEAD && !v->head_cursor)
        return "Enter works in the heads and attribution views: v shows them";
    if ((a == ACT_TARGET_NEXT || a == ACT_TARGET_PREV) && !(v->shows & ATTN_SHOWS_TARGET))
        return "t and T pick the attribution's target: v shows the attribution view";
    if (a == ACT_CAPTURE && !source_live(c->src))
        return "a trace holds the attention it was written with: c works with a model";
    return selection_why_not(c->sel, c->src, a);
}

static void attn_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    attn_pane *ap = state;
    draw_box(scr, w, attn_pane_ops.name, focused);
    if (getmaxy(w) - 2 <= 0 || getmaxx(w) - 2 <= 0)
        return;
    if (ap->c.src->rc) { /* a served model sends its tokens' probabilities, nothing inside */
        static const char *said[] = {"The attention, the logit lens, the heads",
                                     "and the attribution need the weights:",
                                     "this chat runs on a server (--server)."};
        for (int i = 0; i < 3 && i < getmaxy(w) - 2; i++)
            draw_text(scr, w, 1 + i, 1, getmaxx(w) - 2, said[i], A_DIM);
        return;
    }
    int focus = selection_get(ap->c.sel, ap->c.src);
    int shown = focus < 0 ? ATTN_VIEW_HEATMAP : ap->view; /* no positions: it says so */
    const attn_view_row *v = &attn_views[shown];
    if (focus >= 0 && v->reads_attention)
        source_attention(ap->c.src, focus); /* a live engine computes dropped rows again */
    v->ops->draw(ap->state[shown], w, scr, focused);
    if (shown != ap->view && getmaxy(w) - 2 >= 3) { /* the view v chose, said */
        char line[96];
        snprintf(line, sizeof line, "v chose %s: shown once there are tokens",
                 attn_views[ap->view].ops->name);
        draw_text(scr, w, 3, 1, getmaxx(w) - 2, line, A_DIM);
    }
}

bool attn_head_cursor(const attn_pane *ap, int *layer, int *head)
{
    *layer = ap->c.layer;
    *head = ap->c.head;
    return attn_views[ap->view].head_cursor;
}

const view_ops attn_pane_ops = {
    .name = "Attention",
    .keys = KEYS_ATTN,
    .place = VIEW_PANE,
    .draw = attn_draw,
    .act = attn_act,
    .why_not = attn_why_not,
};
