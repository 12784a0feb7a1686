/* model.c — opening a model file: holding its bytes, handing them to the loader of its
 * format (model_llama2c.c, model_gguf.c), checking the weights it produced for NaN and
 * infinity, and summing up what loading did (see model.h).
 *
 * Owns: the file's bytes (mapped, or read into memory of huge pages: model_memory.c),
 * the parsed GGUF metadata, and every buffer made at load (Q8_0 quantizations,
 * repacked or decoded weights). Also the parts every format shares: shape limits,
 * building tensors (views, quantized, converted row by row in parallel), progress
 * reports. Does not compute anything with the weights:
 * that is the forward pass (core/forward.c), through quant.h. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "finite.h"
#include "ggml_type.h"
#include "huge_pages.h"
#include "input_file.h"
#include "kernels.h"
#include "gguf.h"
#include "model_internal.h"

void model_options_default(model_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->weights = TENSOR_BLOCKS;
    opt->group = QUANT_GROUP_DEFAULT;
    opt->progress_min_bytes = MODEL_PROGRESS_MIN_BYTES;
}

const char *model_weights_name(const model *m)
{
    return m->weights == TENSOR_BLOCKS ? "native" : m->weights == TENSOR_Q8_0 ? "Q8_0" : "F32";
}

const char *model_weights_option(const model *m)
{
    return m->weights == TENSOR_BLOCKS ? "native" : m->weights == TENSOR_Q8_0 ? "q8_0" : "f32";
}

bool model_weights_parse(const char *name, tensor_type *out)
{
    if (!strcmp(name, "native"))
        *out = TENSOR_BLOCKS;
    else if (!strcmp(name, "q8_0") || !strcmp(name, "int8"))
        *out = TENSOR_Q8_0;
    else if (!strcmp(name, "f32") || !strcmp(name, "fp32"))
        *out = TENSOR_F32;
    else
        return false;
    return true;
}

/* ---- shapes ---- */

bool model_shape_ok(const model_shape *s, char *why, size_t why_size)
{
    const struct {
        const char *name;
        int64_t value, max;
    } fields[] = {
        {"dim", s->dim, MODEL_MAX_DIM},
        {"hidden_dim", s->hidden_dim, MODEL_MAX_HIDDEN},
        {"n_layers", s->n_layers, MODEL_MAX_LAYERS},
        {"n_heads", s->n_heads, MODEL_MAX_DIM},
        {"n_kv_heads", s->n_kv_heads, MODEL_MAX_DIM},
        {"vocab_size", s->vocab_size, MODEL_MAX_VOCAB},
        {"seq_len", s->seq_len, MODEL_MAX_SEQ},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i].value <= 0) {
            snprintf(why, why_size, "%s is %lld, not positive", fields[i].name,
                     (long long)fields[i].value);
            return false;
        }
        if (fields[i].value > fields[i].max) {
            snprintf(why, why_size, "%s is %lld, more than the %d this program accepts",
                     fields[i].name, (long long)fields[i].value, (int)fields[i].max);
            return false;
        }
    }
    int64_t head = s->head_size > 0 ? s->head_size : s->dim / s->n_heads;
    if (s->head_size <= 0 && s->dim % s->n_heads != 0) {
        snprintf(why, why_size, "dim %d is not a multiple of n_heads %d", (int)s->dim,
                 (int)s->n_heads);
        return false;
    }
    if (s->n_kv_heads > s->n_heads || s->n_heads % s->n_kv_heads != 0) {
        snprintf(why, why_size, "n_kv_heads %d does not divide n_heads %d", (int)s->n_kv_heads,
                 (int)s->n_heads);
        return false;
    }
    const char *from = s->head_size > 0 ? "key_length" : "dim / n_heads";
    if (head % 2 != 0) {
        snprintf(why, why_size, "head size %d (%s) is odd; RoPE needs pairs", (int)head, from);
        return false;
    }
    if (head > MODEL_MAX_HEAD) {
        snprintf(why, why_size, "head size %d (%s) is more than the %d this program accepts",
                 (int)head, from, (int)MODEL_MAX_HEAD);
        return false;
    }
    if (s->n_heads * head > MODEL_MAX_DIM) {
        snprintf(why, why_size, "n_heads %d times the head size %d is more than the %d this "
                 "program accepts", (int)s->n_heads, (int)head, (int)MODEL_MAX_DIM);
        return false;
    }
    return true;
}

void model_set_shape(model *m, const model_shape *s, bool shared_classifier)
{
    model_config *c = &m->config;
    c->dim = (int)s->dim;
    c->hidden_dim = (int)s->hidden_dim;
    c->n_layers = (int)s->n_layers;
    c->n_heads = (int)s->n_heads;
    c->n_kv_heads = (int)s->n_kv_heads;
    c->vocab_size = (int)s->vocab_size;
    c->seq_len = (int)s->seq_len;
    c->head_size = s->head_size > 0 ? (int)s->head_size : c->dim / c->n_heads;
    c->q_dim = c->n_heads * c->head_size;
    c->kv_dim = c->n_kv_heads * c->head_size;
    c->arch = model_arch_llama(c->head_size);
    c->shared_classifier = shared_classifier;
    int64_t dim = c->dim, hidden = c->hidden_dim, kv = c->kv_dim, q = c->q_dim;
    int64_t layer = 2 * q * dim + 2 * kv * dim + 3 * hidden * dim + 2 * dim;
    int64_t emb = (int64_t)c->vocab_size * dim;
    m->n_params = emb + c->n_layers * layer + dim + (shared_classifier ? 0 : emb);
}

void model_layers_default(model *m)
{
    const model_config *c = &m->config;
    for (int l = 0; l < c->n_layers; l++) {
        model_layer *L = &m->layers[l];
        L->head_size = c->head_size;
        L->n_kv_heads = c->n_kv_heads;
        L->q_dim = c->q_dim;
        L->kv_dim = c->kv_dim;
        L->hidden_dim = c->hidden_dim;
        L->kv_layer = l;
        L->out_scale = NULL;
    }
}

model_arch model_arch_llama(int head_size)
{
    return (model_arch){
        .name = "llama",
        .rope_layout = MODEL_ROPE_PAIRS,
        .rope_dims = head_size,
        .rope_base_swa = 0.0f,
        .act = MODEL_ACT_SILU,
        .embed_scale = 1.0f,
        .query_scale = 1.0f / sqrtf((float)head_size),
        .attn_softcap = 0.0f,
        .final_softcap = 0.0f,
        .attn_bias = false,
        .qk_norm = false,
        .post_norms = false,
        .fused_qkv = false,
        .fused_gate_up = false,
        .sliding_window = 0,
    };
}

int model_mixer_width(const model_config *c)
{
    return c->dn_layers > 0 && c->dn_value_dim > c->q_dim ? c->dn_value_dim : c->q_dim;
}

int model_ffn_width(const model_config *c)
{
    return c->shexp_hidden > c->hidden_dim ? c->shexp_hidden : c->hidden_dim;
}

int model_layer_heads(const model *m, int l)
{
    return m->layers[l].kind == MODEL_LAYER_DELTA_NET ? m->config.dn_v_heads : m->config.n_heads;
}

int model_heads_max(const model_config *c)
{
    return c->dn_layers > 0 && c->dn_v_heads > c->n_heads ? c->dn_v_heads : c->n_heads;
}

bool model_arch_is_llama(const model_config *c)
{
    const model_arch *a = &c->arch, l = model_arch_llama(c->head_size);
    return a->rope_layout == l.rope_layout && a->rope_dims == l.rope_dims &&
           a->rope_base_swa == l.rope_base_swa && a->act == l.act &&
           a->embed_scale == l.embed_scale && a->query_scale == l.query_scale &&
           a->attn_softcap == l.attn_softcap && a->final_softcap == l.final_softcap &&
           a->attn_bias == l.attn_bias && a->qk_norm == l.qk_norm &&
           a->post_norms == l.post_norms && a->fused_qkv == l.fused_qkv &&
           a->fused_gate_up == l.fused_gate_up && a->sliding_window == l.sliding_window &&
           a->qk_norm_whole == l.qk_norm_whole && a->attn_out_bias == l.attn_out_bias &&
           a->attn_sinks == l.attn_sinks && c->n_experts == 0 && c->dn_layers == 0 &&
           a->gated_attention == l.gated_attention && a->value_norm == l.value_norm &&
           !c->layers_vary && c->ple_dim == 0;
}

/* ---- buffers and tensors ---- */

tensor model_tensor_rows(const tensor *w, int r0, int r1)
{
    tensor v = *w;
    v.rows = r1 - r0;
    v.panels = NULL; /* panels are packed per matrix, after the views are made */
    switch (w->type) {
    case TENSOR_F32:
        v.f = w->f + (size_t)r0 * w->stride;
        break;
    case TENSOR_Q8_0:
        v.q = w->q + (size_t)r0 * w->stride;
        v.scale = w->scale + (size_t)r0 * (w->stride / w->group);
        break;
    case TENSOR_Q8_0_BLOCKS:
        v.blocks = tensor_block(w, r0, 0);
        break;
    case TENSOR_BLOCKS:
        v.blocks = tensor_row_blocks(w, r0);
        break;
    }
    return v;
}

/* model_own with the memory aligned to `align` (a power of two, at least 64), its
 * size rounded up to a multiple of it. */
static void *own_aligned(model *m, size_t bytes, size_t align)
{
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? 2 * m->cap_owned : 32;
        void **grown = realloc(m->owned, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        m->owned = grown;
        m->cap_owned = cap;
    }
    size_t rounded = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded ? rounded : align);
    if (!p)
        return NULL;
    if (m->huge_pages) /* before the first write; a small buffer has no whole huge page */
        huge_pages_ask(p, rounded);
    m->owned[m->n_owned++] = p;
    m->owned_bytes += bytes;
    return p;
}

void *model_own(model *m, size_t bytes)
{
    return own_aligned(m, bytes, 64);
}

void model_close(model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    gguf_free((gguf *)m->meta);
    model_memory_release(m->map, m->map_bytes, m->file_read);
    free(m->path);
    free(m);
}

tensor model_tensor_view(const float *f, int rows, int cols)
{
    tensor t = {.type = TENSOR_F32, .rows = rows, .cols = cols, .stride = cols, .group = 0};
    t.f = f;
    return t;
}

bool model_tensor_quantize(model *m, tensor *t, const float *src, int rows, int cols, int group)
{
    int stride = quant_stride(cols, group);
    int8_t *q = model_own(m, (size_t)rows * stride);
    float *scale = model_own(m, sizeof(float) * (size_t)rows * (stride / group));
    if (!q || !scale)
        return false;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++)
        quant_quantize_row(q + (size_t)r * stride, scale + (size_t)r * (stride / group),
                           src + (size_t)r * cols, cols, stride, group);
    *t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = stride,
                  .group = group, .q = q, .scale = scale};
    return true;
}

bool model_tensor_convert(model *m, tensor *t, tensor_type want, int group, int rows, int cols,
                          model_row_reader read, const void *src)
{
    if (want == TENSOR_F32) {
        float *f = model_own(m, sizeof(float) * (size_t)rows * cols);
        if (!f)
            return false;
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++)
            read(src, r, cols, f + (size_t)r * cols);
        *t = model_tensor_view(f, rows, cols);
        return true;
    }
    int stride = quant_stride(cols, group);
    int8_t *q = model_own(m, (size_t)rows * stride);
    float *scale = model_own(m, sizeof(float) * (size_t)rows * (stride / group));
    if (!q || !scale)
        return false;
    bool ok = true;
#pragma omp parallel
    {
        float *row = malloc(sizeof(float) * (size_t)cols); /* (cols) one row, per thread */
        if (!row) {
#pragma omp atomic write
            ok = false;
        }
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            if (!row)
                continue;
            read(src, r, cols, row);
            quant_quantize_row(q + (size_t)r * stride, scale + (size_t)r * (stride / group), row,
                               cols, stride, group);
        }
        free(row);
    }
    *t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = stride,
                  .group = group, .q = q, .scale = scale};
    return ok;
}

/* ---- progress and the load summary ---- */

void model_note_tensor(model *m, const char *from, model_treatment how, uint64_t bytes)
{
    struct model_load_state *s = m->load;
    if (!s)
        return;
    int i = 0;
    while (i < s->n_tally && !(s->tally[i].how == how && !strcmp(s->tally[i].from, from)))
        i++;
    if (i == s->n_tally && i < MODEL_TALLY_MAX) {
        snprintf(s->tally[i].from, sizeof s->tally[i].from, "%s", from);
        s->tally[i].how = how;
        s->tally[i].count = 0;
        s->n_tally++;
    }
    if (i < s->n_tally)
        s->tally[i].count++;
    s->done += bytes;
    if (s->done > s->total)
        s->done = s->total;
    if (s->progress)
        s->progress(s->user, s->done, s->total);
}

/* "1.2 GB", "340 KB": decimal units, as file sizes are usually shown. */
static void format_bytes(char *out, size_t size, double bytes)
{
    const char *units[] = {"bytes", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) {
        bytes /= 1000;
        u++;
    }
    snprintf(out, size, u == 0 ? "%.0f %s" : bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* The source types of the tally treated `how` (converted: only those that change
 * type, or only those that keep it, as same_type says), ", "-separated into out;
 * returns the most frequent one, or NULL when there is none. */
static const char *tally_types(const struct model_load_state *s, model_treatment how,
                               const char *to, int same_type, char *out, size_t size)
{
    const char *top = NULL;
    int top_count = 0;
    out[0] = '\0';
    for (int i = 0; i < s->n_tally; i++) {
        if (s->tally[i].how != how ||
            (same_type >= 0 && (strcmp(s->tally[i].from, to) == 0) != same_type))
            continue;
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? ", " : "", s->tally[i].from);
        if (s->tally[i].count > top_count) {
            top = s->tally[i].from;
            top_count = s->tally[i].count;
        }
    }
    return top;
}

/* m->weights_label ("Q4_K→Q8_0") and m->load_summary ("Q4_K, Q6_K → Q8_0 at load:
 * 7.2 GB resident") from the tally of the matrices. */
static void summarize(model *m, const struct model_load_state *s)
{
    const char *to = m->weights == TENSOR_F32 ? "F32" : "Q8_0"; /* what conversion makes */
    char types[64], size[32];
    char *out = m->load_summary;
    size_t cap = sizeof m->load_summary, len = 0;
    out[0] = '\0';
#define PART(...) (len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, __VA_ARGS__), \
                   len = len < cap ? len : cap - 1)
    const char *in_place = tally_types(s, MODEL_IN_PLACE, to, -1, types, sizeof types);
    if (in_place)
        PART("%s%s in place", len ? "; " : "", types);
    if (tally_types(s, MODEL_CONVERTED, to, 1, types, sizeof types))
        PART("%s%s quantized again into rows", len ? "; " : "", types);
    const char *top = tally_types(s, MODEL_CONVERTED, to, 0, types, sizeof types);
    if (top)
        PART("%s%s → %s at load", len ? "; " : "", types, to);
    if (m->panel_bytes) {
        format_bytes(size, sizeof size, (double)m->panel_bytes);
        PART("%sQ8_0 again as decode panels (%s)", len ? "; " : "", size);
    }
    if (m->k4_panel_bytes) {
        format_bytes(size, sizeof size, (double)m->k4_panel_bytes);
        PART("%sQ4_K as decode panels, in place of %s blocks (%s)", len ? "; " : "",
             m->file_read ? "their" : "the mapped", size);
    }
    /* Q4_K panels take no memory more: their blocks are packed over, or given back */
    format_bytes(size, sizeof size, (double)(m->owned_bytes + m->mapped_bytes + m->panel_bytes));
    PART("%s%s resident", len ? ": " : "", size);
    snprintf(m->weights_size, sizeof m->weights_size, "%s", size);
#undef PART
    if (m->weights == TENSOR_BLOCKS) /* "Q4_K": the file's main type, computed as it is */
        snprintf(m->weights_label, sizeof m->weights_label, "%s", in_place);
    else if (top)
        snprintf(m->weights_label, sizeof m->weights_label, "%s→%s", top, to);
    else
        snprintf(m->weights_label, sizeof m->weights_label, "%s", to);
}

/* ---- corrupt weights ---- */

/* What a scan for the first bad row looks at: one of the row tests below, and its
 * tensor (or floats, per_row a row). */
typedef struct row_scan row_scan;
struct row_scan {
    bool (*bad)(const row_scan *s, int r);
    const tensor *t;
    const float *x;
    size_t per_row;
    int half_at[2]; /* the BLOCKS test's half scales (byte offsets in a block; -1: none) */
};

/* The first of rows 0..rows-1 that s->bad finds bad, or -1; the rows are scanned in
 * parallel, and a row after one already found bad is skipped. */
static ptrdiff_t first_bad_row_of(const row_scan *s, int rows)
{
    ptrdiff_t first = -1;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        ptrdiff_t known;
#pragma omp atomic read
        known = first;
        if (known >= 0 && known < r)
            continue;
        if (s->bad(s, r)) {
#pragma omp critical(model_first_bad_row)
            if (first < 0 || r < first)
                first = r;
        }
    }
    return first;
}

/* Row r of floats holds NaN or infinity. */
static bool floats_row_bad(const row_scan *s, int r)
{
    return finite_first_bad(s->x + (size_t)r * s->per_row, s->per_row) >= 0;
}

/* The first of (rows, per_row) floats x that holds NaN or infinity, or -1. */
static ptrdiff_t first_bad_row(const float *x, int rows, size_t per_row)
{
    row_scan s = {.bad = floats_row_bad, .x = x, .per_row = per_row};
    return first_bad_row_of(&s, rows);
}

/* The weights by the names the file uses: llama2.c's ("wq of layer 3") or GGUF's
 * ("blk.3.attn_q.weight"; the fused tensor a view was made of: "blk.3.attn_qkv.weight"). */
typedef enum {
    W_EMB, W_CLS, W_FINAL, W_ATT, W_FFN, W_Q, W_K, W_V, W_O, W_1, W_2, W_3,
    W_BQ, W_BK, W_BV, W_QN, W_KN, W_PA, W_PF, W_ROUTER, W_EGATE, W_EUP, W_EDOWN, W_ESCALE,
    W_RSCALE, W_PRE2, W_POST1, W_POST2, W_COUNT
} weight_id;

static void weight_name(const model *m, weight_id w, int layer, char *out, size_t size)
{
    static const char *const l2c[W_COUNT] = {
        "token_embedding", "wcls", "rms_final", "rms_att", "rms_ffn", "wq", "wk", "wv", "wo",
        "w1", "w2", "w3", "bq", "bk", "bv", "q_norm", "k_norm", "post_attn_norm",
        "post_ffn_norm", "router", "expert_gate", "expert_up", "expert_down", "expert_scale",
        "router_scale", "pre_experts_norm", "post_dense_norm", "post_experts_norm"};
    static const char *const gg[W_COUNT] = {
        "token_embd.weight", "output.weight", "output_norm.weight", "attn_norm.weight",
        "ffn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
        "attn_output.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight",
        "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_q_norm.weight",
        "attn_k_norm.weight", "post_attention_norm.weight", "post_ffw_norm.weight",
        "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",
        "ffn_down_exps.weight", "ffn_down_exps.scale", "ffn_gate_inp.scale",
        "pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight"};
    const model_arch *a = &m->config.arch;
    const char *name = gg[w];
    if (a->fused_qkv && (w == W_Q || w == W_K || w == W_V))
        name = "attn_qkv.weight";
    if (a->fused_gate_up && (w == W_1 || w == W_3))
        name = "ffn_up.weight";
    if ((w == W_EGATE || w == W_EUP) && layer >= 0 && m->layers[layer].gate_up_stack)
        name = "ffn_gate_up_exps.weight";
    if (m->format == MODEL_FORMAT_GGUF && layer >= 0)
        snprintf(out, size, "blk.%d.%s", layer, name);
    else if (m->format == MODEL_FORMAT_GGUF)
        snprintf(out, size, "%s", name);
    else if (layer >= 0)
        snprintf(out, size, "%s of layer %d", l2c[w], layer);
    else
        snprintf(out, size, "%s", l2c[w]);
}

/* Row r of a Q8_0_BLOCKS tensor has a block whose half scale is NaN or infinite (all
 * exponent bits set). */
static bool q8_0_blocks_row_bad(const row_scan *s, int r)
{
    for (int g = 0; g < s->t->cols / QUANT_BLOCK; g++)
        if ((tensor_block(s->t, r, g)[1] & 0x7c) == 0x7c)
            return true;
    return false;
}

/* Row r of an MXFP4 BLOCKS tensor has a value that decodes to infinity. Its scales are
 * powers of two and always finite; only the largest exponents (253 and up: 2^125 · 8
 * overflows) make values too large for fp32. */
static bool mxfp4_row_bad(const row_scan *s, int r)
{
    size_t blocks = s->t->row_bytes / GGML_MXFP4_BYTES;
    const uint8_t *b = tensor_row_blocks(s->t, r);
    for (size_t k = 0; k < blocks; k++, b += GGML_MXFP4_BYTES) {
        if (b[0] < 253)
            continue;
        float d = ggml_e8m0_half_to_f32(b[0]);
        for (int j = 1; j < GGML_MXFP4_BYTES; j++)
            if (isinf((float)ggml_kvalues_mxfp4[b[j] & 0x0f] * d) ||
                isinf((float)ggml_kvalues_mxfp4[b[j] >> 4] * d))
                return true;
    }
    return false;
}

/* Row r of a BLOCKS tensor has a block whose half scale (at s->half_at) is NaN or
 * infinite. */
static bool ggml_blocks_row_bad(const row_scan *s, int r)
{
    size_t bytes = ggml_type_get((uint32_t)s->t->btype)->bytes;
    size_t blocks = s->t->row_bytes / bytes;
    const uint8_t *row = tensor_row_blocks(s->t, r);
    for (size_t b = 0; b < blocks; b++)
        for (int h = 0; h < 2; h++)
            if (s->half_at[h] >= 0 && (row[b * bytes + (size_t)s->half_at[h] + 1] & 0x7c) == 0x7c)
                return true;
    return false;
}

/* The first row of a BLOCKS tensor with a block whose half scale (d, and dmin or m for
 * the types with mins) is NaN or infinite, or for MXFP4 with a value that decodes to
 * infinity; or -1. */
static ptrdiff_t first_bad_ggml_row(const tensor *t)
{
    static const struct {
        int type, at[2]; /* byte offsets of the halves in the block; -1: none */
    } halves[] = {
        {.type = GGML_TYPE_Q4_0, .at = {0, -1}}, {.type = GGML_TYPE_Q4_1, .at = {0, 2}},
        {.type = GGML_TYPE_Q5_0, .at = {0, -1}}, {.type = GGML_TYPE_Q5_1, .at = {0, 2}},
        {.type = GGML_TYPE_Q4_K, .at = {0, 2}},  {.type = GGML_TYPE_Q5_K, .at = {0, 2}},
        {.type = GGML_TYPE_Q6_K, .at = {208, -1}},
    };
    row_scan s = {.bad = ggml_blocks_row_bad, .t = t};
    if (t->btype == GGML_TYPE_MXFP4) {
        s.bad = mxfp4_row_bad;
    } else {
        size_t k = 0;
        while (k < sizeof halves / sizeof halves[0] - 1 && halves[k].type != t->btype)
            k++;
        s.half_at[0] = halves[k].at[0];
        s.half_at[1] = halves[k].at[1];
    }
    return first_bad_row_of(&s, t->rows);
}

/* The first row of a Q8_0_BLOCKS tensor with a block whose half scale is NaN or
 * infinite, or -1. */
static ptrdiff_t first_bad_block_row(const tensor *t)
{
    row_scan s = {.bad = q8_0_blocks_row_bad, .t = t};
    return first_bad_row_of(&s, t->rows);
}

/* Fails when tensor t holds NaN or infinity: for Q8_0, in its scales (a group
 * quantized from non-finite values has a non-finite scale too), for F32 in its values. */
static llm_status check_tensor_of(const model *m, const tensor *t, weight_id w, int layer,
                                  int expert, llm_err *err)
{
    ptrdiff_t bad = t->type == TENSOR_BLOCKS        ? first_bad_ggml_row(t)
                    : t->type == TENSOR_Q8_0_BLOCKS ? first_bad_block_row(t)
                    : t->type == TENSOR_Q8_0
                        ? first_bad_row(t->scale, t->rows, (size_t)(t->stride / t->group))
                        : first_bad_row(t->f, t->rows, (size_t)t->stride);
    if (bad < 0)
        return LLM_OK;
    char name[64];
    weight_name(m, w, layer, name, sizeof name);
    /* a view of a fused tensor: the row of the file's tensor */
    const model_config *c = &m->config;
    if (c->arch.fused_qkv && (w == W_K || w == W_V))
        bad += c->q_dim + (w == W_V ? c->kv_dim : 0);
    if (c->arch.fused_gate_up && w == W_3)
        bad += c->hidden_dim;
    if ((w == W_EGATE || w == W_EUP) && m->layers[layer].gate_up_stack) /* one stack */
        bad += (ptrdiff_t)expert * 2 * t->rows + (w == W_EUP ? t->rows : 0);
    else if (w == W_EGATE || w == W_EUP || w == W_EDOWN) /* expert `expert` of the stack */
        bad += (ptrdiff_t)expert * t->rows;
    return llm_fail(err, LLM_ERR_NUMERIC,
                    "%s: %s holds NaN or infinite values (row %td): the file is corrupt",
                    m->path, name, bad);
}

static llm_status check_tensor(const model *m, const tensor *t, weight_id w, int layer,
                               llm_err *err)
{
    return check_tensor_of(m, t, w, layer, 0, err);
}

/* Layer l's router and each expert's matrices (a mixture of experts' layer). */
static llm_status check_experts(const model *m, int l, llm_err *err)
{
    const model_layer *y = &m->layers[l];
    llm_status st = check_tensor(m, &y->router, W_ROUTER, l, err);
    for (int e = 0; e < m->config.n_experts && st == LLM_OK; e++)
        if ((st = check_tensor_of(m, &y->expert_gate[e], W_EGATE, l, e, err)) == LLM_OK &&
            (st = check_tensor_of(m, &y->expert_up[e], W_EUP, l, e, err)) == LLM_OK)
            st = check_tensor_of(m, &y->expert_down[e], W_EDOWN, l, e, err);
    return st;
}

/* Fails when the vector x (n values; NULL: absent, fine) holds NaN or infinity. */
static llm_status check_vector(const model *m, const float *x, int n, weight_id w, int layer,
                               llm_err *err)
{
    ptrdiff_t bad = x ? finite_first_bad(x, (size_t)n) : -1;
    if (bad < 0)
        return LLM_OK;
    char name[64];
    weight_name(m, w, layer, name, sizeof name);
    return llm_fail(err, LLM_ERR_NUMERIC,
                    "%s: %s holds a NaN or infinite value (index %td): the file is corrupt",
                    m->path, name, bad);
}

/* Layer l's vectors: norms, biases, QK-norms, post-norms (those the model has). */
static llm_status check_layer_vectors(const model *m, int l, llm_err *err)
{
    const model_config *c = &m->config;
    const model_layer *y = &m->layers[l];
    const struct {
        const float *x;
        int n;
        weight_id w;
    } vs[] = {
        {.x = y->rms_att, .n = c->dim, .w = W_ATT},   {.x = y->rms_ffn, .n = c->dim, .w = W_FFN},
        {.x = y->bq, .n = y->q_dim, .w = W_BQ},       {.x = y->bk, .n = y->kv_dim, .w = W_BK},
        {.x = y->bv, .n = y->kv_dim, .w = W_BV},
        {.x = y->q_norm, .n = c->arch.qk_norm_whole ? y->q_dim : y->head_size, .w = W_QN},
        {.x = y->k_norm, .n = c->arch.qk_norm_whole ? y->kv_dim : y->head_size, .w = W_KN},
        {.x = y->post_attn_norm, .n = c->dim, .w = W_PA},
        {.x = y->post_ffn_norm, .n = c->dim, .w = W_PF},
        {.x = y->expert_scale, .n = c->n_experts, .w = W_ESCALE},
        {.x = y->router_scale, .n = c->dim, .w = W_RSCALE},
        {.x = y->pre_experts_norm, .n = c->dim, .w = W_PRE2},
        {.x = y->post_dense_norm, .n = c->dim, .w = W_POST1},
        {.x = y->post_experts_norm, .n = c->dim, .w = W_POST2},
    };
    llm_status st = LLM_OK;
    for (size_t i = 0; i < sizeof vs / sizeof vs[0] && st == LLM_OK; i++)
        st = check_vector(m, vs[i].x, vs[i].n, vs[i].w, l, err);
    return st;
}

/* Checks the vectors, the Q8_0 scales (small beside the weights) and F32 weights. */
static llm_status check_weights(const model *m, llm_err *err)
{
    llm_status st;
    if ((st = check_vector(m, m->rms_final, m->config.dim, W_FINAL, -1, err)) != LLM_OK ||
        (st = check_tensor(m, &m->token_embedding, W_EMB, -1, err)) != LLM_OK ||
        (!m->config.shared_classifier &&
         (st = check_tensor(m, &m->wcls, W_CLS, -1, err)) != LLM_OK))
        return st;
    for (int l = 0; l < m->config.n_layers; l++) {
        const model_layer *y = &m->layers[l];
        const struct {
            const tensor *t;
            weight_id w;
        } ts[] = {{.t = &y->wq, .w = W_Q}, {.t = &y->wk, .w = W_K}, {.t = &y->wv, .w = W_V},
                  {.t = &y->wo, .w = W_O}, {.t = &y->w1, .w = W_1}, {.t = &y->w2, .w = W_2},
                  {.t = &y->w3, .w = W_3}};
        if ((st = check_layer_vectors(m, l, err)) != LLM_OK ||
            (m->config.n_experts > 0 && (st = check_experts(m, l, err)) != LLM_OK))
            return st;
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if ((st = check_tensor(m, ts[i].t, ts[i].w, l, err)) != LLM_OK)
                return st;
    }
    return LLM_OK;
}

/* ---- decode panels ---- */

/* Matrix i of m (0: the classifier, then each layer's seven), i < 1 + 7 n_layers. */
static tensor *model_matrix(model *m, int i)
{
    if (i == 0)
        return &m->wcls;
    model_layer *y = &m->layers[(i - 1) / 7];
    tensor *ts[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w1, &y->w2, &y->w3};
    return ts[(i - 1) % 7];
}

bool model_has_q8_blocks(const model *m)
{
    for (int i = 0; i < 1 + 7 * m->config.n_layers; i++)
        if (model_matrix((model *)m, i)->type == TENSOR_Q8_0_BLOCKS)
            return true;
    return false;
}

bool model_has_k4_blocks(const model *m)
{
    for (int i = 0; i < 1 + 7 * m->config.n_layers; i++) {
        const tensor *t = model_matrix((model *)m, i);
        if (t->type == TENSOR_BLOCKS && t->btype == GGML_TYPE_Q4_K)
            return true;
    }
    return false;
}

/* Whether matrix t gets panels: it has none yet, the kernels read panels of it, and its
 * kind is asked for (q8: GGUF Q8_0; k4: Q4_K). */
static bool gets_panels(const tensor *t, bool q8, bool k4)
{
    return !t->panels && kernels_panels_read(t) && (t->type == TENSOR_BLOCKS ? k4 : q8);
}

/* Whether matrix t's panels take its blocks' place: Q4_K ones, where the weights are
 * memory of the model's own (the file read in) rather than a read-only mapping. */
static bool packs_in_place(const model *m, const tensor *t)
{
    return t->type == TENSOR_BLOCKS && m->file_read;
}

/* Packs every matrix the chosen kernels' decode product reads panels of and whose kind
 * is asked for (GGUF Q8_0 on the AVX-512 tables, q8; Q4_K on the x86 ones, k4:
 * kernels.h) into panels. Q8_0 panels are a copy, all in one buffer the model owns. Q4_K
 * panels take the place of the rows they hold: packed in place where the file was read
 * in, else into that buffer, the mapping's pages of those rows given back. The
 * classifier shared with the embedding is packed once, as wcls, and the embedding reads
 * its rows from the same panels. Out of memory fails the load: leaving some matrices
 * without panels would give results that depend on how much memory was free. */
static llm_status pack_panels(model *m, bool q8, bool k4, llm_err *err)
{
    const int matrices = 1 + 7 * m->config.n_layers;
    size_t total = 0; /* the copies' bytes, each from a 64-byte boundary */
    for (int i = 0; i < matrices; i++) {
        const tensor *t = model_matrix(m, i);
        if (gets_panels(t, q8, k4) && !packs_in_place(m, t))
            total += (kernels_panels_bytes(t) + 63) / 64 * 64;
    }
    /* one buffer, in 2 MiB pages where the weights are: a matrix's panels each in
       memory of their own would leave its ends in 4 KiB pages */
    uint8_t *p = total ? own_aligned(m, total, m->huge_pages ? HUGE_PAGE_BYTES : 64) : NULL;
    size_t wanted = total; /* what was out of memory */
    if (total && !p)
        goto out_of_memory;
    m->owned_bytes -= total; /* owned_bytes counts converted weights */
    bool opened = false; /* the read-in file made writable, for panels in place */
    for (int i = 0; i < matrices; i++) {
        tensor *t = model_matrix(m, i);
        if (!gets_panels(t, q8, k4))
            continue;
        size_t bytes = kernels_panels_bytes(t);
        bool in_place = packs_in_place(m, t);
        if (in_place && !opened && !(opened = model_memory_writable(m->map, m->map_bytes, true)))
            return llm_fail(err, LLM_ERR_IO, "%s: cannot write the memory the file was read "
                            "into, for the Q4_K panels: %s; --panels off reads the blocks",
                            m->path, strerror(errno));
        uint8_t *at = in_place ? (uint8_t *)t->blocks : p;
        if (!kernels_panels_pack(at, t)) { /* a group copied aside, in each thread */
            wanted = (size_t)TENSOR_K4_GROUP_ROWS * t->row_bytes;
            goto out_of_memory;
        }
        t->panels = at;
        if (t->type == TENSOR_Q8_0_BLOCKS) {
            m->panel_bytes += bytes;
        } else {
            m->k4_panel_bytes += bytes;
            if (!in_place) /* the rows it holds are not read again */
                model_memory_give_back(t->blocks, (size_t)(t->rows / TENSOR_K4_GROUP_ROWS) *
                                                      TENSOR_K4_GROUP_ROWS * t->row_bytes);
        }
        if (!in_place)
            p += (bytes + 63) / 64 * 64;
    }
    if (opened)
        (void)model_memory_writable(m->map, m->map_bytes, false);
    tensor *e = &m->token_embedding;
    if (e->type == TENSOR_BLOCKS && e->blocks == m->wcls.blocks && e->rows == m->wcls.rows)
        e->panels = m->wcls.panels;
    return LLM_OK;
out_of_memory:;
    char a[32];
    format_bytes(a, sizeof a, (double)wanted);
    return llm_fail(err, LLM_ERR_NOMEM,
                    "%s: out of memory for the decode panels (%s); "
                    "--panels off reads the file's blocks alone",
                    m->path, a);
}

/* ---- opening ---- */

/* Whether the file's name says GGUF (".gguf", any case). */
static bool names_gguf(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && !strcasecmp(path + n - 5, ".gguf");
}

/* Whether the file's first bytes are text (printable, blanks, UTF-8; no NUL), which no
 * model's header is: a GGUF file starts with "GGUF" and binary counts, a llama2.c
 * checkpoint with small integers holding zero bytes. */
static bool starts_with_text(const unsigned char *p, size_t size)
{
    size_t n = size < 64 ? size : 64;
    for (size_t i = 0; i < n; i++)
        if (p[i] == 0 || (p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') ||
            p[i] == 0x7f)
            return false;
    return n >= 4;
}

/* The file's first bytes as a C-string excerpt: printable ASCII as it is, the rest as
 * \xNN, at most 24 bytes of the file. */
static void start_shown(const unsigned char *p, size_t size, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < size && i < 24 && o + 5 < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
                                                        p[i] != '\\'
                                                    ? "%c"
                                                    : "\\x%02x",
                              p[i]);
    out[o] = '\0';
}

llm_status model_open(const char *path, const model_options *opt, model **out, llm_err *err)
{
    model_options defaults;
    char a[32];

    *out = NULL;
    if (!opt) {
        model_options_default(&defaults);
        opt = &defaults;
    }
    int group = opt->group ? opt->group : QUANT_GROUP_DEFAULT;
    if (opt->weights != TENSOR_F32 && opt->weights != TENSOR_Q8_0 && opt->weights != TENSOR_BLOCKS)
        return llm_fail(err, LLM_ERR_ARG, "%s: unknown weight type %d", path, (int)opt->weights);
    if (group < 0 || group % 32 != 0 || group > QUANT_GROUP_MAX)
        return llm_fail(err, LLM_ERR_ARG,
                        "quantization group %d must be a positive multiple of 32, at most %d",
                        group, (int)QUANT_GROUP_MAX);

    const char *why;
    int fd = input_file_open(path, &why);
    if (fd < 0)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, why);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, strerror(e));
    }
    size_t size = (size_t)st.st_size;
    if (size < 4) {
        close(fd);
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s bytes, too small to be a model%s", path,
                        llm_group_digits(a, sizeof a, (long long)size),
                        size == 0 ? " (empty file)" : "");
    }
    /* in place, the weights are the file's bytes: those are what want huge pages; only
     * auto asks the kernel what it offers */
    bool ask = opt->huge_pages == MODEL_HUGE_PAGES_AUTO;
    bool huge = model_huge_pages_choose(opt->huge_pages, ask && huge_pages_offered(), size,
                                        ask ? memory_available_bytes() : 0);
    bool read_in = huge && opt->weights == TENSOR_BLOCKS;
    void *map;
    llm_status held = model_memory_hold(fd, size, read_in, path, &map, err);
    close(fd);
    if (held != LLM_OK)
        return held;

    model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        model_memory_release(map, size, read_in);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", path);
    }
    m->huge_pages = huge;
    m->file_read = read_in;
    m->map = map;
    m->map_bytes = size;
    m->file_bytes = size;
    const char *slash = strrchr(m->path, '/');
    m->name = slash ? slash + 1 : m->path;

    struct model_load_state load = {.total = size};
    if (opt->progress && (uint64_t)size >= opt->progress_min_bytes) {
        load.progress = opt->progress;
        load.user = opt->progress_user;
    }
    m->load = &load;
    model_options plan = *opt;
    plan.group = group;
    const unsigned char *p = map;
    bool is_gguf = memcmp(p, "GGUF", 4) == 0;
    if (!is_gguf && (names_gguf(path) || starts_with_text(p, size))) {
        char shown[80];
        start_shown(p, size, shown, sizeof shown);
        llm_fail(err, LLM_ERR_FORMAT, "%s: not a model: it starts with \"%s\"%s", path, shown,
                 names_gguf(path) ? ", and a GGUF file starts with \"GGUF\""
                                  : " (text: neither a GGUF file nor a llama2.c checkpoint)");
        m->load = NULL;
        model_close(m);
        return LLM_ERR_FORMAT;
    }
    if (!is_gguf && plan.weights == TENSOR_BLOCKS)
        plan.weights = TENSOR_Q8_0; /* llama2.c files hold no other block types */
    llm_status s = is_gguf ? model_load_gguf(m, &plan, err) : model_load_llama2c(m, &plan, err);
    if (s == LLM_OK) {
        /* native with nothing in place computes as --weights q8_0 would */
        m->weights = plan.weights == TENSOR_BLOCKS && m->n_native == 0 ? TENSOR_Q8_0 : plan.weights;
        m->group = m->weights != TENSOR_F32 ? m->layers[0].wq.group : 0;
        s = check_weights(m, err);
        if (s == LLM_OK)
            s = pack_panels(m, !opt->no_panels, opt->k4_panels, err);
    }
    m->load = NULL;
    if (s != LLM_OK) {
        model_close(m);
        return s;
    }
    if (load.progress && load.done < load.total)
        load.progress(load.user, load.total, load.total);
    summarize(m, &load);
    *out = m;
    return LLM_OK;
}
