/* test_tui_experts.c — the experts view:
 *   - its text without a terminal (experts_format.c): a route never wider than asked,
 *     the ones left out counted; 8 experts one cell each, 128 folded into the columns
 *     there are, the cells' counts adding up to the experts'; the shades; the strip and
 *     its scale no wider than the fold; the router's ranking; the range around a
 *     position (the reply, the prompt, all);
 *   - the view drawn into a curses window of 80x22 (the screen of an 80x24 terminal
 *     above the status and input lines) over an engine on the tiny qwen3moe fixture: a
 *     row per layer with the route the engine kept, Enter shows the layer's router (a
 *     row per expert), Enter again the positions that chose the top one, as many as
 *     expert_routes_chose says; layers and experts numbered from 1; the expert x and f
 *     act on (experts_view_cursor) is the router's cursor, or the listed one, and none on
 *     the layers; refused with one line on a dense model and on a trace.
 * Links the TUI library; its terminal writes to /dev/null. */
#include <stdio.h>
#include <string.h>

#include "curses_window.h"
#include "engine.h"
#include "family_gguf.h"
#include "testutil.h"
#include "tui/experts_format.h"
#include "tui/experts_view.h"

/* Columns s takes on a UTF-8 screen (continuation bytes take none). */
static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

START_TEST(test_route_text)
{
    int ex[8] = {12, 7, 101, 3, 0, 5, 6, 9};
    float w[8] = {0.41f, 0.33f, 0.1f, 0.05f, 0.04f, 0.03f, 0.02f, 0.02f};
    char out[256];
    ck_assert_int_eq(experts_route_text(ex, w, 2, 80, out, sizeof out), (int)strlen(out));
    ck_assert_str_eq(out, "#13 0.41  #8 0.33"); /* numbered from 1 */
    ck_assert_int_eq(experts_route_width(2, 128), 2 * 9 + 2);
    ck_assert_int_eq(experts_route_width(2, 100), 2 * 9 + 2); /* "#100 0.41" */
    ck_assert_int_eq(experts_route_width(2, 99), 2 * 8 + 2);
    int whole = experts_route_text(ex, w, 8, 1000, out, sizeof out);
    ck_assert_int_le(whole, experts_route_width(8, 128));
    for (int width = 0; width < 90; width++) {
        int n = experts_route_text(ex, w, 8, width, out, sizeof out);
        ck_assert_int_le(n, width);
        ck_assert_int_eq(columns(out), n);
        if (width >= 12 && width < whole)
            ck_assert_msg(strstr(out, " +"), "width %d: [%s] does not count the rest", width, out);
    }
    experts_route_text(ex, w, 8, 20, out, sizeof out);
    ck_assert_str_eq(out, "#13 0.41  #8 0.33 +6");
    experts_route_text(ex, NULL, 3, 80, out, sizeof out);
    ck_assert_str_eq(out, "#13  #8  #102");
}
END_TEST

START_TEST(test_fold_and_strip)
{
    experts_fold f;
    experts_fold_compute(8, 57, &f);
    ck_assert(f.cells == 8 && f.per == 1 && f.cell_w == 3);
    experts_fold_compute(8, 10, &f);
    ck_assert(f.cells == 8 && f.per == 1 && f.cell_w == 1);
    experts_fold_compute(0, 10, &f);
    ck_assert_int_eq(f.cells, 0);
    int counts[128], cells[128];
    for (int width = 1; width <= 200; width++) {
        for (int e = 0; e < 128; e++)
            counts[e] = (e * 7) % 13;
        experts_fold_compute(128, width, &f);
        ck_assert_int_le(f.cells * f.cell_w, width);
        ck_assert_int_ge(f.cells * f.per, 128);
        ck_assert_int_eq(experts_fold_cell(&f, 127), f.cells - 1);
        int largest = experts_fold_counts(counts, 128, &f, cells), sum = 0, total = 0;
        for (int c = 0; c < f.cells; c++) {
            sum += cells[c];
            ck_assert_int_le(cells[c], largest);
        }
        for (int e = 0; e < 128; e++)
            total += counts[e];
        ck_assert_int_eq(sum, total);
        char strip[1024], scale[1024];
        for (int utf8 = 0; utf8 < 2; utf8++) {
            int n = experts_strip(cells, &f, largest, utf8, strip, sizeof strip);
            ck_assert_int_eq(n, f.cells * f.cell_w);
            ck_assert_int_eq(columns(strip), n);
        }
        int n = experts_scale(&f, 128, scale, sizeof scale);
        ck_assert_int_le(n, f.cells * f.cell_w);
        if (width >= 8)
            ck_assert_msg(scale[0] == '1' && strstr(scale, "128"), "width %d: scale [%s]", width, scale);
    }
    experts_fold_compute(128, 40, &f);
    ck_assert(f.per == 4 && f.cells == 32 && f.cell_w == 1);
    experts_fold_compute(8, 57, &f);
    char scale[256];
    experts_scale(&f, 8, scale, sizeof scale);
    ck_assert_str_eq(scale, "1  2  3  4  5  6  7  8");
}
END_TEST

START_TEST(test_shades)
{
    ck_assert_int_eq(experts_shade(0, 10), 0);
    ck_assert_int_eq(experts_shade(1, 1000), 1); /* any choice shows */
    ck_assert_int_eq(experts_shade(10, 10), EXPERTS_SHADES - 1);
    ck_assert_int_eq(experts_shade(5, 0), 0);
    for (int c = 1; c < 100; c++)
        ck_assert_int_le(experts_shade(c, 100), experts_shade(c + 1, 100));
    ck_assert_str_eq(experts_shade_char(0, false), ".");
    ck_assert_str_eq(experts_shade_char(4, false), "#");
    ck_assert_str_eq(experts_shade_char(4, true), "\xe2\x96\x88");
}
END_TEST

START_TEST(test_rank_and_range)
{
    float p[6] = {0.1f, 0.4f, 0.1f, 0.3f, 0.05f, 0.05f};
    int order[6];
    ck_assert_int_eq(experts_rank(p, 6, order, 6), 6);
    int want[6] = {1, 3, 0, 2, 4, 5};
    ck_assert(!memcmp(order, want, sizeof want));
    ck_assert_int_eq(experts_rank(p, 6, order, 2), 2);
    ck_assert(order[0] == 1 && order[1] == 3);
    bool prompt[10] = {true, true, true, false, false, false, true, true, false, false};
    int a, b;
    ck_assert(experts_range(prompt, 10, 4, false, &a, &b));
    ck_assert(a == 3 && b == 5);
    ck_assert(!experts_range(prompt, 10, 1, false, &a, &b));
    ck_assert(a == 0 && b == 2);
    ck_assert(experts_range(prompt, 10, 9, false, &a, &b));
    ck_assert(a == 8 && b == 9);
    ck_assert(!experts_range(prompt, 10, 4, true, &a, &b));
    ck_assert(a == 0 && b == 9);
}
END_TEST

/* ---- the view drawn ---- */

static model *open_model(const char *shape)
{
    model *m = NULL;
    model_options mo;
    model_options_default(&mo);
    llm_err err;
    if (shape) {
        const char *path = temp_path("experts.gguf");
        ck_assert(family_gguf_write(path, shape, NULL, NULL));
        ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s", err.text);
        remove(path);
    } else {
        ck_assert_msg(model_open(data_path("stories260K.gguf"), &mo, &m, &err) == LLM_OK, "%s",
                      err.text);
    }
    return m;
}

START_TEST(test_view_drawn)
{
    if (!open_terminal()) {
        close_terminal();
        fprintf(stderr, "test_view_drawn: no terminal type to draw with, skipped\n");
        return;
    }
    model *m = open_model("qwen3moe");
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 0;
    engine *e = NULL;
    llm_err err;
    ck_assert(engine_new(m, NULL, &o, &e, &err) == LLM_OK);
    int toks[10] = {1, 5, 9, 13, 17, 21, 25, 29, 33, 37};
    ck_assert(engine_prefill(e, toks, 10, &err) == LLM_OK);
    for (int i = 0; i < 6; i++) {
        int t;
        ck_assert(engine_step(e, &t, &err) == LLM_OK);
    }
    tui_source src = {.e = e, .cfg = &m->config};
    tui_selection sel = {.pos = 12}; /* a reply position */
    tui_screen scr = {.rows = 24, .cols = 80};
    view_env env = {.src = &src, .sel = &sel, .scr = &scr};
    const view_ops *ops = &experts_view_ops;
    void *st = ops->new(&env);
    ck_assert_ptr_null(ops->why_closed(st));
    ops->open(st);
    ck_assert(ops->is_open(st));
    WINDOW *w = newwin(22, 80, 0, 0);
    ops->draw(st, w, &scr, true);

    char line[256], want[64];
    row_of(w, 0, line, sizeof line);
    ck_assert_msg(strstr(line, "experts  pos 12") && strstr(line, "8 experts, 2"), "title [%s]", line);
    ck_assert(window_has(w, "the reply, positions 10-15"));
    const expert_routes *r = engine_routes(e);
    for (int l = 0; l < 2; l++) {
        int ex[2];
        float wt[2];
        ck_assert(expert_routes_of(r, 12, l, ex, wt));
        snprintf(want, sizeof want, " L%d  #%d %.2f  #%d %.2f", l + 1, ex[0] + 1, (double)wt[0],
                 ex[1] + 1, (double)wt[1]); /* numbered from 1 */
        row_of(w, 3 + l, line, sizeof line);
        ck_assert_msg(!strncmp(line, want, strlen(want)), "layer %d: [%s], want [%s]", l, line, want);
        ck_assert_int_le((int)strlen(line), 80);
    }

    /* x and f have no expert on the layers' level; on another view's handle, none */
    view_handle v = {ops, st}, other = {NULL, NULL};
    int cl = -1, ce = -1;
    const char *why = NULL;
    ck_assert(!experts_view_cursor(&v, &cl, &ce, &why));
    ck_assert_ptr_nonnull(why);
    why = NULL;
    ck_assert(!experts_view_cursor(&other, &cl, &ce, &why));
    ck_assert_ptr_nonnull(why);

    /* Down, Enter: layer 1's router, a row per expert */
    ck_assert(ops->act(st, ACT_CELL_DOWN));
    ck_assert_ptr_null(ops->why_not(st, ACT_OPEN_HEAD));
    ck_assert(ops->act(st, ACT_OPEN_HEAD));
    ops->draw(st, w, &scr, true);
    row_of(w, 0, line, sizeof line);
    ck_assert_msg(strstr(line, "router  layer 2/2  pos 12"), "router title [%s]", line);
    int rows = 0;
    for (int y = 2; y < 22; y++) {
        row_of(w, y, line, sizeof line);
        rows += line[0] == ' ' && line[1] == '#';
    }
    ck_assert_int_eq(rows, 8);
    int ex[2];
    ck_assert(expert_routes_of(r, 12, 1, ex, NULL));
    /* the router's cursor is on the most probable: the route's first */
    ck_assert(experts_view_cursor(&v, &cl, &ce, &why));
    ck_assert(cl == 1 && ce == ex[0]);
    ck_assert(ops->act(st, ACT_CELL_DOWN));
    ck_assert(experts_view_cursor(&v, &cl, &ce, &why));
    ck_assert(cl == 1 && ce == ex[1]);
    ck_assert(ops->act(st, ACT_CELL_UP));

    /* Enter on the top one: the positions of the reply that chose it */
    ck_assert(ops->act(st, ACT_OPEN_HEAD));
    ops->draw(st, w, &scr, true);
    row_of(w, 0, line, sizeof line);
    int top;
    ck_assert_msg(sscanf(line, "L2 expert #%d", &top) == 1, "tokens title [%s]", line);
    top--; /* numbered from 1 */
    ck_assert_int_eq(top, ex[0]);
    ck_assert(experts_view_cursor(&v, &cl, &ce, &why));
    ck_assert(cl == 1 && ce == top);
    int chose = expert_routes_chose(r, 1, top, 10, 15, NULL, NULL, 0);
    snprintf(want, sizeof want, "chosen at %d of 6 positions", chose);
    ck_assert_msg(strstr(line, want), "[%s], want [%s]", line, want);
    rows = 0;
    for (int y = 2; y < 22; y++) {
        row_of(w, y, line, sizeof line);
        int p;
        rows += sscanf(line, " %d", &p) == 1;
    }
    ck_assert_int_eq(rows, chose);
    /* Esc twice goes back to the layers, a third time closes */
    for (int i = 0; i < 3; i++) {
        ck_assert(ops->is_open(st));
        ck_assert(ops->act(st, ACT_EXPERTS_BACK));
    }
    ck_assert(!ops->is_open(st));
    delwin(w);
    ops->free(st);
    engine_free(e);
    model_close(m);
    close_terminal();
}
END_TEST

START_TEST(test_refusals)
{
    model *m = open_model(NULL);
    engine *e = NULL;
    llm_err err;
    ck_assert(engine_new(m, NULL, NULL, &e, &err) == LLM_OK);
    tui_source src = {.e = e, .cfg = &m->config};
    tui_selection sel = {-1};
    tui_screen scr = {.rows = 24, .cols = 80};
    view_env env = {.src = &src, .sel = &sel, .scr = &scr};
    void *st = experts_view_ops.new(&env);
    ck_assert_str_eq(experts_view_ops.why_closed(st), "experts: this model has no mixture of experts");
    experts_view_ops.free(st);
    tui_source trace = {.cfg = &m->config};
    env.src = &trace;
    st = experts_view_ops.new(&env);
    ck_assert_ptr_nonnull(strstr(experts_view_ops.why_closed(st), "a trace keeps no routes"));
    experts_view_ops.free(st);
    engine_free(e);
    model_close(m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_experts");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, test_route_text);
    tcase_add_test(tc, test_fold_and_strip);
    tcase_add_test(tc, test_shades);
    tcase_add_test(tc, test_rank_and_range);
    suite_add_tcase(s, tc);
    TCase *view = tcase_create("view");
    tcase_set_timeout(view, 60);
    tcase_add_test(view, test_view_drawn);
    tcase_add_test(view, test_refusals);
    suite_add_tcase(s, view);
    return s;
}

TEST_MAIN(make_suite)
