/* knock_out.h — the knock-out intervention: an editor at kqv (hook.h) that zeroes the
 * attention output of every head a mask marks, before the output projection reads it.
 * A Gated DeltaNet's value head is knocked out one of two ways:
 *   - KNOCK_OUT (state kept): its normed, gated output is zeroed; its state goes on
 *     taking in the tokens, so the head speaks again with its whole history when it is
 *     let back in;
 *   - KNOCK_OUT_RESET (state reset): the same, and at beta and gate its write strength
 *     is 0 and its log-decay KNOCK_OUT_EMPTY_GATE (a decay of exactly 0), so from the
 *     first position it is out its state is empty and stays empty: let back in, the
 *     head starts from nothing, as at the start of the text. Its effective attention
 *     says the same (the weight of every position before it came back is 0).
 *
 * It reads the mask the user's choice keeps (steering.c: one byte per layer and head)
 * at every pass, so a change applies from the next position run on. Owns nothing. */
#ifndef LLMCHAT_KNOCK_OUT_H
#define LLMCHAT_KNOCK_OUT_H

#include <stdbool.h>

#include "hook.h"
#include "model.h"

/* A mask's byte: the head is in (0), out (its state kept), out with its state reset. */
enum { KNOCK_IN = 0, KNOCK_OUT = 1, KNOCK_OUT_RESET = 2 };

/* The log-decay of a reset head: exp() of it is 0, and sums of 64 of them (the
 * chunked form's) and their differences stay finite, so no NaN can arise. */
#define KNOCK_OUT_EMPTY_GATE (-1e30f)

typedef struct {
    const unsigned char *const *mask; /* *mask: (n_layers, n_heads), KNOCK_*; *mask
                                         NULL: no head is out */
    const bool *enabled;              /* *enabled false: leave every head in (a what-if's
                                         pass without them) */
    int n_heads;                      /* a row of the mask: model_heads_max */
    int attn_heads, head_size;        /* an attention layer's heads and their size */
    int dn_heads, dn_head_size;       /* a Gated DeltaNet layer's value heads */
    const model_layer *layers;        /* (n_layers) their kinds; NULL: all attention */
} knock_out;

/* The editor (its user: a knock_out), at kqv, and at beta and gate for the heads whose
 * state is reset. */
void knock_out_edit(void *user, hook_slice *x);

#endif
