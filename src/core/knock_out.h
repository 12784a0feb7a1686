/* knock_out.h — the knock-out intervention: an editor at kqv (hook.h) that zeroes the
 * attention output of every head a mask marks, before the output projection reads it
 * (a Gated DeltaNet's value head: its normed, gated output; its state goes on taking in
 * the tokens, so the head speaks again with its whole history when it is let back in).
 *
 * It reads the mask the user's choice keeps (steering.c: one byte per layer and head)
 * at every pass, so a change applies from the next position run on. Owns nothing. */
#ifndef LLMCHAT_KNOCK_OUT_H
#define LLMCHAT_KNOCK_OUT_H

#include <stdbool.h>

#include "hook.h"
#include "model.h"

typedef struct {
    const unsigned char *const *mask; /* *mask: (n_layers, n_heads), not 0 = out; *mask
                                         NULL: no head is out */
    const bool *enabled;              /* *enabled false: leave every head in (a what-if's
                                         pass without them) */
    int n_heads;                      /* a row of the mask: model_heads_max */
    int attn_heads, head_size;        /* an attention layer's heads and their size */
    int dn_heads, dn_head_size;       /* a Gated DeltaNet layer's value heads */
    const model_layer *layers;        /* (n_layers) their kinds; NULL: all attention */
} knock_out;

/* The editor (its user: a knock_out). */
void knock_out_edit(void *user, hook_slice *x);

#endif
