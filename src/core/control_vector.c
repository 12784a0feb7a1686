/* control_vector.c — reading, writing and making control vectors (control_vector.h).
 *
 * Owns the vectors' values. Reading goes through gguf.c, which checks the file's
 * structure; this file checks what a control vector must be on top of it. Making runs
 * the two texts on a transformer of its own, so the caller's KV cache is untouched. */
#define _POSIX_C_SOURCE 200809L
#include "control_vector.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_file.h"
#include "output_file.h"
#include "finite.h"
#include "fnv1a.h"
#include "ggml_type.h"
#include "gguf.h"
#include "transformer.h"

/* The scale its maker suggests (llmchat's own key: llama.cpp reads no such thing). */
#define SUGGESTED_SCALE_KEY "llmchat.suggested_scale"

void control_vector_free(control_vector *cv)
{
    if (!cv)
        return;
    free(cv->data);
    free(cv->has);
    free(cv);
}

bool control_vector_has(const control_vector *cv, int layer)
{
    return layer >= 1 && layer < cv->n_layers && (!cv->has || cv->has[layer]);
}

static control_vector *vector_new(int n_embd, int n_layers)
{
    control_vector *cv = calloc(1, sizeof *cv);
    if (!cv)
        return NULL;
    cv->n_embd = n_embd;
    cv->n_layers = n_layers;
    cv->data = calloc((size_t)n_embd * n_layers, sizeof(float));
    if (!cv->data) {
        free(cv);
        return NULL;
    }
    return cv;
}

/* N of a tensor called "direction.N" (decimal digits, below CONTROL_VECTOR_MAX_LAYERS),
 * or -1. */
static int direction_layer(const char *name)
{
    static const char prefix[] = "direction.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *d = name + sizeof prefix - 1;
    if (!*d)
        return -1;
    long n = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        n = n * 10 + (*d - '0');
        if (n >= CONTROL_VECTOR_MAX_LAYERS)
            return -1;
    }
    return (int)n;
}

/* Checks every tensor; sets *n_embd and *n_layers (one more than the highest N). */
static llm_status check_tensors(const gguf *g, const char *name, int *n_embd, int *n_layers,
                                llm_err *err)
{
    uint64_t n = gguf_tensor_count(g);
    if (n == 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: holds no direction.N tensors: not a control vector", name);
    *n_embd = 0;
    *n_layers = 0;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        int layer = direction_layer(t->name);
        if (layer < 0)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: tensor '%.64s' is not called direction.N (N a layer from 1 to "
                            "%d): not a control vector",
                            name, t->name, CONTROL_VECTOR_MAX_LAYERS - 1);
        if (layer == 0)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: direction.0: layers of a control vector start at 1", name);
        if (t->type != GGML_TYPE_F32)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %s: a control vector is F32", name,
                            t->name, ggml_type_name(t->type));
        if (t->n_dims != 1 || t->n_values == 0 || t->n_values > (1u << 20))
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: %s must be one row of 1 to 1048576 values", name, t->name);
        if (*n_embd && t->n_values != (uint64_t)*n_embd)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: %s has %llu values but the tensors before it %d", name,
                            t->name, (unsigned long long)t->n_values, *n_embd);
        *n_embd = (int)t->n_values;
        if (layer + 1 > *n_layers)
            *n_layers = layer + 1;
    }
    return LLM_OK;
}

llm_status control_vector_parse(const void *buf, size_t size, const char *name,
                                control_vector **out, llm_err *err)
{
    *out = NULL;
    gguf *g;
    llm_status st = gguf_parse(buf, size, name, &g, err);
    if (st != LLM_OK)
        return st;
    int n_embd = 0, n_layers = 0;
    st = check_tensors(g, name, &n_embd, &n_layers, err);
    control_vector *cv = NULL;
    if (st == LLM_OK && (size_t)n_embd * n_layers > ((size_t)64 << 20))
        st = llm_fail(err, LLM_ERR_FORMAT, "%s: %d layers of %d values is too large", name,
                      n_layers, n_embd);
    if (st == LLM_OK && (!(cv = vector_new(n_embd, n_layers)) ||
                         !(cv->has = calloc((size_t)n_layers, 1))))
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory reading %s", name);
    double hint = 0.0;
    if (st == LLM_OK && gguf_find_key(g, SUGGESTED_SCALE_KEY) >= 0 &&
        (!gguf_get_float(g, SUGGESTED_SCALE_KEY, &hint) || !isfinite(hint) || fabs(hint) > 1e6))
        st = llm_fail(err, LLM_ERR_FORMAT, "%s: %s is not a number from -1e6 to 1e6", name,
                      SUGGESTED_SCALE_KEY);
    if (st == LLM_OK)
        cv->suggested_scale = (float)hint;
    for (uint64_t i = 0; st == LLM_OK && i < gguf_tensor_count(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        cv->has[direction_layer(t->name)] = 1;
        float *row = cv->data + (size_t)direction_layer(t->name) * n_embd;
        memcpy(row, t->data, sizeof(float) * (size_t)n_embd); /* may be unaligned */
        ptrdiff_t bad = finite_first_bad(row, (size_t)n_embd);
        if (bad >= 0)
            st = llm_fail(err, LLM_ERR_NUMERIC, "%s: %s holds a NaN or infinite value at %td",
                          name, t->name, bad);
    }
    gguf_free(g);
    if (st != LLM_OK) {
        control_vector_free(cv);
        return st;
    }
    *out = cv;
    return LLM_OK;
}

llm_status control_vector_load(const char *path, control_vector **out, llm_err *err)
{
    *out = NULL;
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "cannot open control vector %s: %s", path, why);
    struct stat info;
    if (fstat(fileno(f), &info) != 0) {
        fclose(f);
        return llm_fail(err, LLM_ERR_IO, "cannot read control vector %s: %s", path,
                        strerror(errno));
    }
    long long size = (long long)info.st_size;
    if ((size_t)size > CONTROL_VECTOR_MAX_BYTES) {
        fclose(f);
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %lld bytes is too large for a control vector",
                        path, size);
    }
    void *buf = malloc(size ? (size_t)size : 1);
    if (!buf) {
        fclose(f);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading %s", path);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    int failed = ferror(f);
    fclose(f);
    llm_status st;
    if (failed || got != (size_t)size)
        st = llm_fail(err, LLM_ERR_IO, "cannot read %s", path);
    else
        st = control_vector_parse(buf, (size_t)size, path, out, err);
    if (st == LLM_OK)
        (*out)->fnv1a = fnv1a64(FNV1A64_START, buf, (size_t)size);
    free(buf);
    return st;
}

llm_status control_vector_hash_file(const char *path, uint64_t *out, llm_err *err)
{
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "cannot open control vector %s: %s", path, why);
    uint64_t h = FNV1A64_START;
    unsigned char buf[1 << 14];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        h = fnv1a64(h, buf, n);
    int failed = ferror(f);
    fclose(f);
    if (failed)
        return llm_fail(err, LLM_ERR_IO, "cannot read %s", path);
    *out = h;
    return LLM_OK;
}

/* ---- writing ---- */

typedef struct {
    const control_vector *cv;
    const char *model_hint;
} vector_file;

static llm_status write_body(FILE *f, const char *path, const void *ctx, llm_err *err)
{
    const control_vector *cv = ((const vector_file *)ctx)->cv;
    const char *model_hint = ((const vector_file *)ctx)->model_hint;
    gguf_writer *w = gguf_writer_new(0);
    if (!w)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    gguf_writer_add_string(w, "general.architecture", "controlvector");
    gguf_writer_add_string(w, "controlvector.model_hint", model_hint ? model_hint : "llama");
    gguf_writer_add_int32(w, "controlvector.layer_count", cv->n_layers - 1);
    if (cv->suggested_scale != 0.0f)
        gguf_writer_add_float32(w, SUGGESTED_SCALE_KEY, cv->suggested_scale);
    uint64_t dims[1] = {(uint64_t)cv->n_embd};
    for (int l = 1; l < cv->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "direction.%d", l);
        gguf_writer_add_tensor(w, name, GGML_TYPE_F32, 1, dims);
    }
    llm_status st = gguf_writer_write_header(w, f, path, err);
    size_t bytes = sizeof(float) * (size_t)cv->n_embd;
    for (int l = 1; st == LLM_OK && l < cv->n_layers; l++) {
        if (fwrite(cv->data + (size_t)l * cv->n_embd, 1, bytes, f) != bytes)
            st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        else
            st = gguf_writer_pad(w, f, bytes, path, err);
    }
    gguf_writer_free(w);
    return st;
}

llm_status control_vector_write(const control_vector *cv, const char *path,
                                const char *model_hint, llm_err *err)
{
    if (cv->n_layers < 2)
        return llm_fail(err, LLM_ERR_ARG, "%s: a control vector needs at least 2 layers", path);
    vector_file vf = {cv, model_hint};
    return output_file_write(path, "the control vector", OUTPUT_FILE_MODE, write_body, &vf, err);
}

/* ---- making ---- */

/* The mean over positions 1..n of the residual stream after each layer, of bos (when
 * >= 0) followed by the n tokens, added with sign into cv's rows 1.. ; with norm_sum,
 * each row's Euclidean norm at those positions added into norm_sum[layer]. */
static llm_status add_mean(const model *m, int bos, const int *toks, int n, float sign,
                           control_vector *cv, double *norm_sum, llm_err *err)
{
    const model_config *c = &m->config;
    int skip = bos >= 0, total = n + skip;
    if (total > c->seq_len)
        return llm_fail(err, LLM_ERR_CONTEXT, "a text of %d token%s does not fit the context (%d)",
                        n, n == 1 ? "" : "s", c->seq_len);
    int *seq = malloc(sizeof(int) * (size_t)total);
    size_t per = (size_t)c->n_layers * c->dim;
    float *resid = malloc(sizeof(float) * per * (size_t)total);
    transformer *t = NULL;
    llm_status st = LLM_OK;
    if (!seq || !resid)
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory making a control vector");
    if (st == LLM_OK)
        st = transformer_new(m, total, &t, err);
    if (st == LLM_OK) {
        if (skip)
            seq[0] = bos;
        memcpy(seq + skip, toks, sizeof(int) * (size_t)n);
        st = transformer_residuals(t, seq, total, resid, err);
    }
    for (int l = 1; st == LLM_OK && l < c->n_layers; l++) {
        float *row = cv->data + (size_t)l * c->dim;
        for (int p = skip; p < total; p++) {
            const float *r = resid + (size_t)p * per + (size_t)l * c->dim;
            double sq = 0.0;
            for (int i = 0; i < c->dim; i++) {
                row[i] += sign * r[i] / (float)n;
                sq += (double)r[i] * r[i];
            }
            if (norm_sum)
                norm_sum[l] += sqrt(sq);
        }
    }
    transformer_free(t);
    free(resid);
    free(seq);
    return st;
}

llm_status control_vector_make(const model *m, int bos, const int *a, int na, const int *b,
                               int nb, control_vector **out, float *resid_norm, llm_err *err)
{
    *out = NULL;
    if (na < 1 || nb < 1)
        return llm_fail(err, LLM_ERR_ARG, "both texts need at least one token");
    if (m->config.n_layers < 2)
        return llm_fail(err, LLM_ERR_ARG, "a model of one layer has no layer to steer after "
                                          "(llama.cpp never steers after layer 0)");
    control_vector *cv = vector_new(m->config.dim, m->config.n_layers);
    if (!cv)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory making a control vector");
    double *norm_sum = calloc((size_t)m->config.n_layers, sizeof *norm_sum);
    llm_status st = norm_sum ? LLM_OK : llm_fail(err, LLM_ERR_NOMEM, "out of memory making a control vector");
    if (st == LLM_OK)
        st = add_mean(m, bos, a, na, 1.0f, cv, norm_sum, err);
    if (st == LLM_OK)
        st = add_mean(m, bos, b, nb, -1.0f, cv, norm_sum, err);
    for (int l = 0; st == LLM_OK && resid_norm && l < m->config.n_layers; l++)
        resid_norm[l] = l == 0 ? 0.0f : (float)(norm_sum[l] / (na + nb));
    free(norm_sum);
    if (st != LLM_OK) {
        control_vector_free(cv);
        return st;
    }
    *out = cv;
    return LLM_OK;
}
