/* test_sampler.c — the sampler's stages, records, RNG and option checks.
 *
 * Every statistical check is driven by a fixed seed, so it gives the same answer on
 * every run: a bound that holds once holds always. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "sampler.h"

static sampler *make(int n_vocab, const sampler_config *c)
{
    sampler *s = NULL;
    llm_err err = {{0}};
    llm_status st = sampler_new(n_vocab, c, &s, &err);
    ck_assert_msg(st == LLM_OK, "sampler_new: %s", err.text);
    return s;
}

static sampler_config config(float temperature, float top_p, int top_k, float min_p)
{
    sampler_config c;
    sampler_config_default(&c);
    c.temperature = temperature;
    c.top_p = top_p;
    c.top_k = top_k;
    c.min_p = min_p;
    c.seed = 1234;
    return c;
}

/* Deterministic pseudo-random logits in [-scale, scale). */
static void fill_logits(float *l, int n, unsigned seed, float scale)
{
    unsigned x = seed * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        l[i] = ((float)(x >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
}

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

/* Softmax of l / t in double. */
static void softmax_ref(const float *l, int n, double t, double *p)
{
    double m = l[argmax(l, n)], sum = 0;
    for (int i = 0; i < n; i++)
        sum += p[i] = exp((l[i] - m) / t);
    for (int i = 0; i < n; i++)
        p[i] /= sum;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Size of the smallest set reaching p; *margin = how far p is from the partial sums
 * on either side of that boundary (small: float rounding may move it by one). */
static int nucleus_ref(const double *prob, int n, double p, double *margin)
{
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, prob, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_desc);
    double cum = 0, before = 0;
    int k = n;
    for (int i = 0; i < n; i++) {
        before = cum;
        cum += s[i];
        if (cum >= p) {
            k = i + 1;
            break;
        }
    }
    *margin = fmin(fabs(cum - p), fabs(p - before));
    free(s);
    return k;
}

/* ---------------------------------------------------------------- core */

START_TEST(test_logits_unchanged)
{
    enum { N = 1000 };
    float logits[N], copy[N];
    fill_logits(logits, N, 7, 5.0f);
    memcpy(copy, logits, sizeof logits);
    int history[80];
    for (int i = 0; i < 80; i++)
        history[i] = (i * 37) % N;
    history[79] = argmax(logits, N);

    sampler_config modes[8];
    modes[0] = config(0.0f, 1.0f, 0, 0.0f);  /* greedy */
    modes[1] = config(1.0f, 0.9f, 0, 0.0f);  /* defaults */
    modes[2] = config(0.7f, 1.0f, 40, 0.0f); /* top-k */
    modes[3] = config(1.3f, 0.5f, 0, 0.0f);  /* top-p */
    modes[4] = config(1.0f, 1.0f, 0, 0.1f);  /* min-p */
    modes[5] = config(0.8f, 0.95f, 50, 0.05f);
    modes[6] = config(0.0f, 1.0f, 0, 0.0f);
    modes[6].repeat_penalty = 1.3f;          /* penalty, greedy */
    modes[7] = config(1.0f, 0.9f, 20, 0.02f);
    modes[7].repeat_penalty = 1.1f;          /* everything */
    for (int m = 0; m < 8; m++) {
        sampler *s = make(N, &modes[m]);
        sampler_record rec;
        for (int i = 0; i < 20; i++) {
            int id = sampler_choose(s, logits, history, 80, &rec);
            ck_assert_int_ge(id, 0);
            ck_assert_int_lt(id, N);
            ck_assert_int_eq(rec.chosen, id);
            ck_assert_msg(memcmp(logits, copy, sizeof logits) == 0, "mode %d changed the logits", m);
        }
        sampler_free(s);
    }
}
END_TEST

START_TEST(test_greedy)
{
    float logits[6] = {1.0f, 5.0f, -2.0f, 5.0f, 4.9f, 0.0f};
    sampler_config c = config(0.0f, 0.5f, 3, 0.2f);
    sampler *s = make(6, &c);
    sampler_record rec;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(sampler_choose(s, logits, NULL, 0, &rec), 1); /* first of the tied 5s */
        ck_assert(rec.greedy);
        ck_assert_float_eq(rec.draw, -1.0f);
        ck_assert_float_eq(rec.chosen_prob, 1.0f);
        ck_assert_int_eq(rec.kept_top_k, 6);
        ck_assert_int_eq(rec.kept_top_p, 6);
        ck_assert_int_eq(rec.kept_min_p, 6);
        ck_assert_int_eq(rec.n_vocab, 6);
        ck_assert_int_eq(rec.chosen_rank, 1);
        ck_assert_float_eq(rec.config.temperature, 0.0f);
    }
    sampler_free(s);

    enum { N = 32000 };
    float *big = malloc(N * sizeof *big);
    fill_logits(big, N, 3, 8.0f);
    c = config(0.0f, 1.0f, 0, 0.0f);
    s = make(N, &c);
    ck_assert_int_eq(sampler_choose(s, big, NULL, 0, NULL), argmax(big, N));
    sampler_free(s);
    free(big);
}
END_TEST

START_TEST(test_top_k_one_is_argmax)
{
    enum { N = 500 };
    float logits[N];
    const float temps[] = {0.01f, 0.5f, 1.0f, 3.0f, 100.0f, 1e6f};
    for (int t = 0; t < 6; t++) {
        sampler_config c = config(temps[t], 1.0f, 1, 0.0f);
        c.seed = 99 + t;
        sampler *s = make(N, &c);
        for (int i = 0; i < 50; i++) {
            fill_logits(logits, N, 100 + i, 2.0f);
            logits[N - 1] = logits[argmax(logits, N)]; /* a tie: the lower id must win */
            sampler_record rec;
            ck_assert_int_eq(sampler_choose(s, logits, NULL, 0, &rec), argmax(logits, N));
            ck_assert_int_eq(rec.kept_top_k, 1);
            ck_assert(!rec.greedy);
            ck_assert_float_eq_tol(rec.chosen_prob, 1.0f, 1e-6f);
            ck_assert(rec.draw >= 0.0f && rec.draw < 1.0f);
        }
        sampler_free(s);
    }
}
END_TEST

START_TEST(test_top_p_crafted)
{
    /* Probabilities 0.5, 0.25, 0.125, 0.0625, ... (halving) over 12 tokens, shuffled ids. */
    enum { N = 12 };
    const int order[N] = {7, 2, 11, 0, 5, 9, 1, 10, 3, 6, 4, 8};
    float logits[N];
    for (int r = 0; r < N; r++)
        logits[order[r]] = -(float)r * logf(2.0f);
    struct { float p; int kept; } cases[] = {
        {0.3f, 1}, {0.6f, 2}, {0.74f, 2}, {0.8f, 3}, {0.9f, 4}, {0.95f, 5}, {0.99f, 7},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sampler_config c = config(1.0f, cases[k].p, 0, 0.0f);
        sampler *s = make(N, &c);
        sampler_record rec;
        for (int i = 0; i < 200; i++) {
            int id = sampler_choose(s, logits, NULL, 0, &rec);
            ck_assert_int_eq(rec.kept_top_p, cases[k].kept);
            ck_assert_int_eq(rec.kept_top_k, N);
            ck_assert_int_eq(rec.kept_min_p, cases[k].kept); /* min-p is off: keeps what reached it */
            int rank = 0;
            while (order[rank] != id)
                rank++;
            ck_assert_msg(rank < cases[k].kept, "p=%g chose rank %d", cases[k].p, rank + 1);
            /* chosen_prob is renormalised over the nucleus. */
            double mass = 0;
            for (int j = 0; j < cases[k].kept; j++)
                mass += ldexp(1.0, -(j + 1));
            mass += (cases[k].kept == N) ? ldexp(1.0, -N) : 0;
            ck_assert_float_eq_tol(rec.chosen_prob, ldexp(1.0, -(rank + 1)) / mass, 1e-5);
        }
        sampler_free(s);
    }
}
END_TEST

START_TEST(test_top_p_matches_reference)
{
    /* Big vocabularies and different shapes (flat and peaked) against a full sort. */
    enum { N = 32000 };
    float *logits = malloc(N * sizeof *logits);
    double *prob = malloc(N * sizeof *prob);
    const float scales[] = {0.1f, 2.0f, 8.0f, 20.0f};
    const float ps[] = {0.05f, 0.5f, 0.9f, 0.99f};
    const float temps[] = {0.7f, 1.0f, 1.5f};
    int checked = 0, exact = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int t = 0; t < 3; t++) {
                fill_logits(logits, N, 11 + a * 16 + b * 4 + t, scales[a]);
                softmax_ref(logits, N, temps[t], prob);
                double margin;
                int want = nucleus_ref(prob, N, ps[b], &margin);
                sampler_config c = config(temps[t], ps[b], 0, 0.0f);
                sampler *s = make(N, &c);
                sampler_record rec;
                int id = sampler_choose(s, logits, NULL, 0, &rec);
                int slack = margin < 1e-6 ? 1 : 0; /* too close to call in float */
                ck_assert_msg(abs(rec.kept_top_p - want) <= slack,
                              "scale %g p %g t %g: kept %d, want %d (margin %g)",
                              scales[a], ps[b], temps[t], rec.kept_top_p, want, margin);
                exact += slack == 0;
                /* The chosen token is at least as probable as the nucleus' smallest. */
                double *sorted = malloc(N * sizeof *sorted);
                memcpy(sorted, prob, N * sizeof *sorted);
                qsort(sorted, N, sizeof *sorted, cmp_desc);
                ck_assert(prob[id] >= sorted[rec.kept_top_p - 1] * (1 - 1e-5));
                free(sorted);
                sampler_free(s);
                checked++;
            }
    ck_assert_int_eq(checked, 48);
    ck_assert_int_ge(exact, 40);
    free(logits);
    free(prob);
}
END_TEST

START_TEST(test_min_p)
{
    float logits[6] = {-3.0f, 0.0f, -1.0f, -2.0f, -10.0f, -0.5f};
    /* T=1: relative probabilities 0.050, 1, 0.368, 0.135, 0.00005, 0.607 */
    struct { float t, min_p; int kept; } cases[] = {
        {1.0f, 0.2f, 3}, {1.0f, 0.5f, 2}, {1.0f, 0.1f, 4}, {1.0f, 0.01f, 5}, {1.0f, 0.9f, 1},
        {2.0f, 0.2f, 5}, /* T=2: 0.22, 1, 0.61, 0.37, 0.0067, 0.78 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sampler_config c = config(cases[k].t, 1.0f, 0, cases[k].min_p);
        sampler *s = make(6, &c);
        for (int i = 0; i < 100; i++) {
            sampler_record rec;
            int id = sampler_choose(s, logits, NULL, 0, &rec);
            ck_assert_int_eq(rec.kept_min_p, cases[k].kept);
            ck_assert_int_eq(rec.kept_top_p, 6);
            ck_assert(expf((logits[id] - 0.0f) / cases[k].t) >= cases[k].min_p);
        }
        sampler_free(s);
    }
}
END_TEST

START_TEST(test_top_k_with_min_p_and_cold_temperature)
{
    /* The best logit sits at the end of the vocabulary, so top-k has to move it; min-p
     * must still measure against it, and a cold temperature must not overflow. */
    enum { N = 200 };
    float logits[N];
    for (int i = 0; i < N; i++)
        logits[i] = -50.0f - (float)i * 0.01f;
    logits[N - 1] = 10.0f; /* best */
    logits[N - 2] = 9.0f;  /* e^-1 = 0.37 of it at T=1 */
    logits[0] = 8.0f;      /* e^-2 = 0.14 */
    logits[50] = 7.0f;     /* e^-3 = 0.05 */
    sampler_config c = config(1.0f, 1.0f, 4, 0.1f);
    sampler *s = make(N, &c);
    sampler_record rec;
    int seen[N] = {0};
    for (int i = 0; i < 2000; i++) {
        int id = sampler_choose(s, logits, NULL, 0, &rec);
        seen[id]++;
        ck_assert_int_eq(rec.kept_top_k, 4);
        ck_assert_int_eq(rec.kept_min_p, 3); /* 10, 9, 8 */
    }
    ck_assert(seen[N - 1] > 0 && seen[N - 2] > 0 && seen[0] > 0);
    ck_assert_int_eq(seen[50], 0);
    sampler_free(s);

    /* T = 0.01: (8 - 10) / 0.01 = -200; a wrong shift would give e^+huge. */
    c = config(0.01f, 1.0f, 3, 0.0f);
    s = make(N, &c);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(sampler_choose(s, logits, NULL, 0, &rec), N - 1);
        ck_assert(rec.chosen_prob > 0.99f && rec.chosen_prob <= 1.0f);
    }
    sampler_free(s);
}
END_TEST

START_TEST(test_repeat_penalty)
{
    enum { N = 10 };
    float logits[N] = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f, 3.0f, 2.5f, 0.5f, 0.6f, -1.0f};
    sampler_config c = config(0.0f, 1.0f, 0, 0.0f);
    c.repeat_penalty = 1.5f;
    c.repeat_last_n = 64;
    sampler *s = make(N, &c);
    sampler_record rec;

    /* 5 repeats (3.0 / 1.5 = 2 < 2.5): the runner-up wins. Distinct ids whose logit
     * changed: 5 and 9 (-1 * 1.5); 4 has logit 0 and stays; -3 and 10 are ignored. */
    int history[] = {5, 5, 4, 9, 5, 9, -3, 10};
    ck_assert_int_eq(sampler_choose(s, logits, history, 8, &rec), 6);
    ck_assert_int_eq(rec.n_penalized, 2);
    ck_assert_int_eq(rec.chosen_rank, 2);

    /* Only the last 2 tokens count: 5 is outside the window. */
    c.repeat_last_n = 2;
    sampler_configure(s, &c);
    int h2[] = {5, 9, 9};
    ck_assert_int_eq(sampler_choose(s, logits, h2, 3, &rec), 5);
    ck_assert_int_eq(rec.n_penalized, 1);

    /* Off: penalty 1, or a window of 0. */
    c.repeat_last_n = 64;
    c.repeat_penalty = 1.0f;
    sampler_configure(s, &c);
    ck_assert_int_eq(sampler_choose(s, logits, history, 8, &rec), 5);
    ck_assert_int_eq(rec.n_penalized, 0);
    c.repeat_penalty = 1.5f;
    c.repeat_last_n = 0;
    sampler_configure(s, &c);
    ck_assert_int_eq(sampler_choose(s, logits, history, 8, &rec), 5);
    ck_assert_int_eq(rec.n_penalized, 0);

    /* A penalty below 1 boosts: 9 (-1 * 0.1 = -0.1) is no longer the lowest; 6 (2.5 / 0.5 = 5) wins. */
    c.repeat_last_n = 64;
    c.repeat_penalty = 0.5f;
    sampler_configure(s, &c);
    int h3[] = {6};
    ck_assert_int_eq(sampler_choose(s, logits, h3, 1, &rec), 6);
    ck_assert_int_eq(rec.n_penalized, 1);
    sampler_free(s);

    /* Sampling mode: a penalised token's share drops accordingly. */
    sampler_config c2 = config(1.0f, 1.0f, 0, 0.0f);
    c2.repeat_penalty = 2.0f;
    s = make(N, &c2);
    float two[N];
    for (int i = 0; i < N; i++)
        two[i] = -100.0f;
    two[0] = 2.0f;
    two[1] = 1.0f;
    int h4[] = {0};
    int count0 = 0;
    for (int i = 0; i < 2000; i++)
        count0 += sampler_choose(s, two, h4, 1, NULL) == 0;
    ck_assert_int_gt(count0, 1000 - 150); /* 2/2 = 1 = 1: a coin toss */
    ck_assert_int_lt(count0, 1000 + 150);
    sampler_free(s);
}
END_TEST

START_TEST(test_seeds)
{
    enum { N = 100, DRAWS = 100 };
    float logits[N];
    fill_logits(logits, N, 5, 0.5f);
    int a[DRAWS], b[DRAWS], d[DRAWS];
    sampler_config c = config(1.0f, 1.0f, 0, 0.0f);
    c.seed = 42;
    sampler *s1 = make(N, &c), *s2 = make(N, &c);
    c.seed = 43;
    sampler *s3 = make(N, &c);
    for (int i = 0; i < DRAWS; i++) {
        a[i] = sampler_choose(s1, logits, NULL, 0, NULL);
        b[i] = sampler_choose(s2, logits, NULL, 0, NULL);
        d[i] = sampler_choose(s3, logits, NULL, 0, NULL);
    }
    ck_assert(memcmp(a, b, sizeof a) == 0);
    int same = 0;
    for (int i = 0; i < DRAWS; i++)
        same += a[i] == d[i];
    ck_assert_int_lt(same, 20); /* about 1 in 100 by chance */

    /* Seed 0 works and differs from seed 1. */
    c.seed = 0;
    sampler *z = make(N, &c);
    c.seed = 1;
    sampler *o = make(N, &c);
    same = 0;
    bool all_same = true;
    int first = -1;
    for (int i = 0; i < DRAWS; i++) {
        int x = sampler_choose(z, logits, NULL, 0, NULL);
        same += x == sampler_choose(o, logits, NULL, 0, NULL);
        if (first < 0)
            first = x;
        all_same = all_same && x == first;
    }
    ck_assert_int_lt(same, 20);
    ck_assert(!all_same);
    sampler_free(z);
    sampler_free(o);

    /* configure keeps the stream unless the seed changes. */
    c.seed = 42;
    sampler *s4 = make(N, &c);
    for (int i = 0; i < DRAWS / 2; i++)
        ck_assert_int_eq(sampler_choose(s4, logits, NULL, 0, NULL), a[i]);
    sampler_configure(s4, &c);
    ck_assert_int_eq(sampler_get_config(s4)->seed, 42);
    for (int i = DRAWS / 2; i < DRAWS; i++)
        ck_assert_int_eq(sampler_choose(s4, logits, NULL, 0, NULL), a[i]);
    c.seed = 43;
    sampler_configure(s4, &c);
    for (int i = 0; i < DRAWS; i++)
        ck_assert_int_eq(sampler_choose(s4, logits, NULL, 0, NULL), d[i]);
    sampler_free(s1);
    sampler_free(s2);
    sampler_free(s3);
    sampler_free(s4);
}
END_TEST

/* Pearson's chi-square of counts against expected probabilities. */
static double chi_square(const int *count, const double *p, int n, int draws)
{
    double x2 = 0;
    for (int i = 0; i < n; i++) {
        double e = p[i] * draws;
        x2 += (count[i] - e) * (count[i] - e) / e;
    }
    return x2;
}

START_TEST(test_distribution)
{
    enum { N = 10, DRAWS = 20000 };
    float logits[N] = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f, 1.5f, -0.5f, 0.2f, 1.1f, -2.0f};
    double p[N];
    int count[N];

    /* Temperature 1 and 2, no cuts: chi-square with 9 degrees of freedom; 33.7 is its
     * 0.9999 quantile. A wrong distribution (e.g. off by one index) lands in the
     * thousands. */
    const float temps[] = {1.0f, 2.0f};
    for (int t = 0; t < 2; t++) {
        sampler_config c = config(temps[t], 1.0f, 0, 0.0f);
        c.seed = 2024;
        sampler *s = make(N, &c);
        memset(count, 0, sizeof count);
        for (int i = 0; i < DRAWS; i++)
            count[sampler_choose(s, logits, NULL, 0, NULL)]++;
        softmax_ref(logits, N, temps[t], p);
        double x2 = chi_square(count, p, N, DRAWS);
        ck_assert_msg(x2 < 33.7, "T=%g: chi-square %g", temps[t], x2);
        /* and the test can tell: the T=1 counts do not fit softmax at T=1.5 */
        double wrong[N];
        softmax_ref(logits, N, 1.5, wrong);
        ck_assert(chi_square(count, wrong, N, DRAWS) > 100);
        sampler_free(s);
    }

    /* Top-k 3: renormalised over ids 2, 5, 8 (2 dof; 18.4 = 0.9999 quantile). */
    sampler_config c = config(1.0f, 1.0f, 3, 0.0f);
    sampler *s = make(N, &c);
    memset(count, 0, sizeof count);
    for (int i = 0; i < DRAWS; i++)
        count[sampler_choose(s, logits, NULL, 0, NULL)]++;
    float top3[3] = {logits[2], logits[5], logits[8]};
    double p3[3];
    softmax_ref(top3, 3, 1.0, p3);
    int c3[3] = {count[2], count[5], count[8]};
    ck_assert_int_eq(c3[0] + c3[1] + c3[2], DRAWS);
    ck_assert_msg(chi_square(c3, p3, 3, DRAWS) < 18.4, "top-k 3 chi-square %g", chi_square(c3, p3, 3, DRAWS));
    sampler_free(s);
}
END_TEST

START_TEST(test_model_prob_and_rank)
{
    float logits[5] = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f};
    double p[5];
    softmax_ref(logits, 5, 1.0, p);
    const int ranks[5] = {4, 1, 1, 3, 5};
    for (int id = 0; id < 5; id++) {
        float prob;
        int rank;
        sampler_model_prob(logits, 5, id, &prob, &rank);
        ck_assert_int_eq(rank, ranks[id]);
        ck_assert_float_eq_tol(prob, p[id], 1e-6);
    }
    float prob;
    int rank;
    sampler_model_prob(logits, 5, 5, &prob, &rank);
    ck_assert_int_eq(rank, 0);
    ck_assert_float_eq(prob, 0.0f);

    /* The record's model view ignores temperature, cuts and the penalty. */
    sampler_config c = config(0.3f, 0.5f, 2, 0.0f);
    c.repeat_penalty = 10.0f;
    sampler *s = make(5, &c);
    int history[] = {1, 2};
    for (int i = 0; i < 50; i++) {
        sampler_record rec;
        int id = sampler_choose(s, logits, history, 2, &rec);
        ck_assert_int_eq(rec.chosen_rank, ranks[id]);
        ck_assert_float_eq_tol(rec.chosen_model_prob, p[id], 1e-6);
        ck_assert_int_eq(rec.n_penalized, 2);
        ck_assert_int_eq(id, 3); /* 3/10 = 0.3 < 2; top-k 2 keeps 3 and 0; p 0.5 keeps 3 */
        ck_assert_int_eq(rec.kept_top_k, 2);
        ck_assert_int_eq(rec.kept_top_p, 1);
    }
    sampler_free(s);
}
END_TEST

START_TEST(test_config_check)
{
    sampler_config c;
    llm_err err;
    sampler_config_default(&c);
    ck_assert_float_eq(c.temperature, 1.0f);
    ck_assert_float_eq(c.top_p, 0.9f);
    ck_assert_int_eq(c.top_k, 0);
    ck_assert_float_eq(c.min_p, 0.0f);
    ck_assert_float_eq(c.repeat_penalty, 1.0f);
    ck_assert_int_eq(c.repeat_last_n, 64);
    ck_assert_int_eq(sampler_config_check(&c, &err), LLM_OK);

#define EXPECT_BAD(stmt, option, value)                                             \
    do {                                                                            \
        sampler_config_default(&c);                                                 \
        stmt;                                                                       \
        err.text[0] = '\0';                                                         \
        ck_assert_int_eq(sampler_config_check(&c, &err), LLM_ERR_ARG);              \
        ck_assert_msg(strstr(err.text, option) && strstr(err.text, value),         \
                      "message \"%s\" lacks %s / %s", err.text, option, value);     \
        sampler *s_ = NULL;                                                         \
        ck_assert_int_eq(sampler_new(10, &c, &s_, &err), LLM_ERR_ARG);              \
        ck_assert_ptr_null(s_);                                                     \
    } while (0)

    EXPECT_BAD(c.temperature = -1.0f, "--temperature", "-1");
    EXPECT_BAD(c.temperature = NAN, "--temperature", "nan");
    EXPECT_BAD(c.temperature = INFINITY, "--temperature", "inf");
    EXPECT_BAD(c.top_p = 1.5f, "--top-p", "1.5");
    EXPECT_BAD(c.top_p = 0.0f, "--top-p", "(0, 1]");
    EXPECT_BAD(c.top_p = NAN, "--top-p", "nan");
    EXPECT_BAD(c.top_k = -2, "--top-k", "-2");
    EXPECT_BAD(c.min_p = 1.0f, "--min-p", "[0, 1)");
    EXPECT_BAD(c.min_p = -0.1f, "--min-p", "-0.1");
    EXPECT_BAD(c.repeat_penalty = 0.0f, "--repeat-penalty", "> 0");
    EXPECT_BAD(c.repeat_penalty = INFINITY, "--repeat-penalty", "inf");
    EXPECT_BAD(c.repeat_last_n = -1, "--repeat-last-n", "-1");

    /* The edges that are allowed. */
    sampler_config_default(&c);
    c.temperature = 0.0f;
    c.top_p = 1.0f;
    c.min_p = 0.0f;
    c.repeat_penalty = 0.5f;
    c.repeat_last_n = 0;
    c.top_k = 100000;
    ck_assert_int_eq(sampler_config_check(&c, &err), LLM_OK);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_limits_shapes)
{
    sampler_config c = config(1.0f, 0.9f, 0, 0.0f);
    sampler *s = NULL;
    llm_err err;
    ck_assert_int_eq(sampler_new(0, &c, &s, &err), LLM_ERR_ARG);
    ck_assert_ptr_null(s);
    sampler_free(NULL);

    /* One token: always it. */
    float one = -5.0f;
    c = config(1.0f, 0.5f, 3, 0.5f);
    s = make(1, &c);
    sampler_record rec;
    ck_assert_int_eq(sampler_choose(s, &one, NULL, 0, &rec), 0);
    ck_assert_float_eq_tol(rec.chosen_prob, 1.0f, 1e-6);
    ck_assert_float_eq_tol(rec.chosen_model_prob, 1.0f, 1e-6);
    sampler_free(s);

    /* top_k >= n_vocab is off. */
    float logits[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    c = config(1.0f, 1.0f, 4, 0.0f);
    s = make(4, &c);
    sampler_choose(s, logits, NULL, 0, &rec);
    ck_assert_int_eq(rec.kept_top_k, 4);
    sampler_free(s);

    /* A tiny temperature behaves like argmax without producing NaN. */
    c = config(1e-30f, 1.0f, 0, 0.0f);
    s = make(4, &c);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(sampler_choose(s, logits, NULL, 0, &rec), 3);
        ck_assert_float_eq_tol(rec.chosen_prob, 1.0f, 1e-6);
    }
    sampler_free(s);

    /* A huge temperature is near-uniform but still valid. */
    c = config(1e30f, 1.0f, 0, 0.0f);
    s = make(4, &c);
    int seen[4] = {0};
    for (int i = 0; i < 400; i++)
        seen[sampler_choose(s, logits, NULL, 0, &rec)]++;
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt(seen[i], 50);
    sampler_free(s);
}
END_TEST

START_TEST(test_limits_nonfinite)
{
    float logits[5] = {NAN, 1.0f, -INFINITY, 2.0f, NAN};
    float copy[5];
    memcpy(copy, logits, sizeof logits);
    sampler_config c = config(1.0f, 0.9f, 0, 0.0f);
    sampler *s = make(5, &c);
    sampler_record rec;
    for (int i = 0; i < 100; i++) {
        int id = sampler_choose(s, logits, NULL, 0, &rec);
        ck_assert(id == 1 || id == 3); /* never a NaN or -inf token */
        ck_assert(isfinite(rec.chosen_prob));
    }
    ck_assert(memcmp(logits, copy, sizeof logits) == 0);

    /* All -inf: falls back to greedy (id 0) rather than producing NaN. */
    float dead[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    ck_assert_int_eq(sampler_choose(s, dead, NULL, 0, &rec), 0);
    ck_assert(rec.greedy);
    /* +inf wins outright. */
    float hot[5] = {0.0f, INFINITY, 1.0f, NAN, 3.0f};
    ck_assert_int_eq(sampler_choose(s, hot, NULL, 0, &rec), 1);
    ck_assert_int_eq(rec.chosen_rank, 1);
    sampler_free(s);
}
END_TEST

START_TEST(test_limits_big_vocab_combined)
{
    /* Llama-2 size, everything on, a long history: sane records every step. */
    enum { N = 32000, STEPS = 200 };
    float *logits = malloc(N * sizeof *logits);
    float *copy = malloc(N * sizeof *copy);
    int *history = malloc(STEPS * sizeof *history);
    sampler_config c = config(0.8f, 0.95f, 40, 0.05f);
    c.repeat_penalty = 1.1f;
    c.seed = 77;
    sampler *s = make(N, &c);
    for (int i = 0; i < STEPS; i++) {
        fill_logits(logits, N, 1000 + i, 6.0f);
        memcpy(copy, logits, N * sizeof *copy);
        sampler_record rec;
        int id = sampler_choose(s, logits, history, i, &rec);
        history[i] = id;
        ck_assert(memcmp(logits, copy, N * sizeof *copy) == 0);
        ck_assert_int_eq(rec.kept_top_k, 40);
        ck_assert(rec.kept_top_p >= 1 && rec.kept_top_p <= 40);
        ck_assert(rec.kept_min_p >= 1 && rec.kept_min_p <= rec.kept_top_p);
        ck_assert_int_le(rec.chosen_rank, 41 + rec.n_penalized);
        ck_assert(rec.chosen_prob > 0.0f && rec.chosen_prob <= 1.0f);
        ck_assert_int_le(rec.n_penalized, i < 64 ? i : 64);
    }
    sampler_free(s);
    free(logits);
    free(copy);
    free(history);
}
END_TEST


/* Every stage keeps at least the best candidate, whatever the settings: the top-p
 * pre-filter once dropped everyone when p < 1/n (`-k 2 -p 0.4` on two near-equal
 * candidates), and temperatures that overflow the logits made NaNs that top-p and
 * min-p then rejected. Each case checks the choice is a real candidate. */
START_TEST(test_limits_every_stage_keeps_one)
{
    enum { N = 512 };
    float logits[N], flat[N];
    fill_logits(logits, N, 7, 8.0f);
    for (int i = 0; i < N; i++)
        flat[i] = 1.0f;
    int best = argmax(logits, N);
    const struct {
        float t, p, min_p;
        int k;
        const float *l;
        bool greedy_pick; /* the choice must be the argmax */
    } cases[] = {
        {1.0f, 0.4f, 0.0f, 2, logits, false},      /* p below 1/k after top-k */
        {1.0f, 1.2e-38f, 0.0f, 0, flat, false},     /* p below 1/n over a flat vocabulary */
        {1e10f, 1.2e-38f, 0.0f, 0, logits, false},  /* hot: nearly flat, tiny p */
        {1.2e-38f, 0.9f, 0.0f, 0, logits, true},    /* cold: logits / t overflow */
        {1.2e-38f, 0.9f, 0.5f, 0, logits, true},
        {1e-45f, 0.5f, 0.0f, 0, logits, true},      /* 1 / t itself overflows */
        {1e-45f, 0.5f, 0.0f, 3, logits, true},
        {1.0f, 0.001f, 0.999f, 2, flat, false},     /* ties everywhere */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sampler_config c = config(cases[k].t, cases[k].p, cases[k].k, cases[k].min_p);
        sampler *s = make(N, &c);
        for (int i = 0; i < 50; i++) {
            sampler_record rec;
            int id = sampler_choose(s, cases[k].l, NULL, 0, &rec);
            ck_assert_msg(id >= 0 && id < N, "case %zu: chose %d", k, id);
            ck_assert_int_ge(rec.kept_top_p, 1);
            ck_assert_int_ge(rec.kept_min_p, 1);
            ck_assert_msg(rec.chosen_prob > 0.0f && rec.chosen_prob <= 1.0f,
                          "case %zu: chosen_prob %g", k, rec.chosen_prob);
            if (cases[k].greedy_pick)
                ck_assert_int_eq(id, best);
            if (cases[k].k > 0 && cases[k].l == logits)
                ck_assert_int_le(rec.chosen_rank, cases[k].k);
        }
        sampler_free(s);
    }
}
END_TEST

/* The top-k selection the records and the TUI use (moved here from test_tui_format). */
START_TEST(test_top_k_indices)
{
    float v[] = {0.1f, 0.5f, 0.05f, 0.5f, 0.3f};
    int out[5];
    ck_assert_int_eq(sampler_top_k(v, 5, 3, out), 3);
    ck_assert_int_eq(out[0], 1); /* ties: the lower index first */
    ck_assert_int_eq(out[1], 3);
    ck_assert_int_eq(out[2], 4);
    ck_assert_int_eq(sampler_top_k(v, 2, 3, out), 2);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 0);
    ck_assert_int_eq(sampler_top_k(v, 5, 0, out), 0);
    ck_assert_int_eq(sampler_top_k(v, 0, 3, out), 0);
}
END_TEST

START_TEST(test_rank)
{
    float v[] = {0.1f, 0.5f, 0.05f, 0.5f, 0.3f};
    ck_assert_int_eq(sampler_rank(v, 5, 1), 1);
    ck_assert_int_eq(sampler_rank(v, 5, 3), 1); /* ties share the rank */
    ck_assert_int_eq(sampler_rank(v, 5, 4), 3);
    ck_assert_int_eq(sampler_rank(v, 5, 2), 5);
}
END_TEST

/* The final probability sampler_fate gives id. */
static float s_final_of(const sampler *s, int id)
{
    sampler_cut cut;
    float pf;
    sampler_fate(s, id, &cut, &pf);
    return pf;
}

/* sampler_fate accounts for every id: the cut counts match the record's kept_*
 * counts, the final probabilities sum to 1 and follow softmax(penalised / t) among
 * the kept, the chosen id is kept with chosen_prob, and a stage only removes ids that
 * rank below every id it kept. */
START_TEST(test_fate)
{
    enum { N = 300 };
    float logits[N];
    fill_logits(logits, N, 11, 6.0f);
    int history[] = {3, 17, 17, 250, 42};
    const struct {
        float t, p, min_p, penalty;
        int k;
    } cases[] = {
        {1.0f, 0.9f, 0.0f, 1.0f, 0},   {0.7f, 0.8f, 0.05f, 1.3f, 40},
        {1.5f, 1.0f, 0.0f, 1.0f, 10},  {1.0f, 1.0f, 0.2f, 1.0f, 0},
        {0.5f, 0.5f, 0.1f, 1.1f, 100}, {1.0f, 1.0f, 0.0f, 1.0f, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sampler_config c = config(cases[k].t, cases[k].p, cases[k].k, cases[k].min_p);
        c.repeat_penalty = cases[k].penalty;
        sampler *s = make(N, &c);
        for (int round = 0; round < 20; round++) {
            sampler_record rec;
            int id = sampler_choose(s, logits, history, 5, &rec);
            float pen[N];
            for (int i = 0; i < N; i++) {
                pen[i] = logits[i];
                for (int h = 0; h < 5 && c.repeat_penalty != 1.0f; h++)
                    if (history[h] == i) {
                        pen[i] = logits[i] > 0 ? logits[i] / c.repeat_penalty
                                               : logits[i] * c.repeat_penalty;
                        break;
                    }
            }
            int count[5] = {0};
            double sum = 0.0;
            float worst_kept[5], best_cut[5];
            for (int j = 0; j < 5; j++) {
                worst_kept[j] = INFINITY;
                best_cut[j] = -INFINITY;
            }
            int kept_ref = -1;
            for (int i = 0; i < N; i++) {
                sampler_cut cut;
                float pf;
                sampler_fate(s, i, &cut, &pf);
                count[cut]++;
                sum += pf;
                if (cut == SAMPLER_KEPT) {
                    check_each(pf > 0.0f, "case %zu id %d: kept with p %g", k, i, pf);
                    if (kept_ref < 0)
                        kept_ref = i;
                    /* p_final ratios follow the tempered penalised logits */
                    double want = exp((pen[i] - pen[kept_ref]) / c.temperature);
                    double got = pf / (double)s_final_of(s, kept_ref);
                    check_each(fabs(got - want) <= 1e-3 * want, "case %zu id %d: %g vs %g", k, i,
                               got, want);
                } else {
                    check_each(pf == 0.0f, "case %zu id %d: cut with p %g", k, i, pf);
                }
                for (int j = SAMPLER_CUT_TOP_K; j <= SAMPLER_CUT_MIN_P; j++) {
                    bool survived = cut == SAMPLER_KEPT || (int)cut > j;
                    if ((int)cut == j && pen[i] > best_cut[j])
                        best_cut[j] = pen[i];
                    if (survived && pen[i] < worst_kept[j])
                        worst_kept[j] = pen[i];
                }
            }
            ck_assert_int_eq(count[SAMPLER_KEPT], rec.kept_min_p);
            ck_assert_int_eq(count[SAMPLER_CUT_TOP_K], N - rec.kept_top_k);
            ck_assert_int_eq(count[SAMPLER_CUT_TOP_P], rec.kept_top_k - rec.kept_top_p);
            ck_assert_int_eq(count[SAMPLER_CUT_MIN_P], rec.kept_top_p - rec.kept_min_p);
            ck_assert_int_eq(count[SAMPLER_CUT_GREEDY], 0);
            ck_assert_msg(fabs(sum - 1.0) < 1e-4, "case %zu: p_final sums to %g", k, sum);
            for (int j = SAMPLER_CUT_TOP_K; j <= SAMPLER_CUT_MIN_P; j++)
                ck_assert_msg(best_cut[j] <= worst_kept[j], "case %zu: %s cut %g above %g", k,
                              sampler_cut_name(j), best_cut[j], worst_kept[j]);
            sampler_cut cut;
            float pf;
            sampler_fate(s, id, &cut, &pf);
            ck_assert_int_eq(cut, SAMPLER_KEPT);
            ck_assert_float_eq_tol(pf, rec.chosen_prob, 1e-6);
        }
        sampler_free(s);
    }
    /* greedy: only the argmax is kept, with probability 1 */
    sampler_config c = config(0.0f, 0.9f, 0, 0.0f);
    sampler *s = make(N, &c);
    int id = sampler_choose(s, logits, NULL, 0, NULL);
    for (int i = 0; i < N; i++) {
        sampler_cut cut;
        float pf;
        sampler_fate(s, i, &cut, &pf);
        ck_assert_int_eq(cut, i == id ? SAMPLER_KEPT : SAMPLER_CUT_GREEDY);
        ck_assert(pf == (i == id ? 1.0f : 0.0f));
    }
    ck_assert_str_eq(sampler_cut_name(SAMPLER_CUT_TOP_P), "top-p");
    sampler_free(s);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_logits_unchanged);
    tcase_add_test(core, test_greedy);
    tcase_add_test(core, test_top_k_indices);
    tcase_add_test(core, test_rank);
    tcase_add_test(core, test_top_k_one_is_argmax);
    tcase_add_test(core, test_top_p_crafted);
    tcase_add_test(core, test_top_p_matches_reference);
    tcase_add_test(core, test_min_p);
    tcase_add_test(core, test_top_k_with_min_p_and_cold_temperature);
    tcase_add_test(core, test_repeat_penalty);
    tcase_add_test(core, test_seeds);
    tcase_add_test(core, test_distribution);
    tcase_add_test(core, test_model_prob_and_rank);
    tcase_add_test(core, test_config_check);
    tcase_add_test(core, test_fate);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_limits_shapes);
    tcase_add_test(limits, test_limits_nonfinite);
    tcase_add_test(limits, test_limits_every_stage_keeps_one);
    tcase_add_test(limits, test_limits_big_vocab_combined);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
