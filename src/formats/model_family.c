/* model_family.c — the table of the architectures llmchat runs and of those it refuses
 * (see model_family.h). The values follow llama.cpp's llama-model.cpp (hyperparameters
 * and tensors per architecture, c392e509, and upstream's for qwen3 and gemma3) and the
 * Hugging Face modeling files; tests/ref/README.md says what each family reads. */
#include "model_family.h"

#include <stdio.h>
#include <string.h>

static const model_family families[] = {
    {.name = "llama", .models = "Llama 2, Llama 3, TinyLlama, Mistral, SmolLM2",
     .rope_layout = MODEL_ROPE_PAIRS, .act = MODEL_ACT_SILU, .full_rotary_only = true},
    {.name = "qwen2", .models = "Qwen2, Qwen2.5", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_SILU, .attn_bias = true, .eps_required = true},
    {.name = "qwen3", .models = "Qwen3", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_SILU, .qk_norm = true, .eps_required = true},
    {.name = "phi3", .models = "Phi-3, Phi-3.5, Phi-4-mini", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_SILU, .fused = true, .swa = FAMILY_SWA_ALL, .swa_zero_none = true,
     .longrope = true, .eps_required = true},
    {.name = "gemma", .models = "Gemma", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_GELU, .embed_scale_sqrt = true, .tied = true, .eps_required = true},
    {.name = "gemma2", .models = "Gemma 2", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_GELU, .embed_scale_sqrt = true, .tied = true, .post_norms = true,
     .softcaps = true, .swa = FAMILY_SWA_EVEN, .swa_default = 4096, .big_query_layers = 46,
     .eps_required = true},
    {.name = "gemma3", .models = "Gemma 3", .rope_layout = MODEL_ROPE_HALVES,
     .act = MODEL_ACT_GELU, .embed_scale_sqrt = true, .tied = true, .post_norms = true,
     .qk_norm = true, .swa = FAMILY_SWA_5_OF_6, .rope_base_swa = 10000.0f,
     .big_query_layers = 62, .eps_required = true},
};

/* Architectures llama.cpp knows that llmchat does not run, and what they need. */
static const struct {
    const char *name, *missing;
} refused[] = {
    {.name = "qwen2moe", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "qwen3moe", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "phimoe", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "olmoe", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "granitemoe", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "deepseek", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
    {.name = "deepseek2", .missing = "multi-head latent attention and mixture-of-experts "
                                     "feed-forward"},
    {.name = "dbrx", .missing = "mixture-of-experts feed-forward (ffn_gate_inp, ffn_*_exps)"},
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
    {.name = "jamba", .missing = "state-space layers and mixture-of-experts feed-forward"},
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
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
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
    static char names[128];
    if (!names[0])
        for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", families[i].name);
        }
    return names;
}

bool model_family_slides(const model_family *f, int l)
{
    switch (f->swa) {
    case FAMILY_SWA_NONE: return false;
    case FAMILY_SWA_ALL: return true;
    case FAMILY_SWA_EVEN: return l % 2 == 0;
    case FAMILY_SWA_5_OF_6: return l % 6 < 5;
    }
    return false;
}
