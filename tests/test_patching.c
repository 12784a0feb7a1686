/* test_patching.c — activation patching (patching.h) on stories260K (fp32 weights) and
 * the tiny qwen35 (Gated DeltaNet layers), by the properties that hold on any model:
 *   - where the two prompts differ at one position k, patching layer 0's resid_pre at k
 *     gives exactly the clean run (1.0) and at any other position exactly the corrupted
 *     one (0.0); at positions before k every layer's cell is exactly 0 (the runs agree
 *     there), for every site, and is not run: a run of it (patching_cell_logits) gives
 *     the corrupted run's logits bit for bit;
 *   - patching the stream after the last layer at the last position gives the clean
 *     logits exactly (KL 0, logit difference 1.0);
 *   - the corrupted run's top token is what an unpatched run predicts (the baselines);
 *   - a position's cells run together (one pass a position, a hybrid's too) give the
 *     grid of each cell run alone, bit for bit;
 *   - a cell at a time, with cells run again out of order in between, gives the same
 *     grid bit for bit, and a cell's logits its value;
 *   - refused: layers the model lacks, equal logit differences, tokens outside the
 *     vocabulary.
 * The grids against an independent float64 reference: e2e_patch.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "family_gguf.h"
#include "patching.h"
#include "testutil.h"
#include "transformer.h"

enum { N = 12, K = 3 }; /* positions; the one where the prompts differ */

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

/* A tiny family fixture (tests/family_gguf.h), fp32 weights. */
static model *open_family(const char *family)
{
    const char *path = temp_path("patch-family.gguf");
    ck_assert(family_gguf_write(path, family, NULL, NULL));
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
    return m;
}

static void prompts(int vocab, int *clean, int *corrupt)
{
    for (int i = 0; i < N; i++)
        clean[i] = corrupt[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
    corrupt[K] = (clean[K] + 5) % vocab;
}

static transformer *new_transformer(const model *m)
{
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, patching_ctx(m, N), TRANSFORMER_KV_F32, &t, &err) ==
                      LLM_OK, "%s", err.text);
    return t;
}

/* A transformer with no room past the prompts: each cell its own run. */
static transformer *new_transformer_single(const model *m)
{
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, N, TRANSFORMER_KV_F32, &t, &err) == LLM_OK, "%s",
                  err.text);
    return t;
}

/* Runs the site over every layer with answer and wrong: the clean and corrupted runs'
 * top tokens (other ones when they agree). */
static void run_site(transformer *t, const int *clean, const int *corrupt, patch_site site,
                     patch_metric metric, int last, patch_result *r)
{
    const model_config *c = &transformer_model(t)->config;
    patch_spec s = {.site = site, .metric = metric, .answer = 0, .wrong = 1,
                    .layer_first = 0, .layer_last = last};
    /* answer and wrong: the clean and the corrupted runs' top tokens */
    const float *lg = transformer_run(t, clean, N, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL);
    for (int i = 0; i < c->vocab_size; i++)
        s.answer = lg[i] > lg[s.answer] ? i : s.answer;
    lg = transformer_run(t, corrupt, N, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL);
    s.wrong = s.answer == 0 ? 1 : 0;
    for (int i = 0; i < c->vocab_size; i++)
        if (i != s.answer && lg[i] > lg[s.wrong])
            s.wrong = i;
    llm_err err;
    ck_assert_msg(patching_run(t, clean, corrupt, N, &s, r, &err) == LLM_OK, "%s", err.text);
}

static void check_properties(model *m)
{
    const model_config *c = &m->config;
    int clean[N], corrupt[N];
    prompts(c->vocab_size, clean, corrupt);
    transformer *t = new_transformer(m);
    for (int site = 0; site < PATCH_SITE_COUNT; site++) {
        if (site == PATCH_EXPERT) /* test_expert_site */
            continue;
        patch_result r;
        run_site(t, clean, corrupt, (patch_site)site, PATCH_LOGIT_DIFF, c->n_layers - 1, &r);
        ck_assert(r.clean != r.corrupt);
        if (site >= PATCH_HEAD) {
            bool kv = site == PATCH_HEAD_K || site == PATCH_HEAD_V;
            ck_assert_int_eq(r.cols, kv ? c->n_kv_heads : model_heads_max(c));
            int heads = 0;
            for (int l = 0; l < c->n_layers; l++) {
                bool attn = m->layers[l].kind != MODEL_LAYER_DELTA_NET;
                int has = site == PATCH_HEAD ? model_layer_heads(m, l)
                          : !attn            ? 0
                          : kv               ? m->layers[l].n_kv_heads
                                             : c->n_heads;
                heads += has;
                for (int h = 0; h < r.cols; h++) /* a head the layer lacks: NAN, no run */
                    ck_assert_msg(isnan(r.grid[l * r.cols + h]) == (h >= has), "%s L%d H%d",
                                  patch_site_name((patch_site)site), l, h);
            }
            ck_assert_int_eq(r.runs, heads);
            ck_assert_int_eq(r.positions_run, (long)heads * N);
            patch_result_free(&r);
            continue;
        }
        ck_assert_int_eq(r.rows, c->n_layers);
        ck_assert_int_eq(r.cols, N);
        ck_assert_int_eq(r.runs, c->n_layers * (N - K)); /* not the cells before K */
        { /* a position's cells together (a hybrid's each from the recurrent state at
             the position) or one at a time: the same grid, bit for bit */
            transformer *one = new_transformer_single(m);
            patch_result single;
            run_site(one, clean, corrupt, (patch_site)site, PATCH_LOGIT_DIFF, c->n_layers - 1,
                     &single);
            ck_assert_int_eq(single.passes, c->n_layers * (N - K));
            ck_assert_int_eq(r.passes, N - K);
            for (int i = 0; i < r.rows * r.cols; i++)
                ck_assert_msg(r.grid[i] == single.grid[i], "%s cell %d: %g together, %g alone",
                              patch_site_name((patch_site)site), i, r.grid[i], single.grid[i]);
            patch_result_free(&single);
            transformer_free(one);
        }
        ck_assert_int_eq(r.positions_run, (long)c->n_layers * (N - K) * (N - K + 1) / 2);
        for (int l = 0; l < c->n_layers; l++)
            for (int p = 0; p < K; p++)
                ck_assert_msg(r.grid[l * N + p] == 0.0f, "%s L%d p%d: %g where the runs agree",
                              patch_site_name((patch_site)site), l, p, r.grid[l * N + p]);
        if (site == PATCH_RESID_PRE)
            for (int p = 0; p < N; p++)
                ck_assert_msg(r.grid[p] == (p == K ? 1.0f : 0.0f), "resid_pre L0 p%d: %.9g", p,
                              r.grid[p]);
        patch_result_free(&r);
    }
    /* the stream after the last layer, the last position: the clean logits */
    patch_result r;
    run_site(t, clean, corrupt, PATCH_RESID_PRE, PATCH_KL, c->n_layers, &r);
    ck_assert(r.corrupt > 0.0);
    ck_assert_msg(r.grid[(size_t)c->n_layers * N + N - 1] == 0.0f, "KL %g",
                  r.grid[(size_t)c->n_layers * N + N - 1]);
    ck_assert(r.grid[(size_t)c->n_layers * N + N - 2] > 0.0f); /* an earlier position: not */
    patch_result_free(&r);
    transformer_free(t);
}

/* A cell at a time (patching_step), with cells run again out of order in between
 * (patching_cell_logits, as Enter on a cell does): the grid is patching_run's bit for
 * bit, and each cell's logits give its grid value; cells report whether they ran. */
static void check_stepping(model *m, patch_site site)
{
    const model_config *c = &m->config;
    int clean[N], corrupt[N];
    prompts(c->vocab_size, clean, corrupt);
    transformer *t = new_transformer(m);
    patch_result whole;
    run_site(t, clean, corrupt, site, PATCH_LOGIT_DIFF, c->n_layers - 1, &whole);
    patch_spec s = {.site = site, .metric = PATCH_LOGIT_DIFF, .answer = whole.answer,
                    .wrong = whole.wrong, .layer_first = 0, .layer_last = c->n_layers - 1};
    patching *p = NULL;
    llm_err err;
    ck_assert_msg(patching_begin(t, clean, corrupt, N, &s, &p, &err) == LLM_OK, "%s", err.text);
    const patch_result *r = patching_result(p);
    ck_assert_int_eq(patching_cell_count(p), whole.rows * whole.cols);
    ck_assert(!patching_cell_ran(p, 0, 0) && isnan(r->grid[0]));
    float *logits = malloc(sizeof(float) * c->vocab_size);
    ck_assert_ptr_nonnull(logits);
    int steps = 0;
    while (!patching_finished(p)) {
        int before = patching_cells_done(p);
        ck_assert_msg(patching_step(p, &err) == LLM_OK, "%s", err.text);
        steps++;
        ck_assert_int_gt(patching_cells_done(p), before); /* a cell, or a position's */
        if (steps % 5 == 0) { /* a cell run again out of order: cell (steps % rows, 2) */
            int row = steps % r->rows, col = 2 % r->cols;
            llm_status st = patching_cell_logits(p, row, col, logits, &err);
            if (isnan(whole.grid[row * whole.cols + col])) {
                ck_assert_int_eq(st, LLM_ERR_ARG);
                continue;
            }
            ck_assert_msg(st == LLM_OK, "%s", err.text);
            ck_assert_float_eq((float)patching_metric(&s, r, logits, c->vocab_size),
                               whole.grid[row * whole.cols + col]);
        }
    }
    ck_assert_int_eq(r->runs, whole.runs);
    for (int i = 0; i < whole.rows * whole.cols; i++) {
        ck_assert(patching_cell_ran(p, i / whole.cols, i % whole.cols));
        ck_assert_msg(isnan(whole.grid[i]) ? isnan(r->grid[i]) : r->grid[i] == whole.grid[i],
                      "%s cell %d: %g stepped, %g whole", patch_site_name(site), i, r->grid[i],
                      whole.grid[i]);
    }
    if (patch_site_positions(site)) /* the cells before K, filled without a run: a run of
                                       each gives the corrupted run's logits exactly */
        for (int row = 0; row < r->rows; row++)
            for (int col = 0; col < K; col++) {
                ck_assert_msg(patching_cell_logits(p, row, col, logits, &err) == LLM_OK, "%s",
                              err.text);
                ck_assert_msg(memcmp(logits, r->corrupt_logits,
                                     sizeof(float) * c->vocab_size) == 0,
                              "%s L%d p%d: a run of the cell is not the corrupted run",
                              patch_site_name(site), row, col);
                ck_assert(r->grid[row * r->cols + col] == 0.0f);
            }
    ck_assert_int_eq(patching_cell_logits(p, r->rows, 0, logits, &err), LLM_ERR_ARG);
    free(logits);
    patching_free(p);
    patch_result_free(&whole);
    transformer_free(t);
}

START_TEST(test_stepping)
{
    model *m = open_stories();
    check_stepping(m, PATCH_RESID_PRE);
    check_stepping(m, PATCH_MLP_OUT);
    check_stepping(m, PATCH_HEAD);
    model_close(m);
    m = open_family("qwen35");
    check_stepping(m, PATCH_ATTN_OUT);
    check_stepping(m, PATCH_HEAD_K);
    model_close(m);
}
END_TEST

/* Which experts the router chose at each layer, at any position (chosen[l * E + e]). */
static void see_chosen(void *user, const hook_tensor *x)
{
    bool *chosen = user;
    for (int i = 0; i < x->n; i++)
        for (int k = 0; k < x->width; k++)
            chosen[x->layer * 64 + (int)x->data[(size_t)i * x->stride + k]] = true;
}

/* Expert 0 is never chosen: its router logit is -INFINITY (data[0] is column 0 when
 * the slice holds it). */
static void never_expert_0(void *user, hook_slice *x)
{
    (void)user;
    for (int i = 0; x->col == 0 && x->width > 0 && i < x->n; i++)
        x->data[(size_t)i * x->stride] = -INFINITY;
}

/* The expert site on the tiny qwen3moe (2 layers, 8 experts, 2 a token), expert 0 kept
 * out by the router: a cell of an expert that neither run's router chose at that layer
 * is exactly 0 (its output is 0 in both: expert 0's at least), a chosen one's is not
 * all 0; the grid is layers x experts. The cells against the float64 reference:
 * e2e_patch.sh. */
START_TEST(test_expert_site)
{
    model *m = open_family("qwen3moe");
    llm_err err;
    const model_config *c = &m->config;
    ck_assert(c->n_experts > 0 && c->n_experts <= 64 && c->n_layers <= 8);
    int clean[N], corrupt[N];
    prompts(c->vocab_size, clean, corrupt);
    transformer *t = new_transformer(m);
    bool chosen[8 * 64] = {false};
    hook h = {.fn = see_chosen, .user = chosen, .points = HOOK_BIT(HOOK_FFN_MOE_TOPK),
              .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    hook out = {.edit = never_expert_0, .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS),
                .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    int id, out_id;
    ck_assert_msg(transformer_hook_add(t, &out, &out_id, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(transformer_hook_add(t, &h, &id, &err) == LLM_OK, "%s", err.text);
    ck_assert_ptr_nonnull(transformer_run(t, clean, N, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    ck_assert_ptr_nonnull(transformer_run(t, corrupt, N, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    transformer_hook_remove(t, id);
    patch_result r;
    run_site(t, clean, corrupt, PATCH_EXPERT, PATCH_LOGIT_DIFF, c->n_layers - 1, &r);
    ck_assert_int_eq(r.rows, c->n_layers);
    ck_assert_int_eq(r.cols, c->n_experts);
    int unchosen = 0, moved = 0;
    for (int l = 0; l < c->n_layers; l++)
        for (int e = 0; e < c->n_experts; e++) {
            float v = r.grid[l * r.cols + e];
            if (!chosen[l * 64 + e]) {
                ck_assert_msg(v == 0.0f, "L%d expert %d, chosen by neither run: %g", l, e, v);
                unchosen++;
            } else
                moved += v != 0.0f;
        }
    ck_assert_int_gt(moved, 0);
    ck_assert_int_ge(unchosen, c->n_layers); /* expert 0 at each layer, at least */
    transformer_hook_remove(t, out_id);
    patch_result_free(&r);
    transformer_free(t);
    model_close(m);
}
END_TEST

START_TEST(test_properties_dense)
{
    model *m = open_stories();
    check_properties(m);
    model_close(m);
}
END_TEST

START_TEST(test_properties_hybrid)
{
    model *m = open_family("qwen35");
    check_properties(m);
    model_close(m);
}
END_TEST

START_TEST(test_refusals)
{
    model *m = open_stories();
    const model_config *c = &m->config;
    int clean[N], corrupt[N];
    prompts(c->vocab_size, clean, corrupt);
    transformer *t = new_transformer(m);
    patch_result r;
    llm_err err;
    patch_spec s = {.site = PATCH_ATTN_OUT, .answer = 5, .wrong = 6, .layer_first = 0,
                    .layer_last = c->n_layers};
    ck_assert_int_eq(patching_run(t, clean, corrupt, N, &s, &r, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "attn_out has layers 0-4"), "%s", err.text);
    patch_result_free(&r);
    s.layer_last = 0;
    s.answer = s.wrong; /* named the same: said so, not blamed on the prompts */
    ck_assert_int_eq(patching_run(t, clean, corrupt, N, &s, &r, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "the same token (#6)"), "%s", err.text);
    patch_result_free(&r);
    s.answer = c->vocab_size;
    ck_assert_int_eq(patching_run(t, clean, corrupt, N, &s, &r, &err), LLM_ERR_ARG);
    patch_result_free(&r);
    corrupt[2] = -1;
    s.answer = 5;
    ck_assert_int_eq(patching_run(t, clean, corrupt, N, &s, &r, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "position 2"), "%s", err.text);
    patch_result_free(&r);
    ck_assert_int_eq(patching_run(t, clean, corrupt, N + 1, &s, &r, &err), LLM_ERR_ARG);
    patch_result_free(&r);
    corrupt[2] = clean[2];
    s.site = PATCH_EXPERT;
    ck_assert_int_eq(patching_run(t, clean, corrupt, N, &s, &r, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "needs a mixture of experts"), "%s", err.text);
    patch_result_free(&r);
    transformer_free(t);
    model_close(m);
}
END_TEST

static Suite *patching_suite(void)
{
    Suite *s = suite_create("patching");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_properties_dense);
    tcase_add_test(tc, test_properties_hybrid);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_stepping);
    tcase_add_test(tc, test_expert_site);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(patching_suite)
