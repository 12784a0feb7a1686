/* gguf_copy.h — copying a GGUF file's metadata through the writer, for tests that
 * make variants of a real file (test_model_gguf, test_template, test_chatfile,
 * test_tokenizer_bpe). */
#ifndef LLMCHAT_TEST_GGUF_COPY_H
#define LLMCHAT_TEST_GGUF_COPY_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "testutil.h"

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
                bool read = gguf_array_string(&a, &cur, &v[k], &len);
                check_each(read, "%s: string %llu unreadable", key, (unsigned long long)k);
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

/* A copy of GGUF file src (in tests/data) at dst in which "<|im_start|>" and
 * "<|im_end|>" are control tokens: appended to the vocabulary when append, else in place
 * of its last two tokens; with template_text (when not NULL) as tokenizer.chat_template.
 * Tensors are copied as they are. */
static inline const char *write_chatml_variant(const char *src, const char *dst,
                                               bool append, const char *template_text)
{
    const char *path = temp_path(dst);
    size_t size;
    unsigned char *buf = read_whole_file(src[0] == '/' ? src : data_path(src), &size);
    gguf *g;
    llm_err err;
    ck_assert(gguf_parse(buf, size, src, &g, &err) == LLM_OK);
    gguf_writer *w = gguf_writer_new(0);
    for (uint64_t i = 0; i < gguf_kv_count(g); i++) {
        const char *key = gguf_kv_key(g, i);
        bool tokens = !strcmp(key, "tokenizer.ggml.tokens");
        bool scores = !strcmp(key, "tokenizer.ggml.scores");
        bool types = !strcmp(key, "tokenizer.ggml.token_type");
        if (!tokens && !scores && !types) {
            gguf_copy_kv(w, g, i);
            continue;
        }
        gguf_array a;
        ck_assert(gguf_get_array(g, key, &a));
        uint64_t n = append ? a.n + 2 : a.n, at = n - 2; /* where the two markers go */
        const char **v = malloc(n * sizeof *v);
        size_t *lens = malloc(n * sizeof *lens);
        float *f = malloc(n * sizeof *f);
        int32_t *t = malloc(n * sizeof *t);
        const unsigned char *cur = NULL;
        for (uint64_t k = 0; k < a.n; k++) {
            uint64_t len = 0;
            if (tokens) {
                bool read = gguf_array_string(&a, &cur, &v[k], &len);
                check_each(read, "token %llu unreadable", (unsigned long long)k);
            }
            lens[k] = (size_t)len;
            f[k] = (float)gguf_array_float(&a, k);
            t[k] = (int32_t)gguf_array_int(&a, k);
        }
        v[at] = "<|im_start|>", lens[at] = 12, f[at] = 0.0f, t[at] = 3;
        v[at + 1] = "<|im_end|>", lens[at + 1] = 10, f[at + 1] = 0.0f, t[at + 1] = 3;
        if (tokens)
            gguf_writer_add_string_array(w, key, v, lens, n);
        else if (scores)
            gguf_writer_add_float32_array(w, key, f, n);
        else
            gguf_writer_add_int32_array(w, key, t, n);
        free(v), free(lens), free(f), free(t);
    }
    if (template_text)
        gguf_writer_add_string(w, "tokenizer.chat_template", template_text);
    gguf_copy_tensor_infos(w, g);
    FILE *out = fopen(path, "wb");
    ck_assert(gguf_writer_write_header(w, out, path, &err) == LLM_OK);
    gguf_copy_tensor_data(w, g, out, path);
    fclose(out);
    gguf_writer_free(w);
    gguf_free(g);
    free(buf);
    return path;
}

/* A copy of GGUF file src (a path) at dst (in the test's temporary directory) with the
 * string key `key` set to value (added when src lacks it); tensors copied as they are. */
static inline const char *write_string_variant(const char *src, const char *dst,
                                               const char *key, const char *value)
{
    const char *path = temp_path(dst);
    size_t size;
    unsigned char *buf = read_whole_file(src, &size);
    gguf *g;
    llm_err err;
    ck_assert(gguf_parse(buf, size, src, &g, &err) == LLM_OK);
    gguf_writer *w = gguf_writer_new(0);
    for (uint64_t i = 0; i < gguf_kv_count(g); i++)
        if (strcmp(gguf_kv_key(g, i), key))
            gguf_copy_kv(w, g, i);
    gguf_writer_add_string(w, key, value);
    gguf_copy_tensor_infos(w, g);
    FILE *out = fopen(path, "wb");
    ck_assert(gguf_writer_write_header(w, out, path, &err) == LLM_OK);
    gguf_copy_tensor_data(w, g, out, path);
    ck_assert_int_eq(fclose(out), 0);
    gguf_writer_free(w);
    gguf_free(g);
    free(buf);
    return path;
}

#endif
