/* step_weight.c — the weight behind a step, one row and one input group of it taken
 * apart (see step_weight.h). One table row per step that has a weight. Owns nothing. */
#include "step_weight.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf.h"
#include "kernels.h"
#include "quant.h"

typedef enum { W_Q, W_K, W_V, W_O, W_GATE, W_UP, W_DOWN, W_ROUTER, W_OUTPUT } which_weight;

static const struct {
    hook_point step, input;
    which_weight w;
    const char *part; /* blk.N.PART.weight */
} weights[] = {
    {.step = HOOK_QCUR, .input = HOOK_ATTN_NORM, .w = W_Q, .part = "attn_q"},
    {.step = HOOK_KCUR, .input = HOOK_ATTN_NORM, .w = W_K, .part = "attn_k"},
    {.step = HOOK_VCUR, .input = HOOK_ATTN_NORM, .w = W_V, .part = "attn_v"},
    {.step = HOOK_KQV_OUT, .input = HOOK_KQV, .w = W_O, .part = "attn_output"},
    {.step = HOOK_FFN_GATE, .input = HOOK_FFN_NORM, .w = W_GATE, .part = "ffn_gate"},
    {.step = HOOK_FFN_UP, .input = HOOK_FFN_NORM, .w = W_UP, .part = "ffn_up"},
    {.step = HOOK_FFN_OUT, .input = HOOK_FFN_GATE_PAR, .w = W_DOWN, .part = "ffn_down"},
    {.step = HOOK_FFN_MOE_LOGITS, .input = HOOK_FFN_NORM, .w = W_ROUTER, .part = "ffn_gate_inp"},
    {.step = HOOK_RESULT_OUTPUT, .input = HOOK_RESULT_NORM, .w = W_OUTPUT, .part = "output"},
};
enum { N_WEIGHTS = sizeof weights / sizeof weights[0] };

static int weight_row(hook_point p)
{
    for (int i = 0; i < N_WEIGHTS; i++)
        if (weights[i].step == p)
            return i;
    return -1;
}

bool step_weight_has(hook_point p)
{
    return weight_row(p) >= 0;
}

static const tensor *tensor_of(const model *m, which_weight w, int layer)
{
    if (w == W_OUTPUT)
        return &m->wcls;
    const model_layer *L = &m->layers[layer];
    const tensor *t[] = {[W_Q] = &L->wq, [W_K] = &L->wk, [W_V] = &L->wv, [W_O] = &L->wo,
                         [W_GATE] = &L->w1, [W_UP] = &L->w3, [W_DOWN] = &L->w2,
                         [W_ROUTER] = &L->router};
    return t[w];
}

/* The type llmchat computes t in, as ggml names it ("Q4_K", "Q8_0", "F32"). */
static const char *computed_type(const tensor *t)
{
    switch (t->type) {
    case TENSOR_F32: return "F32";
    case TENSOR_BLOCKS: return ggml_type_name((uint32_t)t->btype);
    default: return "Q8_0";
    }
}

/* The file's tensor behind weight w of layer (its name into out->tensor) and the row
 * where the weight's rows start in it (fused tensors hold several); NULL for a file
 * that is not GGUF or lacks it. */
static const gguf_tensor *file_tensor(const model *m, int wi, int layer, step_weight *out,
                                      int *row_off)
{
    const model_config *c = &m->config;
    which_weight w = weights[wi].w;
    *row_off = 0;
    if (w == W_OUTPUT)
        snprintf(out->tensor, sizeof out->tensor, "%s",
                 c->shared_classifier ? "token_embd.weight" : "output.weight");
    else
        snprintf(out->tensor, sizeof out->tensor, "blk.%d.%s.weight", layer, weights[wi].part);
    if (!m->meta)
        return NULL;
    char fused[64];
    if (c->arch.fused_qkv && (w == W_Q || w == W_K || w == W_V)) {
        snprintf(fused, sizeof fused, "blk.%d.attn_qkv.weight", layer);
        *row_off = w == W_Q ? 0 : w == W_K ? c->q_dim : c->q_dim + c->kv_dim;
    } else if (c->arch.fused_gate_up && (w == W_GATE || w == W_UP)) {
        snprintf(fused, sizeof fused, "blk.%d.ffn_up.weight", layer);
        *row_off = w == W_GATE ? 0 : c->hidden_dim;
    } else {
        return gguf_find_tensor(m->meta, out->tensor);
    }
    snprintf(out->tensor, sizeof out->tensor, "%s", fused);
    return gguf_find_tensor(m->meta, fused);
}

/* Names the file's type and how llmchat computes the tensor; decodes the file's
 * block of the group when the loader converted it. */
static void describe_types(const model *m, int wi, const tensor *t, step_weight *out)
{
    int row_off;
    const gguf_tensor *g = file_tensor(m, wi, out->layer, out, &row_off);
    const char *comp = computed_type(t);
    if (g)
        snprintf(out->file_type, sizeof out->file_type, "%s", ggml_type_name(g->type));
    else
        snprintf(out->file_type, sizeof out->file_type, "%s (a llama2.c file)",
                 m->format == MODEL_FORMAT_LLAMA2C_V2 ? "Q8_0" : "F32");
    bool in_place = t->type == TENSOR_BLOCKS || t->type == TENSOR_Q8_0_BLOCKS ||
                    (t->type == TENSOR_F32 && !strncmp(out->file_type, "F32", 3));
    out->converted = strncmp(out->file_type, comp, strlen(comp)) != 0;
    snprintf(out->computed, sizeof out->computed, "%s%s", comp,
             in_place ? " in place"
             : out->converted ? ", converted at load"
                              : ", repacked at load into groups of its rows");
    if (!g || in_place || !block_decode_supported(g->type))
        return;
    uint64_t flat = (uint64_t)(row_off + out->row) * g->dims[0] + (uint64_t)out->group * 32;
    const ggml_type_info *info = ggml_type_get(g->type);
    const uint8_t *at;
    if (info->block == 1) { /* F32, F16, BF16: the run of values from the group's first */
        if (flat + BLOCK_RUN > g->n_values)
            return;
        at = (const uint8_t *)g->data + flat * info->bytes;
        out->file_value0 = 0;
    } else {
        uint64_t b = flat / info->block;
        if ((b + 1) * info->bytes > g->bytes)
            return;
        at = (const uint8_t *)g->data + b * info->bytes;
        out->file_value0 = (int)(flat % info->block);
    }
    block_decode(g->type, at, &out->file_block);
    out->file_block_ok = true;
}

/* The group of row r of t holding input group g, decoded into out->block; the group's
 * part of the dot product with the quantized input (xq, xs of every group). */
static float decode_group(const tensor *t, int r, int g, const int8_t *xq, const float *xs,
                          const float *x, step_weight *out)
{
    int G = out->group_len;
    if (t->type == TENSOR_F32) { /* a run of 32 (zeros past the row's end) */
        float run[BLOCK_RUN] = {0};
        int n = t->cols - g * G < G ? t->cols - g * G : G;
        memcpy(run, t->f + (size_t)r * t->stride + (size_t)g * G, sizeof(float) * (size_t)n);
        block_decode(GGML_TYPE_F32, run, &out->block);
        float s = 0.0f;
        for (int i = 0; i < n; i++)
            s += out->block.value[i] * x[g * G + i];
        return s;
    }
    if (t->type == TENSOR_Q8_0) {
        const int8_t *q = t->q + (size_t)r * t->stride + (size_t)g * G;
        float scale = t->scale[(size_t)r * (t->stride / G) + g];
        block_decode_q8_rows(q, scale, G, &out->block);
        return block_partial_dot_q8_rows(q, scale, xq + (size_t)g * G, xs[g], G);
    }
    if (t->type == TENSOR_Q8_0_BLOCKS) {
        const uint8_t *blk = tensor_block(t, r, g);
        block_decode(GGML_TYPE_Q8_0, blk, &out->block);
        return block_partial_dot(GGML_TYPE_Q8_0, blk, 0, xq + (size_t)g * G, xs[g], NULL);
    }
    int bv = block_decode_values((uint32_t)t->btype);
    uint8_t gathered[TENSOR_K4_BLOCK_BYTES]; /* the block of a row held in Q4_K panels */
    const uint8_t *blk = tensor_blocks_read(t, r, g * G / bv, 1, gathered);
    block_decode((uint32_t)t->btype, blk, &out->block);
    return block_partial_dot((uint32_t)t->btype, blk, (g * G % bv) / 32, xq + (size_t)g * G,
                             xs[g], NULL);
}

static const char *note_of(const model *m, hook_point step, int layer)
{
    switch (step) {
    case HOOK_QCUR: return "Qcur is this after RoPE (and the bias and QK-norm where the model has them)";
    case HOOK_KCUR: return "Kcur is this after RoPE (and the bias and QK-norm where the model has them)";
    case HOOK_VCUR: return m->layers[layer].bv ? "Vcur is this plus the bias" : NULL;
    case HOOK_KQV_OUT: return m->layers[layer].bo ? "kqv_out is this plus the bias" : NULL;
    case HOOK_FFN_MOE_LOGITS:
        return m->layers[layer].router_bias
                   ? "ffn_moe_logits is this plus the router's bias (-inf: knocked out; "
                     "raised: forced)"
                   : "ffn_moe_logits is this (-inf: knocked out; raised: forced)";
    case HOOK_RESULT_OUTPUT:
        return m->config.arch.final_softcap != 0.0f ? "the logit is this soft-capped" : NULL;
    default: return NULL;
    }
}

/* The input quantized as the pass quantizes it for t (into xq, xs: (stride), (stride /
 * group)); false for fp32 weights, which take it as it is. */
static bool quantize_input(const tensor *t, const float *x, int8_t *xq, float *xs)
{
    if (t->type == TENSOR_F32)
        return false;
    int group = t->type == TENSOR_Q8_0 ? t->group : QUANT_BLOCK;
    int stride = t->type == TENSOR_Q8_0 ? t->stride : t->cols;
    quant_quantize_row(xq, xs, x, t->cols, stride, group);
    return true;
}

/* Fills out's group, input and parts for row r, group g of t. xq, xs: scratch of the
 * row's length. */
static void explain_row(const tensor *t, const float *x, int8_t *xq, float *xs, step_weight *out)
{
    int G = out->group_len, r = out->row, g = out->group;
    out->quantized = quantize_input(t, x, xq, xs);
    for (int i = 0; i < G && i < BLOCK_VALUES_MAX; i++) {
        int at = g * G + i;
        out->x[i] = at < t->cols ? x[at] : 0.0f;
        out->xq[i] = out->quantized ? xq[at] : 0;
    }
    out->xs = out->quantized ? xs[g] : NAN;
    out->xsum = NAN;
    if (out->quantized) {
        int s = 0;
        for (int i = 0; i < G; i++)
            s += out->xq[i];
        out->xsum = out->xs * (float)s;
    }
    out->row_total = 0.0f;
    for (int k = 0; k < out->groups; k++) {
        float part = decode_group(t, r, k, xq, xs, x, out);
        if (k == g)
            out->partial = part;
        out->row_total += part;
    }
    decode_group(t, r, g, xq, xs, x, out); /* the shown group's block again */
    int bv = out->block.n;
    out->block_no = (g * G) / bv;
    out->value0 = (g * G) % bv;
    out->n_sums = out->quantized
                      ? block_group_sums(&out->block, out->value0 / 32, out->xq, out->sums)
                      : 0;
}

llm_status step_weight_explain(const model *m, const tensor_capture *cap, hook_point step,
                               int layer, int row, int group, step_weight *out, llm_err *err)
{
    int wi = weight_row(step);
    if (wi < 0)
        return llm_fail(err, LLM_ERR_ARG, "%s multiplies by no weight", hook_name(step));
    if (weights[wi].w != W_OUTPUT && (layer < 0 || layer >= m->config.n_layers))
        return llm_fail(err, LLM_ERR_ARG, "no layer %d", layer);
    which_weight w = weights[wi].w;
    if (m->config.n_experts > 0 && !m->config.arch.dense_beside_experts &&
        (w == W_GATE || w == W_UP || w == W_DOWN))
        return llm_fail(err, LLM_ERR_ARG, "layer %d is a mixture of experts: %s is the sum of "
                        "the chosen experts' products, which this view does not break down",
                        layer, hook_name(step));
    if (m->config.arch.dense_beside_experts && w == W_DOWN)
        return llm_fail(err, LLM_ERR_ARG, "layer %d has experts beside its feed-forward: %s is "
                        "the two parts' normed outputs added, which this view does not break "
                        "down", layer, hook_name(step));
    const captured_step *s = capture_find(cap, step, weights[wi].w == W_OUTPUT ? -1 : layer);
    const captured_step *in =
        capture_find(cap, weights[wi].input, weights[wi].w == W_OUTPUT ? -1 : layer);
    const tensor *t = tensor_of(m, weights[wi].w, layer);
    if (!s || !in || in->n != t->cols || s->n != t->rows)
        return llm_fail(err, LLM_ERR_ARG, "the capture lacks %s or %s of layer %d",
                        hook_name(step), hook_name(weights[wi].input), layer);
    memset(out, 0, sizeof *out);
    out->step = step;
    out->input = weights[wi].input;
    out->layer = weights[wi].w == W_OUTPUT ? -1 : layer;
    out->rows = t->rows;
    out->cols = t->cols;
    out->row = row < 0 ? 0 : row >= t->rows ? t->rows - 1 : row;
    out->group_len = t->type == TENSOR_Q8_0 ? t->group : 32;
    if (out->group_len > BLOCK_VALUES_MAX)
        return llm_fail(err, LLM_ERR_ARG, "groups of %d values are more than the view shows",
                        out->group_len);
    int stride = t->type == TENSOR_Q8_0 ? t->stride : t->cols;
    out->groups = (stride + out->group_len - 1) / out->group_len;
    out->group = group < 0 ? 0 : group >= out->groups ? out->groups - 1 : group;
    int8_t *xq = malloc((size_t)stride + 64);
    float *xs = malloc(sizeof(float) * (size_t)(out->groups + 1));
    if (!xq || !xs) {
        free(xq);
        free(xs);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the weight's row");
    }
    explain_row(t, in->values, xq, xs, out);
    free(xq);
    free(xs);
    describe_types(m, wi, t, out);
    out->step_value = s->values[out->row];
    out->note = note_of(m, step, out->layer);
    return LLM_OK;
}
