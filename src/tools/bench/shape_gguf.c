/* bench/shape_gguf.c — writes a bench shape as a GGUF file with Q8_0 tensors (through
 * the core's GGUF writer, gguf.h), for llmchat --format gguf and for other engines
 * (llama.cpp's llama-bench) to time the same model (see bench/shapes.h).
 *
 * Metadata: the llama architecture, the shape, and a Llama-style vocabulary of
 * placeholder pieces (<unk>, <s>, </s>, the 256 byte tokens, then "▁t<id>"). The int8
 * values of each Q8_0 block are the ones the llama2.c file of the same shape holds (the
 * same random stream), with the half-precision of that file's group scale, so both
 * files hold the same weights up to the scale's rounding. Owns nothing once it
 * returns. */
#define _GNU_SOURCE
#include "shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf.h"

/* Piece of token id in the placeholder vocabulary; its GGUF token type (1 normal,
 * 2 unknown, 3 control, 6 byte). */
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

static bool add_vocab(gguf_writer *w, int vocab)
{
    enum { PIECE = 16 };
    char *pieces = malloc((size_t)vocab * PIECE);
    const char **v = malloc(sizeof *v * (size_t)vocab);
    size_t *lens = malloc(sizeof *lens * (size_t)vocab);
    float *scores = malloc(sizeof *scores * (size_t)vocab);
    int32_t *types = malloc(sizeof *types * (size_t)vocab);
    bool ok = pieces && v && lens && scores && types;
    for (int i = 0; ok && i < vocab; i++) {
        v[i] = pieces + (size_t)i * PIECE;
        types[i] = vocab_piece(i, pieces + (size_t)i * PIECE, PIECE);
        lens[i] = strlen(v[i]);
        scores[i] = i < 3 + 256 ? 0.0f : -(float)i;
    }
    if (ok) {
        gguf_writer_add_string(w, "tokenizer.ggml.model", "llama");
        gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", v, lens, (uint64_t)vocab);
        gguf_writer_add_float32_array(w, "tokenizer.ggml.scores", scores, (uint64_t)vocab);
        gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, (uint64_t)vocab);
        gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", 1);
        gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", 2);
    }
    free(pieces);
    free(v);
    free(lens);
    free(scores);
    free(types);
    return ok;
}

/* One tensor of the file: its name, ggml shape (ne0 = the row length) and type, and
 * its random stream (kind and layer as shape_rng_for takes them; kind -1: a norm). */
typedef struct {
    char name[48];
    uint64_t ne0, ne1; /* ne1 = 0: a vector */
    int kind, layer;
} shape_tensor;

/* The tensors of shape s in file order, into t (room for 3 + 9 * layers); returns the
 * count. */
static int shape_tensors(const shape *s, shape_tensor *t)
{
    uint64_t d = s->dim, h = s->hidden_dim, V = s->vocab_size;
    uint64_t kv = (uint64_t)s->n_kv_heads * (d / s->n_heads);
    int n = 0;
    t[n++] = (shape_tensor){"token_embd.weight", d, V, 0, 0};
    for (int l = 0; l < s->n_layers; l++) {
        static const char *const names[9] = {"attn_norm", "attn_q", "attn_k", "attn_v",
                                              "attn_output", "ffn_norm", "ffn_gate",
                                              "ffn_down", "ffn_up"};
        /* kinds of shape_rng_for: 1-7 wq wk wv wo w1 w2 w3 */
        static const int kinds[9] = {-1, 1, 2, 3, 4, -1, 5, 6, 7};
        const uint64_t ne0[9] = {d, d, d, d, d, d, d, h, d};
        const uint64_t ne1[9] = {0, d, kv, kv, d, 0, h, d, h};
        for (int i = 0; i < 9; i++) {
            shape_tensor *x = &t[n++];
            snprintf(x->name, sizeof x->name, "blk.%d.%s.weight", l, names[i]);
            x->ne0 = ne0[i];
            x->ne1 = ne1[i];
            x->kind = kinds[i];
            x->layer = l;
        }
    }
    t[n++] = (shape_tensor){"output_norm.weight", d, 0, -1, 0};
    if (!s->shared)
        t[n++] = (shape_tensor){"output.weight", d, V, 8, 0};
    return n;
}

/* A writer holding the metadata and tensor descriptions of shape s; *n and t get the
 * tensors. NULL when out of memory. */
static gguf_writer *shape_writer(const shape *s, shape_tensor *t, int *n)
{
    gguf_writer *w = gguf_writer_new(0);
    if (!w)
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "llmchat-bench %s (random weights)", s->name);
    gguf_writer_add_string(w, "general.architecture", "llama");
    gguf_writer_add_string(w, "general.name", name);
    gguf_writer_add_uint32(w, "general.file_type", 7); /* mostly Q8_0 */
    gguf_writer_add_uint32(w, "general.quantization_version", 2);
    gguf_writer_add_uint32(w, "llama.context_length", (uint32_t)s->seq_len);
    gguf_writer_add_uint32(w, "llama.embedding_length", (uint32_t)s->dim);
    gguf_writer_add_uint32(w, "llama.block_count", (uint32_t)s->n_layers);
    gguf_writer_add_uint32(w, "llama.feed_forward_length", (uint32_t)s->hidden_dim);
    gguf_writer_add_uint32(w, "llama.rope.dimension_count", (uint32_t)(s->dim / s->n_heads));
    gguf_writer_add_uint32(w, "llama.attention.head_count", (uint32_t)s->n_heads);
    gguf_writer_add_uint32(w, "llama.attention.head_count_kv", (uint32_t)s->n_kv_heads);
    gguf_writer_add_float32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_writer_add_float32(w, "llama.rope.freq_base", 10000.0f);
    gguf_writer_add_uint32(w, "llama.vocab_size", (uint32_t)s->vocab_size);
    if (!add_vocab(w, s->vocab_size)) {
        gguf_writer_free(w);
        return NULL;
    }
    *n = shape_tensors(s, t);
    for (int i = 0; i < *n; i++) {
        uint64_t dims[2] = {t[i].ne0, t[i].ne1};
        gguf_writer_add_tensor(w, t[i].name, t[i].ne1 ? GGML_TYPE_Q8_0 : GGML_TYPE_F32,
                               t[i].ne1 ? 2 : 1, dims);
    }
    return w;
}

/* Writes one Q8_0 tensor of n values: the shape's int8 stream in blocks of 32, each
 * with the scale the llama2.c file gives every group. */
static int put_q8_tensor(FILE *f, uint64_t n, shape_rng *rng)
{
    enum { BLOCKS = 4096 };
    static ggml_block_q8_0 buf[BLOCKS];
    uint16_t d = ggml_f32_to_fp16(SHAPE_WEIGHT_SCALE);
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < (uint64_t)BLOCKS * 32 ? n - done : (uint64_t)BLOCKS * 32;
        for (uint64_t b = 0; b < k / 32; b++) {
            buf[b].d = d;
            shape_rng_int8(rng, buf[b].qs, 32);
        }
        if (fwrite(buf, sizeof *buf, (size_t)(k / 32), f) != k / 32)
            return -1;
        done += k;
    }
    return 0;
}

static int write_gguf(FILE *f, const shape *s)
{
    shape_tensor *t = malloc(sizeof *t * (size_t)(3 + 9 * s->n_layers));
    int n = 0;
    gguf_writer *w = t ? shape_writer(s, t, &n) : NULL;
    int bad = !w || gguf_writer_write_header(w, f, "the model file", NULL) != LLM_OK;
    for (int i = 0; i < n && !bad; i++) {
        uint64_t values = t[i].ne0 * (t[i].ne1 ? t[i].ne1 : 1), bytes;
        if (!t[i].ne1) {
            const float one = 1.0f;
            for (uint64_t j = 0; j < values && !bad; j++)
                bad = fwrite(&one, 4, 1, f) != 1;
            bytes = 4 * values;
        } else {
            shape_rng r = shape_rng_for(s, t[i].kind, t[i].layer);
            bad = put_q8_tensor(f, values, &r);
            bytes = values / 32 * sizeof(ggml_block_q8_0);
        }
        bad = bad || gguf_writer_pad(w, f, bytes, "the model file", NULL) != LLM_OK;
    }
    gguf_writer_free(w);
    free(t);
    return bad ? -1 : 0;
}

uint64_t shape_gguf_bytes(const shape *s)
{
    shape_tensor *t = malloc(sizeof *t * (size_t)(3 + 9 * s->n_layers));
    int n = 0;
    gguf_writer *w = t ? shape_writer(s, t, &n) : NULL;
    char *mem = NULL;
    size_t head = 0;
    FILE *f = w ? open_memstream(&mem, &head) : NULL;
    bool ok = f && gguf_writer_write_header(w, f, "memory", NULL) == LLM_OK;
    if (f)
        fclose(f); /* sets head */
    uint64_t bytes = 0;
    if (ok) {
        bytes = head;
        for (int i = 0; i < n; i++) {
            uint64_t values = t[i].ne0 * (t[i].ne1 ? t[i].ne1 : 1);
            uint64_t b = t[i].ne1 ? values / 32 * sizeof(ggml_block_q8_0) : 4 * values;
            bytes += (b + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
        }
    }
    free(mem);
    gguf_writer_free(w);
    free(t);
    return bytes;
}

int shape_write_gguf(const shape *s, const char *path, char *err, size_t err_size)
{
    return shape_write_file(s, path, shape_gguf_bytes(s), write_gguf, err, err_size);
}
