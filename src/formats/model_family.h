/* model_family.h — the GGUF architectures (general.architecture) llmchat runs, as data
 * (llama.cpp's llm_arch with its hyperparameters and tensor table per architecture):
 * what each one changes in the forward pass, which keys and tensors its files hold,
 * which of its layers attend over a sliding window; and the architectures llmchat knows
 * of but does not run, each with what it lacks, so that a refusal can say so.
 *
 * The loader (model_gguf.c) reads a family's row and sets model_arch from it; the pass
 * never sees a family. Plain constant data; no I/O. */
#ifndef LLMCHAT_MODEL_FAMILY_H
#define LLMCHAT_MODEL_FAMILY_H

#include <stdbool.h>

#include "model.h"

/* Which layers of a family with a window attend over it. */
typedef enum {
    FAMILY_SWA_NONE = 0, /* none */
    FAMILY_SWA_ALL,      /* every layer (Phi-3) */
    FAMILY_SWA_EVEN,     /* layers 0, 2, 4, ... (Gemma 2) */
    FAMILY_SWA_5_OF_6,   /* layer l when l % 6 < 5: five local layers, then a global one (Gemma 3) */
} family_swa;

typedef struct {
    const char *name;          /* general.architecture: "qwen2"; also the keys' prefix */
    const char *models;        /* what users know it as: "Qwen2, Qwen2.5" */
    model_rope_layout rope_layout;
    model_activation act;
    bool embed_scale_sqrt;     /* embeddings × sqrt(dim) (Gemma) */
    bool attn_bias;            /* attn_q, attn_k, attn_v .bias, all required (Qwen2) */
    bool qk_norm;              /* attn_q_norm, attn_k_norm (head_size), required */
    bool post_norms;           /* post_attention_norm, post_ffw_norm (dim), required */
    bool fused;                /* attn_qkv (q, then k, then v rows; separate attn_q/k/v
                                  are read too) and ffn_up holding the gate's rows, then
                                  the up projection's (Phi-3) */
    bool tied;                 /* the classifier is always token_embd: a file's
                                  output.weight is not part of it (Gemma) */
    bool softcaps;             /* {arch}.attn_logit_softcapping (default 50) and
                                  final_logit_softcapping (default 30) (Gemma 2) */
    family_swa swa;            /* which layers slide */
    int swa_default;           /* {arch}.attention.sliding_window when absent; 0: required */
    bool swa_zero_none;        /* a window of 0 means none (Phi-4); else 0 is refused */
    float rope_base_swa;       /* RoPE base of the sliding layers, unscaled (Gemma 3:
                                  10000); 0: the file's, as the others */
    bool longrope;             /* rope_factors_long / rope_factors_short, chosen by the
                                  context against rope.scaling.original_context_length,
                                  and rope.scaling.attn_factor (Phi-3) */
    int big_query_layers;      /* a model of this many layers scales queries by
                                  1 / sqrt(dim / n_heads) instead of 1 / sqrt(head_size)
                                  (Gemma 2 27B: 46; Gemma 3 27B: 62); 0: never */
    bool full_rotary_only;     /* rope.dimension_count must be the head size (llama) */
    bool eps_required;         /* {arch}.attention.layer_norm_rms_epsilon must be there */
} model_family;

/* The row of architecture name, or NULL when llmchat does not run it. */
const model_family *model_family_find(const char *name);

/* What llmchat lacks to run architecture name, as a phrase ("mixture-of-experts
 * feed-forward (ffn_gate_inp, ffn_*_exps)"), or NULL when it does not know the name. */
const char *model_family_missing(const char *name);

/* The architectures llmchat runs, ", "-separated: "llama, qwen2, qwen3, ...". */
const char *model_family_names(void);

/* Whether layer l of family f attends over a sliding window (when the model has one). */
bool model_family_slides(const model_family *f, int l);

#endif
