/* test_delta_net.c — one Gated DeltaNet head (delta_net.h) against a float64 recurrence
 * written here from the rule (S <- e^g S; u = beta (v - S^T k); S <- S + k u^T;
 * o = S^T q scale), on random heads (unit q and k, g in [-2, 0], beta in (0, 1), a
 * state carried in):
 * - delta_net_step and delta_net_chunk (runs of 1 to 200 tokens: inside one chunk, at
 *   its edge, across several) both give the reference's outputs and final state within
 *   fp32 rounding, and each other's;
 * - delta_net_effective's weights, from a zero state, rebuild each output from the
 *   values (the output is linear in them), and equal the reference's finite
 *   differences: moving one value of token s by h moves token t's output by
 *   weight[s] * h in that coordinate and nowhere else;
 * - a span of tokens with beta 0 and the knock-out's emptying log-decay leaves the state
 *   empty in every form, with no value that is not finite. */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "delta_net.h"
#include "knock_out.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct {
    int n, dk, dv;
    float *q, *k, *v, *g, *beta, *state0;
    delta_net_run run;
} head;

static void unit(float *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] / sqrt(s));
}

/* A random head of n tokens; q and k interleaved with another head's (qk_stride 2 dk)
 * as a pass lays them out. */
static head random_head(int n, int dk, int dv, bool carried_state)
{
    head h = {.n = n, .dk = dk, .dv = dv};
    h.q = calloc((size_t)n * 2 * dk, sizeof(float));
    h.k = calloc((size_t)n * 2 * dk, sizeof(float));
    h.v = calloc((size_t)n * dv, sizeof(float));
    h.g = calloc((size_t)n, sizeof(float));
    h.beta = calloc((size_t)n, sizeof(float));
    h.state0 = calloc((size_t)dk * dv, sizeof(float));
    for (int s = 0; s < n; s++) {
        for (int a = 0; a < 2 * dk; a++) {
            h.q[(size_t)s * 2 * dk + a] = (float)(uniform() * 2 - 1);
            h.k[(size_t)s * 2 * dk + a] = (float)(uniform() * 2 - 1);
        }
        unit(h.q + (size_t)s * 2 * dk, dk);
        unit(h.k + (size_t)s * 2 * dk, dk);
        for (int j = 0; j < dv; j++)
            h.v[(size_t)s * dv + j] = (float)(uniform() * 4 - 2);
        h.g[s] = (float)(-2 * uniform() * uniform()); /* mostly slow decay, some fast */
        h.beta[s] = (float)(1 / (1 + exp(-(uniform() * 8 - 4))));
    }
    for (int i = 0; carried_state && i < dk * dv; i++)
        h.state0[i] = (float)(uniform() - 0.5);
    h.run = (delta_net_run){.q = h.q, .k = h.k, .v = h.v, .g = h.g, .beta = h.beta,
                            .qk_stride = (size_t)2 * dk, .v_stride = (size_t)dv, .gb_stride = 1,
                            .dk = dk, .dv = dv, .scale = (float)(1 / sqrt(dk))};
    return h;
}

static void free_head(head *h)
{
    free(h->q), free(h->k), free(h->v), free(h->g), free(h->beta), free(h->state0);
}

/* The rule in float64: outputs (n * dv) and the final state (dk * dv), with token
 * `moved`'s value coordinate `coord` moved by `by` (moved < 0: none). */
static void reference(const head *h, int moved, int coord, double by, double *out, double *state)
{
    const int dk = h->dk, dv = h->dv;
    double *u = malloc(sizeof(double) * dv);
    for (int i = 0; i < dk * dv; i++)
        state[i] = h->state0[i];
    for (int s = 0; s < h->n; s++) {
        const float *q = h->q + (size_t)s * 2 * dk, *k = h->k + (size_t)s * 2 * dk;
        double decay = exp((double)h->g[s]);
        for (int i = 0; i < dk * dv; i++)
            state[i] *= decay;
        for (int j = 0; j < dv; j++) {
            double sk = 0, v = h->v[(size_t)s * dv + j] + (s == moved && j == coord ? by : 0);
            for (int a = 0; a < dk; a++)
                sk += state[a * dv + j] * k[a];
            u[j] = h->beta[s] * (v - sk);
        }
        for (int a = 0; a < dk; a++)
            for (int j = 0; j < dv; j++)
                state[a * dv + j] += k[a] * u[j];
        for (int j = 0; j < dv; j++) {
            double o = 0;
            for (int a = 0; a < dk; a++)
                o += state[a * dv + j] * q[a] / sqrt(dk);
            out[(size_t)s * dv + j] = o;
        }
    }
    free(u);
}

/* |got - want| within fp32 rounding of a sum of about dk * n terms of size `size` */
static void near(double got, double want, double size, const char *what, int i)
{
    ck_assert_msg(fabs(got - want) <= 2e-5 * size, "%s[%d]: %.9g, reference %.9g", what, i, got,
                  want);
}

START_TEST(test_step_and_chunk_equal_the_rule)
{
    static const int ns[] = {1, 5, 63, 64, 65, 200};
    static const int dims[][2] = {{16, 16}, {32, 24}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
            int n = ns[c], dk = dims[d][0], dv = dims[d][1];
            head h = random_head(n, dk, dv, true);
            double *want = malloc(sizeof(double) * n * dv), *want_state = malloc(sizeof(double) * dk * dv);
            reference(&h, -1, 0, 0, want, want_state);
            float *s1 = malloc(sizeof(float) * dk * dv), *s2 = malloc(sizeof(float) * dk * dv);
            memcpy(s1, h.state0, sizeof(float) * dk * dv);
            memcpy(s2, h.state0, sizeof(float) * dk * dv);
            float *o1 = malloc(sizeof(float) * n * dv), *o2 = malloc(sizeof(float) * n * (dv + 3));
            for (int s = 0; s < n; s++)
                delta_net_step(&h.run, s, s1, o1 + (size_t)s * dv);
            float *work = malloc(sizeof(float) * delta_net_chunk_work(&h.run));
            delta_net_chunk(&h.run, n, s2, o2, (size_t)dv + 3, work);
            double size = 0;
            for (int i = 0; i < n * dv; i++)
                size = fmax(size, fabs(want[i]));
            for (int i = 0; i < dk * dv; i++)
                size = fmax(size, fabs(want_state[i]));
            size += 1;
            for (int s = 0; s < n; s++)
                for (int j = 0; j < dv; j++) {
                    near(o1[s * dv + j], want[s * dv + j], size, "step output", s * dv + j);
                    near(o2[s * (dv + 3) + j], want[s * dv + j], size, "chunk output", s * dv + j);
                    near(o2[s * (dv + 3) + j], o1[s * dv + j], size, "chunk vs step", s * dv + j);
                }
            for (int i = 0; i < dk * dv; i++) {
                near(s1[i], want_state[i], size, "step state", i);
                near(s2[i], want_state[i], size, "chunk state", i);
            }
            free(want), free(want_state), free(s1), free(s2), free(o1), free(o2), free(work);
            free_head(&h);
        }
}
END_TEST

START_TEST(test_effective_attention)
{
    const int n = 90, dk = 16, dv = 8;
    head h = random_head(n, dk, dv, false);
    double *base = malloc(sizeof(double) * n * dv), *moved = malloc(sizeof(double) * n * dv);
    double *state = malloc(sizeof(double) * dk * dv);
    reference(&h, -1, 0, 0, base, state);
    float *w = malloc(sizeof(float) * n), *m = malloc(sizeof(float) * dk);
    int checked = 0;
    for (int t = 0; t < n; t += 7) {
        delta_net_effective(&h.run, t, w, m);
        for (int j = 0; j < dv; j++) { /* the weights rebuild the output */
            double sum = 0, size = 1;
            for (int s = 0; s <= t; s++)
                sum += (double)w[s] * h.v[s * dv + j], size += fabs((double)w[s] * h.v[s * dv + j]);
            near(sum, base[t * dv + j], size, "rebuilt output", t * dv + j);
        }
        for (int s = 0; s <= t; s += 3) { /* finite differences, one coordinate moved */
            const double by = 1e-3;
            int coord = (s + t) % dv;
            reference(&h, s, coord, by, moved, state);
            for (int j = 0; j < dv; j++) {
                double slope = (moved[t * dv + j] - base[t * dv + j]) / by;
                double want = j == coord ? w[s] : 0.0;
                ck_assert_msg(fabs(slope - want) <= 1e-5 + 1e-4 * fabs(want),
                              "t %d s %d coordinate %d: the output moves %.9g per unit, weight %.9g",
                              t, s, j, slope, want);
            }
            checked++;
        }
    }
    ck_assert_int_gt(checked, 100);
    free(base), free(moved), free(state), free(w), free(m);
    free_head(&h);
}
END_TEST

/* A head knocked out with its state reset (knock_out.h: beta 0 and the log-decay
 * KNOCK_OUT_EMPTY_GATE over a span of tokens, here across a chunk's edge): step and
 * chunk give a zero state and zero outputs over the span, nothing not finite, and after
 * it the outputs of the same head started from a zero state at the span's end; the
 * effective attention gives the tokens before the span's end 0. */
START_TEST(test_emptied_span)
{
    enum { N = 100, A = 50, B = 70, DK = 16, DV = 16 };
    head h = random_head(N, DK, DV, true);
    for (int s = A; s < B; s++) {
        h.g[s] = KNOCK_OUT_EMPTY_GATE;
        h.beta[s] = 0.0f;
    }
    head after = random_head(N - B, DK, DV, false); /* tokens B.. from a zero state */
    memcpy(after.q, h.q + (size_t)B * 2 * DK, sizeof(float) * (N - B) * 2 * DK);
    memcpy(after.k, h.k + (size_t)B * 2 * DK, sizeof(float) * (N - B) * 2 * DK);
    memcpy(after.v, h.v + (size_t)B * DV, sizeof(float) * (N - B) * DV);
    memcpy(after.g, h.g + B, sizeof(float) * (N - B));
    memcpy(after.beta, h.beta + B, sizeof(float) * (N - B));
    double *want = malloc(sizeof(double) * (N - B) * DV), *want_state = malloc(sizeof(double) * DK * DV);
    reference(&after, -1, 0, 0, want, want_state);
    float s1[DK * DV], s2[DK * DV], o1[N * DV], o2[N * DV], w[N], m[DK];
    memcpy(s1, h.state0, sizeof s1);
    memcpy(s2, h.state0, sizeof s2);
    float *work = malloc(sizeof(float) * delta_net_chunk_work(&h.run));
    for (int s = 0; s < N; s++) {
        delta_net_step(&h.run, s, s1, o1 + (size_t)s * DV);
        if (s == A)
            for (int i = 0; i < DK * DV; i++)
                ck_assert_msg(s1[i] == 0.0f, "the state at the span's start: %g", s1[i]);
    }
    delta_net_chunk(&h.run, N, s2, o2, DV, work);
    for (int s = 0; s < N; s++)
        for (int j = 0; j < DV; j++) {
            float a = o1[s * DV + j], b = o2[s * DV + j];
            ck_assert(isfinite(a) && isfinite(b));
            if (s >= A && s < B)
                ck_assert_msg(a == 0.0f && b == 0.0f, "token %d: %g %g", s, a, b);
            if (s >= B) {
                near(a, want[(s - B) * DV + j], 4, "step after the span", s * DV + j);
                near(b, want[(s - B) * DV + j], 4, "chunk after the span", s * DV + j);
            }
        }
    for (int t = B; t < N; t += 7) {
        delta_net_effective(&h.run, t, w, m);
        for (int s = 0; s < B; s++)
            ck_assert_msg(w[s] == 0.0f, "token %d gives %d weight %g", t, s, w[s]);
    }
    free(want), free(want_state), free(work);
    free_head(&h), free_head(&after);
}
END_TEST

static Suite *delta_net_suite(void)
{
    Suite *s = suite_create("delta_net");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_step_and_chunk_equal_the_rule);
    tcase_add_test(core, test_effective_attention);
    tcase_add_test(core, test_emptied_span);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(delta_net_suite)
