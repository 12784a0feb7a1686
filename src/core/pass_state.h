/* pass_state.h — the buffers the forward pass works in, and what it does with them that
 * is not a step of its own: making and sizing them (transformer.c, at _new and before a
 * batch), the quantized inputs of the matrices, the KV cache's rows, the attention
 * scratch per thread, the kept classifier inputs and the logits computed from them.
 *
 * transformer.c makes and frees the state through these calls and forward.c works in
 * it; neither calls the other back. The state itself is the transformer's struct
 * (transformer_internal.h). Private to src/core's transformer files. */
#ifndef LLMCHAT_PASS_STATE_H
#define LLMCHAT_PASS_STATE_H

#include "transformer_internal.h"

/* ---- the buffers ---- */

/* Positions per batch chunk for this shape and context (see CHUNK_BUDGET). */
int pass_chunk_positions(const model_config *p, int ctx);
/* Makes the batch buffers hold cap positions; false (the old ones kept) when out of
 * memory. */
bool pass_buffers_reserve(transformer *t, int cap);
void pass_buffers_free(batch_buffers *b, int n_qb);

/* ---- quantized inputs ---- */

/* Registers the (cols, group) of a Q8_0 weight; false when out of room or memory. */
bool qbatch_register(transformer *t, const tensor *w);
/* The batch qbatch for vectors of len values quantized with group, or NULL. */
qbatch *qbatch_for(transformer *t, int len, int group);
/* One lane per thread the one-token path may use (the OpenMP thread count, at least
 * 1), each with its scratch in t->ws: how many there are; on failure the old lanes stay
 * and fewer threads are used. */
int lanes_reserve(transformer *t);
void lanes_free(transformer *t);
/* Lane ln's quantized copy of x for weight w (NULL for F32 weights). */
const qbatch *lane_input(const transformer *t, const struct lane *ln, const tensor *w);
/* Quantizes x (len values) into each of the lane's qbatches for that length. */
void lane_quantize(const transformer *t, struct lane *ln, const float *x, int len);

/* ---- the KV cache and attention's scratch ---- */

/* Where (layer l, KV head kh, position p) is in the cache layer l reads (its own or
 * the one it shares, model_layer.kv_layer): its Q8_0 row (the index of its scale in
 * ks, vs), the row's first value in kq, vq, and its first value in the F32
 * key_cache, value_cache. */
size_t q8_row(const transformer *t, int l, int kh, int p);
size_t q8_at(const transformer *t, int l, int kh, int p);
size_t cache_f32_at(const transformer *t, int l, int kh, int p);
/* Stores the rotated key k and the value v (the layer's head_size each) of KV head kh
 * at position pos of layer l. */
void cache_store(transformer *t, int l, int pos, int kh, const float *k, const float *v);
/* Threads that may run attention: one scratch row of t->att and a scratch of t->ws
 * each, grown to the OpenMP thread count; if that fails, fewer threads are used. */
int attention_threads(transformer *t);

/* ---- the classifier ---- */

/* Positions pos..pos+n-1 of the kept classifier inputs, as the classifier reads them:
 * *xq a view of t->cls_q's vectors (Q8_0), or *x of t->cls_f's rows (F32). */
void classifier_input(const transformer *t, int pos, qbatch *xq, const float **x);
/* Keeps the classifier inputs xn (n, dim): the final normed states of positions
 * pos..pos+n-1. */
void classifier_keep(transformer *t, int pos, int n, const float *xn);
/* logits (n, vocab) of positions pos..pos+n-1 from their kept inputs, soft-capped where
 * the model caps them: the only place the final soft-cap is applied. False when out of
 * memory for the kernels' scratch (logits undefined). */
bool classifier_logits(transformer *t, int pos, int n, float *logits);
/* The same for n normed rows xn (n, dim) that are not kept (the logit lens): quantized
 * as the kept inputs are, so that a row equal to a position's gives its bits. */
bool classifier_logit_rows(const transformer *t, const float *xn, int n, float *logits);

/* x = cap · tanh(x / cap), n values. */
void pass_softcap(float *x, int n, float cap);

#endif
