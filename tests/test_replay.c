/* test_replay.c — replaying a trace on the engine: a sampled run with a rewind in it
 * replays token for token from its trace (the recorded draws make the sampler's
 * history irrelevant); a missing record is run from the one before; records spliced
 * from two runs and steering the model cannot take are named; the fp32 and int8
 * stories260K agree on most top-1s; and the KL measure on hand-made distributions. */
#include <math.h>
#include <string.h>

#include "replay.h"
#include "testutil.h"
#include "trace.h"
#include "trace_read.h"

static model *m;
static tokenizer *tok;

static void setup(void)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = TENSOR_F32;
    llm_err err;
    ck_assert_msg(model_open(data_path("stories260K.bin"), &mo, &m, &err) == LLM_OK, "%s",
                  err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
}

static void teardown(void)
{
    tokenizer_close(tok);
    model_close(m);
}

static engine *new_engine(const model *mm, uint64_t seed)
{
    engine_options o;
    engine_options_default(&o);
    o.sampler.temperature = 1.0f;
    o.sampler.top_p = 0.95f;
    o.sampler.seed = seed;
    engine *e;
    llm_err err;
    ck_assert_int_eq(engine_new(mm, tok, &o, &e, &err), LLM_OK);
    return e;
}

/* A sampled run with a rewind and a forced token, traced; the final tokens in want. */
static int traced_run(const char *path, int *want)
{
    engine *e = new_engine(m, 11);
    trace_writer *t;
    llm_err err;
    ck_assert_int_eq(trace_open(path, tok, &m->config, false, &t, &err), LLM_OK);
    engine_set_observer(e, trace_observe, t);
    int ids[32];
    ids[0] = TOKEN_BOS;
    int n = 1 + tokenizer_encode(tok, "A cat sat", ids + 1, 31);
    ck_assert_int_eq(engine_prefill(e, ids, n, &err), LLM_OK);
    int id;
    for (int i = 0; i < 30; i++)
        ck_assert_int_eq(engine_step(e, &id, &err), LLM_OK);
    ck_assert_int_eq(engine_rewind(e, n + 10, &err), LLM_OK); /* draws already spent */
    ck_assert_int_eq(engine_force(e, 300, &err), LLM_OK);
    for (int i = 0; i < 25; i++)
        ck_assert_int_eq(engine_step(e, &id, &err), LLM_OK);
    engine_finish(e);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    int len = engine_pos(e);
    memcpy(want, engine_tokens(e), sizeof(int) * len);
    engine_free(e);
    return len;
}

typedef struct {
    int n;
    int tokens[512];
} seen;

static void collect(void *user, const replay_position *p)
{
    seen *s = user;
    ck_assert_int_eq(p->pos, s->n);
    s->tokens[s->n++] = p->token;
}

START_TEST(test_sampled_run_replays)
{
    const char *path = temp_path("replay.jsonl");
    int want[512];
    int len = traced_run(path, want);
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_file(path, &r, &err), LLM_OK);
    const step_record **seq;
    trace_sequence_info info;
    ck_assert_int_eq(trace_reader_sequence(r, &seq, &info, &err), LLM_OK);
    ck_assert_int_eq(info.n, len);
    ck_assert_int_eq(info.held, len);
    ck_assert_int_eq(info.replaced, 30 - 10); /* positions n+9 .. n+28 (n+29 was never written) */
    ck_assert(!info.by_position && !info.cut_short && info.copies == 0);
    engine *e = new_engine(m, 999); /* another seed: the draws come from the trace */
    seen s = {0};
    replay_summary sum;
    ck_assert_msg(replay_run(e, seq, len, true, collect, &s, &sum, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(sum.positions, len);
    ck_assert_int_eq(sum.sampled, 10 + 25); /* the sampled tokens that survived the rewind */
    ck_assert_int_eq(sum.sampled_same, sum.sampled);
    ck_assert_int_eq(sum.first_choice_diff, -1);
    ck_assert_int_eq(sum.top1_same, sum.compared);
    ck_assert(sum.kl_max < 1e-6);
    ck_assert_int_eq(memcmp(engine_tokens(e), want, sizeof(int) * len), 0);
    ck_assert_int_eq(memcmp(s.tokens, want, sizeof(int) * len), 0);
    ck_assert_int_eq(sum.first_logits_diff, -1);
    ck_assert_int_eq(sum.logits_same, sum.compared);
    engine_free(e);

    /* a candidate's logit the trace lacks (null: NaN) is a difference, though the
     * candidates after it are the trace's to the bit */
    const step_record *kept = seq[len / 2];
    step_record edited = *kept;
    ck_assert_int_gt(edited.n_top, 2);
    edited.top[0].logit = NAN;
    seq[len / 2] = &edited;
    e = new_engine(m, 1);
    ck_assert_int_eq(replay_run(e, seq, len, true, NULL, NULL, &sum, &err), LLM_OK);
    ck_assert_int_eq(sum.first_logits_diff, len / 2);
    ck_assert_int_eq(sum.logits_same, sum.compared - 1);
    ck_assert(isnan(sum.logits_max_diff));
    engine_free(e);
    seq[len / 2] = kept;

    /* a lost record is run from the one before it; one that cannot be known ends it */
    seq[len / 2] = NULL;
    e = new_engine(m, 1);
    ck_assert_int_eq(replay_run(e, seq, len, true, NULL, NULL, &sum, &err), LLM_OK);
    ck_assert_int_eq(sum.filled, 1);
    ck_assert_int_eq(sum.gap, -1);
    ck_assert_int_eq(memcmp(engine_tokens(e), want, sizeof(int) * len), 0);
    engine_free(e);
    seq[len / 2 - 1] = NULL;
    e = new_engine(m, 1);
    ck_assert_int_eq(replay_run(e, seq, len, true, NULL, NULL, &sum, &err), LLM_OK);
    ck_assert_int_eq(sum.gap, len / 2);
    ck_assert_int_eq(sum.positions, len / 2);
    engine_free(e);
    free(seq);

    /* the int8 twin: mostly the same top-1, small divergence */
    model *q8;
    model_options mo;
    model_options_default(&mo);
    ck_assert_int_eq(model_open(data_path("stories260K_q80.bin"), &mo, &q8, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_final(r, &seq), len);
    e = new_engine(q8, 1);
    ck_assert_int_eq(replay_run(e, seq, len, true, NULL, NULL, &sum, &err), LLM_OK);
    ck_assert_int_ge(sum.top1_same * 10, sum.compared * 9);
    ck_assert(sum.kl_mean > 0.0 && sum.kl_mean < 0.02);
    engine_free(e);
    model_close(q8);
    free(seq);
    trace_reader_free(r);
    unlink(path);
}
END_TEST

/* A record whose token is not the one the record before it chose is named; steering
 * the model cannot take is refused before anything runs. */
START_TEST(test_replay_checks_links_and_steering)
{
    step_record recs[4];
    memset(recs, 0, sizeof recs);
    int tokens[4] = {TOKEN_BOS, 400, 300, 301};
    for (int p = 0; p < 4; p++) {
        recs[p].pos = p;
        recs[p].token = tokens[p];
        recs[p].phase = STEP_PROMPT;
        recs[p].next = p < 3 ? tokens[p + 1] : -1;
    }
    recs[1].next = 200; /* but position 2 holds 300 */
    const step_record *seq[4] = {&recs[0], &recs[1], &recs[2], &recs[3]};
    engine *e = new_engine(m, 1);
    replay_summary sum;
    llm_err err;
    ck_assert_int_eq(replay_run(e, seq, 4, true, NULL, NULL, &sum, &err), LLM_OK);
    ck_assert_int_eq(sum.unlinked, 1);
    ck_assert_int_eq(sum.first_unlinked, 2);
    ck_assert_int_eq(sum.first_unlinked_token, 300);
    ck_assert_int_eq(sum.first_unlinked_chosen, 200);
    engine_free(e);

    int heads[1] = {5 * 8 + 0}; /* layer 5 of a 5-layer model */
    intervention in = {.first_layer = -1, .last_layer = -1, .n_heads = 8, .n_heads_out = 1,
                       .heads_out = heads};
    recs[1].next = 300;
    recs[2].intervention = recs[3].intervention = &in;
    e = new_engine(m, 1);
    ck_assert_int_eq(replay_run(e, seq, 4, true, NULL, NULL, &sum, &err), LLM_ERR_MISMATCH);
    ck_assert_msg(strstr(err.text, "from position 2 on: head [5, 0] is knocked out"), "%s", err.text);
    ck_assert_int_eq(sum.positions, 0);
    ck_assert_int_eq(engine_pos(e), 0);
    engine_free(e);
}
END_TEST

START_TEST(test_replay_refuses)
{
    step_record a;
    memset(&a, 0, sizeof a);
    a.token = 600; /* outside tok512's vocabulary */
    const step_record *seq[1] = {&a};
    engine *e = new_engine(m, 1);
    replay_summary sum;
    llm_err err;
    ck_assert_int_eq(replay_run(e, seq, 1, true, NULL, NULL, &sum, &err), LLM_ERR_MISMATCH);
    ck_assert_int_eq(engine_pos(e), 0);
    engine_free(e);
}
END_TEST

START_TEST(test_kl)
{
    float probs[4] = {0.5f, 0.25f, 0.125f, 0.125f};
    step_candidate top[2] = {{0, 0, 0.5f, 0, SAMPLER_KEPT}, {1, 0, 0.25f, 0, SAMPLER_KEPT}};
    ck_assert(replay_kl(top, 2, probs, 4) < 1e-12); /* the same distribution */
    /* P = (0.5, 0.25, rest 0.25), Q = (0.25, 0.5, rest 0.25) */
    float q[4] = {0.25f, 0.5f, 0.125f, 0.125f};
    double want = 0.5 * log(2.0) + 0.25 * log(0.5);
    ck_assert_double_eq_tol(replay_kl(top, 2, q, 4), want, 1e-7);
    /* a candidate the new model gives no mass: large but finite */
    float z[4] = {0.0f, 0.5f, 0.25f, 0.25f};
    double big = replay_kl(top, 2, z, 4);
    ck_assert(isfinite(big) && big > 10.0);
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    TCase *c = tcase_create("core");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, test_sampled_run_replays);
    tcase_add_test(c, test_replay_refuses);
    tcase_add_test(c, test_replay_checks_links_and_steering);
    tcase_add_test(c, test_kl);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(replay_suite)
