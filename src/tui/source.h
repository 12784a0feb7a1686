/* source.h — where the Tokens and Attention panes read the positions they show: the
 * running engine, or a trace read back (llmchat --view, no model).
 *
 * A source is plain data the controller fills in (tui.c, or view.c for a trace); the
 * panes and the selection read through these functions and never ask which it is,
 * except that only a live source computes a logit lens, an attribution and dropped
 * attention rows on demand or switches the engine's attention capture. */
#ifndef LLMCHAT_TUI_SOURCE_H
#define LLMCHAT_TUI_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "expert_routes.h"
#include "hook.h"
#include "model.h"
#include "step.h"
#include "step_weight.h"
#include "tokenizer.h"
#include "trace_read.h"
#include "remote_chat.h"
#include "server_check.h"

typedef struct {
    engine *e;                   /* the running engine, or NULL for a trace */
    const step_record *const *seq; /* a trace's final sequence (n): NULL where a line was lost */
    int n;
    const int *tokens;           /* (n) the trace's tokens (0 where a line was lost) */
    const model_config *cfg;     /* n_layers, n_heads (a trace's header, or the model) */
    const tokenizer *tok;        /* the engine's; NULL for a trace */
    const trace_reader *trace;   /* a trace's pieces come from its vocabulary */
    const remote_chat *rc;       /* a served model's dialog (--server): positions, records
                                    and pieces from the server; no weights */
    const server_check *check;   /* the engine's positions checked against a served model
                                    (--compare-server URL -m tui), or NULL */
} tui_source;

/* Positions there are. */
int source_count(const tui_source *s);
/* The record of pos, NULL when out of range or lost. */
const step_record *source_record(const tui_source *s, int pos);
/* How pos's token got there; cheap (a live engine's pending prompt records are not
 * completed for it); STEP_PROMPT where the record is out of range or lost. */
step_phase source_phase(const tui_source *s, int pos);
/* (source_count) the token at each position. */
const int *source_tokens(const tui_source *s);
/* pos's logit lens (n_layers): the engine computes it on demand; a trace has it when it
 * was written with --trace-lens. NULL when there is none. */
const step_lens_layer *source_lens(const tui_source *s, int pos);
/* pos's attention rows (n_layers, n_heads, pos + 1), also set as its record's `attn`:
 * the engine computes rows it did not keep again; a trace has them when it was written
 * with --trace-attn. NULL when there are none. */
const float *source_attention(const tui_source *s, int pos);
/* id's piece made terminal-safe into out (control tokens without their padding, as
 * "<s>"); "" when the source does not know it. Returns the length. */
size_t source_token(const tui_source *s, int id, char *out, size_t size);
/* A trace does not mark control tokens: a piece that is "<...>" once its padding
 * ("\n<s>\n") is trimmed is taken for one (byte pieces such as "<0x0A>" match too). */
bool source_piece_is_control(const char *piece);
/* The sampler settings the next token gets, NULL for a trace. */
const sampler_config *source_sampler(const tui_source *s);
/* The sliding window of layer `layer`: its queries see the last that many keys (their
 * own included); 0 when they see every earlier key (or the trace does not say). */
int source_window(const tui_source *s, int layer);
/* Whether layer `layer` is a Gated DeltaNet (a hybrid model's linear attention): its
 * attention rows are its value heads' effective attention (signed weights of the
 * earlier values), not a softmax. */
bool source_recurrent(const tui_source *s, int layer);
/* The heads layer `layer` has (its rows in a position's attention: cfg->n_heads is the
 * most any layer has). */
int source_layer_heads(const tui_source *s, int layer);
/* A running engine (steering, capture and the lens work); false for a trace. */
bool source_live(const tui_source *s);
/* Head `head` of layer `layer` (from 0) is knocked out of the engine's forward pass. */
bool source_head_out(const tui_source *s, int layer, int head);
/* pos run again with the knocked-out heads and without (engine_whatif); NULL when no
 * head is out, for a trace, or on failure. */
const step_whatif *source_whatif(const tui_source *s, int pos);
/* The direct logit attribution of token's logit at pos (engine_attribution); NULL for a
 * trace (it needs the model's weights) or on failure. */
const step_attribution *source_attribution(const tui_source *s, int pos, int token);
/* The experts each position chose at each layer (engine_routes): NULL for a trace (it
 * keeps no routes) and for a model without experts. */
const expert_routes *source_routes(const tui_source *s);
/* One step of the forward pass at a position, as the compute view lists it. */
typedef struct {
    step_tensor sum;       /* its summary */
    const float *values;   /* (sum.n) all its values (a live engine), or NULL (a trace
                              keeps the summary only); valid until the next call */
    hook_point point;      /* HOOK_COUNT for a name this llmchat does not know */
} source_step;

/* The steps at pos of `layer`: 0..n_layers-1, or -1 for those before the layers
 * (inp_embd), n_layers for those after (result_norm, result_output), in the pass's
 * order, at most max into out. A live engine computes them (engine_tensors: one
 * forward pass of pos for that layer, leaving the context as it was; kept until
 * another layer or position is asked for; for -1 and n_layers the pass of layer
 * `near`, which has them too, so that no other pass runs); a trace has the summaries
 * it was written with (--trace-tensors). Returns the count; 0 with *why set when there
 * are none. */
int source_steps(const tui_source *s, int pos, int layer, int near, source_step *out, int max,
                 const char **why);
/* The weight behind step p of layer (-1 and n_layers as above, near too) at pos, for
 * output element row and input group `group` (step_weight.h); false with *why set for
 * a trace (it has no weights), a step without a weight, or on failure. */
bool source_step_weight(const tui_source *s, int pos, int layer, int near, hook_point p, int row,
                        int group, step_weight *out, const char **why);

/* The attribution's targets at r, in the order t steps through them: the token that
 * came next (the top candidate while none has), then the other top candidates by rank.
 * Target i (taken modulo their count, any sign) into *id, its rank among the
 * candidates into *rank (1 = top; 0 when it is not among them). Returns the count; 0,
 * with *id -1, when r offers none. */
int source_attribution_target(const step_record *r, int i, int *id, int *rank);

#endif
