/* bench/shape_gguf.c — writes a bench shape as a GGUF file with Q8_0 tensors, for other
 * engines (llama.cpp's llama-bench) to time the same model (see bench/shapes.h).
 *
 * GGUF version 3: header, metadata (llama architecture, the shape, a Llama-style
 * vocabulary of placeholder pieces: <unk>, <s>, </s>, the 256 byte tokens, then
 * "▁t<id>"), tensor infos, then the tensors aligned to 32 bytes. Q8_0 blocks are
 * ggml's: an fp16 scale and 32 int8 values (34 bytes). The int8 values are the ones the
 * llama2.c file of the same shape holds (the same random stream), each block of 32
 * with the fp16 of that file's group scale, so both files hold the same weights up to
 * the scale's rounding. Owns nothing once it returns. */
#define _GNU_SOURCE
#include "bench/shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    GGUF_UINT32 = 4, GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_STRING = 8, GGUF_ARRAY = 9,
    GGML_F32 = 0, GGML_Q8_0 = 8, GGUF_ALIGN = 32, Q8_BLOCK = 32, Q8_BLOCK_BYTES = 34,
    GGUF_KEYS = 20, /* metadata pairs put_head writes */
};

static int put(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int put_u32(FILE *f, uint32_t v)
{
    return put(f, &v, 4);
}

static int put_u64(FILE *f, uint64_t v)
{
    return put(f, &v, 8);
}

static int put_str(FILE *f, const char *s)
{
    return put_u64(f, strlen(s)) | put(f, s, strlen(s));
}

static int kv_u32(FILE *f, const char *key, uint32_t v)
{
    return put_str(f, key) | put_u32(f, GGUF_UINT32) | put_u32(f, v);
}

static int kv_f32(FILE *f, const char *key, float v)
{
    return put_str(f, key) | put_u32(f, GGUF_FLOAT32) | put(f, &v, 4);
}

static int kv_str(FILE *f, const char *key, const char *v)
{
    return put_str(f, key) | put_u32(f, GGUF_STRING) | put_str(f, v);
}

/* Piece of token id in the placeholder vocabulary; its type (1 normal, 2 unknown,
 * 3 control, 6 byte). */
static int vocab_piece(int id, char *buf, size_t size)
{
    if (id == 0)
        return snprintf(buf, size, "<unk>"), 2;
    if (id == 1)
        return snprintf(buf, size, "<s>"), 3;
    if (id == 2)
        return snprintf(buf, size, "</s>"), 3;
    if (id < 3 + 256)
        return snprintf(buf, size, "<0x%02X>", id - 3), 6;
    return snprintf(buf, size, "\xe2\x96\x81t%d", id), 1;
}

static int put_vocab(FILE *f, int vocab)
{
    char piece[32];
    int bad = put_str(f, "tokenizer.ggml.tokens") | put_u32(f, GGUF_ARRAY) |
              put_u32(f, GGUF_STRING) | put_u64(f, (uint64_t)vocab);
    for (int i = 0; i < vocab && !bad; i++) {
        vocab_piece(i, piece, sizeof piece);
        bad = put_str(f, piece);
    }
    bad |= put_str(f, "tokenizer.ggml.scores") | put_u32(f, GGUF_ARRAY) |
           put_u32(f, GGUF_FLOAT32) | put_u64(f, (uint64_t)vocab);
    for (int i = 0; i < vocab && !bad; i++) {
        float score = i < 3 + 256 ? 0.0f : -(float)i;
        bad = put(f, &score, 4);
    }
    bad |= put_str(f, "tokenizer.ggml.token_type") | put_u32(f, GGUF_ARRAY) |
           put_u32(f, GGUF_INT32) | put_u64(f, (uint64_t)vocab);
    for (int i = 0; i < vocab && !bad; i++) {
        int32_t type = vocab_piece(i, piece, sizeof piece);
        bad = put(f, &type, 4);
    }
    return bad;
}

/* One tensor of the file: its name, ggml shape (ne0 = the row length) and type. */
typedef struct {
    char name[48];
    uint64_t ne0, ne1; /* ne1 = 0: a vector */
    int type;
} gguf_tensor;

static uint64_t tensor_bytes(const gguf_tensor *t)
{
    uint64_t n = t->ne0 * (t->ne1 ? t->ne1 : 1);
    return t->type == GGML_F32 ? 4 * n : n / Q8_BLOCK * Q8_BLOCK_BYTES;
}

static uint64_t align_up(uint64_t n)
{
    return (n + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
}

/* IEEE half of a positive normal float (round to nearest even). */
static uint16_t half_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    int32_t e = (int32_t)((b >> 23) & 0xff) - 127 + 15;
    uint32_t m = b & 0x7fffff;
    if (e <= 0 || e >= 31)
        return 0; /* the bench's scales are normal halves */
    uint32_t h = ((uint32_t)e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)h;
}

/* Writes one Q8_0 tensor of n values: the shape's int8 stream in blocks of 32, each
 * with the scale the llama2.c file gives every group. */
static int put_q8_tensor(FILE *f, uint64_t n, shape_rng *rng)
{
    enum { BLOCKS = 4096 };
    static unsigned char buf[BLOCKS * Q8_BLOCK_BYTES];
    static int8_t q[BLOCKS * Q8_BLOCK];
    uint16_t d = half_of(SHAPE_WEIGHT_SCALE);
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < (uint64_t)BLOCKS * Q8_BLOCK ? n - done : (uint64_t)BLOCKS * Q8_BLOCK;
        shape_rng_int8(rng, q, (size_t)k);
        for (uint64_t b = 0; b < k / Q8_BLOCK; b++) {
            memcpy(buf + b * Q8_BLOCK_BYTES, &d, 2);
            memcpy(buf + b * Q8_BLOCK_BYTES + 2, q + b * Q8_BLOCK, Q8_BLOCK);
        }
        if (put(f, buf, (size_t)(k / Q8_BLOCK * Q8_BLOCK_BYTES)))
            return -1;
        done += k;
    }
    return 0;
}

/* The tensors of shape s in file order, into t (room for 3 + 9 * layers); returns the
 * count. */
static int gguf_tensors(const shape *s, gguf_tensor *t)
{
    uint64_t d = s->dim, h = s->hidden_dim, V = s->vocab_size;
    uint64_t kv = (uint64_t)s->n_kv_heads * (d / s->n_heads);
    int n = 0;
    t[n++] = (gguf_tensor){"token_embd.weight", d, V, GGML_Q8_0};
    for (int l = 0; l < s->n_layers; l++) {
        static const char *const names[9] = {"attn_norm", "attn_q", "attn_k", "attn_v",
                                              "attn_output", "ffn_norm", "ffn_gate",
                                              "ffn_down", "ffn_up"};
        const uint64_t ne0[9] = {d, d, d, d, d, d, d, h, d};
        const uint64_t ne1[9] = {0, d, kv, kv, d, 0, h, d, h};
        for (int i = 0; i < 9; i++) {
            gguf_tensor *x = &t[n++];
            snprintf(x->name, sizeof x->name, "blk.%d.%s.weight", l, names[i]);
            x->ne0 = ne0[i];
            x->ne1 = ne1[i];
            x->type = ne1[i] ? GGML_Q8_0 : GGML_F32;
        }
    }
    t[n++] = (gguf_tensor){"output_norm.weight", d, 0, GGML_F32};
    if (!s->shared)
        t[n++] = (gguf_tensor){"output.weight", d, V, GGML_Q8_0};
    return n;
}

/* The random stream of tensor t (see shape_rng_for), by its name. */
static shape_rng gguf_stream(const shape *s, const gguf_tensor *t)
{
    static const char *const kinds[8] = {"", "attn_q", "attn_k", "attn_v", "attn_output",
                                         "ffn_gate", "ffn_down", "ffn_up"};
    if (strcmp(t->name, "token_embd.weight") == 0)
        return shape_rng_for(s, 0, 0);
    if (strcmp(t->name, "output.weight") == 0)
        return shape_rng_for(s, 8, 0);
    int layer = 0;
    char kind[32] = "";
    sscanf(t->name, "blk.%d.%31[a-z_]", &layer, kind);
    for (int k = 1; k < 8; k++)
        if (strcmp(kind, kinds[k]) == 0)
            return shape_rng_for(s, k, layer);
    return shape_rng_for(s, 0, 0);
}

/* Header, metadata and tensor infos; *n_tensors and the tensors through t. */
static int put_head(FILE *f, const shape *s, gguf_tensor *t, int *n_tensors)
{
    int n = gguf_tensors(s, t);
    *n_tensors = n;
    char name[64];
    snprintf(name, sizeof name, "llmchat-bench %s (random weights)", s->name);
    int bad = put(f, "GGUF", 4) | put_u32(f, 3) | put_u64(f, (uint64_t)n) | put_u64(f, GGUF_KEYS);
    bad |= kv_str(f, "general.architecture", "llama");
    bad |= kv_str(f, "general.name", name);
    bad |= kv_u32(f, "general.file_type", 7); /* mostly Q8_0 */
    bad |= kv_u32(f, "general.alignment", GGUF_ALIGN);
    bad |= kv_u32(f, "llama.context_length", (uint32_t)s->seq_len);
    bad |= kv_u32(f, "llama.embedding_length", (uint32_t)s->dim);
    bad |= kv_u32(f, "llama.block_count", (uint32_t)s->n_layers);
    bad |= kv_u32(f, "llama.feed_forward_length", (uint32_t)s->hidden_dim);
    bad |= kv_u32(f, "llama.rope.dimension_count", (uint32_t)(s->dim / s->n_heads));
    bad |= kv_u32(f, "llama.attention.head_count", (uint32_t)s->n_heads);
    bad |= kv_u32(f, "llama.attention.head_count_kv", (uint32_t)s->n_kv_heads);
    bad |= kv_f32(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    bad |= kv_f32(f, "llama.rope.freq_base", 10000.0f);
    bad |= kv_u32(f, "llama.vocab_size", (uint32_t)s->vocab_size);
    bad |= kv_str(f, "tokenizer.ggml.model", "llama");
    bad |= put_vocab(f, s->vocab_size); /* 3 keys */
    bad |= kv_u32(f, "tokenizer.ggml.bos_token_id", 1);
    bad |= kv_u32(f, "tokenizer.ggml.eos_token_id", 2);
    uint64_t offset = 0;
    for (int i = 0; i < n && !bad; i++) {
        uint32_t dims = t[i].ne1 ? 2 : 1;
        bad = put_str(f, t[i].name) | put_u32(f, dims) | put_u64(f, t[i].ne0);
        if (dims == 2)
            bad |= put_u64(f, t[i].ne1);
        bad |= put_u32(f, (uint32_t)t[i].type) | put_u64(f, offset);
        offset = align_up(offset + tensor_bytes(&t[i]));
    }
    return bad;
}

static int put_zeros(FILE *f, uint64_t n)
{
    static const unsigned char zero[GGUF_ALIGN];
    return n ? put(f, zero, (size_t)n) : 0;
}

static int write_gguf(FILE *f, const shape *s)
{
    gguf_tensor *t = malloc(sizeof *t * (size_t)(3 + 9 * s->n_layers));
    if (!t)
        return -1;
    int n = 0;
    int bad = put_head(f, s, t, &n);
    long head = ftell(f);
    bad |= head < 0 || put_zeros(f, align_up((uint64_t)head) - (uint64_t)head);
    for (int i = 0; i < n && !bad; i++) {
        uint64_t bytes = tensor_bytes(&t[i]);
        if (t[i].type == GGML_F32) {
            const float one = 1.0f;
            for (uint64_t j = 0; j < t[i].ne0 && !bad; j++)
                bad = put(f, &one, 4);
        } else {
            shape_rng r = gguf_stream(s, &t[i]);
            bad = put_q8_tensor(f, t[i].ne0 * t[i].ne1, &r);
        }
        bad |= put_zeros(f, align_up(bytes) - bytes);
    }
    free(t);
    return bad ? -1 : 0;
}

uint64_t shape_gguf_bytes(const shape *s)
{
    gguf_tensor *t = malloc(sizeof *t * (size_t)(3 + 9 * s->n_layers));
    char *mem = NULL;
    size_t head = 0;
    FILE *f = open_memstream(&mem, &head);
    int n = 0;
    uint64_t bytes = 0;
    bool ok = t && f && put_head(f, s, t, &n) == 0;
    if (f)
        fclose(f); /* sets head */
    if (ok) {
        bytes = align_up(head);
        for (int i = 0; i < n; i++)
            bytes += align_up(tensor_bytes(&t[i]));
    }
    free(mem);
    free(t);
    return bytes;
}

int shape_write_gguf(const shape *s, const char *path, char *err, size_t err_size)
{
    return shape_write_file(s, path, shape_gguf_bytes(s), write_gguf, err, err_size);
}
