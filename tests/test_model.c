/* test_model.c — the model loader: every real model's shape against MANIFEST.tsv, the
 * tensor layouts (in place, quantized, repacked, dequantized), a v1 file converted here
 * from stories260K.bin, and crafted bad files (each must be refused with the right
 * status and a message naming the file). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "llama2c.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* ---- helpers ---- */

static void write_all(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_int_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static model *open_ok(const char *path, tensor_type type)
{
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    llm_status s = model_open(path, &opt, &m, &err);
    ck_assert_msg(s == LLM_OK, "%s", err.text);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* Opens path expecting failure with status want and a message containing the path
 * and each of the NULL-terminated fragments. */
static void open_fails(const char *path, llm_status want, ...)
{
    model *m = (model *)1;
    llm_err err;
    err.text[0] = '\0';
    llm_status s = model_open(path, NULL, &m, &err);
    ck_assert_msg(s == want, "%s: status %s, wanted %s (%s)", path, llm_status_name(s),
                  llm_status_name(want), err.text);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.text, path) != NULL, "message does not name the file: %s",
                  err.text);
    va_list ap;
    va_start(ap, want);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        ck_assert_msg(strstr(err.text, frag) != NULL, "message lacks \"%s\": %s", frag, err.text);
    va_end(ap);
}

static void put_i32(unsigned char *p, int32_t v)
{
    memcpy(p, &v, 4);
}

/* A 256-byte ak42 header (llama2c.h's encoding; the version and shared byte as given,
 * so that bad ones can be written too). */
static void ak42_header(unsigned char *h, int version, const int32_t shape[7], int shared,
                        int group)
{
    llama2c_header hd = {.version = version == 2 ? 2 : 1, .dim = shape[0], .hidden_dim = shape[1],
                         .n_layers = shape[2], .n_heads = shape[3], .n_kv_heads = shape[4],
                         .vocab_size = shape[5], .seq_len = shape[6], .shared = 1, .group = group};
    ck_assert_int_eq(llama2c_header_encode(&hd, h), LLAMA2C_AK42_HEADER_BYTES);
    put_i32(h + LLAMA2C_AT_VERSION, version);
    h[LLAMA2C_AT_SHARED] = (unsigned char)shared;
}

/* ---- real models ---- */

/* Bytes column of MANIFEST.tsv for file; -1 when absent. */
static long long manifest_bytes(const char *file, char *notes, size_t notes_cap)
{
    FILE *f = fopen(data_path("MANIFEST.tsv"), "r");
    ck_assert_msg(f != NULL, "cannot open MANIFEST.tsv");
    char line[4096];
    long long bytes = -1;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab || (size_t)(tab - line) != strlen(file) || strncmp(line, file, strlen(file)))
            continue;
        bytes = atoll(tab + 1);
        const char *last = strrchr(line, '\t');
        snprintf(notes, notes_cap, "%s", last + 1);
    }
    fclose(f);
    return bytes;
}

static const struct {
    const char *file;
    int dim, hidden, layers, heads, kv_heads, vocab, seq;
    bool shared;
    model_format format;
    int file_group;
} real_models[] = {
    {"stories260K.bin", 64, 172, 5, 8, 4, 512, 512, true, MODEL_FORMAT_LLAMA2C_V0, 0},
    {"stories260K_q80.bin", 64, 172, 5, 8, 4, 512, 512, true, MODEL_FORMAT_LLAMA2C_V2, 32},
    {"chat260K.bin", 64, 172, 5, 8, 4, 512, 512, true, MODEL_FORMAT_LLAMA2C_V0, 0},
    {"chat260K_q80.bin", 64, 172, 5, 8, 4, 512, 512, true, MODEL_FORMAT_LLAMA2C_V2, 64},
    {"aidreams260K.bin", 64, 172, 4, 4, 4, 512, 128, true, MODEL_FORMAT_LLAMA2C_V0, 0},
    {"babyllama_tok105_model5000.bin", 128, 352, 5, 8, 4, 105, 256, true,
     MODEL_FORMAT_LLAMA2C_V0, 0},
};

START_TEST(test_real_models)
{
    for (size_t i = 0; i < sizeof real_models / sizeof real_models[0]; i++) {
        char rel[256], notes[1024];
        snprintf(rel, sizeof rel, "%s", real_models[i].file);
        model *m = open_ok(data_path(rel), TENSOR_Q8_0);
        const model_config *c = &m->config;

        /* The table above, cross-checked with MANIFEST.tsv's byte count and notes. */
        long long bytes = manifest_bytes(real_models[i].file, notes, sizeof notes);
        ck_assert_msg(bytes > 0, "%s not in MANIFEST.tsv", real_models[i].file);
        ck_assert_int_eq((long long)m->file_bytes, bytes);
        const char *d = strstr(notes, "dim ");
        if (d) {
            int dim, hidden, layers, heads;
            ck_assert_int_eq(sscanf(d, "dim %d, hidden %d, %d layers, %d heads", &dim, &hidden,
                                    &layers, &heads), 4);
            ck_assert_int_eq(c->dim, dim);
            ck_assert_int_eq(c->hidden_dim, hidden);
            ck_assert_int_eq(c->n_layers, layers);
            ck_assert_int_eq(c->n_heads, heads);
            const char *v = strstr(notes, "vocab ");
            ck_assert_ptr_nonnull(v);
            ck_assert_int_eq(c->vocab_size, atoi(v + 6));
            const char *s = strstr(notes, "seq ");
            ck_assert_ptr_nonnull(s);
            ck_assert_int_eq(c->seq_len, atoi(s + 4));
            const char *kv = strstr(notes, " kv heads");
            if (kv) {
                while (kv > notes && kv[-1] >= '0' && kv[-1] <= '9')
                    kv--;
                ck_assert_int_eq(c->n_kv_heads, atoi(kv));
            }
        }
        ck_assert_int_eq(c->dim, real_models[i].dim);
        ck_assert_int_eq(c->hidden_dim, real_models[i].hidden);
        ck_assert_int_eq(c->n_layers, real_models[i].layers);
        ck_assert_int_eq(c->n_heads, real_models[i].heads);
        ck_assert_int_eq(c->n_kv_heads, real_models[i].kv_heads);
        ck_assert_int_eq(c->vocab_size, real_models[i].vocab);
        ck_assert_int_eq(c->seq_len, real_models[i].seq);
        ck_assert_int_eq(c->head_size, c->dim / c->n_heads);
        ck_assert_int_eq(c->kv_dim, c->n_kv_heads * c->head_size);
        ck_assert_int_eq(c->shared_classifier, real_models[i].shared);
        ck_assert_int_eq(m->format, real_models[i].format);
        ck_assert_int_eq(m->file_group, real_models[i].file_group);
        ck_assert_str_eq(m->name, real_models[i].file);
        ck_assert_ptr_nonnull(strstr(m->format_name, "llama2.c v"));
        ck_assert_str_eq(model_weights_name(m), "Q8_0");

        long long dim = c->dim, kv = c->kv_dim, hid = c->hidden_dim;
        long long want = c->vocab_size * dim +
                         c->n_layers * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hid * dim) +
                         dim;
        ck_assert_int_eq(m->n_params, want);
        if (c->shared_classifier) {
            ck_assert_ptr_eq(m->wcls.q, m->token_embedding.q);
            ck_assert_ptr_eq(m->wcls.scale, m->token_embedding.scale);
        }
        ck_assert_int_eq(m->wcls.rows, c->vocab_size);
        ck_assert_int_eq(m->layers[c->n_layers - 1].w2.cols, c->hidden_dim);
        ck_assert_int_eq(m->layers[c->n_layers - 1].w1.rows, c->hidden_dim);
        ck_assert_int_eq(m->layers[0].wk.rows, c->kv_dim);
        model_close(m);
    }
    model_close(NULL);
}
END_TEST

START_TEST(test_tensor_layouts)
{
    const char *f32_path = data_path("stories260K.bin");
    const char *q80_path = data_path("stories260K_q80.bin");

    /* fp32 file, F32 weights: the mapping in place, nothing owned. */
    model *f = open_ok(f32_path, TENSOR_F32);
    ck_assert_str_eq(model_weights_name(f), "F32");
    ck_assert_int_eq(f->group, 0);
    ck_assert_int_eq(f->owned_bytes, 0);
    ck_assert_ptr_eq(f->token_embedding.f, (const float *)((const char *)f->map + 28));
    ck_assert_int_eq(f->layers[0].w2.stride, 172);

    /* fp32 file, Q8_0: quantized with group 32, rows of 172 padded to 192. */
    model *q = open_ok(f32_path, TENSOR_Q8_0);
    ck_assert_int_eq(q->group, 32);
    ck_assert_int_eq(q->layers[0].w2.group, 32);
    ck_assert_int_eq(q->layers[0].w2.stride, 192);
    ck_assert_int_gt(q->owned_bytes, 0);
    for (int r = 0; r < q->layers[0].w2.rows; r++)
        for (int i = 172; i < 192; i++)
            ck_assert_int_eq(q->layers[0].w2.q[(size_t)r * 192 + i], 0);

    /* int8 file, Q8_0: row-aligned tensors in place, w2 repacked. */
    model *z = open_ok(q80_path, TENSOR_Q8_0);
    const char *lo = z->map, *hi = lo + z->map_bytes;
    const tensor *wq = &z->layers[0].wq, *w2 = &z->layers[0].w2;
    ck_assert((const char *)wq->q >= lo && (const char *)wq->q < hi);
    ck_assert((const char *)wq->scale >= lo && (const char *)wq->scale < hi);
    ck_assert((const char *)w2->q < lo || (const char *)w2->q >= hi);
    ck_assert_int_eq(wq->group, 32);
    ck_assert_int_eq(wq->stride, 64);
    ck_assert_int_eq(w2->group, 32);
    ck_assert_int_eq(w2->stride, 192);

    /* int8 file, F32: dequantized. The values of w2 (groups straddling rows) are
     * computed here straight from the file bytes: value e of the flattened tensor
     * is q[e] * scale[e / 32]. */
    model *zf = open_ok(q80_path, TENSOR_F32);
    size_t size;
    unsigned char *raw = read_whole_file(q80_path, &size);
    const model_config *c = &zf->config;
    size_t off = 256 + 4 * (2 * (size_t)c->n_layers * c->dim + c->dim);
    size_t emb = (size_t)c->vocab_size * c->dim;
    size_t per[7] = {(size_t)c->dim * c->dim, (size_t)c->kv_dim * c->dim,
                     (size_t)c->kv_dim * c->dim, (size_t)c->dim * c->dim,
                     (size_t)c->hidden_dim * c->dim, (size_t)c->dim * c->hidden_dim,
                     (size_t)c->hidden_dim * c->dim};
    off += emb + 4 * emb / 32;
    for (int k = 0; k < 5; k++)
        off += (size_t)c->n_layers * (per[k] + 4 * per[k] / 32);
    int layer = 3;
    off += (size_t)layer * (per[5] + 4 * per[5] / 32); /* w2 of layer 3 */
    const int8_t *wq8 = (const int8_t *)(raw + off);
    const unsigned char *ws = raw + off + per[5];
    float *row = malloc(sizeof(float) * c->hidden_dim);
    float *rowq = malloc(sizeof(float) * c->hidden_dim);
    float *rowf = malloc(sizeof(float) * c->hidden_dim);
    double worst_repack = 0.0, worst_vs_fp32 = 0.0;
    for (int r = 0; r < c->dim; r++) {
        quant_dequantize_row(row, &zf->layers[layer].w2, r);
        quant_dequantize_row(rowq, &z->layers[layer].w2, r);
        quant_dequantize_row(rowf, &f->layers[layer].w2, r);
        for (int i = 0; i < c->hidden_dim; i++) {
            size_t e = (size_t)r * c->hidden_dim + i;
            float s;
            memcpy(&s, ws + 4 * (e / 32), 4);
            ck_assert_float_eq(row[i], wq8[e] * s);
            worst_repack = fmax(worst_repack, fabs(rowq[i] - row[i]));
            worst_vs_fp32 = fmax(worst_vs_fp32, fabs(rowf[i] - row[i]));
        }
    }
    /* Requantizing costs at most half a step of the new scale; the file's own
     * quantization error is of the same order. Both are far below the weights. */
    ck_assert_msg(worst_repack < 0.01, "repack error %g", worst_repack);
    ck_assert_msg(worst_vs_fp32 < 0.01, "int8 vs fp32 %g", worst_vs_fp32);
    ck_assert_int_gt(zf->owned_bytes, 0);
    free(row);
    free(rowq);
    free(rowf);
    free(raw);

    /* chat260K_q80: group 64; dim-wide tensors in place with group 64. */
    model *g = open_ok(data_path("chat260K_q80.bin"), TENSOR_Q8_0);
    ck_assert_int_eq(g->file_group, 64);
    ck_assert_int_eq(g->group, 64);
    ck_assert_int_eq(g->layers[0].w1.group, 64);
    ck_assert_int_eq(g->layers[0].w2.group, 32);
    ck_assert_int_eq(g->layers[0].w2.stride, 192);

    /* A different load group for fp32 files. */
    model_options opt;
    model_options_default(&opt);
    ck_assert_int_eq(opt.weights, TENSOR_BLOCKS);
    ck_assert_int_eq(opt.group, 32);
    opt.group = 64;
    model *m64 = NULL;
    llm_err err;
    ck_assert_int_eq(model_open(f32_path, &opt, &m64, &err), LLM_OK);
    ck_assert_int_eq(m64->group, 64);
    ck_assert_int_eq(m64->layers[1].w2.stride, 192);
    ck_assert_int_eq(m64->layers[1].w2.group, 64);
    model_close(m64);

    model_close(g);
    model_close(zf);
    model_close(z);
    model_close(q);
    model_close(f);
}
END_TEST

/* Writes stories260K.bin (v0) as a v1 file; returns its path. */
static const char *write_v1_from_v0(void)
{
    size_t size;
    unsigned char *v0 = read_whole_file(data_path("stories260K.bin"), &size);
    int32_t shape[7];
    memcpy(shape, v0, sizeof shape);
    ck_assert_int_gt(shape[5], 0); /* shared classifier */
    size_t dim = shape[0], hidden = shape[1], L = shape[2], heads = shape[3], kv = shape[4],
           vocab = shape[5];
    size_t kv_dim = kv * (dim / heads);
    /* v0 order: emb, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, rope */
    const float *p = (const float *)(v0 + 28);
    const float *emb = p; p += vocab * dim;
    const float *rms_att = p; p += L * dim;
    const float *wq = p; p += L * dim * dim;
    const float *wk = p; p += L * kv_dim * dim;
    const float *wv = p; p += L * kv_dim * dim;
    const float *wo = p; p += L * dim * dim;
    const float *rms_ffn = p; p += L * dim;
    const float *w1 = p; p += L * hidden * dim;
    const float *w2 = p; p += L * dim * hidden;
    const float *w3 = p; p += L * hidden * dim;
    const float *rms_final = p;

    const char *path = temp_path("v1.bin");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char h[256];
    ak42_header(h, 1, shape, 1, 0);
    fwrite(h, 1, 256, f);
    /* v1 order: rms_att, rms_ffn, rms_final, emb, wq, wk, wv, wo, w1, w2, w3 */
    fwrite(rms_att, 4, L * dim, f);
    fwrite(rms_ffn, 4, L * dim, f);
    fwrite(rms_final, 4, dim, f);
    fwrite(emb, 4, vocab * dim, f);
    fwrite(wq, 4, L * dim * dim, f);
    fwrite(wk, 4, L * kv_dim * dim, f);
    fwrite(wv, 4, L * kv_dim * dim, f);
    fwrite(wo, 4, L * dim * dim, f);
    fwrite(w1, 4, L * hidden * dim, f);
    fwrite(w2, 4, L * dim * hidden, f);
    fwrite(w3, 4, L * hidden * dim, f);
    ck_assert_int_eq(fclose(f), 0);
    free(v0);
    return path;
}

/* Two shapes and descriptions equal field by field (not memcmp: the structs have
 * padding, whose bytes an -O0 build leaves as they come). */
static void configs_equal(const model_config *a, const model_config *b)
{
    ck_assert_int_eq(a->dim, b->dim);
    ck_assert_int_eq(a->hidden_dim, b->hidden_dim);
    ck_assert_int_eq(a->n_layers, b->n_layers);
    ck_assert_int_eq(a->n_heads, b->n_heads);
    ck_assert_int_eq(a->n_kv_heads, b->n_kv_heads);
    ck_assert_int_eq(a->vocab_size, b->vocab_size);
    ck_assert_int_eq(a->seq_len, b->seq_len);
    ck_assert_int_eq(a->head_size, b->head_size);
    ck_assert_int_eq(a->q_dim, b->q_dim);
    ck_assert_int_eq(a->kv_dim, b->kv_dim);
    ck_assert_int_eq(a->shared_classifier, b->shared_classifier);
    ck_assert(a->rope_base == b->rope_base && a->rope_scale == b->rope_scale);
    ck_assert(a->rope_attn_factor == b->rope_attn_factor && a->rms_eps == b->rms_eps);
    ck_assert_int_eq(a->rope_long_after, b->rope_long_after);
    ck_assert((a->rope_freqs == NULL) == (b->rope_freqs == NULL));
    ck_assert((a->rope_freqs_long == NULL) == (b->rope_freqs_long == NULL));
    const model_arch *x = &a->arch, *y = &b->arch;
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->rope_layout, y->rope_layout);
    ck_assert_int_eq(x->rope_dims, y->rope_dims);
    ck_assert_int_eq(x->act, y->act);
    ck_assert(x->rope_base_swa == y->rope_base_swa && x->embed_scale == y->embed_scale);
    ck_assert(x->query_scale == y->query_scale && x->attn_softcap == y->attn_softcap);
    ck_assert(x->final_softcap == y->final_softcap);
    ck_assert(x->attn_bias == y->attn_bias);
    ck_assert(x->qk_norm == y->qk_norm && x->post_norms == y->post_norms);
    ck_assert(x->fused_qkv == y->fused_qkv && x->fused_gate_up == y->fused_gate_up);
    ck_assert_int_eq(x->sliding_window, y->sliding_window);
}

START_TEST(test_v1_equals_v0)
{
    const char *v1 = write_v1_from_v0();
    for (int type = TENSOR_F32; type <= TENSOR_Q8_0; type++) {
        model *a = open_ok(data_path("stories260K.bin"), (tensor_type)type);
        model *b = open_ok(v1, (tensor_type)type);
        ck_assert_int_eq(b->format, MODEL_FORMAT_LLAMA2C_V1);
        ck_assert_str_eq(b->format_name, "llama2.c v1 (fp32)");
        ck_assert_int_eq(a->n_params, b->n_params);
        configs_equal(&a->config, &b->config);
        transformer *ta, *tb;
        llm_err err;
        ck_assert_int_eq(transformer_new(a, 16, &ta, &err), LLM_OK);
        ck_assert_int_eq(transformer_new(b, 16, &tb, &err), LLM_OK);
        int vocab = a->config.vocab_size;
        for (int pos = 0; pos < 16; pos++) {
            int token = pos == 0 ? 1 : (pos * 31) % vocab;
            const float *la = transformer_forward(ta, token, pos, NULL);
            const float *lb = transformer_forward(tb, token, pos, NULL);
            ck_assert(memcmp(la, lb, sizeof(float) * vocab) == 0);
        }
        transformer_free(ta);
        transformer_free(tb);
        model_close(a);
        model_close(b);
    }
    unlink(v1);
}
END_TEST

/* Logits of the first 12 positions of a fixed sequence, (12, vocab). */
static float *logits_of(const char *path, tensor_type type)
{
    model *m = open_ok(path, type);
    transformer *t;
    llm_err err;
    ck_assert_int_eq(transformer_new(m, 12, &t, &err), LLM_OK);
    int vocab = m->config.vocab_size;
    float *out = malloc(sizeof(float) * 12 * (size_t)vocab);
    for (int pos = 0; pos < 12; pos++) {
        const float *l = transformer_forward(t, pos == 0 ? 1 : (pos * 29) % vocab, pos, NULL);
        memcpy(out + (size_t)pos * vocab, l, sizeof(float) * vocab);
    }
    transformer_free(t);
    model_close(m);
    return out;
}

START_TEST(test_unshared_classifier)
{
    /* Each format with the classifier stored separately (a copy of the embedding)
     * gives the same logits as the shared original. */
    const char *v1 = write_v1_from_v0();
    const char *path = temp_path("unshared.bin");
    const struct {
        const char *src;
        int version;
    } cases[] = {
        {data_path("stories260K.bin"), 0},
        {v1, 1},
        {data_path("stories260K_q80.bin"), 2},
    };
    for (int c = 0; c < 3; c++) {
        size_t size;
        unsigned char *data = read_whole_file(cases[c].src, &size);
        int32_t dim, vocab;
        size_t at = cases[c].version == 0 ? 0 : 8;
        memcpy(&dim, data + at, 4);
        memcpy(&vocab, data + at + 20, 4);
        /* where the embedding is, and how many bytes it has */
        size_t emb_off, emb_bytes;
        if (cases[c].version == 0) {
            emb_off = 28;
            emb_bytes = 4 * (size_t)vocab * dim;
            put_i32(data + 20, -vocab);
        } else {
            int32_t layers;
            memcpy(&layers, data + 16, 4);
            emb_off = 256 + 4 * (2 * (size_t)layers * dim + dim);
            emb_bytes = cases[c].version == 1 ? 4 * (size_t)vocab * dim
                                              : (size_t)vocab * dim + 4 * (size_t)vocab * dim / 32;
            data[36] = 0;
        }
        unsigned char *out = malloc(size + emb_bytes);
        memcpy(out, data, size);
        memcpy(out + size, data + emb_off, emb_bytes);
        write_all(path, out, size + emb_bytes);
        for (int type = TENSOR_F32; type <= TENSOR_Q8_0; type++) {
            model *m = open_ok(path, (tensor_type)type);
            ck_assert(!m->config.shared_classifier);
            ck_assert_int_eq(m->config.vocab_size, vocab);
            ck_assert_ptr_ne(m->wcls.type == TENSOR_F32 ? (const void *)m->wcls.f
                                                        : (const void *)m->wcls.q,
                             m->token_embedding.type == TENSOR_F32
                                 ? (const void *)m->token_embedding.f
                                 : (const void *)m->token_embedding.q);
            model_close(m);
            float *a = logits_of(cases[c].src, (tensor_type)type);
            float *b = logits_of(path, (tensor_type)type);
            ck_assert_msg(memcmp(a, b, sizeof(float) * 12 * (size_t)vocab) == 0,
                          "version %d: logits differ", cases[c].version);
            free(a);
            free(b);
        }
        /* one byte short of the classifier */
        write_all(path, out, size + emb_bytes - 1);
        open_fails(path, LLM_ERR_FORMAT, "truncated?", NULL);
        free(out);
        free(data);
    }
    unlink(path);
    unlink(v1);
}
END_TEST

/* ---- crafted bad files ---- */

START_TEST(test_truncated_and_trailing)
{
    size_t size;
    unsigned char *data = read_whole_file(data_path("stories260K.bin"), &size);
    const char *path = temp_path("cut.bin");
    write_all(path, data, 1000000);
    open_fails(path, LLM_ERR_FORMAT, "1,000,000 bytes", "implies 1,056,540", "truncated?", NULL);
    unsigned char *more = malloc(size + 8);
    memcpy(more, data, size);
    memset(more + size, 0, 8);
    write_all(path, more, size + 8);
    open_fails(path, LLM_ERR_FORMAT, "1,056,548 bytes", "implies 1,056,540", "trailing data?",
               NULL);
    free(more);
    free(data);

    data = read_whole_file(data_path("stories260K_q80.bin"), &size);
    write_all(path, data, size - 1);
    open_fails(path, LLM_ERR_FORMAT, "294,815", "294,816", "truncated?", NULL);
    write_all(path, data, 300); /* header and a little */
    open_fails(path, LLM_ERR_FORMAT, "300 bytes", "294,816", NULL);
    write_all(path, data, 100); /* not even the 256-byte header */
    open_fails(path, LLM_ERR_FORMAT, "100 bytes", "256", NULL);
    free(data);
    unlink(path);
}
END_TEST

START_TEST(test_not_a_model)
{
    const char *path = temp_path("garbage.bin");
    char text[4096];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "The quick brown fox jumps over the lazy dog. "[i % 45];
    write_all(path, text, sizeof text);
    open_fails(path, LLM_ERR_FORMAT, "not a model: it starts with \"The quick brown fox",
               "(text: neither a GGUF file nor a llama2.c checkpoint)", NULL);
    const char *named = temp_path("text.gguf"); /* a .gguf that is not GGUF */
    write_all(named, text, sizeof text);
    open_fails(named, LLM_ERR_FORMAT, "a GGUF file starts with \"GGUF\"", NULL);
    unlink(named);

    uint32_t rnd = 12345;
    for (size_t i = 0; i < sizeof text; i++) {
        rnd = rnd * 1103515245u + 12345u;
        text[i] = (char)(rnd >> 16);
    }
    write_all(path, text, sizeof text);
    open_fails(path, LLM_ERR_FORMAT, "not a llama2.c model", NULL);

    /* a wrong magic ("ak43") on an otherwise good v1 header */
    unsigned char h[256];
    int32_t shape[7] = {64, 172, 5, 8, 4, 512, 512};
    ak42_header(h, 1, shape, 1, 0);
    h[0] = '3' + 1;
    write_all(path, h, sizeof h);
    open_fails(path, LLM_ERR_FORMAT, "not a llama2.c model", NULL);

    write_all(path, "", 0);
    open_fails(path, LLM_ERR_FORMAT, "0 bytes", NULL);
    write_all(path, text, 10);
    open_fails(path, LLM_ERR_FORMAT, "10 bytes", NULL);

    /* GGUF: version 1 is named as obsolete */
    open_fails(data_path("stories260K-gguf-v1-head.gguf"), LLM_ERR_FORMAT, "GGUF",
               "version 1", NULL);
    unlink(path);
}
END_TEST

START_TEST(test_missing_and_unreadable)
{
    const char *path = temp_path("does-not-exist.bin");
    unlink(path);
    open_fails(path, LLM_ERR_IO, strerror(ENOENT), NULL);
    const char *dir = temp_path("a-directory");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    open_fails(dir, LLM_ERR_IO, NULL);
    rmdir(dir);
}
END_TEST

/* Writes a v0 header with shape (and enough bytes to follow) and expects refusal. */
static void v0_shape_fails(const int32_t shape[7], const char *frag)
{
    const char *path = temp_path("shape0.bin");
    unsigned char b[1024] = {0};
    memcpy(b, shape, 28);
    write_all(path, b, sizeof b);
    open_fails(path, LLM_ERR_FORMAT, "not a llama2.c model", frag, NULL);
    unlink(path);
}

static void v1_shape_fails(const int32_t shape[7], int version, int group, const char *frag)
{
    const char *path = temp_path("shape1.bin");
    unsigned char b[1024] = {0};
    ak42_header(b, version, shape, 1, group);
    write_all(path, b, sizeof b);
    open_fails(path, LLM_ERR_FORMAT, frag, NULL);
    unlink(path);
}

START_TEST(test_absurd_shapes)
{
    const int32_t neg_dim[7] = {-64, 172, 5, 8, 4, 512, 512};
    const int32_t heads_7[7] = {64, 172, 5, 7, 7, 512, 512};
    const int32_t kv_3[7] = {64, 172, 5, 8, 3, 512, 512};
    const int32_t odd_head[7] = {72, 172, 5, 8, 4, 512, 512}; /* head size 9 */
    const int32_t huge_layers[7] = {64, 172, 1 << 30, 8, 4, 512, 512};
    const int32_t zero_seq[7] = {64, 172, 5, 8, 4, 512, 0};
    const int32_t huge_vocab[7] = {64, 172, 5, 8, 4, 1 << 30, 512};
    const int32_t min_vocab[7] = {64, 172, 5, 8, 4, INT32_MIN, 512};

    v0_shape_fails(neg_dim, "dim");
    v0_shape_fails(heads_7, "n_heads");
    v0_shape_fails(kv_3, "n_kv_heads");
    v0_shape_fails(odd_head, "head size");
    v0_shape_fails(huge_layers, "n_layers");
    v0_shape_fails(zero_seq, "seq_len");
    v0_shape_fails(huge_vocab, "vocab_size");
    v0_shape_fails(min_vocab, "vocab_size");

    v1_shape_fails(neg_dim, 1, 0, "dim");
    v1_shape_fails(heads_7, 1, 0, "n_heads");
    v1_shape_fails(kv_3, 2, 32, "n_kv_heads");
    v1_shape_fails(huge_layers, 2, 32, "n_layers");

    /* The largest accepted shape must not overflow the size arithmetic. */
    const int32_t big[7] = {65536, 1 << 20, 1024, 32768, 32768, 1 << 20, 1 << 20};
    v1_shape_fails(big, 1, 0, "1,024 bytes, but its header implies");
    v1_shape_fails(big, 2, 1024, "1,024 bytes, but its header implies");

    /* the shared-classifier flag is a boolean */
    const char *path = temp_path("flag.bin");
    unsigned char b[256];
    const int32_t ok[7] = {64, 172, 5, 8, 4, 512, 512};
    ak42_header(b, 1, ok, 7, 0);
    write_all(path, b, sizeof b);
    open_fails(path, LLM_ERR_FORMAT, "shared_classifier", NULL);
    unlink(path);
}
END_TEST

START_TEST(test_bad_version_and_group)
{
    const int32_t ok[7] = {64, 172, 5, 8, 4, 512, 512};
    v1_shape_fails(ok, 3, 0, "version 3");
    v1_shape_fails(ok, 0, 0, "version 0");
    v1_shape_fails(ok, -1, 0, "version -1");
    v1_shape_fails(ok, 2, 0, "group size 0");
    v1_shape_fails(ok, 2, -32, "group size -32");
    v1_shape_fails(ok, 2, 3, "group size 3");      /* does not divide dim * dim */
    v1_shape_fails(ok, 2, 1 << 30, "group size");  /* larger than any tensor */

    /* The int8 file with its group changed: the size no longer adds up. */
    size_t size;
    unsigned char *data = read_whole_file(data_path("stories260K_q80.bin"), &size);
    put_i32(data + 37, 64);
    const char *path = temp_path("group.bin");
    write_all(path, data, size);
    open_fails(path, LLM_ERR_FORMAT, "294,816 bytes", "implies", NULL);
    free(data);
    unlink(path);
}
END_TEST

START_TEST(test_bad_options)
{
    model_options opt;
    model_options_default(&opt);
    model *m = (model *)1;
    llm_err err;
    opt.group = 48;
    ck_assert_int_eq(model_open(data_path("stories260K.bin"), &opt, &m, &err),
                     LLM_ERR_ARG);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err.text, "48"));
    opt.group = 2048;
    ck_assert_int_eq(model_open(data_path("stories260K.bin"), &opt, &m, &err),
                     LLM_ERR_ARG);
    opt.group = 0; /* 0 means the default */
    ck_assert_int_eq(model_open(data_path("stories260K.bin"), &opt, &m, &err), LLM_OK);
    ck_assert_int_eq(m->group, QUANT_GROUP_DEFAULT);
    model_close(m);
    /* NULL options are the defaults */
    ck_assert_int_eq(model_open(data_path("stories260K.bin"), NULL, &m, &err), LLM_OK);
    ck_assert_int_eq(m->weights, TENSOR_Q8_0);
    model_close(m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("model");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_real_models);
    tcase_add_test(core, test_tensor_layouts);
    tcase_add_test(core, test_v1_equals_v0);
    tcase_add_test(core, test_unshared_classifier);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 60);
    tcase_add_test(limits, test_truncated_and_trailing);
    tcase_add_test(limits, test_not_a_model);
    tcase_add_test(limits, test_missing_and_unreadable);
    tcase_add_test(limits, test_absurd_shapes);
    tcase_add_test(limits, test_bad_version_and_group);
    tcase_add_test(limits, test_bad_options);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
