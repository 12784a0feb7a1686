/* model_family.c — the table of the architectures llmchat runs and of those it refuses
 * (see model_family.h): the one place that knows a family by its name. The values
 * follow llama.cpp's llama-model.cpp (hyperparameters and tensors per architecture,
 * c392e509; upstream's for qwen3 and gemma3; 0.4.0's for qwen3moe, olmoe, gpt-oss,
 * Mixtral's experts, qwen35, qwen35moe and gemma4), its convert_hf_to_gguf.py (the keys
 * each converter writes) and the Hugging Face modeling files; tests/ref/README.md says
 * what each family reads. A test may build this file with rows of its own
 * (MODEL_FAMILY_EXTRA_ROWS: tests/test_family_row.c). */
#include "model_family.h"

#include <stdio.h>
#include <string.h>

/* Phi-3 files converted before the window had a key: llama.cpp's defaults for their
 * shapes (llama-model.cpp, "for backward compatibility"); other shapes need the key. */
static const family_window_rule phi3_windows[] = {
    {.n_layers = 32, .seq_len = 4096, .window = 2047},                     /* mini-4k */
    {.n_layers = 40, .seq_len = 4096, .window = 2047},                     /* medium-4k */
    {.n_layers = 32, .n_kv_heads = 32, .seq_len = 131072, .window = 262144}, /* mini-128k */
    {.n_layers = 40, .seq_len = 131072, .window = 131072},                 /* medium-128k */
    {.window = 0},
};

/* Gemma 2's: 4096 whatever the shape. */
static const family_window_rule gemma2_windows[] = {{.window = 4096}, {.window = 0}};

static const model_family families[] = {
    /* Llama 2, Llama 3, TinyLlama, Mistral, SmolLM2; Mixtral (experts) */
    {.name = "llama", .rope_layout = MODEL_ROPE_PAIRS, .act = MODEL_ACT_SILU,
     .rope_freqs = true, .full_rotary_only = true, .rope_dims_key = true,
     .vocab_size_key = true, .experts = FAMILY_EXPERTS_OPTIONAL, .expert_norm_weights = true},
    /* Qwen2, Qwen2.5 */
    {.name = "qwen2", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .attn_bias = true, .eps_required = true},
    /* Qwen3 */
    {.name = "qwen3", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .qk_norm = true, .eps_required = true},
    /* Qwen3 MoE (Qwen3-30B-A3B, Qwen3-235B-A22B) */
    {.name = "qwen3moe", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .qk_norm = true, .eps_required = true, .experts = FAMILY_EXPERTS_REQUIRED,
     .expert_norm_weights = true, .expert_ff_key = true},
    /* Qwen 3.5 (dense: 0.8B, 2B, 4B, 9B, 27B) */
    {.name = "qwen35", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .qk_norm = true, .eps_required = true, .ffn_norm_name = "post_attention_norm",
     .delta_net = true, .rope_dims_key = true},
    /* Qwen1.5-MoE, Qwen2-MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): Qwen2's attention,
     * experts (their weights not renormalised) and a shared expert */
    {.name = "qwen2moe", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .attn_bias = true, .eps_required = true, .experts = FAMILY_EXPERTS_REQUIRED,
     .expert_ff_key = true, .shared_expert = true},
    /* Qwen 3.5 MoE (Qwen3.5-35B-A3B, 122B-A10B, 397B-A17B): qwen35's layers, experts and a
     * shared expert */
    {.name = "qwen35moe", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .qk_norm = true, .eps_required = true, .ffn_norm_name = "post_attention_norm",
     .delta_net = true, .rope_dims_key = true, .experts = FAMILY_EXPERTS_REQUIRED,
     .expert_norm_weights = true, .expert_ff_key = true, .shared_expert = true},
    /* OLMoE */
    {.name = "olmoe", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,
     .qk_norm = true, .qk_norm_whole = true, .eps_required = true,
     .experts = FAMILY_EXPERTS_REQUIRED},
    /* gpt-oss (gpt-oss-20b, gpt-oss-120b) */
    {.name = "gpt-oss", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SWIGLU_OAI,
     .attn_bias = true, .attn_out_bias = true, .attn_sinks = true,
     .ffn_norm_name = "post_attention_norm", .eps_required = true,
     .experts = FAMILY_EXPERTS_REQUIRED, .expert_biases = true, .expert_norm_weights = true,
     .expert_ff_key = true, .swa_period = 2, .swa_local = 1},
    /* Phi-3, Phi-3.5, Phi-4-mini */
    {.name = "phi3", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU, .fused = true,
     .longrope = true, .eps_required = true, .swa_period = 1, .swa_local = 1,
     .swa_defaults = phi3_windows, .swa_zero_none = true, .rope_dims_key = true},
    /* Gemma */
    {.name = "gemma", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,
     .embed_scale_sqrt = true, .tied = true, .eps_required = true},
    /* Gemma 2 */
    {.name = "gemma2", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,
     .embed_scale_sqrt = true, .big_query_layers = 46, .post_norms = true, .tied = true,
     .eps_required = true, .attn_softcap = 50.0f, .final_softcap = 30.0f, .swa_period = 2,
     .swa_local = 1, .swa_defaults = gemma2_windows},
    /* Gemma 3 */
    {.name = "gemma3", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,
     .embed_scale_sqrt = true, .big_query_layers = 62, .qk_norm = true, .post_norms = true,
     .tied = true, .eps_required = true, .swa_period = 6, .swa_local = 5,
     .rope_base_swa = 10000.0f},
    /* Gemma 4 (dense: E2B, E4B, 31B; with experts beside the dense feed-forward:
     * 26B-A4B) */
    {.name = "gemma4", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,
     .experts = FAMILY_EXPERTS_OPTIONAL, .expert_norm_weights = true, .expert_ff_key = true,
     .dense_beside_experts = true,
     .embed_scale_sqrt = true, .qk_norm = true, .post_norms = true, .eps_required = true,
     .rope_freqs = true, .swa_period = 5, .swa_local = 4, .rope_base_swa = 10000.0f,
     .layer_shapes = true, .value_norm = true, .layer_scale = true, .per_layer_inputs = true,
     .final_softcap_key = true, .rope_dims_key = true},
#ifdef MODEL_FAMILY_EXTRA_ROWS
    MODEL_FAMILY_EXTRA_ROWS
#endif
};
enum { N_FAMILIES = sizeof families / sizeof families[0] };

/* Architectures llama.cpp knows that llmchat does not run, and what they need. */
static const struct {
    const char *name, *missing;
} refused[] = {
    {.name = "phimoe", .missing = "LayerNorm with biases and its router's sparse mixer"},
    {.name = "granitemoe", .missing = "Granite's embedding, residual and attention multipliers"},
    {.name = "deepseek", .missing = "shared experts beside the routed ones (ffn_*_shexp) and "
                                    "dense leading layers"},
    {.name = "deepseek2", .missing = "multi-head latent attention (MLA), shared experts and "
                                     "expert groups"},
    {.name = "dbrx", .missing = "LayerNorm and clamped fused attention (attn_qkv with a clip)"},
    {.name = "gemma3n", .missing = "per-layer embeddings and AltUp (the MatFormer blocks)"},
    {.name = "qwen2vl", .missing = "multimodal RoPE (rope.dimension_sections)"},
    {.name = "qwen", .missing = "Qwen 1's fused attn_qkv with a bias"},
    {.name = "phi2", .missing = "LayerNorm with biases and a parallel attention and MLP block"},
    {.name = "gpt2", .missing = "LayerNorm with biases, learned position embeddings "
                                "(position_embd) and an MLP without a gate"},
    {.name = "gptneox", .missing = "LayerNorm with biases and a parallel attention and MLP block"},
    {.name = "falcon", .missing = "LayerNorm with biases and a parallel attention and MLP block"},
    {.name = "starcoder", .missing = "LayerNorm with biases and learned position embeddings"},
    {.name = "starcoder2", .missing = "LayerNorm with biases and an MLP without a gate"},
    {.name = "bloom", .missing = "ALiBi position biases and LayerNorm with biases"},
    {.name = "mpt", .missing = "ALiBi position biases"},
    {.name = "stablelm", .missing = "LayerNorm with biases"},
    {.name = "command-r", .missing = "LayerNorm and a parallel attention and MLP block"},
    {.name = "mamba", .missing = "a state-space model: no attention (ssm_* tensors)"},
    {.name = "mamba2", .missing = "a state-space model: no attention (ssm_* tensors)"},
    {.name = "rwkv6", .missing = "a recurrent model: no attention (time_mix_* tensors)"},
    {.name = "rwkv7", .missing = "a recurrent model: no attention (time_mix_* tensors)"},
    {.name = "jamba", .missing = "state-space layers (ssm_* tensors)"},
    {.name = "bert", .missing = "an encoder (bidirectional attention, no text generation)"},
    {.name = "nomic-bert", .missing = "an encoder (bidirectional attention, no text generation)"},
    {.name = "jina-bert-v2", .missing = "an encoder (bidirectional attention, no text "
                                        "generation)"},
    {.name = "t5", .missing = "an encoder-decoder (cross-attention, relative position biases)"},
    {.name = "t5encoder", .missing = "an encoder (bidirectional attention, no text generation)"},
    {.name = "clip", .missing = "a vision encoder (a multimodal projector), not a language model"},
};

const model_family *model_family_find(const char *name)
{
    for (int i = 0; i < N_FAMILIES; i++)
        if (!strcmp(families[i].name, name))
            return &families[i];
    return NULL;
}

const char *model_family_missing(const char *name)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!strcmp(refused[i].name, name))
            return refused[i].missing;
    return NULL;
}

const char *model_family_names(void)
{
    static char names[256];
    if (!names[0])
        for (int i = 0; i < N_FAMILIES; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", families[i].name);
        }
    return names;
}

bool model_family_has_windows(const model_family *f)
{
    return f->swa_period > 0 && f->swa_local > 0;
}


bool model_family_slides(const model_family *f, int l)
{
    return model_family_has_windows(f) && l % f->swa_period < f->swa_local;
}

/* Whether count matches a rule's (0: any). */
static bool matches(int64_t rule, int64_t count)
{
    return rule == 0 || rule == count;
}

int64_t model_family_default_window(const model_family *f, int64_t n_layers,
                                    int64_t n_kv_heads, int64_t seq_len)
{
    for (const family_window_rule *r = f->swa_defaults; r && r->window; r++)
        if (matches(r->n_layers, n_layers) && matches(r->n_kv_heads, n_kv_heads) &&
            matches(r->seq_len, seq_len))
            return r->window;
    return 0;
}
