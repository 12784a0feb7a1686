/* model_family.h — the GGUF architectures (general.architecture) llmchat runs, as data
 * (llama.cpp's llm_arch with its hyperparameters and tensor table per architecture):
 * one row per family says what it changes in the forward pass, which tensors and keys
 * its files hold, which of its layers attend over a sliding window and how wide when a
 * file does not say, and what its converter writes; and the architectures llmchat knows
 * of but does not run, each with what it lacks, so that a refusal can say so.
 *
 * Every reader of a family reads its row and never tests its name: the loader
 * (model_gguf.c, model_gguf_weights.c) sets model_arch from it, the benchmark's GGUF
 * writer (tools/bench/shape_gguf.c) and the tests' fixtures (tests/family_gguf.h,
 * tests/ref/make_arch_gguf.py) write its tensors and keys from it; the pass never sees a
 * family. A new family on features that exist is one row. Plain constant data; no I/O. */
#ifndef LLMCHAT_MODEL_FAMILY_H
#define LLMCHAT_MODEL_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/* The sliding window of a family's files that lack {arch}.attention.sliding_window,
 * for the shapes that match (a count of 0 matches any): llama.cpp's defaults. */
typedef struct {
    int64_t n_layers, n_kv_heads, seq_len;
    int64_t window;            /* 0 ends a list of rules */
} family_window_rule;

/* Whether a family's layers may hold a mixture of experts instead of one feed-forward. */
typedef enum {
    FAMILY_EXPERTS_NONE = 0,   /* never: {arch}.expert_count is refused */
    FAMILY_EXPERTS_OPTIONAL,   /* when {arch}.expert_count > 0 (llama: Mixtral) */
    FAMILY_EXPERTS_REQUIRED,   /* always (Qwen3 MoE, OLMoE) */
} family_experts;

typedef struct {
    const char *name;          /* general.architecture: "qwen2"; also the keys' prefix */

    /* the pass (model_arch) */
    model_rope_layout rope_layout;
    model_activation act;
    bool embed_scale_sqrt;     /* embeddings × sqrt(dim) (Gemma) */
    int big_query_layers;      /* a model of this many layers scales queries by
                                  1 / sqrt(dim / n_heads) instead of 1 / sqrt(head_size)
                                  (Gemma 2 27B: 46; Gemma 3 27B: 62); 0: never */

    /* the tensors of its files (beside every family's, model_gguf_weights.c) */
    bool attn_bias;            /* attn_q, attn_k, attn_v .bias, all required (Qwen2) */
    bool attn_out_bias;        /* attn_output.bias (dim), required (gpt-oss) */
    bool attn_sinks;           /* attn_sinks.weight (n_heads), required: each head's sink
                                  logit (gpt-oss) */
    const char *ffn_norm_name; /* the feed-forward's RMSNorm is blk.N.{this}.weight (gpt-oss:
                                  "post_attention_norm"); NULL: ffn_norm */
    bool qk_norm;              /* attn_q_norm, attn_k_norm (head_size), required */
    bool qk_norm_whole;        /* with qk_norm: they are (q_dim) and (kv_dim), each an
                                  RMSNorm of the whole vector (OLMoE) */
    family_experts experts;    /* blk.N.ffn_gate_inp (the router, (n_experts, dim)) and
                                  ffn_gate_exps, ffn_up_exps, ffn_down_exps (n_experts
                                  matrices each) instead of ffn_gate, ffn_up, ffn_down,
                                  with the keys {arch}.expert_count, expert_used_count */
    bool expert_norm_weights;  /* the chosen experts' probabilities are renormalised */
    bool expert_biases;        /* ffn_gate_inp.bias (n_experts), ffn_gate_exps.bias and
                                  ffn_up_exps.bias (n_experts, expert_hidden),
                                  ffn_down_exps.bias (n_experts, dim), all required (gpt-oss) */
    bool shared_expert;        /* beside the routed experts, a shared one every token runs:
                                  ffn_gate_shexp, ffn_up_shexp (shexp_hidden, dim),
                                  ffn_down_shexp (dim, shexp_hidden), its output times the
                                  sigmoid of ffn_gate_inp_shexp (dim) · x; shexp_hidden is
                                  {arch}.expert_shared_feed_forward_length, else
                                  feed_forward_length (Qwen 3.5 MoE, qwen35moe) */
    bool dense_beside_experts; /* with experts ({arch}.expert_count > 0), every layer keeps
                                  its dense feed-forward beside them, each part with norms
                                  of its own: the router reads the stream RMS-normed, times
                                  ffn_gate_inp.scale (dim) / sqrt(dim); the experts read it
                                  normed by pre_ffw_norm_2 (dim); the dense output is normed
                                  by post_ffw_norm_1, the experts' sum by post_ffw_norm_2
                                  (dim), and their sum goes through post_ffw_norm (Gemma 4
                                  26B-A4B) */
    bool expert_ff_key;        /* an expert's hidden size is {arch}.expert_feed_forward_length
                                  (else feed_forward_length; without the key,
                                  feed_forward_length / expert_used_count, as llama.cpp) */
    bool post_norms;           /* post_attention_norm, post_ffw_norm (dim), required */
    bool fused;                /* attn_qkv (q, then k, then v rows; separate attn_q/k/v
                                  are read too) and ffn_up holding the gate's rows, then
                                  the up projection's (Phi-3) */
    bool tied;                 /* the classifier is always token_embd: a file's
                                  output.weight is not part of it (Gemma) */
    bool rope_freqs;           /* rope_freqs.weight may be there: per-pair RoPE frequency
                                  divisors (Llama 3.1+) */
    bool longrope;             /* rope_factors_long / rope_factors_short (both or
                                  neither), chosen by the context against
                                  rope.scaling.original_context_length, and
                                  rope.scaling.attn_factor (Phi-3) */

    bool delta_net;            /* hybrid (Qwen 3.5): every layer is a Gated DeltaNet (attn_qkv,
                                  attn_gate, ssm_conv1d, ssm_dt.bias, ssm_a, ssm_beta,
                                  ssm_alpha, ssm_norm, ssm_out; the ssm.* keys) but those
                                  {arch}.attention.recurrent_layers marks 0, or without it
                                  every full_attention_interval-th (4), which are gated
                                  attention (attn_q twice as tall); RoPE's pairs follow
                                  rope.dimension_sections; {arch}.nextn_predict_layers
                                  blocks after the others are multi-token prediction,
                                  not run */

    bool layer_shapes;         /* layers of their own shapes (Gemma 4): the sliding layers'
                                  heads are {arch}.attention.key_length_swa wide, RoPE turns
                                  rope.dimension_count_swa of them with base
                                  rope.freq_base_swa; the others' (key_length,
                                  rope.dimension_count) with rope_freqs.weight; which layers
                                  slide is attention.sliding_window_pattern (one flag per
                                  layer; swa_period, swa_local only say what writers write);
                                  head_count_kv and feed_forward_length may be one per
                                  layer; the last attention.shared_kv_layers layers attend
                                  over the KV cache of the last earlier layer of their kind
                                  (no attn_k, attn_v, attn_k_norm); queries are not scaled */
    bool value_norm;           /* values are RMS-normed (no weight); attn_v may be absent,
                                  the keys then serve (Gemma 4) */
    bool layer_scale;          /* blk.N.layer_output_scale.weight (1) may be there: the
                                  layer's output times it (Gemma 4) */
    bool per_layer_inputs;     /* {arch}.embedding_length_per_layer_input (ple) > 0 gives
                                  per_layer_token_embd (vocab, layers x ple),
                                  per_layer_model_proj (layers x ple, dim),
                                  per_layer_proj_norm (ple) and per layer inp_gate (ple,
                                  dim), proj (dim, ple), post_norm (dim) (Gemma 4) */

    /* its keys */
    bool eps_required;         /* {arch}.attention.layer_norm_rms_epsilon must be there */
    bool full_rotary_only;     /* rope.dimension_count must be the head size (llama) */
    float attn_softcap;        /* {arch}.attn_logit_softcapping when absent (Gemma 2:
                                  50); 0: the family has no soft-caps, and its files'
                                  caps keys are not read */
    float final_softcap;       /* {arch}.final_logit_softcapping when absent (30) */
    bool final_softcap_key;    /* with final_softcap 0: the key is read where a file has it
                                  (Gemma 4), none without */
    int swa_period, swa_local; /* layer l attends over the sliding window when
                                  l % swa_period < swa_local (Phi-3: 1, 1: every layer;
                                  Gemma 2: 2, 1; Gemma 3: 6, 5); period 0: no layer, and
                                  {arch}.attention.sliding_window is not read */
    const family_window_rule *swa_defaults; /* the window when the key is absent: the
                                  first rule the shape matches; NULL or none: the key is
                                  required */
    bool swa_zero_none;        /* a window of 0 means none (Phi-4); else 0 is refused */
    float rope_base_swa;       /* RoPE base of the sliding layers, unscaled (Gemma 3:
                                  10000); 0: the file's, as the others */

    /* what its converter (llama.cpp's convert_hf_to_gguf.py) writes beside the keys
     * every family has; the loader does not need them, the fixtures write them */
    bool rope_dims_key;        /* {arch}.rope.dimension_count (llama, Phi-3) */
    bool vocab_size_key;       /* {arch}.vocab_size (llama) */
} model_family;

/* The row of architecture name, or NULL when llmchat does not run it. */
const model_family *model_family_find(const char *name);

/* What llmchat lacks to run architecture name, as a phrase ("mixture-of-experts
 * feed-forward (ffn_gate_inp, ffn_*_exps)"), or NULL when it does not know the name. */
const char *model_family_missing(const char *name);

/* The architectures llmchat runs, ", "-separated: "llama, qwen2, qwen3, ...". */
const char *model_family_names(void);

/* Whether family f has layers that attend over a sliding window (when the model's
 * window is not 0), and whether layer l is one of them. */
bool model_family_has_windows(const model_family *f);
bool model_family_slides(const model_family *f, int l);

/* The window of a model of family f whose file lacks the key: the first of
 * f->swa_defaults its shape matches, or 0 (none: the key is required). */
int64_t model_family_default_window(const model_family *f, int64_t n_layers,
                                    int64_t n_kv_heads, int64_t seq_len);

#endif
