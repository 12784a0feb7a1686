/* model_llama2c.c — the loader of llama2.c checkpoints (v0, v1, v2; the layout is
 * llama2c.h): validates the header and the exact byte size its shape implies, then
 * walks the tensors in file order into the model.
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
 *     and model.group is the group of layer 0's wq.
 *
 * Owns nothing itself: buffers belong to the model (model_own). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama2c.h"
#include "model_internal.h"

static const char *const format_names[] = {
    [MODEL_FORMAT_LLAMA2C_V0] = "llama2.c v0 (fp32)",
    [MODEL_FORMAT_LLAMA2C_V1] = "llama2.c v1 (fp32)",
    [MODEL_FORMAT_LLAMA2C_V2] = "llama2.c v2 (int8 Q8_0)",
};

static model_shape header_shape(const llama2c_header *h)
{
    return (model_shape){.dim = h->dim, .hidden_dim = h->hidden_dim, .n_layers = h->n_layers,
                         .n_heads = h->n_heads, .n_kv_heads = h->n_kv_heads,
                         .vocab_size = h->vocab_size, .seq_len = h->seq_len};
}

/* Decodes and validates the header of the mapped file into h. */
static llm_status check_header(const char *path, const unsigned char *p, size_t size,
                               llama2c_header *h, llm_err *err)
{
    char why[160];
    char a[32], b[32];
    bool ak42 = (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) == LLAMA2C_MAGIC;

    if (!llama2c_header_decode(p, size, h)) {
        if (ak42)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: %s bytes, too small for the %d-byte \"ak42\" header "
                            "(truncated?)", path, llm_group_digits(a, sizeof a, (long long)size),
                            LLAMA2C_AK42_HEADER_BYTES);
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: %s bytes, too small to be a llama2.c model (its header alone "
                        "has %d bytes)", path, llm_group_digits(a, sizeof a, (long long)size),
                        LLAMA2C_V0_HEADER_BYTES);
    }
    model_shape shape = header_shape(h);
    if (ak42) {
        if (h->version != 1 && h->version != 2)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: unknown llama2.c format version %d (this program reads "
                            "versions 0, 1 and 2)", path, h->version);
        if (h->shared > 1)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: bad header: shared_classifier flag is %u, not 0 or 1", path,
                            (unsigned)h->shared);
        int first_pad = h->version == 2 ? LLAMA2C_AT_GROUP + 4 : LLAMA2C_AT_GROUP;
        for (int i = first_pad; i < LLAMA2C_AK42_HEADER_BYTES; i++)
            if (p[i] != 0)
                return llm_fail(err, LLM_ERR_FORMAT,
                                "%s: bad header: byte %d of the padding is %u, not 0 (a "
                                "damaged or foreign file)", path, i, (unsigned)p[i]);
        if (!model_shape_ok(&shape, why, sizeof why))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: bad shape in header: %s", path, why);
        if (h->version == 2) {
            if (h->group <= 0)
                return llm_fail(err, LLM_ERR_FORMAT, "%s: bad header: group size %d is not "
                                "positive", path, (int)h->group);
            const llama2c_part check[] = {LLAMA2C_TOKEN_EMBEDDING, LLAMA2C_WQ, LLAMA2C_WK, LLAMA2C_W1};
            const char *names[] = {"token_embedding", "wq", "wk", "w1"};
            for (int i = 0; i < 4; i++) {
                uint64_t rows, cols;
                llama2c_part_shape(h, check[i], &rows, &cols);
                if ((rows * cols) % (uint64_t)h->group != 0)
                    return llm_fail(err, LLM_ERR_FORMAT,
                                    "%s: bad header: group size %d does not divide the size of "
                                    "%s", path, (int)h->group, names[i]);
            }
        }
    } else if (!model_shape_ok(&shape, why, sizeof why)) {
        /* No magic: the legacy v0 header is 7 int32, and must look like a model. */
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: not a llama2.c model: no \"ak42\" magic, and not a plausible "
                        "legacy (v0) header either (%s)", path, why);
    }

    uint64_t want = llama2c_file_bytes(h);
    if (want != (uint64_t)size)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s bytes, but its header implies %s (%s)",
                        path, llm_group_digits(a, sizeof a, (long long)size),
                        llm_group_digits(b, sizeof b, (long long)want),
                        (uint64_t)size < want ? "truncated?" : "trailing data?");
    return LLM_OK;
}

/* A v2 tensor whose groups straddle rows: value e of the flattened tensor is
 * q[e] * scale[e / file_group]. */
typedef struct {
    const int8_t *q;
    const unsigned char *scales; /* fp32, maybe unaligned */
    int file_group;
} flat_q8;

static void read_flat_q8_row(const void *src, int row, int cols, float *out)
{
    const flat_q8 *t = src;
    uint64_t first = (uint64_t)row * (uint64_t)cols;
    for (int i = 0; i < cols; i++) {
        uint64_t e = first + (uint64_t)i;
        float s;
        memcpy(&s, t->scales + 4 * (e / (uint64_t)t->file_group), sizeof s);
        out[i] = (float)t->q[e] * s;
    }
}

const tensor *model_part_tensor(const model *m, llama2c_part p, int l)
{
    const model_layer *y = &m->layers[l];
    switch (p) {
    case LLAMA2C_TOKEN_EMBEDDING: return &m->token_embedding;
    case LLAMA2C_WCLS: return &m->wcls;
    case LLAMA2C_WQ: return &y->wq;
    case LLAMA2C_WK: return &y->wk;
    case LLAMA2C_WV: return &y->wv;
    case LLAMA2C_WO: return &y->wo;
    case LLAMA2C_W1: return &y->w1;
    case LLAMA2C_W2: return &y->w2;
    case LLAMA2C_W3: return &y->w3;
    default: return NULL;
    }
}

/* Loads one fp32 matrix at p into t as asked. */
static bool load_fp32(model *m, tensor *t, const unsigned char *p, int rows, int cols,
                      const model_options *opt)
{
    const float *f = (const float *)(const void *)p; /* 4-byte aligned: headers are 28 or 256 */
    bool ok;
    if (opt->weights == TENSOR_F32) {
        *t = model_tensor_view(f, rows, cols);
        m->mapped_bytes += 4 * (size_t)rows * cols;
        ok = true;
    } else {
        ok = model_tensor_quantize(m, t, f, rows, cols, opt->group);
    }
    model_note_tensor(m, "F32", opt->weights == TENSOR_F32 ? MODEL_IN_PLACE : MODEL_CONVERTED,
                      4 * (uint64_t)rows * cols);
    return ok;
}

/* Loads one v2 matrix (int8 values, then fp32 scales) at p into t as asked. */
static bool load_q8(model *m, tensor *t, const unsigned char *p, int rows, int cols,
                    int file_group, const model_options *opt)
{
    uint64_t n = (uint64_t)rows * (uint64_t)cols;
    const int8_t *q = (const int8_t *)p;
    const unsigned char *s = p + n;
    uint64_t bytes = n + 4 * (n / (uint64_t)file_group);

    if (opt->weights == TENSOR_Q8_0 && cols % file_group == 0 && file_group % 32 == 0 &&
        file_group <= QUANT_GROUP_MAX) {
        /* Groups align with rows: the flattened layout is the row layout. */
        const float *scale;
        if ((uintptr_t)s % _Alignof(float) == 0) {
            scale = (const float *)(const void *)s;
            m->mapped_bytes += (size_t)bytes;
        } else {
            float *copy = model_own(m, 4 * (n / (uint64_t)file_group));
            if (!copy)
                return false;
            memcpy(copy, s, 4 * (n / (uint64_t)file_group));
            scale = copy;
            m->mapped_bytes += (size_t)n;
        }
        *t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = cols,
                      .group = file_group, .q = q, .scale = scale};
        model_note_tensor(m, "Q8_0", MODEL_IN_PLACE, bytes);
        return true;
    }
    flat_q8 src = {.q = q, .scales = s, .file_group = file_group};
    bool ok = model_tensor_convert(m, t, opt->weights, opt->group, rows, cols, read_flat_q8_row, &src);
    model_note_tensor(m, "Q8_0", MODEL_CONVERTED, bytes);
    return ok;
}

llm_status model_load_llama2c(model *m, const model_options *opt, llm_err *err)
{
    llama2c_header h;
    llm_status st = check_header(m->path, m->map, m->map_bytes, &h, err);
    if (st != LLM_OK)
        return st;
    model_shape shape = header_shape(&h);
    model_set_shape(m, &shape, h.shared != 0);
    m->config.rope_base = 10000.0f;
    m->config.rope_scale = 1.0f;
    m->config.rms_eps = 1e-5f;
    m->format = (model_format)h.version;
    m->format_name = format_names[h.version];
    m->file_group = h.version == 2 ? h.group : 0;

    m->layers = calloc((size_t)h.n_layers, sizeof *m->layers);
    if (!m->layers)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    model_layers_default(m);

    const unsigned char *p = (const unsigned char *)m->map +
                             (h.version == 0 ? LLAMA2C_V0_HEADER_BYTES : LLAMA2C_AK42_HEADER_BYTES);
    int n_parts;
    const llama2c_part *parts = llama2c_parts(&h, &n_parts);
    for (int i = 0; i < n_parts; i++) {
        llama2c_part part = parts[i];
        uint64_t rows, cols;
        llama2c_part_shape(&h, part, &rows, &cols);
        int count = llama2c_part_per_layer(part) ? m->config.n_layers : 1;
        for (int l = 0; l < count; l++) {
            if (!llama2c_part_is_matrix(part)) {
                const float *f = (const float *)(const void *)p;
                if (part == LLAMA2C_RMS_ATT)
                    m->layers[l].rms_att = f;
                else if (part == LLAMA2C_RMS_FFN)
                    m->layers[l].rms_ffn = f;
                else if (part == LLAMA2C_RMS_FINAL)
                    m->rms_final = f;
                p += 4 * rows * cols; /* the RoPE tables are skipped */
                continue;
            }
            tensor *t = (tensor *)model_part_tensor(m, part, l); /* the model being built */
            bool ok = h.version == 2
                          ? load_q8(m, t, p, (int)rows, (int)cols, h.group, opt)
                          : load_fp32(m, t, p, (int)rows, (int)cols, opt);
            if (!ok)
                return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory while loading the weights",
                                m->path);
            p += h.version == 2 ? rows * cols + 4 * (rows * cols / (uint64_t)h.group)
                                : 4 * rows * cols;
        }
    }
    if (m->config.shared_classifier)
        m->wcls = m->token_embedding;
    return LLM_OK;
}
