/* model_write.c — an open model written as GGUF or as a llama2.c checkpoint, and a
 * tokenizer as tokenizer.bin (see model_write.h). */
#define _POSIX_C_SOURCE 200809L
#include "model_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml_type.h"
#include "gguf.h"
#include "llama2c.h"
#include "model_internal.h"

/* ---- writing ---- */

/* What a writer reports its progress to: the matrices' values written, of all. */
typedef struct {
    const model_write_progress *to;
    uint64_t done, total;
} progress_state;

static void progress_add(progress_state *p, uint64_t values)
{
    p->done += values;
    if (p->to && p->to->fn)
        p->to->fn(p->to->user, p->done, p->total);
}

/* The values of m's matrices: what progress counts. */
static uint64_t matrix_values(const model *m)
{
    const model_config *c = &m->config;
    uint64_t layer = 0;
    const tensor *ts[] = {&m->layers[0].wq, &m->layers[0].wk, &m->layers[0].wv, &m->layers[0].wo,
                          &m->layers[0].w1, &m->layers[0].w2, &m->layers[0].w3};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        layer += (uint64_t)ts[i]->rows * (uint64_t)ts[i]->cols;
    uint64_t n = layer * (uint64_t)c->n_layers + (uint64_t)c->vocab_size * (uint64_t)c->dim;
    return c->shared_classifier ? n : n + (uint64_t)c->vocab_size * (uint64_t)c->dim;
}

static llm_status put(FILE *f, const void *p, size_t size, size_t n, const char *path, llm_err *err)
{
    if (n && fwrite(p, size, n, f) != n)
        return llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return LLM_OK;
}

/* ---- the model's weights, in file order ---- */

typedef enum { W_NORM, W_MATRIX } weight_kind;

typedef struct {
    char name[48];        /* GGUF name */
    weight_kind kind;
    const float *norm;    /* (dim) */
    const tensor *t;
} weight;

/* The weights of m under their GGUF names into ws (room for 3 + 9 * layers); returns
 * how many. */
static int list_weights(const model *m, weight *ws)
{
    int n = 0;
    ws[n++] = (weight){"token_embd.weight", W_MATRIX, NULL, &m->token_embedding};
    for (int l = 0; l < m->config.n_layers; l++) {
        const model_layer *y = &m->layers[l];
        const struct {
            const char *part;
            const float *norm;
            const tensor *t;
        } parts[9] = {
            {"attn_norm", y->rms_att, NULL}, {"attn_q", NULL, &y->wq},
            {"attn_k", NULL, &y->wk},        {"attn_v", NULL, &y->wv},
            {"attn_output", NULL, &y->wo},   {"ffn_norm", y->rms_ffn, NULL},
            {"ffn_gate", NULL, &y->w1},      {"ffn_down", NULL, &y->w2},
            {"ffn_up", NULL, &y->w3},
        };
        for (int i = 0; i < 9; i++) {
            weight *w = &ws[n++];
            snprintf(w->name, sizeof w->name, "blk.%d.%s.weight", l, parts[i].part);
            w->kind = parts[i].norm ? W_NORM : W_MATRIX;
            w->norm = parts[i].norm;
            w->t = parts[i].t;
        }
    }
    ws[n++] = (weight){"output_norm.weight", W_NORM, m->rms_final, NULL};
    if (!m->config.shared_classifier)
        ws[n++] = (weight){"output.weight", W_MATRIX, NULL, &m->wcls};
    return n;
}

/* The GGUF type a matrix is written in: Q8_0 when asked and its rows are whole blocks. */
static uint32_t matrix_type(const tensor *t, model_write_type type)
{
    return type == MODEL_WRITE_Q8_0 && t->cols % GGML_BLOCK_32 == 0 ? GGML_TYPE_Q8_0 : GGML_TYPE_F32;
}

/* Writes matrix t row by row in GGUF type `type`; *bytes receives the count. */
static llm_status put_matrix(FILE *f, const tensor *t, uint32_t type, const char *path,
                             uint64_t *bytes, progress_state *progress, llm_err *err)
{
    float *row = malloc(sizeof(float) * (size_t)t->cols);
    ggml_block_q8_0 *blocks = malloc(sizeof *blocks * (size_t)(t->cols / GGML_BLOCK_32 + 1));
    if (!row || !blocks) {
        free(row);
        free(blocks);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    llm_status st = LLM_OK;
    *bytes = 0;
    for (int r = 0; r < t->rows && st == LLM_OK; r++) {
        quant_dequantize_row(row, t, r);
        if (type == GGML_TYPE_Q8_0) {
            size_t n = (size_t)t->cols / GGML_BLOCK_32;
            ggml_quantize_q8_0(blocks, row, (size_t)t->cols);
            st = put(f, blocks, sizeof *blocks, n, path, err);
            *bytes += n * sizeof *blocks;
        } else {
            st = put(f, row, sizeof *row, (size_t)t->cols, path, err);
            *bytes += sizeof *row * (size_t)t->cols;
        }
        progress_add(progress, (uint64_t)t->cols);
    }
    free(row);
    free(blocks);
    return st;
}

/* ---- GGUF ---- */

typedef struct {
    const model *m;
    const tokenizer *tok;
    const char *chat_template;
    model_write_type type;
    progress_state *progress;
} gguf_job;

/* The tokenizer's pieces as GGUF spells them: spaces as "▁" (U+2581), control tokens
 * without the newlines tokenizer.bin puts around them ("\n<s>\n"). */
static void add_tokenizer(gguf_writer *w, const tokenizer *tok, bool *failed)
{
    int n = tokenizer_vocab_size(tok);
    char **pieces = calloc((size_t)n, sizeof *pieces);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    float *scores = calloc((size_t)n, sizeof *scores);
    int32_t *types = calloc((size_t)n, sizeof *types);
    bool ok = pieces && lens && scores && types;
    for (int id = 0; ok && id < n; id++) {
        const char *p = tokenizer_piece(tok, id);
        size_t len = strlen(p);
        types[id] = tokenizer_token_type(tok, id);
        scores[id] = tokenizer_score(tok, id);
        if (types[id] == 2 || types[id] == 3) {
            while (len > 0 && *p == '\n')
                p++, len--;
            while (len > 0 && p[len - 1] == '\n')
                len--;
        }
        char *out = malloc(3 * len + 1);
        if (!out) {
            ok = false;
            break;
        }
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (p[i] == ' ') {
                memcpy(out + o, "\xe2\x96\x81", 3);
                o += 3;
            } else {
                out[o++] = p[i];
            }
        }
        out[o] = '\0';
        pieces[id] = out;
        lens[id] = o;
    }
    if (ok) {
        gguf_writer_add_string(w, "tokenizer.ggml.model", "llama");
        gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", (const char *const *)pieces, lens,
                                     (uint64_t)n);
        gguf_writer_add_float32_array(w, "tokenizer.ggml.scores", scores, (uint64_t)n);
        gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, (uint64_t)n);
        gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", (uint32_t)tokenizer_bos(tok));
        gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", (uint32_t)tokenizer_eos(tok));
        gguf_writer_add_uint32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)tokenizer_unk(tok));
        gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", tokenizer_adds_bos(tok));
    }
    for (int id = 0; pieces && id < n; id++)
        free(pieces[id]);
    free(pieces);
    free(lens);
    free(scores);
    free(types);
    *failed = !ok;
}

static llm_status write_gguf_body(FILE *f, const char *path, const void *ctx, llm_err *err)
{
    const gguf_job *job = ctx;
    const model *m = job->m;
    const model_config *c = &m->config;
    weight *ws = malloc(sizeof *ws * (size_t)(3 + 9 * c->n_layers));
    gguf_writer *w = gguf_writer_new(0);
    if (!ws || !w) {
        free(ws);
        gguf_writer_free(w);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    }
    char name[256];
    snprintf(name, sizeof name, "%s", m->name);
    char *dot = strrchr(name, '.');
    if (dot && dot != name)
        *dot = '\0';
    gguf_writer_add_string(w, "general.architecture", "llama");
    gguf_writer_add_string(w, "general.name", name);
    gguf_writer_add_uint32(w, "general.file_type", job->type == MODEL_WRITE_Q8_0 ? 7 : 0);
    if (job->type == MODEL_WRITE_Q8_0)
        gguf_writer_add_uint32(w, "general.quantization_version", 2);
    gguf_writer_add_uint32(w, "llama.context_length", (uint32_t)c->seq_len);
    gguf_writer_add_uint32(w, "llama.embedding_length", (uint32_t)c->dim);
    gguf_writer_add_uint32(w, "llama.block_count", (uint32_t)c->n_layers);
    gguf_writer_add_uint32(w, "llama.feed_forward_length", (uint32_t)c->hidden_dim);
    gguf_writer_add_uint32(w, "llama.rope.dimension_count", (uint32_t)c->head_size);
    gguf_writer_add_uint32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    gguf_writer_add_uint32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    gguf_writer_add_float32(w, "llama.attention.layer_norm_rms_epsilon", c->rms_eps);
    gguf_writer_add_float32(w, "llama.rope.freq_base", c->rope_base);
    gguf_writer_add_uint32(w, "llama.vocab_size", (uint32_t)c->vocab_size);
    bool failed = false;
    add_tokenizer(w, job->tok, &failed);
    if (job->chat_template)
        gguf_writer_add_string(w, "tokenizer.chat_template", job->chat_template);

    int n = list_weights(m, ws);
    for (int i = 0; i < n; i++) {
        uint64_t dims[2];
        if (ws[i].kind == W_NORM) {
            dims[0] = (uint64_t)c->dim;
            gguf_writer_add_tensor(w, ws[i].name, GGML_TYPE_F32, 1, dims);
        } else {
            dims[0] = (uint64_t)ws[i].t->cols;
            dims[1] = (uint64_t)ws[i].t->rows;
            gguf_writer_add_tensor(w, ws[i].name, matrix_type(ws[i].t, job->type), 2, dims);
        }
    }
    llm_status st = failed ? llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path)
                           : gguf_writer_write_header(w, f, path, err);
    for (int i = 0; i < n && st == LLM_OK; i++) {
        uint64_t bytes = 0;
        if (ws[i].kind == W_NORM) {
            st = put(f, ws[i].norm, sizeof(float), (size_t)c->dim, path, err);
            bytes = sizeof(float) * (uint64_t)c->dim;
        } else {
            st = put_matrix(f, ws[i].t, matrix_type(ws[i].t, job->type), path, &bytes,
                            job->progress, err);
        }
        if (st == LLM_OK)
            st = gguf_writer_pad(w, f, bytes, path, err);
    }
    gguf_writer_free(w);
    free(ws);
    return st;
}

llm_status model_write_gguf(const model *m, const tokenizer *tok, const char *chat_template,
                            model_write_type type, output_file *out,
                            const model_write_progress *progress, llm_err *err)
{
    if (!model_arch_is_llama(&m->config))
        return llm_fail(err, LLM_ERR_ARG, "%s: a %s model%s is written as the GGUF file it "
                        "came from: llmchat-convert writes the llama architecture without "
                        "experts only", m->path, m->config.arch.name,
                        m->config.n_experts ? " with experts" : "");
    if (tokenizer_vocab_size(tok) != m->config.vocab_size)
        return llm_fail(err, LLM_ERR_MISMATCH, "the tokenizer holds %d tokens, the model %d",
                        tokenizer_vocab_size(tok), m->config.vocab_size);
    if (tokenizer_is_bpe(tok))
        return llm_fail(err, LLM_ERR_ARG, "%s: writing a byte-level BPE vocabulary (Llama 3, "
                        "SmolLM2) is not supported: the model's GGUF file is already the one to "
                        "use", m->path);
    if (m->config.rope_freqs || (m->config.rope_scale > 0.0f && m->config.rope_scale != 1.0f))
        return llm_fail(err, LLM_ERR_ARG, "%s: the model's RoPE scaling (rope_freqs.weight or "
                        "linear scaling) cannot be written yet", m->path);
    progress_state p = {progress, 0, matrix_values(m)};
    gguf_job job = {m, tok, chat_template, type, &p};
    return write_gguf_body(output_file_stream(out), output_file_target(out), &job, err);
}

/* ---- llama2.c ---- */

typedef struct {
    const model *m;
    llama2c_header h;
    progress_state *progress;
} llama2c_job;

/* The norm of part p for layer l. */
static const float *part_norm(const model *m, llama2c_part p, int l)
{
    return p == LLAMA2C_RMS_ATT ? m->layers[l].rms_att
           : p == LLAMA2C_RMS_FFN ? m->layers[l].rms_ffn : m->rms_final;
}

static llm_status write_llama2c_body(FILE *f, const char *path, const void *ctx, llm_err *err)
{
    const llama2c_job *job = ctx;
    const model *m = job->m;
    const llama2c_header *h = &job->h;
    llm_status st = llama2c_write_header(f, h, path, err);
    int n_parts;
    const llama2c_part *parts = llama2c_parts(h, &n_parts);
    for (int i = 0; i < n_parts && st == LLM_OK; i++) {
        int count = llama2c_part_per_layer(parts[i]) ? m->config.n_layers : 1;
        for (int l = 0; l < count && st == LLM_OK; l++) {
            if (!llama2c_part_is_matrix(parts[i])) {
                st = put(f, part_norm(m, parts[i], l), sizeof(float), (size_t)m->config.dim, path, err);
                continue;
            }
            const tensor *t = model_part_tensor(m, parts[i], l);
            size_t n = (size_t)t->rows * (size_t)t->cols;
            float *x = malloc(sizeof(float) * n); /* (rows, cols) the tensor in fp32 */
            if (!x)
                return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
            for (int r = 0; r < t->rows; r++)
                quant_dequantize_row(x + (size_t)r * t->cols, t, r);
            st = h->version == 2 ? llama2c_write_q8(f, x, n, h->group, path, err)
                                 : put(f, x, sizeof(float), n, path, err);
            free(x);
            progress_add(job->progress, (uint64_t)n);
        }
    }
    return st;
}

llm_status model_write_llama2c(const model *m, model_write_type type, output_file *out,
                               const model_write_progress *progress, llm_err *err)
{
    const model_config *c = &m->config;
    if (!model_arch_is_llama(c))
        return llm_fail(err, LLM_ERR_ARG, "%s: a %s model cannot be stored in a llama2.c file "
                        "(it holds dense llama models only): use its GGUF file", m->path,
                        c->arch.name);
    if (c->rope_base != 10000.0f || c->rms_eps != 1e-5f || c->rope_freqs ||
        (c->rope_scale > 0.0f && c->rope_scale != 1.0f))
        return llm_fail(err, LLM_ERR_ARG,
                        "%s: the model's RoPE base %g (or its RoPE scaling) and RMS epsilon %g "
                        "cannot be stored in a llama2.c file (it assumes 10000, no scaling and "
                        "1e-5): write GGUF instead",
                        m->path, c->rope_base, c->rms_eps);
    progress_state p = {progress, 0, matrix_values(m)};
    llama2c_job job = {m, {.version = type == MODEL_WRITE_Q8_0 ? 2 : 1, .dim = c->dim,
                           .hidden_dim = c->hidden_dim, .n_layers = c->n_layers,
                           .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
                           .vocab_size = c->vocab_size, .seq_len = c->seq_len,
                           .shared = c->shared_classifier, .group = QUANT_GROUP_DEFAULT},
                       &p};
    if (type == MODEL_WRITE_Q8_0) {
        const int64_t counts[3] = {(int64_t)c->vocab_size * c->dim, (int64_t)c->kv_dim * c->dim,
                                   (int64_t)c->hidden_dim * c->dim};
        for (int i = 0; i < 3; i++)
            if (counts[i] % QUANT_GROUP_DEFAULT != 0)
                return llm_fail(err, LLM_ERR_ARG,
                                "%s: a tensor of %lld values is not a whole number of groups of %d, "
                                "which a llama2.c int8 file needs: write --type f32 instead",
                                m->path, (long long)counts[i], (int)QUANT_GROUP_DEFAULT);
    }
    return write_llama2c_body(output_file_stream(out), output_file_target(out), &job, err);
}

static llm_status write_tokenizer_body(FILE *f, const char *path, const void *ctx, llm_err *err)
{
    const tokenizer *tok = ctx;
    int n = tokenizer_vocab_size(tok);
    uint32_t max_len = 0;
    for (int id = 0; id < n; id++) {
        size_t len = strlen(tokenizer_piece(tok, id));
        max_len = len > max_len ? (uint32_t)len : max_len;
    }
    llm_status st = put(f, &max_len, sizeof max_len, 1, path, err);
    for (int id = 0; id < n && st == LLM_OK; id++) {
        const char *p = tokenizer_piece(tok, id);
        float score = tokenizer_score(tok, id);
        int32_t len = (int32_t)strlen(p);
        if ((st = put(f, &score, sizeof score, 1, path, err)) == LLM_OK &&
            (st = put(f, &len, sizeof len, 1, path, err)) == LLM_OK)
            st = put(f, p, 1, (size_t)len, path, err);
    }
    return st;
}

llm_status model_write_tokenizer_bin(const tokenizer *tok, output_file *out, llm_err *err)
{
    return write_tokenizer_body(output_file_stream(out), output_file_target(out), tok, err);
}
