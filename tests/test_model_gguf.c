/* test_model_gguf.c — the GGUF model loader: stories260K.gguf holds exactly the numbers of
 * stories260K.bin and stories260K-q8_0.gguf the int8 values of stories260K_q80.bin; every
 * decodable tensor type loads (a one-layer model built from each gguf-types/ tensor) as
 * Q8_0 and as F32 and runs; RoPE base and epsilon come from the file and change the
 * results; the classifier falls back to token_embd; progress is reported; and files
 * that are wrong for the llama architecture are refused with a message naming what is
 * wrong (architecture, missing key, rope dimensions, missing or misshapen tensor, a type
 * llmchat cannot decode, an extra tensor, NaN in a weight). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "gguf_copy.h"
#include "kernels.h"
#include "huge_pages.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* ---- helpers ---- */

static model *open_ok(const char *path, tensor_type type)
{
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    llm_status s = model_open(path, &opt, &m, &err);
    ck_assert_msg(s == LLM_OK, "%s", err.text);
    return m;
}

static void open_fails(const char *path, llm_status want, const char *says)
{
    model *m = (model *)1;
    llm_err err = {""};
    llm_status s = model_open(path, NULL, &m, &err);
    ck_assert_msg(s == want, "status %s, wanted %s (%s)", llm_status_name(s), llm_status_name(want),
                  err.text);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.text, path) && strstr(err.text, says), "message lacks \"%s\": %s", says,
                  err.text);
}

/* What to change while copying a GGUF file (see copy_gguf). */
typedef struct {
    const char *drop_key;
    const char *string_key, *string_value;   /* set (or add) a string */
    const char *float_key;                   /* set (or add) a float32 */
    float float_value;
    const char *uint_key;                    /* set (or add) a uint32 */
    uint32_t uint_value;
    const char *drop_tensor;
    const char *retype_tensor;               /* give it this type (zero data) */
    uint32_t new_type;
    const char *reshape_tensor;              /* swap its two dims */
    const char *nan_tensor;                  /* an F32 tensor: value nan_index becomes NaN */
    uint64_t nan_index;
    const char *extra_tensor;                /* add an F32 tensor of 64 values */
} gguf_edit;

/* Writes src (a GGUF file in tests/data) to dst with the edits. */
static void copy_gguf(const char *src, const char *dst, const gguf_edit *e)
{
    size_t size;
    unsigned char *buf = read_whole_file(data_path(src), &size);
    gguf *g;
    llm_err err;
    ck_assert_msg(gguf_parse(buf, size, src, &g, &err) == LLM_OK, "%s", err.text);
    gguf_writer *w = gguf_writer_new(0);
    for (uint64_t i = 0; i < gguf_kv_count(g); i++) {
        const char *key = gguf_kv_key(g, i);
        if ((e->drop_key && !strcmp(key, e->drop_key)) ||
            (e->string_key && !strcmp(key, e->string_key)) ||
            (e->float_key && !strcmp(key, e->float_key)) || (e->uint_key && !strcmp(key, e->uint_key)))
            continue;
        gguf_copy_kv(w, g, i);
    }
    if (e->string_key)
        gguf_writer_add_string(w, e->string_key, e->string_value);
    if (e->float_key)
        gguf_writer_add_float32(w, e->float_key, e->float_value);
    if (e->uint_key)
        gguf_writer_add_uint32(w, e->uint_key, e->uint_value);

    uint64_t n = gguf_tensor_count(g);
    const gguf_tensor **keep = malloc((n + 1) * sizeof *keep);
    uint64_t *bytes = malloc((n + 1) * sizeof *bytes);
    int n_keep = 0;
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (e->drop_tensor && !strcmp(t->name, e->drop_tensor))
            continue;
        uint64_t dims[4];
        memcpy(dims, t->dims, sizeof dims);
        uint32_t type = t->type;
        if (e->retype_tensor && !strcmp(t->name, e->retype_tensor))
            type = e->new_type;
        if (e->reshape_tensor && !strcmp(t->name, e->reshape_tensor)) {
            dims[0] = t->dims[1];
            dims[1] = t->dims[0];
        }
        bytes[n_keep] = gguf_writer_add_tensor(w, t->name, type, t->n_dims, dims);
        ck_assert_uint_gt(bytes[n_keep], 0);
        keep[n_keep++] = t;
    }
    if (e->extra_tensor) {
        uint64_t dims[1] = {64};
        gguf_writer_add_tensor(w, e->extra_tensor, GGML_TYPE_F32, 1, dims);
    }
    FILE *f = fopen(dst, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(gguf_writer_write_header(w, f, dst, &err) == LLM_OK);
    for (int i = 0; i < n_keep; i++) {
        const gguf_tensor *t = keep[i];
        unsigned char *data = calloc(1, bytes[i]);
        if (bytes[i] == t->bytes)
            memcpy(data, t->data, t->bytes);
        if (e->nan_tensor && !strcmp(t->name, e->nan_tensor)) {
            float nan = NAN;
            memcpy(data + 4 * e->nan_index, &nan, 4);
        }
        ck_assert_uint_eq(fwrite(data, 1, bytes[i], f), bytes[i]);
        ck_assert(gguf_writer_pad(w, f, bytes[i], dst, &err) == LLM_OK);
        free(data);
    }
    if (e->extra_tensor) {
        float zeros[64] = {0};
        ck_assert_uint_eq(fwrite(zeros, 4, 64, f), 64);
    }
    fclose(f);
    gguf_writer_free(w);
    gguf_free(g);
    free(keep);
    free(bytes);
    free(buf);
}

/* The logits of the token sequence toks (n) at its last position. */
static float *run(const model *m, const int *toks, int n)
{
    transformer *t;
    llm_err err;
    ck_assert_msg(transformer_new(m, 64, &t, &err) == LLM_OK, "%s", err.text);
    const float *logits = NULL;
    for (int i = 0; i < n; i++)
        logits = transformer_forward(t, toks[i], i, NULL);
    float *out = malloc(sizeof(float) * m->config.vocab_size);
    memcpy(out, logits, sizeof(float) * m->config.vocab_size);
    transformer_free(t);
    return out;
}

/* The logits of one token sequence on a and on b are the same bits. */
static void assert_same_logits(const model *a, const model *b)
{
    int toks[] = {1, 40, 70, 100, 200};
    float *la = run(a, toks, 5), *lb = run(b, toks, 5);
    ck_assert_int_eq(memcmp(la, lb, sizeof(float) * (size_t)a->config.vocab_size), 0);
    free(la);
    free(lb);
}

static void tensors_equal(const tensor *a, const tensor *b, const char *what)
{
    ck_assert_int_eq(a->type, b->type);
    ck_assert_int_eq(a->rows, b->rows);
    ck_assert_int_eq(a->cols, b->cols);
    ck_assert_int_eq(a->stride, b->stride);
    ck_assert_int_eq(a->group, b->group);
    if (a->type == TENSOR_F32) {
        ck_assert_msg(memcmp(a->f, b->f, sizeof(float) * (size_t)a->rows * a->stride) == 0, "%s", what);
    } else {
        ck_assert_msg(memcmp(a->q, b->q, (size_t)a->rows * a->stride) == 0, "%s: values", what);
        ck_assert_msg(memcmp(a->scale, b->scale, sizeof(float) * (size_t)a->rows * (a->stride / a->group)) == 0,
                      "%s: scales", what);
    }
}

/* ---- real files ---- */

START_TEST(test_stories_gguf_is_stories_bin)
{
    for (int pass = 0; pass < 2; pass++) {
        tensor_type type = pass == 0 ? TENSOR_F32 : TENSOR_Q8_0;
        model *g = open_ok(data_path("stories260K.gguf"), type);
        model *b = open_ok(data_path("stories260K.bin"), type);
        const model_config *c = &g->config;
        ck_assert_int_eq(g->format, MODEL_FORMAT_GGUF);
        ck_assert_str_eq(g->format_name, "GGUF v3");
        ck_assert_int_eq(c->dim, 64);
        ck_assert_int_eq(c->hidden_dim, 172);
        ck_assert_int_eq(c->n_layers, 5);
        ck_assert_int_eq(c->n_heads, 8);
        ck_assert_int_eq(c->n_kv_heads, 4);
        ck_assert_int_eq(c->vocab_size, 512);
        ck_assert_int_eq(c->seq_len, 2048); /* llama.context_length of this file */
        ck_assert_float_eq(c->rope_base, 10000.0f);
        ck_assert_float_eq(c->rms_eps, 1e-5f);
        ck_assert_float_eq(b->config.rope_base, 10000.0f);
        ck_assert_float_eq(b->config.rms_eps, 1e-5f);
        ck_assert(!c->shared_classifier); /* the file has output.weight */
        ck_assert_ptr_nonnull(g->meta);
        ck_assert_ptr_null(b->meta);
        ck_assert_int_eq(g->n_params, b->n_params + (long long)c->vocab_size * c->dim);

        tensors_equal(&g->token_embedding, &b->token_embedding, "token_embd");
        tensors_equal(&g->wcls, &b->token_embedding, "output");
        ck_assert(memcmp(g->rms_final, b->rms_final, 4 * 64) == 0);
        for (int l = 0; l < c->n_layers; l++) {
            const model_layer *x = &g->layers[l], *y = &b->layers[l];
            tensors_equal(&x->wq, &y->wq, "wq");
            tensors_equal(&x->wk, &y->wk, "wk");
            tensors_equal(&x->wv, &y->wv, "wv");
            tensors_equal(&x->wo, &y->wo, "wo");
            tensors_equal(&x->w1, &y->w1, "w1");
            tensors_equal(&x->w2, &y->w2, "w2");
            tensors_equal(&x->w3, &y->w3, "w3");
            ck_assert(memcmp(x->rms_att, y->rms_att, 4 * 64) == 0);
            ck_assert(memcmp(x->rms_ffn, y->rms_ffn, 4 * 64) == 0);
        }
        if (type == TENSOR_F32) {
            /* in place: the mapping, nothing converted */
            ck_assert_int_eq(g->owned_bytes, 0);
            const char *lo = g->map, *hi = lo + g->map_bytes;
            ck_assert((const char *)g->layers[2].w2.f >= lo && (const char *)g->layers[2].w2.f < hi);
            ck_assert_str_eq(g->weights_label, "F32");
            ck_assert_ptr_nonnull(strstr(g->load_summary, "F32 in place"));
        } else {
            ck_assert_str_eq(g->weights_label, "F32→Q8_0");
            ck_assert_ptr_nonnull(strstr(g->load_summary, "F32 → Q8_0 at load"));
        }
        model_close(g);
        model_close(b);
    }
}
END_TEST

/* stories260K-q8_0.gguf and stories260K_q80.bin hold the same int8 values; the GGUF
 * scales are the .bin's rounded to half precision. Row-aligned tensors are used in
 * place, in ggml's block layout; ffn_down (rows of 172) straddles blocks and is
 * quantized again. */
START_TEST(test_stories_q8_0_gguf)
{
    model *g = open_ok(data_path("stories260K-q8_0.gguf"), TENSOR_Q8_0);
    model *b = open_ok(data_path("stories260K_q80.bin"), TENSOR_Q8_0);
    model *gf = open_ok(data_path("stories260K-q8_0.gguf"), TENSOR_F32);
    ck_assert_str_eq(g->format_name, "GGUF v2");
    ck_assert_int_eq(g->config.seq_len, 512);
    ck_assert_str_eq(g->weights_label, "Q8_0");
    ck_assert_ptr_nonnull(strstr(g->load_summary, "Q8_0 in place"));
    const char *lo = g->map, *hi = lo + g->map_bytes;
    for (int l = 0; l < 5; l++) {
        const tensor *pairs[][2] = {{&g->layers[l].wq, &b->layers[l].wq}, {&g->layers[l].wk, &b->layers[l].wk},
                                    {&g->layers[l].w1, &b->layers[l].w1}, {&g->layers[l].w3, &b->layers[l].w3}};
        for (int k = 0; k < 4; k++) {
            const tensor *x = pairs[k][0], *y = pairs[k][1];
            ck_assert_int_eq(x->type, TENSOR_Q8_0_BLOCKS);
            ck_assert_int_eq(x->group, 32);
            ck_assert_int_eq(x->stride, x->cols);
            ck_assert((const char *)x->blocks >= lo && (const char *)x->blocks < hi);
            for (int r = 0; r < x->rows; r++)
                for (int g32 = 0; g32 < x->cols / 32; g32++) {
                    const uint8_t *blk = tensor_block(x, r, g32);
                    int s = r * (x->cols / 32) + g32;
                    ck_assert(memcmp(quant_block_values(blk), y->q + (size_t)s * 32, 32) == 0);
                    float xs = quant_block_scale(blk);
                    ck_assert_msg(fabsf(xs - y->scale[s]) <= fabsf(y->scale[s]) * 0x1p-11f,
                                  "layer %d scale %d: %g vs %g", l, s, xs, y->scale[s]);
                }
        }
        /* ffn_down: each row within half a step of the file's own values */
        const tensor *w2 = &g->layers[l].w2, *w2f = &gf->layers[l].w2;
        ck_assert_int_eq(w2->stride, 192);
        float q[192], f[192];
        for (int r = 0; r < w2->rows; r++) {
            quant_dequantize_row(q, w2, r);
            quant_dequantize_row(f, w2f, r);
            float amax = 0;
            for (int i = 0; i < 172; i++)
                amax = fmaxf(amax, fabsf(f[i]));
            for (int i = 0; i < 172; i++)
                check_each(fabsf(q[i] - f[i]) <= amax / 127 * 0.51f, "value %d: %g, was %g", i,
                           q[i], f[i]);
        }
    }
    model_close(g);
    model_close(b);
    model_close(gf);
}
END_TEST

/* --huge-pages: on reads the file into memory of its own (2 MiB-aligned, asked for huge
 * pages) where the weights are used in place, off maps it; the loaders see the same
 * bytes, so the logits are the same bits. With the weights converted at load the file
 * is read once, so it stays mapped and only what loading makes asks for huge pages. */
START_TEST(test_huge_pages_same_bits)
{
    const char *path = data_path("rand256-q4_k_m.gguf");
    model_options opt;
    model_options_default(&opt);
    ck_assert_int_eq(opt.huge_pages, MODEL_HUGE_PAGES_AUTO);
    model *m[2] = {NULL, NULL};
    const model_huge_pages want[2] = {MODEL_HUGE_PAGES_ON, MODEL_HUGE_PAGES_OFF};
    llm_err err;
    for (int i = 0; i < 2; i++) {
        opt.huge_pages = want[i];
        ck_assert_msg(model_open(path, &opt, &m[i], &err) == LLM_OK, "%s", err.text);
    }
    ck_assert(m[0]->huge_pages && m[0]->file_read);
    ck_assert(!m[1]->huge_pages && !m[1]->file_read);
    ck_assert_uint_eq((uintptr_t)m[0]->map % HUGE_PAGE_BYTES, 0);
    ck_assert_uint_eq(m[0]->map_bytes, m[1]->map_bytes);
    ck_assert_int_eq(memcmp(m[0]->map, m[1]->map, m[0]->map_bytes), 0);
    ck_assert_int_gt(m[0]->n_native, 0);
    assert_same_logits(m[0], m[1]);
    model_close(m[0]);
    model_close(m[1]);

    opt.huge_pages = MODEL_HUGE_PAGES_ON;
    opt.weights = TENSOR_Q8_0;
    model *q = NULL;
    ck_assert_msg(model_open(path, &opt, &q, &err) == LLM_OK, "%s", err.text);
    ck_assert(q->huge_pages && !q->file_read);
    model_close(q);
}
END_TEST

/* The choice auto makes, and the names. */
START_TEST(test_huge_pages_choice)
{
    const uint64_t G = (uint64_t)1 << 30;
    ck_assert(model_huge_pages_choose(MODEL_HUGE_PAGES_ON, false, 100 * G, 0));
    ck_assert(!model_huge_pages_choose(MODEL_HUGE_PAGES_OFF, true, 1, 100 * G));
    ck_assert(model_huge_pages_choose(MODEL_HUGE_PAGES_AUTO, true, 4 * G, 8 * G));
    ck_assert(!model_huge_pages_choose(MODEL_HUGE_PAGES_AUTO, true, 4 * G + 1, 8 * G));
    ck_assert(!model_huge_pages_choose(MODEL_HUGE_PAGES_AUTO, false, 1, 8 * G)); /* not offered */
    ck_assert(!model_huge_pages_choose(MODEL_HUGE_PAGES_AUTO, true, 1, 0));     /* unknown */
    const char *names[] = {"auto", "on", "off"};
    for (int i = 0; i < 3; i++) {
        model_huge_pages h = MODEL_HUGE_PAGES_OFF;
        ck_assert(model_huge_pages_parse(names[i], &h));
        ck_assert_str_eq(model_huge_pages_name(h), names[i]);
    }
    model_huge_pages h = MODEL_HUGE_PAGES_ON;
    ck_assert(!model_huge_pages_parse("yes", &h));
    ck_assert(!model_huge_pages_parse("", &h));
    ck_assert_int_eq(h, MODEL_HUGE_PAGES_ON);
}
END_TEST

/* huge_pages_alloc: 2 MiB-aligned, writable, its length; what it reports is no more than
 * what the process holds. */
START_TEST(test_huge_pages_alloc)
{
    size_t bytes = 3 * HUGE_PAGE_BYTES + 12345;
    for (int huge = 0; huge < 2; huge++) {
        uint8_t *p = huge_pages_alloc(bytes, huge);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % HUGE_PAGE_BYTES, 0);
        memset(p, 0x5a, bytes);
        ck_assert_uint_eq(p[0], 0x5a);
        ck_assert_uint_eq(p[bytes - 1], 0x5a);
        ck_assert_uint_le(huge_pages_backing(p, bytes), bytes + HUGE_PAGE_BYTES);
        huge_pages_free(p, bytes);
    }
    if (!huge_pages_offered())
        printf("test_huge_pages_alloc: this kernel offers no transparent huge pages\n");
}
END_TEST

/* Decode panels: where the chosen kernels read them, every GGUF Q8_0 matrix used in
 * place gets panels at load (and only those: ffn_down, quantized again, does not), the
 * bytes are counted and said; --panels off (no_panels) and a table without a panel
 * kernel get none; the logits with and without agree within int8 rounding. */
START_TEST(test_panels_at_load)
{
    const char *path = data_path("stories260K-q8_0.gguf");
    model_options opt;
    model_options_default(&opt);
    opt.no_panels = true;
    model *plain = NULL, *m = open_ok(path, TENSOR_BLOCKS);
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &plain, &err) == LLM_OK, "%s", err.text);
    ck_assert_uint_eq(plain->panel_bytes, 0);
    ck_assert_ptr_null(strstr(plain->load_summary, "panels"));
    if (!kernels_panels_wanted()) {
        ck_assert_uint_eq(m->panel_bytes, 0);
        printf("test_panels_at_load: the kernels here (%s) read no panels; checked that none "
               "were packed\n", kernels_isa_name(kernels_init(KERNELS_AUTO)));
    } else {
        size_t want = 0;
        int packed = 0;
        for (int l = 0; l < m->config.n_layers; l++) {
            const model_layer *y = &m->layers[l], *z = &plain->layers[l];
            const tensor *ts[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w1, &y->w2, &y->w3};
            const tensor *zs[] = {&z->wq, &z->wk, &z->wv, &z->wo, &z->w1, &z->w2, &z->w3};
            for (int i = 0; i < 7; i++) {
                ck_assert_ptr_null(zs[i]->panels);
                ck_assert_int_eq(ts[i]->panels != NULL, ts[i]->type == TENSOR_Q8_0_BLOCKS);
                if (ts[i]->panels) {
                    want += kernels_panels_bytes(ts[i]);
                    packed++;
                }
            }
        }
        if (m->wcls.panels)
            want += kernels_panels_bytes(&m->wcls);
        ck_assert_int_eq(packed, 6 * m->config.n_layers); /* all but ffn_down */
        ck_assert_uint_eq(m->panel_bytes, want);
        ck_assert_ptr_nonnull(strstr(m->load_summary, "decode panels"));
        int toks[] = {1, 403, 407, 261, 378};
        float *a = run(m, toks, 5), *b = run(plain, toks, 5);
        float amax = 0, diff = 0;
        for (int i = 0; i < m->config.vocab_size; i++) {
            amax = fmaxf(amax, fabsf(b[i]));
            diff = fmaxf(diff, fabsf(a[i] - b[i]));
        }
        ck_assert_msg(diff > 0 || amax > 0, "no logits");
        ck_assert_msg(diff <= amax * 0.01f, "panels move the logits by %g (largest %g)", diff,
                      amax);
        free(a);
        free(b);
        /* a table without a panel kernel: none packed */
        kernels_init(KERNELS_SCALAR);
        model *s = open_ok(path, TENSOR_BLOCKS);
        ck_assert_uint_eq(s->panel_bytes, 0);
        model_close(s);
        kernels_init(KERNELS_AUTO);
    }
    model_close(m);
    model_close(plain);
}
END_TEST

static const char *write_type_model(const char *cut, const char *path);

/* The Q4_K matrices of m[0] and m[1] (opened with and without Q4_K panels): every one of
 * m[0] has panels, in place of its blocks (in_place) or in one buffer of their own, and
 * none of m[1]; returns how many, their bytes in *bytes. */
static int k4_panelled(model *const m[2], bool in_place, size_t *bytes)
{
    int packed = 0;
    *bytes = 0;
    for (int l = 0; l < m[0]->config.n_layers; l++) {
        const model_layer *y = &m[0]->layers[l], *z = &m[1]->layers[l];
        const tensor *ts[] = {&y->wq, &y->wk, &y->wv, &y->wo, &y->w1, &y->w2, &y->w3};
        const tensor *zs[] = {&z->wq, &z->wk, &z->wv, &z->wo, &z->w1, &z->w2, &z->w3};
        for (int i = 0; i < 7; i++) {
            ck_assert_ptr_null(zs[i]->panels);
            bool is_q4k = ts[i]->type == TENSOR_BLOCKS && ts[i]->btype == GGML_TYPE_Q4_K;
            ck_assert_int_eq(ts[i]->panels != NULL, is_q4k);
            if (!ts[i]->panels)
                continue;
            ck_assert_int_eq(ts[i]->panels == ts[i]->blocks, in_place);
            *bytes += kernels_panels_bytes(ts[i]);
            packed++;
        }
    }
    return packed;
}

/* Q4_K decode panels: on the AVX2 kernels a load asked for them (k4_panels: --panels on,
 * and the AVX2 table's default) holds every Q4_K matrix's whole groups of rows as panels
 * (and only those: the Q6_K ones and the embedding stay as they are), in place of their
 * blocks where the file was read in (--huge-pages on), else in a buffer of their own, the
 * mapping's pages of those rows given back; the bytes are counted apart from the Q8_0
 * panels' (which the trace records), said, and not counted again in what is resident;
 * decoded logits are the same bits with and without. A classifier shared with a Q4_K
 * embedding is packed once and the embedding reads its rows from the same panels. A
 * table without the kernel packs none. */
START_TEST(test_k4_panels_at_load)
{
    const char *path = data_path("rand256-q4_k_m.gguf");
    if (!kernels_isa_supported(KERNELS_AVX2)) {
        printf("test_k4_panels_at_load: no AVX2 here; nothing reads Q4_K panels\n");
        return;
    }
    model_options opt;
    model_options_default(&opt);
    llm_err err;
    model *m[2] = {NULL, NULL};
    kernels_init(KERNELS_AVX2);
    ck_assert(!opt.k4_panels); /* the loader's default: asked for */
    ck_assert_msg(model_open(path, &opt, &m[1], &err) == LLM_OK, "%s", err.text);
    ck_assert_uint_eq(m[1]->k4_panel_bytes, 0);
    ck_assert_ptr_null(strstr(m[1]->load_summary, "panels"));
    for (int in_place = 1; in_place >= 0; in_place--) {
        opt.k4_panels = true;
        opt.huge_pages = in_place ? MODEL_HUGE_PAGES_ON : MODEL_HUGE_PAGES_OFF;
        ck_assert_msg(model_open(path, &opt, &m[0], &err) == LLM_OK, "%s", err.text);
        ck_assert_int_eq(m[0]->file_read, in_place);
        size_t want;
        ck_assert_int_eq(k4_panelled(m, in_place, &want), 12); /* 13 Q4_K but the embedding */
        ck_assert_ptr_null(m[0]->wcls.panels); /* Q6_K */
        ck_assert_ptr_null(m[0]->token_embedding.panels);
        ck_assert_uint_eq(m[0]->k4_panel_bytes, want);
        ck_assert_uint_eq(m[0]->panel_bytes, 0);
        ck_assert_ptr_nonnull(strstr(m[0]->load_summary,
                                     in_place ? "Q4_K as decode panels, in place of their blocks"
                                              : "Q4_K as decode panels, in place of the mapped"));
        ck_assert_str_eq(m[0]->weights_size, m[1]->weights_size); /* no memory more */
        assert_same_logits(m[0], m[1]);
        model_close(m[0]);
    }
    model_close(m[1]);
    /* a classifier shared with a Q4_K embedding: one set of panels, read by both */
    const char *tied = temp_path("k4-tied.gguf");
    write_type_model("gguf-types/rand256-q4_k_m.gguf", tied);
    opt.huge_pages = MODEL_HUGE_PAGES_ON;
    for (int i = 0; i < 2; i++) {
        opt.k4_panels = i == 0;
        ck_assert_msg(model_open(tied, &opt, &m[i], &err) == LLM_OK, "%s", err.text);
    }
    ck_assert_ptr_nonnull(m[0]->wcls.panels);
    ck_assert_ptr_eq(m[0]->token_embedding.panels, m[0]->wcls.panels);
    ck_assert_ptr_eq(m[0]->wcls.panels, m[0]->wcls.blocks);
    assert_same_logits(m[0], m[1]);
    model_close(m[0]);
    model_close(m[1]);
    unlink(tied);
    /* a table without the kernel: none */
    kernels_init(KERNELS_SCALAR);
    opt.k4_panels = true;
    ck_assert_msg(model_open(path, &opt, &m[0], &err) == LLM_OK, "%s", err.text);
    ck_assert_uint_eq(m[0]->k4_panel_bytes, 0);
    model_close(m[0]);
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* A one-layer model (dim 256, every matrix the 256 x 256 tensor of a gguf-types/ file)
 * written for one type: loads as Q8_0 and F32; F32 holds exactly the decoded values, Q8_0
 * those values within half a step; both run. */
static const char *write_type_model(const char *cut, const char *path)
{
    size_t size;
    unsigned char *buf = read_whole_file(data_path(cut), &size);
    gguf *g;
    llm_err err;
    ck_assert_msg(gguf_parse(buf, size, cut, &g, &err) == LLM_OK, "%s", err.text);
    const gguf_tensor *src = gguf_find_tensor(g, "blk.0.attn_q.weight");
    ck_assert_ptr_nonnull(src);
    gguf_writer *w = gguf_writer_new(0);
    gguf_writer_add_string(w, "general.architecture", "llama");
    gguf_writer_add_uint32(w, "llama.embedding_length", 256);
    gguf_writer_add_uint32(w, "llama.feed_forward_length", 256);
    gguf_writer_add_uint32(w, "llama.block_count", 1);
    gguf_writer_add_uint32(w, "llama.attention.head_count", 4);
    gguf_writer_add_uint32(w, "llama.attention.head_count_kv", 4);
    gguf_writer_add_uint32(w, "llama.context_length", 64);
    gguf_writer_add_uint32(w, "llama.rope.dimension_count", 64);
    gguf_writer_add_float32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    const char *mats[] = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
                          "blk.0.attn_v.weight", "blk.0.attn_output.weight", "blk.0.ffn_gate.weight",
                          "blk.0.ffn_down.weight", "blk.0.ffn_up.weight"};
    const char *norms[] = {"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"};
    uint64_t dims[2] = {256, 256}, ndim[1] = {256};
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(gguf_writer_add_tensor(w, mats[i], src->type, 2, dims), src->bytes);
    for (size_t i = 0; i < 3; i++)
        gguf_writer_add_tensor(w, norms[i], GGML_TYPE_F32, 1, ndim);
    FILE *f = fopen(path, "wb");
    ck_assert(gguf_writer_write_header(w, f, path, &err) == LLM_OK);
    for (size_t i = 0; i < 8; i++) {
        ck_assert_uint_eq(fwrite(src->data, 1, src->bytes, f), src->bytes);
        gguf_writer_pad(w, f, src->bytes, path, &err);
    }
    float ones[256];
    for (int i = 0; i < 256; i++)
        ones[i] = 1.0f;
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(fwrite(ones, 4, 256, f), 256);
    fclose(f);
    gguf_writer_free(w);
    gguf_free(g);
    free(buf);
    return path;
}

START_TEST(test_every_type_loads_and_runs)
{
    static const struct {
        const char *file, *type;
    } cuts[] = {
        {"gguf-types/rand256-f16.gguf", "F16"},   {"gguf-types/rand256-bf16.gguf", "BF16"},
        {"gguf-types/rand256-q8_0.gguf", "Q8_0"}, {"gguf-types/rand256-q4_0.gguf", "Q4_0"},
        {"gguf-types/rand256-q4_1.gguf", "Q4_1"}, {"gguf-types/rand256-q5_0.gguf", "Q5_0"},
        {"gguf-types/rand256-q5_1.gguf", "Q5_1"}, {"gguf-types/rand256-q2_k.gguf", "Q2_K"},
        {"gguf-types/rand256-q3_k_m.gguf", "Q3_K"}, {"gguf-types/rand256-q4_k_m.gguf", "Q4_K"},
        {"gguf-types/rand256-q5_k_m.gguf", "Q5_K"}, {"gguf-types/rand256-q6_k.gguf", "Q6_K"},
        {"gguf-types/rand256-mxfp4.gguf", "MXFP4"},
    };
    const char *path = temp_path("type-model.gguf");
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_type_model(cuts[k].file, path);
        model *q = open_ok(path, TENSOR_Q8_0);
        model *f = open_ok(path, TENSOR_F32);
        ck_assert(q->config.shared_classifier);
        char label[32];
        snprintf(label, sizeof label, "%s→Q8_0", cuts[k].type);
        ck_assert_str_eq(q->weights_label, !strcmp(cuts[k].type, "Q8_0") ? "Q8_0" : label);
        snprintf(label, sizeof label, "%s→F32", cuts[k].type);
        ck_assert_str_eq(f->weights_label, label);
        ck_assert_msg(strstr(q->load_summary, cuts[k].type) != NULL, "%s", q->load_summary);

        /* F32: exactly the decoded values of the file's tensor */
        size_t size;
        unsigned char *buf = read_whole_file(data_path(cuts[k].file), &size);
        gguf *g;
        llm_err err;
        ck_assert(gguf_parse(buf, size, cuts[k].file, &g, &err) == LLM_OK);
        const gguf_tensor *src = gguf_find_tensor(g, "blk.0.attn_q.weight");
        float want[256], got[256], got_q[256];
        for (int r = 0; r < 256; r += 51) {
            dequant_range(src->type, src->data, (uint64_t)r * 256, want, 256);
            quant_dequantize_row(got, &f->layers[0].w2, r);
            ck_assert_msg(memcmp(want, got, sizeof want) == 0, "%s row %d", cuts[k].type, r);
            quant_dequantize_row(got_q, &q->layers[0].w2, r);
            float amax = 0;
            for (int i = 0; i < 256; i++)
                amax = fmaxf(amax, fabsf(want[i]));
            for (int i = 0; i < 256; i++)
                ck_assert_float_eq_tol(got_q[i], want[i], amax / 127 * 0.51f + 1e-12f);
        }
        gguf_free(g);
        free(buf);

        /* both run, and agree */
        int toks[] = {1, 17, 200, 3};
        float *lq = run(q, toks, 4), *lf = run(f, toks, 4);
        double diff = 0, norm = 0;
        for (int i = 0; i < 256; i++) {
            ck_assert_msg(isfinite(lq[i]) && isfinite(lf[i]), "%s: logit %d", cuts[k].type, i);
            diff += (lq[i] - lf[i]) * (lq[i] - lf[i]);
            norm += lf[i] * lf[i];
        }
        ck_assert_msg(diff <= 0.01 * norm + 1e-12, "%s: Q8_0 and F32 logits differ by %g of %g",
                      cuts[k].type, sqrt(diff), sqrt(norm));
        free(lq);
        free(lf);
        model_close(q);
        model_close(f);
    }
    remove(path);
}
END_TEST

/* A block scale that is NaN (or, for MXFP4, an exponent that makes values infinite) in
 * a matrix used in place is refused at open, naming the first such row: rows 200 and 37
 * poisoned (in their second block where they have two), row 37 named, whatever the order
 * the rows are scanned in (in parallel). */
START_TEST(test_bad_block_scales_refused)
{
    static const char *const cuts[] = {
        "gguf-types/rand256-q8_0.gguf", "gguf-types/rand256-q4_0.gguf",
        "gguf-types/rand256-q4_1.gguf", "gguf-types/rand256-q5_0.gguf",
        "gguf-types/rand256-q5_1.gguf", "gguf-types/rand256-q4_k_m.gguf",
        "gguf-types/rand256-q5_k_m.gguf", "gguf-types/rand256-q6_k.gguf",
        "gguf-types/rand256-mxfp4.gguf",
    };
    const char *path = temp_path("bad-scale-model.gguf");
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_type_model(cuts[k], path);
        size_t size;
        unsigned char *buf = read_whole_file(path, &size);
        gguf *g;
        llm_err err;
        ck_assert(gguf_parse(buf, size, path, &g, &err) == LLM_OK);
        const gguf_tensor *t = gguf_find_tensor(g, "blk.0.ffn_down.weight");
        ck_assert_ptr_nonnull(t);
        const ggml_type_info *info = ggml_type_get(t->type);
        size_t row_bytes = t->bytes / 256;
        unsigned char *data = (unsigned char *)t->data;
        int rows[] = {200, 37};
        for (int i = 0; i < 2; i++) {
            /* the row's second block where it has two (a K-quant row of 256 has one) */
            size_t second = row_bytes > info->bytes ? info->bytes : 0;
            unsigned char *blk = data + (size_t)rows[i] * row_bytes + second;
            if (t->type == GGML_TYPE_MXFP4) {
                blk[0] = 255; /* 2^127: every non-zero code overflows */
                blk[1] |= 0x02;
            } else { /* the half d: 0x7e00, a NaN */
                size_t d_at = t->type == GGML_TYPE_Q6_K ? 208 : 0;
                blk[d_at] = 0x00;
                blk[d_at + 1] = 0x7e;
            }
        }
        gguf_free(g);
        FILE *f = fopen(path, "wb");
        ck_assert_uint_eq(fwrite(buf, 1, size, f), size);
        fclose(f);
        free(buf);
        open_fails(path, LLM_ERR_NUMERIC,
                   "blk.0.ffn_down.weight holds NaN or infinite values (row 37)");
    }
    remove(path);
}
END_TEST

/* llama.rope.freq_base and the RMS epsilon come from the file and are used: position 0
 * is not rotated, so its logits stay; later positions change. */
START_TEST(test_rope_base_and_epsilon_from_file)
{
    const char *path = temp_path("rope.gguf");
    copy_gguf("stories260K.gguf", path, &(gguf_edit){.float_key = "llama.rope.freq_base", .float_value = 1e6f});
    model *base = open_ok(data_path("stories260K.gguf"), TENSOR_F32);
    model *code = open_ok(path, TENSOR_F32);
    ck_assert_float_eq(code->config.rope_base, 1e6f);
    int toks[] = {1, 403, 407};
    float *a1 = run(base, toks, 1), *b1 = run(code, toks, 1);
    ck_assert(memcmp(a1, b1, 512 * sizeof(float)) == 0);
    float *a3 = run(base, toks, 3), *b3 = run(code, toks, 3);
    ck_assert(memcmp(a3, b3, 512 * sizeof(float)) != 0);
    free(a1), free(b1), free(a3), free(b3);
    model_close(code);

    copy_gguf("stories260K.gguf", path,
              &(gguf_edit){.float_key = "llama.attention.layer_norm_rms_epsilon", .float_value = 0.5f});
    code = open_ok(path, TENSOR_F32);
    ck_assert_float_eq(code->config.rms_eps, 0.5f);
    a1 = run(base, toks, 1), b1 = run(code, toks, 1);
    ck_assert(memcmp(a1, b1, 512 * sizeof(float)) != 0);
    free(a1), free(b1);
    model_close(code);
    model_close(base);
    remove(path);
}
END_TEST

/* Without output.weight the classifier is the token embedding. */
START_TEST(test_shared_classifier)
{
    const char *path = temp_path("shared.gguf");
    copy_gguf("stories260K.gguf", path, &(gguf_edit){.drop_tensor = "output.weight"});
    model *m = open_ok(path, TENSOR_Q8_0);
    ck_assert(m->config.shared_classifier);
    ck_assert_ptr_eq(m->wcls.q, m->token_embedding.q);
    model *b = open_ok(data_path("stories260K.bin"), TENSOR_Q8_0);
    ck_assert_int_eq(m->n_params, b->n_params);
    int toks[] = {1, 403, 407, 261};
    float *x = run(m, toks, 4), *y = run(b, toks, 4);
    ck_assert(memcmp(x, y, 512 * sizeof(float)) == 0);
    free(x), free(y);
    model_close(m);
    model_close(b);
    remove(path);
}
END_TEST

static uint64_t progress_last, progress_total;
static int progress_calls, progress_backwards;

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    progress_backwards += done < progress_last;
    progress_last = done;
    progress_total = total;
    progress_calls++;
}

START_TEST(test_progress)
{
    model_options opt;
    model_options_default(&opt);
    opt.progress = on_progress;
    model *m;
    llm_err err;
    /* below the size threshold: no reports */
    ck_assert(model_open(data_path("stories260K.gguf"), &opt, &m, &err) == LLM_OK);
    model_close(m);
    ck_assert_int_eq(progress_calls, 0);
    opt.progress_min_bytes = 0;
    ck_assert(model_open(data_path("stories260K.gguf"), &opt, &m, &err) == LLM_OK);
    model_close(m);
    ck_assert_int_ge(progress_calls, 37); /* one per matrix at least */
    ck_assert_int_eq(progress_backwards, 0);
    ck_assert_uint_eq(progress_last, progress_total);
    ck_assert_uint_gt(progress_total, 0);
}
END_TEST

/* ---- files the loader refuses ---- */

START_TEST(test_refused_files)
{
    const char *path = temp_path("refused.gguf");
    const struct {
        gguf_edit edit;
        llm_status status;
        const char *says;
    } cases[] = {
        {{.string_key = "general.architecture", .string_value = "falcon"}, LLM_ERR_FORMAT,
         "architecture 'falcon' is not supported"},
        {{.drop_key = "general.architecture"}, LLM_ERR_FORMAT, "no general.architecture"},
        {{.drop_key = "llama.block_count"}, LLM_ERR_FORMAT, "llama.block_count is missing"},
        {{.string_key = "llama.block_count", .string_value = "5"}, LLM_ERR_FORMAT,
         "llama.block_count is a string"},
        {{.uint_key = "llama.rope.dimension_count", .uint_value = 4}, LLM_ERR_FORMAT,
         "llama.rope.dimension_count is 4, but the head size is 8"},
        {{.uint_key = "llama.attention.head_count", .uint_value = 7}, LLM_ERR_FORMAT,
         "not a multiple of n_heads 7"},
        {{.uint_key = "llama.expert_count", .uint_value = 8}, LLM_ERR_FORMAT,
         "llama.expert_used_count is missing: a mixture of experts must say how many"},
        {{.string_key = "llama.rope.scaling.type", .string_value = "dynamic"}, LLM_ERR_FORMAT,
         "RoPE scaling 'dynamic' (factor 1) is not supported"},
        {{.float_key = "llama.rope.freq_base", .float_value = -1.0f}, LLM_ERR_FORMAT,
         "llama.rope.freq_base is not a positive number"},
        /* values that load but would compute nonsense: an infinite RoPE scale (uniform
         * attention), positions that do not turn, a norm that flattens everything */
        {{.float_key = "llama.rope.scaling.factor", .float_value = 1e-45f}, LLM_ERR_FORMAT,
         "llama.rope.scaling.factor is 1.4013e-45, not a plausible RoPE scaling factor (0.001 to 1000)"},
        {{.float_key = "llama.rope.scaling.factor", .float_value = 1e7f}, LLM_ERR_FORMAT,
         "not a plausible RoPE scaling factor"},
        {{.float_key = "llama.rope.freq_base", .float_value = 1.0f}, LLM_ERR_FORMAT,
         "llama.rope.freq_base is 1, not a plausible RoPE base (2 to 1e+12)"},
        {{.float_key = "llama.attention.layer_norm_rms_epsilon", .float_value = 3.0f}, LLM_ERR_FORMAT,
         "layer_norm_rms_epsilon is 3, not a plausible RMSNorm epsilon (1e-12 to 1)"},
        {{.float_key = "llama.attention.layer_norm_rms_epsilon", .float_value = 1e-30f}, LLM_ERR_FORMAT,
         "not a plausible RMSNorm epsilon"},
        {{.drop_tensor = "blk.3.ffn_up.weight"}, LLM_ERR_FORMAT, "blk.3.ffn_up.weight is missing"},
        {{.drop_tensor = "token_embd.weight"}, LLM_ERR_FORMAT, "token_embd.weight is missing"},
        {{.reshape_tensor = "blk.1.ffn_down.weight"}, LLM_ERR_FORMAT,
         "blk.1.ffn_down.weight has dims [64, 172], expected [172, 64]"},
        {{.retype_tensor = "blk.2.attn_v.weight", .new_type = GGML_TYPE_IQ4_NL}, LLM_ERR_FORMAT,
         "blk.2.attn_v.weight is of type IQ4_NL, which llmchat cannot decode"},
        /* 64 x 64 values are 16 Q8_K blocks: a well-formed file of a type not decoded */
        {{.retype_tensor = "blk.0.attn_q.weight", .new_type = GGML_TYPE_Q8_K}, LLM_ERR_FORMAT,
         "blk.0.attn_q.weight is of type Q8_K, which llmchat cannot decode"},
        {{.extra_tensor = "blk.0.attn_q.bias"}, LLM_ERR_FORMAT,
         "blk.0.attn_q.bias is not part of the llama architecture"},
        {{.nan_tensor = "blk.2.ffn_norm.weight", .nan_index = 5}, LLM_ERR_NUMERIC,
         "blk.2.ffn_norm.weight holds a NaN"},
        {{.nan_tensor = "blk.1.attn_k.weight", .nan_index = 70}, LLM_ERR_NUMERIC,
         "blk.1.attn_k.weight holds NaN or infinite values (row 1)"},
        {{.nan_tensor = "output.weight", .nan_index = 64 * 300}, LLM_ERR_NUMERIC,
         "output.weight holds NaN"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        copy_gguf("stories260K.gguf", path, &cases[k].edit);
        open_fails(path, cases[k].status, cases[k].says);
    }
    /* a vocabulary without tensors is not a model */
    open_fails(data_path("ggml-vocab-llama-spm.gguf"), LLM_ERR_FORMAT, "token_embd.weight is missing");
    remove(path);
}
END_TEST

static Suite *model_gguf_suite(void)
{
    Suite *s = suite_create("model_gguf");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_stories_gguf_is_stories_bin);
    tcase_add_test(core, test_stories_q8_0_gguf);
    tcase_add_test(core, test_panels_at_load);
    tcase_add_test(core, test_k4_panels_at_load);
    tcase_add_test(core, test_huge_pages_same_bits);
    tcase_add_test(core, test_huge_pages_choice);
    tcase_add_test(core, test_huge_pages_alloc);
    tcase_add_test(core, test_every_type_loads_and_runs);
    tcase_add_test(core, test_bad_block_scales_refused);
    tcase_add_test(core, test_rope_base_and_epsilon_from_file);
    tcase_add_test(core, test_shared_classifier);
    tcase_add_test(core, test_progress);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 120);
    tcase_add_test(limits, test_refused_files);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(model_gguf_suite)
