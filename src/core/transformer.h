/* transformer.h — running a model: the forward pass (forward.c) over a KV cache (fp32
 * or int8) for one token or a batch, and the debugger's what-ifs over it.
 *
 * Owns the activation buffers, the KV cache for one sequence of up to ctx_len
 * positions, a hybrid model's recurrent state (its Gated DeltaNet layers', checkpointed
 * every 32 positions: running a position again first runs the positions from the
 * checkpoint before it again) and the kernels' scratch (a kernels_workspace, freed with
 * it). Borrows the model (which must outlive it). Matmuls go through kernels.h
 * and run on OpenMP threads. The pass is the same for one token and for a batch, and
 * hands each step's result to the observers registered at its hook points (hook.h);
 * the interventions (knocked-out heads and experts, control vectors) are editors
 * registered at theirs. */
#ifndef LLMCHAT_TRANSFORMER_H
#define LLMCHAT_TRANSFORMER_H

#include "hook.h"
#include "model.h"
#include "status.h"

typedef struct transformer transformer;

/* How the KV cache stores keys and values. Q8_0 keeps each (position, head) row as
 * int8 with one fp32 scale: a quarter of fp32's bytes, which is what decode reads at
 * long contexts beside the weights. AUTO follows the weights: Q8_0 when the model's
 * matrices are int8, F32 for fp32 reference runs. */
typedef enum { TRANSFORMER_KV_AUTO = 0, TRANSFORMER_KV_F32, TRANSFORMER_KV_Q8_0 } transformer_kv;

/* ctx_len 0 means the model's seq_len; larger than seq_len is an error.
 * transformer_new is transformer_new_kv with TRANSFORMER_KV_AUTO. */
llm_status transformer_new(const model *m, int ctx_len, transformer **out, llm_err *err);
llm_status transformer_new_kv(const model *m, int ctx_len, transformer_kv kv, transformer **out,
                              llm_err *err);
void transformer_free(transformer *t); /* NULL does nothing */

int transformer_ctx(const transformer *t);
/* Positions transformer_forward_batch runs at a time (its chunks). A batch run as
 * several calls of a multiple of this many positions each (the last one the rest) runs
 * the same chunks as one call, so it gives the same bits. */
int transformer_batch_chunk(const transformer *t);
const model *transformer_model(const transformer *t);
transformer_kv transformer_kv_type(const transformer *t); /* F32 or Q8_0, never AUTO */
size_t transformer_kv_bytes(const transformer *t);        /* the whole KV cache */

/* Runs `token` at position pos (0 <= pos < ctx) on the token kernels, reading the KV
 * cache for 0..pos-1 and writing it at pos. Returns the logits (vocab_size), valid until
 * the next forward call. attn, when not NULL, receives the attention weights of this
 * query: (n_layers, model_heads_max, pos + 1) floats, densely packed (a Gated DeltaNet
 * layer's rows are its value heads' effective attention: the weight of each earlier
 * position's value in the head's output, which may be negative and need not add up to 1;
 * a layer with fewer heads than the rest has 0 rows after its own). NULL as transformer_run
 * (below). */
const float *transformer_forward(transformer *t, int token, int pos, float *attn);

/* Which kernels a forward call computes with. The two differ only in the last bits:
 *   TOKEN: the products a matrix-vector kernel's (decode's) for every vector, an int8
 *          KV cache read as it is stored;
 *   BATCH: prefill's GEMM over packed activations (where the weights' type and the
 *          kernel table have one), the int8 cache's rows made fp32 for attention.
 * Everything else is the same arithmetic either way, and neither depends on how many
 * positions share a call: a position's numbers are fixed by its tokens, the
 * interventions and these kernels. The transformer remembers which each position ran
 * on (transformer_ran_batch), and runs it on the same again when asked for it once
 * more (the lens, attention rows, what-ifs, attribution): bit for bit what it was.
 * AUTO: BATCH for calls of TRANSFORMER_BATCH_MIN positions or more (where the GEMM
 * pays off), else TOKEN. */
typedef enum {
    TRANSFORMER_KERNELS_AUTO = 0,
    TRANSFORMER_KERNELS_TOKEN,
    TRANSFORMER_KERNELS_BATCH,
} transformer_kernels;
enum { TRANSFORMER_BATCH_MIN = 16 };

/* Runs n tokens at positions pos..pos+n-1 on `kernels` (in chunks of as many positions
 * as the transformer's buffers hold: the one chunking policy of prefill). logits, when
 * not NULL, receives (n, vocab_size): the logits of every position; the returned pointer
 * is always the logits of the last position (valid until the next forward call). attn,
 * when not NULL, is an array of n pointers; attn[i], when not NULL, receives (n_layers,
 * model_heads_max, pos + i + 1) floats for query pos + i. NULL for tokens outside the
 * vocabulary or positions outside the context, and when the kernels ran out of memory
 * for their scratch (what the call wrote is then undefined): transformer_error says
 * which. */
const float *transformer_run(transformer *t, const int *tokens, int n, int pos,
                             transformer_kernels kernels, float *logits, float *const *attn);
/* transformer_run with AUTO kernels. */
const float *transformer_forward_batch(transformer *t, const int *tokens, int n, int pos,
                                       float *logits, float *const *attn);
/* Runs seqs sequences side by side in one pass on the batch kernels: sequence s is
 * tokens[s * m .. s * m + m - 1] at positions pos..pos+m-1 over the KV cache's positions
 * 0..pos-1, which they share. Its rows are kept at the cache's places pos + s * m ..
 * (what those held is overwritten): the hooks see row r of the pass (sequence r / m,
 * position pos + r % m) at position pos + r, and kq, kq_soft_max not at all. After the
 * last layer's attention only each sequence's last row runs on (the rest of that
 * layer, the final norm: the hooks there see that row alone): nothing else reaches the
 * logits. Each sequence's last position's numbers are those of transformer_run of its
 * tokens at pos on the batch kernels, bit for bit: the pass reads the weights once for
 * all of them (activation patching's cells of one position). Writes each sequence's
 * last position's logits to logits (seqs, vocab).
 * enter (seqs, ascending within 0..n_layers; NULL: all 0): sequence s runs only the
 * layers from enter[s] on. Nothing computes its rows before: an editor registered at
 * l_out of layer enter[s] - 1 (after the last layer for n_layers) is handed them once,
 * before the layer reads them, and must write them whole (the stream that layer reads:
 * the numbers are then those of a run whose stream there was that). A model whose
 * layers read another's KV cache refuses a sequence that begins after layer 0.
 * On a model with recurrent layers (Gated DeltaNet) every sequence begins from the
 * state after pos - 1 (made from its checkpoint when it is not the live one), which it
 * leaves as it is; the positions from pos on are then no longer the ones run in order
 * (a later call runs from pos or before). False, with transformer_error saying why, on
 * more than transformer_batch_chunk rows, places past the context, a hybrid's pos past
 * the positions run, enter out of order, or out of memory. */
bool transformer_run_sequences(transformer *t, const int *tokens, int m, int seqs, int pos,
                               const int *enter, float *logits);

/* The positions running position pos again runs first (a hybrid model's recurrent
 * state made again from its checkpoint at or before pos, or from the live state where
 * it is between the two: at most 31); 0 for a model without recurrent layers or when
 * the state after pos - 1 is the live one or kept. */
int transformer_rerun_cost(const transformer *t, int pos);
/* Makes the recurrent state the one after position pos - 1 now: the last
 * transformer_rerun_cost(pos) positions run again, with the hooks' editors as they are
 * (so that a caller may run them in parts, each as it first ran: engine.c). Nothing
 * for a model without recurrent layers. False, with transformer_error saying why, for
 * a pos past the positions run, or out of memory. */
bool transformer_seek(transformer *t, int pos);

/* Keeps, from the next forward calls on, the recurrent state after each position
 * from - 1 .. to - 1 that the state passes in order (as the checkpoints are kept), so
 * that running from any of those positions again needs nothing run first
 * (transformer_rerun_cost 0): transformer_state_bytes a position. from > to keeps none
 * (what was kept is freed). Nothing for a model without recurrent layers. False, keeping
 * none, when out of memory. */
bool transformer_keep_states(transformer *t, int from, int to);
/* The bytes of the recurrent state (0 without recurrent layers). */
size_t transformer_state_bytes(const transformer *t);

/* Whether position pos last ran on the batch kernels. */
bool transformer_ran_batch(const transformer *t, int pos);
/* logits (n, vocab_size) of positions pos..pos+n-1, computed again from what the
 * forward calls kept of each position: the classifier's input (its final normed
 * state, a few KB a position, kept like the KV cache). Each equals what the forward
 * call that ran the position returned or wrote, bit for bit, until a forward call runs
 * that position again. The positions must have been run. Parallel over the classifier's
 * rows: prompt positions' logits cost one pass over the classifier per call. False
 * when the kernels ran out of memory for their scratch (logits undefined; see
 * transformer_error). */
bool transformer_logits(transformer *t, int pos, int n, float *logits);
/* Why the last of transformer_run (and the calls made of it: transformer_forward,
 * transformer_forward_batch) or transformer_logits failed: LLM_ERR_ARG (tokens or
 * positions out of range) or LLM_ERR_NOMEM (no memory for the kernels' scratch), with
 * its sentence copied to err (which may be NULL); LLM_OK, err untouched, when it did
 * not. */
llm_status transformer_error(const transformer *t, llm_err *err);

/* The logit lens of position pos: runs `token` at pos over the KV cache of 0..pos-1
 * like transformer_forward, and writes what each layer's residual stream predicts
 * through the final RMSNorm and the classifier: layer_logits (n_layers, vocab_size).
 * The last layer's row is transformer_forward's logits. Leaves the KV cache, the kept
 * classifier inputs and the logits transformer_forward last returned as they were. */
llm_status transformer_logit_lens(transformer *t, int token, int pos, float *layer_logits,
                                  llm_err *err);

/* The attention rows of position pos computed again: runs `token` at pos over the KV
 * cache of 0..pos-1 like transformer_forward and writes attn (n_layers, model_heads_max,
 * pos + 1), what transformer_forward at pos writes (bit for bit for a position it ran). Leaves
 * the KV cache, the kept classifier inputs and the logits as they were. */
llm_status transformer_attention_again(transformer *t, int token, int pos, float *attn,
                                       llm_err *err);

/* Registers a hook (hook.h): an observer, handed the points, layers and positions it
 * asks for on every forward call from now on (the what-ifs below included), on one
 * token as on a batch (a batch's rows may come in several calls); or an editor, which
 * changes what it asks for at hook_editable points before the pass reads on (the
 * interventions: knock_out.c, expert_knock_out.c, control_vectors.c). *id is for
 * removing it. Fails when MAX_HOOKS (8) are registered, on an editor at a point that
 * cannot be edited, or out of memory (observing ffn_gate keeps a copy of a chunk's gate
 * values; result_output computes a batch's logits 16 rows at a time). A point nobody observes or edits costs
 * the pass one test. h is copied; h->user is borrowed until removal. */
llm_status transformer_hook_add(transformer *t, const hook *h, int *id, llm_err *err);
void transformer_hook_remove(transformer *t, int id); /* an unknown id does nothing */

/* Runs `token` at pos over the KV cache of 0..pos-1 like transformer_forward (with the
 * vectors and the head mask set now) and writes its logits (vocab); leaves the KV
 * cache, the kept classifier inputs and the logits as they were (a what-if). */
llm_status transformer_forward_again(transformer *t, int token, int pos, float *logits,
                                     llm_err *err);

/* What position pos's residual stream is made of (direct logit attribution): runs
 * `token` at pos over the KV cache of 0..pos-1 like transformer_forward (with the
 * vectors and the head mask set now) and writes parts (n_layers,
 * transformer_parts_width): for each layer its attention output before the output
 * projection wo (kqv: head h's values at h * head_size, a Gated DeltaNet's value head
 * h's at h * dn_head_v; a knocked-out head's are 0; model_mixer_width values),
 * then its feed-forward output (ffn_out), then its experts' and its per-layer input's
 * (see below); resid (n_layers, dim): the residual stream after each layer (l_out; the
 * last row is what the final RMSNorm reads); logits (vocab). Any of the three may be
 * NULL. Leaves the KV cache, the kept classifier inputs and the logits as they were. */
llm_status transformer_components(transformer *t, int token, int pos, float *parts,
                                  float *resid, float *logits, llm_err *err);

/* Values of one layer's parts in transformer_components: kqv (model_mixer_width),
 * ffn_out (dim),
 * and for a mixture of experts, n_experts_used × (dim + 2): the chosen experts' numbers
 * and their weights (as ffn_moe_topk and ffn_moe_weights give them), then each one's
 * output (ffn_moe_down); last, with per-layer inputs (config.ple_dim > 0),
 * per_layer_embd_out (dim). */
int transformer_parts_width(const model_config *c);

/* Runs tokens (n) at positions 0..n-1, one at a time, and writes the residual stream
 * after each layer of each: resid (n, n_layers, dim). Overwrites the KV cache of those
 * positions: meant for a transformer of its own (control_vector_make). */
llm_status transformer_residuals(transformer *t, const int *tokens, int n, float *resid,
                                 llm_err *err);

#endif
