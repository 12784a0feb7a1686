/* expert_force.h — the expert forcing intervention: an editor at ffn_moe_logits
 * (hook.h) that makes a layer's forced expert the router's first choice for every
 * token. Where the expert's logit is not already above every other expert's, it is
 * raised to the smallest float above the largest of them (nextafterf(max, +INFINITY)):
 * the softmax then gives it the top expert's probability (a hair more), route()
 * (forward.c) chooses it first (of equal probabilities the larger logit wins), and the
 * other experts follow in the router's order, so that the last of them drops out of
 * the top-k unless the forced one was among the chosen already. Where the forced
 * expert is the router's first anyway, its logit is left as it is (the same bits as
 * without).
 *
 * The largest other logit is read from the row's other columns (the editor is handed
 * the forced expert's column only, when the threads share a token's columns), skipping
 * the experts knocked out (expert_knock_out.c sets theirs to -INFINITY, at the same
 * time on other threads): so a knocked-out expert never lifts the forced one, and no
 * column another editor writes is read. A forced expert is never knocked out
 * (steering.c refuses both).
 *
 * It reads the experts the user forces (steering.c: one a layer, or -1) at every pass,
 * so a change applies from the next position run on. Owns nothing. */
#ifndef LLMCHAT_EXPERT_FORCE_H
#define LLMCHAT_EXPERT_FORCE_H

#include "hook.h"

typedef struct {
    const int *const *forced;            /* *forced: (n_layers) the expert forced at each
                                            layer, -1 for none; *forced NULL: none is */
    const unsigned char *const *out;     /* *out: (n_layers, n_experts) not 0 = knocked
                                            out, or NULL when none is (the knock-out's) */
    int n_experts;
} expert_force;

/* The editor (its user: an expert_force). */
void expert_force_edit(void *user, hook_slice *x);

#endif
