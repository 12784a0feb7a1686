/* family_gguf.h — tiny random-weight GGUF models of each family llmchat runs (llama,
 * qwen2, qwen3, qwen3moe, qwen2moe, olmoe, gpt-oss, qwen35, qwen35moe, phi3, gemma, gemma2, gemma3,
 * gemma4; mixtral:
 * llama with experts), written in C at test time with the keys
 * and tensor names llama.cpp's converter writes (as tests/ref/make_arch_gguf.py does,
 * without numpy), and with one edit to make hostile variants: a key dropped or set, a
 * tensor dropped, resized, added, or holding a NaN, the matrices of another tensor
 * type (random blocks of Q4_0 ... Q6_K or MXFP4 scaled to the float weights' spread), or the
 * file of another family with the shape's weights. For the loader's tests
 * (test_model_family, test_family_row) and, through make_family_gguf, the end-to-end
 * ones; with a vocabulary file its tokenizer.* keys (and so its chat template) are
 * copied in.
 *
 * Which tensors and keys a family's file holds comes from its row (model_family.h),
 * the description the loader reads; a shape here holds only what a published model
 * chooses (sizes, head size, window, RoPE base and scaling, a tied classifier, LongRoPE
 * factors). Not a reference: the weights are an LCG's; what each family's description
 * must be is test_model_family's, and the checks against llama.cpp and the reference
 * pass are tests/ref's. It writes through the GGUF writer (gguf.h) and reads only the
 * vocabulary's keys. */
#ifndef LLMCHAT_TEST_FAMILY_GGUF_H
#define LLMCHAT_TEST_FAMILY_GGUF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "model_family.h"

/* One change to the family's file. */
typedef struct {
    const char *drop_key;            /* e.g. "phi3.attention.sliding_window" */
    const char *uint_key;            /* set (or add) a uint32 */
    uint32_t uint_value;
    const char *float_key;           /* set (or add) a float32 */
    float float_value;
    const char *string_key;          /* set (or add) a string */
    const char *string_value;
    size_t string_len;               /* its bytes (0: strlen; more: NULs inside) */
    const char *drop_tensor;
    const char *resize_tensor;       /* give it dims [ne0] (ne1 0), [ne0, ne1] or
                                        [ne0, ne1, ne2] */
    uint64_t ne0, ne1, ne2;
    const char *extra_tensor;        /* add an F32 vector of 64 values */
    const char *value_tensor;        /* value value_index of an F32 tensor becomes value */
    uint64_t value_index;
    float value;
    int layers;                      /* this many layers instead of the shape's (0) */
    const char *family;              /* the file of this family (its name, keys and
                                        tensors) instead of the shape's (NULL) */
    int recurrent_layers;            /* write {arch}.attention.recurrent_layers with this
                                        many flags (the shape's layer kinds, then 0s) */
    uint32_t type;                   /* the matrices' type: GGML_TYPE_F32 (0), F16, BF16,
                                        Q8_0 (the values rounded), or a block type of
                                        family_block_halves (random blocks) */
} family_edit;

/* The shape of each family's tiny model. */
typedef struct {
    const char *name, *arch;         /* arch: the family (model_family.h) */
    int dim, ff, layers, heads, kv, head, ctx;
    bool key_length;                 /* attention.key_length and value_length written */
    bool tied;                       /* no output.weight (always, for a tied family) */
    bool longrope;                   /* LongRoPE's factors and keys (a family that has
                                        them) */
    int window, rot;                 /* attention.sliding_window (a family with sliding
                                        layers); rope.dimension_count (0: the head size) */
    float base, linear;              /* rope.freq_base (0: not written), linear factor */
    float yarn;                      /* YaRN's factor (rope.scaling.type "yarn", the
                                        original context 64); 0: none */
    int experts, used, expert_ff;    /* a mixture of experts (0: dense): expert_count,
                                        expert_used_count, an expert's hidden size (its key
                                        where the family has one; else ff is it) */
    int shexp_ff;                    /* a shared expert's hidden size (a family that has
                                        one: expert_shared_feed_forward_length) */
    /* a hybrid family (model_family.delta_net): every attn_every-th layer gated
     * attention, the others Gated DeltaNets of dn_k q/k heads and dn_v value heads of
     * `head` values, convolved over dn_conv tokens; RoPE's sections; mtp blocks of
     * multi-token prediction after the layers */
    int attn_every, dn_conv, dn_k, dn_v, sections[4], mtp;
    /* a family of per-layer shapes (model_family.layer_shapes): which layers slide
     * ("SSGSG": S slides, G is global), a sliding layer's head size (head is a global
     * one's), a global layer's KV heads, the last layers sharing KV caches (twice as
     * wide a feed-forward), per-layer inputs' width; the global layers that write their
     * cache have no attn_v */
    const char *pattern;
    int swa_head, kv_full, shared, ple;
} family_shape;

static const family_shape family_shapes[] = {
    {.name = "llama", .arch = "llama", .dim = 64, .ff = 96, .layers = 2, .heads = 4, .kv = 2,
     .head = 16, .ctx = 256},
    /* rows of 256 and 512: every block type, the K types' super-blocks included */
    {.name = "llama256", .arch = "llama", .dim = 256, .ff = 512, .layers = 2, .heads = 4,
     .kv = 2, .head = 64, .ctx = 256},
    {.name = "qwen2", .arch = "qwen2", .dim = 64, .ff = 96, .layers = 2, .heads = 4, .kv = 2,
     .head = 16, .ctx = 256, .tied = true, .base = 1e6f},
    {.name = "qwen3", .arch = "qwen3", .dim = 64, .ff = 96, .layers = 2, .heads = 4, .kv = 2,
     .head = 32, .ctx = 256, .key_length = true, .tied = true, .base = 1e6f},
    {.name = "qwen3moe", .arch = "qwen3moe", .dim = 64, .ff = 96, .layers = 2, .heads = 4,
     .kv = 2, .head = 32, .ctx = 256, .key_length = true, .tied = true, .base = 1e6f,
     .experts = 8, .used = 2, .expert_ff = 32},
    /* wide enough that one token runs on several threads */
    {.name = "qwen3moe-wide", .arch = "qwen3moe", .dim = 256, .ff = 512, .layers = 2,
     .heads = 4, .kv = 2, .head = 64, .ctx = 256, .key_length = true, .tied = true,
     .base = 1e6f, .experts = 8, .used = 4, .expert_ff = 256},
    {.name = "olmoe", .arch = "olmoe", .dim = 64, .ff = 32, .layers = 2, .heads = 4, .kv = 4,
     .head = 16, .ctx = 256, .experts = 8, .used = 3, .expert_ff = 32},
    {.name = "gpt-oss", .arch = "gpt-oss", .dim = 64, .ff = 64, .layers = 2, .heads = 4,
     .kv = 2, .head = 16, .ctx = 256, .key_length = true, .window = 8, .base = 150000.0f,
     .yarn = 32.0f, .experts = 8, .used = 2, .expert_ff = 64},
    {.name = "mixtral", .arch = "llama", .dim = 64, .ff = 64, .layers = 2, .heads = 4, .kv = 2,
     .head = 16, .ctx = 256, .experts = 4, .used = 2, .expert_ff = 64},
    {.name = "phi3", .arch = "phi3", .dim = 64, .ff = 96, .layers = 2, .heads = 4, .kv = 2,
     .head = 16, .ctx = 256, .longrope = true, .window = 16},
    {.name = "phi3-partial", .arch = "phi3", .dim = 64, .ff = 96, .layers = 2, .heads = 4,
     .kv = 2, .head = 16, .ctx = 256, .window = 0, .rot = 12, .tied = true},
    {.name = "qwen35", .arch = "qwen35", .dim = 64, .ff = 96, .layers = 4, .heads = 4, .kv = 2,
     .head = 16, .ctx = 256, .key_length = true, .tied = true, .base = 1e7f, .rot = 8,
     .attn_every = 2, .dn_conv = 4, .dn_k = 2, .dn_v = 4, .sections = {2, 1, 1, 0}},
    /* with a multi-token-prediction block, wide enough that one token runs on several
     * threads, every 4th layer attention; sections that leave RoPE's pair 4 unturned */
    {.name = "qwen35-mtp", .arch = "qwen35", .dim = 256, .ff = 512, .layers = 4, .heads = 4,
     .kv = 2, .head = 64, .ctx = 256, .key_length = true, .base = 1e7f, .rot = 16,
     .attn_every = 4, .dn_conv = 4, .dn_k = 2, .dn_v = 4, .sections = {3, 1, 2, 0}, .mtp = 1},
    /* Qwen2-MoE: Qwen2's attention, experts and a shared expert */
    {.name = "qwen2moe", .arch = "qwen2moe", .dim = 64, .ff = 96, .layers = 2, .heads = 4,
     .kv = 2, .head = 16, .ctx = 256, .base = 1e6f, .experts = 8, .used = 2, .expert_ff = 32,
     .shexp_ff = 96},
    /* Qwen 3.5 MoE: qwen35's layers with experts and a shared expert, wide enough that
     * one token runs on several threads */
    {.name = "qwen35moe", .arch = "qwen35moe", .dim = 256, .ff = 96, .layers = 4, .heads = 4,
     .kv = 2, .head = 64, .ctx = 256, .key_length = true, .tied = true, .base = 1e7f, .rot = 16,
     .attn_every = 2, .dn_conv = 4, .dn_k = 2, .dn_v = 4, .sections = {3, 1, 2, 0},
     .experts = 8, .used = 2, .expert_ff = 64, .shexp_ff = 96},
    {.name = "gemma", .arch = "gemma", .dim = 64, .ff = 96, .layers = 2, .heads = 4, .kv = 1,
     .head = 32, .ctx = 256, .key_length = true, .tied = true},
    {.name = "gemma2", .arch = "gemma2", .dim = 64, .ff = 96, .layers = 4, .heads = 4, .kv = 2,
     .head = 32, .ctx = 256, .key_length = true, .tied = true, .window = 4},
    {.name = "gemma3", .arch = "gemma3", .dim = 64, .ff = 96, .layers = 7, .heads = 4, .kv = 2,
     .head = 32, .ctx = 256, .key_length = true, .tied = true, .window = 4, .base = 1e6f,
     .linear = 8.0f},
    {.name = "gemma4", .arch = "gemma4", .dim = 64, .ff = 96, .layers = 5, .heads = 4, .kv = 2,
     .head = 32, .ctx = 256, .key_length = true, .window = 4, .base = 1e6f, .pattern = "SSGSG",
     .swa_head = 16, .kv_full = 1, .shared = 2, .ple = 8},
    /* as the 31B: no per-layer inputs, no layer sharing a cache */
    {.name = "gemma4-31b", .arch = "gemma4", .dim = 64, .ff = 96, .layers = 5, .heads = 4,
     .kv = 2, .head = 32, .ctx = 256, .key_length = true, .window = 4, .base = 1e6f,
     .pattern = "SSGSG", .swa_head = 16, .kv_full = 1},
    /* as the 26B-A4B: the 31B's layout with experts beside each layer's dense
     * feed-forward (their gate and up stacks as one, a scale per expert), wide enough
     * that one token runs on several threads */
    {.name = "gemma4-moe", .arch = "gemma4", .dim = 256, .ff = 96, .layers = 5, .heads = 4,
     .kv = 2, .head = 32, .ctx = 256, .key_length = true, .window = 4, .base = 1e6f,
     .pattern = "SSGSG", .swa_head = 16, .kv_full = 1, .experts = 8, .used = 2,
     .expert_ff = 64},
};

static inline const family_shape *family_shape_find(const char *name)
{
    for (size_t i = 0; i < sizeof family_shapes / sizeof family_shapes[0]; i++)
        if (!strcmp(family_shapes[i].name, name))
            return &family_shapes[i];
    return NULL;
}

/* ---- the tensors ---- */

typedef enum {
    FILL_MATRIX, FILL_NORM, FILL_BIAS, FILL_LONG, FILL_SHORT, FILL_DECAY,
    FILL_PROPORTIONAL, /* rope_freqs of Gemma 4's global layers: the first quarter of the
                          pairs 1 (they turn), the others 1e30 */
    FILL_SCALE,        /* a layer's output scale, 0.5 to 1 */
} family_fill;

typedef struct {
    char name[64];
    uint64_t ne0, ne1;  /* ne1 0: a vector */
    uint64_t ne2;       /* 0: 1-D or 2-D; else a stack of ne2 matrices (the experts) */
    family_fill fill;
    uint32_t type;      /* GGML_TYPE_F32, or F16 for a large embedding */
} family_tensor;

typedef struct {
    family_tensor *t;
    int n, cap;
} family_tensors;

static inline void family_add(family_tensors *l, const char *name, uint64_t ne0, uint64_t ne1,
                              family_fill fill)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->t = realloc(l->t, sizeof *l->t * (size_t)l->cap);
        if (!l->t)
            abort();
    }
    family_tensor *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->ne2 = 0;
    t->fill = fill;
    t->type = GGML_TYPE_F32;
}

/* Whether layer il of shape s (family f) slides: its pattern's letter, or the family's
 * rule. */
static inline bool family_layer_slides(const family_shape *s, const model_family *f, int il)
{
    if (s->pattern && il < (int)strlen(s->pattern))
        return s->pattern[il] == 'S';
    return model_family_slides(f, il);
}

/* The first layer of shape s that reads an earlier layer's KV cache (layers: none). */
static inline int family_first_shared(const family_shape *s)
{
    return s->layers - s->shared;
}

/* Layer il's KV heads and feed-forward width (a family of per-layer shapes: the global
 * layers' KV heads, the sharing layers' twice as wide). */
static inline int family_layer_kv(const family_shape *s, const model_family *f, int il)
{
    return f->layer_shapes && !family_layer_slides(s, f, il) ? s->kv_full : s->kv;
}
static inline int family_layer_ff(const family_shape *s, const model_family *f, int il)
{
    return f->layer_shapes && il >= family_first_shared(s) ? 2 * s->ff : s->ff;
}

/* Layer il of a family of per-layer shapes (Gemma 4): its own head size and KV heads,
 * no keys or values where it shares a cache, none of attn_v where it is a global layer
 * with its own cache, per-layer inputs, an output scale. */
static inline void family_layer_shapes(family_tensors *l, const family_shape *s,
                                       const model_family *f, int il)
{
    bool slides = family_layer_slides(s, f, il), own = il < family_first_shared(s);
    uint64_t d = (uint64_t)s->dim, hs = (uint64_t)(slides ? s->swa_head : s->head);
    uint64_t q = (uint64_t)s->heads * hs, kv = (uint64_t)family_layer_kv(s, f, il) * hs;
    uint64_t ff = (uint64_t)family_layer_ff(s, f, il), ple = (uint64_t)s->ple;
    char n[64];
#define FT(part, ne0, ne1, fill) \
    (snprintf(n, sizeof n, "blk.%d.%s", il, part), family_add(l, n, ne0, ne1, fill))
    FT("attn_norm.weight", d, 0, FILL_NORM);
    FT("attn_q.weight", d, q, FILL_MATRIX);
    if (own) {
        FT("attn_k.weight", d, kv, FILL_MATRIX);
        if (slides)
            FT("attn_v.weight", d, kv, FILL_MATRIX);
    }
    FT("attn_output.weight", q, d, FILL_MATRIX);
    FT("attn_q_norm.weight", hs, 0, FILL_NORM);
    if (own)
        FT("attn_k_norm.weight", hs, 0, FILL_NORM);
    FT("post_attention_norm.weight", d, 0, FILL_NORM);
    FT("ffn_norm.weight", d, 0, FILL_NORM);
    FT("ffn_gate.weight", d, ff, FILL_MATRIX);
    FT("ffn_up.weight", d, ff, FILL_MATRIX);
    FT("ffn_down.weight", ff, d, FILL_MATRIX);
    FT("post_ffw_norm.weight", d, 0, FILL_NORM);
    if (s->experts > 0) { /* beside the dense feed-forward (dense_beside_experts) */
        uint64_t ef = (uint64_t)s->expert_ff, ne = (uint64_t)s->experts;
        FT("ffn_gate_inp.weight", d, ne, FILL_MATRIX);
        FT("ffn_gate_inp.scale", d, 0, FILL_NORM);
        FT("pre_ffw_norm_2.weight", d, 0, FILL_NORM);
        FT("post_ffw_norm_1.weight", d, 0, FILL_NORM);
        FT("post_ffw_norm_2.weight", d, 0, FILL_NORM);
        FT("ffn_gate_up_exps.weight", d, 2 * ef, FILL_MATRIX);
        l->t[l->n - 1].ne2 = ne;
        FT("ffn_down_exps.weight", ef, d, FILL_MATRIX);
        l->t[l->n - 1].ne2 = ne;
        FT("ffn_down_exps.scale", ne, 0, FILL_SCALE);
    }
    if (ple > 0) {
        FT("inp_gate.weight", d, ple, FILL_MATRIX);
        FT("proj.weight", ple, d, FILL_MATRIX);
        FT("post_norm.weight", d, 0, FILL_NORM);
    }
    FT("layer_output_scale.weight", 1, 0, FILL_SCALE);
#undef FT
}

/* Layer il's tensors, those family f's files hold. */
static inline void family_layer(family_tensors *l, const family_shape *s,
                                const model_family *f, int il)
{
    if (f->layer_shapes) {
        family_layer_shapes(l, s, f, il);
        return;
    }
    uint64_t d = (uint64_t)s->dim, q = (uint64_t)(s->heads * s->head),
             kv = (uint64_t)(s->kv * s->head), ff = (uint64_t)s->ff;
    char n[64];
#define FT(part, ne0, ne1, fill) \
    (snprintf(n, sizeof n, "blk.%d.%s", il, part), family_add(l, n, ne0, ne1, fill))
    FT("attn_norm.weight", d, 0, FILL_NORM);
    bool mtp = il >= s->layers; /* a multi-token-prediction block: attention */
    if (f->delta_net && !mtp && (il + 1) % s->attn_every != 0) { /* a Gated DeltaNet */
        uint64_t hd = (uint64_t)s->head, kd = (uint64_t)s->dn_k * hd, nv = (uint64_t)s->dn_v,
                 vd = nv * hd;
        FT("attn_qkv.weight", d, 2 * kd + vd, FILL_MATRIX);
        FT("attn_gate.weight", d, vd, FILL_MATRIX);
        FT("ssm_conv1d.weight", (uint64_t)s->dn_conv, 2 * kd + vd, FILL_MATRIX);
        FT("ssm_dt.bias", nv, 0, FILL_BIAS);
        FT("ssm_a", nv, 0, FILL_DECAY);
        FT("ssm_beta.weight", d, nv, FILL_MATRIX);
        FT("ssm_alpha.weight", d, nv, FILL_MATRIX);
        FT("ssm_norm.weight", hd, 0, FILL_NORM);
        FT("ssm_out.weight", vd, d, FILL_MATRIX);
    } else if (f->delta_net) { /* gated attention: each head's query rows, then its gate's */
        FT("attn_q.weight", d, 2 * q, FILL_MATRIX);
        FT("attn_k.weight", d, kv, FILL_MATRIX);
        FT("attn_v.weight", d, kv, FILL_MATRIX);
        FT("attn_output.weight", q, d, FILL_MATRIX);
        FT("attn_q_norm.weight", (uint64_t)s->head, 0, FILL_NORM);
        FT("attn_k_norm.weight", (uint64_t)s->head, 0, FILL_NORM);
    }
    if (f->delta_net) {
    } else if (f->fused) {
        FT("attn_qkv.weight", d, q + 2 * kv, FILL_MATRIX);
    } else {
        FT("attn_q.weight", d, q, FILL_MATRIX);
        FT("attn_k.weight", d, kv, FILL_MATRIX);
        FT("attn_v.weight", d, kv, FILL_MATRIX);
    }
    if (f->attn_bias && !f->delta_net) {
        FT("attn_q.bias", q, 0, FILL_BIAS);
        FT("attn_k.bias", kv, 0, FILL_BIAS);
        FT("attn_v.bias", kv, 0, FILL_BIAS);
    }
    if (!f->delta_net)
        FT("attn_output.weight", q, d, FILL_MATRIX);
    if (f->attn_out_bias)
        FT("attn_output.bias", d, 0, FILL_BIAS);
    if (f->attn_sinks)
        FT("attn_sinks.weight", (uint64_t)s->heads, 0, FILL_BIAS);
    if (f->qk_norm && !f->delta_net) {
        FT("attn_q_norm.weight", f->qk_norm_whole ? q : (uint64_t)s->head, 0, FILL_NORM);
        FT("attn_k_norm.weight", f->qk_norm_whole ? kv : (uint64_t)s->head, 0, FILL_NORM);
    }
    if (f->post_norms)
        FT("post_attention_norm.weight", d, 0, FILL_NORM);
    if (f->ffn_norm_name) {
        char norm[48];
        snprintf(norm, sizeof norm, "%s.weight", f->ffn_norm_name);
        FT(norm, d, 0, FILL_NORM);
    } else {
        FT("ffn_norm.weight", d, 0, FILL_NORM);
    }
    if (s->experts > 0) {
        uint64_t ef = (uint64_t)s->expert_ff, ne = (uint64_t)s->experts;
        FT("ffn_gate_inp.weight", d, ne, FILL_MATRIX);
        if (f->expert_biases) {
            FT("ffn_gate_inp.bias", ne, 0, FILL_BIAS);
            FT("ffn_gate_exps.bias", ef, ne, FILL_BIAS);
            FT("ffn_up_exps.bias", ef, ne, FILL_BIAS);
            FT("ffn_down_exps.bias", d, ne, FILL_BIAS);
        }
        FT("ffn_gate_exps.weight", d, ef, FILL_MATRIX);
        l->t[l->n - 1].ne2 = ne;
        FT("ffn_up_exps.weight", d, ef, FILL_MATRIX);
        l->t[l->n - 1].ne2 = ne;
        FT("ffn_down_exps.weight", ef, d, FILL_MATRIX);
        l->t[l->n - 1].ne2 = ne;
        if (f->shared_expert) {
            uint64_t sh = (uint64_t)s->shexp_ff;
            FT("ffn_gate_shexp.weight", d, sh, FILL_MATRIX);
            FT("ffn_up_shexp.weight", d, sh, FILL_MATRIX);
            FT("ffn_down_shexp.weight", sh, d, FILL_MATRIX);
            FT("ffn_gate_inp_shexp.weight", d, 0, FILL_BIAS);
        }
    } else if (f->fused) {
        FT("ffn_up.weight", d, 2 * ff, FILL_MATRIX);
    } else {
        FT("ffn_gate.weight", d, ff, FILL_MATRIX);
        FT("ffn_up.weight", d, ff, FILL_MATRIX);
    }
    if (s->experts == 0)
        FT("ffn_down.weight", ff, d, FILL_MATRIX);
    if (f->post_norms)
        FT("post_ffw_norm.weight", d, 0, FILL_NORM);
#undef FT
}

/* Every tensor of shape s as a file of family f holds it. */
static inline void family_list(family_tensors *l, const family_shape *s, const model_family *f,
                               int vocab)
{
    family_add(l, "token_embd.weight", (uint64_t)s->dim, (uint64_t)vocab, FILL_MATRIX);
    if (vocab > 4096)
        l->t[l->n - 1].type = GGML_TYPE_F16;
    family_add(l, "output_norm.weight", (uint64_t)s->dim, 0, FILL_NORM);
    if (!s->tied && !f->tied)
        family_add(l, "output.weight", (uint64_t)s->dim, (uint64_t)vocab, FILL_MATRIX);
    if (s->longrope && f->longrope) {
        uint64_t half = (uint64_t)(s->rot ? s->rot : s->head) / 2;
        family_add(l, "rope_factors_long.weight", half, 0, FILL_LONG);
        family_add(l, "rope_factors_short.weight", half, 0, FILL_SHORT);
    }
    if (f->layer_shapes) {
        family_add(l, "rope_freqs.weight", (uint64_t)s->head / 2, 0, FILL_PROPORTIONAL);
        if (s->ple > 0) {
            uint64_t all = (uint64_t)s->layers * s->ple;
            family_add(l, "per_layer_token_embd.weight", all, (uint64_t)vocab, FILL_MATRIX);
            family_add(l, "per_layer_model_proj.weight", (uint64_t)s->dim, all, FILL_MATRIX);
            family_add(l, "per_layer_proj_norm.weight", (uint64_t)s->ple, 0, FILL_NORM);
        }
    }
    for (int il = 0; il < s->layers + (f->delta_net ? s->mtp : 0); il++)
        family_layer(l, s, f, il);
}

/* ---- the keys ---- */

static inline bool family_key_kept(const family_edit *e, const char *key)
{
    return !(e->drop_key && !strcmp(key, e->drop_key)) &&
           !(e->uint_key && !strcmp(key, e->uint_key)) &&
           !(e->float_key && !strcmp(key, e->float_key)) &&
           !(e->string_key && !strcmp(key, e->string_key));
}

/* The keys of shape s in a file of family f, with e applied (the edited keys are added
 * last). */
static inline void family_keys(gguf_writer *w, const family_shape *s, const model_family *f,
                               const family_edit *e)
{
    char k[96];
    const char *a = f->name;
#define KU(suffix, v) \
    (snprintf(k, sizeof k, "%s.%s", a, suffix), \
     family_key_kept(e, k) ? gguf_writer_add_uint32(w, k, (uint32_t)(v)) : (void)0)
#define KF(suffix, v) \
    (snprintf(k, sizeof k, "%s.%s", a, suffix), \
     family_key_kept(e, k) ? gguf_writer_add_float32(w, k, (float)(v)) : (void)0)
    if (family_key_kept(e, "general.architecture"))
        gguf_writer_add_string(w, "general.architecture", a);
    gguf_writer_add_string(w, "general.name", "tiny random model");
    KU("context_length", s->ctx);
    KU("embedding_length", s->dim);
    KU("block_count", s->layers + (f->delta_net ? s->mtp : 0));
    if (f->layer_shapes) { /* one per layer */
        int32_t ffs[64], kvs[64], slides[64];
        int n_l = s->layers < 64 ? s->layers : 64;
        for (int il = 0; il < n_l; il++) {
            ffs[il] = family_layer_ff(s, f, il);
            kvs[il] = family_layer_kv(s, f, il);
            slides[il] = family_layer_slides(s, f, il);
        }
#define KA(suffix, v) \
    (snprintf(k, sizeof k, "%s.%s", a, suffix), \
     family_key_kept(e, k) ? gguf_writer_add_int32_array(w, k, v, (uint64_t)n_l) : (void)0)
        KA("feed_forward_length", ffs);
        KA("attention.head_count_kv", kvs);
        KA("attention.sliding_window_pattern", slides);
#undef KA
        KU("attention.key_length_swa", s->swa_head);
        KU("attention.value_length_swa", s->swa_head);
        KU("rope.dimension_count_swa", s->swa_head);
        KF("rope.freq_base_swa", 10000.0f);
        KU("attention.shared_kv_layers", s->shared);
        KU("embedding_length_per_layer_input", s->ple);
        KF("final_logit_softcapping", 30.0f);
    } else {
        KU("feed_forward_length", s->ff);
        KU("attention.head_count_kv", s->kv);
    }
    KU("attention.head_count", s->heads);
    KF("attention.layer_norm_rms_epsilon", 1e-6);
    if (s->base > 0)
        KF("rope.freq_base", s->base);
    if (f->rope_dims_key)
        KU("rope.dimension_count", s->rot ? s->rot : s->head);
    if (s->key_length) {
        KU("attention.key_length", s->head);
        KU("attention.value_length", s->head);
    }
    if (model_family_has_windows(f))
        KU("attention.sliding_window", s->window);
    if (s->longrope && f->longrope) {
        KU("rope.scaling.original_context_length", 64);
        KF("rope.scaling.attn_factor", 1.19);
    }
    if (f->attn_softcap > 0.0f)
        KF("attn_logit_softcapping", f->attn_softcap);
    if (f->final_softcap > 0.0f)
        KF("final_logit_softcapping", f->final_softcap);
    if (s->experts > 0) {
        KU("expert_count", s->experts);
        KU("expert_used_count", s->used);
        if (f->expert_ff_key)
            KU("expert_feed_forward_length", s->expert_ff);
        if (f->shared_expert)
            KU("expert_shared_feed_forward_length", s->shexp_ff);
    }
    if (f->delta_net) {
        if (s->mtp)
            KU("nextn_predict_layers", s->mtp);
        KU("ssm.conv_kernel", s->dn_conv);
        KU("ssm.state_size", s->head);
        KU("ssm.group_count", s->dn_k);
        KU("ssm.time_step_rank", s->dn_v);
        KU("ssm.inner_size", s->dn_v * s->head);
        KU("full_attention_interval", s->attn_every);
        snprintf(k, sizeof k, "%s.rope.dimension_sections", a);
        int32_t sec[4] = {s->sections[0], s->sections[1], s->sections[2], s->sections[3]};
        if (family_key_kept(e, k))
            gguf_writer_add_int32_array(w, k, sec, 4);
        if (e->recurrent_layers > 0) {
            int32_t flags[64] = {0};
            for (int il = 0; il < s->layers && il < 64; il++)
                flags[il] = (il + 1) % s->attn_every != 0;
            snprintf(k, sizeof k, "%s.attention.recurrent_layers", a);
            gguf_writer_add_int32_array(w, k, flags, (uint64_t)e->recurrent_layers);
        }
    }
    if (s->linear > 0) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", a);
        if (family_key_kept(e, k))
            gguf_writer_add_string(w, k, "linear");
        KF("rope.scaling.factor", s->linear);
    }
    if (s->yarn > 0) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", a);
        if (family_key_kept(e, k))
            gguf_writer_add_string(w, k, "yarn");
        KF("rope.scaling.factor", s->yarn);
        KU("rope.scaling.original_context_length", 64);
    }
#undef KU
#undef KF
    if (e->uint_key)
        gguf_writer_add_uint32(w, e->uint_key, e->uint_value);
    if (e->float_key)
        gguf_writer_add_float32(w, e->float_key, e->float_value);
    if (e->string_key)
        gguf_writer_add_string_n(w, e->string_key, e->string_value,
                                 e->string_len ? e->string_len : strlen(e->string_value));
}

/* Copies the tokenizer.* keys of the vocabulary file at path (strings, numbers, bools,
 * arrays of strings, float32 and int32); the token count into *vocab. False when the
 * file cannot be read or holds no tokens. */
static inline bool family_vocab(gguf_writer *w, const char *path, int *vocab)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    bool ok = buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    gguf *g = NULL;
    llm_err err;
    if (!ok || gguf_parse(buf, (size_t)n, path, &g, &err) != LLM_OK) {
        free(buf);
        return false;
    }
    gguf_array a;
    *vocab = gguf_get_array(g, "tokenizer.ggml.tokens", &a) ? (int)a.n : 0;
    for (uint64_t i = 0; i < gguf_kv_count(g); i++) {
        const char *key = gguf_kv_key(g, i);
        uint64_t u;
        double d;
        bool b;
        if (strncmp(key, "tokenizer.", 10) != 0)
            continue;
        switch (gguf_kv_type(g, i)) {
        case GGUF_TYPE_STRING: gguf_writer_add_string(w, key, gguf_get_string(g, key, NULL)); break;
        case GGUF_TYPE_UINT32: gguf_get_uint(g, key, &u); gguf_writer_add_uint32(w, key, (uint32_t)u); break;
        case GGUF_TYPE_INT32: gguf_get_float(g, key, &d); gguf_writer_add_int32(w, key, (int32_t)d); break;
        case GGUF_TYPE_FLOAT32: gguf_get_float(g, key, &d); gguf_writer_add_float32(w, key, (float)d); break;
        case GGUF_TYPE_BOOL: gguf_get_bool(g, key, &b); gguf_writer_add_bool(w, key, b); break;
        case GGUF_TYPE_ARRAY: {
            gguf_get_array(g, key, &a);
            if (a.type == GGUF_TYPE_STRING) {
                const char **v = malloc(a.n * sizeof *v);
                size_t *lens = malloc(a.n * sizeof *lens);
                const unsigned char *cur = NULL;
                for (uint64_t j = 0; j < a.n; j++) {
                    uint64_t len = 0;
                    gguf_array_string(&a, &cur, &v[j], &len);
                    lens[j] = (size_t)len;
                }
                gguf_writer_add_string_array(w, key, v, lens, a.n);
                free(v);
                free(lens);
            } else if (a.type == GGUF_TYPE_FLOAT32) {
                float *v = malloc(a.n * sizeof *v);
                for (uint64_t j = 0; j < a.n; j++)
                    v[j] = (float)gguf_array_float(&a, j);
                gguf_writer_add_float32_array(w, key, v, a.n);
                free(v);
            } else {
                int32_t *v = malloc(a.n * sizeof *v);
                for (uint64_t j = 0; j < a.n; j++)
                    v[j] = (int32_t)gguf_array_int(&a, j);
                gguf_writer_add_int32_array(w, key, v, a.n);
                free(v);
            }
            break;
        }
        default: break;
        }
    }
    gguf_free(g); /* the writer copied what it was given */
    free(buf);
    return *vocab > 0;
}

/* ---- the file ---- */

static inline float family_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1 << 24) * 2.0f - 1.0f; /* [-1, 1) */
}

/* Tensor t's values (n of them), drawn from *state. */
static inline void family_values(const family_tensor *t, uint32_t *state, float *x, size_t n)
{
    float gain = t->ne1 ? 2.5f / sqrtf((float)t->ne0) : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float r = family_random(state);
        switch (t->fill) {
        case FILL_MATRIX: x[i] = gain * r; break;
        case FILL_NORM: x[i] = 1.0f + 0.1f * r; break;
        case FILL_BIAS: x[i] = 0.5f * r; break;
        case FILL_LONG: x[i] = powf(64.0f, (float)i / (float)(n > 1 ? n - 1 : 1)) * (1.05f + 0.05f * r); break;
        case FILL_SHORT: x[i] = 1.5f + 0.5f * r; break;
        case FILL_DECAY: x[i] = -0.3f + 0.25f * r; break; /* ssm_a: -A, A in (0.05, 0.55) */
        case FILL_PROPORTIONAL: x[i] = i < (n + 3) / 4 ? 1.0f : 1e30f; break;
        case FILL_SCALE: x[i] = 0.75f + 0.25f * r; break;
        }
    }
}

/* n values x as a tensor of type (F32, F16, BF16, or Q8_0: blocks of 32 with a half
 * scale, as ggml rounds them) to f. */
static inline bool family_put(FILE *f, uint32_t type, const float *x, size_t n)
{
    if (type == GGML_TYPE_F32)
        return fwrite(x, 4, n, f) == n;
    if (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16) {
        bool ok = true;
        for (size_t j = 0; j < n && ok; j++) {
            uint32_t u;
            memcpy(&u, &x[j], 4);
            uint16_t h = type == GGML_TYPE_F16 ? ggml_f32_to_fp16(x[j])
                                               : (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
            ok = fwrite(&h, 2, 1, f) == 1;
        }
        return ok;
    }
    bool ok = n % 32 == 0;
    for (size_t b = 0; b < n / 32 && ok; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[32 * b + j]));
        float d = amax / 127.0f, inv = d > 0.0f ? 1.0f / d : 0.0f;
        unsigned char block[34];
        uint16_t dh = ggml_f32_to_fp16(d);
        memcpy(block, &dh, 2);
        for (int j = 0; j < 32; j++)
            block[2 + j] = (unsigned char)(int8_t)lroundf(x[32 * b + j] * inv);
        ok = fwrite(block, 1, 34, f) == 34;
    }
    return ok;
}

/* Where a block type keeps its half-precision scales (d, and dmin where it has one; -1
 * none): a block's values are linear in them, so scaling both scales the values. */
static const struct {
    uint32_t type;
    int at[2];
} family_block_halves[] = {
    {GGML_TYPE_Q4_0, {0, -1}}, {GGML_TYPE_Q4_1, {0, 2}},  {GGML_TYPE_Q5_0, {0, -1}},
    {GGML_TYPE_Q5_1, {0, 2}},  {GGML_TYPE_Q2_K, {80, 82}}, {GGML_TYPE_Q3_K, {108, -1}},
    {GGML_TYPE_Q4_K, {0, 2}},  {GGML_TYPE_Q5_K, {0, 2}},   {GGML_TYPE_Q6_K, {208, -1}},
    {GGML_TYPE_MXFP4, {-1, -1}}, /* no halves: its E8M0 byte (byte 0) is set instead */
};

/* The halves of a block type, or NULL when family_put_blocks cannot write it. */
static inline const int *family_halves(uint32_t type)
{
    for (size_t i = 0; i < sizeof family_block_halves / sizeof family_block_halves[0]; i++)
        if (family_block_halves[i].type == type)
            return family_block_halves[i].at;
    return NULL;
}

/* n values of block type `type` to f: random bytes from *state, every block's halves
 * set so that the values' root mean square is about rms. */
static inline bool family_put_blocks(FILE *f, uint32_t type, size_t n, float rms,
                                     uint32_t *state)
{
    const ggml_type_info *info = ggml_type_get(type);
    const int *at = family_halves(type);
    if (!info || !at || n % info->block)
        return false;
    size_t blocks = n / info->block, bytes = blocks * info->bytes;
    unsigned char *b = malloc(bytes);
    float *x = malloc(sizeof(float) * n);
    bool ok = b && x;
    for (size_t i = 0; ok && i < bytes; i++) {
        *state = *state * 1664525u + 1013904223u;
        b[i] = (unsigned char)(*state >> 24);
    }
    for (int pass = 0; ok && pass < 2; pass++) {
        float scale = 1.0f;
        if (pass) { /* from the first pass's values, with halves of 1 */
            dequant_range(type, b, 0, x, n);
            double ss = 0.0;
            for (size_t i = 0; i < n; i++)
                ss += (double)x[i] * x[i];
            scale = ss > 0.0 ? (float)(rms / sqrt(ss / (double)n)) : 1.0f;
        }
        uint16_t h = ggml_f32_to_fp16(scale);
        /* MXFP4: the power of two nearest the scale (2^0 in the first pass) */
        uint8_t e = (uint8_t)(128 + (int)lroundf(log2f(scale)));
        for (size_t k = 0; k < blocks; k++) {
            if (type == GGML_TYPE_MXFP4)
                b[k * info->bytes] = e;
            for (int j = 0; j < 2; j++)
                if (at[j] >= 0)
                    memcpy(b + k * info->bytes + at[j], &h, 2);
        }
    }
    ok = ok && fwrite(b, 1, bytes, f) == bytes;
    free(b);
    free(x);
    return ok;
}

/* Writes the tiny model of family shape `name` to path with edit e (NULL: none) and the
 * tokenizer keys of vocab_path (NULL: none, 96 tokens). False when it cannot (no such
 * shape, or no row of its family). */
static inline bool family_gguf_write(const char *path, const char *name, const family_edit *e,
                                     const char *vocab_path)
{
    static const family_edit none;
    const family_shape *s = family_shape_find(name);
    if (!e)
        e = &none;
    const model_family *fam = s ? model_family_find(e->family ? e->family : s->arch) : NULL;
    gguf_writer *w = fam ? gguf_writer_new(0) : NULL;
    if (!w)
        return false;
    int vocab = 96;
    family_shape shape = *s;
    if (e->layers > 0)
        shape.layers = e->layers;
    s = &shape;
    family_keys(w, s, fam, e);
    if (vocab_path && !family_vocab(w, vocab_path, &vocab)) {
        gguf_writer_free(w);
        return false;
    }
    family_tensors l = {0};
    family_list(&l, s, fam, vocab);
    uint64_t *bytes = malloc(sizeof *bytes * (size_t)(l.n + 1));
    int kept = 0;
    family_tensor *out = malloc(sizeof *out * (size_t)(l.n + 1));
    for (int i = 0; i < l.n; i++) {
        family_tensor t = l.t[i];
        if (e->drop_tensor && !strcmp(t.name, e->drop_tensor))
            continue;
        if (e->resize_tensor && !strcmp(t.name, e->resize_tensor)) {
            t.ne0 = e->ne0;
            t.ne1 = e->ne1;
            t.ne2 = e->ne2;
        }
        out[kept++] = t;
    }
    if (e->extra_tensor) {
        family_tensor x = {.ne0 = 64, .fill = FILL_NORM, .type = GGML_TYPE_F32};
        snprintf(x.name, sizeof x.name, "%s", e->extra_tensor);
        out[kept++] = x;
    }
    for (int i = 0; i < kept; i++) {
        /* the router and the convolution stay F32, as llama-quantize leaves them, and so
         * does a matrix whose rows are not whole blocks of the type (gemma4's
         * per_layer_token_embd: 5 layers of 8), which no GGUF reader takes */
        if (out[i].ne1 && e->type != GGML_TYPE_F32 && !strstr(out[i].name, "ffn_gate_inp") &&
            !strstr(out[i].name, "ssm_conv1d") &&
            out[i].ne0 % ggml_type_get(e->type)->block == 0)
            out[i].type = e->type;
        uint64_t dims[3] = {out[i].ne0, out[i].ne1, out[i].ne2};
        bytes[i] = gguf_writer_add_tensor(w, out[i].name, out[i].type,
                                          out[i].ne2 ? 3 : out[i].ne1 ? 2 : 1, dims);
    }
    FILE *f = fopen(path, "wb");
    llm_err err;
    bool ok = f && gguf_writer_write_header(w, f, path, &err) == LLM_OK;
    uint32_t state = 12345;
    for (int i = 0; i < kept && ok; i++) {
        size_t n = (size_t)out[i].ne0 * (size_t)(out[i].ne1 ? out[i].ne1 : 1) *
                   (size_t)(out[i].ne2 ? out[i].ne2 : 1);
        float *x = malloc(sizeof(float) * n);
        ok = x != NULL;
        if (ok)
            family_values(&out[i], &state, x, n);
        if (ok && e->value_tensor && !strcmp(out[i].name, e->value_tensor) && e->value_index < n)
            x[e->value_index] = e->value;
        if (ok && family_halves(out[i].type)) /* uniform in ±gain: rms gain / sqrt 3 */
            ok = family_put_blocks(f, out[i].type, n, 2.5f / sqrtf((float)out[i].ne0 * 3.0f),
                                   &state);
        else if (ok)
            ok = family_put(f, out[i].type, x, n);
        free(x);
        ok = ok && gguf_writer_pad(w, f, bytes[i], path, &err) == LLM_OK;
    }
    if (f)
        ok = fclose(f) == 0 && ok;
    gguf_writer_free(w);
    free(l.t);
    free(out);
    free(bytes);
    return ok;
}

#endif
