/* gguf_copy.h — copying a GGUF file's metadata through the writer, for tests that
 * make variants of a real file (test_model_gguf, test_template). */
#ifndef LLMCHAT_TEST_GGUF_COPY_H
#define LLMCHAT_TEST_GGUF_COPY_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "gguf.h"

/* Copies the metadata value of key i of g into w: strings, uint32, int32, float32,
 * bool, and arrays of strings, float32 and int32 (what llama.cpp's files hold). */
static inline void gguf_copy_kv(gguf_writer *w, const gguf *g, uint64_t i)
{
    const char *key = gguf_kv_key(g, i);
    uint64_t u;
    double d;
    bool b;
    gguf_array a;
    switch (gguf_kv_type(g, i)) {
    case GGUF_TYPE_STRING: gguf_writer_add_string(w, key, gguf_get_string(g, key, NULL)); break;
    case GGUF_TYPE_UINT32: ck_assert(gguf_get_uint(g, key, &u)); gguf_writer_add_uint32(w, key, (uint32_t)u); break;
    case GGUF_TYPE_INT32: ck_assert(gguf_get_float(g, key, &d)); gguf_writer_add_int32(w, key, (int32_t)d); break;
    case GGUF_TYPE_FLOAT32: ck_assert(gguf_get_float(g, key, &d)); gguf_writer_add_float32(w, key, (float)d); break;
    case GGUF_TYPE_BOOL: ck_assert(gguf_get_bool(g, key, &b)); gguf_writer_add_bool(w, key, b); break;
    case GGUF_TYPE_ARRAY: {
        ck_assert(gguf_get_array(g, key, &a));
        if (a.type == GGUF_TYPE_STRING) {
            const char **v = malloc(a.n * sizeof *v);
            size_t *lens = malloc(a.n * sizeof *lens);
            const unsigned char *cur = NULL;
            for (uint64_t k = 0; k < a.n; k++) {
                uint64_t len;
                ck_assert(gguf_array_string(&a, &cur, &v[k], &len));
                lens[k] = (size_t)len;
            }
            gguf_writer_add_string_array(w, key, v, lens, a.n);
            free(v);
            free(lens);
        } else if (a.type == GGUF_TYPE_FLOAT32) {
            float *v = malloc(a.n * sizeof *v);
            for (uint64_t k = 0; k < a.n; k++)
                v[k] = (float)gguf_array_float(&a, k);
            gguf_writer_add_float32_array(w, key, v, a.n);
            free(v);
        } else {
            int32_t *v = malloc(a.n * sizeof *v);
            for (uint64_t k = 0; k < a.n; k++)
                v[k] = (int32_t)gguf_array_int(&a, k);
            gguf_writer_add_int32_array(w, key, v, a.n);
            free(v);
        }
        break;
    }
    default: ck_abort_msg("gguf_copy_kv: type %d of %s", (int)gguf_kv_type(g, i), key);
    }
}

/* Describes every tensor of g to w, then (after gguf_writer_write_header) writes their
 * data to f: a copy of the file's tensors. */
static inline void gguf_copy_tensor_infos(gguf_writer *w, const gguf *g)
{
    for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        ck_assert_uint_eq(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->dims), t->bytes);
    }
}

static inline void gguf_copy_tensor_data(const gguf_writer *w, const gguf *g, FILE *f,
                                         const char *path)
{
    llm_err err;
    for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        ck_assert_uint_eq(fwrite(t->data, 1, t->bytes, f), t->bytes);
        ck_assert(gguf_writer_pad(w, f, t->bytes, path, &err) == LLM_OK);
    }
}

#endif
