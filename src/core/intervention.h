/* intervention.h — what changes the forward pass on the user's request, as plain data:
 * the control vectors in force (name, file, scale), the layers they apply to, the
 * attention heads knocked out (their output zeroed before the output projection) and
 * the experts knocked out (the router's logit -INFINITY: never chosen, the others'
 * probabilities renormalised over the rest) and the experts forced (at most one a
 * layer: the router's logit raised just above the others', so it is chosen first).
 *
 * The engine keeps one such record for every state it has been in (a new one each
 * time the user loads, rescales or drops a vector, changes the layers, knocks a head
 * or an expert out or back in, or forces an expert or stops forcing it) and never frees them before engine_free, so a step
 * record can point to the one its position ran with; the trace writes it where it
 * changes and --replay sets it again. */
#ifndef LLMCHAT_INTERVENTION_H
#define LLMCHAT_INTERVENTION_H

#include <stdint.h>

typedef struct {
    char *name;   /* what /vector calls it */
    char *path;   /* the control-vector GGUF it was read from (or written to) */
    float scale;  /* its values are multiplied by this */
    uint64_t fnv1a; /* FNV-1a (64 bits) of the file's bytes as read or written; 0: not
                       known (a trace written before it) */
} intervention_vector;

typedef struct {
    int layer, expert; /* from 0 */
} intervention_expert;

typedef struct intervention {
    int n_vectors;
    intervention_vector *vectors; /* (n_vectors) */
    int first_layer, last_layer;  /* vectors apply after layers first..last (numbered from
                                     0, as llama.cpp and the direction.N tensors number
                                     them); -1 -1: every layer */
    int n_heads;                  /* the row width heads_out is numbered with: the
                                     model's heads per layer, or for one read from a
                                     trace the trace's (4096 when it does not say), so
                                     that [layer, head] comes back whole on any model */
    int n_heads_out;
    int *heads_out;               /* (n_heads_out) layer * n_heads + head of each head
                                     knocked out, ascending (layers and heads from 0) */
    int n_heads_reset;
    int *heads_reset;             /* (n_heads_reset) those of heads_out knocked out with
                                     their state reset (a Gated DeltaNet's value heads,
                                     knock_out.h), the same way, ascending */
    int n_experts_out;
    intervention_expert *experts_out; /* (n_experts_out) the experts knocked out, by
                                         layer then expert, ascending */
    int n_experts_forced;
    intervention_expert *experts_forced; /* (n_experts_forced) the experts forced, one a
                                            layer at most, by layer ascending */
} intervention;

#endif
