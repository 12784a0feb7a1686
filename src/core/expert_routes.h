/* expert_routes.h — which experts a mixture of experts chose, per position and layer:
 * the router's decision (ffn_moe_topk) and the chosen experts' weights
 * (ffn_moe_weights), kept for every position the engine runs, and the questions a
 * view asks of them (a position's route at a layer; how often each expert was chosen
 * at a layer over a range of positions; the positions whose route at a layer includes
 * an expert).
 *
 * Kept by an observer at those two points (expert_routes_hook), which the engine
 * registers only for a model with experts and lets write only while it runs
 * positions for the sequence (expert_routes_begin .. _end): the what-if passes (the
 * lens, a knock-out's what-if, attribution, the compute view) run with the hook in
 * place but are not recorded. A position costs n_layers * n_experts_used numbers and
 * weights (6 bytes each); the memory grows with the positions run, up to the context.
 * Why not in the step records: the questions are over ranges of positions (counts, the
 * positions that chose an expert), which a block per layer answers with one scan, and
 * a rewind or a branch is a truncation here, with no record to rebuild.
 * Owns its arrays; no printing; the engine is the only writer. */
#ifndef LLMCHAT_EXPERT_ROUTES_H
#define LLMCHAT_EXPERT_ROUTES_H

#include <stdbool.h>

#include "hook.h"
#include "model.h"
#include "status.h"

typedef struct expert_routes expert_routes;

/* Routes for a model of config c (c->n_experts > 0, at most 32767) over a context of
 * ctx positions; nothing is allocated for positions until they run. */
llm_status expert_routes_new(const model_config *c, int ctx, expert_routes **out, llm_err *err);
void expert_routes_free(expert_routes *r); /* NULL does nothing */

/* The observer (ffn_moe_topk and ffn_moe_weights, every layer, every position) to
 * register with transformer_hook_add; it records only between begin and end. */
hook expert_routes_hook(expert_routes *r);

/* Positions pos..pos+n-1 are about to run for the sequence: their routes are
 * forgotten, room is made for them, and the observer records until _end. Fails only
 * out of memory (the observer then records nothing). */
llm_status expert_routes_begin(expert_routes *r, int pos, int n, llm_err *err);
void expert_routes_end(expert_routes *r);

/* Forgets the routes of positions pos and later (a rewind). */
void expert_routes_forget_from(expert_routes *r, int pos);

int expert_routes_layers(const expert_routes *r);
int expert_routes_experts(const expert_routes *r);  /* n_experts */
int expert_routes_used(const expert_routes *r);     /* n_experts_used: a route's length */
/* Positions 0..n-1 may have routes (the sequence as far as it was run). */
int expert_routes_positions(const expert_routes *r);

/* Position pos's route at layer: the chosen experts (used), the most probable first,
 * and their weights (used; may be NULL). False (nothing written) when pos did not run
 * or the pass did not hand both points for it. */
bool expert_routes_of(const expert_routes *r, int pos, int layer, int *experts, float *weights);

/* How often each expert was chosen at layer over positions first..last (clamped to
 * those run) into counts (n_experts). Returns the positions counted (those with a
 * route): the counts add up to that times n_experts_used. */
int expert_routes_count(const expert_routes *r, int layer, int first, int last, int *counts);

/* The positions of first..last whose route at layer includes expert, in order, at
 * most max into out (out may be NULL with max 0); their weight for that expert into
 * weights (may be NULL). Returns how many there are in all. */
int expert_routes_chose(const expert_routes *r, int layer, int expert, int first, int last,
                        int *out, float *weights, int max);

#endif
