/* forward.h — the forward pass (forward.c), for transformer.c, which calls it; forward.c
 * works in the pass state (pass_state.h) and never calls the transformer back. Private
 * to src/core's transformer files. */
#ifndef LLMCHAT_FORWARD_H
#define LLMCHAT_FORWARD_H

#include "transformer_internal.h"

/* Runs tokens (n, each < vocab) at positions pos..pos+n-1 (n no more than t->cap, or 1)
 * on the batch kernels (batch) or the token kernels, writing their KV cache entries and
 * kept classifier inputs (not the logits: classifier_logits makes them from those). The
 * observers in hooks see every point they ask for, after its editors. False when a
 * kernel ran out of memory for its scratch (t->ws): what the pass wrote is then
 * undefined. */
bool forward_pass(transformer *t, const int *tokens, int n, int pos, bool batch,
                  const pass_hooks *hooks);
/* The same on the batch kernels for n / m sequences of m rows side by side (m divides
 * n): row r is position pos + r % m of sequence r / m, over the cache's positions
 * 0..pos-1, which they share, and its own earlier rows; its KV cache entries go to
 * place pos + r, where the hooks see it. Only each sequence's last row runs on after
 * the last layer's mixer (the others' keys and values are all a later row reads): the
 * steps from there, and the final norm, have that row alone, and the hooks are handed
 * it alone; sequence s's kept classifier input goes to place pos + s. Each sequence's
 * last row's numbers are those of a forward_pass of its rows alone at pos, bit for
 * bit. kq and kq_soft_max are not observed. A Gated DeltaNet layer runs each sequence
 * from the live recurrent state (after pos - 1), which it leaves as it is, and writes no
 * checkpoint; t->seq_kv holds t->att_slots sequences' keys and values, t->seq_dn as many
 * value heads' states. enter (n / m, ascending; NULL: all
 * 0): sequence s runs the layers from enter[s] on (n_layers: none); its rows are handed
 * to the editors once at l_out of layer enter[s] - 1, before any layer runs them, and
 * must be written whole there (nothing computed them: no layer may read another's KV
 * cache then). */
bool forward_pass_sequences(transformer *t, const int *tokens, int n, int pos, int m,
                            const int *enter, const pass_hooks *hooks);

/* RMSNorm of x (size) with weight into o (may be x). */
void forward_rmsnorm(float *o, const float *x, const float *weight, int size, float eps);

#endif
