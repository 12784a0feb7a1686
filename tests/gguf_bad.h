/* gguf_bad.h — hostile GGUF files made at test time from tests/data/stories260K.gguf by
 * the byte edits that made the project's reference set of bad files (its
 * models/bad/stories260K-*.gguf; tests/data/gguf_bad.tsv lists each one's size and
 * sha256, which tests/e2e_gguf.sh checks the files made here against).
 *
 * Each edit knows the byte positions of that one file (it refuses any other input):
 * the metadata runs from byte 24 to 11,347, the tensor descriptions from there to the
 * padding before the data, which starts at byte 14,176. Independent of src/gguf.c on
 * purpose: a test of the reader should not trust the reader to make its inputs. */
#ifndef LLMCHAT_TEST_GGUF_BAD_H
#define LLMCHAT_TEST_GGUF_BAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    STORIES_GGUF_BYTES = 1185376,
    STORIES_KV_END = 11347,      /* first byte after the metadata */
    STORIES_DATA = 14176,        /* first byte of the data section */
    STORIES_N_TENSORS = 48,
};

typedef struct {
    unsigned char *p;
    size_t n, cap;
} bad_buf;

static inline void bad_put(bad_buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static inline void bad_put_u32(bad_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    bad_put(b, x, 4);
}

static inline void bad_put_u64(bad_buf *b, uint64_t v)
{
    bad_put_u32(b, (uint32_t)v);
    bad_put_u32(b, (uint32_t)(v >> 32));
}

static inline void bad_set_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void bad_set_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t bad_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A copy of the first n bytes of src. */
static inline bad_buf bad_copy(const unsigned char *src, size_t n)
{
    bad_buf b = {0};
    bad_put(&b, src, n);
    return b;
}

/* The metadata with a uint32 general.alignment = value appended (33 bytes), and the
 * tensor descriptions after it. */
static inline void bad_put_header_with_alignment(bad_buf *b, const unsigned char *src, uint32_t value)
{
    bad_put(b, src, 16);
    bad_put_u64(b, 20); /* 19 keys + general.alignment */
    bad_put(b, src + 24, STORIES_KV_END - 24);
    static const char key[] = "general.alignment";
    bad_put_u64(b, sizeof key - 1);
    bad_put(b, key, sizeof key - 1);
    bad_put_u32(b, 4); /* uint32 */
    bad_put_u32(b, value);
}

/* The end of the tensor descriptions (the first padding byte). */
static inline size_t bad_infos_end(const unsigned char *src)
{
    size_t pos = STORIES_KV_END;
    for (int i = 0; i < STORIES_N_TENSORS; i++) {
        pos += 8 + (size_t)bad_get_u64(src + pos); /* name */
        uint32_t nd = src[pos] | src[pos + 1] << 8;
        pos += 4 + 8 * (size_t)nd + 4 + 8;          /* dims, type, offset */
    }
    return pos;
}

/* Makes variant `name` of src (stories260K.gguf, size bytes). Returns false for an
 * unknown name or an input that is not that file. */
static inline bool gguf_bad_make(const char *name, const unsigned char *src, size_t size,
                                 bad_buf *out)
{
    memset(out, 0, sizeof *out);
    if (size != STORIES_GGUF_BYTES || memcmp(src, "GGUF\3\0\0\0", 8) != 0)
        return false;
    if (!strcmp(name, "trunc-metadata")) {
        *out = bad_copy(src, 5000);
    } else if (!strcmp(name, "trunc-tensordata")) {
        *out = bad_copy(src, 690504);
    } else if (!strcmp(name, "offset-past-end")) {
        *out = bad_copy(src, size);
        bad_set_u64(out->p + 14144, 1171200);
    } else if (!strcmp(name, "type-99")) {
        *out = bad_copy(src, size);
        bad_set_u32(out->p + 11392, 99);
    } else if (!strcmp(name, "strlen-2e63")) {
        *out = bad_copy(src, size);
        bad_set_u64(out->p + 69, (uint64_t)1 << 63);
    } else if (!strcmp(name, "arraylen-2e40")) {
        *out = bad_copy(src, size);
        bad_set_u64(out->p + 61, (uint64_t)1 << 40);
    } else if (!strcmp(name, "arch-gpt2")) {
        /* "llama" (length at 10737, text at 10745) becomes "gpt2"; one padding byte
         * more keeps the data at 14176 */
        bad_put(out, src, 10737);
        bad_put_u64(out, 4);
        bad_put(out, "gpt2", 4);
        bad_put(out, src + 10750, STORIES_DATA - 10750);
        bad_put(out, "", 1);
        bad_put(out, src + STORIES_DATA, size - STORIES_DATA);
    } else if (!strcmp(name, "ndims-5")) {
        /* token_embd.weight (n_dims at 11372, dims [64, 512] after it) gets three more
         * dims of 1; the padding shrinks by their 24 bytes */
        bad_put(out, src, 11372);
        bad_put_u32(out, 5);
        bad_put(out, src + 11376, 16);
        for (int i = 0; i < 3; i++)
            bad_put_u64(out, 1);
        size_t end = bad_infos_end(src);
        bad_put(out, src + 11392, end - 11392);
        size_t pad = STORIES_DATA - end - 24;
        for (size_t i = 0; i < pad; i++)
            bad_put(out, "", 1);
        bad_put(out, src + STORIES_DATA, size - STORIES_DATA);
    } else if (!strcmp(name, "align-0")) {
        /* general.alignment = 0 appended; the data re-padded to 32 (byte 14208) */
        bad_put_header_with_alignment(out, src, 0);
        size_t end = bad_infos_end(src);
        bad_put(out, src + STORIES_KV_END, end - STORIES_KV_END);
        while (out->n % 32)
            bad_put(out, "", 1);
        bad_put(out, src + STORIES_DATA, size - STORIES_DATA);
    } else if (!strcmp(name, "align-48")) {
        /* general.alignment = 48 appended and the data laid out for it: each tensor
         * at the next multiple of 48, the offsets rewritten */
        bad_put_header_with_alignment(out, src, 48);
        size_t pos = STORIES_KV_END;
        uint64_t old_off[STORIES_N_TENSORS], bytes[STORIES_N_TENSORS], next = 0;
        for (int i = 0; i < STORIES_N_TENSORS; i++) {
            size_t start = pos;
            pos += 8 + (size_t)bad_get_u64(src + pos);
            uint32_t nd = src[pos] | src[pos + 1] << 8;
            uint64_t n = 1;
            for (uint32_t d = 0; d < nd; d++)
                n *= bad_get_u64(src + pos + 4 + 8 * d);
            pos += 4 + 8 * (size_t)nd + 4; /* all F32 in this file */
            old_off[i] = bad_get_u64(src + pos);
            bytes[i] = 4 * n;
            bad_put(out, src + start, pos - start);
            bad_put_u64(out, next);
            pos += 8;
            next = (next + bytes[i] + 47) / 48 * 48;
        }
        for (int i = 0; i < STORIES_N_TENSORS; i++) {
            while (out->n % 48) /* between tensors, not after the last */
                bad_put(out, "", 1);
            bad_put(out, src + STORIES_DATA + old_off[i], (size_t)bytes[i]);
        }
    } else {
        return false;
    }
    return true;
}

/* Every variant, with what the refusal must mention. */
static const struct {
    const char *name;
    const char *says[3];
} gguf_bad_variants[] = {
    {"trunc-metadata", {"tokenizer.ggml.tokens", "truncated", NULL}},
    {"trunc-tensordata", {"blk.2.ffn_gate.weight", "past the end", NULL}},
    {"offset-past-end", {"blk.4.ffn_norm.weight", "past the end", NULL}},
    {"type-99", {"token_embd.weight", "type 99", NULL}},
    {"strlen-2e63", {"tokenizer.ggml.tokens", "9,223,372,036,854,775,808", NULL}},
    {"arraylen-2e40", {"tokenizer.ggml.tokens", "1,099,511,627,776", NULL}},
    {"arch-gpt2", {"gpt2", "architecture", NULL}},
    {"ndims-5", {"token_embd.weight", "5 dimensions", NULL}},
    {"align-0", {"general.alignment is 0", "power of two", NULL}},
    {"align-48", {"general.alignment is 48", "power of two", NULL}},
};

#endif
