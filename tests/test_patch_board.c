/* test_patch_board.c — the TUI's patching grid (patch_board.h) on stories260K (fp32
 * weights): a grid stepped to its end is patching_run's, cell for cell, with every cell
 * marked run; a cell's logits give its value; a restart at a site the model lacks
 * (expert) fails and keeps the grid; the logit difference falls back to the KL
 * divergence (said in the note) where the two runs' top tokens agree; refused with
 * one line: prompts of two lengths (both counts), longer than 1024 tokens, empty; a
 * trace's grid is shown as it is and runs no cell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "patch_board.h"
#include "testutil.h"

enum { N = 12 };

static model *open_stories(void)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.gguf"), &mo, &m, &err) == LLM_OK, "%s",
                  err.text);
    return m;
}

static void prompts(int vocab, int *clean, int *corrupt)
{
    for (int i = 0; i < N; i++)
        clean[i] = corrupt[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
    corrupt[3] = (clean[3] + 5) % vocab;
}

START_TEST(test_grid)
{
    model *m = open_stories();
    const model_config *c = &m->config;
    int clean[N], corrupt[N];
    prompts(c->vocab_size, clean, corrupt);
    patch_board *b = patch_board_new();
    ck_assert_ptr_nonnull(b);
    ck_assert(!patch_board_has_grid(b));
    char note[400];
    llm_err err;
    ck_assert_msg(patch_board_start(b, m, TRANSFORMER_KV_F32, clean, N, corrupt, N,
                                    PATCH_RESID_PRE, PATCH_LOGIT_DIFF, note, sizeof note,
                                    &err) == LLM_OK, "%s", err.text);
    patch_grid g;
    ck_assert(patch_board_grid(b, &g) && g.live && g.running);
    ck_assert_int_eq(g.rows, c->n_layers + 1); /* resid_pre: the stream after the last too */
    ck_assert_int_eq(g.cols, N);
    while (patch_board_running(b))
        ck_assert_msg(patch_board_step(b, &err) == LLM_OK, "%s", err.text);
    ck_assert(patch_board_grid(b, &g) && !g.running && g.done == g.total);
    /* the same grid by patching_run, with the measure the board settled on */
    transformer *t = NULL;
    ck_assert(transformer_new_kv(m, N, TRANSFORMER_KV_F32, &t, &err) == LLM_OK);
    patch_spec s = {.site = g.site, .metric = g.metric, .answer = g.answer, .wrong = g.wrong,
                    .layer_first = 0, .layer_last = c->n_layers};
    if (g.metric == PATCH_KL)
        ck_assert_msg(strstr(note, "KL divergence instead"), "%s", note);
    patch_result r;
    ck_assert_msg(patching_run(t, clean, corrupt, N, &s, &r, &err) == LLM_OK, "%s", err.text);
    for (int row = 0; row < g.rows; row++)
        for (int col = 0; col < g.cols; col++) {
            ck_assert(patch_board_cell_ran(b, row, col));
            ck_assert_float_eq(g.grid[row * g.cols + col], r.grid[row * r.cols + col]);
        }
    const float *logits;
    ck_assert(patch_board_cell_logits(b, c->n_layers, N - 1, &logits, &err) == LLM_OK);
    ck_assert_float_eq((float)patching_metric(&s, &r, logits, c->vocab_size),
                       g.grid[c->n_layers * g.cols + N - 1]);
    /* a site the model lacks: refused, the grid kept */
    ck_assert_int_eq(patch_board_restart(b, PATCH_EXPERT, g.metric, note, sizeof note, &err),
                     LLM_ERR_ARG);
    ck_assert(patch_board_grid(b, &g) && g.site == PATCH_RESID_PRE && g.done == g.total);
    ck_assert(patch_board_restart(b, PATCH_ATTN_OUT, g.metric, note, sizeof note, &err) ==
              LLM_OK);
    ck_assert(patch_board_grid(b, &g) && g.site == PATCH_ATTN_OUT && g.rows == c->n_layers &&
              g.done == 0);
    patch_result_free(&r);
    transformer_free(t);
    patch_board_free(b);
    model_close(m);
}
END_TEST

START_TEST(test_refusals)
{
    model *m = open_stories();
    int clean[N], corrupt[N];
    prompts(m->config.vocab_size, clean, corrupt);
    patch_board *b = patch_board_new();
    char note[400];
    llm_err err;
    ck_assert_int_eq(patch_board_start(b, m, TRANSFORMER_KV_F32, clean, N, corrupt, N - 1,
                                       PATCH_RESID_PRE, PATCH_LOGIT_DIFF, note, sizeof note, &err),
                     LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "12 tokens and the corrupted 11"), "%s", err.text);
    ck_assert(!patch_board_has_grid(b));
    int *many = calloc(1025, sizeof(int));
    ck_assert_ptr_nonnull(many);
    ck_assert_int_eq(patch_board_start(b, m, TRANSFORMER_KV_F32, many, 1025, many, 1025,
                                       PATCH_RESID_PRE, PATCH_LOGIT_DIFF, note, sizeof note, &err),
                     LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "1025 tokens") && strstr(err.text, "at most 1024"), "%s",
                  err.text);
    free(many);
    ck_assert_int_eq(patch_board_start(b, m, TRANSFORMER_KV_F32, clean, 0, corrupt, 0,
                                       PATCH_RESID_PRE, PATCH_LOGIT_DIFF, note, sizeof note, &err),
                     LLM_ERR_ARG);
    patch_board_free(b);
    model_close(m);
}
END_TEST

START_TEST(test_trace_grid)
{
    int ids[3] = {1, 5, 7}, corrupt_ids[3] = {1, 6, 7};
    float grid[6] = {0.0f, 1.0f, 0.5f, NAN, 0.25f, 0.0f};
    trace_patch tp = {.site = PATCH_RESID_PRE, .metric = PATCH_LOGIT_DIFF, .layer_first = 0,
                      .layer_last = 1, .n = 3, .ids = ids, .corrupt_ids = corrupt_ids,
                      .answer = 5, .wrong = 6, .rows = 2, .cols = 3, .grid = grid,
                      .clean = 2.0, .corrupt = -1.0};
    patch_board *b = patch_board_new();
    patch_board_show_trace(b, &tp);
    patch_grid g;
    ck_assert(patch_board_grid(b, &g) && !g.live && !g.running);
    ck_assert(g.rows == 2 && g.cols == 3 && g.grid == grid && g.clean == ids);
    ck_assert_ptr_null(g.clean_logits);
    ck_assert(!patch_board_running(b));
    const float *logits;
    llm_err err;
    ck_assert_int_eq(patch_board_cell_logits(b, 0, 0, &logits, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "--replay"), "%s", err.text);
    char note[100];
    ck_assert_int_eq(patch_board_restart(b, PATCH_ATTN_OUT, PATCH_KL, note, sizeof note, &err),
                     LLM_ERR_ARG);
    patch_board_free(b);
}
END_TEST

static Suite *patch_board_suite(void)
{
    Suite *s = suite_create("patch_board");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_grid);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_trace_grid);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(patch_board_suite)
