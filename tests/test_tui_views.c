/* test_tui_views.c — the TUI's surfaces through their one interface (view_ops.h):
 * every row of the Attention pane's table of views has its functions, a name of its own
 * and what its arrows move, and the heatmap is its first row; the v / V text of the key
 * table names every view, in the table's order; the pane decides each key that depends
 * on the view from the row (m, l, b, e, t, Enter and x work in exactly the views whose
 * row says so, the arrows move what it says), over a source of three positions of a
 * model with two layers of two heads; every overlay of overlays.c's table, and every
 * pane, has its functions and a key context of its own whose bindings the help overlay
 * lists, and the action that opens an overlay is bound to a key. Links the TUI library;
 * opens no terminal. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tui/attention_pane.h"
#include "tui/attention_views.h"
#include "tui/conversation.h"
#include "tui/keys.h"
#include "tui/overlays.h"
#include "tui/tokens_pane.h"

/* Is action a bound in context ctx? */
static bool bound(keys_context ctx, key_action a)
{
    int n;
    const key_binding *t = keys_table(&n);
    for (int i = 0; i < n; i++)
        if (t[i].ctx == ctx && t[i].action == a)
            return true;
    return false;
}

/* Does the help overlay (one page at 120x40) have a heading for ctx, with a line below
 * it? */
static bool help_has_section(keys_context ctx)
{
    static keys_help_layout l;
    keys_help_layout_compute(120, 40, &l);
    const char *title = keys_context_get(ctx)->title;
    for (int i = 0; i + 1 < l.n_lines; i++)
        if (l.lines[i].heading && !strcmp(l.lines[i].heading, title) && !l.lines[i + 1].heading)
            return true;
    return false;
}

START_TEST(test_attention_rows_whole)
{
    ck_assert_int_ge(attn_view_count, 2);
    ck_assert_ptr_eq(attn_views[ATTN_VIEW_HEATMAP].ops, &heatmap_view_ops);
    ck_assert_str_eq(attn_views[ATTN_VIEW_HEATMAP].ops->name, "heatmap");
    for (int i = 0; i < attn_view_count; i++) {
        const attn_view_row *v = &attn_views[i];
        ck_assert_msg(v->ops && v->ops->name && *v->ops->name, "view %d has no name", i);
        const char *name = v->ops->name;
        ck_assert_msg(v->ops->draw, "the %s view draws nothing", name);
        ck_assert_msg(v->ops->place == VIEW_IN_PANE, "the %s view is not drawn in its pane", name);
        ck_assert_msg(v->ops->keys == KEYS_ATTN, "the %s view's keys are not the pane's", name);
        ck_assert_msg(!v->ops->new == !v->ops->free, "the %s view makes a state it does not free", name);
        ck_assert_msg(v->up_down == ATTN_AXIS_LAYER || v->up_down == ATTN_AXIS_HEAD,
                      "Up and Down move nothing a row can in the %s view", name);
        ck_assert_msg(v->left_right == ATTN_AXIS_POSITION || v->left_right == ATTN_AXIS_HEAD,
                      "Left and Right move nothing a row can in the %s view", name);
        ck_assert_msg((v->shows & ~(unsigned)(ATTN_SHOWS_MEAN | ATTN_SHOWS_SHADE | ATTN_SHOWS_METRIC |
                                               ATTN_SHOWS_TARGET)) == 0,
                      "the %s view shows a setting the pane has not", name);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(attn_views[j].ops->name, name), "two views are called %s", name);
    }
}
END_TEST

/* The v / V text names every view, in the order v cycles them. */
START_TEST(test_help_names_every_view)
{
    int n, found = 0;
    const key_binding *t = keys_table(&n);
    for (int i = 0; i < n; i++) {
        if (t[i].action != ACT_VIEW_NEXT && t[i].action != ACT_VIEW_PREV)
            continue;
        found++;
        const char *at = t[i].help;
        for (int v = 0; v < attn_view_count; v++) {
            const char *name = attn_views[v].ops->name, *hit = strstr(at, name);
            ck_assert_msg(hit, "%s's text '%s' leaves out the %s view, or names it out of order", t[i].name,
                          t[i].help, name);
            at = hit + strlen(name);
        }
    }
    ck_assert_int_eq(found, 2);
}
END_TEST

/* Every key a row gives a view is one the Attention pane binds (and so the help lists). */
START_TEST(test_rows_keys_bound)
{
    for (int i = 0; i < attn_view_count; i++) {
        const attn_view_row *v = &attn_views[i];
        if (v->shows & ATTN_SHOWS_MEAN)
            ck_assert(bound(KEYS_ATTN, ACT_HEAD_MEAN));
        if (v->shows & ATTN_SHOWS_SHADE)
            ck_assert(bound(KEYS_ATTN, ACT_LOG_SCALE) && bound(KEYS_ATTN, ACT_MASK_BOS));
        if (v->shows & ATTN_SHOWS_METRIC)
            ck_assert(bound(KEYS_ATTN, ACT_HEAD_METRIC));
        if (v->shows & ATTN_SHOWS_TARGET)
            ck_assert(bound(KEYS_ATTN, ACT_TARGET_NEXT) && bound(KEYS_ATTN, ACT_TARGET_PREV));
        if (v->head_cursor)
            ck_assert(bound(KEYS_ATTN, ACT_OPEN_HEAD) && bound(KEYS_ATTN, ACT_KNOCK_OUT));
    }
    ck_assert(bound(KEYS_ATTN, ACT_CELL_UP) && bound(KEYS_ATTN, ACT_CELL_DOWN));
    ck_assert(bound(KEYS_ATTN, ACT_SEL_PREV) && bound(KEYS_ATTN, ACT_SEL_NEXT));
    ck_assert(help_has_section(KEYS_ATTN));
}
END_TEST

/* ---- the pane over a source of three positions, two layers of two heads ---- */

static model_config cfg = {.n_layers = 2, .n_heads = 2};
static step_record records[3];
static const step_record *seq[3] = {&records[0], &records[1], &records[2]};
static int tokens[3] = {1, 4, 5};
static tui_source src = {.seq = seq, .n = 3, .tokens = tokens, .cfg = &cfg};

/* A pane showing row i of the table (v pressed i times). */
static attn_pane *pane_at(int i, tui_selection *sel)
{
    for (int p = 0; p < 3; p++)
        records[p] = (step_record){.pos = p, .token = tokens[p], .next = p < 2 ? tokens[p + 1] : -1};
    sel->pos = -1;
    attn_pane *ap = attn_new(&src, sel);
    for (int k = 0; k < i; k++)
        ck_assert(attn_pane_ops.act(ap, ACT_VIEW_NEXT));
    return ap;
}

static bool works(attn_pane *ap, key_action a)
{
    return attn_pane_ops.why_not(ap, a) == NULL;
}

/* m, l, b, e, t, T, Enter and x work in the views whose row says so, and say why not
 * in the others. */
START_TEST(test_pane_reads_the_row)
{
    for (int i = 0; i < attn_view_count; i++) {
        const attn_view_row *v = &attn_views[i];
        const char *name = v->ops->name;
        tui_selection sel;
        attn_pane *ap = pane_at(i, &sel);
        int l, h;
        ck_assert_msg(attn_head_cursor(ap, &l, &h) == v->head_cursor, "x in the %s view", name);
        ck_assert_msg(works(ap, ACT_OPEN_HEAD) == v->head_cursor, "Enter in the %s view", name);
        ck_assert_msg(works(ap, ACT_HEAD_MEAN) == !!(v->shows & ATTN_SHOWS_MEAN), "m in the %s view", name);
        ck_assert_msg(works(ap, ACT_LOG_SCALE) == !!(v->shows & ATTN_SHOWS_SHADE), "l in the %s view", name);
        ck_assert_msg(works(ap, ACT_MASK_BOS) == !!(v->shows & ATTN_SHOWS_SHADE), "b in the %s view", name);
        ck_assert_msg(works(ap, ACT_HEAD_METRIC) == !!(v->shows & ATTN_SHOWS_METRIC), "e in the %s view", name);
        ck_assert_msg(works(ap, ACT_TARGET_NEXT) == !!(v->shows & ATTN_SHOWS_TARGET), "t in the %s view", name);
        ck_assert_msg(works(ap, ACT_TARGET_PREV) == !!(v->shows & ATTN_SHOWS_TARGET), "T in the %s view", name);
        /* Enter opens a head cursor in the heatmap; elsewhere the view stays */
        attn_pane_ops.act(ap, ACT_OPEN_HEAD);
        ck_assert_int_eq(works(ap, ACT_HEAD_MEAN), v->head_cursor || (v->shows & ATTN_SHOWS_MEAN));
        attn_free(ap);
    }
}
END_TEST

/* Up / Down and Left / Right move what the row says: the layer, the head or the
 * selected position (from the newest, 2, back to 1). */
START_TEST(test_arrows_follow_the_row)
{
    for (int i = 0; i < attn_view_count; i++) {
        const attn_view_row *v = &attn_views[i];
        const char *name = v->ops->name;
        tui_selection sel;
        attn_pane *ap = pane_at(i, &sel);
        int l, h;
        ck_assert(attn_pane_ops.act(ap, ACT_CELL_DOWN));
        attn_head_cursor(ap, &l, &h);
        ck_assert_msg(l == (v->up_down == ATTN_AXIS_LAYER) && h == (v->up_down == ATTN_AXIS_HEAD),
                      "Down in the %s view moved layer %d head %d", name, l, h);
        ck_assert(attn_pane_ops.act(ap, ACT_CELL_UP));
        ck_assert(attn_pane_ops.act(ap, ACT_SEL_PREV));
        attn_head_cursor(ap, &l, &h);
        bool heads = v->left_right == ATTN_AXIS_HEAD;
        ck_assert_msg(l == 0 && h == (heads ? 1 : 0) && selection_get(&sel, &src) == (heads ? 2 : 1),
                      "Left in the %s view: layer %d head %d position %d", name, l, h,
                      selection_get(&sel, &src));
        /* Right at the newest position: nothing to do, unless it moves the head */
        sel.pos = -1;
        ck_assert_msg(works(ap, ACT_SEL_NEXT) == heads, "Right in the %s view", name);
        attn_free(ap);
    }
}
END_TEST

/* v goes round the table and back to the heatmap; V the other way. */
START_TEST(test_v_goes_round)
{
    tui_selection sel;
    attn_pane *ap = pane_at(attn_view_count, &sel);
    ck_assert(works(ap, ACT_HEAD_MEAN)); /* the heatmap again */
    attn_pane_ops.act(ap, ACT_VIEW_PREV);
    int l, h;
    ck_assert(attn_head_cursor(ap, &l, &h) == attn_views[attn_view_count - 1].head_cursor);
    attn_free(ap);
}
END_TEST

/* ---- overlays and panes ---- */

START_TEST(test_overlays_whole)
{
    int n;
    const overlay_row *t = overlays_table(&n);
    ck_assert_int_ge(n, 2);
    for (int i = 0; i < n; i++) {
        const view_ops *o = t[i].ops;
        ck_assert_msg(o && o->name && *o->name, "overlay %d has no name", i);
        ck_assert_msg(o->draw && o->act, "the %s overlay has no draw or act", o->name);
        ck_assert_msg(o->place == VIEW_SCREEN || o->place == VIEW_CENTRED, "where does the %s go?", o->name);
        ck_assert_msg(o->place != VIEW_CENTRED || o->size, "the %s overlay has no size", o->name);
        ck_assert_msg(!o->new == !o->free, "the %s overlay makes a state it does not free", o->name);
        ck_assert_msg(o->modal || o->is_open, "nothing closes the %s overlay", o->name);
        ck_assert_msg(overlays_opened_by(t[i].opens) == o, "the %s overlay's action opens another", o->name);
        bool opened = bound(KEYS_ANYWHERE, t[i].opens) || bound(KEYS_INPUT, t[i].opens) ||
                      bound(KEYS_PANES, t[i].opens);
        ck_assert_msg(opened, "no key opens the %s overlay", o->name);
        ck_assert_msg(help_has_section(o->keys), "the help does not list the %s overlay's keys", o->name);
        for (int j = 0; j < i; j++)
            ck_assert_msg(t[j].ops->keys != o->keys && t[j].opens != t[i].opens,
                          "the %s and %s overlays share keys", t[j].ops->name, o->name);
    }
    ck_assert_ptr_null(overlays_opened_by(ACT_QUIT));
}
END_TEST

/* The stack: an overlay opened goes on top (once, however often it is opened); the
 * top one comes off first. */
START_TEST(test_overlay_stack)
{
    int n;
    const overlay_row *t = overlays_table(&n);
    tui_selection sel = {-1};
    tui_screen scr = {.rows = 24, .cols = 80};
    view_env env = {.src = &src, .sel = &sel, .scr = &scr};
    overlay_stack *s = overlays_new(&env);
    ck_assert_int_eq(overlays_count(s), 0);
    overlays_push(s, t[1].opens);
    overlays_push(s, t[0].opens);
    ck_assert_int_eq(overlays_count(s), 2);
    ck_assert_ptr_eq(overlays_at(s, 1).ops, t[0].ops);
    overlays_push(s, t[1].opens); /* again: to the top, not twice */
    ck_assert_int_eq(overlays_count(s), 2);
    ck_assert_ptr_eq(overlays_at(s, 1).ops, t[1].ops);
    ck_assert_ptr_eq(overlays_at(s, 0).ops, t[0].ops);
    overlays_pop(s);
    ck_assert_int_eq(overlays_count(s), 1);
    ck_assert_ptr_eq(overlays_at(s, 0).ops, t[0].ops);
    overlays_pop(s);
    overlays_pop(s);
    ck_assert_int_eq(overlays_count(s), 0);
    overlays_free(s);
}
END_TEST

START_TEST(test_panes_whole)
{
    const view_ops *panes[] = {&conv_pane_ops, &tokens_pane_ops, &attn_pane_ops};
    for (size_t i = 0; i < sizeof panes / sizeof panes[0]; i++) {
        const view_ops *p = panes[i];
        ck_assert(p->name && *p->name);
        ck_assert_msg(p->draw && p->act && p->why_not, "the %s pane lacks a function", p->name);
        ck_assert_msg(p->place == VIEW_PANE, "the %s pane is not a pane", p->name);
        ck_assert_msg(help_has_section(p->keys), "the help does not list the %s pane's keys", p->name);
        ck_assert_str_eq(keys_context_get(p->keys)->title, p->name);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_views");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, test_attention_rows_whole);
    tcase_add_test(tc, test_help_names_every_view);
    tcase_add_test(tc, test_rows_keys_bound);
    tcase_add_test(tc, test_pane_reads_the_row);
    tcase_add_test(tc, test_arrows_follow_the_row);
    tcase_add_test(tc, test_v_goes_round);
    tcase_add_test(tc, test_overlays_whole);
    tcase_add_test(tc, test_overlay_stack);
    tcase_add_test(tc, test_panes_whole);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
