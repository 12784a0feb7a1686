/* transformer.h — the Llama 2 forward pass: RMSNorm, RoPE, grouped-query attention
 * with a KV cache, SwiGLU feed-forward, classifier.
 *
 * Owns the activation buffers and the KV cache for one sequence of up to ctx_len
 * positions. Borrows the model (which must outlive it). Matmuls go through quant.h
 * and run on OpenMP threads; attention is parallel over heads. Optionally writes the
 * softmaxed attention row of every layer and head for each query position. */
#ifndef LLMCHAT_TRANSFORMER_H
#define LLMCHAT_TRANSFORMER_H

#include "model.h"
#include "status.h"

typedef struct transformer transformer;

/* ctx_len 0 means the model's seq_len; larger than seq_len is an error. */
llm_status transformer_new(const model *m, int ctx_len, transformer **out, llm_err *err);
void transformer_free(transformer *t); /* NULL does nothing */

int transformer_ctx(const transformer *t);
const model *transformer_model(const transformer *t);

/* Runs `token` at position pos (0 <= pos < ctx), reading the KV cache for 0..pos-1
 * and writing it at pos. Returns the logits (vocab_size), valid until the next
 * forward call. attn, when not NULL, receives the attention weights of this query:
 * (n_layers, n_heads, pos + 1) floats, densely packed. */
const float *transformer_forward(transformer *t, int token, int pos, float *attn);

/* Runs n tokens at positions pos..pos+n-1 as one batch (matrix-matrix kernels).
 * logits, when not NULL, receives (n, vocab_size): the logits of every position;
 * the returned pointer is always the logits of the last position (valid until the
 * next forward call). attn, when not NULL, is an array of n pointers; attn[i], when
 * not NULL, receives (n_layers, n_heads, pos + i + 1) floats for query pos + i.
 * Results equal n calls of transformer_forward up to float rounding. */
const float *transformer_forward_batch(transformer *t, const int *tokens, int n, int pos,
                                       float *logits, float *const *attn);

#endif
