/* model_gguf_weights.c — the weights of a GGUF model (model_gguf.c read its family and
 * shape): the table of tensors a family's file holds, each found and checked for its
 * exact shape and a type llmchat can decode before any is converted, then made into
 * the model's tensors; a file tensor the family does not use is refused by name.
 *
 *   token_embd.weight (vocab, dim)           output.weight (vocab, dim), or absent: the
 *   output_norm.weight (dim)                   classifier is token_embd (always: Gemma)
 *   blk.N.attn_norm, ffn_norm (dim)          blk.N.attn_q (q_dim, dim), attn_k, attn_v
 *   blk.N.attn_output (dim, q_dim)             (kv_dim, dim); Phi-3: attn_qkv, their rows
 *   blk.N.ffn_gate, ffn_up (hidden, dim)       one after the other
 *   blk.N.ffn_down (dim, hidden)             Phi-3: ffn_up (2 hidden, dim): gate, then up
 *   Qwen2: blk.N.attn_q/k/v.bias             Qwen3, Gemma 3: blk.N.attn_q_norm, attn_k_norm
 *   Gemma 2, 3: blk.N.post_attention_norm,     (head_size)
 *     post_ffw_norm (dim)                    Phi-3: rope_factors_long, rope_factors_short
 *   llama: rope_freqs.weight (Llama 3.1+)      (rope_dims / 2), both or neither
 *   OLMoE: attn_q_norm (q_dim), attn_k_norm (kv_dim)
 *   gpt-oss: attn_output.bias (dim), attn_sinks (n_heads), the feed-forward's norm
 *     named post_attention_norm, and the experts' biases: ffn_gate_inp.bias (n_experts),
 *     ffn_gate_exps.bias, ffn_up_exps.bias (n_experts, expert_hidden), ffn_down_exps.bias
 *     (n_experts, dim)
 *   a shared expert beside them (Qwen 3.5 MoE): blk.N.ffn_gate_shexp, ffn_up_shexp
 *     (shexp_hidden, dim), ffn_down_shexp (dim, shexp_hidden), ffn_gate_inp_shexp (dim)
 *   experts (Qwen3 MoE, OLMoE, Mixtral), instead of ffn_gate, ffn_up, ffn_down:
 *     blk.N.ffn_gate_inp (n_experts, dim): the router, always made fp32
 *     blk.N.ffn_gate_exps, ffn_up_exps (n_experts, expert_hidden, dim), ffn_down_exps
 *       (n_experts, dim, expert_hidden): 3-D, loaded as one matrix and viewed per expert;
 *       or ffn_gate_up_exps (n_experts, 2 expert_hidden, dim) for the first two, each
 *       expert's gate rows then its up rows; ffn_down_exps.scale (n_experts) where the
 *       file has it: each expert's output times its value
 *   Gemma 4's experts keep the dense ffn_gate, ffn_up, ffn_down beside them, with
 *     blk.N.ffn_gate_inp.scale, pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2 (dim)
 * (shapes as (rows, cols); GGUF lists dims[0] = cols first). Llama's q and k rows are
 * stored in the interleaved-pair RoPE layout llama2.c uses, the others' in the NEOX one
 * (model_arch.rope_layout says which), so every matrix is used as it is. A fused tensor
 * is loaded once and its rows viewed as the matrices it holds (model_tensor_rows).
 *
 * Conversion: Q8_0 tensors are used in place (TENSOR_Q8_0_BLOCKS, tensor_from_q8_0);
 * with --weights native (TENSOR_BLOCKS) so are Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
 * and MXFP4 whose rows are whole blocks (TENSOR_BLOCKS, tensor_in_place); every other type
 * is decoded (dequant.h) and quantized to Q8_0 row by row, in parallel, or decoded to
 * fp32 for --weights f32; F32 tensors are used in place for fp32. Vectors (norms,
 * biases, RoPE factors) are fp32, in place when stored as F32.
 *
 * Owns nothing itself: the buffers belong to the model. */
#include <float.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "model_family.h"
#include "model_internal.h"

/* ---- the table ---- */

/* A size of the shape. */
typedef enum {
    SZ_DIM, SZ_Q, SZ_KV, SZ_HIDDEN, SZ_HEAD, SZ_QKV, SZ_GATE_UP, SZ_EXPERTS, SZ_EXPERT_HIDDEN,
    SZ_Q_NORM, SZ_K_NORM, SZ_HEADS, SZ_Q_ROWS, SZ_DN_CONV, SZ_DN_VALUE, SZ_DN_V_HEADS,
    SZ_DN_HEAD_V, SZ_DN_CONV_WIDTH, SZ_ONE, SZ_PLE, SZ_SHEXP, SZ_EXPERT_GATE_UP
} shape_size;

/* When a layer's file holds a part. */
typedef enum {
    IF_ALWAYS,
    IF_SEPARATE_QKV, /* attn_q, attn_k, attn_v */
    IF_FUSED_QKV,    /* attn_qkv (Phi-3) */
    IF_BIAS,         /* arch.attn_bias */
    IF_OUT_BIAS,     /* arch.attn_out_bias */
    IF_SINKS,        /* arch.attn_sinks */
    IF_QK_NORM,
    IF_POST_NORMS,
    IF_SEPARATE_FFN, /* ffn_gate and ffn_up */
    IF_FUSED_FFN,    /* ffn_up holding both (Phi-3) */
    IF_DENSE,        /* one feed-forward: ffn_down */
    IF_EXPERTS,      /* a mixture of experts: the router and the experts' stacks */
    IF_EXPERT_STACKS, /* and their gate and up stacks apart (ffn_gate_exps, ffn_up_exps) */
    IF_GATE_UP_STACK, /* or as one (ffn_gate_up_exps), where the file has it */
    IF_EXPERT_SCALE, /* and ffn_down_exps.scale, where the file has it */
    IF_DENSE_BESIDE, /* and arch.dense_beside_experts: the parts' norms, the router's scale */
    IF_EXPERT_BIASES, /* and arch.expert_biases */
    IF_SHARED_EXPERT, /* and a shared expert (config.shexp_hidden > 0) */
    IF_DELTA_NET,    /* a Gated DeltaNet layer's own */
    IF_LAYER_SCALE,  /* model_family.layer_scale, where the file has it */
    IF_PER_LAYER_INPUTS, /* config.ple_dim > 0 */
} part_when;

/* Where a part goes: a tensor or an fp32 vector of model_layer (at offset), or one of
 * the layer's tensors that are viewed after loading (LAYER_VIEWED of them): the two
 * fused ones (attn_qkv, ffn_up) and the experts' three stacks (n_experts matrices
 * each, a 3-D tensor loaded as one matrix of their rows). */
enum {
    NOT_FUSED = -1, FUSED_QKV = 0, FUSED_FFN, EXPS_GATE, EXPS_UP, EXPS_DOWN, EXPS_GATE_UP,
    LAYER_VIEWED
};

static const struct layer_part {
    const char *name;   /* blk.N.{name} */
    part_when when;
    bool vector;        /* 1-D: cols values; fp32 */
    bool table;         /* a vector of rows × cols values, 2-D in the file (an expert's
                           bias per row) */
    shape_size rows, cols;
    size_t offset;      /* in model_layer */
    int fused;
    bool stacked;       /* 3-D: one (rows, cols) matrix per expert */
    bool f32;           /* always fp32, whatever the weights' type (the router) */
    bool renamed;       /* the family may name it otherwise (model_family.ffn_norm_name) */
    bool attention;     /* an attention layer's: not in a Gated DeltaNet layer */
    bool kv;            /* makes the keys or values: not in a layer sharing another's
                           KV cache (model_layer.kv_layer) */
    bool values;        /* attn_v: may be absent where values are normed (arch.value_norm:
                           the keys serve) */
} layer_parts[] = {
    {.name = "attn_norm.weight", .when = IF_ALWAYS, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, rms_att), .fused = NOT_FUSED},
    {.name = "attn_q.weight", .when = IF_SEPARATE_QKV, .rows = SZ_Q_ROWS, .cols = SZ_DIM,
     .offset = offsetof(model_layer, wq), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_k.weight", .when = IF_SEPARATE_QKV, .rows = SZ_KV, .cols = SZ_DIM,
     .offset = offsetof(model_layer, wk), .fused = NOT_FUSED, .attention = true, .kv = true},
    {.name = "attn_v.weight", .when = IF_SEPARATE_QKV, .rows = SZ_KV, .cols = SZ_DIM,
     .offset = offsetof(model_layer, wv), .fused = NOT_FUSED, .attention = true, .kv = true,
     .values = true},
    {.name = "attn_qkv.weight", .when = IF_FUSED_QKV, .rows = SZ_QKV, .cols = SZ_DIM,
     .fused = FUSED_QKV, .attention = true},
    {.name = "attn_q.bias", .when = IF_BIAS, .vector = true, .cols = SZ_Q,
     .offset = offsetof(model_layer, bq), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_k.bias", .when = IF_BIAS, .vector = true, .cols = SZ_KV,
     .offset = offsetof(model_layer, bk), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_v.bias", .when = IF_BIAS, .vector = true, .cols = SZ_KV,
     .offset = offsetof(model_layer, bv), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_q_norm.weight", .when = IF_QK_NORM, .vector = true, .cols = SZ_Q_NORM,
     .offset = offsetof(model_layer, q_norm), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_k_norm.weight", .when = IF_QK_NORM, .vector = true, .cols = SZ_K_NORM,
     .offset = offsetof(model_layer, k_norm), .fused = NOT_FUSED, .attention = true,
     .kv = true},
    {.name = "attn_output.weight", .when = IF_ALWAYS, .rows = SZ_DIM, .cols = SZ_Q,
     .offset = offsetof(model_layer, wo), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_output.bias", .when = IF_OUT_BIAS, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, bo), .fused = NOT_FUSED, .attention = true},
    {.name = "attn_sinks.weight", .when = IF_SINKS, .vector = true, .cols = SZ_HEADS,
     .offset = offsetof(model_layer, sinks), .fused = NOT_FUSED, .attention = true},
    {.name = "post_attention_norm.weight", .when = IF_POST_NORMS, .vector = true,
     .cols = SZ_DIM, .offset = offsetof(model_layer, post_attn_norm), .fused = NOT_FUSED},
    {.name = "ffn_norm.weight", .when = IF_ALWAYS, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, rms_ffn), .fused = NOT_FUSED, .renamed = true},
    {.name = "ffn_gate.weight", .when = IF_SEPARATE_FFN, .rows = SZ_HIDDEN, .cols = SZ_DIM,
     .offset = offsetof(model_layer, w1), .fused = NOT_FUSED},
    {.name = "ffn_up.weight", .when = IF_SEPARATE_FFN, .rows = SZ_HIDDEN, .cols = SZ_DIM,
     .offset = offsetof(model_layer, w3), .fused = NOT_FUSED},
    {.name = "ffn_up.weight", .when = IF_FUSED_FFN, .rows = SZ_GATE_UP, .cols = SZ_DIM,
     .fused = FUSED_FFN},
    {.name = "ffn_down.weight", .when = IF_DENSE, .rows = SZ_DIM, .cols = SZ_HIDDEN,
     .offset = offsetof(model_layer, w2), .fused = NOT_FUSED},
    {.name = "ffn_gate_inp.weight", .when = IF_EXPERTS, .rows = SZ_EXPERTS, .cols = SZ_DIM,
     .offset = offsetof(model_layer, router), .fused = NOT_FUSED, .f32 = true},
    {.name = "ffn_gate_exps.weight", .when = IF_EXPERT_STACKS, .rows = SZ_EXPERT_HIDDEN,
     .cols = SZ_DIM, .fused = EXPS_GATE, .stacked = true},
    {.name = "ffn_up_exps.weight", .when = IF_EXPERT_STACKS, .rows = SZ_EXPERT_HIDDEN,
     .cols = SZ_DIM, .fused = EXPS_UP, .stacked = true},
    {.name = "ffn_gate_up_exps.weight", .when = IF_GATE_UP_STACK, .rows = SZ_EXPERT_GATE_UP,
     .cols = SZ_DIM, .fused = EXPS_GATE_UP, .stacked = true},
    {.name = "ffn_down_exps.weight", .when = IF_EXPERTS, .rows = SZ_DIM,
     .cols = SZ_EXPERT_HIDDEN, .fused = EXPS_DOWN, .stacked = true},
    {.name = "ffn_down_exps.scale", .when = IF_EXPERT_SCALE, .vector = true,
     .cols = SZ_EXPERTS, .offset = offsetof(model_layer, expert_scale), .fused = NOT_FUSED},
    {.name = "ffn_gate_inp.scale", .when = IF_DENSE_BESIDE, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, router_scale), .fused = NOT_FUSED},
    {.name = "pre_ffw_norm_2.weight", .when = IF_DENSE_BESIDE, .vector = true,
     .cols = SZ_DIM, .offset = offsetof(model_layer, pre_experts_norm), .fused = NOT_FUSED},
    {.name = "post_ffw_norm_1.weight", .when = IF_DENSE_BESIDE, .vector = true,
     .cols = SZ_DIM, .offset = offsetof(model_layer, post_dense_norm), .fused = NOT_FUSED},
    {.name = "post_ffw_norm_2.weight", .when = IF_DENSE_BESIDE, .vector = true,
     .cols = SZ_DIM, .offset = offsetof(model_layer, post_experts_norm), .fused = NOT_FUSED},
    {.name = "ffn_gate_inp.bias", .when = IF_EXPERT_BIASES, .vector = true,
     .cols = SZ_EXPERTS, .offset = offsetof(model_layer, router_bias), .fused = NOT_FUSED},
    {.name = "ffn_gate_exps.bias", .when = IF_EXPERT_BIASES, .vector = true, .table = true,
     .rows = SZ_EXPERTS, .cols = SZ_EXPERT_HIDDEN,
     .offset = offsetof(model_layer, expert_gate_bias), .fused = NOT_FUSED},
    {.name = "ffn_up_exps.bias", .when = IF_EXPERT_BIASES, .vector = true, .table = true,
     .rows = SZ_EXPERTS, .cols = SZ_EXPERT_HIDDEN,
     .offset = offsetof(model_layer, expert_up_bias), .fused = NOT_FUSED},
    {.name = "ffn_down_exps.bias", .when = IF_EXPERT_BIASES, .vector = true, .table = true,
     .rows = SZ_EXPERTS, .cols = SZ_DIM, .offset = offsetof(model_layer, expert_down_bias),
     .fused = NOT_FUSED},
    {.name = "ffn_gate_shexp.weight", .when = IF_SHARED_EXPERT, .rows = SZ_SHEXP,
     .cols = SZ_DIM, .offset = offsetof(model_layer, shexp_gate), .fused = NOT_FUSED},
    {.name = "ffn_up_shexp.weight", .when = IF_SHARED_EXPERT, .rows = SZ_SHEXP,
     .cols = SZ_DIM, .offset = offsetof(model_layer, shexp_up), .fused = NOT_FUSED},
    {.name = "ffn_down_shexp.weight", .when = IF_SHARED_EXPERT, .rows = SZ_DIM,
     .cols = SZ_SHEXP, .offset = offsetof(model_layer, shexp_down), .fused = NOT_FUSED},
    {.name = "ffn_gate_inp_shexp.weight", .when = IF_SHARED_EXPERT, .vector = true,
     .cols = SZ_DIM, .offset = offsetof(model_layer, shexp_gate_inp), .fused = NOT_FUSED},
    {.name = "post_ffw_norm.weight", .when = IF_POST_NORMS, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, post_ffn_norm), .fused = NOT_FUSED},
    {.name = "attn_qkv.weight", .when = IF_DELTA_NET, .rows = SZ_DN_CONV, .cols = SZ_DIM,
     .offset = offsetof(model_layer, dn_qkv), .fused = NOT_FUSED},
    {.name = "attn_gate.weight", .when = IF_DELTA_NET, .rows = SZ_DN_VALUE, .cols = SZ_DIM,
     .offset = offsetof(model_layer, dn_z), .fused = NOT_FUSED},
    {.name = "ssm_beta.weight", .when = IF_DELTA_NET, .rows = SZ_DN_V_HEADS, .cols = SZ_DIM,
     .offset = offsetof(model_layer, dn_beta), .fused = NOT_FUSED},
    {.name = "ssm_alpha.weight", .when = IF_DELTA_NET, .rows = SZ_DN_V_HEADS, .cols = SZ_DIM,
     .offset = offsetof(model_layer, dn_alpha), .fused = NOT_FUSED},
    {.name = "ssm_conv1d.weight", .when = IF_DELTA_NET, .vector = true, .table = true,
     .rows = SZ_DN_CONV, .cols = SZ_DN_CONV_WIDTH, .offset = offsetof(model_layer, dn_conv),
     .fused = NOT_FUSED},
    {.name = "ssm_dt.bias", .when = IF_DELTA_NET, .vector = true, .cols = SZ_DN_V_HEADS,
     .offset = offsetof(model_layer, dn_dt_bias), .fused = NOT_FUSED},
    {.name = "ssm_a", .when = IF_DELTA_NET, .vector = true, .cols = SZ_DN_V_HEADS,
     .offset = offsetof(model_layer, dn_a), .fused = NOT_FUSED},
    {.name = "ssm_norm.weight", .when = IF_DELTA_NET, .vector = true, .cols = SZ_DN_HEAD_V,
     .offset = offsetof(model_layer, dn_norm), .fused = NOT_FUSED},
    {.name = "ssm_out.weight", .when = IF_DELTA_NET, .rows = SZ_DIM, .cols = SZ_DN_VALUE,
     .offset = offsetof(model_layer, wo), .fused = NOT_FUSED},
    {.name = "inp_gate.weight", .when = IF_PER_LAYER_INPUTS, .rows = SZ_PLE, .cols = SZ_DIM,
     .offset = offsetof(model_layer, ple_gate), .fused = NOT_FUSED},
    {.name = "proj.weight", .when = IF_PER_LAYER_INPUTS, .rows = SZ_DIM, .cols = SZ_PLE,
     .offset = offsetof(model_layer, ple_proj), .fused = NOT_FUSED},
    {.name = "post_norm.weight", .when = IF_PER_LAYER_INPUTS, .vector = true, .cols = SZ_DIM,
     .offset = offsetof(model_layer, ple_norm), .fused = NOT_FUSED},
    {.name = "layer_output_scale.weight", .when = IF_LAYER_SCALE, .vector = true,
     .cols = SZ_ONE, .offset = offsetof(model_layer, out_scale), .fused = NOT_FUSED},
};
enum { LAYER_PARTS = sizeof layer_parts / sizeof layer_parts[0] };

/* Size s of layer y of a model of config c. */
static int size_of(const model_config *c, const model_layer *y, shape_size s)
{
    switch (s) {
    case SZ_Q_ROWS: return y->kind == MODEL_LAYER_GATED_ATTENTION ? 2 * y->q_dim : y->q_dim;
    case SZ_ONE: return 1;
    case SZ_SHEXP: return c->shexp_hidden;
    case SZ_PLE: return c->ple_dim;
    case SZ_DN_CONV: return c->dn_conv_dim;
    case SZ_DN_VALUE: return c->dn_value_dim;
    case SZ_DN_V_HEADS: return c->dn_v_heads;
    case SZ_DN_HEAD_V: return c->dn_head_v;
    case SZ_DN_CONV_WIDTH: return c->dn_conv_width;
    case SZ_DIM: return c->dim;
    case SZ_Q: return y->q_dim;
    case SZ_KV: return y->kv_dim;
    case SZ_HIDDEN: return y->hidden_dim;
    case SZ_HEAD: return y->head_size;
    case SZ_QKV: return y->q_dim + 2 * y->kv_dim;
    case SZ_GATE_UP: return 2 * y->hidden_dim;
    case SZ_EXPERTS: return c->n_experts;
    case SZ_EXPERT_HIDDEN: return c->expert_hidden_dim;
    case SZ_EXPERT_GATE_UP: return 2 * c->expert_hidden_dim;
    case SZ_Q_NORM: return c->arch.qk_norm_whole ? y->q_dim : y->head_size;
    case SZ_K_NORM: return c->arch.qk_norm_whole ? y->kv_dim : y->head_size;
    case SZ_HEADS: return c->n_heads;
    }
    return 0;
}

/* Whether layer y (the l-th) of family f's file g holds part p, named name. */
static bool part_in_file(const gguf *g, const model_family *f, const model_config *c,
                         const model_layer *y, int l, const struct layer_part *p,
                         const char *name)
{
    const model_arch *a = &c->arch;
    bool experts = c->n_experts > 0, dn = y->kind == MODEL_LAYER_DELTA_NET;
    bool dense = !experts || a->dense_beside_experts;
    if ((p->attention && dn) || (p->kv && y->kv_layer != l))
        return false;
    if (p->values && a->value_norm && !gguf_find_tensor(g, name))
        return false;
    switch (p->when) {
    case IF_LAYER_SCALE: return f->layer_scale && gguf_find_tensor(g, name);
    case IF_PER_LAYER_INPUTS: return c->ple_dim > 0;
    case IF_DELTA_NET: return dn;
    case IF_ALWAYS: return true;
    case IF_SEPARATE_QKV: return !a->fused_qkv;
    case IF_FUSED_QKV: return a->fused_qkv;
    case IF_BIAS: return a->attn_bias;
    case IF_OUT_BIAS: return a->attn_out_bias;
    case IF_SINKS: return a->attn_sinks;
    case IF_QK_NORM: return a->qk_norm;
    case IF_POST_NORMS: return a->post_norms;
    case IF_SEPARATE_FFN: return !a->fused_gate_up && dense;
    case IF_FUSED_FFN: return a->fused_gate_up && dense;
    case IF_DENSE: return dense;
    case IF_EXPERTS: return experts;
    case IF_EXPERT_STACKS: return experts && !y->gate_up_stack;
    case IF_GATE_UP_STACK: return experts && y->gate_up_stack;
    case IF_EXPERT_SCALE: return experts && gguf_find_tensor(g, name);
    case IF_DENSE_BESIDE: return experts && a->dense_beside_experts;
    case IF_EXPERT_BIASES: return experts && a->expert_biases;
    case IF_SHARED_EXPERT: return experts && c->shexp_hidden > 0;
    }
    return false;
}

/* ---- the weights of a file ---- */

/* One tensor of the file the model uses: its name and shape, and where it goes. */
typedef struct {
    char name[64];
    int rows, cols;           /* cols = dims[0]; rows = 1 for a vector (1-D), dims[1] for
                                 a table; a stack's rows are one matrix's */
    int stack;                /* 3-D: the matrices (dims[2]), loaded as one of stack * rows
                                 rows; 0: 2-D */
    bool f32;                 /* made fp32 whatever the weights' type */
    bool vector;              /* fp32 values: a vector, or a table (2-D) */
    bool table;
    bool raw;                 /* kept in the file's type, in place (model.ple_embd) */
    const float **vec_out;    /* vectors */
    tensor *out;              /* matrices */
    const gguf_tensor *t;
} weight;

typedef struct {
    weight *ws;
    int n, cap;
    bool oom;
} weight_list;

static weight *add(weight_list *l, const char *name)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        weight *grown = realloc(l->ws, sizeof *grown * (size_t)cap);
        if (!grown) {
            l->oom = true;
            return NULL;
        }
        l->ws = grown;
        l->cap = cap;
    }
    weight *w = &l->ws[l->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    return w;
}

static weight *add_matrix(weight_list *l, const char *name, int rows, int cols, tensor *out)
{
    weight *w = add(l, name);
    if (!w)
        return NULL;
    w->rows = rows;
    w->cols = cols;
    w->out = out;
    return w;
}

static weight *add_vector(weight_list *l, const char *name, int n, const float **out)
{
    weight *w = add(l, name);
    if (!w)
        return NULL;
    w->rows = 1;
    w->cols = n;
    w->vector = true;
    w->vec_out = out;
    return w;
}

/* A vector of rows × cols values, 2-D in the file. */
static void add_table(weight_list *l, const char *name, int rows, int cols, const float **out)
{
    weight *w = add_vector(l, name, cols, out);
    if (w) {
        w->rows = rows;
        w->table = true;
    }
}

/* Every tensor the model's description implies, into l; the viewed ones go to fused
 * (n_layers, LAYER_VIEWED). rope_factors (2) receive LongRoPE's long and short factors when
 * the family has them and the file holds them. */
static void list_weights(model *m, const gguf *g, const model_family *f, tensor *fused,
                         const float **rope_factors, weight_list *l)
{
    const model_config *c = &m->config;
    add_matrix(l, "token_embd.weight", c->vocab_size, c->dim, &m->token_embedding);
    add_vector(l, "output_norm.weight", c->dim, &m->rms_final);
    if (!c->shared_classifier)
        add_matrix(l, "output.weight", c->vocab_size, c->dim, &m->wcls);
    if (f->longrope && (gguf_find_tensor(g, "rope_factors_long.weight") ||
                        gguf_find_tensor(g, "rope_factors_short.weight"))) {
        add_vector(l, "rope_factors_long.weight", c->arch.rope_dims / 2, &rope_factors[0]);
        add_vector(l, "rope_factors_short.weight", c->arch.rope_dims / 2, &rope_factors[1]);
    }
    if (c->ple_dim > 0) {
        int width = c->n_layers * c->ple_dim;
        weight *w = add_matrix(l, "per_layer_token_embd.weight", c->vocab_size, width, NULL);
        if (w)
            w->raw = true;
        add_matrix(l, "per_layer_model_proj.weight", width, c->dim, &m->ple_model_proj);
        add_vector(l, "per_layer_proj_norm.weight", c->ple_dim, &m->ple_proj_norm);
    }
    for (int L = 0; L < c->n_layers; L++) {
        unsigned char *layer = (unsigned char *)&m->layers[L];
        char stack[64];
        snprintf(stack, sizeof stack, "blk.%d.ffn_gate_up_exps.weight", L);
        m->layers[L].gate_up_stack = c->n_experts > 0 && gguf_find_tensor(g, stack);
        for (int p = 0; p < LAYER_PARTS; p++) {
            const struct layer_part *part = &layer_parts[p];
            const model_layer *y = &m->layers[L];
            char name[64];
            if (part->renamed && f->ffn_norm_name)
                snprintf(name, sizeof name, "blk.%d.%s.weight", L, f->ffn_norm_name);
            else
                snprintf(name, sizeof name, "blk.%d.%s", L, part->name);
            if (!part_in_file(g, f, c, y, L, part, name))
                continue;
            if (part->table)
                add_table(l, name, size_of(c, y, part->rows), size_of(c, y, part->cols),
                          (const float **)(layer + part->offset));
            else if (part->vector)
                add_vector(l, name, size_of(c, y, part->cols),
                           (const float **)(layer + part->offset));
            else {
                weight *w = add_matrix(l, name, size_of(c, y, part->rows),
                                       size_of(c, y, part->cols),
                                       part->fused != NOT_FUSED
                                           ? &fused[LAYER_VIEWED * L + part->fused]
                                           : (tensor *)(layer + part->offset));
                if (w) {
                    w->stack = part->stacked ? c->n_experts : 0;
                    w->f32 = part->f32;
                }
            }
        }
    }
}

/* Finds w in the file and checks its shape and type. */
static llm_status find_weight(const model *m, const gguf *g, weight *w, llm_err *err)
{
    const char *arch = m->config.arch.name;
    w->t = gguf_find_tensor(g, w->name);
    const gguf_tensor *t = w->t;
    if (!t)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor %s is missing (the %s "
                        "architecture has it)", m->path, w->name, arch);
    bool shape_ok = w->table ? t->n_dims == 2 && t->dims[0] == (uint64_t)w->cols &&
                                   t->dims[1] == (uint64_t)w->rows
                    : w->vector ? t->n_dims == 1 && t->dims[0] == (uint64_t)w->cols
                    : w->stack ? t->n_dims == 3 && t->dims[0] == (uint64_t)w->cols &&
                                     t->dims[1] == (uint64_t)w->rows &&
                                     t->dims[2] == (uint64_t)w->stack
                               : t->n_dims == 2 && t->dims[0] == (uint64_t)w->cols &&
                                     t->dims[1] == (uint64_t)w->rows;
    /* LongRoPE factors: those of the whole head do too (llama.cpp's older layout) */
    if (!shape_ok && w->vector && !strncmp(w->name, "rope_factors_", 13) && t->n_dims == 1 &&
        t->dims[0] == (uint64_t)m->config.head_size / 2)
        shape_ok = true;
    if (!shape_ok) {
        char dims[96] = "";
        for (uint32_t d = 0; d < t->n_dims; d++)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%" PRIu64, d ? ", " : "",
                     t->dims[d]);
        if (w->table)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %s has dims [%s], expected [%d, %d] (from the %s.* "
                            "keys)", m->path, w->name, dims, w->cols, w->rows, arch);
        if (w->vector)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %s has dims [%s], expected [%d] (from the %s.* "
                            "keys)", m->path, w->name, dims, w->cols, arch);
        if (w->stack)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %s has dims [%s], expected [%d, %d, %d] (from the "
                            "%s.* keys: %d experts)", m->path, w->name, dims, w->cols, w->rows,
                            w->stack, arch, w->stack);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor %s has dims [%s], expected [%d, %d] (from the %s.* "
                        "keys)", m->path, w->name, dims, w->cols, w->rows, arch);
    }
    if (!dequant_supported(t->type))
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor %s is of type %s, which llmchat cannot decode (it reads "
                        "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to Q6_K and MXFP4)",
                        m->path, w->name, ggml_type_name(t->type));
    return LLM_OK;
}

/* Row `row` of a GGUF tensor of any decodable type (rows may straddle blocks). */
static void read_gguf_row(const void *src, int row, int cols, float *out)
{
    const gguf_tensor *t = src;
    dequant_range(t->type, t->data, (uint64_t)row * (uint64_t)cols, out, (size_t)cols);
}

/* A Q8_0 tensor from GGUF Q8_0 blocks (32 values and one half-precision scale each,
 * laid over the flattened (rows, cols) values). When rows are whole blocks the blocks
 * are used in place from the mapping (TENSOR_Q8_0_BLOCKS: the kernels read ggml's
 * layout); when blocks straddle rows (rows of 172), each row is decoded and quantized
 * again with `group`. */
static bool tensor_from_q8_0(model *m, tensor *t, const gguf_tensor *src, int rows, int cols,
                             int group)
{
    if (cols % GGML_BLOCK_32 != 0)
        return model_tensor_convert(m, t, TENSOR_Q8_0, group, rows, cols, read_gguf_row, src);
    _Static_assert(sizeof(ggml_block_q8_0) == QUANT_BLOCK_BYTES && (int)GGML_BLOCK_32 == (int)QUANT_BLOCK,
                   "GGUF's Q8_0 block is quant.h's");
    *t = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                  .group = QUANT_BLOCK, .blocks = src->data};
    return true;
}

/* For --weights native: whether the kernels compute t's type in place with rows of
 * cols values (rows must be whole blocks). */
static bool native_type(const gguf_tensor *t, int cols)
{
    switch (t->type) {
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q4_1:
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q5_1:
    case GGML_TYPE_MXFP4:
        return cols % GGML_BLOCK_32 == 0;
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K:
    case GGML_TYPE_Q6_K:
        return cols % GGML_BLOCK_K == 0;
    default:
        return false;
    }
}

/* A BLOCKS tensor over the file's blocks of t, in place. */
static tensor tensor_in_place(const gguf_tensor *t, int rows, int cols)
{
    const ggml_type_info *info = ggml_type_get(t->type);
    return (tensor){.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                    .group = GGML_BLOCK_32, .blocks = t->data, .btype = (int)t->type,
                    .row_bytes = (size_t)cols / info->block * info->bytes};
}

/* A vector of the file as fp32: in place when F32, else decoded into the model's. */
static bool load_vector(model *m, const weight *w)
{
    const gguf_tensor *t = w->t;
    if (t->type == GGML_TYPE_F32 && (uintptr_t)t->data % _Alignof(float) == 0) {
        *w->vec_out = t->data;
        return true;
    }
    size_t n = (size_t)w->rows * (size_t)w->cols;
    float *f = model_own(m, sizeof(float) * n);
    if (!f)
        return false;
    dequant_range(t->type, t->data, 0, f, n);
    *w->vec_out = f;
    return true;
}

/* Makes the model's tensor for weight w as opt asks. */
static bool load_weight(model *m, const weight *w, const model_options *opt)
{
    const gguf_tensor *t = w->t;
    const char *from = ggml_type_name(t->type);
    bool f32_aligned = t->type == GGML_TYPE_F32 && (uintptr_t)t->data % _Alignof(float) == 0;
    if (w->vector)
        return load_vector(m, w);
    if (w->raw) { /* decoded a row at a time where the pass needs it */
        m->ple_embd = t->data;
        m->ple_embd_type = t->type;
        m->mapped_bytes += (size_t)t->bytes;
        model_note_tensor(m, from, MODEL_IN_PLACE, t->bytes);
        return true;
    }
    int rows = w->rows * (w->stack ? w->stack : 1);
    bool ok;
    if ((opt->weights == TENSOR_F32 || w->f32) && f32_aligned) {
        *w->out = model_tensor_view(t->data, rows, w->cols);
        m->mapped_bytes += (size_t)t->bytes;
        model_note_tensor(m, from, MODEL_IN_PLACE, t->bytes);
        return true;
    }
    if (opt->weights == TENSOR_BLOCKS && native_type(t, w->cols) && !w->f32) {
        *w->out = tensor_in_place(t, rows, w->cols);
        m->mapped_bytes += (size_t)t->bytes;
        m->n_native++;
        model_note_tensor(m, from, MODEL_IN_PLACE, t->bytes);
        return true;
    }
    /* everything else as for --weights q8_0 */
    tensor_type want = w->f32 ? TENSOR_F32
                       : opt->weights == TENSOR_BLOCKS ? TENSOR_Q8_0 : opt->weights;
    model_treatment how = MODEL_CONVERTED;
    if (want == TENSOR_Q8_0 && t->type == GGML_TYPE_Q8_0) {
        ok = tensor_from_q8_0(m, w->out, t, rows, w->cols, opt->group);
        if (w->cols % GGML_BLOCK_32 == 0) {
            how = MODEL_IN_PLACE;
            m->mapped_bytes += (size_t)t->bytes;
        }
    } else if (want == TENSOR_Q8_0 && f32_aligned)
        ok = model_tensor_quantize(m, w->out, t->data, rows, w->cols, opt->group);
    else
        ok = model_tensor_convert(m, w->out, want, opt->group, rows, w->cols, read_gguf_row, t);
    model_note_tensor(m, from, how, t->bytes);
    return ok;
}

/* ---- RoPE factors ---- */

/* Fails unless every one of the n factors f of a RoPE table (rope_freqs.weight,
 * LongRoPE's) is plausible: 0.001 to 1000, or at least 1e20, which stops the pair
 * from turning (Gemma 4's proportional RoPE writes 1e30 for the pairs it leaves). */
static llm_status check_factors(const model *m, const char *name, const float *f, int n,
                                llm_err *err)
{
    for (int i = 0; i < n; i++)
        if (!(f[i] >= 1e-3f && f[i] <= 1e3f) && !(f[i] >= 1e20f && f[i] <= FLT_MAX))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s[%d] is %g, not a plausible RoPE "
                            "frequency factor (0.001 to 1000, or 1e20 and above for a pair "
                            "that does not turn)", m->path, name, i, f[i]);
    return LLM_OK;
}

/* rope_freqs.weight (Llama 3.1+), in the files of a family that has it: one F32
 * divisor of each RoPE pair's frequency, read into the model's config; absent leaves
 * rope_freqs NULL. */
static llm_status read_rope_freqs(model *m, const gguf *g, const model_family *f, llm_err *err)
{
    const gguf_tensor *t = gguf_find_tensor(g, "rope_freqs.weight");
    int pairs = m->config.arch.rope_dims / 2;
    if (!t || !f->rope_freqs)
        return LLM_OK; /* another family's file holding it is refused as an extra tensor */
    if (t->n_dims != 1 || t->dims[0] != (uint64_t)pairs || !dequant_supported(t->type))
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor rope_freqs.weight should hold %d numbers (half the "
                        "values RoPE turns), as F32", m->path, pairs);
    float *div = model_own(m, sizeof(float) * (size_t)pairs);
    if (!div)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    read_gguf_row(t, 0, pairs, div);
    m->config.rope_freqs = div;
    m->n_params += pairs;
    return check_factors(m, "rope_freqs.weight", div, pairs, err);
}

/* ---- what the file holds beside ---- */

/* Whether a tensor's name is of a multi-token-prediction block (model_config.mtp_layers:
 * the blocks after those run), which the model keeps in the file unread. */
static bool mtp_block(const model *m, const char *name)
{
    int b, len = 0;
    if (sscanf(name, "blk.%d.%n", &b, &len) != 1 || len == 0)
        return false;
    return b >= m->config.n_layers && b < m->config.n_layers + m->config.mtp_layers;
}

/* Every tensor of the file must be one the model uses: a bias, expert or norm tensor
 * llmchat would ignore means a model it would run wrongly. used (n) are the model's. */
static llm_status check_no_extra_tensors(const model *m, const gguf *g, const model_family *f,
                                         const weight *used, int n, llm_err *err)
{
    const char *arch = m->config.arch.name;
    for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        bool known = (f->rope_freqs && !strcmp(t->name, "rope_freqs.weight")) ||
                     mtp_block(m, t->name);
        for (int k = 0; k < n && !known; k++)
            known = used[k].t == t;
        if (known)
            continue;
        const char *why = strstr(t->name, "_shexp")
                              ? "a shared expert, which the family does not have"
                          : strstr(t->name, "_exps") || strstr(t->name, "ffn_gate_inp")
                              ? m->config.n_experts ? "an expert tensor the family does not have"
                                                    : "expert tensors, but the file's keys say "
                                                      "no experts"
                          : strstr(t->name, "ffn_gate.") || strstr(t->name, "ffn_up.") ||
                                  strstr(t->name, "ffn_down.")
                              ? m->config.n_experts ? "a dense feed-forward in a layer of experts "
                                                      "(per-expert tensors of old Mixtral "
                                                      "files are not read: convert it again)"
                                                    : "llmchat would run the model without it"
                          : strstr(t->name, ".bias") ? "biases the architecture does not have are "
                                                       "not supported"
                                                     : "llmchat would run the model without it";
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor %s is not part of the %s "
                        "architecture llmchat runs (%s)", m->path, t->name, arch, why);
    }
    return LLM_OK;
}

/* Whether the file's layers hold attn_qkv (a fused family's) rather than attn_q,
 * attn_k, attn_v. */
static bool file_fuses_qkv(const gguf *g, const model_family *f)
{
    return f->fused && gguf_find_tensor(g, "blk.0.attn_qkv.weight");
}

/* The experts' matrices of a stack (n_experts of `rows` rows each): rows r0..r1-1 of
 * each expert's, as views, in an array the model owns; NULL when out of memory. */
static tensor *view_stack(model *m, const tensor *stack, int rows, int r0, int r1)
{
    int n = m->config.n_experts;
    tensor *e = model_own(m, sizeof *e * (size_t)n);
    for (int i = 0; e && i < n; i++)
        e[i] = model_tensor_rows(stack, i * rows + r0, i * rows + r1);
    return e;
}

/* The matrices of each layer's fused tensors and expert stacks, as views of their rows;
 * false when out of memory. */
static bool view_fused(model *m, const tensor *fused)
{
    const model_config *c = &m->config;
    for (int l = 0; l < c->n_layers; l++) {
        model_layer *y = &m->layers[l];
        const tensor *v = &fused[LAYER_VIEWED * l];
        if (c->arch.fused_qkv) {
            y->wq = model_tensor_rows(&v[FUSED_QKV], 0, y->q_dim);
            y->wk = model_tensor_rows(&v[FUSED_QKV], y->q_dim, y->q_dim + y->kv_dim);
            y->wv = model_tensor_rows(&v[FUSED_QKV], y->q_dim + y->kv_dim,
                                      y->q_dim + 2 * y->kv_dim);
        }
        if (c->arch.fused_gate_up && (c->n_experts == 0 || c->arch.dense_beside_experts)) {
            y->w1 = model_tensor_rows(&v[FUSED_FFN], 0, y->hidden_dim);
            y->w3 = model_tensor_rows(&v[FUSED_FFN], y->hidden_dim, 2 * y->hidden_dim);
        }
        if (c->n_experts == 0)
            continue;
        /* gate and up: two stacks, or one of both (each expert's gate rows, then up) */
        int eh = c->expert_hidden_dim, one = y->gate_up_stack;
        const tensor *gate = &v[one ? EXPS_GATE_UP : EXPS_GATE];
        const tensor *up = &v[one ? EXPS_GATE_UP : EXPS_UP];
        int per = one ? 2 * eh : eh, up0 = one ? eh : 0;
        if (!(y->expert_gate = view_stack(m, gate, per, 0, eh)) ||
            !(y->expert_up = view_stack(m, up, per, up0, up0 + eh)) ||
            !(y->expert_down = view_stack(m, &v[EXPS_DOWN], c->dim, 0, c->dim)))
            return false;
    }
    return true;
}

/* After every weight of l was found: nothing else is in the file (family f's), the RoPE
 * factors are plausible (LongRoPE's, factors: long and short, or NULL); counts the
 * parameters. */
static llm_status check_file(model *m, const gguf *g, const model_family *f,
                             const weight_list *l, const float *const *factors, llm_err *err)
{
    model_config *c = &m->config;
    m->n_params = 0;
    for (int i = 0; i < l->n; i++)
        m->n_params += (long long)l->ws[i].t->n_values;
    llm_status st = check_no_extra_tensors(m, g, f, l->ws, l->n, err);
    if (st == LLM_OK)
        st = read_rope_freqs(m, g, f, err);
    int n = c->arch.rope_dims / 2;
    if (st == LLM_OK && factors[0] &&
        (st = check_factors(m, "rope_factors_long.weight", factors[0], n, err)) == LLM_OK &&
        (st = check_factors(m, "rope_factors_short.weight", factors[1], n, err)) == LLM_OK) {
        c->rope_freqs_long = factors[0];
        c->rope_freqs = factors[1];
    }
    return st;
}

llm_status model_gguf_weights(model *m, const gguf *g, const model_family *f,
                              const model_options *opt, llm_err *err)
{
    model_config *c = &m->config;
    c->arch.fused_qkv = file_fuses_qkv(g, f);
    c->arch.fused_gate_up = f->fused;
    tensor *fused = calloc((size_t)c->n_layers * LAYER_VIEWED, sizeof *fused);
    const float *factors[2] = {NULL, NULL};
    weight_list l = {0};
    if (fused)
        list_weights(m, g, f, fused, factors, &l);
    llm_status st = LLM_OK;
    if (!fused || l.oom)
        st = llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    /* every tensor checked before any is converted; the vectors first (the LongRoPE
     * factors are read from them) */
    if (st == LLM_OK)
        for (int i = 0; i < l.n && st == LLM_OK; i++)
            if ((st = find_weight(m, g, &l.ws[i], err)) == LLM_OK && l.ws[i].vector &&
                !load_vector(m, &l.ws[i]))
                st = llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    if (st == LLM_OK)
        st = check_file(m, g, f, &l, factors, err);
    uint64_t total = 0;
    for (int i = 0; i < l.n && st == LLM_OK; i++)
        total += l.ws[i].vector ? 0 : l.ws[i].t->bytes;
    if (m->load)
        m->load->total = total;
    for (int i = 0; i < l.n && st == LLM_OK; i++)
        if (!l.ws[i].vector && !load_weight(m, &l.ws[i], opt))
            st = llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory while loading the weights (%s)",
                          m->path, l.ws[i].name);
    if (st == LLM_OK && !view_fused(m, fused))
        st = llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    if (st == LLM_OK) {
        if (c->shared_classifier)
            m->wcls = m->token_embedding;
    }
    free(l.ws);
    free(fused);
    return st;
}
