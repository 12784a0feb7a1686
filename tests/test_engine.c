/* test_engine.c — the engine on the real stories260K models: step records of prefill,
 * step, force and rewind; attention capture; context limits; the observer; a long
 * prompt told chunk by chunk to a progress callback, to the same bits, and stopped;
 * running out of memory for the kernels' scratch. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "kernels.h"
#include "steering.h"
#include "testutil.h"

static model *m;
static tokenizer *tok;

static void open_model(tensor_type weights)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.bin"), &mo, &m, &err) == LLM_OK,
                  "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK,
                  "%s", err.text);
}

static void setup_q8(void) { open_model(TENSOR_Q8_0); }
static void setup_f32(void) { open_model(TENSOR_F32); }

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
    tok = NULL;
    m = NULL;
}

static engine *new_engine(int ctx, bool capture, float temperature)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = ctx;
    o.capture_attention = capture;
    o.sampler.temperature = temperature;
    o.sampler.seed = 42;
    engine *e;
    llm_err err;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

/* BOS + the tokens of text; returns the count. */
static int prompt_ids(const char *text, int *ids, int max)
{
    ids[0] = TOKEN_BOS;
    int n = tokenizer_encode(tok, text, ids + 1, max - 1);
    ck_assert_int_lt(n, max);
    return n + 1;
}

typedef struct {
    int count;
    int last_pos;
    bool in_order;
} seen;

static void count_records(void *user, const step_record *r)
{
    seen *s = user;
    if (r->pos != s->last_pos + 1)
        s->in_order = false;
    s->last_pos = r->pos;
    s->count++;
}

START_TEST(test_prefill_records)
{
    engine *e = new_engine(0, false, 0.0f);
    seen s = {0, -1, true};
    engine_set_observer(e, count_records, &s);
    int ids[64];
    int n = prompt_ids("Once upon a time, there was a little girl", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), n);
    /* every prompt record but the last is finished, in order */
    ck_assert_int_eq(s.count, n - 1);
    ck_assert(s.in_order);
    for (int p = 0; p < n; p++) {
        const step_record *r = engine_record(e, p);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->pos, p);
        ck_assert_int_eq(r->token, ids[p]);
        ck_assert_int_eq(r->phase, STEP_PROMPT);
        ck_assert_int_eq(r->n_top, 10);
        float sum = 0.0f;
        for (int i = 0; i < r->n_top; i++) {
            sum += r->top[i].prob;
            if (i > 0)
                ck_assert(r->top[i].prob <= r->top[i - 1].prob);
            ck_assert(r->top[i].prob > 0.0f && r->top[i].prob <= 1.0f);
        }
        ck_assert(sum <= 1.0001f);
        if (p < n - 1) {
            ck_assert_int_eq(r->next, ids[p + 1]);
            ck_assert(r->next_prob > 0.0f && r->next_prob <= 1.0f);
            ck_assert_int_ge(r->next_rank, 1);
            /* rank 1 means it is the top candidate, and conversely */
            ck_assert_int_eq(r->next_rank == 1, r->top[0].id == r->next);
            ck_assert(!r->sampled);
        } else {
            ck_assert_int_eq(r->next, -1);
        }
    }
    ck_assert_ptr_null(engine_record(e, n));
    engine_free(e);
}
END_TEST

/* -Σ p log p of the softmax of logits, in double. */
static double entropy_of(const float *logits, int n)
{
    double max = logits[0], z = 0.0, h = 0.0;
    for (int i = 1; i < n; i++)
        if (logits[i] > max)
            max = logits[i];
    for (int i = 0; i < n; i++)
        z += exp(logits[i] - max);
    for (int i = 0; i < n; i++) {
        double p = exp(logits[i] - max) / z;
        if (p > 0.0)
            h -= p * log(p);
    }
    return h;
}

/* Each record's entropy is that of the model's whole distribution for the next
 * position (computed from the logits by hand here), at the prompt's end and at each
 * generated position. */
START_TEST(test_record_entropy)
{
    engine *e = new_engine(0, false, 0.8f);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    int vocab = engine_model(e)->config.vocab_size;
    double lo = 1e9, hi = 0.0;
    for (int k = 0; k < 12; k++) {
        const step_record *r = engine_record(e, engine_pos(e) - 1);
        double want = entropy_of(engine_logits(e), vocab);
        ck_assert_msg(fabs(r->entropy - want) <= 1e-4 + 1e-4 * want, "pos %d: entropy %g, by hand %g",
                      r->pos, (double)r->entropy, want);
        lo = want < lo ? want : lo;
        hi = want > hi ? want : hi;
        int t;
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    }
    ck_assert_msg(hi - lo > 0.1, "every position had entropy %g: the check shows nothing", lo);
    engine_free(e);
}
END_TEST

START_TEST(test_step_force_rewind)
{
    engine *e = new_engine(0, false, 0.0f);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    int first_top = engine_record(e, n - 1)->top[0].id;

    int t1, t2, t3;
    ck_assert_int_eq(engine_step(e, &t1, &err), LLM_OK);
    ck_assert_int_eq(t1, first_top); /* greedy takes the model's top candidate */
    const step_record *r = engine_record(e, n - 1);
    ck_assert(r->sampled);
    ck_assert_int_eq(r->next, t1);
    ck_assert_int_eq(r->next_rank, 1);
    ck_assert(r->sampler.greedy);
    ck_assert_int_eq(engine_record(e, n)->phase, STEP_GEN);
    ck_assert_int_eq(engine_record(e, n)->token, t1);
    ck_assert_int_eq(engine_step(e, &t2, &err), LLM_OK);
    ck_assert_int_eq(engine_step(e, &t3, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), n + 3);

    /* rewind two positions: greedy must choose the same tokens again */
    ck_assert_int_eq(engine_rewind(e, n + 1, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), n + 1);
    ck_assert_int_eq(engine_record(e, n)->next, -1);
    int again;
    ck_assert_int_eq(engine_step(e, &again, &err), LLM_OK);
    ck_assert_int_eq(again, t2);

    /* force a token the model did not want */
    int forced = t3 == 100 ? 101 : 100;
    ck_assert_int_eq(engine_force(e, forced, &err), LLM_OK);
    const step_record *before = engine_record(e, engine_pos(e) - 2);
    ck_assert_int_eq(before->next, forced);
    ck_assert(!before->sampled);
    ck_assert(before->next_prob > 0.0f);
    ck_assert_int_eq(engine_record(e, engine_pos(e) - 1)->phase, STEP_FORCED);
    ck_assert_int_eq(engine_record(e, engine_pos(e) - 1)->token, forced);
    engine_free(e);
}
END_TEST


/* Each shown candidate of a sampled record says what the sampler did to it: top-k 3
 * removes the 4th on, the kept ones' final probabilities are the draw's distribution
 * (the chosen one's is chosen_prob) and sum to at most 1. */
START_TEST(test_candidate_fates)
{
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 1.2f;
    o.sampler.top_k = 3;
    o.sampler.top_p = 0.95f;
    o.sampler.seed = 3;
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &e, &err), LLM_OK);
    int ids[64];
    int n = prompt_ids("The little dog", ids, 64);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    for (int i = 0; i < 10; i++) {
        int t;
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
        const step_record *r = engine_record(e, engine_pos(e) - 2);
        ck_assert(r->sampled);
        ck_assert_int_ge(r->n_top, 4);
        double kept_sum = 0.0;
        bool chosen_seen = false;
        for (int j = 0; j < r->n_top; j++) {
            const step_candidate *c = &r->top[j];
            if (j >= 3)
                ck_assert_int_eq(c->cut, SAMPLER_CUT_TOP_K);
            else
                ck_assert(c->cut == SAMPLER_KEPT || c->cut == SAMPLER_CUT_TOP_P);
            if (c->cut == SAMPLER_KEPT) {
                ck_assert(c->p_final > 0.0f);
                kept_sum += c->p_final;
            } else {
                ck_assert(c->p_final == 0.0f);
            }
            if (c->id == t) {
                chosen_seen = true;
                ck_assert_int_eq(c->cut, SAMPLER_KEPT);
                ck_assert(c->p_final == r->sampler.chosen_prob);
            }
        }
        ck_assert(chosen_seen);
        ck_assert(kept_sum <= 1.0 + 1e-5);
        ck_assert_int_eq(r->sampler.kept_min_p, r->sampler.kept_top_p);
        int kept = 0;
        for (int j = 0; j < r->n_top; j++)
            kept += r->top[j].cut == SAMPLER_KEPT;
        ck_assert_int_eq(kept, r->sampler.kept_min_p);
    }
    engine_free(e);
}
END_TEST

START_TEST(test_batch_equals_sequential)
{
    /* On every kernel set this build and CPU have: equal up to float rounding and the
     * int8 steps it can move an activation by (prefill's GEMM and batched attention sum
     * in another order than one token's kernels; on this small model one step can move
     * a logit by a few percent, so single positions get 5% and the mean 1%). The next
     * token's probability gets 0.03: at position 8 it is 0.580 batched on the
     * scalar table, 0.571 one by one, 0.553 batched on AVX-512 and one by one on NEON,
     * all of them exact int8 products summed in another order. */
    for (int isa = KERNELS_SCALAR; isa < KERNELS_COUNT; isa++) {
        if (!kernels_isa_supported((kernels_isa)isa))
            continue;
        kernels_init((kernels_isa)isa);
        engine *a = new_engine(0, false, 0.0f), *b = new_engine(0, false, 0.0f);
        int ids[64];
        int n = prompt_ids("Lily and Tom went to the park to play with a ball", ids, 64);
        llm_err err;
        ck_assert_int_eq(engine_prefill(a, ids, n, &err), LLM_OK);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(engine_prefill(b, ids + i, 1, &err), LLM_OK);
        int same_top = 0;
        double rel_sum = 0.0;
        for (int p = 0; p < n; p++) {
            const step_record *ra = engine_record(a, p), *rb = engine_record(b, p);
            same_top += ra->top[0].id == rb->top[0].id;
            ck_assert_float_eq_tol(ra->top[0].logit, rb->top[0].logit,
                                   0.05 * fabsf(ra->top[0].logit) + 0.01);
            rel_sum += fabsf(ra->top[0].logit - rb->top[0].logit) /
                       (fabsf(ra->top[0].logit) + 0.01f);
            if (p < n - 1)
                ck_assert_msg(fabsf(ra->next_prob - rb->next_prob) <= 0.03f,
                              "%s: position %d: next_prob %g batched, %g one by one",
                              kernels_isa_name((kernels_isa)isa), p, ra->next_prob, rb->next_prob);
        }
        ck_assert_msg(rel_sum / n < 0.01, "%s: mean relative difference %g",
                      kernels_isa_name((kernels_isa)isa), rel_sum / n);
        ck_assert_int_ge(same_top, n - 1);
        engine_free(a);
        engine_free(b);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* The logits (vocab each) of positions 0..n-1 of e, as engine_logits_of gives them. */
static float *all_logits(const engine *e, int n)
{
    int vocab = m->config.vocab_size;
    float *out = malloc(sizeof(float) * (size_t)n * vocab);
    for (int p = 0; p < n; p++)
        ck_assert_ptr_nonnull(engine_logits_of(e, p, out + (size_t)p * vocab));
    return out;
}

/* A position's numbers are fixed by its tokens and the kernels it ran on, never by how
 * it was batched: on every kernel set, a prompt of 16 tokens or more runs on the batch
 * kernels, and the same tokens one at a time on them give its bits; a rewind leaves
 * the logits it returns to as they were (a greedy continuation after it is a fresh
 * run's, bit for bit); a branch brought back runs each position on its own kernels
 * and ends with the logits it had. */
START_TEST(test_kernels_decide_the_bits)
{
    int vocab = m->config.vocab_size;
    size_t row = sizeof(float) * vocab;
    for (int isa = KERNELS_SCALAR; isa < KERNELS_COUNT; isa++) {
        if (!kernels_isa_supported((kernels_isa)isa))
            continue;
        kernels_init((kernels_isa)isa);
        const char *name = kernels_isa_name((kernels_isa)isa);
        int ids[96];
        int n = prompt_ids("Lily and Tom went to the park to play with a ball. They ran and "
                           "laughed in the sun, and then they sat down under a big tree.",
                           ids, 96);
        ck_assert_int_ge(n, TRANSFORMER_BATCH_MIN);
        llm_err err;
        engine *a = new_engine(0, false, 0.0f), *b = new_engine(0, false, 0.0f);
        ck_assert_int_eq(engine_prefill(a, ids, n, &err), LLM_OK);
        engine_set_kernels(b, TRANSFORMER_KERNELS_BATCH);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(engine_prefill(b, ids + i, 1, &err), LLM_OK);
        float *la = all_logits(a, n), *lb = all_logits(b, n);
        for (int p = 0; p < n; p++) {
            ck_assert_msg(engine_record(a, p)->batch && engine_record(b, p)->batch,
                          "%s: position %d of a prompt of %d is not on the batch kernels",
                          name, p, n);
            ck_assert_msg(memcmp(la + (size_t)p * vocab, lb + (size_t)p * vocab, row) == 0,
                          "%s: position %d: one token on the batch kernels is not the "
                          "prompt's bits", name, p);
        }
        free(lb);
        engine_free(b);

        /* a rewind into the prompt, then greedy steps: a fresh run's tokens and bits */
        int at = n - 6, steps = 8, tok_a[8], tok_c[8];
        ck_assert_int_eq(engine_rewind(a, at, &err), LLM_OK);
        ck_assert_msg(memcmp(engine_logits(a), la + (size_t)(at - 1) * vocab, row) == 0,
                      "%s: a rewind changed the logits of position %d", name, at - 1);
        engine *c = new_engine(0, false, 0.0f);
        ck_assert_int_eq(engine_prefill(c, ids, at, &err), LLM_OK);
        for (int i = 0; i < steps; i++) {
            ck_assert_int_eq(engine_step(a, &tok_a[i], &err), LLM_OK);
            ck_assert_int_eq(engine_step(c, &tok_c[i], &err), LLM_OK);
            ck_assert_msg(tok_a[i] == tok_c[i] && memcmp(engine_logits(a), engine_logits(c),
                                                         row) == 0,
                          "%s: step %d after a rewind is not a fresh run's", name, i);
            ck_assert(!engine_record(a, at + i)->batch);
        }
        engine_free(c);

        /* the steps as a branch: saved, replaced by another token, brought back */
        step_record saved[9];
        float *end = malloc(row);
        memcpy(end, engine_logits(a), row);
        for (int i = 0; i <= steps; i++)
            saved[i] = *engine_record(a, at - 1 + i);
        ck_assert_int_eq(engine_rewind(a, at, &err), LLM_OK);
        ck_assert_int_eq(engine_force(a, (tok_a[0] + 1) % vocab, &err), LLM_OK);
        ck_assert_int_eq(engine_restore(a, at, tok_a, steps, saved, &err), LLM_OK);
        ck_assert_msg(memcmp(engine_logits(a), end, row) == 0,
                      "%s: a branch brought back does not end with its logits", name);
        free(end);
        free(la);
        engine_free(a);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* A branch made with a head knocked out comes back as it ran after the head is let back
 * in, and after a rewind that ran the position before it again without the head out:
 * the same logits bit for bit, its records' interventions; the state in force stays
 * the one set (nothing out). */
START_TEST(test_branch_comes_back_as_it_ran)
{
    int vocab = m->config.vocab_size;
    size_t row = sizeof(float) * vocab;
    int ids[64], steps = 8, tok_a[8], tok_b;
    int n = prompt_ids("Lily and Tom went to the park to play with a ball.", ids, 64);
    llm_err err;
    engine *a = new_engine(0, false, 0.0f);
    steering *s = engine_steering(a);
    ck_assert_int_eq(engine_prefill(a, ids, n, &err), LLM_OK);
    ck_assert_int_eq(steering_knock_out(s, 0, 0, true, &err), LLM_OK);
    for (int i = 0; i < steps; i++)
        ck_assert_int_eq(engine_step(a, &tok_a[i], &err), LLM_OK);
    step_record saved[9];
    float *end = malloc(row), *plain = malloc(row);
    memcpy(end, engine_logits(a), row);
    const intervention *out = engine_intervention(a);
    for (int i = 0; i <= steps; i++)
        saved[i] = *engine_record(a, n - 1 + i);
    ck_assert_ptr_eq(saved[1].intervention, out);
    for (int rewind_first = 0; rewind_first < 2; rewind_first++) {
        /* the head back in before or after the rewind: after, the rewind runs n-1 again */
        if (!rewind_first)
            ck_assert_int_eq(steering_knock_out(s, 0, 0, false, &err), LLM_OK);
        ck_assert_int_eq(engine_rewind(a, n, &err), LLM_OK);
        if (rewind_first)
            ck_assert_int_eq(steering_knock_out(s, 0, 0, false, &err), LLM_OK);
        ck_assert_int_eq(engine_step(a, &tok_b, &err), LLM_OK);
        const intervention *in = engine_intervention(a);
        ck_assert_int_eq(engine_restore(a, n, tok_a, steps, saved, &err), LLM_OK);
        ck_assert_msg(memcmp(engine_logits(a), end, row) == 0,
                      "a branch that ran with a head out does not end with its logits "
                      "(rewound %s the head came back)", rewind_first ? "before" : "after");
        for (int i = 0; i < steps; i++) {
            const step_record *r = engine_record(a, n + i);
            ck_assert_ptr_eq(r->intervention, out);
            ck_assert_int_eq(r->phase, saved[i + 1].phase);
        }
        ck_assert_ptr_eq(engine_intervention(a), in); /* the state in force is as it was */
        ck_assert_int_eq(in->n_heads_out, 0);
        if (!rewind_first) { /* with the head in, its logits differ: the check could fail */
            engine *c = new_engine(0, false, 0.0f);
            ck_assert_int_eq(engine_prefill(c, ids, n, &err), LLM_OK);
            ck_assert_int_eq(engine_prefill(c, tok_a, steps, &err), LLM_OK);
            memcpy(plain, engine_logits(c), row);
            ck_assert_msg(memcmp(plain, end, row) != 0, "the head changes nothing here");
            engine_free(c);
        }
    }
    free(end);
    free(plain);
    engine_free(a);
}
END_TEST

/* What a progress callback was told. */
typedef struct {
    int calls, last_done, total;
    bool in_order;
    int stop_at; /* the call (from 1) that asks to stop; 0: none */
} progress_log;

static bool log_progress(void *user, int done, int total)
{
    progress_log *p = user;
    if ((p->calls == 0 && done != 0) || (p->calls > 0 && done <= p->last_done) || done >= total)
        p->in_order = false;
    p->last_done = done;
    p->total = total;
    return ++p->calls != p->stop_at;
}

/* BOS and a story long enough for several of the transformer's chunks (256 positions
 * here), within the 512-position context. */
static int long_prompt(int *ids, int max)
{
    char text[4096] = "";
    for (int i = 0; i < 22; i++)
        strcat(text, "Lily and Tom went to the park to play with a ball. ");
    int n = prompt_ids(text, ids, max);
    ck_assert_int_gt(n, 300);
    return n;
}

/* A long prompt with a progress callback runs chunk by chunk, the callback told before
 * each, and gives the bits of the same prompt without one (int8 weights and KV cache:
 * the chunks must be the transformer's own for that); a short prompt is not reported;
 * a callback that says stop leaves the sequence where it was, and the prompt then runs
 * whole to the same bits. */
START_TEST(test_prefill_progress)
{
    int ids[512];
    int n = long_prompt(ids, 512);
    llm_err err;
    engine *a = new_engine(0, true, 0.0f), *b = new_engine(0, true, 0.0f);
    progress_log log = {.in_order = true};
    engine_set_progress(b, log_progress, &log);
    ck_assert_int_eq(engine_prefill(a, ids, n, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(b, ids, n, &err), LLM_OK);
    ck_assert_int_ge(log.calls, 2);
    ck_assert(log.in_order);
    ck_assert_int_eq(log.total, n);
    const model_config *c = &m->config;
    for (int p = 0; p < n; p++) {
        const step_record *ra = engine_record(a, p), *rb = engine_record(b, p);
        ck_assert_int_eq(ra->n_top, rb->n_top);
        ck_assert_msg(!memcmp(ra->top, rb->top, sizeof ra->top[0] * (size_t)ra->n_top),
                      "position %d's candidates differ", p);
        ck_assert(!memcmp(&ra->next_prob, &rb->next_prob, sizeof(float)));
        size_t rows = (size_t)c->n_layers * c->n_heads * (p + 1);
        ck_assert_ptr_nonnull(ra->attn);
        ck_assert_ptr_nonnull(rb->attn);
        ck_assert_msg(!memcmp(ra->attn, rb->attn, rows * sizeof(float)),
                      "position %d's attention differs", p);
    }
    ck_assert(!memcmp(engine_logits(a), engine_logits(b), sizeof(float) * c->vocab_size));
    for (int i = 0; i < 8; i++) { /* and what follows is the same */
        int ta, tb;
        ck_assert_int_eq(engine_step(a, &ta, &err), LLM_OK);
        ck_assert_int_eq(engine_step(b, &tb, &err), LLM_OK);
        ck_assert_int_eq(ta, tb);
    }

    /* a short prompt: never told */
    log = (progress_log){.in_order = true};
    ck_assert_int_eq(engine_rewind(b, 0, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(b, ids, 20, &err), LLM_OK);
    ck_assert_int_eq(log.calls, 0);

    /* stopped before its second chunk: nothing of it stays */
    int before = engine_pos(b);
    log = (progress_log){.in_order = true, .stop_at = 2};
    ck_assert_int_eq(engine_prefill(b, ids + 20, n - 20, &err), LLM_ERR_STOPPED);
    ck_assert(strstr(err.text, "stopped") != NULL);
    ck_assert_int_eq(log.calls, 2);
    ck_assert_int_eq(engine_pos(b), before);
    ck_assert_ptr_null(engine_logits(b));
    /* then all of it, to the same bits as the prompt read at once */
    ck_assert_int_eq(engine_rewind(b, 0, &err), LLM_OK);
    log = (progress_log){.in_order = true};
    engine_rewind(a, 0, &err);
    ck_assert_int_eq(engine_prefill(a, ids, n, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(b, ids, n, &err), LLM_OK);
    ck_assert(!memcmp(engine_logits(a), engine_logits(b), sizeof(float) * c->vocab_size));
    engine_free(a);
    engine_free(b);
}
END_TEST

START_TEST(test_attention_capture)
{
    engine *e = new_engine(0, true, 0.0f);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    int t;
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    const model_config *c = &m->config;
    for (int p = 0; p < engine_pos(e); p++) {
        const step_record *r = engine_record(e, p);
        ck_assert_ptr_nonnull(r->attn);
        for (int l = 0; l < c->n_layers; l++)
            for (int h = 0; h < c->n_heads; h++) {
                const float *row = r->attn + ((size_t)l * c->n_heads + h) * (p + 1);
                double sum = 0;
                for (int k = 0; k <= p; k++) {
                    ck_assert(row[k] >= 0.0f && row[k] <= 1.0f);
                    sum += row[k];
                }
                ck_assert_float_eq_tol(sum, 1.0, 1e-4);
            }
    }
    /* the first position can only attend to itself */
    ck_assert_float_eq_tol(engine_record(e, 0)->attn[0], 1.0, 1e-6);
    /* rewinding drops the rows beyond */
    int pos = engine_pos(e);
    ck_assert_int_eq(engine_rewind(e, 2, &err), LLM_OK);
    ck_assert_ptr_nonnull(engine_record(e, 1)->attn);
    ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    ck_assert_ptr_nonnull(engine_record(e, 2)->attn);
    ck_assert_int_lt(engine_pos(e), pos);
    engine_free(e);
}
END_TEST

START_TEST(test_attention_budget)
{
    engine_options o;
    engine_options_default(&o);
    o.capture_attention = true;
    o.sampler.temperature = 0.0f;
    /* room for about the rows of 40 positions of 5 layers x 8 heads */
    o.attention_budget = 5 * 8 * sizeof(float) * 40 * 20;
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &e, &err), LLM_OK);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    int t = 0;
    for (int i = 0; i < 60 && t != TOKEN_EOS; i++)
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    int last = engine_pos(e) - 1;
    ck_assert_ptr_nonnull(engine_record(e, last)->attn); /* the newest rows are kept */
    ck_assert_ptr_null(engine_record(e, 0)->attn);       /* the oldest were dropped */
    engine_free(e);
}
END_TEST

/* The rows a small ring keeps are the rows a large one keeps, bit for bit: reusing the
 * block overwrites only rows that were dropped, through steps and rewinds. */
/* Two greedy engines capturing attention: *big with the default block, *small with
 * room for the rows of about `rows` positions near 30. Returns the prompt's length
 * (in ids). */
static int big_and_small(int rows, engine **big, engine **small, int *ids)
{
    engine_options o;
    engine_options_default(&o);
    o.capture_attention = true;
    o.sampler.temperature = 0.0f;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, big, &err), LLM_OK);
    o.attention_budget = (size_t)m->config.n_layers * m->config.n_heads * sizeof(float) * 30 * rows;
    ck_assert_int_eq(engine_new(m, tok, &o, small, &err), LLM_OK);
    return prompt_ids("Once upon a time", ids, 64);
}

/* Prefills e with ids[0..n) and decodes `steps` tokens greedily. */
static void prefill_and_step(engine *e, const int *ids, int n, int steps)
{
    llm_err err;
    int t = 0;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    for (int i = 0; i < steps; i++)
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
}

START_TEST(test_attention_ring_rows_intact)
{
    engine *big, *small;
    llm_err err;
    int ids[64];
    int n = big_and_small(12, &big, &small, ids);
    engine *both[2] = {big, small};
    for (int k = 0; k < 2; k++) {
        int t = 0;
        prefill_and_step(both[k], ids, n, 40);
        ck_assert_int_eq(engine_rewind(both[k], 30, &err), LLM_OK);
        for (int i = 0; i < 12; i++)
            ck_assert_int_eq(engine_step(both[k], &t, &err), LLM_OK);
    }
    ck_assert_int_eq(engine_pos(big), engine_pos(small));
    int kept = 0;
    for (int p = 0; p < engine_pos(big); p++) {
        const step_record *a = engine_record(big, p), *b = engine_record(small, p);
        ck_assert_ptr_nonnull(a->attn);
        if (!b->attn)
            continue;
        kept++;
        size_t bytes = (size_t)m->config.n_layers * m->config.n_heads * (p + 1) * sizeof(float);
        ck_assert_msg(!memcmp(a->attn, b->attn, bytes), "position %d's rows differ", p);
    }
    ck_assert_int_gt(kept, 5);
    ck_assert_ptr_nonnull(engine_record(small, engine_pos(small) - 1)->attn);
    ck_assert_ptr_null(engine_record(small, 0)->attn);
    engine_free(big);
    engine_free(small);
}
END_TEST

/* Rows the block dropped are computed again on request: a decoded position's bit for bit
 * what a large block kept, a prompt position's within rounding; the KV cache is left as
 * it was (the next tokens are the same). */
START_TEST(test_attention_computed_again)
{
    engine *big, *small;
    llm_err err;
    int ids[64];
    int n = big_and_small(6, &big, &small, ids);
    prefill_and_step(big, ids, n, 25);
    prefill_and_step(small, ids, n, 25);
    int checked[2] = {1, n + 3}; /* a prompt position and a decoded one, both dropped */
    for (int i = 0; i < 2; i++) {
        int p = checked[i];
        ck_assert_ptr_null(engine_record(small, p)->attn);
        const float *again = engine_attention(small, p, &err);
        ck_assert_msg(again != NULL, "%s", err.text);
        ck_assert_ptr_eq(engine_record(small, p)->attn, again);
        const float *kept = engine_record(big, p)->attn;
        size_t count = (size_t)m->config.n_layers * m->config.n_heads * (p + 1);
        if (p >= n)
            ck_assert_msg(!memcmp(kept, again, count * sizeof(float)), "position %d differs", p);
        for (size_t j = 0; j < count; j++)
            ck_assert_float_eq_tol(again[j], kept[j], 1e-4f);
        ck_assert_ptr_eq(engine_attention(small, p, &err), again); /* kept now */
    }
    for (int i = 0; i < 10; i++) { /* the cache was left as it was */
        int a = 0, b = 0;
        ck_assert_int_eq(engine_step(big, &a, &err), LLM_OK);
        ck_assert_int_eq(engine_step(small, &b, &err), LLM_OK);
        ck_assert_int_eq(a, b);
        ck_assert(!memcmp(engine_logits(big), engine_logits(small), sizeof(float) * m->config.vocab_size));
    }
    ck_assert_ptr_null(engine_attention(small, engine_pos(small), &err));
    ck_assert_ptr_null(engine_record(small, 2)->attn);
    engine_set_capture(small, false); /* off: nothing is computed */
    ck_assert_ptr_null(engine_attention(small, 2, &err));
    ck_assert_ptr_null(engine_record(small, 2)->attn);
    engine_free(big);
    engine_free(small);
}
END_TEST

/* What the observer saw of each finished record: its candidates' count and next_prob. */
typedef struct {
    int n_top[64];
    float next_prob[64];
} observed;

static void observe_candidates(void *user, const step_record *r)
{
    observed *o = user;
    if (r->pos < 64) {
        o->n_top[r->pos] = r->n_top;
        o->next_prob[r->pos] = r->next_prob;
    }
}

/* Without record_prompt, prefill computes no prompt position's candidates (the
 * observer sees none); engine_record computes them on request, the same bits as an
 * engine that computed them at prefill, also after more prompt and steps. */
START_TEST(test_prompt_records_off)
{
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 0.0f;
    engine *eager, *lazy;
    llm_err err;
    ck_assert_int_eq(engine_new(m, tok, &o, &eager, &err), LLM_OK);
    o.record_prompt = false;
    ck_assert_int_eq(engine_new(m, tok, &o, &lazy, &err), LLM_OK);
    observed watched;
    memset(&watched, 0, sizeof watched);
    engine_set_observer(lazy, observe_candidates, &watched);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    int n2 = prompt_ids("Lily saw a big red ball", ids + n, 64 - n);
    for (engine *e = eager; e; e = e == eager ? lazy : NULL) {
        ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
        int t;
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
        ck_assert_int_eq(engine_prefill(e, ids + n, n2, &err), LLM_OK);
    }
    int total = engine_pos(lazy);
    ck_assert_int_eq(total, engine_pos(eager));
    for (int p = 0; p < n - 1; p++) {
        ck_assert_int_eq(watched.n_top[p], 0);
        ck_assert(isnan(watched.next_prob[p]));
    }
    ck_assert_int_eq(watched.n_top[n - 1], 10); /* the one that was sampled from */
    /* newest first */
    for (int p = total - 1; p >= 0; p--) {
        const step_record *a = engine_record(eager, p), *b = engine_record(lazy, p);
        ck_assert_int_eq(b->n_top, a->n_top);
        ck_assert_int_eq(b->n_top, 10);
        for (int i = 0; i < a->n_top; i++) {
            ck_assert_int_eq(b->top[i].id, a->top[i].id);
            ck_assert(memcmp(&b->top[i].logit, &a->top[i].logit, sizeof(float)) == 0);
            ck_assert(memcmp(&b->top[i].prob, &a->top[i].prob, sizeof(float)) == 0);
        }
        if (p < total - 1) {
            ck_assert_msg(memcmp(&b->next_prob, &a->next_prob, sizeof(float)) == 0,
                          "pos %d: next_prob %g vs %g", p, b->next_prob, a->next_prob);
            ck_assert_int_eq(b->next_rank, a->next_rank);
        }
    }
    /* a rewind into the prompt and a new prompt there: its candidates are the new ones */
    ck_assert_int_eq(engine_rewind(lazy, 2, &err), LLM_OK);
    ck_assert_int_eq(engine_rewind(eager, 2, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(lazy, ids + n, n2, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(eager, ids + n, n2, &err), LLM_OK);
    for (int p = 0; p < engine_pos(lazy); p++) {
        const step_record *a = engine_record(eager, p), *b = engine_record(lazy, p);
        ck_assert_int_eq(b->token, a->token);
        ck_assert_int_eq(b->top[0].id, a->top[0].id);
        ck_assert(memcmp(&b->top[0].logit, &a->top[0].logit, sizeof(float)) == 0);
    }
    engine_free(eager);
    engine_free(lazy);
}
END_TEST

START_TEST(test_context_limits)
{
    engine *e = new_engine(8, false, 0.0f);
    ck_assert_int_eq(engine_ctx(e), 8);
    int ids[16];
    int n = prompt_ids("Once upon a time there was a big dog and a little cat", ids, 16);
    ck_assert_int_gt(n, 8);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_ERR_CONTEXT);
    ck_assert_int_eq(engine_pos(e), 0); /* nothing changed */
    ck_assert_int_eq(engine_prefill(e, ids, 6, &err), LLM_OK);
    int t;
    ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), 8);
    /* full: the choice is recorded but not run */
    ck_assert_int_eq(engine_step(e, &t, &err), LLM_ERR_CONTEXT);
    ck_assert_int_eq(engine_pos(e), 8);
    ck_assert_int_eq(engine_record(e, 7)->next, t);
    ck_assert_int_eq(engine_force(e, 5, &err), LLM_ERR_CONTEXT);
    ck_assert_int_eq(engine_force(e, 100000, &err), LLM_ERR_ARG);
    ck_assert_int_eq(engine_rewind(e, 9, &err), LLM_ERR_ARG);
    engine_free(e);

    engine_options o;
    engine_options_default(&o);
    o.ctx_len = m->config.seq_len + 1;
    ck_assert_int_ne(engine_new(m, tok, &o, &e, &err), LLM_OK);
    engine_options_default(&o);
    o.sampler.top_p = 2.0f;
    ck_assert_int_eq(engine_new(m, tok, &o, &e, &err), LLM_ERR_ARG);
    ck_assert(strstr(err.text, "top-p") != NULL);
}
END_TEST

/* Out of memory for the kernels' scratch: prefill and a token fail with LLM_ERR_NOMEM and
 * a sentence saying so, leave the sequence where it was, and the engine runs on once
 * memory is back, to the bits of an engine that never failed. */
START_TEST(test_kernels_out_of_memory)
{
    /* the scalar table on every machine: the prompt's GEMM packs its vectors in the
     * scratch, the token kernels (one row after another) need none */
    ck_assert_int_eq(kernels_init(KERNELS_SCALAR), KERNELS_SCALAR);
    engine *e = new_engine(0, false, 0.0f), *ref = new_engine(0, false, 0.0f);
    int ids[64];
    int n = prompt_ids("Once upon a time there was a little girl named Lily who loved to play "
                       "in the park", ids, 64);
    ck_assert_int_ge(n, TRANSFORMER_BATCH_MIN);
    llm_err err = {{0}};
    kernels_scratch_limit_bytes(0);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_ERR_NOMEM);
    ck_assert_msg(strstr(err.text, "out of memory for the kernels' scratch"), "%s", err.text);
    ck_assert_int_eq(engine_pos(e), 0);
    ck_assert_ptr_null(engine_logits(e));
    engine_set_kernels(e, TRANSFORMER_KERNELS_TOKEN);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    engine_set_kernels(e, TRANSFORMER_KERNELS_BATCH);
    err.text[0] = '\0';
    ck_assert_int_eq(engine_force(e, ids[1], &err), LLM_ERR_NOMEM);
    ck_assert_msg(strstr(err.text, "out of memory for the kernels' scratch"), "%s", err.text);
    ck_assert_int_eq(engine_pos(e), n);

    kernels_scratch_limit_bytes(SIZE_MAX);
    ck_assert_int_eq(engine_rewind(e, 0, &err), LLM_OK);
    engine_set_kernels(e, TRANSFORMER_KERNELS_AUTO);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(ref, ids, n, &err), LLM_OK);
    size_t bytes = sizeof(float) * (size_t)m->config.vocab_size;
    ck_assert(memcmp(engine_logits(e), engine_logits(ref), bytes) == 0);
    int a, b;
    ck_assert_int_eq(engine_step(e, &a, &err), LLM_OK);
    ck_assert_int_eq(engine_step(ref, &b, &err), LLM_OK);
    ck_assert_int_eq(a, b);
    ck_assert(memcmp(engine_logits(e), engine_logits(ref), bytes) == 0);
    engine_free(e);
    engine_free(ref);
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_step_needs_prompt)
{
    engine *e = new_engine(0, false, 0.0f);
    int t;
    llm_err err;
    ck_assert_int_eq(engine_step(e, &t, &err), LLM_ERR_ARG);
    engine_free(e);
}
END_TEST

/* F32 weights reproduce the reference implementation's greedy text. */
START_TEST(test_greedy_matches_reference)
{
    engine *e = new_engine(0, false, 0.0f);
    int ids[64];
    int n = prompt_ids("Once upon a time", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    char text[4096] = "";
    size_t len = 0;
    for (int i = 1; i < n; i++)
        len += tokenizer_decode(tok, ids[i - 1], ids[i], text + len, sizeof text - len);
    int prev = ids[n - 1], t;
    while (len < 300 && engine_step(e, &t, &err) == LLM_OK && t != TOKEN_BOS) {
        len += tokenizer_decode(tok, prev, t, text + len, sizeof text - len);
        prev = t;
    }
    const char *expect = "Once upon a time, there was a little girl named Lily. She loved to play "
                         "outside in the park. One day, she saw a big, red ball.";
    ck_assert_msg(strncmp(text, expect, strlen(expect)) == 0, "got: %s", text);
    engine_free(e);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup_q8, teardown);
    tcase_add_test(core, test_prefill_records);
    tcase_add_test(core, test_step_force_rewind);
    tcase_add_test(core, test_record_entropy);
    tcase_add_test(core, test_candidate_fates);
    tcase_add_test(core, test_batch_equals_sequential);
    tcase_add_test(core, test_kernels_decide_the_bits);
    tcase_add_test(core, test_branch_comes_back_as_it_ran);
    tcase_add_test(core, test_prefill_progress);
    tcase_add_test(core, test_attention_capture);
    tcase_add_test(core, test_prompt_records_off);
    suite_add_tcase(s, core);
    TCase *ref = tcase_create("reference");
    tcase_add_checked_fixture(ref, setup_f32, teardown);
    tcase_add_test(ref, test_greedy_matches_reference);
    suite_add_tcase(s, ref);
    TCase *limits = tcase_create("limits");
    tcase_add_checked_fixture(limits, setup_q8, teardown);
    tcase_add_test(limits, test_context_limits);
    tcase_add_test(limits, test_step_needs_prompt);
    tcase_add_test(limits, test_kernels_out_of_memory);
    tcase_add_test(limits, test_attention_budget);
    tcase_add_test(limits, test_attention_ring_rows_intact);
    tcase_add_test(limits, test_attention_computed_again);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(engine_suite)
