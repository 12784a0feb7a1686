/* model.c — opens, validates and maps llama2.c model files (v0, v1, v2; see
 * docs/formats.md) and exposes their weights as tensors (see model.h).
 *
 * Owns: the read-only mapping of the file, and every buffer made at load (Q8_0
 * quantizations of fp32 weights, repacked or dequantized int8 weights). Does not
 * compute anything with the weights: that is transformer.c, through quant.h.
 *
 * Order of work: the header is parsed and the shape checked, then the exact byte
 * size the shape implies is compared to the file's; only then is a weight touched.
 *
 * Q8_0 layout choices:
 *   - fp32 files are quantized with opt->group (default 32), rows zero-padded to
 *     quant_stride(cols, group).
 *   - v2 files store one scale per `file_group` values of the FLATTENED tensor. Where
 *     cols % file_group == 0 (and file_group is a multiple of 32, at most
 *     QUANT_GROUP_MAX) those groups are row-aligned and the tensor is used in place,
 *     zero copy, with group = file_group. Otherwise (stories260K_q80: rows of 172 with
 *     groups of 32; chat260K_q80: groups of 64) the groups straddle rows: such a
 *     tensor is dequantized with the scale of each value's own flattened group and
 *     requantized row-aligned with opt->group (default 32), rows zero-padded. So a
 *     model may mix groups and strides between tensors; every tensor carries its own,
 *     and model.group is the group of layer 0's wq. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "finite.h"

enum {
    V0_HEADER_BYTES = 28,
    AK42_HEADER_BYTES = 256,
    AK42_MAGIC = 0x616b3432,  /* "ak42" read as a little-endian uint32 */
    GGUF_MAGIC = 0x46554747,  /* "GGUF" read as a little-endian uint32 */
};

/* Upper bounds of a sane header: far beyond any Llama 2 model, small enough that
 * no size computed from them overflows 64 bits. */
enum {
    MAX_DIM = 65536,
    MAX_HIDDEN = 1 << 20,
    MAX_LAYERS = 1024,
    MAX_VOCAB = 1 << 20,
    MAX_SEQ = 1 << 20,
    MAX_HEAD = 1024,  /* head size (dim / n_heads); Llama models use 64..256 */
};

void model_options_default(model_options *opt)
{
    opt->weights = TENSOR_Q8_0;
    opt->group = QUANT_GROUP_DEFAULT;
}

const char *model_weights_name(const model *m)
{
    return m->weights == TENSOR_Q8_0 ? "Q8_0" : "F32";
}

/* ---- little-endian reads from the mapping ---- */

static int32_t read_i32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

static uint32_t read_u32(const unsigned char *p)
{
    return (uint32_t)read_i32(p);
}

/* ---- header parsing and validation ---- */

/* The raw header fields, before validation. */
typedef struct {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared;          /* 0 or 1 (v0: from the sign of vocab_size) */
    int32_t group;       /* v2 only */
} header;

static void header_fields(header *h, const unsigned char *p)
{
    h->dim = read_i32(p);
    h->hidden_dim = read_i32(p + 4);
    h->n_layers = read_i32(p + 8);
    h->n_heads = read_i32(p + 12);
    h->n_kv_heads = read_i32(p + 16);
    h->vocab_size = read_i32(p + 20);
    h->seq_len = read_i32(p + 24);
}

/* Checks the shape; on failure writes the reason (a phrase) into why. */
static bool shape_ok(const header *h, char *why, size_t why_size)
{
    const struct {
        const char *name;
        int32_t value, max;
    } fields[] = {
        {"dim", h->dim, MAX_DIM},
        {"hidden_dim", h->hidden_dim, MAX_HIDDEN},
        {"n_layers", h->n_layers, MAX_LAYERS},
        {"n_heads", h->n_heads, MAX_DIM},
        {"n_kv_heads", h->n_kv_heads, MAX_DIM},
        {"vocab_size", h->vocab_size, MAX_VOCAB},
        {"seq_len", h->seq_len, MAX_SEQ},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i].value <= 0) {
            snprintf(why, why_size, "%s is %d, not positive", fields[i].name, (int)fields[i].value);
            return false;
        }
        if (fields[i].value > fields[i].max) {
            snprintf(why, why_size, "%s is %d, more than the %d this program accepts",
                     fields[i].name, (int)fields[i].value, (int)fields[i].max);
            return false;
        }
    }
    if (h->dim % h->n_heads != 0) {
        snprintf(why, why_size, "dim %d is not a multiple of n_heads %d", (int)h->dim,
                 (int)h->n_heads);
        return false;
    }
    if (h->n_kv_heads > h->n_heads || h->n_heads % h->n_kv_heads != 0) {
        snprintf(why, why_size, "n_kv_heads %d does not divide n_heads %d", (int)h->n_kv_heads,
                 (int)h->n_heads);
        return false;
    }
    if ((h->dim / h->n_heads) % 2 != 0) {
        snprintf(why, why_size, "head size %d (dim / n_heads) is odd; RoPE needs pairs",
                 (int)(h->dim / h->n_heads));
        return false;
    }
    if (h->dim / h->n_heads > MAX_HEAD) {
        snprintf(why, why_size, "head size %d (dim / n_heads) is more than the %d this "
                 "program accepts", (int)(h->dim / h->n_heads), (int)MAX_HEAD);
        return false;
    }
    return true;
}

/* Element counts of one layer's tensors and of the whole model. */
typedef struct {
    uint64_t emb;      /* vocab * dim */
    uint64_t wq, wk, wv, wo, w1, w2, w3; /* per layer */
    uint64_t layer;    /* sum of the above per layer */
} counts;

static counts shape_counts(const header *h)
{
    uint64_t dim = (uint64_t)h->dim, hidden = (uint64_t)h->hidden_dim;
    uint64_t kv_dim = (uint64_t)h->n_kv_heads * (dim / (uint64_t)h->n_heads);
    counts c;
    c.emb = (uint64_t)h->vocab_size * dim;
    c.wq = dim * dim;
    c.wk = kv_dim * dim;
    c.wv = kv_dim * dim;
    c.wo = dim * dim;
    c.w1 = hidden * dim;
    c.w2 = dim * hidden;
    c.w3 = hidden * dim;
    c.layer = c.wq + c.wk + c.wv + c.wo + c.w1 + c.w2 + c.w3;
    return c;
}

/* Bytes the file must have. With the bounds of shape_ok every term stays below
 * 2^62, so uint64_t arithmetic cannot overflow. */
static uint64_t implied_bytes(const header *h, int version)
{
    counts c = shape_counts(h);
    uint64_t L = (uint64_t)h->n_layers, dim = (uint64_t)h->dim;
    uint64_t norms = 2 * L * dim + dim;
    uint64_t cls = h->shared ? 0 : c.emb;
    if (version == 0) {
        uint64_t head_size = dim / (uint64_t)h->n_heads;
        uint64_t rope = 2 * (uint64_t)h->seq_len * (head_size / 2);
        return V0_HEADER_BYTES + 4 * (c.emb + norms + L * c.layer + rope + cls);
    }
    if (version == 1)
        return AK42_HEADER_BYTES + 4 * (norms + c.emb + L * c.layer + cls);
    /* v2: int8 values plus one fp32 scale per group, for each tensor */
    uint64_t g = (uint64_t)h->group;
    uint64_t quant = c.emb + L * c.layer + cls;
    return AK42_HEADER_BYTES + 4 * norms + quant + 4 * (quant / g);
}

/* ---- the model under construction ---- */

static void *model_own(model *m, size_t bytes)
{
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? 2 * m->cap_owned : 32;
        void **grown = realloc(m->owned, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        m->owned = grown;
        m->cap_owned = cap;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
        return NULL;
    m->owned[m->n_owned++] = p;
    m->owned_bytes += bytes;
    return p;
}

void model_close(model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    if (m->map)
        munmap(m->map, m->map_bytes);
    free(m->path);
    free(m);
}

/* Reading cursor over the mapped weights. */
typedef struct {
    const unsigned char *p;
} cursor;

static const void *cursor_take(cursor *c, uint64_t bytes)
{
    const void *p = c->p;
    c->p += bytes;
    return p;
}

/* Points an fp32 tensor at (rows, cols) floats in the mapping. */
static tensor tensor_f32(const float *f, int rows, int cols)
{
    tensor t = {.type = TENSOR_F32, .rows = rows, .cols = cols, .stride = cols, .group = 0};
    t.f = f;
    return t;
}

/* Quantizes (rows, cols) fp32 values into an owned row-aligned Q8_0 tensor. */
static bool tensor_quantize(model *m, tensor *t, const float *src, int rows, int cols, int group)
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

/* Dequantizes a flattened-group Q8_0 tensor from a v2 file into (rows, cols) fp32.
 * Value e of the flattened tensor has scale s[e / file_group]. */
static void dequantize_flat(float *out, const int8_t *q, const unsigned char *s_bytes,
                            uint64_t n, int file_group)
{
    for (uint64_t e = 0; e < n; e++) {
        float s;
        memcpy(&s, s_bytes + 4 * (e / (uint64_t)file_group), sizeof s); /* may be unaligned */
        out[e] = (float)q[e] * s;
    }
}

typedef struct {
    tensor_type want;
    int group;           /* group for quantizing at load / repacking */
    int file_group;      /* v2 only */
} load_plan;

/* Reads the next fp32 tensor of (rows, cols) at the cursor into t as planned. */
static bool load_fp32(model *m, cursor *c, tensor *t, int rows, int cols, const load_plan *plan)
{
    const float *f = cursor_take(c, 4 * (uint64_t)rows * (uint64_t)cols);
    if (plan->want == TENSOR_F32) {
        *t = tensor_f32(f, rows, cols);
        return true;
    }
    return tensor_quantize(m, t, f, rows, cols, plan->group);
}

/* Reads the next v2 quantized tensor (int8 values, then fp32 scales) at the cursor. */
static bool load_q8(model *m, cursor *c, tensor *t, int rows, int cols, const load_plan *plan)
{
    uint64_t n = (uint64_t)rows * (uint64_t)cols;
    int fg = plan->file_group;
    const int8_t *q = cursor_take(c, n);
    const unsigned char *s = cursor_take(c, 4 * (n / (uint64_t)fg));

    if (plan->want == TENSOR_Q8_0 && cols % fg == 0 && fg % 32 == 0 && fg <= QUANT_GROUP_MAX) {
        /* Groups align with rows: the flattened layout is the row layout. */
        const float *scale;
        if ((uintptr_t)s % _Alignof(float) == 0) {
            scale = (const float *)(const void *)s;
        } else {
            float *copy = model_own(m, 4 * (n / (uint64_t)fg));
            if (!copy)
                return false;
            memcpy(copy, s, 4 * (n / (uint64_t)fg));
            scale = copy;
        }
        *t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = cols,
                      .group = fg, .q = q, .scale = scale};
        return true;
    }

    float *f = plan->want == TENSOR_F32 ? model_own(m, sizeof(float) * n)
                                        : malloc(sizeof(float) * n);
    if (!f)
        return false;
    dequantize_flat(f, q, s, n, fg);
    if (plan->want == TENSOR_F32) {
        *t = tensor_f32(f, rows, cols);
        return true;
    }
    bool ok = tensor_quantize(m, t, f, rows, cols, plan->group);
    free(f);
    return ok;
}

typedef bool (*load_fn)(model *m, cursor *c, tensor *t, int rows, int cols,
                        const load_plan *plan);

/* Loads one matrix kind for every layer (laid out layer after layer). */
static bool load_layers(model *m, cursor *c, load_fn load, size_t field, int rows, int cols,
                        const load_plan *plan)
{
    for (int l = 0; l < m->config.n_layers; l++) {
        tensor *t = (tensor *)(void *)((char *)&m->layers[l] + field);
        if (!load(m, c, t, rows, cols, plan))
            return false;
    }
    return true;
}

/* Walks the weights of a validated file. Returns false only when out of memory. */
static bool model_load_weights(model *m, int version, const load_plan *plan)
{
    const model_config *p = &m->config;
    int L = p->n_layers, dim = p->dim, hidden = p->hidden_dim, kv_dim = p->kv_dim;
    cursor c = {(const unsigned char *)m->map + (version == 0 ? V0_HEADER_BYTES : AK42_HEADER_BYTES)};
    const float *rms_att, *rms_ffn;
    load_fn load = version == 2 ? load_q8 : load_fp32;

    if (version == 0) {
        if (!load_fp32(m, &c, &m->token_embedding, p->vocab_size, dim, plan))
            return false;
        rms_att = cursor_take(&c, 4 * (uint64_t)L * dim);
        if (!load_layers(m, &c, load, offsetof(model_layer, wq), dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wk), kv_dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wv), kv_dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wo), dim, dim, plan))
            return false;
        rms_ffn = cursor_take(&c, 4 * (uint64_t)L * dim);
        if (!load_layers(m, &c, load, offsetof(model_layer, w1), hidden, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, w2), dim, hidden, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, w3), hidden, dim, plan))
            return false;
        m->rms_final = cursor_take(&c, 4 * (uint64_t)dim);
        cursor_take(&c, 4 * 2 * (uint64_t)p->seq_len * (p->head_size / 2)); /* unused RoPE tables */
    } else {
        rms_att = cursor_take(&c, 4 * (uint64_t)L * dim);
        rms_ffn = cursor_take(&c, 4 * (uint64_t)L * dim);
        m->rms_final = cursor_take(&c, 4 * (uint64_t)dim);
        if (!load(m, &c, &m->token_embedding, p->vocab_size, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wq), dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wk), kv_dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wv), kv_dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, wo), dim, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, w1), hidden, dim, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, w2), dim, hidden, plan) ||
            !load_layers(m, &c, load, offsetof(model_layer, w3), hidden, dim, plan))
            return false;
    }
    for (int l = 0; l < L; l++) {
        m->layers[l].rms_att = rms_att + (size_t)l * dim;
        m->layers[l].rms_ffn = rms_ffn + (size_t)l * dim;
    }
    if (p->shared_classifier)
        m->wcls = m->token_embedding;
    else if (!load(m, &c, &m->wcls, p->vocab_size, dim, plan))
        return false;
    return true;
}

/* ---- corrupt weights ---- */

/* The first row of (rows, per_row) floats x that holds NaN or infinity, or -1; the
 * rows are scanned in parallel. */
static ptrdiff_t first_bad_row(const float *x, int rows, size_t per_row)
{
    ptrdiff_t first = -1;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        ptrdiff_t known;
#pragma omp atomic read
        known = first;
        if (known >= 0 && known < r)
            continue;
        if (finite_first_bad(x + (size_t)r * per_row, per_row) >= 0) {
#pragma omp critical(model_first_bad_row)
            if (first < 0 || r < first)
                first = r;
        }
    }
    return first;
}

/* Fails when tensor t holds NaN or infinity: for Q8_0, in its scales (a group
 * quantized from non-finite values has a non-finite scale too), for F32 in its values. */
static llm_status check_tensor(const model *m, const tensor *t, const char *what, int layer,
                               llm_err *err)
{
    ptrdiff_t bad = t->type == TENSOR_Q8_0
                        ? first_bad_row(t->scale, t->rows, (size_t)(t->stride / t->group))
                        : first_bad_row(t->f, t->rows, (size_t)t->stride);
    if (bad < 0)
        return LLM_OK;
    char where[32] = "";
    if (layer >= 0)
        snprintf(where, sizeof where, " of layer %d", layer);
    return llm_fail(err, LLM_ERR_NUMERIC,
                    "%s: %s%s holds NaN or infinite values (row %td): the file is corrupt",
                    m->path, what, where, bad);
}

static llm_status check_norm(const model *m, const float *w, const char *what, int layer,
                             llm_err *err)
{
    ptrdiff_t bad = finite_first_bad(w, (size_t)m->config.dim);
    if (bad < 0)
        return LLM_OK;
    char where[32] = "";
    if (layer >= 0)
        snprintf(where, sizeof where, " of layer %d", layer);
    return llm_fail(err, LLM_ERR_NUMERIC,
                    "%s: %s%s holds a NaN or infinite value (index %td): the file is corrupt",
                    m->path, what, where, bad);
}

/* Checks the norms, the Q8_0 scales (small beside the weights) and F32 weights. */
static llm_status check_weights(const model *m, llm_err *err)
{
    llm_status st;
    if ((st = check_norm(m, m->rms_final, "rms_final", -1, err)) != LLM_OK ||
        (st = check_tensor(m, &m->token_embedding, "token_embedding", -1, err)) != LLM_OK ||
        (!m->config.shared_classifier &&
         (st = check_tensor(m, &m->wcls, "wcls", -1, err)) != LLM_OK))
        return st;
    for (int l = 0; l < m->config.n_layers; l++) {
        const model_layer *y = &m->layers[l];
        const struct {
            const tensor *t;
            const char *name;
        } ts[] = {{&y->wq, "wq"}, {&y->wk, "wk"}, {&y->wv, "wv"}, {&y->wo, "wo"},
                  {&y->w1, "w1"}, {&y->w2, "w2"}, {&y->w3, "w3"}};
        if ((st = check_norm(m, y->rms_att, "rms_att", l, err)) != LLM_OK ||
            (st = check_norm(m, y->rms_ffn, "rms_ffn", l, err)) != LLM_OK)
            return st;
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if ((st = check_tensor(m, ts[i].t, ts[i].name, l, err)) != LLM_OK)
                return st;
    }
    return LLM_OK;
}

/* ---- opening ---- */

static const char *format_names[] = {
    [MODEL_FORMAT_LLAMA2C_V0] = "llama2.c v0 (fp32)",
    [MODEL_FORMAT_LLAMA2C_V1] = "llama2.c v1 (fp32)",
    [MODEL_FORMAT_LLAMA2C_V2] = "llama2.c v2 (int8 Q8_0)",
};

/* Parses and validates the header of the mapped file; fills h and *version. */
static llm_status check_header(const char *path, const unsigned char *p, size_t size,
                               header *h, int *version, llm_err *err)
{
    char why[160];
    char a[32], b[32];

    uint32_t magic = read_u32(p); /* the caller made sure of 4 bytes */
    if (magic != AK42_MAGIC && magic != GGUF_MAGIC && size < V0_HEADER_BYTES)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: %s bytes, too small to be a llama2.c model (its header alone "
                        "has %d bytes)", path, llm_group_digits(a, sizeof a, (long long)size),
                        V0_HEADER_BYTES);

    if (magic == GGUF_MAGIC) {
        uint32_t gv = size >= 8 ? read_u32(p + 4) : 0;
        if (gv == 1)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF version 1 is obsolete and not supported; convert the "
                            "model to a current GGUF or a llama2.c .bin", path);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF (version %u) is not supported yet; use a llama2.c .bin "
                        "model", path, (unsigned)gv);
    }

    if (magic == AK42_MAGIC) {
        if (size < AK42_HEADER_BYTES)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: %s bytes, too small for the %d-byte \"ak42\" header "
                            "(truncated?)", path, llm_group_digits(a, sizeof a, (long long)size),
                            AK42_HEADER_BYTES);
        int32_t v = read_i32(p + 4);
        if (v != 1 && v != 2)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: unknown llama2.c format version %d (this program reads "
                            "versions 0, 1 and 2)", path, (int)v);
        *version = v;
        header_fields(h, p + 8);
        unsigned char shared = p[36];
        if (shared > 1)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: bad header: shared_classifier flag is %u, not 0 or 1", path,
                            (unsigned)shared);
        h->shared = shared;
        h->group = v == 2 ? read_i32(p + 37) : 0;
        for (int i = v == 2 ? 41 : 37; i < AK42_HEADER_BYTES; i++)
            if (p[i] != 0)
                return llm_fail(err, LLM_ERR_FORMAT,
                                "%s: bad header: byte %d of the padding is %u, not 0 (a "
                                "damaged or foreign file)", path, i, (unsigned)p[i]);
        if (!shape_ok(h, why, sizeof why))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: bad shape in header: %s", path, why);
        if (v == 2) {
            counts c = shape_counts(h);
            if (h->group <= 0)
                return llm_fail(err, LLM_ERR_FORMAT, "%s: bad header: group size %d is not "
                                "positive", path, (int)h->group);
            uint64_t g = (uint64_t)h->group;
            const char *bad = c.emb % g ? "token_embedding" : c.wq % g ? "wq" : c.wk % g ? "wk"
                            : c.w1 % g ? "w1" : NULL;
            if (bad)
                return llm_fail(err, LLM_ERR_FORMAT,
                                "%s: bad header: group size %d does not divide the size of "
                                "%s", path, (int)h->group, bad);
        }
    } else {
        /* No magic: the legacy v0 header is 7 int32, and must look like a model. */
        *version = 0;
        header_fields(h, p);
        h->shared = h->vocab_size > 0;
        if (h->vocab_size < 0 && h->vocab_size != INT32_MIN)
            h->vocab_size = -h->vocab_size;
        h->group = 0;
        if (!shape_ok(h, why, sizeof why))
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: not a llama2.c model: no \"ak42\" magic, and not a plausible "
                            "legacy (v0) header either (%s)", path, why);
    }

    uint64_t want = implied_bytes(h, *version);
    if (want != (uint64_t)size)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s bytes, but its header implies %s (%s)",
                        path, llm_group_digits(a, sizeof a, (long long)size),
                        llm_group_digits(b, sizeof b, (long long)want),
                        (uint64_t)size < want ? "truncated?" : "trailing data?");
    return LLM_OK;
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
    if (opt->weights != TENSOR_F32 && opt->weights != TENSOR_Q8_0)
        return llm_fail(err, LLM_ERR_ARG, "%s: unknown weight type %d", path, (int)opt->weights);
    if (group < 0 || group % 32 != 0 || group > QUANT_GROUP_MAX)
        return llm_fail(err, LLM_ERR_ARG,
                        "quantization group %d must be a positive multiple of 32, at most %d",
                        group, (int)QUANT_GROUP_MAX);

    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return llm_fail(err, LLM_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return llm_fail(err, LLM_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size < 4) {
        close(fd);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: %s bytes, too small to be a llama2.c model%s", path,
                        llm_group_digits(a, sizeof a, (long long)size),
                        size == 0 ? " (empty file)" : "");
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return llm_fail(err, LLM_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));

    header h;
    int version = 0;
    llm_status s = check_header(path, map, size, &h, &version, err);
    if (s != LLM_OK) {
        munmap(map, size);
        return s;
    }

    model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        munmap(map, size);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", path);
    }
    m->map = map;
    m->map_bytes = size;
    m->file_bytes = size;
    const char *slash = strrchr(m->path, '/');
    m->name = slash ? slash + 1 : m->path;
    m->format = (model_format)version;
    m->format_name = format_names[version];
    m->file_group = version == 2 ? h.group : 0;

    model_config *c = &m->config;
    c->dim = h.dim;
    c->hidden_dim = h.hidden_dim;
    c->n_layers = h.n_layers;
    c->n_heads = h.n_heads;
    c->n_kv_heads = h.n_kv_heads;
    c->vocab_size = h.vocab_size;
    c->seq_len = h.seq_len;
    c->head_size = h.dim / h.n_heads;
    c->kv_dim = h.n_kv_heads * c->head_size;
    c->shared_classifier = h.shared != 0;

    counts n = shape_counts(&h);
    m->n_params = (long long)(n.emb + (uint64_t)h.n_layers * (n.layer + 2 * (uint64_t)h.dim) +
                              (uint64_t)h.dim + (h.shared ? 0 : n.emb));

    m->layers = calloc((size_t)h.n_layers, sizeof *m->layers);
    load_plan plan = {.want = opt->weights, .group = group, .file_group = m->file_group};
    if (!m->layers || !model_load_weights(m, version, &plan)) {
        model_close(m);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory while loading the weights", path);
    }
    m->weights = opt->weights;
    m->group = opt->weights == TENSOR_Q8_0 ? m->layers[0].wq.group : 0;
    if ((s = check_weights(m, err)) != LLM_OK) {
        model_close(m);
        return s;
    }
    *out = m;
    return LLM_OK;
}
