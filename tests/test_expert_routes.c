/* test_expert_routes.c — the experts each position chose (expert_routes.c, kept by the
 * engine), on the tiny qwen3moe fixture (8 experts, 2 used, 2 layers) and its wide
 * shape (8 experts, 4 used):
 *   - every position the sequence ran (a prefill batch, then steps) has a route at
 *     every layer, equal to the ffn_moe_topk and ffn_moe_weights engine_tensors
 *     captures when it runs the position again;
 *   - the counts at a layer over any range add up to its positions times the experts
 *     used; the positions that chose an expert are exactly those whose route has it;
 *   - a what-if pass (engine_tensors, a knock-out) records nothing; a rewind forgets
 *     the routes past it and the run that follows records its own;
 *   - a dense model has no routes; the store on its own: begin / end, limits. */
#include <math.h>
#include <string.h>

#include "attribution.h"
#include "capture.h"
#include "engine.h"
#include "expert_routes.h"
#include "family_gguf.h"
#include "step_weight.h"
#include "testutil.h"

static model *m;

static void open_shape(const char *shape)
{
    const char *path = temp_path("moe.gguf");
    ck_assert(family_gguf_write(path, shape, NULL, NULL));
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    llm_err err;
    ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
}

static void teardown(void)
{
    model_close(m);
    m = NULL;
}

/* An engine on m, greedy, with a prompt of n_prompt tokens and n_steps steps run. */
static engine *run(int n_prompt, int n_steps)
{
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 0;
    engine *e = NULL;
    llm_err err;
    ck_assert_msg(engine_new(m, NULL, &o, &e, &err) == LLM_OK, "%s", err.text);
    int toks[64];
    for (int i = 0; i < n_prompt; i++)
        toks[i] = 1 + (i * 37 + 11) % (m->config.vocab_size - 1);
    ck_assert_msg(engine_prefill(e, toks, n_prompt, &err) == LLM_OK, "%s", err.text);
    for (int i = 0; i < n_steps; i++) {
        int t;
        ck_assert_msg(engine_step(e, &t, &err) == LLM_OK, "%s", err.text);
    }
    return e;
}

/* Every position's route at every layer is the captured ffn_moe_topk and its weights. */
static void check_routes_are_the_pass(engine *e)
{
    const expert_routes *r = engine_routes(e);
    const model_config *c = &m->config;
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(expert_routes_positions(r), engine_pos(e));
    for (int p = 0; p < engine_pos(e); p++)
        for (int l = 0; l < c->n_layers; l++) {
            int ex[64];
            float w[64];
            ck_assert_msg(expert_routes_of(r, p, l, ex, w), "no route at %d, layer %d", p, l);
            llm_err err;
            const tensor_capture *cap = engine_tensors(e, p, l, l, &err);
            ck_assert_msg(cap, "%s", err.text);
            const captured_step *topk = capture_find(cap, HOOK_FFN_MOE_TOPK, l);
            const captured_step *wts = capture_find(cap, HOOK_FFN_MOE_WEIGHTS, l);
            ck_assert(topk && wts);
            ck_assert_int_eq(topk->n, c->n_experts_used);
            for (int k = 0; k < c->n_experts_used; k++) {
                ck_assert_msg(ex[k] == (int)topk->values[k], "pos %d layer %d choice %d: %d, pass %g",
                              p, l, k, ex[k], topk->values[k]);
                ck_assert_msg(fabsf(w[k] - wts->values[k]) <= 1e-6f, "pos %d layer %d weight %d", p, l,
                              k);
            }
        }
}

/* The counts and the positions that chose each expert agree with the routes. */
static void check_counts(const expert_routes *r, int first, int last)
{
    int L = expert_routes_layers(r), E = expert_routes_experts(r), K = expert_routes_used(r);
    for (int l = 0; l < L; l++) {
        int counts[256], sum = 0;
        int n = expert_routes_count(r, l, first, last, counts);
        ck_assert_int_eq(n, last - first + 1);
        for (int x = 0; x < E; x++)
            sum += counts[x];
        ck_assert_int_eq(sum, n * K);
        for (int x = 0; x < E; x++) {
            int pos[64];
            float w[64];
            int found = expert_routes_chose(r, l, x, first, last, pos, w, 64);
            ck_assert_int_eq(found, counts[x]);
            for (int i = 0; i < found && i < 64; i++) {
                int ex[64];
                float wt[64];
                ck_assert(expert_routes_of(r, pos[i], l, ex, wt));
                bool has = false;
                for (int k = 0; k < K; k++)
                    if (ex[k] == x) {
                        has = true;
                        ck_assert(wt[k] == w[i]);
                    }
                ck_assert_msg(has, "position %d listed for expert %d, layer %d", pos[i], x, l);
                ck_assert(i == 0 || pos[i] > pos[i - 1]);
            }
        }
    }
}

START_TEST(test_routes_are_the_pass)
{
    open_shape("qwen3moe");
    engine *e = run(12, 6);
    const expert_routes *r = engine_routes(e);
    ck_assert_int_eq(expert_routes_experts(r), 8);
    ck_assert_int_eq(expert_routes_used(r), 2);
    ck_assert_int_eq(expert_routes_layers(r), 2);
    check_routes_are_the_pass(e);
    check_counts(r, 0, engine_pos(e) - 1);
    check_counts(r, 3, 9);
    check_counts(r, 12, engine_pos(e) - 1); /* the steps only */
    engine_free(e);
}
END_TEST

/* Attribution by expert (fp32 weights): at every position, for the next token and two
 * other candidates, the parts add up to the logit, each layer's experts' parts add up to
 * its feed-forward part, they are the experts the routes say in their order, and
 * gpt-oss's attention biases are a part of their own. */
START_TEST(test_attribution_by_expert)
{
    const char *shapes[] = {"qwen3moe", "olmoe", "mixtral", "gpt-oss"};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        open_shape(shapes[s]);
        engine *e = run(10, 5);
        const model_config *c = &m->config;
        const expert_routes *r = engine_routes(e);
        llm_err err;
        for (int p = 0; p < engine_pos(e); p++) {
            const step_record *rec = engine_record(e, p);
            int targets[3] = {rec->top[0].id, rec->top[1].id, (p * 13 + 5) % c->vocab_size};
            for (int i = 0; i < 3; i++) {
                const step_attribution *a = engine_attribution(e, p, targets[i], &err);
                ck_assert_msg(a, "%s", err.text);
                double sum = attribution_sum(a);
                ck_assert_msg(fabs(sum - a->logit) <= 1e-4 * (1.0 + fabs(a->logit)),
                              "%s pos %d token %d: parts %.7f, logit %.7f", shapes[s], p,
                              targets[i], sum, a->logit);
                ck_assert_int_eq(a->n_used, c->n_experts_used);
                ck_assert(a->expert && a->expert_id);
                ck_assert_msg((a->biases != 0.0f) == !strcmp(shapes[s], "gpt-oss"),
                              "%s: biases %g", shapes[s], a->biases);
                for (int l = 0; l < c->n_layers; l++) {
                    int ex[64];
                    float w[64];
                    ck_assert(expert_routes_of(r, p, l, ex, w));
                    double experts = 0.0;
                    for (int k = 0; k < a->n_used; k++) {
                        experts += a->expert[l * a->n_used + k];
                        ck_assert_int_eq(a->expert_id[l * a->n_used + k], ex[k]);
                    }
                    ck_assert_msg(fabs(experts - a->mlp[l]) <= 1e-5 * (1.0 + fabs(a->mlp[l])),
                                  "%s pos %d layer %d: experts %g, mlp %g", shapes[s], p, l,
                                  experts, a->mlp[l]);
                }
                /* the ranking lists experts, not whole layers */
                attribution_part top[64];
                int n = attribution_top(a, 64, top);
                for (int k = 0; k < n; k++)
                    ck_assert(top[k].kind != ATTRIBUTION_MLP);
            }
        }
        engine_free(e);
        model_close(m);
        m = NULL;
    }
}
END_TEST

/* The compute view's weight of the router: a row of ffn_gate_inp times ffn_norm is the
 * expert's logit, plus the router's bias where the model has one (gpt-oss). */
START_TEST(test_router_weight)
{
    const char *shapes[] = {"qwen3moe", "gpt-oss"};
    for (size_t s = 0; s < 2; s++) {
        open_shape(shapes[s]);
        engine *e = run(6, 2);
        llm_err err;
        for (int l = 0; l < m->config.n_layers; l++) {
            const tensor_capture *cap = engine_tensors(e, engine_pos(e) - 1, l, l, &err);
            ck_assert_msg(cap, "%s", err.text);
            for (int row = 0; row < m->config.n_experts; row += 3) {
                step_weight w;
                ck_assert_msg(step_weight_explain(m, cap, HOOK_FFN_MOE_LOGITS, l, row, 0, &w,
                                                  &err) == LLM_OK, "%s", err.text);
                const float *bias = m->layers[l].router_bias;
                float want = w.row_total + (bias ? bias[row] : 0.0f);
                ck_assert_msg(fabsf(want - w.step_value) <= 1e-5f * (1 + fabsf(w.step_value)),
                              "%s layer %d expert %d: %g, the pass %g", shapes[s], l, row, want,
                              w.step_value);
                ck_assert_int_eq(w.input, HOOK_FFN_NORM);
                ck_assert(strstr(w.tensor, "ffn_gate_inp.weight"));
                ck_assert(w.note && (strstr(w.note, "bias") != NULL) == (bias != NULL));
            }
        }
        engine_free(e);
        model_close(m);
        m = NULL;
    }
}
END_TEST

START_TEST(test_wide)
{
    open_shape("qwen3moe-wide");
    engine *e = run(20, 3);
    const expert_routes *r = engine_routes(e);
    ck_assert_int_eq(expert_routes_used(r), 4);
    check_routes_are_the_pass(e);
    check_counts(r, 0, engine_pos(e) - 1);
    engine_free(e);
}
END_TEST

/* A knock-out's what-if and the captures do not touch the routes; a rewind forgets
 * those past it, and the positions run again have their own. */
START_TEST(test_what_ifs_and_rewind)
{
    open_shape("qwen3moe");
    engine *e = run(10, 4);
    const expert_routes *r = engine_routes(e);
    int n = engine_pos(e), L = m->config.n_layers, K = m->config.n_experts_used;
    int before[64][4][8];
    for (int p = 0; p < n; p++)
        for (int l = 0; l < L; l++)
            ck_assert(expert_routes_of(r, p, l, before[p][l], NULL));
    llm_err err;
    ck_assert(steering_knock_out(engine_steering(e), 0, 1, true, &err) == LLM_OK);
    ck_assert_msg(engine_whatif(e, n - 1, &err), "%s", err.text);
    ck_assert_msg(engine_tensors(e, 3, 0, L - 1, &err), "%s", err.text);
    ck_assert(steering_knock_out(engine_steering(e), 0, 1, false, &err) == LLM_OK);
    for (int p = 0; p < n; p++)
        for (int l = 0; l < L; l++) {
            int ex[8];
            ck_assert(expert_routes_of(r, p, l, ex, NULL));
            ck_assert(!memcmp(ex, before[p][l], sizeof(int) * K));
        }
    ck_assert_msg(engine_rewind(e, 7, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(expert_routes_positions(r), 7);
    int ex[8];
    ck_assert(!expert_routes_of(r, 7, 0, ex, NULL));
    for (int i = 0; i < 3; i++) {
        int t;
        ck_assert_msg(engine_step(e, &t, &err) == LLM_OK, "%s", err.text);
    }
    ck_assert_int_eq(expert_routes_positions(r), 10);
    check_routes_are_the_pass(e);
    check_counts(r, 0, 9);
    engine_free(e);
}
END_TEST

START_TEST(test_dense_has_none)
{
    model_options mo;
    model_options_default(&mo);
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.gguf"), &mo, &m, &err) == LLM_OK, "%s",
                  err.text);
    engine *e = NULL;
    ck_assert(engine_new(m, NULL, NULL, &e, &err) == LLM_OK);
    ck_assert_ptr_null(engine_routes(e));
    engine_free(e);
}
END_TEST

/* The store alone: nothing is recorded outside begin .. end, nor past the context. */
START_TEST(test_store_limits)
{
    model_config c = {.n_layers = 3, .n_experts = 4, .n_experts_used = 2};
    expert_routes *r = NULL;
    llm_err err;
    model_config dense = c;
    dense.n_experts = 0;
    ck_assert(expert_routes_new(&dense, 8, &r, &err) != LLM_OK);
    ck_assert_ptr_null(r);
    ck_assert(expert_routes_new(&c, 8, &r, &err) == LLM_OK);
    hook h = expert_routes_hook(r);
    float topk[2] = {3, 1}, w[2] = {0.75f, 0.25f};
    hook_tensor x = {.point = HOOK_FFN_MOE_TOPK, .layer = 1, .head = -1, .pos = 0, .n = 1,
                     .width = 2, .stride = 2, .data = topk};
    hook_tensor y = x;
    y.point = HOOK_FFN_MOE_WEIGHTS;
    y.data = w;
    h.fn(h.user, &x); /* not listening: nothing */
    h.fn(h.user, &y);
    int ex[2];
    float wt[2];
    ck_assert(!expert_routes_of(r, 0, 1, ex, wt));
    ck_assert(expert_routes_begin(r, 0, 1, &err) == LLM_OK);
    h.fn(h.user, &x);
    ck_assert(!expert_routes_of(r, 0, 1, ex, wt)); /* the weights are still missing */
    h.fn(h.user, &y);
    expert_routes_end(r);
    ck_assert(expert_routes_of(r, 0, 1, ex, wt));
    ck_assert_int_eq(ex[0], 3);
    ck_assert_int_eq(ex[1], 1);
    ck_assert(wt[0] == 0.75f && wt[1] == 0.25f);
    ck_assert(!expert_routes_of(r, 0, 0, ex, wt)); /* layer 0 was not handed */
    int counts[4];
    ck_assert_int_eq(expert_routes_count(r, 1, -5, 100, counts), 1);
    ck_assert_int_eq(counts[3] + counts[1], 2);
    ck_assert_int_eq(expert_routes_chose(r, 1, 3, 0, 0, NULL, NULL, 0), 1);
    ck_assert_int_eq(expert_routes_chose(r, 1, 2, 0, 0, NULL, NULL, 0), 0);
    ck_assert(expert_routes_begin(r, 5, 4, &err) != LLM_OK); /* past the context of 8 */
    ck_assert(expert_routes_begin(r, 1, 7, &err) == LLM_OK); /* grows */
    expert_routes_end(r);
    ck_assert_int_eq(expert_routes_positions(r), 8);
    expert_routes_forget_from(r, 1);
    ck_assert_int_eq(expert_routes_positions(r), 1);
    expert_routes_free(r);
    expert_routes_free(NULL);
}
END_TEST

static Suite *routes_suite(void)
{
    Suite *s = suite_create("expert_routes");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_routes_are_the_pass);
    tcase_add_test(tc, test_wide);
    tcase_add_test(tc, test_attribution_by_expert);
    tcase_add_test(tc, test_router_weight);
    tcase_add_test(tc, test_what_ifs_and_rewind);
    tcase_add_test(tc, test_dense_has_none);
    suite_add_tcase(s, tc);
    TCase *lim = tcase_create("limits");
    tcase_add_test(lim, test_store_limits);
    suite_add_tcase(s, lim);
    return s;
}

TEST_MAIN(routes_suite)
