/* test_lens.c — the logit lens: its last layer is the model's logits, computing it
 * leaves the KV cache and the next step alone, the engine keeps and drops it with the
 * records, and on the bundled chat model the lens shows where a requested name is
 * copied into the reply. */
#include <math.h>
#include <string.h>

#include "chat.h"
#include "engine.h"
#include "named_lily.h"
#include "testutil.h"
#include "transformer.h"

static model *m;
static tokenizer *tok;

static void open_model(const char *name)
{
    model_options mo;
    model_options_default(&mo);
    llm_err err;
    ck_assert_msg(model_open(data_path(name), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
}

static void setup_stories(void) { open_model("stories260K.bin"); }
static void setup_chat(void) { open_model("chat260K.bin"); }

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

static int prompt_ids(const char *text, int *ids, int max)
{
    ids[0] = TOKEN_BOS;
    int n = tokenizer_encode(tok, text, ids + 1, max - 1);
    ck_assert_int_lt(n, max);
    return n + 1;
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* The last layer's lens is the forward pass's logits; the lens leaves the KV cache
 * and the returned logits as they were (the next position computes exactly what a
 * twin transformer without the lens computes). */
START_TEST(test_last_layer_is_the_logits)
{
    transformer *a, *b;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, 64, &a, &err), LLM_OK);
    ck_assert_int_eq(transformer_new(m, 64, &b, &err), LLM_OK);
    int ids[64];
    int n = prompt_ids("Once upon a time, there was a little cat", ids, 64);
    int vocab = m->config.vocab_size, layers = m->config.n_layers;
    float *lens = malloc(sizeof(float) * layers * vocab);
    float *want = malloc(sizeof(float) * vocab), *again = malloc(sizeof(float) * vocab);
    for (int p = 0; p < n - 1; p++) {
        const float *la = transformer_forward(a, ids[p], p, NULL);
        const float *lb = transformer_forward(b, ids[p], p, NULL);
        memcpy(want, la, sizeof(float) * vocab);
        ck_assert_int_eq(transformer_logit_lens(a, ids[p], p, lens, &err), LLM_OK);
        const float *last = lens + (size_t)(layers - 1) * vocab;
        for (int i = 0; i < vocab; i++)
            ck_assert_msg(fabsf(last[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])),
                          "pos %d logit %d: lens %g, forward %g", p, i, last[i], want[i]);
        ck_assert_int_eq(argmax(last, vocab), argmax(lb, vocab));
        /* the logits handed out before the lens are still there, and so is the kept
         * classifier input that transformer_logits reads */
        ck_assert_int_eq(memcmp(la, want, sizeof(float) * vocab), 0);
        transformer_logits(a, p, 1, again);
        ck_assert_int_eq(memcmp(again, want, sizeof(float) * vocab), 0);
        /* an earlier layer predicts something else somewhere: the rows differ */
        ck_assert(memcmp(lens, last, sizeof(float) * vocab) != 0);
    }
    /* the KV caches agree: the next position is bit for bit the same */
    const float *la = transformer_forward(a, ids[n - 1], n - 1, NULL);
    const float *lb = transformer_forward(b, ids[n - 1], n - 1, NULL);
    ck_assert_int_eq(memcmp(la, lb, sizeof(float) * vocab), 0);

    /* a prompt run as one batch: the lens of each position leaves what the batch kept
     * (KV cache, classifier inputs) bit for bit, though its own one-token pass may
     * round differently */
    transformer *c, *d;
    ck_assert_int_eq(transformer_new(m, 64, &c, &err), LLM_OK);
    ck_assert_int_eq(transformer_new(m, 64, &d, &err), LLM_OK);
    float *batch = malloc(sizeof(float) * (size_t)n * vocab);
    transformer_forward_batch(c, ids, n - 1, 0, batch, NULL);
    transformer_forward_batch(d, ids, n - 1, 0, NULL, NULL);
    for (int p = 0; p < n - 1; p++) {
        ck_assert_int_eq(transformer_logit_lens(c, ids[p], p, lens, &err), LLM_OK);
        const float *last = lens + (size_t)(layers - 1) * vocab;
        const float *wb = batch + (size_t)p * vocab;
        for (int i = 0; i < vocab; i++)
            ck_assert(fabsf(last[i] - wb[i]) <= 1e-3f * (1.0f + fabsf(wb[i])));
        transformer_logits(c, p, 1, again);
        ck_assert_int_eq(memcmp(again, wb, sizeof(float) * vocab), 0);
    }
    la = transformer_forward(c, ids[n - 1], n - 1, NULL);
    lb = transformer_forward(d, ids[n - 1], n - 1, NULL);
    ck_assert_int_eq(memcmp(la, lb, sizeof(float) * vocab), 0);
    free(batch);
    transformer_free(c);
    transformer_free(d);
    ck_assert_int_ne(transformer_logit_lens(a, ids[0], 64, lens, &err), LLM_OK);
    ck_assert_int_ne(transformer_logit_lens(a, vocab, 0, lens, &err), LLM_OK);
    free(lens);
    free(want);
    free(again);
    transformer_free(a);
    transformer_free(b);
}
END_TEST

static engine *new_engine(float temperature, bool record_lens)
{
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = 128;
    o.sampler.temperature = temperature;
    o.sampler.seed = 7;
    o.record_lens = record_lens;
    engine *e;
    llm_err err;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

/* engine_lens agrees with the record (top candidates, next's rank), is kept, dropped
 * on rewind and when next becomes known, and does not change what is sampled. */
START_TEST(test_engine_lens)
{
    engine *e = new_engine(1.0f, false), *twin = new_engine(1.0f, false);
    int ids[64];
    int n = prompt_ids("The dog ran to the park", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    ck_assert_int_eq(engine_prefill(twin, ids, n, &err), LLM_OK);
    int last = m->config.n_layers - 1;
    for (int i = 0; i < 12; i++) {
        int newest = engine_pos(e) - 1;
        const step_lens_layer *L = engine_lens(e, newest, &err);
        ck_assert_msg(L != NULL, "%s", err.text);
        ck_assert_ptr_eq(engine_record(e, newest)->lens, L);
        ck_assert_ptr_eq(engine_lens(e, newest, &err), L); /* kept */
        ck_assert_int_eq(L[last].next_rank, 0);            /* next not known yet */
        const step_record *r = engine_record(e, newest);
        for (int j = 0; j < STEP_LENS_TOP; j++) {
            ck_assert_int_eq(L[last].id[j], r->top[j].id);
            ck_assert_float_eq_tol(L[last].prob[j], r->top[j].prob, 1e-4);
        }
        int ta, tb;
        ck_assert_int_eq(engine_step(e, &ta, &err), LLM_OK);
        ck_assert_int_eq(engine_step(twin, &tb, &err), LLM_OK);
        ck_assert_int_eq(ta, tb); /* sampling is unchanged by the lens */
        ck_assert_ptr_null(engine_record(e, newest)->lens); /* next became known */
        L = engine_lens(e, newest, &err);
        ck_assert_int_eq(L[last].next_rank, engine_record(e, newest)->next_rank);
        ck_assert_float_eq_tol(L[last].next_prob, engine_record(e, newest)->next_prob, 1e-4);
    }
    /* prompt positions too: next is the following prompt token */
    const step_lens_layer *L = engine_lens(e, 2, &err);
    ck_assert_int_eq(L[last].next_rank, engine_record(e, 2)->next_rank);
    int p = engine_pos(e) - 3;
    ck_assert_ptr_nonnull(engine_lens(e, p, &err));
    ck_assert_int_eq(engine_rewind(e, p, &err), LLM_OK);
    ck_assert_int_eq(engine_pos(e), p);
    ck_assert_ptr_null(engine_lens(e, p, &err)); /* gone with the position */
    ck_assert_ptr_null(engine_record(e, p - 1)->lens);
    ck_assert_ptr_null(engine_lens(e, -1, &err));
    engine_free(e);
    engine_free(twin);
}
END_TEST

typedef struct {
    int with_lens, total;
    bool next_ranks_agree;
} lens_seen;

static void watch_lens(void *user, const step_record *r)
{
    lens_seen *s = user;
    s->total++;
    if (r->lens) {
        s->with_lens++;
        if (r->next >= 0 && r->lens[m->config.n_layers - 1].next_rank != r->next_rank)
            s->next_ranks_agree = false;
    }
}

/* record_lens (--trace-lens) hands every finished record to the observer with its lens. */
START_TEST(test_record_lens)
{
    engine *e = new_engine(0.0f, true);
    lens_seen s = {0, 0, true};
    engine_set_observer(e, watch_lens, &s);
    int ids[64];
    int n = prompt_ids("A bird sang", ids, 64);
    llm_err err;
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    for (int i = 0; i < 5; i++) {
        int t;
        ck_assert_int_eq(engine_step(e, &t, &err), LLM_OK);
    }
    engine_finish(e);
    ck_assert_int_eq(s.total, n + 5);
    ck_assert_int_eq(s.with_lens, n + 5);
    ck_assert(s.next_ranks_agree);
    engine_free(e);
}
END_TEST

/* chat260K copies the name the user asked for into its story: at the reply's "named",
 * the name is not among the first layer's top 3, enters the top 3 at a middle layer,
 * and is the last layer's top 1 (README: layer 3 of 5). */
START_TEST(test_lens_finds_the_name)
{
    named_lily run;
    named_lily_run(m, tok, &run);
    llm_err err;
    int pos = run.pos, lily = run.lily;
    const step_lens_layer *L = engine_lens(run.e, pos, &err);
    ck_assert_ptr_nonnull(L);
    int layers = m->config.n_layers, first_top3 = -1;
    for (int l = 0; l < layers && first_top3 < 0; l++)
        if (L[l].next_rank >= 1 && L[l].next_rank <= 3)
            first_top3 = l;
    ck_assert_int_gt(L[0].next_rank, 3);
    ck_assert_msg(first_top3 > 0 && first_top3 < layers - 1,
                  "the name enters the top 3 at layer %d of %d", first_top3 + 1, layers);
    ck_assert_int_eq(L[first_top3].id[L[first_top3].next_rank - 1], lily);
    ck_assert_int_eq(L[layers - 1].id[0], lily);
    named_lily_free(&run);
}
END_TEST

static Suite *lens_suite(void)
{
    Suite *s = suite_create("lens");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup_stories, teardown);
    tcase_add_test(core, test_last_layer_is_the_logits);
    tcase_add_test(core, test_engine_lens);
    tcase_add_test(core, test_record_lens);
    suite_add_tcase(s, core);
    TCase *on_chat = tcase_create("chat260K");
    tcase_add_checked_fixture(on_chat, setup_chat, teardown);
    tcase_add_test(on_chat, test_lens_finds_the_name);
    suite_add_tcase(s, on_chat);
    return s;
}

TEST_MAIN(lens_suite)
