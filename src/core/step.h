/* step.h — the step record: everything the engine says about one position.
 *
 * One record per position of the sequence. It is the only thing front ends (TUI
 * panes, the trace writer, the REPL) read about the model's work: they never reach
 * into the transformer. A record is created when its position has been run (token,
 * phase, top candidates, timings, attention) and finished when the id that follows
 * it is known (next, next_prob, next_rank, and the sampler's decision if one was
 * made). Records are plain data owned by the engine. */
#ifndef LLMCHAT_STEP_H
#define LLMCHAT_STEP_H

#include <stdbool.h>

#include "intervention.h"
#include "sampler.h"

enum { STEP_TOP_MAX = 64, STEP_LENS_TOP = 3 };

typedef enum {
    STEP_PROMPT = 0, /* the token came from the prompt / template */
    STEP_GEN,        /* the token was sampled by the engine */
    STEP_FORCED,     /* the token was forced by the user (or closes a cut-short reply) */
} step_phase;

typedef struct {
    int id;
    float logit;     /* raw logit */
    float prob;      /* softmax of the raw logits at temperature 1, before any sampler stage */
    float p_final;   /* when the record is `sampled`: its probability in the distribution
                        the draw was made from (after the repetition penalty, temperature,
                        top-k, top-p, min-p, renormalised); 0 when a stage removed it */
    sampler_cut cut; /* when `sampled`: the stage that removed it, or SAMPLER_KEPT */
} step_candidate;

/* The logit lens at one layer: what the residual stream after that layer predicts
 * for pos + 1 through the final RMSNorm and the classifier (softmax, temperature 1). */
typedef struct {
    int id[STEP_LENS_TOP];     /* the top tokens, most probable first */
    float prob[STEP_LENS_TOP];
    int next_rank;             /* rank of the record's next among this layer's logits,
                                  1 = top; 0 when next was not known */
    float next_prob;           /* its probability; NaN when next was not known */
} step_lens_layer;

/* One step of the forward pass at a position, summarized (capture.h makes it from the
 * step's values): the compute view's row, and what --trace-tensors writes. */
enum { STEP_TENSOR_FIRST = 8, STEP_TENSOR_BINS = 16, STEP_TENSOR_NAME = 24 };
typedef struct {
    char name[STEP_TENSOR_NAME];     /* the hook point's name, llama.cpp's: "Qcur" */
    int layer;                       /* 0..n_layers-1; -1 outside the layers */
    int n_dims;                      /* 1 or 2 */
    int shape[2];                    /* [width] or [heads, per head] (hook_shape) */
    int n;                           /* values: the product of the shape */
    int n_masked;                    /* values that are not finite (the keys a query does
                                        not see, at kq): left out of the numbers below */
    float min, max, mean, l2;        /* over the finite values (l2: the Euclidean norm);
                                        NaN when there are none */
    int n_first;                     /* min(n, STEP_TENSOR_FIRST) */
    float first[STEP_TENSOR_FIRST];  /* the first values, as they are */
    unsigned hist[STEP_TENSOR_BINS]; /* the finite values counted in equal bins of
                                        [min, max] (all in the middle one when min == max) */
} step_tensor;

typedef struct {
    int pos;                 /* position in the sequence, 0-based */
    int token;               /* the input token at pos */
    step_phase phase;        /* how token got there */
    int next;                /* the id chosen for pos + 1; -1 until known */
    float next_prob;         /* the model's probability of next (raw softmax) */
    int next_rank;           /* next's rank among the model's logits, 1 = top */
    bool sampled;            /* next came from the sampler: `sampler` is valid */
    sampler_record sampler;  /* the sampler's decision for next */
    bool guessed;            /* speculative decoding guessed `guess` for pos + 1 and ran it
                                before the sampler decided (engine_step_guessed): the guess
                                was accepted when it equals next, else rejected */
    int guess;
    int n_top;               /* valid entries in top */
    float entropy;           /* entropy (nats) of the model's raw distribution for pos + 1;
                                NaN when the position has no candidates */
    step_candidate top[STEP_TOP_MAX]; /* the model's top candidates for pos + 1, by prob */
    double forward_ms;       /* time of the forward pass (a batch's time is shared out) */
    bool batch;              /* pos ran on the batch kernels (transformer_kernels), else on
                                the token kernels */
    double sample_ms;        /* time of the sampler's decision */
    const float *attn;       /* (n_layers, n_heads, pos + 1) attention weights of this
                                query, or NULL when not captured. Borrowed from the
                                engine: valid until a rewind to pos or earlier, or
                                engine_free. */
    const step_lens_layer *lens; /* (n_layers) the logit lens, or NULL when not computed
                                    (engine_lens). Borrowed like attn; also dropped when
                                    next becomes known after it was computed. */
    const step_tensor *tensors; /* (n_tensors) the steps of the pass at pos, summarized
                                   (--trace-tensors: the layers it names and the steps
                                   outside the layers), in the pass's order; NULL when not
                                   computed. Borrowed like lens */
    int n_tensors;
    const intervention *intervention; /* the control vectors pos ran with, or NULL when
                                         none were ever set. Borrowed from the engine
                                         (or the trace reader): valid until it is freed */
} step_record;

/* A what-if at one position: the position run again with the heads knocked out now,
 * beside the same run with none out (control vectors as they are now in both). */
enum { STEP_WHATIF_TOP = 5 };
typedef struct {
    int pos;
    int n_top;                        /* candidates below (the top of `after`) */
    int id[STEP_WHATIF_TOP];
    float prob_before[STEP_WHATIF_TOP], prob_after[STEP_WHATIF_TOP];
    int target;                       /* the record's next, else the top-1 before */
    float target_prob_before, target_prob_after;
    float target_logit_before, target_logit_after;
} step_whatif;

/* Direct logit attribution at one position: how much each part of the residual stream
 * that the final RMSNorm reads wrote toward one token's logit. The stream is the input
 * token's embedding plus, for each layer, its attention output (the sum of its heads'
 * parts: wo's columns of the head times the head's output), its feed-forward (MLP)
 * output and, where the model has them, its per-layer input, plus the control vectors
 * added. Each part is projected onto the token's
 * classifier row through the final RMSNorm with the norm's scale of this position
 * (1 / rms of the whole stream): logit = Σ_i wcls[target][i] · rms_final[i] · scale ·
 * stream[i], linear in the stream once the scale is fixed, so the parts add up to the
 * logit up to float rounding (exactly so in the math with fp32 weights; with int8
 * weights the engine also rounds its activations to int8, the parts do not).
 * Families that norm a block's output before its residual (Gemma 2, 3: post-norms) have
 * each block's part scaled by that norm at this position, its scale held as the final
 * norm's is: the parts still add up. A final soft-cap (Gemma 2) is not linear: the
 * parts add up to the logit before it, `before_cap`, and the logit is
 * softcap · tanh(before_cap / softcap). */
typedef struct {
    int pos;
    int target;          /* the token whose logit is split */
    int n_layers, n_heads;
    const float *head;   /* (n_layers, n_heads) each head's part (n_heads: model_heads_max;
                            a layer with fewer has 0 for the rest); borrowed from the engine,
                            valid until the next engine_attribution or engine_free */
    const float *mlp;    /* (n_layers) each layer's feed-forward part; borrowed likewise */
    int n_used;          /* a mixture of experts: the experts a token uses (0: dense) */
    const float *expert; /* (n_layers, n_used) each chosen expert's part, its weight
                            included (a layer's add up to its mlp part), or NULL; borrowed */
    const int *expert_id; /* (n_layers, n_used) which expert each is, in the router's order */
    const float *layer_input; /* (n_layers) each layer's per-layer input's part (Gemma 4's
                            E2B, E4B: the gated projection of the layer's own embedding of
                            the token, as its norm leaves it), or NULL for a model without
                            them; borrowed likewise */
    float embedding;     /* the input token's embedding */
    float biases;        /* the attention outputs' biases of every layer (gpt-oss), 0 when
                            the model has none */
    float vectors;       /* the control vectors added after the layers (0 when none) */
    float norm_scale;    /* the final RMSNorm's 1 / sqrt(mean(stream²) + eps) at pos */
    float before_cap;    /* the parts' sum: target's logit before the final
                            soft-cap (its logit when there is none) */
    float softcap;       /* the final soft-cap, 0 when none: logit = softcap ·
                            tanh(before_cap / softcap), and the parts do not add up to it */
    bool post_norms;     /* the blocks' parts went through their post-norms' scales at pos */
    float logit;         /* target's logit in the same forward pass */
} step_attribution;

const char *step_phase_name(step_phase p); /* "prompt", "gen", "forced" */

#endif
