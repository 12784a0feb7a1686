/* test_attribution.c — direct logit attribution: with fp32 weights the parts (embedding,
 * every head, every MLP, the per-layer inputs, the control vectors) add up to the logit at every position of a run, for the token that came next and for other
 * candidates; a knocked-out head's part is 0; computing it leaves the KV cache and the
 * next step alone; the engine keeps it and drops it with its position; the ranking of
 * the parts. */
#include <math.h>
#include <string.h>

#include "attribution.h"
#include "chat.h"
#include "engine.h"
#include "family_gguf.h"
#include "named_lily.h"
#include "testutil.h"

static model *m;
static tokenizer *tok;

static void open_model(const char *name, tensor_type weights)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    llm_err err;
    ck_assert_msg(model_open(data_path(name), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
}

static void setup_stories_f32(void) { open_model("stories260K.bin", TENSOR_F32); }
static void setup_stories_q8(void) { open_model("stories260K.bin", TENSOR_Q8_0); }
static void setup_chat_f32(void) { open_model("chat260K.bin", TENSOR_F32); }

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

static engine *new_engine(float temperature)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 128;
    o.sampler.temperature = temperature;
    o.sampler.seed = 11;
    engine *e;
    llm_err err;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

/* A prompt and n sampled tokens. */
static void run(engine *e, const char *text, int n)
{
    int ids[64];
    ids[0] = TOKEN_BOS;
    int k = tokenizer_encode(tok, text, ids + 1, 63) + 1;
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, k, &err), LLM_OK);
    for (int i = 0; i < n; i++) {
        int t;
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    }
}

/* How far the parts' sum is from the logit, relative to the logit's size (at least 1). */
static double miss(const step_attribution *a)
{
    return fabs(attribution_sum(a) - a->logit) / (1.0 + fabs(a->logit));
}

/* The same where the model soft-caps its logits: the parts add up to the logit before
 * the cap (step.h). */
static double capped_miss(const step_attribution *a)
{
    double logit = a->softcap != 0.0f ? a->softcap * tanh(attribution_sum(a) / a->softcap)
                                      : attribution_sum(a);
    ck_assert(a->softcap == 0.0f || fabs(a->before_cap - attribution_sum(a)) < 1e-4);
    return fabs(logit - a->logit) / (1.0 + fabs(a->logit));
}

/* The logit of id among r's top candidates, NAN when it is not there. */
static float record_logit(const step_record *r, int id)
{
    for (int i = 0; i < r->n_top; i++)
        if (r->top[i].id == id)
            return r->top[i].logit;
    return NAN;
}

/* fp32 weights: at every position, for the token that came next and the top 3, the parts
 * are the logit within fp32 rounding, and the logit is the one the
 * engine gave the record (the decode positions bit for bit; a prompt position's batch
 * may round differently). */
START_TEST(test_parts_add_up_to_the_logit)
{
    engine *e = new_engine(1.0f);
    run(e, "Once upon a time, there was a little cat", 24);
    llm_err err;
    double worst = 0.0;
    for (int p = 0; p < engine_pos(e); p++) {
        const step_record *r = engine_record(e, p);
        int targets[4] = {r->next, r->top[0].id, r->top[1].id, r->top[2].id};
        for (int i = 0; i < 4; i++) {
            if (targets[i] < 0)
                continue;
            const step_attribution *a = engine_attribution(e, p, targets[i], &err);
            ck_assert_msg(a != NULL, "%s", err.text);
            ck_assert_int_eq(a->pos, p);
            ck_assert_int_eq(a->target, targets[i]);
            ck_assert(a->norm_scale > 0.0f);
            ck_assert_float_eq(a->vectors, 0.0f);
            double d = miss(a);
            worst = d > worst ? d : worst;
            ck_assert_msg(d < 1e-4, "pos %d token %d: parts %.7f, logit %.7f", p, targets[i],
                          attribution_sum(a), a->logit);
            float want = record_logit(r, targets[i]);
            if (!isnan(want))
                ck_assert_msg(fabsf(a->logit - want) <= 1e-4f * (1.0f + fabsf(want)),
                              "pos %d: logit %g, the record's %g", p, a->logit, want);
        }
    }
    fprintf(stderr, "fp32: the parts miss the logit by at most %.2g (relative)\n", worst);
    engine_free(e);
}
END_TEST

/* The suite's model and tokenizer replaced by family_gguf.h's shape written to path
 * (stories260K's vocabulary), fp32 weights. */
static void open_family(const char *path, const char *shape)
{
    ck_assert(family_gguf_write(path, shape, NULL, data_path("stories260K.gguf")));
    model_close(m);
    tokenizer_close(tok);
    llm_err err;
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(path, 0, &tok, &err) == LLM_OK, "%s", err.text);
}

/* Gemma 4 without per-layer inputs (the 31B's layout, family_gguf.h's gemma4-31b): every
 * layer scales the stream after it (layer_output_scale), so what a layer writes reaches
 * the logit scaled by its scale and the later ones': the parts still add up, with a
 * control vector in force too. */
START_TEST(test_gemma4_layer_scales)
{
    const char *path = temp_path("gemma4.gguf");
    open_family(path, "gemma4-31b");
    llm_err err;
    ck_assert(m->layers[0].out_scale && *m->layers[0].out_scale != 1.0f);
    engine *e = new_engine(0.0f);
    run(e, "The dog ran to the park", 8);
    for (int p = 0; p < engine_pos(e); p++) {
        const step_record *r = engine_record(e, p);
        const step_attribution *a = engine_attribution(e, p, r->top[1].id, &err);
        ck_assert_msg(a != NULL, "%s", err.text);
        ck_assert_msg(capped_miss(a) < 1e-4, "pos %d: parts %.7f, logit %.7f", p,
                      attribution_sum(a), a->logit);
    }
    steering *s = engine_steering(e);
    control_vector *cv = calloc(1, sizeof *cv);
    cv->n_embd = m->config.dim;
    cv->n_layers = m->config.n_layers;
    cv->data = calloc((size_t)cv->n_layers * cv->n_embd, sizeof(float));
    for (int l = 0; l < cv->n_layers; l++)
        for (int i = 0; i < cv->n_embd; i++)
            cv->data[(size_t)l * cv->n_embd + i] = 0.1f * (float)((i * 5 + l) % 7 - 3);
    ck_assert_msg(steering_add(s, "test", "test.gguf", cv, 1.0f, &err) == LLM_OK, "%s", err.text);
    int p = engine_pos(e) - 2;
    const step_attribution *a = engine_attribution(e, p, engine_record(e, p)->next, &err);
    ck_assert_msg(a != NULL, "%s", err.text);
    ck_assert(a->vectors != 0.0f);
    ck_assert_msg(capped_miss(a) < 1e-4, "steered: parts %.7f, logit %.7f", attribution_sum(a),
                  a->logit);
    engine_free(e);
    remove(path);
}
END_TEST

/* Gemma 4 with per-layer inputs (family_gguf.h's gemma4: the E2B's layout in small):
 * each layer's per-layer input is a part of its own (per_layer_embd_out), and with it
 * the parts add up to the logit at every position, for the next token and another
 * candidate; leaving the per-layer inputs out misses it (they matter on this file). They
 * are listed among the largest parts as the layer's. */
START_TEST(test_gemma4_layer_inputs)
{
    const char *path = temp_path("gemma4-ple.gguf");
    open_family(path, "gemma4");
    llm_err err;
    ck_assert_int_gt(m->config.ple_dim, 0);
    engine *e = new_engine(0.0f);
    run(e, "The dog ran to the park", 8);
    double worst = 0.0, without_worst = 0.0;
    for (int p = 0; p < engine_pos(e); p++) {
        const step_record *r = engine_record(e, p);
        for (int k = 0; k < 2; k++) {
            int id = k == 0 ? r->next : r->n_top > 1 ? r->top[1].id : -1;
            if (id < 0) /* the last position has no next token yet */
                continue;
            const step_attribution *a = engine_attribution(e, p, id, &err);
            ck_assert_msg(a != NULL, "%s", err.text);
            ck_assert_ptr_nonnull(a->layer_input);
            double miss = capped_miss(a), inputs = 0.0;
            ck_assert_msg(miss < 1e-4, "pos %d: parts %.7f, logit %.7f", p, attribution_sum(a),
                          a->logit);
            worst = fmax(worst, miss);
            for (int l = 0; l < a->n_layers; l++)
                inputs += a->layer_input[l];
            without_worst = fmax(without_worst, fabs(inputs) / (1.0 + fabs(a->logit)));
            /* each layer's input is listed as its own part */
            attribution_part top[256];
            int n = attribution_top(a, 256, top), seen = 0;
            for (int i = 0; i < n; i++)
                seen += top[i].kind == ATTRIBUTION_LAYER_INPUT &&
                        top[i].value == a->layer_input[top[i].layer];
            ck_assert_int_lt(n, 256); /* every part listed */
            ck_assert_int_eq(seen, a->n_layers);
        }
    }
    /* the per-layer inputs carry more of the logit than the sum misses by */
    ck_assert_msg(without_worst > 100 * worst, "per-layer inputs %.3g of the logit, miss %.3g",
                  without_worst, worst);
    fprintf(stderr, "gemma4 with per-layer inputs: the parts miss the logit by at most %.2g "
                    "(relative); the inputs' parts reach %.2g\n", worst, without_worst);
    engine_free(e);
    remove(path);
}
END_TEST

/* Gemma 4 with experts beside each dense feed-forward (family_gguf.h's gemma4-moe, the
 * 26B-A4B's layout): the parts add up to the logit at every position, for the next token
 * and the runner-up; each layer's two chosen experts have parts of their own, which are
 * not the whole feed-forward's part (the dense one is beside them) and are listed. */
START_TEST(test_gemma4_experts_beside)
{
    const char *path = temp_path("gemma4-moe.gguf");
    open_family(path, "gemma4-moe");
    llm_err err;
    ck_assert(m->config.arch.dense_beside_experts);
    engine *e = new_engine(0.0f);
    run(e, "The dog ran to the park", 8);
    double worst = 0.0, dense = 0.0;
    for (int p = 0; p < engine_pos(e); p++) {
        const step_record *r = engine_record(e, p);
        for (int k = 0; k < 2; k++) {
            int id = k == 0 ? r->next : r->n_top > 1 ? r->top[1].id : -1;
            if (id < 0)
                continue;
            const step_attribution *a = engine_attribution(e, p, id, &err);
            ck_assert_msg(a != NULL, "%s", err.text);
            ck_assert_msg(capped_miss(a) < 1e-4, "pos %d: parts %.7f, logit %.7f", p,
                          attribution_sum(a), a->logit);
            worst = fmax(worst, capped_miss(a));
            ck_assert_int_eq(a->n_used, 2);
            for (int l = 0; l < a->n_layers; l++) {
                double experts = 0.0;
                for (int s = 0; s < 2; s++) {
                    int at = l * 2 + s;
                    ck_assert(a->expert_id[at] >= 0 && a->expert_id[at] < 8);
                    ck_assert(isfinite(a->expert[at]));
                    experts += a->expert[at];
                }
                dense = fmax(dense, fabs(a->mlp[l] - experts));
            }
            attribution_part top[256];
            int n = attribution_top(a, 256, top), listed = 0;
            for (int i = 0; i < n; i++)
                listed += top[i].kind == ATTRIBUTION_EXPERT;
            ck_assert_int_eq(listed, 2 * a->n_layers);
        }
    }
    ck_assert_msg(dense > 100 * worst, "the dense feed-forwards' parts: %.3g", dense);
    engine_free(e);
    remove(path);
}
END_TEST

/* With a head knocked out and a control vector in force, the sum still holds: the head's
 * part is 0 and the vectors are a part of their own. */
START_TEST(test_interventions_are_parts)
{
    engine *e = new_engine(0.0f);
    run(e, "The dog ran to the park", 6);
    steering *s = engine_steering(e);
    llm_err err;
    control_vector *cv = calloc(1, sizeof *cv);
    cv->n_embd = m->config.dim;
    cv->n_layers = m->config.n_layers;
    cv->data = calloc((size_t)cv->n_layers * cv->n_embd, sizeof(float));
    for (int l = 1; l < cv->n_layers; l++)
        for (int i = 0; i < cv->n_embd; i++)
            cv->data[(size_t)l * cv->n_embd + i] = 0.05f * (float)((i * 7 + l) % 5 - 2);
    ck_assert_msg(steering_add(s, "test", "test.gguf", cv, 1.0f, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(steering_knock_out(s, 1, 2, true, &err), LLM_OK);
    int p = engine_pos(e) - 2;
    const step_record *r = engine_record(e, p);
    const step_attribution *a = engine_attribution(e, p, r->next, &err);
    ck_assert_msg(a != NULL, "%s", err.text);
    ck_assert_float_eq(a->head[1 * a->n_heads + 2], 0.0f);
    ck_assert(a->vectors != 0.0f);
    ck_assert_msg(miss(a) < 1e-4, "parts %.7f, logit %.7f", attribution_sum(a), a->logit);
    /* the same as what-if's logit with the head out (both run pos again now) */
    const step_whatif *w = engine_whatif(e, p, &err);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->target, r->next);
    ck_assert_float_eq_tol(a->logit, w->target_logit_after, 1e-5);
    /* a new steering state is a new pass: the head back in */
    ck_assert_int_eq(steering_knock_out(s, 1, 2, false, &err), LLM_OK);
    a = engine_attribution(e, p, r->next, &err);
    ck_assert(a->head[1 * a->n_heads + 2] != 0.0f);
    ck_assert_msg(miss(a) < 1e-4, "parts %.7f, logit %.7f", attribution_sum(a), a->logit);
    engine_free(e);
}
END_TEST

/* The attribution leaves the KV cache alone (the next steps equal a twin's), is kept
 * while asked for again, and goes with its position on a rewind. */
START_TEST(test_kept_and_harmless)
{
    engine *e = new_engine(1.0f), *twin = new_engine(1.0f);
    run(e, "A bird sang", 3);
    run(twin, "A bird sang", 3);
    llm_err err;
    for (int i = 0; i < 8; i++) {
        int newest = engine_pos(e) - 1;
        const step_record *r = engine_record(e, newest);
        const step_attribution *a = engine_attribution(e, newest, r->top[1].id, &err);
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_eq(engine_attribution(e, newest, r->top[1].id, &err), a);
        ck_assert_float_eq(a->logit, r->top[1].logit); /* a decode position: bit for bit */
        int ta, tb;
        ck_assert_int_eq(engine_step(e, &ta, &err), LLM_OK);
        ck_assert_int_eq(engine_step(twin, &tb, &err), LLM_OK);
        ck_assert_int_eq(ta, tb);
        ck_assert_int_eq(memcmp(engine_logits(e), engine_logits(twin),
                                sizeof(float) * m->config.vocab_size), 0);
    }
    int p = engine_pos(e) - 2;
    const step_attribution *a = engine_attribution(e, p, 5, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(engine_rewind(e, p, &err), LLM_OK);
    ck_assert_ptr_null(engine_attribution(e, p, 5, &err)); /* the position is gone */
    ck_assert_ptr_null(engine_attribution(e, -1, 5, &err));
    ck_assert_ptr_null(engine_attribution(e, 0, m->config.vocab_size, &err));
    ck_assert_ptr_nonnull(engine_attribution(e, p - 1, 5, &err));
    engine_free(e);
    engine_free(twin);
}
END_TEST

/* int8 weights: the parts are computed from the same weights made fp32 again, but the
 * engine rounds its activations to int8 before each matmul: the sum comes close to the
 * logit, not to the last bits. */
START_TEST(test_int8_close)
{
    engine *e = new_engine(0.0f);
    run(e, "Once upon a time", 12);
    llm_err err;
    double worst = 0.0;
    for (int p = 0; p < engine_pos(e) - 1; p++) {
        const step_attribution *a = engine_attribution(e, p, engine_record(e, p)->next, &err);
        ck_assert_ptr_nonnull(a);
        double d = miss(a);
        worst = d > worst ? d : worst;
    }
    fprintf(stderr, "int8: the parts miss the logit by at most %.2g (relative)\n", worst);
    ck_assert_msg(worst < 0.05, "the parts miss the logit by %g", worst);
    engine_free(e);
}
END_TEST

/* attribution_top: by size, sign kept, ties in grid order, the vectors only when in
 * force, k bounds the count. */
START_TEST(test_top)
{
    float head[2 * 3] = {0.5f, -2.0f, 0.1f, 1.0f, 0.0f, -0.5f};
    float mlp[2] = {3.0f, -0.25f};
    step_attribution a = {.n_layers = 2, .n_heads = 3, .head = head, .mlp = mlp,
                          .embedding = 1.0f};
    attribution_part top[16];
    int n = attribution_top(&a, 4, top);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(top[0].kind, ATTRIBUTION_MLP);
    ck_assert_int_eq(top[0].layer, 0);
    ck_assert_float_eq(top[0].value, 3.0f);
    ck_assert_int_eq(top[1].kind, ATTRIBUTION_HEAD);
    ck_assert_int_eq(top[1].layer, 0);
    ck_assert_int_eq(top[1].head, 1);
    ck_assert_float_eq(top[1].value, -2.0f);
    ck_assert_int_eq(top[2].kind, ATTRIBUTION_EMBEDDING); /* 1.0 ties with L2 H1: first */
    ck_assert_int_eq(top[3].kind, ATTRIBUTION_HEAD);
    ck_assert_int_eq(top[3].layer, 1);
    ck_assert_int_eq(top[3].head, 0);
    n = attribution_top(&a, 16, top);
    ck_assert_int_eq(n, 1 + 6 + 2); /* no vectors */
    ck_assert_float_eq(fabsf(top[n - 1].value), 0.0f);
    a.vectors = -5.0f;
    n = attribution_top(&a, 1, top);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(top[0].kind, ATTRIBUTION_VECTORS);
    ck_assert_int_eq(attribution_top(&a, 0, top), 0);
    ck_assert_float_eq_tol(attribution_sum(&a), 0.5 - 2 + 0.1 + 1 - 0.5 + 3 - 0.25 + 1 - 5, 1e-6);
}
END_TEST

/* chat260K, asked for a dog named Lily: at the reply's " named", which parts write
 * " Lily" and which set it apart from the runner-up " M" (docs/debugging.md quotes
 * them). */
START_TEST(test_chat_named_lily)
{
    named_lily run;
    named_lily_run(m, tok, &run);
    llm_err err;
    int pos = run.pos;
    const step_attribution *a = engine_attribution(run.e, pos, run.lily, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_msg(miss(a) < 1e-4, "parts %.7f, logit %.7f", attribution_sum(a), a->logit);
    attribution_part top[6];
    int n = attribution_top(a, 6, top);
    fprintf(stderr, "chat260K at pos %d ' named' -> ' Lily': logit %.3f, embedding %+.3f:", pos,
            a->logit, a->embedding);
    static const char *const kinds[] = {"embedding", "head", "MLP", "vectors"};
    for (int i = 0; i < n; i++)
        fprintf(stderr, " %s L%d H%d %+.3f;", kinds[top[i].kind], top[i].layer + 1,
                top[i].head + 1, top[i].value);
    fprintf(stderr, "\n");
    /* the largest: the second layer's MLP, then head 5 of the last layer */
    ck_assert(top[0].kind == ATTRIBUTION_MLP && top[0].layer == 1);
    ck_assert(top[1].kind == ATTRIBUTION_HEAD && top[1].layer == 4 && top[1].head == 4);
    /* the runner-up " M": the first two MLPs write about as much for it, L3 H7 against it */
    float lily_mlp[2] = {a->mlp[0], a->mlp[1]}, lily_l3h7 = a->head[2 * a->n_heads + 6];
    const step_record *r = engine_record(run.e, pos);
    ck_assert_str_eq(tokenizer_piece(tok, r->top[1].id), " M");
    a = engine_attribution(run.e, pos, r->top[1].id, &err);
    ck_assert_msg(miss(a) < 1e-4, "parts %.7f, logit %.7f", attribution_sum(a), a->logit);
    for (int l = 0; l < 2; l++)
        ck_assert_msg(fabsf(a->mlp[l] - lily_mlp[l]) < 0.2f, "L%d MLP: %g for ' M', %g for ' Lily'",
                      l + 1, a->mlp[l], lily_mlp[l]);
    ck_assert(lily_l3h7 > 0.5f && a->head[2 * a->n_heads + 6] < 0.0f);
    named_lily_free(&run);
}
END_TEST

static Suite *attribution_suite(void)
{
    Suite *s = suite_create("attribution");
    TCase *f32 = tcase_create("core");
    tcase_add_checked_fixture(f32, setup_stories_f32, teardown);
    tcase_add_test(f32, test_parts_add_up_to_the_logit);
    tcase_add_test(f32, test_interventions_are_parts);
    tcase_add_test(f32, test_kept_and_harmless);
    tcase_add_test(f32, test_top);
    tcase_add_test(f32, test_gemma4_layer_scales);
    tcase_add_test(f32, test_gemma4_layer_inputs);
    tcase_add_test(f32, test_gemma4_experts_beside);
    suite_add_tcase(s, f32);
    TCase *q8 = tcase_create("int8");
    tcase_add_checked_fixture(q8, setup_stories_q8, teardown);
    tcase_add_test(q8, test_int8_close);
    suite_add_tcase(s, q8);
    TCase *on_chat = tcase_create("chat260K");
    tcase_add_checked_fixture(on_chat, setup_chat_f32, teardown);
    tcase_add_test(on_chat, test_chat_named_lily);
    suite_add_tcase(s, on_chat);
    return s;
}

TEST_MAIN(attribution_suite)
