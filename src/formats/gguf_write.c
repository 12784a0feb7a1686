/* gguf_write.c — the GGUF writer (see gguf.h): metadata and tensor descriptions are
 * collected in memory, then written with the data section in one pass, each tensor at
 * an offset that is a multiple of the alignment (the layout gguf.c describes).
 *
 * Owns the serialized metadata and the tensor list until gguf_writer_free; an
 * allocation that fails marks the writer failed, and writing it then fails. */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"

typedef struct {
    char *name;
    uint32_t n_dims, type;
    uint64_t dims[GGUF_MAX_DIMS];
    uint64_t offset, bytes;
} writer_tensor;

struct gguf_writer {
    uint32_t alignment;
    unsigned char *kv;        /* serialized metadata */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    writer_tensor *tensors;
    uint64_t n_tensors, cap_tensors;
    uint64_t data_bytes;      /* data section so far, aligned */
    bool failed;              /* out of memory while adding */
};

static void put(gguf_writer *w, const void *p, size_t n)
{
    if (w->failed)
        return;
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 4096;
        while (cap < w->kv_len + n)
            cap *= 2;
        unsigned char *grown = realloc(w->kv, cap);
        if (!grown) {
            w->failed = true;
            return;
        }
        w->kv = grown;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
}

static void put_u32(gguf_writer *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(w, b, 4);
}

static void put_u64(gguf_writer *w, uint64_t v)
{
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

static void put_string(gguf_writer *w, const char *s, size_t len)
{
    put_u64(w, len);
    put(w, s, len);
}

static void put_key(gguf_writer *w, const char *key, uint32_t type)
{
    put_string(w, key, strlen(key));
    put_u32(w, type);
    w->n_kv++;
}

gguf_writer *gguf_writer_new(uint32_t alignment)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->alignment = alignment ? alignment : GGUF_DEFAULT_ALIGNMENT;
    if (w->alignment != GGUF_DEFAULT_ALIGNMENT)
        gguf_writer_add_uint32(w, "general.alignment", w->alignment);
    return w;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w)
        return;
    for (uint64_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name);
    free(w->tensors);
    free(w->kv);
    free(w);
}

void gguf_writer_add_string(gguf_writer *w, const char *key, const char *value)
{
    gguf_writer_add_string_n(w, key, value, strlen(value));
}

void gguf_writer_add_string_n(gguf_writer *w, const char *key, const char *value, size_t len)
{
    put_key(w, key, GGUF_TYPE_STRING);
    put_string(w, value, len);
}

void gguf_writer_add_uint32(gguf_writer *w, const char *key, uint32_t value)
{
    put_key(w, key, GGUF_TYPE_UINT32);
    put_u32(w, value);
}

void gguf_writer_add_int32(gguf_writer *w, const char *key, int32_t value)
{
    put_key(w, key, GGUF_TYPE_INT32);
    put_u32(w, (uint32_t)value);
}

void gguf_writer_add_float32(gguf_writer *w, const char *key, float value)
{
    uint32_t u;
    memcpy(&u, &value, sizeof u);
    put_key(w, key, GGUF_TYPE_FLOAT32);
    put_u32(w, u);
}

void gguf_writer_add_bool(gguf_writer *w, const char *key, bool value)
{
    unsigned char b = value ? 1 : 0;
    put_key(w, key, GGUF_TYPE_BOOL);
    put(w, &b, 1);
}

void gguf_writer_add_string_array(gguf_writer *w, const char *key, const char *const *values,
                                  const size_t *lens, uint64_t n)
{
    put_key(w, key, GGUF_TYPE_ARRAY);
    put_u32(w, GGUF_TYPE_STRING);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        put_string(w, values[i], lens[i]);
}

void gguf_writer_add_float32_array(gguf_writer *w, const char *key, const float *values,
                                   uint64_t n)
{
    put_key(w, key, GGUF_TYPE_ARRAY);
    put_u32(w, GGUF_TYPE_FLOAT32);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &values[i], sizeof u);
        put_u32(w, u);
    }
}

void gguf_writer_add_int32_array(gguf_writer *w, const char *key, const int32_t *values,
                                 uint64_t n)
{
    put_key(w, key, GGUF_TYPE_ARRAY);
    put_u32(w, GGUF_TYPE_INT32);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        put_u32(w, (uint32_t)values[i]);
}

uint64_t gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const uint64_t *dims)
{
    const ggml_type_info *info = ggml_type_get(type);
    if (!info || n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return 0;
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++)
        n *= dims[d];
    if (n == 0 || n % info->block != 0)
        return 0;
    if (w->n_tensors == w->cap_tensors) {
        uint64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        writer_tensor *grown = realloc(w->tensors, (size_t)cap * sizeof *grown);
        if (!grown) {
            w->failed = true;
            return 0;
        }
        w->tensors = grown;
        w->cap_tensors = cap;
    }
    writer_tensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) {
        w->failed = true;
        return 0;
    }
    t->n_dims = n_dims;
    t->type = type;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        t->dims[d] = d < n_dims ? dims[d] : 1;
    t->bytes = n / info->block * info->bytes;
    t->offset = w->data_bytes;
    w->data_bytes += (t->bytes + w->alignment - 1) / w->alignment * w->alignment;
    w->n_tensors++;
    return t->bytes;
}

static llm_status write_bytes(FILE *f, const void *p, size_t n, const char *path, llm_err *err)
{
    if (n && fwrite(p, 1, n, f) != n)
        return llm_fail(err, LLM_ERR_IO, "cannot write %s", path);
    return LLM_OK;
}

llm_status gguf_writer_write_header(gguf_writer *w, FILE *f, const char *path, llm_err *err)
{
    /* the tensor descriptions are appended to the metadata for the write and taken
     * off again afterwards */
    size_t kv_len = w->kv_len;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        const writer_tensor *t = &w->tensors[i];
        put_string(w, t->name, strlen(t->name));
        put_u32(w, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(w, t->dims[d]);
        put_u32(w, t->type);
        put_u64(w, t->offset);
    }
    if (w->failed) {
        w->kv_len = kv_len;
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    unsigned char head[24];
    memcpy(head, "GGUF", 4);
    uint32_t version = 3;
    for (int i = 0; i < 4; i++)
        head[4 + i] = (unsigned char)(version >> (8 * i));
    for (int i = 0; i < 8; i++) {
        head[8 + i] = (unsigned char)(w->n_tensors >> (8 * i));
        head[16 + i] = (unsigned char)(w->n_kv >> (8 * i));
    }
    llm_status st = write_bytes(f, head, sizeof head, path, err);
    if (st == LLM_OK)
        st = write_bytes(f, w->kv, w->kv_len, path, err);
    uint64_t end = sizeof head + w->kv_len;
    w->kv_len = kv_len;
    if (st == LLM_OK)
        st = gguf_writer_pad(w, f, end, path, err);
    return st;
}

llm_status gguf_writer_pad(const gguf_writer *w, FILE *f, uint64_t bytes, const char *path,
                           llm_err *err)
{
    static const unsigned char zeros[256];
    uint64_t pad = (w->alignment - bytes % w->alignment) % w->alignment;
    while (pad > 0) {
        size_t n = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        llm_status st = write_bytes(f, zeros, n, path, err);
        if (st != LLM_OK)
            return st;
        pad -= n;
    }
    return LLM_OK;
}
