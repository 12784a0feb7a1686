/* attribution.h — direct logit attribution: splits one token's logit at one position
 * into what each component of the residual stream wrote toward it (step.h's
 * step_attribution), from the components one forward pass left behind
 * (transformer_components), and ranks the components by size.
 *
 * Arithmetic over the model's weights only: it reads the rows it needs (every row of
 * each layer's wo, the target's classifier row, the input token's embedding) made
 * fp32 from whatever type the model computes with. Owns nothing it hands out; the
 * engine runs the forward pass and keeps the result (engine_attribution). No
 * printing. */
#ifndef LLMCHAT_ATTRIBUTION_H
#define LLMCHAT_ATTRIBUTION_H

#include "model.h"
#include "status.h"
#include "step.h"

/* What one forward pass of the position left (all borrowed for the call). */
typedef struct {
    const float *parts;  /* (n_layers, transformer_parts_width) each layer's attention
                            output before wo (kqv), then its feed-forward output
                            (ffn_out), then a mixture of experts' choices, weights and
                            outputs, then its per-layer input as added
                            (per_layer_embd_out), as transformer_components writes them */
    const float *final;  /* (dim) the residual stream the final RMSNorm reads */
    const float *steer;  /* (n_layers, dim) the control vectors added after each layer,
                            or NULL when none are in force */
    int token;           /* the input token at the position: its embedding starts the
                            stream */
} attribution_input;

/* Splits target's logit: fills a's parts, norm_scale, before_cap (their sum), softcap
 * and post_norms, writing head (n_layers, model_heads_max), mlp (n_layers), for a mixture
 * of experts expert and expert_id (n_layers, n_experts_used; NULL for a dense model),
 * and with per-layer inputs (config.ple_dim > 0) layer_input (n_layers; NULL without),
 * which a then points to; a->pos and a->logit are the caller's. Post-norms are held at their scale of this position (the parts add up); a
 * final soft-cap is not split (the parts add up to the logit before it). Fails (no
 * memory, a target outside the vocabulary) with err. */
llm_status attribution_compute(const model *m, const attribution_input *in, int target,
                               float *head, float *mlp, float *expert, int *expert_id,
                               float *layer_input, step_attribution *a, llm_err *err);

/* Σ of every part: the logit again, up to rounding (before the final
 * soft-cap, where the model has one). */
double attribution_sum(const step_attribution *a);

/* One component, as attribution_top lists them. */
typedef enum {
    ATTRIBUTION_EMBEDDING = 0,
    ATTRIBUTION_HEAD,     /* layer, head */
    ATTRIBUTION_MLP,      /* layer */
    ATTRIBUTION_VECTORS,  /* the control vectors, all layers together */
    ATTRIBUTION_EXPERT,   /* layer, and the expert in head */
    ATTRIBUTION_BIASES,   /* the attention outputs' biases, all layers together */
    ATTRIBUTION_LAYER_INPUT, /* layer: its per-layer input (Gemma 4's E2B, E4B) */
} attribution_kind;

typedef struct {
    attribution_kind kind;
    int layer, head;      /* from 0; -1 where the kind has none */
    float value;
} attribution_part;

/* The k components largest in size (|value|), largest first (ties: the order of the
 * grid, embedding first), into out (k); a mixture of experts' layers by chosen expert
 * rather than whole; each layer's per-layer input where the model has them; the
 * vectors and the biases only when there are any (value not 0).
 * Returns how many were written. */
int attribution_top(const step_attribution *a, int k, attribution_part *out);

#endif
