/* model_gguf.c — the loader of GGUF models of the llama architecture (Llama 2,
 * TinyLlama, Mistral, CodeLlama): the shape from the llama.* keys, the weights from
 * the standard tensor names, each checked for its exact shape and a type llmchat can
 * decode before any is converted.
 *
 *   token_embd.weight (vocab, dim)        output.weight (vocab, dim), or absent: the
 *   output_norm.weight (dim)                classifier is token_embd
 *   blk.N.attn_norm.weight (dim)          blk.N.ffn_norm.weight (dim)
 *   blk.N.attn_q / attn_output (dim, dim) blk.N.attn_k / attn_v (kv_dim, dim)
 *   blk.N.ffn_gate / ffn_up (hidden, dim) blk.N.ffn_down (dim, hidden)
 * (shapes as (rows, cols); GGUF lists dims[0] = cols first). The matrices are stored
 * in the interleaved-pair RoPE layout llama2.c uses, so they are used as they are.
 *
 * Conversion: Q8_0 tensors are used in place (TENSOR_Q8_0_BLOCKS, tensor_from_q8_0);
 * with --weights native (TENSOR_BLOCKS) so are Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and
 * Q6_K whose rows are whole blocks (TENSOR_BLOCKS, tensor_in_place); every other type
 * is decoded (dequant.h) and quantized to Q8_0 row by row, in parallel, or decoded to
 * fp32 for --weights f32; F32 tensors are used in place for fp32. Norms are fp32, in
 * place when stored as F32.
 *
 * Owns nothing itself: the parsed metadata and the buffers belong to the model. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "model_internal.h"

/* ---- the shape ---- */

/* An unsigned integer key; *found says whether it was there. Fails when it is there
 * but not a non-negative integer. */
static llm_status get_count(const model *m, const gguf *g, const char *key, int64_t *out,
                            bool *found, llm_err *err)
{
    uint64_t v;
    *found = gguf_find_key(g, key) >= 0;
    if (!*found)
        return LLM_OK;
    if (!gguf_get_uint(g, key, &v))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is a %s, not a count", m->path, key,
                        gguf_type_name(gguf_kv_type(g, (uint64_t)gguf_find_key(g, key))));
    *out = v > (uint64_t)INT32_MAX ? INT64_MAX : (int64_t)v;
    return LLM_OK;
}

static llm_status require_count(const model *m, const gguf *g, const char *key, int64_t *out,
                                llm_err *err)
{
    bool found;
    llm_status st = get_count(m, g, key, out, &found, err);
    if (st == LLM_OK && !found)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF key %s is missing (the llama architecture needs it)", m->path, key);
    return st;
}

/* A real hyperparameter, and the range a model's value can take: outside it the forward
 * pass computes nonsense (an infinite RoPE scale, a uniform attention) without a word. */
typedef struct {
    const char *key;
    double fallback;   /* when the file does not have the key */
    double lo, hi;     /* the sane range, both ends in it */
    const char *what;  /* what it is, for the message */
} real_key;

static llm_status get_real(const model *m, const gguf *g, const real_key *k, double *out,
                           llm_err *err)
{
    *out = k->fallback;
    if (gguf_find_key(g, k->key) < 0)
        return LLM_OK;
    if (!gguf_get_float(g, k->key, out) || !isfinite(*out) || *out <= 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is not a positive number",
                        m->path, k->key);
    if (*out < k->lo || *out > k->hi)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is %g, not a plausible %s (%g to "
                        "%g): the file is damaged or not a model llmchat can run", m->path, k->key,
                        *out, k->what, k->lo, k->hi);
    return LLM_OK;
}

static const real_key rope_base_key = {.key = "llama.rope.freq_base", .fallback = 10000.0,
                                       .lo = 2.0, .hi = 1e12, .what = "RoPE base"};
static const real_key eps_key = {.key = "llama.attention.layer_norm_rms_epsilon",
                                 .fallback = 1e-5, .lo = 1e-12, .hi = 1.0,
                                 .what = "RMSNorm epsilon"};
static const real_key factor_key = {.key = "llama.rope.scaling.factor", .fallback = 1.0,
                                    .lo = 1e-3, .hi = 1e3, .what = "RoPE scaling factor"};

/* Reads the architecture and the llama.* keys into shape and m->config's RoPE base
 * and epsilon. vocab_size comes from token_embd.weight. */
static llm_status read_shape(model *m, const gguf *g, model_shape *shape, llm_err *err)
{
    const char *arch = gguf_get_string(g, "general.architecture", NULL);
    if (!arch)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF file has no general.architecture: not a model (a vocabulary "
                        "only?)", m->path);
    if (strcmp(arch, "llama") != 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: architecture '%.40s' is not supported: llmchat runs the 'llama' "
                        "architecture (Llama 2, TinyLlama, Mistral, CodeLlama)", m->path, arch);

    llm_status st;
    int64_t rope_dims = 0, experts = 0;
    bool has_kv_heads, has_rope_dims, has_experts;
    if ((st = require_count(m, g, "llama.embedding_length", &shape->dim, err)) != LLM_OK ||
        (st = require_count(m, g, "llama.feed_forward_length", &shape->hidden_dim, err)) != LLM_OK ||
        (st = require_count(m, g, "llama.block_count", &shape->n_layers, err)) != LLM_OK ||
        (st = require_count(m, g, "llama.attention.head_count", &shape->n_heads, err)) != LLM_OK ||
        (st = require_count(m, g, "llama.context_length", &shape->seq_len, err)) != LLM_OK ||
        (st = get_count(m, g, "llama.attention.head_count_kv", &shape->n_kv_heads, &has_kv_heads,
                        err)) != LLM_OK ||
        (st = get_count(m, g, "llama.rope.dimension_count", &rope_dims, &has_rope_dims, err)) != LLM_OK ||
        (st = get_count(m, g, "llama.expert_count", &experts, &has_experts, err)) != LLM_OK)
        return st;
    if (!has_kv_heads)
        shape->n_kv_heads = shape->n_heads;
    if (has_experts && experts > 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: a mixture-of-experts model (llama.expert_count %" PRId64 ") is not "
                        "supported", m->path, experts);

    double base, eps, factor = 1.0;
    if ((st = get_real(m, g, &rope_base_key, &base, err)) != LLM_OK ||
        (st = get_real(m, g, &eps_key, &eps, err)) != LLM_OK ||
        (st = get_real(m, g, &factor_key, &factor, err)) != LLM_OK)
        return st;
    /* linear scaling divides positions by the factor (llama.cpp's freq_scale); a
     * factor without a type is linear, as llama.cpp reads it */
    const char *scaling = gguf_get_string(g, "llama.rope.scaling.type", NULL);
    bool linear = !scaling || !strcmp(scaling, "linear");
    if (!linear && strcmp(scaling, "none") != 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: RoPE scaling '%.40s' (factor %g) is not supported: llmchat applies "
                        "linear scaling and rope_freqs.weight", m->path, scaling, factor);
    m->config.rope_base = (float)base;
    m->config.rope_scale = linear ? (float)(1.0 / factor) : 1.0f;
    m->config.rms_eps = (float)eps;

    const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight");
    if (!emb)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor token_embd.weight is missing",
                        m->path);
    shape->vocab_size = emb->n_dims == 2 && emb->dims[1] <= (uint64_t)INT32_MAX
                            ? (int64_t)emb->dims[1] : INT64_MAX;

    char why[160];
    if (!model_shape_ok(shape, why, sizeof why))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: bad shape in the llama.* keys: %s", m->path, why);
    int64_t head = shape->dim / shape->n_heads;
    if (has_rope_dims && rope_dims != head)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: llama.rope.dimension_count is %" PRId64 ", but the head size is %" PRId64
                        " (dim %" PRId64 " / %" PRId64 " heads): partial rotary embeddings are not "
                        "supported", m->path, rope_dims, head, shape->dim, shape->n_heads);
    return LLM_OK;
}

/* ---- the tensors ---- */

/* One weight of the model: its GGUF name and shape, and where it goes. */
typedef struct {
    char name[48];
    int rows, cols;           /* cols = dims[0]; rows = 1 for a norm (1-D) */
    bool norm;
    const float **norm_out;   /* norms */
    tensor *out;              /* matrices */
    const gguf_tensor *t;
} weight;

/* Finds w in the file and checks its shape and type. */
static llm_status find_weight(const model *m, const gguf *g, weight *w, llm_err *err)
{
    w->t = gguf_find_tensor(g, w->name);
    const gguf_tensor *t = w->t;
    if (!t)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor %s is missing", m->path, w->name);
    bool shape_ok = w->norm ? t->n_dims == 1 && t->dims[0] == (uint64_t)w->cols
                            : t->n_dims == 2 && t->dims[0] == (uint64_t)w->cols &&
                                  t->dims[1] == (uint64_t)w->rows;
    if (!shape_ok) {
        char dims[96] = "";
        for (uint32_t d = 0; d < t->n_dims; d++)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%" PRIu64, d ? ", " : "",
                     t->dims[d]);
        if (w->norm)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %s has dims [%s], expected [%d] (from the llama.* "
                            "keys)", m->path, w->name, dims, w->cols);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor %s has dims [%s], expected [%d, %d] (from the llama.* "
                        "keys)", m->path, w->name, dims, w->cols, w->rows);
    }
    if (!dequant_supported(t->type))
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor %s is of type %s, which llmchat cannot decode (it reads "
                        "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K to Q6_K)", m->path,
                        w->name, ggml_type_name(t->type));
    return LLM_OK;
}

static void add_matrix(weight *ws, int *i, const char *name, int rows, int cols, tensor *out)
{
    weight *w = &ws[(*i)++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->rows = rows;
    w->cols = cols;
    w->out = out;
}

static void add_norm(weight *ws, int *i, const char *name, int dim, const float **out)
{
    weight *w = &ws[(*i)++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->rows = 1;
    w->cols = dim;
    w->norm = true;
    w->norm_out = out;
}

/* Lists every weight the shape implies into ws (allocated); *n receives the count. */
static weight *list_weights(model *m, bool has_output, int *n)
{
    const model_config *c = &m->config;
    int count = 3 + 9 * c->n_layers;
    weight *ws = calloc((size_t)count, sizeof *ws);
    if (!ws)
        return NULL;
    int i = 0;
    add_matrix(ws, &i, "token_embd.weight", c->vocab_size, c->dim, &m->token_embedding);
    add_norm(ws, &i, "output_norm.weight", c->dim, &m->rms_final);
    if (has_output)
        add_matrix(ws, &i, "output.weight", c->vocab_size, c->dim, &m->wcls);
    for (int l = 0; l < c->n_layers; l++) {
        model_layer *y = &m->layers[l];
        const struct {
            const char *part;
            int rows, cols;
            tensor *out;
        } mats[] = {
            {"attn_q", c->dim, c->dim, &y->wq},
            {"attn_k", c->kv_dim, c->dim, &y->wk},
            {"attn_v", c->kv_dim, c->dim, &y->wv},
            {"attn_output", c->dim, c->dim, &y->wo},
            {"ffn_gate", c->hidden_dim, c->dim, &y->w1},
            {"ffn_down", c->dim, c->hidden_dim, &y->w2},
            {"ffn_up", c->hidden_dim, c->dim, &y->w3},
        };
        char name[48];
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        add_norm(ws, &i, name, c->dim, &y->rms_att);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
        add_norm(ws, &i, name, c->dim, &y->rms_ffn);
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[k].part);
            add_matrix(ws, &i, name, mats[k].rows, mats[k].cols, mats[k].out);
        }
    }
    *n = i;
    return ws;
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

/* Makes the model's tensor for weight w as opt asks. */
static bool load_weight(model *m, const weight *w, const model_options *opt)
{
    const gguf_tensor *t = w->t;
    const char *from = ggml_type_name(t->type);
    bool f32_aligned = t->type == GGML_TYPE_F32 && (uintptr_t)t->data % _Alignof(float) == 0;
    if (w->norm) {
        if (f32_aligned) {
            *w->norm_out = t->data;
            return true;
        }
        float *f = model_own(m, sizeof(float) * (size_t)w->cols);
        if (!f)
            return false;
        read_gguf_row(t, 0, w->cols, f);
        *w->norm_out = f;
        return true;
    }
    bool ok;
    if (opt->weights == TENSOR_F32 && f32_aligned) {
        *w->out = model_tensor_view(t->data, w->rows, w->cols);
        m->mapped_bytes += (size_t)t->bytes;
        model_note_tensor(m, from, MODEL_IN_PLACE, t->bytes);
        return true;
    }
    if (opt->weights == TENSOR_BLOCKS && native_type(t, w->cols)) {
        *w->out = tensor_in_place(t, w->rows, w->cols);
        m->mapped_bytes += (size_t)t->bytes;
        m->n_native++;
        model_note_tensor(m, from, MODEL_IN_PLACE, t->bytes);
        return true;
    }
    /* everything else as for --weights q8_0 */
    tensor_type want = opt->weights == TENSOR_BLOCKS ? TENSOR_Q8_0 : opt->weights;
    model_treatment how = MODEL_CONVERTED;
    if (want == TENSOR_Q8_0 && t->type == GGML_TYPE_Q8_0) {
        ok = tensor_from_q8_0(m, w->out, t, w->rows, w->cols, opt->group);
        if (w->cols % GGML_BLOCK_32 == 0) {
            how = MODEL_IN_PLACE;
            m->mapped_bytes += (size_t)t->bytes;
        }
    } else if (want == TENSOR_Q8_0 && f32_aligned)
        ok = model_tensor_quantize(m, w->out, t->data, w->rows, w->cols, opt->group);
    else
        ok = model_tensor_convert(m, w->out, want, opt->group, w->rows, w->cols, read_gguf_row,
                                  t);
    model_note_tensor(m, from, how, t->bytes);
    return ok;
}

/* rope_freqs.weight (Llama 3.1+): one F32 divisor of each RoPE pair's frequency, read
 * into the model's config; absent leaves rope_freqs NULL. */
static llm_status read_rope_freqs(model *m, const gguf *g, llm_err *err)
{
    const gguf_tensor *t = gguf_find_tensor(g, "rope_freqs.weight");
    int pairs = m->config.head_size / 2;
    if (!t)
        return LLM_OK;
    if (t->n_dims != 1 || t->dims[0] != (uint64_t)pairs || !dequant_supported(t->type))
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF tensor rope_freqs.weight should hold %d numbers (half the head "
                        "size), as F32", m->path, pairs);
    float *f = model_own(m, sizeof(float) * (size_t)pairs);
    if (!f)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    read_gguf_row(t, 0, pairs, f);
    for (int i = 0; i < pairs; i++)
        if (!(f[i] >= 1e-3f && f[i] <= 1e3f))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: rope_freqs.weight[%d] is %g, not a plausible "
                            "RoPE frequency factor (0.001 to 1000)", m->path, i, f[i]);
    m->config.rope_freqs = f;
    return LLM_OK;
}

/* Every tensor of the file must be one the model uses: a bias, expert or RoPE factor
 * tensor llmchat would ignore means a model it would run wrongly. */
static llm_status check_no_extra_tensors(const model *m, const gguf *g, int n_used, llm_err *err)
{
    if (gguf_tensor_count(g) == (uint64_t)n_used)
        return LLM_OK;
    /* each used name was found once; names are unique: some tensor is not ours */
    for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
        const char *name = gguf_tensor_at(g, i)->name;
        int layer, end = 0;
        char part[32];
        bool known = !strcmp(name, "token_embd.weight") || !strcmp(name, "output_norm.weight") ||
                     !strcmp(name, "output.weight") || !strcmp(name, "rope_freqs.weight");
        if (!known && sscanf(name, "blk.%d.%31[a-z_].weight%n", &layer, part, &end) == 2 &&
            name[end] == '\0' && layer >= 0 && layer < m->config.n_layers) {
            static const char *const parts[] = {"attn_norm", "ffn_norm", "attn_q", "attn_k", "attn_v",
                                                "attn_output", "ffn_gate", "ffn_down", "ffn_up"};
            for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
                known = known || !strcmp(part, parts[k]);
        }
        if (!known)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %s is not part of the llama architecture llmchat "
                            "runs (biases and experts are not supported)", m->path,
                            name);
    }
    return LLM_OK;
}

llm_status model_load_gguf(model *m, const model_options *opt, llm_err *err)
{
    gguf *g;
    llm_status st = gguf_parse(m->map, m->map_bytes, m->path, &g, err);
    if (st != LLM_OK)
        return st;
    m->meta = g;
    m->format = MODEL_FORMAT_GGUF;
    m->format_name = gguf_version(g) == 2 ? "GGUF v2" : "GGUF v3";

    model_shape shape;
    if ((st = read_shape(m, g, &shape, err)) != LLM_OK)
        return st;
    bool has_output = gguf_find_tensor(g, "output.weight") != NULL;
    model_set_shape(m, &shape, !has_output);
    m->layers = calloc((size_t)shape.n_layers, sizeof *m->layers);
    int n = 0;
    weight *ws = m->layers ? list_weights(m, has_output, &n) : NULL;
    if (!ws)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);

    /* every tensor checked before any is converted */
    for (int i = 0; i < n && st == LLM_OK; i++)
        st = find_weight(m, g, &ws[i], err);
    int n_extra = gguf_find_tensor(g, "rope_freqs.weight") ? 1 : 0;
    if (st == LLM_OK)
        st = check_no_extra_tensors(m, g, n + n_extra, err);
    if (st == LLM_OK)
        st = read_rope_freqs(m, g, err);
    uint64_t total = 0;
    for (int i = 0; i < n && st == LLM_OK; i++)
        total += ws[i].t->bytes;
    if (m->load)
        m->load->total = total;
    for (int i = 0; i < n && st == LLM_OK; i++)
        if (!load_weight(m, &ws[i], opt))
            st = llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory while loading the weights (%s)",
                          m->path, ws[i].name);
    free(ws);
    if (st == LLM_OK && !has_output)
        m->wcls = m->token_embedding;
    return st;
}
