/* delta_net.c — one Gated DeltaNet head: the recurrence a token at a time, the chunked
 * form, and the effective attention (see delta_net.h for the rule).
 *
 * The chunked form: within a chunk starting from state S0, with G_i the log-decays
 * summed from the chunk's first token to token i,
 *     u_i = beta_i (v_i - e^{G_i} S0^T k_i - sum_{j<i} e^{G_i - G_j} (k_j . k_i) u_j)
 *     o_i = e^{G_i} S0^T q_i + sum_{j<=i} e^{G_i - G_j} (k_j . q_i) u_j
 *     S   = e^{G_last} S0 + sum_j e^{G_last - G_j} k_j u_j^T
 * (the first line is the forward substitution of llama.cpp's triangular solve). It is
 * the recurrence with the state's history written out, so the two differ by rounding
 * only. A chunk ends early after a token whose log-decay is steep (STEEP_DECAY), so no
 * sum G of a token after it has to hold it.
 *
 * The effective attention: a token's step is S_s = P_s S_{s-1} + beta_s k_s v_s^T with
 * P_s = e^{g_s} (I - beta_s k_s k_s^T) (symmetric), so token t's output
 * S_t^T q_t = sum_s beta_s (k_s . m_s) v_s with m_t = q_t, m_{s-1} = P_s m_s: one walk
 * back from t. */
#include "delta_net.h"

#include <math.h>
#include <string.h>

static float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* out (dv) = S^T x (x: dk), times f */
static void state_times(const float *state, const float *x, float f, int dk, int dv, float *out)
{
    memset(out, 0, sizeof(float) * (size_t)dv);
    for (int a = 0; a < dk; a++) {
        float xa = x[a] * f;
        const float *row = state + (size_t)a * dv;
        for (int j = 0; j < dv; j++)
            out[j] += xa * row[j];
    }
}

/* row = row * f, then acc += x * row, over n values (a pass of the step), 8 at a time
 * through buffers in loops of a fixed count, which the compiler makes vectors of at -O2:
 * each value's arithmetic in its own order, the bits of the plain loop. */
static void decay_pass(float *row, float f, float x, float *acc, int n)
{
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        float t[8], a[8];
        for (int e = 0; e < 8; e++)
            t[e] = row[j + e] * f;
        for (int e = 0; e < 8; e++)
            a[e] = acc[j + e] + x * t[e];
        for (int e = 0; e < 8; e++) {
            row[j + e] = t[e];
            acc[j + e] = a[e];
        }
    }
    for (; j < n; j++) {
        row[j] *= f;
        acc[j] += x * row[j];
    }
}

/* row = row + c * add, then acc += x * row, over n values, the same way. */
static void update_pass(float *row, float c, const float *add, float x, float *acc, int n)
{
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        float t[8], a[8];
        for (int e = 0; e < 8; e++)
            t[e] = row[j + e] + c * add[j + e];
        for (int e = 0; e < 8; e++)
            a[e] = acc[j + e] + x * t[e];
        for (int e = 0; e < 8; e++) {
            row[j + e] = t[e];
            acc[j + e] = a[e];
        }
    }
    for (; j < n; j++) {
        row[j] += c * add[j];
        acc[j] += x * row[j];
    }
}

/* The step in two passes over the state, each row decayed (or updated) and then added
 * into its product with k (or q) while it is in the cache: the arithmetic, and so the
 * bits, of decaying all of S, then S^T k, then the update, then S^T q. */
void delta_net_step(const delta_net_run *r, int s, float *state, float *out)
{
    const int dk = r->dk, dv = r->dv;
    const float *q = r->q + (size_t)s * r->qk_stride, *k = r->k + (size_t)s * r->qk_stride;
    const float *v = r->v + (size_t)s * r->v_stride;
    float decay = expf(r->g[(size_t)s * r->gb_stride]), beta = r->beta[(size_t)s * r->gb_stride];
    float u[DELTA_NET_DV_MAX], o[DELTA_NET_DV_MAX];
    for (int j = 0; j < dv; j++)
        u[j] = 0.0f;
    for (int a = 0; a < dk; a++) /* S <- e^g S; u = S^T k */
        decay_pass(state + (size_t)a * dv, decay, k[a], u, dv);
    for (int j = 0; j < dv; j++) {
        u[j] = beta * (v[j] - u[j]);
        o[j] = 0.0f;
    }
    for (int a = 0; a < dk; a++) /* S <- S + k u^T; o = S^T q */
        update_pass(state + (size_t)a * dv, k[a], u, q[a] * r->scale, o, dv);
    memcpy(out, o, sizeof(float) * (size_t)dv);
}

size_t delta_net_chunk_work(const delta_net_run *r)
{
    return DELTA_NET_CHUNK + (size_t)DELTA_NET_CHUNK * r->dv + (size_t)r->dv;
}

/* Tokens c0..c0+n-1 (n <= DELTA_NET_CHUNK) from state, as the top says. */
static void one_chunk(const delta_net_run *r, int c0, int n, float *state, float *out,
                      size_t out_stride, float *work)
{
    const int dk = r->dk, dv = r->dv;
    float *G = work, *U = work + DELTA_NET_CHUNK, *t = U + (size_t)DELTA_NET_CHUNK * dv;
    float sum = 0.0f;
    for (int i = 0; i < n; i++)
        G[i] = sum += r->g[(size_t)(c0 + i) * r->gb_stride];
#define K_(i) (r->k + (size_t)(c0 + (i)) * r->qk_stride)
#define Q_(i) (r->q + (size_t)(c0 + (i)) * r->qk_stride)
    for (int i = 0; i < n; i++) { /* the new values u_i */
        float *u = U + (size_t)i * dv, beta = r->beta[(size_t)(c0 + i) * r->gb_stride];
        const float *v = r->v + (size_t)(c0 + i) * r->v_stride;
        state_times(state, K_(i), expf(G[i]), dk, dv, u);
        for (int j = 0; j < i; j++) {
            float c = expf(G[i] - G[j]) * dot(K_(j), K_(i), dk);
            const float *uj = U + (size_t)j * dv;
            for (int e = 0; e < dv; e++)
                u[e] += c * uj[e];
        }
        for (int e = 0; e < dv; e++)
            u[e] = beta * (v[e] - u[e]);
    }
    for (int i = 0; i < n; i++) { /* the outputs */
        float *o = out + (size_t)(c0 + i) * out_stride;
        state_times(state, Q_(i), expf(G[i]) * r->scale, dk, dv, o);
        for (int j = 0; j <= i; j++) {
            float c = expf(G[i] - G[j]) * dot(K_(j), Q_(i), dk) * r->scale;
            const float *uj = U + (size_t)j * dv;
            for (int e = 0; e < dv; e++)
                o[e] += c * uj[e];
        }
    }
    float last = G[n - 1], keep = expf(last); /* the state after the chunk */
    for (size_t i = 0; i < (size_t)dk * dv; i++)
        state[i] *= keep;
    for (int j = 0; j < n; j++) {
        const float *k = K_(j), *uj = U + (size_t)j * dv;
        float c = expf(last - G[j]);
        for (int e = 0; e < dv; e++)
            t[e] = c * uj[e];
        for (int a = 0; a < dk; a++) {
            float *row = state + (size_t)a * dv;
            for (int e = 0; e < dv; e++)
                row[e] += k[a] * t[e];
        }
    }
#undef K_
#undef Q_
}

/* A log-decay below this ends its chunk: it is summed into G last, so the others' sums
 * keep their precision (a knocked-out head's -1e30 would swallow them). */
#define STEEP_DECAY (-64.0f)

void delta_net_chunk(const delta_net_run *r, int n, float *state, float *out, size_t out_stride,
                     float *work)
{
    for (int c0 = 0; c0 < n;) {
        int len = 0;
        while (c0 + len < n && len < DELTA_NET_CHUNK &&
               !(len > 0 && r->g[(size_t)(c0 + len - 1) * r->gb_stride] < STEEP_DECAY))
            len++;
        one_chunk(r, c0, len, state, out, out_stride, work);
        c0 += len;
    }
}

void delta_net_effective(const delta_net_run *r, int t, float *weight, float *m)
{
    delta_net_effective_of(r, t, r->q + (size_t)t * r->qk_stride, weight, m);
}

void delta_net_effective_of(const delta_net_run *r, int t, const float *q, float *weight,
                            float *m)
{
    const int dk = r->dk;
    for (int a = 0; a < dk; a++)
        m[a] = q[a] * r->scale;
    for (int s = t; s >= 0; s--) {
        const float *k = r->k + (size_t)s * r->qk_stride;
        float beta = r->beta[(size_t)s * r->gb_stride], km = dot(k, m, dk);
        weight[s] = beta * km;
        float decay = expf(r->g[(size_t)s * r->gb_stride]);
        for (int a = 0; a < dk; a++)
            m[a] = decay * (m[a] - beta * km * k[a]);
    }
}
