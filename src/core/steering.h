/* steering.h — what an engine changes in the forward pass on the user's request: the
 * control vectors (which are loaded, by name, their scales, the layers they apply to,
 * and their scaled sum, added to the residual stream after each layer), the attention
 * heads knocked out (their output zeroed) and, on a mixture of experts, the experts
 * knocked out (never routed to) and the experts forced (one a layer at most, always
 * routed to first).
 *
 * Each change makes a new `intervention` record (intervention.h) describing the state;
 * all of them are kept until steering_free, so step records may point to them. The
 * state acts through editors registered at the pass's hook points (steering_attach:
 * control_vectors.c at l_out, knock_out.c at kqv and a hybrid's beta and gate,
 * expert_knock_out.c and then
 * expert_force.c at ffn_moe_logits), which read it as it is at every pass: a change applies from the
 * next position run on, with nothing to hand over. Owns the vectors, the sum, the
 * masks, the records and the editors' contexts. No printing. */
#ifndef LLMCHAT_STEERING_H
#define LLMCHAT_STEERING_H

#include <stdbool.h>

#include "control_vector.h"
#include "intervention.h"
#include "status.h"
#include "transformer.h"

typedef struct steering steering;

/* For a model of n_layers layers of n_heads heads and dim values. */
llm_status steering_new(int n_layers, int n_heads, int dim, steering **out, llm_err *err);
void steering_free(steering *s); /* NULL does nothing */

/* Registers the editors that apply s on t's forward passes (three of t's hooks, five
 * on a mixture of experts), for as
 * long as both live. t must be of the shape s was made for; its experts are taken as
 * steering_experts does. */
llm_status steering_attach(steering *s, transformer *t, llm_err *err);
/* The model's experts a layer (0: dense layers, the default) and how many the router
 * chooses for a token (n_experts_used), before any is knocked out. */
llm_status steering_experts(steering *s, int n_experts, int n_used, llm_err *err);
/* false: the passes leave every head in (what-ifs compare with and without them);
 * true (the default): the knocked-out heads are out. */
void steering_heads_enabled(steering *s, bool on);

/* Reads a control-vector file and applies it with scale (NAN: the file's suggested
 * scale, else 1). name NULL: the file's base name without ".gguf". Fails (changing
 * nothing) on a bad file, a vector of another width than the model's, a vector none of
 * whose layers the model has, or a name already loaded. A vector with layers the model
 * lacks is applied at the others, and steering_notice says which are ignored. */
llm_status steering_load(steering *s, const char *path, const char *name, float scale,
                         llm_err *err);
/* The same with a vector in memory (cv is taken, also on failure); path says where it
 * was written. */
llm_status steering_add(steering *s, const char *name, const char *path, control_vector *cv,
                        float scale, llm_err *err);
/* Whether name may name a vector (1 to 64 characters without blanks, quotes, slashes or
 * backslashes, not "." or ".."); LLM_ERR_ARG with why when not. */
llm_status steering_name_check(const char *name, llm_err *err);
/* Whether a vector of that name is loaded. */
bool steering_has(const steering *s, const char *name);
/* What the last steering_load, steering_add or steering_force_expert has to tell the
 * user although it succeeded ("happy.gguf: direction.4 ignored: the model has 4 layers
 * (0-3); ...", a forced expert replaced), or "" (any other change clears it). The front end shows it; valid until the next
 * change. */
const char *steering_notice(const steering *s);
llm_status steering_rescale(steering *s, const char *name, float scale, llm_err *err);
llm_status steering_drop(steering *s, const char *name, llm_err *err);
/* The layers vectors apply after: first..last (0-based, llama.cpp's numbering), -1 -1
 * for all. Fails when first > last or last is not a layer of the model. */
llm_status steering_layers(steering *s, int first, int last, llm_err *err);

/* Knocks head `head` of layer `layer` (both from 0) out (out true) or back in. */
llm_status steering_knock_out(steering *s, int layer, int head, bool out, llm_err *err);
bool steering_is_out(const steering *s, int layer, int head);
/* Knocks value head `head` of Gated DeltaNet layer `layer` out with its state reset
 * (knock_out.h: its output zeroed and its state emptied while it is out, so it starts
 * from nothing when it is let back in; steering_knock_out(.., false, ..) lets it back).
 * Refused (LLM_ERR_ARG, changing nothing) on a head the model lacks, on an attention
 * layer (a KV cache, no state) and before steering_attach (the layers' kinds unknown). */
llm_status steering_knock_out_reset(steering *s, int layer, int head, llm_err *err);
bool steering_is_reset(const steering *s, int layer, int head);
/* The knocked-out heads (n_layers, n_heads; not 0 = out: KNOCK_OUT, or KNOCK_OUT_RESET
 * with the state reset, knock_out.h), or NULL when none is out.
 * Valid until the next change. */
const unsigned char *steering_mask(const steering *s);

/* Knocks expert `expert` of layer `layer` (both from 0) out of the router's choice (out
 * true) or back in. Refused (LLM_ERR_ARG, changing nothing) on a model without experts,
 * a layer or expert it lacks, the layer's forced expert, or when fewer than
 * n_experts_used of the layer's experts would be left in. */
llm_status steering_knock_out_expert(steering *s, int layer, int expert, bool out,
                                     llm_err *err);
bool steering_expert_is_out(const steering *s, int layer, int expert);

/* Forces expert `expert` of layer `layer` (both from 0) as the router's first choice for
 * every token (expert_force.h); expert -1: none is forced at the layer any more. A
 * layer has one forced expert at most: forcing another replaces it, and
 * steering_notice says so ("expert 5 of layer 1 is forced instead of expert 3 (one
 * expert a layer)"). Refused (LLM_ERR_ARG, changing nothing) on a model without
 * experts, a layer or expert it lacks, or an expert knocked out. */
llm_status steering_force_expert(steering *s, int layer, int expert, llm_err *err);
/* The expert forced at layer, or -1. */
int steering_expert_forced(const steering *s, int layer);

/* Makes the state equal want (NULL: no vectors, every layer): vectors want names that
 * are loaded from the same file (with the same checksum, when want knows it) are
 * rescaled, the others read from their files. A knocked-out head is read as [layer,
 * head] with want's row width (want->n_heads). --replay uses it to apply what a trace
 * recorded. Fails (LLM_ERR_MISMATCH) on a head or an expert the model lacks, a layer
 * left with fewer experts than the router chooses, an expert both forced and knocked
 * out, two forced at one layer, or a file whose checksum is not want's. */
llm_status steering_set(steering *s, const intervention *want, llm_err *err);
/* Checks, changing nothing, that steering_set(s, want) can succeed: every head and
 * expert of want is one of the model's (with enough experts left in, none forced and
 * knocked out, one forced a layer at most), every vector file
 * reads, has the model's width and one of its layers, and is as want's checksum says.
 * The message names the head, the expert or the file. What a vector has to say although it passes (layers the model lacks, as steering_notice)
 * goes to notice[0..size) ("" when nothing). */
llm_status steering_check(const steering *s, const intervention *want, char *notice,
                          size_t size, llm_err *err);

/* Whether the state in force could be set again (steering_set) after want (NULL:
 * none): every loaded vector that setting want would drop has a file that still reads
 * as it did when loaded (its FNV-1a). The message names the file. */
llm_status steering_check_reload(const steering *s, const intervention *want, llm_err *err);

/* The state now, or NULL when nothing was ever set. Valid until steering_free. */
const intervention *steering_state(const steering *s);
/* Until steering_as_now, the editors apply in (a state steering_state gave before:
 * its vectors, as long as they are loaded still, its heads and experts) instead of
 * the state in force, without changing it: positions run again for a recurrent state
 * (engine.c) run as they first ran. False, changing nothing, when one of in's vectors
 * is no longer loaded (its numbers are gone) or out of memory. */
bool steering_as_ran(steering *s, const intervention *in);
/* The editors apply the state in force again. */
void steering_as_now(steering *s);
/* The scaled sum of the vectors over the layers in range (n_layers, dim), or NULL when
 * no vector is loaded. Valid until the next change. */
const float *steering_sum(const steering *s);

/* Whether in knocks the head at flat (layer * in->n_heads + head) out with its state
 * reset. */
bool steering_head_reset(const intervention *in, int flat);

/* "vectors happy 0.60, sad -1.00, layers 2-4 | heads out L2H3 L4H1(reset) | experts out L1E5 |
 * experts forced L2E3" (the layers, heads and experts from 1, as the TUI shows them;
 * nothing: "") into buf;
 * the length, as snprintf. */
int steering_format(const intervention *in, char *buf, size_t size);

#endif
