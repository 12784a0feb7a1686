/* test_speculate.c — speculative decoding (engine_step_guessed) and prompt lookup
 * (lookup.h). Greedy decoding with guesses gives the tokens plain decoding gives, and
 * every position's logits bit for bit, on every tiny family fixture (its weights as
 * stored and made int8) and on every GGUF tensor type; seeded sampling gives the same
 * tokens too; over 10,000 draws at one position, the token after an accepted or
 * rejected guess is distributed as the model's (chi-square); a rejected guess leaves
 * the sampler's pick chosen and not run, which the next step runs and a rewind
 * forgets; records say what was guessed; a draft model's guesses (draft.h) give plain
 * decoding's tokens too; chat replies made with guesses (chat_step_run) are the plain
 * replies, stop at the first stop token and within the step limit; the number of
 * guesses a step asks for (guess_length.h) stays in its bounds, comes near the best
 * fixed number's speed on simulated machines, and changes no token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "draft.h"
#include "engine.h"
#include "family_gguf.h"
#include "guess_length.h"
#include "lookup.h"
#include "testutil.h"

enum { PROMPT = 12, GEN = 40, K = 4 };

/* ---- prompt lookup ---- */

START_TEST(test_lookup_guess)
{
    lookup_options o = {2, 4};
    int guess[8];
    /* ... 5 6 7 8 9 ... 5 6 7: the newest 3 match earlier; 8 9 10 followed */
    int a[] = {1, 5, 6, 7, 8, 9, 10, 2, 5, 6, 7};
    ck_assert_int_eq(lookup_guess(&o, a, 11, guess, 8), 7);
    ck_assert_int_eq(guess[0], 8);
    ck_assert_int_eq(guess[2], 10);
    ck_assert_int_eq(guess[6], 7);
    ck_assert_int_eq(lookup_guess(&o, a, 11, guess, 2), 2);
    /* the newest earlier match wins: 3 4 then 9 (not 3 4 then 8) */
    int b[] = {3, 4, 8, 3, 4, 9, 3, 4};
    ck_assert_int_eq(lookup_guess(&o, b, 8, guess, 1), 1);
    ck_assert_int_eq(guess[0], 9);
    /* the longest n first: 1 2 3 matches at 0 (then 4), while 2 3 alone matches later (then 7) */
    int c[] = {1, 2, 3, 4, 2, 3, 7, 1, 2, 3};
    ck_assert_int_eq(lookup_guess(&o, c, 10, guess, 1), 1);
    ck_assert_int_eq(guess[0], 4);
    /* no earlier match of 2 tokens, and 1 is below ngram_min */
    int d[] = {1, 2, 3, 4, 5, 3};
    ck_assert_int_eq(lookup_guess(&o, d, 6, guess, 4), 0);
    lookup_options one = {1, 4};
    ck_assert_int_eq(lookup_guess(&one, d, 6, guess, 4), 3);
    ck_assert_int_eq(guess[0], 4);
    /* a run of one token predicts more of it; too short a sequence predicts nothing */
    int e[] = {7, 7, 7};
    ck_assert_int_eq(lookup_guess(&o, e, 3, guess, 4), 1);
    ck_assert_int_eq(guess[0], 7);
    ck_assert_int_eq(lookup_guess(&o, e, 2, guess, 4), 0);
    ck_assert_int_eq(lookup_guesser(NULL, a, 11, guess, 3), 3);
}
END_TEST

/* ---- guessers for the tests ---- */

/* The plain run's tokens, each replaced by a wrong one with probability 1 - rate. */
typedef struct {
    const int *plain;
    int n_plain, start, vocab;
    double rate;
    unsigned long long rng;
} oracle;

static double uniform(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int oracle_guess(void *user, const int *tokens, int n, int *guess, int max)
{
    (void)tokens;
    oracle *o = user;
    for (int j = 0; j < max; j++) {
        int at = n - o->start + j;
        int right = at < o->n_plain ? o->plain[at] : 0;
        guess[j] = uniform(&o->rng) < o->rate ? right : (right + 1) % o->vocab;
    }
    return max;
}

/* Always the same one token. */
static int fixed_guess(void *user, const int *tokens, int n, int *guess, int max)
{
    (void)tokens;
    (void)n;
    (void)max;
    guess[0] = *(const int *)user;
    return 1;
}

/* ---- runs ---- */

static engine *new_engine(const model *m, transformer_kv kv, const sampler_config *sc)
{
    engine_options o;
    engine_options_default(&o);
    o.kv_cache = kv;
    o.ctx_len = PROMPT + GEN + K + 4;
    if (sc)
        o.sampler = *sc;
    else
        o.sampler.temperature = 0.0f;
    engine *e = NULL;
    llm_err err;
    ck_assert_msg(engine_new(m, NULL, &o, &e, &err) == LLM_OK, "%s", err.text);
    return e;
}

static void prompt_of(int *p, int vocab)
{
    for (int i = 0; i < PROMPT; i++)
        p[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
    p[PROMPT - 3] = p[3]; /* something for the lookup to find */
    p[PROMPT - 2] = p[4];
}

/* GEN tokens after the prompt: plain (guesser NULL) or speculative; the tokens into out,
 * each position's logits into logits ((PROMPT + GEN) x vocab) when not NULL. */
static void decode(engine *e, engine_guesser guesser, void *user, int *out, float *logits,
                   const char *what)
{
    int vocab = engine_model(e)->config.vocab_size;
    int prompt[PROMPT];
    prompt_of(prompt, vocab);
    llm_err err;
    ck_assert_msg(engine_prefill(e, prompt, PROMPT, &err) == LLM_OK, "%s: %s", what, err.text);
    for (int done = 0; done < GEN;) {
        int got[ENGINE_GUESS_MAX + 1], n = 0;
        llm_status st = guesser ? engine_step_guessed(e, guesser, user, K, got, &n, &err)
                                : engine_step(e, &got[0], &err);
        n = guesser ? n : 1;
        ck_assert_msg(st == LLM_OK, "%s: %s", what, err.text);
        ck_assert_msg(n >= 1 && n <= K + 1, "%s: %d tokens from a step", what, n);
        for (int i = 0; i < n && done < GEN; i++)
            out[done++] = got[i];
    }
    if (!logits)
        return;
    int upto = engine_pos(e);
    ck_assert_int_ge(upto, PROMPT + GEN - 1);
    for (int p = 0; p < PROMPT + GEN - 1; p++)
        ck_assert_ptr_nonnull(engine_logits_of(e, p, logits + (size_t)p * vocab));
}

/* Plain, with the oracle's guesses (mostly right) and with lookup's: the same tokens and
 * the same logits at every position. Returns the accepted guesses. */
static long long check_equal(const model *m, transformer_kv kv, const char *what)
{
    int vocab = m->config.vocab_size;
    int plain[GEN], spec[GEN];
    size_t n_logits = (size_t)(PROMPT + GEN) * vocab;
    float *want = calloc(n_logits, sizeof(float)), *got = calloc(n_logits, sizeof(float));
    ck_assert(want && got);
    engine *e = new_engine(m, kv, NULL);
    decode(e, NULL, NULL, plain, want, what);
    engine_free(e);
    long long accepted = 0;
    for (int way = 0; way < 2; way++) {
        oracle o = {plain, GEN, PROMPT, vocab, 0.75, 12345};
        e = new_engine(m, kv, NULL);
        decode(e, way ? lookup_guesser : oracle_guess, way ? NULL : &o, spec, got, what);
        for (int i = 0; i < GEN; i++)
            ck_assert_msg(spec[i] == plain[i], "%s (%s): token %d is %d, plain decoding's %d",
                          what, way ? "lookup" : "oracle", i, spec[i], plain[i]);
        ck_assert_msg(!memcmp(want, got, sizeof(float) * n_logits),
                      "%s (%s): the logits differ from plain decoding's", what,
                      way ? "lookup" : "oracle");
        const engine_stats *st = engine_get_stats(e);
        ck_assert_int_le(st->accepted, st->guessed);
        if (!way)
            ck_assert_msg(st->accepted > 0 && st->accepted < st->guessed,
                          "%s: %lld of %lld guesses accepted", what, st->accepted, st->guessed);
        accepted += st->accepted;
        engine_free(e);
    }
    free(want);
    free(got);
    return accepted;
}

static model *open_path(const char *path, tensor_type weights)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s: %s", path, err.text);
    return m;
}

START_TEST(test_greedy_stories)
{
    for (int w = 0; w < 2; w++) {
        model *m = open_path(data_path("stories260K.gguf"), w ? TENSOR_Q8_0 : TENSOR_F32);
        check_equal(m, TRANSFORMER_KV_F32, w ? "stories260K int8" : "stories260K fp32");
        check_equal(m, TRANSFORMER_KV_Q8_0, w ? "stories260K int8, int8 cache"
                                              : "stories260K fp32, int8 cache");
        model_close(m);
    }
}
END_TEST

/* Every family's fixture, its weights as written (fp32) and made int8. */
START_TEST(test_greedy_families)
{
    const char *path = temp_path("speculate-family.gguf");
    for (size_t i = 0; i < sizeof family_shapes / sizeof family_shapes[0]; i++) {
        const char *name = family_shapes[i].name;
        ck_assert_msg(family_gguf_write(path, name, NULL, NULL), "%s", name);
        for (int w = 0; w < 2; w++) {
            char what[96];
            snprintf(what, sizeof what, "%s %s", name, w ? "int8" : "fp32");
            model *m = open_path(path, w ? TENSOR_Q8_0 : TENSOR_F32);
            check_equal(m, TRANSFORMER_KV_AUTO, what);
            model_close(m);
        }
    }
    remove(path);
}
END_TEST

/* Every GGUF tensor type llmchat reads, on rows that hold the K types' super-blocks. */
START_TEST(test_greedy_types)
{
    static const uint32_t types[] = {
        GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
        GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
        GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_MXFP4,
    };
    const char *path = temp_path("speculate-type.gguf");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        family_edit ed = {.type = types[i]};
        const char *name = ggml_type_get(types[i])->name;
        ck_assert_msg(family_gguf_write(path, "llama256", &ed, NULL), "%s", name);
        model *m = open_path(path, TENSOR_BLOCKS);
        check_equal(m, TRANSFORMER_KV_AUTO, name);
        model_close(m);
    }
    remove(path);
}
END_TEST

/* Seeded sampling (temperature, top-p, the repetition penalty): the same tokens. */
START_TEST(test_sampled_same_tokens)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_BLOCKS);
    int vocab = m->config.vocab_size;
    for (unsigned seed = 1; seed <= 5; seed++) {
        sampler_config sc;
        sampler_config_default(&sc);
        sc.temperature = 0.9f;
        sc.top_p = 0.9f;
        sc.repeat_penalty = 1.1f;
        sc.seed = seed;
        int plain[GEN], spec[GEN];
        engine *e = new_engine(m, TRANSFORMER_KV_AUTO, &sc);
        decode(e, NULL, NULL, plain, NULL, "sampled");
        engine_free(e);
        oracle o = {plain, GEN, PROMPT, vocab, 0.8, seed};
        e = new_engine(m, TRANSFORMER_KV_AUTO, &sc);
        decode(e, oracle_guess, &o, spec, NULL, "sampled");
        ck_assert_int_gt(engine_get_stats(e)->accepted, 0);
        engine_free(e);
        for (int i = 0; i < GEN; i++)
            ck_assert_msg(spec[i] == plain[i], "seed %u: token %d is %d, plain sampling's %d",
                          seed, i, spec[i], plain[i]);
    }
    model_close(m);
}
END_TEST

/* ---- the distribution at one position ---- */

/* The upper tail of the chi-square distribution with df degrees of freedom at x
 * (Wilson-Hilferty: within 1e-3 of the exact value for df >= 3 in the tail). */
static double chi2_p(double x, int df)
{
    double k = df, z = (cbrt(x / k) - (1 - 2 / (9 * k))) / sqrt(2 / (9 * k));
    return 0.5 * erfc(z / sqrt(2.0));
}

enum { DRAWS = 10000 };

/* The softmax at temperature 1 of the engine's current logits, into p; its argmax. */
static int probabilities(const engine *e, double *p)
{
    int vocab = engine_model(e)->config.vocab_size;
    const float *l = engine_logits(e);
    int top = 0;
    for (int v = 1; v < vocab; v++)
        top = l[v] > l[top] ? v : top;
    double sum = 0;
    for (int v = 0; v < vocab; v++)
        sum += p[v] = exp(l[v] - l[top]);
    for (int v = 0; v < vocab; v++)
        p[v] /= sum;
    return top;
}

/* The tokens of p expected at least 5 times in DRAWS draws. */
static int bins_of(const double *p, int vocab)
{
    int bins = 0;
    for (int v = 0; v < vocab; v++)
        bins += p[v] * DRAWS >= 5;
    return bins;
}

/* Where the distribution test draws: the first length of the prompt's greedy
 * continuation whose next token (*x) is near-certain (p >= 0.95, so few steps are
 * drawn in vain) and whose token after that is spread over at least 30 bins (so the
 * chi-square can tell distributions apart). The engine is left holding that length's
 * tokens and *x, p the model's distribution after *x. */
static int sure_position(engine *e, double *p, int *x)
{
    int vocab = engine_model(e)->config.vocab_size;
    llm_err err;
    for (int len = PROMPT; len < PROMPT + GEN; len++) {
        *x = probabilities(e, p);
        bool sure = p[*x] >= 0.95;
        ck_assert_msg(engine_force(e, *x, &err) == LLM_OK, "%s", err.text);
        probabilities(e, p);
        if (sure && bins_of(p, vocab) >= 30)
            return len;
    }
    ck_abort_msg("no position of the greedy continuation with a near-certain next token");
    return -1;
}

/* The token after x at temperature 1: DRAWS draws of it, each from a step with one
 * guess, kept when the step's first token was x (the position is then the one with
 * x before it); its counts against the model's probabilities there. x is the
 * near-certain token of sure_position. The guess is the model's top token there
 * (agree) or its third (disagree). */
static void check_distribution(bool agree)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    int vocab = m->config.vocab_size;
    sampler_config sc;
    sampler_config_default(&sc);
    sc.temperature = 1.0f;
    sc.top_p = 1.0f;
    sc.top_k = 0;
    sc.min_p = 0.0f;
    sc.repeat_penalty = 1.0f;
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, &sc);
    int prompt[PROMPT];
    prompt_of(prompt, vocab);
    llm_err err;
    ck_assert(engine_prefill(e, prompt, PROMPT, &err) == LLM_OK);
    double *p = malloc(sizeof(double) * vocab);
    int x;
    int start = sure_position(e, p, &x);
    int ranked[3];
    ck_assert_int_eq(sampler_top_k(engine_logits(e), vocab, 3, ranked), 3);
    int guess = agree ? ranked[0] : ranked[2];
    long *count = calloc(vocab, sizeof(long));
    long kept = 0, accepted = 0, wrong = 0;
    /* no ck_assert inside the loop: each one is a write to Check's log, 50,000 of them
     * here; the loop counts what is wrong and the count is asserted after it */
    for (unsigned long long seed = 1; kept < DRAWS; seed++) {
        sc.seed = seed;
        int got[2], n;
        bool ok = engine_rewind(e, start, &err) == LLM_OK;
        if (ok) {
            engine_set_sampler(e, &sc);
            ok = engine_step_guessed(e, fixed_guess, &guess, 1, got, &n, &err) == LLM_OK;
        }
        if (!ok)
            ck_abort_msg("draw %llu: %s", seed, err.text);
        if (got[0] != x)
            continue;
        int y = n == 2 ? got[1] : engine_record(e, engine_pos(e) - 1)->next;
        const step_record *r = engine_record(e, start);
        wrong += (n == 2) != (y == guess) || !r->guessed || r->guess != guess;
        accepted += n == 2;
        count[y]++;
        kept++;
    }
    ck_assert_msg(wrong == 0, "%ld of %d draws: the guess kept and the token disagree, or the "
                  "record does not name the guess", wrong, DRAWS);
    /* bins of the tokens expected at least 5 times; the rest in one */
    double chi2 = 0, rest_e = 0;
    long rest_o = 0;
    int bins = 0;
    for (int v = 0; v < vocab; v++) {
        double ex = p[v] * DRAWS;
        if (ex >= 5) {
            chi2 += (count[v] - ex) * (count[v] - ex) / ex;
            bins++;
        } else {
            rest_e += ex;
            rest_o += count[v];
        }
    }
    if (rest_e >= 5) {
        chi2 += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
        bins++;
    }
    double pv = chi2_p(chi2, bins - 1);
    fprintf(stderr, "speculate: guess %s (p %.4f): %ld of %d accepted; chi-square %.1f over %d "
                    "bins, p = %.3f\n",
            agree ? "agrees" : "disagrees", p[guess], accepted, DRAWS, chi2, bins, pv);
    ck_assert_int_ge(bins, 4);
    ck_assert_msg(pv > 0.001, "chi-square %.1f over %d bins: p = %.2g", chi2, bins, pv);
    /* the guess is accepted as often as the model picks it: within 5 standard deviations */
    double sd = sqrt(DRAWS * p[guess] * (1 - p[guess]));
    ck_assert_msg(fabs(accepted - DRAWS * p[guess]) <= 5 * sd + 1, "%ld accepted, %.0f expected",
                  accepted, DRAWS * p[guess]);
    free(count);
    free(p);
    engine_free(e);
    model_close(m);
}

START_TEST(test_distribution_agree) { check_distribution(true); }
END_TEST

START_TEST(test_distribution_disagree) { check_distribution(false); }
END_TEST

/* ---- the chosen token and the records ---- */

typedef struct {
    int seen, guessed, accepted;
} watch;

static void observe(void *user, const step_record *r)
{
    watch *w = user;
    w->seen++;
    if (r->guessed) {
        w->guessed++;
        w->accepted += r->guess == r->next;
    }
}

START_TEST(test_rejected_guess_chosen)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    int vocab = m->config.vocab_size;
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    watch w = {0};
    engine_set_observer(e, observe, &w);
    int prompt[PROMPT], plain[3];
    prompt_of(prompt, vocab);
    llm_err err;
    ck_assert(engine_prefill(e, prompt, PROMPT, &err) == LLM_OK);
    for (int i = 0; i < 3; i++)
        ck_assert(engine_step(e, &plain[i], &err) == LLM_OK);
    ck_assert(engine_rewind(e, PROMPT, &err) == LLM_OK);
    /* a wrong guess: x is appended, the sampler's pick after it chosen and not run */
    int wrong = (plain[1] + 1) % vocab, got[2], n;
    ck_assert(engine_step_guessed(e, fixed_guess, &wrong, 1, got, &n, &err) == LLM_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(got[0], plain[0]);
    ck_assert_int_eq(engine_pos(e), PROMPT + 1);
    const step_record *r = engine_record(e, PROMPT);
    ck_assert(r->guessed && r->guess == wrong && r->next == plain[1] && r->sampled);
    ck_assert_int_eq(w.guessed, 1);
    ck_assert_int_eq(w.accepted, 0);
    /* the next step runs the chosen token without a new decision */
    int t;
    ck_assert(engine_step(e, &t, &err) == LLM_OK);
    ck_assert_int_eq(t, plain[1]);
    ck_assert_int_eq(engine_pos(e), PROMPT + 2);
    ck_assert_int_eq(engine_tokens(e)[PROMPT + 1], plain[1]);
    ck_assert_int_eq(engine_phase(e, PROMPT + 1), STEP_GEN);
    /* a right guess: both appended, the record says so */
    ck_assert(engine_step_guessed(e, fixed_guess, &plain[2], 0, got, &n, &err) == LLM_OK);
    ck_assert_int_eq(n, 1); /* no guesses asked for: a plain step */
    ck_assert_int_eq(got[0], plain[2]);
    ck_assert(engine_rewind(e, PROMPT + 2, &err) == LLM_OK);
    /* a rewind to the end forgets a chosen token: the next step decides again */
    ck_assert(engine_step_guessed(e, fixed_guess, &wrong, 1, got, &n, &err) == LLM_OK);
    ck_assert_int_eq(engine_pos(e), PROMPT + 3);
    ck_assert(engine_record(e, PROMPT + 2)->next >= 0);
    ck_assert(engine_rewind(e, PROMPT + 3, &err) == LLM_OK);
    ck_assert_int_eq(engine_record(e, PROMPT + 2)->next, -1);
    ck_assert(!engine_record(e, PROMPT + 2)->guessed);
    ck_assert(engine_step(e, &t, &err) == LLM_OK);
    ck_assert_int_eq(engine_pos(e), PROMPT + 4);
    engine_free(e);
    model_close(m);
}
END_TEST

/* Guesses that would not fit the context are not asked for; bad ids end the guesses. */
START_TEST(test_guesses_bounded)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    int vocab = m->config.vocab_size;
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    int ctx = engine_ctx(e), prompt[PROMPT];
    prompt_of(prompt, vocab);
    llm_err err;
    ck_assert(engine_prefill(e, prompt, PROMPT, &err) == LLM_OK);
    int t;
    while (engine_pos(e) < ctx - 2)
        ck_assert(engine_step(e, &t, &err) == LLM_OK);
    oracle o = {NULL, 0, 0, vocab, 0.0, 1};
    int got[ENGINE_GUESS_MAX + 1], n;
    ck_assert(engine_step_guessed(e, oracle_guess, &o, ENGINE_GUESS_MAX, got, &n, &err) == LLM_OK);
    ck_assert_int_le(engine_pos(e), ctx);
    int bad = vocab + 5;
    ck_assert(engine_rewind(e, PROMPT, &err) == LLM_OK);
    ck_assert(engine_step_guessed(e, fixed_guess, &bad, 4, got, &n, &err) == LLM_OK);
    ck_assert_int_eq(n, 1);
    ck_assert(!engine_record(e, PROMPT)->guessed);
    engine_free(e);
    model_close(m);
}
END_TEST

/* A draft model: the same model drafting for itself (every guess right), and its int8
 * twin (most right): plain decoding's tokens either way, the draft keeping up across
 * steps that accept some guesses and reject others. */
START_TEST(test_draft)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    model *twin = open_path(data_path("stories260K.gguf"), TENSOR_Q8_0);
    int plain[GEN], spec[GEN];
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    decode(e, NULL, NULL, plain, NULL, "plain");
    int ctx = engine_ctx(e);
    engine_free(e);
    for (int w = 0; w < 2; w++) {
        draft *d = NULL;
        llm_err err;
        ck_assert_msg(draft_new(w ? twin : m, ctx, &d, &err) == LLM_OK, "%s", err.text);
        e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
        decode(e, draft_guesser, d, spec, NULL, w ? "int8 draft" : "self draft");
        for (int i = 0; i < GEN; i++)
            ck_assert_msg(spec[i] == plain[i], "%s draft: token %d is %d, plain decoding's %d",
                          w ? "int8" : "self", i, spec[i], plain[i]);
        const engine_stats *st = engine_get_stats(e);
        ck_assert_int_gt(st->accepted, 0);
        if (!w) /* the model guessing for itself is always right (but for the context's end) */
            ck_assert_int_eq(st->accepted, st->guessed);
        /* the draft ran each position about once: what it guessed right is kept */
        ck_assert_int_le(engine_get_stats(draft_engine(d))->decode_tokens,
                         st->guessed + st->guess_rounds + 2);
        engine_free(e);
        draft_free(d);
    }
    /* a draft whose context is full guesses nothing: the model steps alone */
    draft *d = NULL;
    llm_err err;
    ck_assert(draft_new(twin, PROMPT + 2, &d, &err) == LLM_OK);
    e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    decode(e, draft_guesser, d, spec, NULL, "short draft");
    ck_assert_int_eq(memcmp(spec, plain, sizeof spec), 0);
    ck_assert_int_le(engine_get_stats(e)->guessed, 1);
    engine_free(e);
    draft_free(d);
    model_close(twin);
    model_close(m);
}
END_TEST

/* ---- chat replies ---- */

/* Guesses read from a whole sequence made plainly (positions absolute), each right with
 * probability rate: past a reply's end they guess the next turn's prompt. */
typedef struct {
    const int *seq;
    int n_seq, vocab;
    double rate;
    unsigned long long rng;
} seq_oracle;

static int seq_guess(void *user, const int *tokens, int n, int *guess, int max)
{
    (void)tokens;
    seq_oracle *o = user;
    for (int j = 0; j < max; j++) {
        int right = n + j < o->n_seq ? o->seq[n + j] : 1;
        guess[j] = uniform(&o->rng) < o->rate ? right : (right + 7) % o->vocab;
    }
    return max;
}

static const char *const chat_messages[] = {"Tell me a story about Tom.", "Now one about a dog.",
                                            "And one more, please."};
enum { CHAT_TURNS = 3, CHAT_CTX = 512 };

typedef struct {
    int tokens[CHAT_CTX];
    int n;
    char replies[CHAT_TURNS][2048];
    bool complete[CHAT_TURNS], cut[CHAT_TURNS];
    long long steps, guessed, accepted;
} chat_result;

/* Three turns on chat260K (seeded sampling when temperature > 0), each reply at most
 * max_reply tokens (0: to its end), plain (guesser NULL: chat_step) or with guesses
 * (chat_step_run): every run's text checked against the reply it grew. */
static void run_chat(engine_guesser guesser, void *user, float temperature, int max_reply,
                     chat_result *out)
{
    model_options mo;
    model_options_default(&mo);
    model *m = NULL;
    tokenizer *tok = NULL;
    llm_err err;
    ck_assert_msg(model_open(data_path("chat260K.bin"), &mo, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(tokenizer_open(data_path("tok512.bin"), 512, &tok, &err) == LLM_OK, "%s",
                  err.text);
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = CHAT_CTX;
    o.sampler.temperature = temperature;
    o.sampler.seed = 42;
    engine *e = NULL;
    ck_assert_msg(engine_new(m, tok, &o, &e, &err) == LLM_OK, "%s", err.text);
    chat *c = NULL;
    ck_assert(chat_new(e, "You tell short, happy stories.", &c, &err) == LLM_OK);
    chat_set_guesser(c, guesser, user, K);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < CHAT_TURNS; i++) {
        ck_assert_msg(chat_begin(c, chat_messages[i], max_reply, &err) == LLM_OK, "%s", err.text);
        chat_progress p;
        size_t len = 0;
        do {
            if (!guesser) {
                int t;
                p = chat_step(c, &t, NULL, &err);
                out->steps++;
                continue;
            }
            chat_run run;
            int before = engine_pos(e);
            p = chat_step_run(c, &run, &err);
            out->steps++;
            ck_assert_int_le(run.n, K + 1);
            if (run.n == 0)
                continue;
            ck_assert_int_eq(run.first, before);
            ck_assert_int_eq(run.offset[run.n], strlen(run.text));
            const chat_turn *t = chat_get_turn(c, i);
            for (int k = 0; k < run.n; k++)
                ck_assert_int_eq(run.tokens[k], engine_tokens(e)[run.first + k]);
            ck_assert_int_eq(strncmp(t->reply + len, run.text, strlen(run.text)), 0);
            len += strlen(run.text);
            ck_assert_int_eq(len, strlen(t->reply));
        } while (p == CHAT_GENERATING);
        ck_assert_msg(p != CHAT_REPLY_ERROR, "%s", err.text);
        const chat_turn *t = chat_get_turn(c, i);
        ck_assert_ptr_nonnull(t);
        snprintf(out->replies[i], sizeof out->replies[i], "%s", t->reply);
        out->complete[i] = t->complete;
        out->cut[i] = t->cut;
        ck_assert_int_eq(t->end, engine_pos(e)); /* nothing run past the reply's end */
        if (max_reply > 0) /* the closing token is not a reply token when the limit cut it */
            ck_assert_int_le(t->end - t->reply_start, max_reply + 1);
    }
    out->n = engine_pos(e);
    memcpy(out->tokens, engine_tokens(e), sizeof(int) * (size_t)out->n);
    const engine_stats *st = engine_get_stats(e);
    out->guessed = st->guessed;
    out->accepted = st->accepted;
    chat_free(c);
    engine_free(e);
    tokenizer_close(tok);
    model_close(m);
}

static void same_chat(const chat_result *a, const chat_result *b, const char *what)
{
    for (int i = 0; i < CHAT_TURNS; i++)
        if (strcmp(a->replies[i], b->replies[i]) || a->complete[i] != b->complete[i])
            fprintf(stderr, "%s: turn %d: [%s] %d plainly [%s] %d\n", what, i, b->replies[i],
                    b->complete[i], a->replies[i], a->complete[i]);
    ck_assert_msg(a->n == b->n, "%s: %d positions, plainly %d", what, b->n, a->n);
    for (int p = 0; p < a->n; p++)
        ck_assert_msg(a->tokens[p] == b->tokens[p], "%s: position %d holds %d, plainly %d", what,
                      p, b->tokens[p], a->tokens[p]);
    for (int i = 0; i < CHAT_TURNS; i++) {
        ck_assert_str_eq(a->replies[i], b->replies[i]);
        ck_assert_int_eq(a->complete[i], b->complete[i]);
        ck_assert_int_eq(a->cut[i], b->cut[i]);
    }
}

/* Replies with guesses are the plain replies, greedy and sampled, whole or cut at a
 * step limit; guesses right past a reply's end (the next turn's prompt) are forgotten
 * at its stop token. */
START_TEST(test_chat_replies)
{
    static const struct { float temp; int max_reply; } runs[] = {{0.0f, 0}, {0.8f, 0}, {0.0f, 9},
                                                                 {0.9f, 5}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        chat_result *plain = malloc(sizeof *plain), *spec = malloc(sizeof *spec);
        ck_assert(plain && spec);
        run_chat(NULL, NULL, runs[r].temp, runs[r].max_reply, plain);
        int completed = 0;
        for (int i = 0; i < CHAT_TURNS; i++)
            completed += plain->complete[i];
        if (runs[r].max_reply == 0)
            ck_assert_int_gt(completed, 0); /* some reply ends with its stop token */
        for (int way = 0; way < 3; way++) {
            seq_oracle o = {plain->tokens, plain->n, 512, way == 0 ? 1.0 : 0.6, 99};
            const char *what = way == 0 ? "every guess right" : way == 1 ? "most right" : "lookup";
            run_chat(way < 2 ? seq_guess : lookup_guesser, way < 2 ? &o : NULL, runs[r].temp,
                     runs[r].max_reply, spec);
            same_chat(plain, spec, what);
            if (way < 2) {
                ck_assert_int_gt(spec->accepted, 0);
                ck_assert_int_lt(spec->steps, plain->steps); /* fewer calls of the model */
            }
        }
        free(plain);
        free(spec);
    }
}
END_TEST

/* The newest round's guesses, for a front end to show: what was guessed, where, how many
 * the sampler took; a rewind before them forgets them. */
START_TEST(test_last_guesses)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    int vocab = m->config.vocab_size;
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    int prompt[PROMPT], plain[6], got[ENGINE_GUESS_MAX + 1], n, pos, acc, shown[ENGINE_GUESS_MAX];
    prompt_of(prompt, vocab);
    llm_err err;
    ck_assert(engine_prefill(e, prompt, PROMPT, &err) == LLM_OK);
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, ENGINE_GUESS_MAX, &acc), 0);
    for (int i = 0; i < 6; i++)
        ck_assert(engine_step(e, &plain[i], &err) == LLM_OK);
    ck_assert(engine_rewind(e, PROMPT, &err) == LLM_OK);
    /* guesses: plain[1], plain[2] right, then a wrong one, then one never checked */
    int guess[4] = {plain[1], plain[2], (plain[3] + 1) % vocab, plain[4]};
    seq_oracle so = {NULL, 0, vocab, 1.0, 1};
    int seq[PROMPT + 6];
    memcpy(seq, prompt, sizeof prompt);
    seq[PROMPT] = plain[0];
    memcpy(seq + PROMPT + 1, guess, sizeof guess);
    so.seq = seq;
    so.n_seq = PROMPT + 5;
    ck_assert(engine_step_guessed(e, seq_guess, &so, 4, got, &n, &err) == LLM_OK);
    ck_assert_int_eq(n, 3); /* x and two accepted */
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, ENGINE_GUESS_MAX, &acc), 4);
    ck_assert_int_eq(pos, PROMPT);
    ck_assert_int_eq(acc, 2);
    ck_assert_int_eq(memcmp(shown, guess, sizeof guess), 0);
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, 2, &acc), 2);
    /* the step that runs the chosen token keeps them; a rewind into them forgets them */
    int t;
    ck_assert(engine_step(e, &t, &err) == LLM_OK);
    ck_assert_int_eq(t, plain[3]);
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, ENGINE_GUESS_MAX, &acc), 4);
    ck_assert(engine_rewind(e, PROMPT + 3, &err) == LLM_OK);
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, ENGINE_GUESS_MAX, &acc), 4);
    ck_assert(engine_rewind(e, PROMPT + 2, &err) == LLM_OK);
    ck_assert_int_eq(engine_last_guesses(e, &pos, shown, ENGINE_GUESS_MAX, &acc), 0);
    ck_assert_int_eq(pos, -1);
    engine_free(e);
    model_close(m);
}
END_TEST

/* ---- how many guesses a step asks for (guess_length.h) ---- */

/* Before any timing, a plain step; before any check, all the guesses allowed; the
 * bounds always hold; a new text forgets the acceptance and tries the guesses again. */
START_TEST(test_guess_length_bounds)
{
    guess_length g;
    guess_length_init(&g);
    ck_assert_int_eq(guess_length_choose(&g, 0, 8), 0); /* the plain steps' time first */
    guess_length_note_step(&g, 1, 10.0);
    ck_assert_int_eq(guess_length_choose(&g, 0, 8), 0);
    guess_length_note_step(&g, 1, 10.0);
    ck_assert_int_eq(guess_length_choose(&g, 0, 8), 8); /* no check seen: tried */
    ck_assert_int_eq(guess_length_choose(&g, 3, 2), 2);  /* min >= max: max */
    ck_assert_int_eq(guess_length_choose(&g, 5, 5), 5);
    ck_assert_int_eq(guess_length_choose(&g, 0, 40), GUESS_LENGTH_MAX);
    /* checks that cost 3 tokens and never keep a guess */
    for (int i = 0; i < 30; i++) {
        guess_length_note_step(&g, 9, 30.0);
        guess_length_note_check(&g, 8, 0);
    }
    ck_assert_double_lt(guess_length_acceptance(&g), 0.25);
    ck_assert_int_eq(guess_length_choose(&g, 0, 8), 0);
    ck_assert_int_ge(guess_length_choose(&g, 2, 8), 2); /* the floor holds */
    guess_length_new_text(&g);
    ck_assert_double_gt(guess_length_acceptance(&g), 0.5);
    ck_assert_int_eq(guess_length_choose(&g, 0, 8), 8); /* a new text: tried */
    ck_assert_int_lt(guess_length_choose(&g, 0, 8), 8); /* then judged by the costs */
}
END_TEST

/* A step of n positions costing 1 + over (n > 1) + per (n - 1), give or take 20%, one
 * step in 50 held up 10 times as long (a shared machine), and each guess right with
 * probability rate until the first wrong one: the tokens a unit of time, steps from
 * `choose` (K < 0: adaptive, from 0 to 8) or always K. With catch_up > 0 the guesser
 * is a draft model that runs the tokens it missed before it guesses: a 500-token prompt
 * at its first check, then every plain step since the last check, catch_up each; and
 * the first 3 checks cost slow_first more (the draft's weights read from the disk). */
static double simulated_rate(const double *machine, int k)
{
    const double rate = machine[0], per = machine[1], over = machine[2],
                 catch_up = machine[3], slow_first = machine[4];
    guess_length g;
    guess_length_init(&g);
    unsigned long long rng = 99;
    double tokens = 0, time = 0;
    int missed = 500, checks = 0;
    for (int step = 0; step < 4000; step++) {
        int ask = k < 0 ? guess_length_choose(&g, 0, 8) : k;
        int kept = 0;
        while (kept < ask && uniform(&rng) < rate)
            kept++;
        double cost = (1 + (ask > 0 ? over : 0) + per * ask) * (0.8 + 0.4 * uniform(&rng));
        if (uniform(&rng) < 0.02)
            cost *= 10;
        if (catch_up > 0 && ask > 0)
            cost += catch_up * missed, missed = 0;
        else
            missed++;
        if (ask > 0 && checks++ < 3)
            cost += slow_first;
        guess_length_note_step(&g, ask + 1, cost);
        if (ask > 0)
            guess_length_note_check(&g, ask, kept);
        tokens += kept + 1;
        time += cost;
    }
    return tokens / time;
}

/* Over machines where a check is cheap or dear and guesses that are mostly right, half
 * right or never: the adaptive choice makes at least 90% of the best fixed number's
 * tokens a unit of time, and of plain decoding's (K = 0: what trying a guess now and
 * then costs). */
START_TEST(test_guess_length_pays)
{
    static const double cases[][5] = {
        /* rate, per position, a check's overhead, a draft's catching up a token, the
         * first checks' extra cost */
        {0.95, 0.05, 0.05, 0, 0}, {0.95, 0.5, 0.2, 0, 0},    {0.8, 0.15, 0.1, 0, 0},
        {0.6, 0.3, 0.1, 0, 0},    {0.6, 0.05, 0.0, 0, 0},    {0.3, 0.1, 0.1, 0, 0},
        {0.0, 0.3, 0.2, 0, 0},    {0.0, 0.02, 0.0, 0, 0},    {0.5, 0.5, 0.3, 0, 0},
        {1.0, 0.4, 0.2, 0.05, 0}, {0.8, 0.3, 0.1, 0.05, 0},  {0.0, 0.3, 0.1, 0.05, 0},
        {1.0, 0.4, 0.2, 0.05, 20},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const double *x = cases[c];
        double best = 0;
        int best_k = 0;
        for (int k = 0; k <= 8; k++) {
            double r = simulated_rate(x, k);
            if (r > best)
                best = r, best_k = k;
        }
        double adaptive = simulated_rate(x, -1), plain = simulated_rate(x, 0);
        ck_assert_msg(adaptive >= 0.9 * best && adaptive >= 0.9 * plain,
                      "rate %.2f, %.2f a position, %.2f a check, %.2f a token caught up, "
                      "%.0f more for the first checks: adaptive %.3f, best fixed (K = %d) "
                      "%.3f, plain %.3f",
                      x[0], x[1], x[2], x[3], x[4], adaptive, best_k, best, plain);
    }
}
END_TEST

/* An engine choosing its number of guesses (engine_options.guess_min 0) gives plain
 * decoding's tokens and logits too, and says how many the last step asked for. */
START_TEST(test_guess_length_engine)
{
    model *m = open_path(data_path("stories260K.gguf"), TENSOR_F32);
    int vocab = m->config.vocab_size;
    size_t n_logits = (size_t)(PROMPT + GEN) * vocab;
    float *want = calloc(n_logits, sizeof(float)), *got = calloc(n_logits, sizeof(float));
    ck_assert(want && got);
    int plain[GEN], spec[GEN];
    engine *e = new_engine(m, TRANSFORMER_KV_AUTO, NULL);
    decode(e, NULL, NULL, plain, want, "plain");
    engine_free(e);
    engine_options o;
    engine_options_default(&o);
    ck_assert_int_eq(o.guess_min, -1); /* the library's default: always the guesses asked */
    o.ctx_len = PROMPT + GEN + K + 4;
    o.sampler.temperature = 0.0f;
    o.guess_min = 0;
    llm_err err;
    ck_assert_msg(engine_new(m, NULL, &o, &e, &err) == LLM_OK, "%s", err.text);
    oracle orc = {plain, GEN, PROMPT, vocab, 0.9, 7};
    decode(e, oracle_guess, &orc, spec, got, "adaptive");
    for (int i = 0; i < GEN; i++)
        ck_assert_msg(spec[i] == plain[i], "token %d is %d, plain decoding's %d", i, spec[i],
                      plain[i]);
    ck_assert_msg(!memcmp(want, got, sizeof(float) * n_logits),
                  "the logits differ from plain decoding's");
    double acceptance = -1;
    int asked = engine_guess_length(e, &acceptance);
    ck_assert_int_ge(asked, 0);
    ck_assert_int_le(asked, K);
    ck_assert(acceptance >= 0 && acceptance <= 1);
    engine_free(e);
    free(want);
    free(got);
    model_close(m);
}
END_TEST

static Suite *speculate_suite(void)
{
    Suite *s = suite_create("speculate");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_lookup_guess);
    tcase_add_test(tc, test_greedy_stories);
    tcase_add_test(tc, test_greedy_families);
    tcase_add_test(tc, test_greedy_types);
    tcase_add_test(tc, test_sampled_same_tokens);
    tcase_add_test(tc, test_distribution_agree);
    tcase_add_test(tc, test_distribution_disagree);
    tcase_add_test(tc, test_rejected_guess_chosen);
    tcase_add_test(tc, test_guesses_bounded);
    tcase_add_test(tc, test_draft);
    tcase_add_test(tc, test_chat_replies);
    tcase_add_test(tc, test_last_guesses);
    tcase_add_test(tc, test_guess_length_bounds);
    tcase_add_test(tc, test_guess_length_pays);
    tcase_add_test(tc, test_guess_length_engine);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(speculate_suite)
