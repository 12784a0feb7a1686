/* expert_knock_out.h — the expert knock-out intervention: an editor at ffn_moe_logits
 * (hook.h) that sets the router's logit of every expert a mask marks to -INFINITY, so
 * that the softmax gives it probability 0 (the others' renormalise over the rest) and
 * the top-k never chooses it.
 *
 * It reads the mask the user's choice keeps (steering.c: one byte per layer and
 * expert) at every pass, so a change applies from the next position run on. That
 * enough experts stay in for the top-k (n_experts_used) is steering.c's to check.
 * Owns nothing. */
#ifndef LLMCHAT_EXPERT_KNOCK_OUT_H
#define LLMCHAT_EXPERT_KNOCK_OUT_H

#include "hook.h"

typedef struct {
    const unsigned char *const *mask; /* *mask: (n_layers, n_experts), not 0 = out;
                                         *mask NULL: no expert is out */
    int n_experts;
} expert_knock_out;

/* The editor (its user: an expert_knock_out). */
void expert_knock_out_edit(void *user, hook_slice *x);

#endif
