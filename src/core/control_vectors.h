/* control_vectors.h — the control-vector intervention: an editor at l_out (hook.h) that
 * adds layer l's row of the vectors' scaled sum to the residual stream of every
 * position run.
 *
 * It reads the sum the user's choice keeps (steering.c: the loaded vectors times their
 * scales, over the layers in range) at every pass, so a change applies from the next
 * position run on. Owns nothing. */
#ifndef LLMCHAT_CONTROL_VECTORS_H
#define LLMCHAT_CONTROL_VECTORS_H

#include "hook.h"

typedef struct {
    const float *const *sum; /* *sum: (n_layers, dim), or NULL when no vector is loaded */
    int dim;
} control_vectors;

/* The editor (its user: a control_vectors). */
void control_vectors_edit(void *user, hook_slice *x);

#endif
