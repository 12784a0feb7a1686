/* test_tui_compute.c — the compute view's text without a terminal (compute_format.c):
 * numbers never wider than asked, sparklines, the list's columns at 80, 60 and 40
 * columns (what does not fit is named, a row is never wider than the screen), and the
 * weight view's lines of every kind of tensor (fp32, llmchat's int8 rows, GGUF Q8_0
 * and Q4_K / Q6_K in place, a converted one beside its file block) no wider than the
 * view at any width, with the numbers a learner checks by hand. */
#include <math.h>
#include <string.h>

#include "tui/compute_format.h"
#include "engine.h"
#include "testutil.h"

/* Columns s takes on a UTF-8 screen (continuation bytes take none). */
static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

START_TEST(test_numbers_fit)
{
    static const float v[] = {0.0f, 1.0f, -1.0f, 0.5f, -0.000123456f, 123456.789f, -9.87654e-21f,
                              3.4e38f, -1.17e-38f, 42.0f, INFINITY, -INFINITY, NAN};
    char out[64];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        for (int w = 1; w <= 12; w++) {
            int n = cfmt_number(v[i], w, out, sizeof out);
            ck_assert_msg(n <= w && (int)strlen(out) == n, "%g in %d columns: '%s'", v[i], w, out);
            ck_assert_msg(n > 0, "%g in %d columns: nothing", v[i], w);
        }
    cfmt_number(-0.000123456f, 6, out, sizeof out);
    ck_assert_str_eq(out, "-1e-4"); /* the exponent form when %g would keep it fixed */
    cfmt_number(123456.789f, 7, out, sizeof out);
    ck_assert_str_eq(out, "123457");
    cfmt_number(1.5e-7f, 9, out, sizeof out);
    ck_assert_str_eq(out, "1.5e-7");
    cfmt_number(0.25f, 0, out, sizeof out);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_sparkline)
{
    unsigned hist[STEP_TENSOR_BINS] = {0};
    hist[0] = 10;
    hist[15] = 1;
    hist[8] = 5;
    char out[128];
    cfmt_sparkline(hist, 16, false, out, sizeof out);
    ck_assert_int_eq((int)strlen(out), 16);
    ck_assert(out[0] == '@' && out[15] == '.' && out[1] == ' ');
    cfmt_sparkline(hist, 8, true, out, sizeof out);
    ck_assert_int_eq(columns(out), 8);
    ck_assert(!strncmp(out, "\xe2\x96\x88", 3)); /* the full bar: the largest bin */
    unsigned none[STEP_TENSOR_BINS] = {0};
    cfmt_sparkline(none, 8, true, out, sizeof out);
    ck_assert_str_eq(out, "        ");
}
END_TEST

static step_tensor example(void)
{
    step_tensor t = {.name = "ffn_gate_par", .layer = 3, .n_dims = 2, .shape = {32, 4097},
                     .n = 32 * 4097, .min = -123.456f, .max = 98765.4f, .mean = -0.000123f,
                     .l2 = 1234567.0f, .n_first = STEP_TENSOR_FIRST};
    for (int i = 0; i < STEP_TENSOR_FIRST; i++)
        t.first[i] = -1.0f / (float)(i + 3);
    for (int b = 0; b < STEP_TENSOR_BINS; b++)
        t.hist[b] = (unsigned)(b * 7 % 11);
    return t;
}

START_TEST(test_columns_fit_the_width)
{
    step_tensor t = example();
    char shape[32], row[1024], head[1024];
    int shape_w = cfmt_shape(&t, shape, sizeof shape);
    ck_assert_str_eq(shape, "[32,4097]");
    static const int widths[] = {200, 120, 80, 79, 60, 59, 40, 30, 24};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        compute_columns c;
        compute_columns_for(widths[i], 12, shape_w, &c);
        compute_row(&t, &c, true, row, sizeof row);
        compute_header(&c, head, sizeof head);
        ck_assert_msg(columns(row) <= widths[i] || widths[i] < 12 + 1 + shape_w,
                      "a row of %d columns at %d: '%s'", columns(row), widths[i], row);
        ck_assert_int_le(columns(head), columns(row) > widths[i] ? columns(head) : widths[i]);
        ck_assert(strstr(row, "ffn_gate_par") && strstr(row, "[32,4097]")); /* never cut */
        bool all = c.l2 && c.min && c.max && c.hist_w && c.mean && c.n_first > 0;
        ck_assert_msg(all == (c.hidden[0] == '\0'), "at %d the hidden columns are '%s'", widths[i],
                      c.hidden);
    }
    compute_columns c;
    compute_columns_for(80, 12, shape_w, &c);
    ck_assert(c.l2 && c.min && c.max && c.hist_w && c.mean && c.n_first >= 2);
    compute_columns_for(60, 12, shape_w, &c);
    ck_assert(c.l2 && c.min && c.max && c.hist_w);
    ck_assert_msg(strstr(c.hidden, "first values") != NULL, "at 60: hidden '%s'", c.hidden);
    compute_columns_for(40, 12, shape_w, &c);
    ck_assert(c.l2 && strstr(c.hidden, "histogram"));
    ck_assert_str_eq(compute_step_about("Qcur"), "the queries, a row a head, after RoPE");
    ck_assert_str_eq(compute_step_about("no_such_step"), "");
}
END_TEST

/* The weight view of a step of model file name (weights as given): every line at most
 * the width, at every width; the numbers it shows are the struct's. */
static void check_weight_text(const char *name, tensor_type weights, hook_point step,
                              const char *expect_block, bool expect_file_block)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    model *m;
    llm_err err;
    ck_assert_msg(model_open(data_path(name), &mo, &m, &err) == LLM_OK, "%s", err.text);
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 32;
    engine *e;
    ck_assert_int_eq(engine_new(m, NULL, &o, &e, &err), LLM_OK);
    int ids[4] = {1, 20, 30, 40};
    ck_assert_int_eq(engine_prefill(e, ids, 4, &err), LLM_OK);
    const tensor_capture *cap = engine_tensors(e, 3, 0, 0, &err);
    ck_assert_msg(cap != NULL, "%s", err.text);
    static step_weight w;
    ck_assert_msg(step_weight_explain(m, cap, step, step == HOOK_RESULT_OUTPUT ? -1 : 0, 5, 1, &w,
                                      &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(!strncmp(w.block.name, expect_block, strlen(expect_block)), "%s: block %s, not %s",
                  name, w.block.name, expect_block);
    ck_assert_int_eq(w.file_block_ok, expect_file_block);
    static compute_text text;
    for (int width = 20; width <= 140; width += 7) {
        compute_weight_text(&w, width, &text);
        ck_assert_msg(!text.cut && text.n > 6, "%s at %d: %d lines%s", name, width, text.n,
                      text.cut ? ", cut" : "");
        for (int i = 0; i < text.n; i++)
            ck_assert_msg((int)strlen(text.line[i]) <= width, "%s at %d: line %d is %d long: '%s'",
                          name, width, i, (int)strlen(text.line[i]), text.line[i]);
    }
    compute_weight_text(&w, 80, &text);
    char all[COMPUTE_TEXT_LINES * 100] = "", num[32];
    for (int i = 0; i < text.n; i++)
        strncat(all, text.line[i], sizeof all - strlen(all) - 2);
    ck_assert_msg(strstr(all, w.tensor) != NULL, "%s: no tensor name", name);
    cfmt_number(w.partial, 12, num, sizeof num);
    ck_assert_msg(strstr(all, num) != NULL, "%s: the partial %s is not shown", name, num);
    cfmt_number(w.row_total, 12, num, sizeof num);
    ck_assert_msg(strstr(all, num) != NULL, "%s: the row total %s is not shown", name, num);
    engine_free(e);
    model_close(m);
}

START_TEST(test_weight_text)
{
    check_weight_text("stories260K.gguf", TENSOR_F32, HOOK_FFN_UP, "F32", false);
    check_weight_text("stories260K.gguf", TENSOR_Q8_0, HOOK_KQV_OUT, "Q8_0 (llmchat", true);
    check_weight_text("stories260K-q8_0.gguf", TENSOR_BLOCKS, HOOK_VCUR, "Q8_0", false);
    check_weight_text("stories260K-q8_0.gguf", TENSOR_BLOCKS, HOOK_FFN_OUT, "Q8_0 (llmchat", true);
    check_weight_text("rand256-q4_k_m.gguf", TENSOR_BLOCKS, HOOK_FFN_GATE, "Q4_K", false);
    check_weight_text("rand256-q4_k_m.gguf", TENSOR_BLOCKS, HOOK_RESULT_OUTPUT, "Q6_K", false);
    check_weight_text("rand256-q4_k_m.gguf", TENSOR_Q8_0, HOOK_QCUR, "Q8_0 (llmchat", true);
    check_weight_text("stories260K.bin", TENSOR_Q8_0, HOOK_FFN_GATE, "Q8_0 (llmchat", false);
}
END_TEST

static Suite *tui_compute_suite(void)
{
    Suite *s = suite_create("tui_compute");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_numbers_fit);
    tcase_add_test(tc, test_sparkline);
    tcase_add_test(tc, test_columns_fit_the_width);
    tcase_add_test(tc, test_weight_text);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(tui_compute_suite)
