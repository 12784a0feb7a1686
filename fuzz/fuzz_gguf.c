/* fuzz_gguf.c — libFuzzer target: the GGUF reader (header, metadata, tensor infos)
 * on arbitrary bytes, then what is read from a parsed file: every key through every
 * typed getter, every array element (strings walked to the end), every tensor's
 * bounds (its data must lie inside the buffer), and the tokenizer built from the
 * metadata, which must then encode and decode text. */
#include "fuzz.h"

#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

static void read_array(const gguf_array *a)
{
    if (a->type == GGUF_TYPE_STRING) {
        const unsigned char *cursor = NULL;
        const char *s;
        uint64_t len, n = 0;
        while (gguf_array_string(a, &cursor, &s, &len)) {
            FUZZ_CHECK(len == 0 || (const unsigned char *)s + len <= a->end);
            n++;
        }
        FUZZ_CHECK(n <= a->n);
        return;
    }
    for (uint64_t i = 0; i < a->n && i < 4096; i++) {
        gguf_array_float(a, i);
        gguf_array_int(a, i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy: the parser may keep pointers into it until gguf_free */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    gguf *g;
    llm_err err;
    if (gguf_parse(buf, size, "fuzz.gguf", &g, &err) != LLM_OK) {
        FUZZ_CHECK(g == NULL && strlen(err.text) > 0);
        free(buf);
        return 0;
    }
    /* (a file without tensors may end before its aligned data section would start) */
    FUZZ_CHECK(gguf_tensor_count(g) == 0 || gguf_data_offset(g) <= size);
    for (uint64_t i = 0; i < gguf_kv_count(g); i++) {
        const char *key = gguf_kv_key(g, i);
        FUZZ_CHECK(key != NULL);
        FUZZ_CHECK(gguf_find_key(g, key) >= 0);
        uint64_t u;
        double f;
        bool b;
        size_t len;
        gguf_array a;
        gguf_get_uint(g, key, &u);
        gguf_get_float(g, key, &f);
        gguf_get_bool(g, key, &b);
        const char *s = gguf_get_string(g, key, &len);
        FUZZ_CHECK(!s || s[len] == '\0');
        if (gguf_get_array(g, key, &a)) {
            FUZZ_CHECK(a.data >= buf && a.end <= buf + size && a.data <= a.end);
            read_array(&a);
        }
    }
    for (uint64_t i = 0; i < gguf_tensor_count(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        FUZZ_CHECK(t && t->name);
        FUZZ_CHECK(gguf_find_tensor(g, t->name) != NULL);
        FUZZ_CHECK((const uint8_t *)t->data >= buf && t->bytes <= size &&
                   (const uint8_t *)t->data + t->bytes <= buf + size);
    }
    tokenizer *tok;
    if (tokenizer_from_gguf(g, "fuzz.gguf", 0, &tok, &err) == LLM_OK) {
        int ids[256];
        char piece[TOKENIZER_PIECE_MAX + 1];
        int n = tokenizer_encode(tok, "Hello world! caf\xc3\xa9 <s>\xff", ids, 256);
        FUZZ_CHECK(n >= 0);
        for (int i = 0; i < n && i < 256; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(tok));
            tokenizer_decode(tok, i ? ids[i - 1] : tokenizer_bos(tok), ids[i], piece, sizeof piece);
        }
        tokenizer_close(tok);
    }
    gguf_free(g);
    free(buf);
    return 0;
}
