/* delta_net.h — one Gated DeltaNet head (Qwen 3.5's linear attention, the gated delta
 * rule as llama.cpp 0.4.0's delta-net-base.cpp computes it), three ways that agree:
 *
 * - delta_net_step: one token, the state updated in place (decode);
 * - delta_net_chunk: many tokens, up to 64 at a time in the chunked form: within a
 *   chunk the new values come from one triangular solve against the chunk's keys and
 *   the state only enters through products with the chunk's queries and keys, so the
 *   work is matrix products; equal to delta_net_step token by token within fp32
 *   rounding;
 * - delta_net_effective: the effective attention of a position, how much each earlier
 *   token's value contributes to its output through the state (exact: the output is
 *   linear in the values).
 *
 * The recurrence, for token t with key k, value v, query q (scaled by `scale`), log-decay
 * g (<= 0 in real models) and write strength beta, the state S a dk x dv matrix that
 * maps keys to values (S[i * dv + j]):
 *     S <- exp(g) S
 *     u  = beta (v - S^T k)              the part of v the state does not yet predict
 *     S <- S + k u^T
 *     o  = S^T q
 * Queries and keys arrive L2-normalised by the caller (the model's pass does that).
 * A head's inputs are a run of tokens (delta_net_run: each token's q, k at qk_stride
 * floats from the previous one, v at v_stride, g and beta at gb_stride), so a pass can
 * hand its per-token vectors as they lie. No allocation but the caller's work space;
 * no printing. */
#ifndef LLMCHAT_DELTA_NET_H
#define LLMCHAT_DELTA_NET_H

#include <stddef.h>

/* The tokens the chunked form takes at once (llama.cpp's chunk size); the most values
 * of a head's value (delta_net_step's work space). */
enum { DELTA_NET_CHUNK = 64, DELTA_NET_DV_MAX = 1024 };

typedef struct {
    const float *q, *k; /* token s: q + s * qk_stride, k + s * qk_stride (dk each) */
    const float *v;     /* token s: v + s * v_stride (dv) */
    const float *g;     /* token s: g[s * gb_stride], the log-decay */
    const float *beta;  /* token s: beta[s * gb_stride] */
    size_t qk_stride, v_stride, gb_stride;
    int dk, dv;
    float scale; /* applied to q (1/sqrt(dk) in llama.cpp) */
} delta_net_run;

/* Token s of run r: state (dk * dv) updated in place; out (dv) its output. */
void delta_net_step(const delta_net_run *r, int s, float *state, float *out);

/* Floats of work space delta_net_chunk needs for r's sizes. */
size_t delta_net_chunk_work(const delta_net_run *r);

/* Tokens 0..n-1 of r from state (updated in place to the state after token n - 1);
 * token s's output at out + s * out_stride (dv floats). work: delta_net_chunk_work(r)
 * floats. */
void delta_net_chunk(const delta_net_run *r, int n, float *state, float *out, size_t out_stride,
                     float *work);

/* The effective attention of token t of r from a zero state before token 0: weight[s]
 * (s = 0..t) such that token t's output is the sum over s of weight[s] times v_s. The
 * contribution of a state carried in from before token 0 is not a token's and is left
 * out. m: dk floats of work space. Cost O(t * dk). */
void delta_net_effective(const delta_net_run *r, int t, float *weight, float *m);

/* The same for the query q (dk, not yet scaled) given apart from r's: r's q is not read
 * (a pass keeps each token's keys, decays and strengths, not its queries). */
void delta_net_effective_of(const delta_net_run *r, int t, const float *q, float *weight,
                            float *m);

#endif
