/* test_forward.c — the one forward pass: a batch against one token at a time (the same
 * bits on the same kernels), every hook point firing on both with the right
 * shapes and the same values, the interventions through both, and the fields of the
 * model description against a plain double-precision reference written here.
 *
 * The description's fields are exercised on toy models of random fp32 weights built in
 * memory (the families that set them from GGUF files are test_model_family's and
 * e2e_families'): each field on its own and all at once, with a head size apart from
 * dim / n_heads, grouped-query attention and windows shorter than the batch. The
 * interventions are tested through their editors (knock_out.c, control_vectors.c,
 * expert_knock_out.c, expert_force.c). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attribution.h"
#include "control_vectors.h"
#include "expert_force.h"
#include "expert_knock_out.h"
#include "family_gguf.h"
#include "hook.h"
#include "knock_out.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* ---- models ---- */

static model *open_model(const char *rel, tensor_type type)
{
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(data_path(rel), &opt, &m, &err) == LLM_OK, "%s", err.text);
    return m;
}

static transformer *new_transformer(const model *m, int ctx, transformer_kv kv)
{
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, ctx, kv, &t, &err) == LLM_OK, "%s", err.text);
    return t;
}

/* A model of random fp32 weights in memory, with the description's optional tensors. */
enum { TOY_LAYERS = 3, TOY_ARRAYS = 64 };
typedef struct {
    model m;
    model_layer layers[TOY_LAYERS];
    float *arrays[TOY_ARRAYS];
    int n_arrays;
    uint32_t seed;
} toy;

static float toy_random(toy *t)
{
    t->seed = t->seed * 1664525u + 1013904223u;
    return (float)(t->seed >> 8) / (float)(1 << 24) * 2.0f - 1.0f; /* [-1, 1) */
}

static float *toy_array(toy *t, size_t n, float base, float spread)
{
    ck_assert_int_lt(t->n_arrays, TOY_ARRAYS);
    float *a = malloc(sizeof(float) * n);
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < n; i++)
        a[i] = base + spread * toy_random(t);
    t->arrays[t->n_arrays++] = a;
    return a;
}

static tensor toy_matrix(toy *t, int rows, int cols)
{
    const float *f = toy_array(t, (size_t)rows * cols, 0.0f, 1.7f / sqrtf((float)cols));
    return (tensor){.type = TENSOR_F32, .rows = rows, .cols = cols, .stride = cols, .f = f};
}

/* A toy of the given shape whose description is arch (its flags decide the optional
 * tensors); `windows` sets the window of layers 0 and 2 to arch.sliding_window. */
static toy *toy_new(int dim, int hidden, int heads, int kv_heads, int head_size,
                    const model_arch *arch, bool windows)
{
    toy *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    t->seed = 7;
    model_config *c = &t->m.config;
    *c = (model_config){.dim = dim, .hidden_dim = hidden, .n_layers = TOY_LAYERS,
                        .n_heads = heads, .n_kv_heads = kv_heads, .vocab_size = 97,
                        .seq_len = 64, .head_size = head_size, .q_dim = heads * head_size,
                        .kv_dim = kv_heads * head_size, .arch = *arch, .rope_base = 10000.0f,
                        .rope_scale = 1.0f, .rms_eps = 1e-5f};
    t->m.name = "toy";
    t->m.layers = t->layers;
    for (int l = 0; l < TOY_LAYERS; l++) {
        model_layer *L = &t->layers[l];
        L->rms_att = toy_array(t, dim, 1.0f, 0.2f);
        L->rms_ffn = toy_array(t, dim, 1.0f, 0.2f);
        L->wq = toy_matrix(t, c->q_dim, dim);
        L->wk = toy_matrix(t, c->kv_dim, dim);
        L->wv = toy_matrix(t, c->kv_dim, dim);
        L->wo = toy_matrix(t, dim, c->q_dim);
        L->w1 = toy_matrix(t, hidden, dim);
        L->w2 = toy_matrix(t, dim, hidden);
        L->w3 = toy_matrix(t, hidden, dim);
        if (arch->attn_bias) {
            L->bq = toy_array(t, c->q_dim, 0.0f, 0.5f);
            L->bk = toy_array(t, c->kv_dim, 0.0f, 0.5f);
            L->bv = toy_array(t, c->kv_dim, 0.0f, 0.5f);
        }
        if (arch->qk_norm) {
            L->q_norm = toy_array(t, head_size, 1.0f, 0.3f);
            L->k_norm = toy_array(t, head_size, 1.0f, 0.3f);
        }
        if (arch->post_norms) {
            L->post_attn_norm = toy_array(t, dim, 1.0f, 0.3f);
            L->post_ffn_norm = toy_array(t, dim, 1.0f, 0.3f);
        }
        L->window = windows && l != 1 ? arch->sliding_window : 0;
    }
    model_layers_default(&t->m);
    t->m.rms_final = toy_array(t, dim, 1.0f, 0.2f);
    t->m.token_embedding = toy_matrix(t, c->vocab_size, dim);
    t->m.wcls = toy_matrix(t, c->vocab_size, dim);
    return t;
}

static void toy_free(toy *t)
{
    for (int i = 0; i < t->n_arrays; i++)
        free(t->arrays[i]);
    free(t);
}

/* ---- the reference: the description's math, plainly, in double ---- */

typedef struct {
    const model *m;
    const float *steer;          /* (n_layers, dim) or NULL */
    const unsigned char *mask;   /* (n_layers, n_heads) or NULL */
    double *k, *v;               /* (n_layers, seq_len, kv_dim) */
    int ctx;                     /* the context the pass runs with (LongRoPE's choice) */
} ref;

static void ref_norm(double *o, const double *x, const float *w, int n, double eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double s = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        o[i] = w[i] * x[i] * s;
}

/* o (w->rows) = w · x + bias */
static void ref_matvec(double *o, const tensor *w, const double *x, const float *bias)
{
    float *row = malloc(sizeof(float) * w->cols);
    for (int r = 0; r < w->rows; r++) {
        quant_dequantize_row(row, w, r);
        double s = bias ? bias[r] : 0.0;
        for (int j = 0; j < w->cols; j++)
            s += (double)row[j] * x[j];
        o[r] = s;
    }
    free(row);
}

/* RoPE of one head v at pos: a windowed layer with its own base turns by that base
 * alone; the others divide each pair's frequency by its factor (rope_freqs, or
 * LongRoPE's long ones in a context longer than rope_long_after) and scale cos and
 * sin by the attention factor. */
static void ref_rope(double *v, int pos, const model_config *c, bool windowed, int ctx)
{
    const model_arch *a = &c->arch;
    bool swa = windowed && a->rope_base_swa > 0.0f;
    double base = swa ? a->rope_base_swa : c->rope_base, scale = swa ? 1.0 : c->rope_scale;
    const float *factors = swa ? NULL
                           : c->rope_freqs_long && ctx > c->rope_long_after ? c->rope_freqs_long
                                                                          : c->rope_freqs;
    double mag = swa || c->rope_attn_factor <= 0.0f ? 1.0 : c->rope_attn_factor;
    int half = a->rope_dims / 2;
    for (int i = 0; i < half; i++) {
        double angle = pos * scale / pow(base, 2.0 * i / a->rope_dims) / (factors ? factors[i] : 1.0);
        int i0 = a->rope_layout == MODEL_ROPE_PAIRS ? 2 * i : i;
        int i1 = a->rope_layout == MODEL_ROPE_PAIRS ? 2 * i + 1 : i + half;
        double x0 = v[i0], x1 = v[i1];
        v[i0] = mag * (x0 * cos(angle) - x1 * sin(angle));
        v[i1] = mag * (x0 * sin(angle) + x1 * cos(angle));
    }
}

static double ref_act(model_activation act, double g)
{
    if (act == MODEL_ACT_SILU)
        return g / (1.0 + exp(-g));
    return 0.5 * g * (1.0 + tanh(sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
}

/* Head h's output at layer l for query q at position pos (keys 0..pos cached). */
static void ref_head(const ref *r, int l, int h, int pos, const double *q, double *out)
{
    const model_config *c = &r->m->config;
    int hs = c->head_size, kh = h / (c->n_heads / c->n_kv_heads), w = r->m->layers[l].window;
    int first = w > 0 && pos >= w ? pos - w + 1 : 0;
    double *s = malloc(sizeof(double) * (pos + 1)), top = -INFINITY, sum = 0.0;
    for (int j = first; j <= pos; j++) {
        const double *k = r->k + ((size_t)l * c->seq_len + j) * c->kv_dim + (size_t)kh * hs;
        double d = 0.0;
        for (int i = 0; i < hs; i++)
            d += q[i] * k[i];
        d *= c->arch.query_scale;
        if (c->arch.attn_softcap != 0.0f)
            d = c->arch.attn_softcap * tanh(d / c->arch.attn_softcap);
        s[j] = d;
        top = fmax(top, d);
    }
    for (int j = first; j <= pos; j++)
        sum += (s[j] = exp(s[j] - top));
    memset(out, 0, sizeof(double) * hs);
    for (int j = first; j <= pos; j++) {
        const double *v = r->v + ((size_t)l * c->seq_len + j) * c->kv_dim + (size_t)kh * hs;
        for (int i = 0; i < hs; i++)
            out[i] += s[j] / sum * v[i];
    }
    free(s);
}

/* x += post_norm(y) (or y) */
static void ref_residual(double *x, double *y, const float *post, const model_config *c)
{
    if (post)
        ref_norm(y, y, post, c->dim, c->rms_eps);
    for (int i = 0; i < c->dim; i++)
        x[i] += y[i];
}

static void ref_token(ref *r, int token, int pos, float *logits)
{
    const model *m = r->m;
    const model_config *c = &m->config;
    int dim = c->dim, hs = c->head_size;
    size_t big = (size_t)(c->hidden_dim > c->q_dim ? c->hidden_dim : c->q_dim) + dim;
    double *x = malloc(sizeof(double) * dim), *xn = malloc(sizeof(double) * dim);
    double *q = malloc(sizeof(double) * c->q_dim), *o = malloc(sizeof(double) * c->q_dim);
    double *g = malloc(sizeof(double) * big), *u = malloc(sizeof(double) * big);
    double *y = malloc(sizeof(double) * big);
    float *row = malloc(sizeof(float) * dim);
    quant_dequantize_row(row, &m->token_embedding, token);
    for (int i = 0; i < dim; i++)
        x[i] = (double)row[i] * c->arch.embed_scale;
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        double *k = r->k + ((size_t)l * c->seq_len + pos) * c->kv_dim;
        double *v = r->v + ((size_t)l * c->seq_len + pos) * c->kv_dim;
        ref_norm(xn, x, L->rms_att, dim, c->rms_eps);
        ref_matvec(q, &L->wq, xn, L->bq);
        ref_matvec(k, &L->wk, xn, L->bk);
        ref_matvec(v, &L->wv, xn, L->bv);
        for (int h = 0; h < c->n_heads; h++) {
            if (L->q_norm)
                ref_norm(q + h * hs, q + h * hs, L->q_norm, hs, c->rms_eps);
            ref_rope(q + h * hs, pos, c, L->window > 0, r->ctx);
        }
        for (int h = 0; h < c->n_kv_heads; h++) {
            if (L->k_norm)
                ref_norm(k + h * hs, k + h * hs, L->k_norm, hs, c->rms_eps);
            ref_rope(k + h * hs, pos, c, L->window > 0, r->ctx);
        }
        for (int h = 0; h < c->n_heads; h++) {
            ref_head(r, l, h, pos, q + h * hs, o + h * hs);
            if (r->mask && r->mask[l * c->n_heads + h])
                memset(o + h * hs, 0, sizeof(double) * hs);
        }
        ref_matvec(y, &L->wo, o, NULL);
        ref_residual(x, y, L->post_attn_norm, c);
        ref_norm(xn, x, L->rms_ffn, dim, c->rms_eps);
        ref_matvec(g, &L->w1, xn, NULL);
        ref_matvec(u, &L->w3, xn, NULL);
        for (int i = 0; i < c->hidden_dim; i++)
            g[i] = ref_act(c->arch.act, g[i]) * u[i];
        ref_matvec(y, &L->w2, g, NULL);
        ref_residual(x, y, L->post_ffn_norm, c);
        for (int i = 0; r->steer && i < dim; i++)
            x[i] += r->steer[(size_t)l * dim + i];
    }
    ref_norm(xn, x, m->rms_final, dim, c->rms_eps);
    ref_matvec(g, &m->wcls, xn, NULL);
    for (int i = 0; i < c->vocab_size; i++) {
        double z = g[i];
        if (c->arch.final_softcap != 0.0f)
            z = c->arch.final_softcap * tanh(z / c->arch.final_softcap);
        logits[i] = (float)z;
    }
    free(x);
    free(xn);
    free(q);
    free(o);
    free(g);
    free(u);
    free(y);
    free(row);
}

/* logits (n, vocab) of the reference over ids at positions 0..n-1, in a context of n. */
static void ref_run(const model *m, const float *steer, const unsigned char *mask, const int *ids,
                    int n, float *logits)
{
    const model_config *c = &m->config;
    size_t cache = (size_t)c->n_layers * c->seq_len * c->kv_dim;
    ref r = {.m = m, .steer = steer, .mask = mask, .k = calloc(cache, sizeof(double)),
             .v = calloc(cache, sizeof(double)), .ctx = n};
    for (int p = 0; p < n; p++)
        ref_token(&r, ids[p], p, logits + (size_t)p * c->vocab_size);
    free(r.k);
    free(r.v);
}

/* ---- running the pass both ways ---- */

static void make_ids(int *ids, int n, int vocab)
{
    for (int i = 0; i < n; i++)
        ids[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
}

/* logits (n, vocab) one token at a time. */
static void run_tokens(transformer *t, const int *ids, int n, float *logits)
{
    int vocab = transformer_model(t)->config.vocab_size;
    for (int p = 0; p < n; p++) {
        const float *l = transformer_forward(t, ids[p], p, NULL);
        ck_assert_ptr_nonnull(l);
        memcpy(logits + (size_t)p * vocab, l, sizeof(float) * vocab);
    }
}

/* logits (n, vocab) as one batch call (in chunks when n is more than a chunk). */
static void run_batch(transformer *t, const int *ids, int n, float *logits)
{
    ck_assert_ptr_nonnull(transformer_forward_batch(t, ids, n, 0, logits, NULL));
}

/* The largest |a - b| over n values, as a share of a's range. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    float lo = a[0], hi = a[0];
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        lo = fminf(lo, a[i]);
        hi = fmaxf(hi, a[i]);
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / fmax(hi - lo, 1e-30);
}

static int omp_procs(void)
{
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

static void set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* ---- batch against one token ---- */

/* logits (n, vocab) of tokens run one at a time on the batch kernels. */
static void run_tokens_batch_kernels(transformer *t, const int *ids, int n, float *logits)
{
    int vocab = transformer_model(t)->config.vocab_size;
    for (int p = 0; p < n; p++)
        ck_assert_ptr_nonnull(transformer_run(t, &ids[p], 1, p, TRANSFORMER_KERNELS_BATCH,
                                              logits + (size_t)p * vocab, NULL));
}

/* The kernels decide a position's numbers, never the batch it runs in: on the token
 * kernels a batch gives the bits of one token at a time (transformer_forward), on the
 * batch kernels one token at a time gives the bits of the batch (the GEMM's sums for
 * a vector do not depend on the others in its pack, the fp32 attention kernel's for a
 * query not on its block, an int8 cache is read one query at a time by the token
 * kernels and made fp32 by the batch kernels either way; the rest is the same
 * functions). With fp32 weights and an fp32 cache the two kernels do the same
 * arithmetic, so all four runs agree. */
static void check_paths(const model *m, const char *what, int n, transformer_kv kv)
{
    int vocab = m->config.vocab_size;
    size_t bytes = sizeof(float) * (size_t)n * vocab;
    int *ids = malloc(sizeof(int) * n);
    float *run[4];
    for (int i = 0; i < 4; i++)
        run[i] = malloc(bytes);
    make_ids(ids, n, vocab);
    transformer *t = new_transformer(m, n, kv);
    run_tokens(t, ids, n, run[0]);
    ck_assert_ptr_nonnull(transformer_run(t, ids, n, 0, TRANSFORMER_KERNELS_TOKEN, run[1], NULL));
    ck_assert_ptr_nonnull(transformer_run(t, ids, n, 0, TRANSFORMER_KERNELS_BATCH, run[2], NULL));
    run_tokens_batch_kernels(t, ids, n, run[3]);
    const char *cache = kv == TRANSFORMER_KV_F32 ? "f32" : "q8_0";
    double d = rel_diff(run[0], run[2], (size_t)n * vocab);
    fprintf(stderr, "%s, KV cache %s: batch kernels against token kernels, %d positions: "
            "%.3g of the range\n", what, cache, n, d);
    ck_assert_msg(memcmp(run[0], run[1], bytes) == 0,
                  "%s, KV cache %s: a batch on the token kernels is not one token's bits", what,
                  cache);
    ck_assert_msg(memcmp(run[2], run[3], bytes) == 0,
                  "%s, KV cache %s: one token on the batch kernels is not the batch's bits", what,
                  cache);
    /* otherwise the same function up to rounding: with int8 weights a rounding
     * difference can move an activation to the next int8 step */
    bool f32 = m->layers[0].wq.type == TENSOR_F32;
    if (f32 && kv == TRANSFORMER_KV_F32)
        ck_assert_msg(memcmp(run[0], run[2], bytes) == 0,
                      "%s: fp32 weights and cache, yet the two kernels differ (%.3g)", what, d);
    else
        ck_assert_msg(d < (f32 ? 1e-3 : 3e-2),
                      "%s, KV cache %s: the two kernels differ by %.3g of the range", what,
                      cache, d);
    transformer_free(t);
    free(ids);
    for (int i = 0; i < 4; i++)
        free(run[i]);
}

static model_arch all_features(int head_size)
{
    model_arch a = model_arch_llama(head_size);
    a.name = "toy";
    a.rope_layout = MODEL_ROPE_HALVES;
    a.rope_dims = head_size / 2;
    a.rope_base_swa = 1000.0f;
    a.act = MODEL_ACT_GELU;
    a.embed_scale = 3.0f;
    a.query_scale = 0.2f;
    a.attn_softcap = 4.0f;
    a.final_softcap = 6.0f;
    a.attn_bias = a.qk_norm = a.post_norms = true;
    a.sliding_window = 5;
    return a;
}

START_TEST(test_batch_is_one_token)
{
    const char *files[] = {"stories260K.bin", "babyllama_tok105_model5000.bin"};
    for (int f = 0; f < 2; f++)
        for (int w = 0; w < 2; w++) {
            model *m = open_model(files[f], w ? TENSOR_Q8_0 : TENSOR_F32);
            check_paths(m, files[f], 80, TRANSFORMER_KV_F32);
            check_paths(m, files[f], 80, TRANSFORMER_KV_Q8_0);
            model_close(m);
        }
    /* big enough for the one-token path's threads (dim·hidden·3·layers >= 2^19), on 3 */
    model_arch llama = model_arch_llama(32), every = all_features(48);
    toy *plain = toy_new(128, 512, 4, 2, 32, &llama, false);
    toy *full = toy_new(128, 512, 4, 2, 48, &every, true); /* q_dim 192, not dim */
    model_arch swa = model_arch_llama(32);
    swa.sliding_window = 5;
    toy *windowed = toy_new(128, 512, 4, 2, 32, &swa, true); /* no soft-cap: the kernels */
    set_threads(3);
    check_paths(&plain->m, "toy llama", 40, TRANSFORMER_KV_F32);
    check_paths(&plain->m, "toy llama", 40, TRANSFORMER_KV_Q8_0);
    check_paths(&windowed->m, "toy llama, windows of 5", 40, TRANSFORMER_KV_Q8_0);
    check_paths(&full->m, "toy, every field", 40, TRANSFORMER_KV_F32);
    check_paths(&full->m, "toy, every field", 40, TRANSFORMER_KV_Q8_0);
    set_threads(omp_procs());
    toy_free(plain);
    toy_free(windowed);
    toy_free(full);
}
END_TEST

/* ---- hook points ---- */

enum { REC_LAYERS = 8, REC_HEADS = 16 };

/* An observer that counts the rows of every point, checks their shapes, and keeps
 * copies of position keep_pos's rows. */
typedef struct {
    const model_config *c;
    int keep_pos;                  /* -1: keep nothing */
    int rows[HOOK_COUNT];          /* rows handed at each point */
    int bad;                       /* shapes that were wrong */
    char why[256];
    int first_pos, last_pos;       /* positions of the rows handed */
    float *kept[HOOK_COUNT][REC_LAYERS + 1][REC_HEADS]; /* [point][layer + 1][head or 0] */
} recorder;

static void recorder_reset(recorder *r, const model_config *c, int keep_pos)
{
    for (int p = 0; p < HOOK_COUNT; p++)
        for (int l = 0; l <= REC_LAYERS; l++)
            for (int h = 0; h < REC_HEADS; h++)
                free(r->kept[p][l][h]);
    memset(r, 0, sizeof *r);
    r->c = c;
    r->keep_pos = keep_pos;
    r->first_pos = 1 << 30;
    r->last_pos = -1;
}

static void recorder_bad(recorder *r, const hook_tensor *x, const char *what)
{
#pragma omp critical(recorder)
    {
        if (!r->bad++)
            snprintf(r->why, sizeof r->why, "%s at layer %d head %d: %s (n %d, width %d, "
                     "stride %zu)", hook_name(x->point), x->layer, x->head, what, x->n,
                     x->width, x->stride);
    }
}

static void record(void *user, const hook_tensor *x)
{
    recorder *r = user;
    const model_config *c = r->c;
    bool head = hook_per_head(x->point);
    int width = head ? x->pos + x->n : hook_width(c, x->point, 0);
    if (x->n < 1 || x->width != width || x->stride < (size_t)x->width || !x->data)
        recorder_bad(r, x, "wrong shape");
    if (hook_in_layer(x->point) ? x->layer < 0 || x->layer >= c->n_layers : x->layer != -1)
        recorder_bad(r, x, "wrong layer");
    if (head ? x->head < 0 || x->head >= c->n_heads : x->head != -1)
        recorder_bad(r, x, "wrong head");
    for (int i = 0; head && i < x->n; i++) /* keys after the query are masked */
        for (int j = x->pos + i + 1; j < x->width; j++) {
            float v = x->data[(size_t)i * x->stride + j];
            if (x->point == HOOK_KQ ? !(isinf(v) && v < 0) : v != 0.0f)
                recorder_bad(r, x, "a key after the query is not masked");
        }
#pragma omp atomic
    r->rows[x->point] += x->n;
#pragma omp critical(recorder)
    {
        if (x->pos < r->first_pos)
            r->first_pos = x->pos;
        if (x->pos + x->n - 1 > r->last_pos)
            r->last_pos = x->pos + x->n - 1;
    }
    int i = r->keep_pos - x->pos;
    if (i >= 0 && i < x->n) {
        int n = head ? r->keep_pos + 1 : x->width;
        float *copy = malloc(sizeof(float) * n);
        memcpy(copy, x->data + (size_t)i * x->stride, sizeof(float) * n);
        r->kept[x->point][x->layer + 1][head ? x->head : 0] = copy;
    }
}

static int add_observer(transformer *t, recorder *r, hook_set points, int first, int last,
                        int pos)
{
    hook h = {.fn = record, .user = r, .points = points, .layer_first = first,
              .layer_last = last, .pos = pos};
    int id;
    llm_err err;
    ck_assert_msg(transformer_hook_add(t, &h, &id, &err) == LLM_OK, "%s", err.text);
    return id;
}

static const float *kept(const recorder *r, hook_point p, int l, int h)
{
    const float *v = r->kept[p][l + 1][h];
    ck_assert_msg(v != NULL, "%s of layer %d head %d was not observed", hook_name(p), l, h);
    return v;
}

/* The rows every point should have been handed for n positions. */
static void check_rows(const recorder *r, const model_config *c, int n, const char *what)
{
    ck_assert_msg(r->bad == 0, "%s: %d bad calls, first: %s", what, r->bad, r->why);
    for (int p = 0; p < HOOK_COUNT; p++) {
        int want = !hook_fires(c, p) ? 0
                   : n * (hook_in_layer(p) ? c->n_layers : 1) * (hook_per_head(p) ? c->n_heads : 1);
        ck_assert_msg(r->rows[p] == want, "%s: %s was handed %d rows, not %d", what,
                      hook_name(p), r->rows[p], want);
    }
}

static void norm_f(float *o, const float *x, const float *w, int n, float eps)
{
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    ss = 1.0f / sqrtf(ss / n + eps);
    for (int i = 0; i < n; i++)
        o[i] = w[i] * (ss * x[i]);
}

/* The largest |a - b| over n values, relative to a's largest size. */
static double max_rel(const float *a, const float *b, int n)
{
    double d = 0.0, top = 1e-30;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        top = fmax(top, fabs((double)a[i]));
    }
    return d / top;
}

/* w · x (w->rows) in double, as float. */
static void matvec_f(float *o, const tensor *w, const float *x)
{
    float *row = malloc(sizeof(float) * w->cols);
    for (int r = 0; r < w->rows; r++) {
        quant_dequantize_row(row, w, r);
        double s = 0.0;
        for (int j = 0; j < w->cols; j++)
            s += (double)row[j] * x[j];
        o[r] = (float)s;
    }
    free(row);
}

/* What the points of one position say about each other in a llama model (no
 * post-norms, no steering): each is the step it is named after. */
static void check_relations(const recorder *r, const model *m, const float *logits)
{
    const model_config *c = &m->config;
    int dim = c->dim, hs = c->head_size, kv_mul = c->n_heads / c->n_kv_heads, P = r->keep_pos;
    float *t = malloc(sizeof(float) * (c->hidden_dim + c->vocab_size + dim));
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        const float *prev = l ? kept(r, HOOK_L_OUT, l - 1, 0) : kept(r, HOOK_INP_EMBD, -1, 0);
        const float *inp = kept(r, HOOK_FFN_INP, l, 0), *out = kept(r, HOOK_L_OUT, l, 0);
        const float *kqv_out = kept(r, HOOK_KQV_OUT, l, 0);
        const float *ffn_out = kept(r, HOOK_FFN_OUT, l, 0);
        for (int i = 0; i < dim; i++) {
            ck_assert_msg(inp[i] == prev[i] + kqv_out[i], "ffn_inp != stream + kqv_out");
            ck_assert_msg(out[i] == inp[i] + ffn_out[i], "l_out != ffn_inp + ffn_out");
        }
        norm_f(t, prev, L->rms_att, dim, c->rms_eps);
        ck_assert(max_rel(t, kept(r, HOOK_ATTN_NORM, l, 0), dim) < 1e-5);
        norm_f(t, inp, L->rms_ffn, dim, c->rms_eps);
        ck_assert(max_rel(t, kept(r, HOOK_FFN_NORM, l, 0), dim) < 1e-5);
        matvec_f(t, &L->wo, kept(r, HOOK_KQV, l, 0));
        ck_assert_msg(max_rel(t, kqv_out, dim) < 1e-4, "kqv_out != wo · kqv");
        const float *gate = kept(r, HOOK_FFN_GATE, l, 0), *up = kept(r, HOOK_FFN_UP, l, 0);
        float *g = malloc(sizeof(float) * c->hidden_dim);
        for (int i = 0; i < c->hidden_dim; i++)
            g[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
        const float *par = kept(r, HOOK_FFN_GATE_PAR, l, 0);
        for (int i = 0; i < c->hidden_dim; i++)
            ck_assert_msg(fabsf(par[i] - g[i]) <= 1e-5f * (1.0f + fabsf(g[i])),
                          "ffn_gate_par[%d] %g != silu(ffn_gate) ffn_up %g", i, par[i], g[i]);
        matvec_f(t, &L->w2, g);
        free(g);
        ck_assert_msg(max_rel(t, ffn_out, dim) < 1e-4, "ffn_out != w2 · silu(ffn_gate) ffn_up");
        const float *q = kept(r, HOOK_QCUR, l, 0), *k = kept(r, HOOK_KCUR, l, 0);
        const float *v = kept(r, HOOK_VCUR, l, 0), *kqv = kept(r, HOOK_KQV, l, 0);
        for (int h = 0; h < c->n_heads; h++) {
            const float *kq = kept(r, HOOK_KQ, l, h), *w = kept(r, HOOK_KQ_SOFT_MAX, l, h);
            double sum = 0.0, self = 0.0, top = -INFINITY, z = 0.0;
            for (int j = 0; j <= P; j++)
                top = fmax(top, kq[j]);
            for (int j = 0; j <= P; j++)
                z += exp(kq[j] - top);
            for (int j = 0; j <= P; j++) {
                sum += w[j];
                ck_assert_msg(fabs(w[j] - exp(kq[j] - top) / z) < 1e-5,
                              "kq_soft_max != softmax(kq) at layer %d head %d key %d", l, h, j);
            }
            ck_assert_msg(fabs(sum - 1.0) < 1e-5, "kq_soft_max sums to %g", sum);
            for (int i = 0; i < hs; i++)
                self += (double)q[h * hs + i] * k[(h / kv_mul) * hs + i];
            self *= c->arch.query_scale;
            ck_assert_msg(fabs(self - kq[P]) < 1e-4 * fmax(1.0, fabs(self)),
                          "kq's own key %g != Qcur · Kcur %g (layer %d head %d)", kq[P], self,
                          l, h);
            for (int i = 0; P == 0 && i < hs; i++) /* one key: kqv is its value */
                ck_assert(fabsf(kqv[h * hs + i] - v[(h / kv_mul) * hs + i]) < 1e-6f);
        }
    }
    norm_f(t, kept(r, HOOK_L_OUT, c->n_layers - 1, 0), m->rms_final, dim, c->rms_eps);
    ck_assert(max_rel(t, kept(r, HOOK_RESULT_NORM, -1, 0), dim) < 1e-5);
    ck_assert_msg(memcmp(kept(r, HOOK_RESULT_OUTPUT, -1, 0), logits,
                         sizeof(float) * c->vocab_size) == 0, "result_output != the logits");
    free(t);
}

/* Every point fires for a batch and for one token, with the right shapes; a position's
 * points hold the same bits either way, and are the steps they are named after. */
static void check_points(const model *m, const char *what, bool relations)
{
    const model_config *c = &m->config;
    enum { N = 12 };
    int ids[N + 1];
    make_ids(ids, N + 1, c->vocab_size);
    float *logits = malloc(sizeof(float) * (size_t)2 * N * c->vocab_size);
    transformer *t = new_transformer(m, 32, TRANSFORMER_KV_F32);
    static recorder all, one, bat;
    recorder_reset(&all, c, -1);
    int id = add_observer(t, &all, HOOK_ALL, 0, c->n_layers - 1, -1);
    run_batch(t, ids, N, logits);
    check_rows(&all, c, N, what);
    recorder_reset(&all, c, -1);
    ck_assert_ptr_nonnull(transformer_forward(t, ids[N], N, NULL));
    check_rows(&all, c, 1, what);
    transformer_hook_remove(t, id);
    transformer_free(t);

    for (int P = 0; P < N; P += 7) {
        transformer *a = new_transformer(m, 32, TRANSFORMER_KV_F32);
        transformer *b = new_transformer(m, 32, TRANSFORMER_KV_F32);
        recorder_reset(&one, c, P);
        recorder_reset(&bat, c, P);
        add_observer(a, &one, HOOK_ALL, 0, c->n_layers - 1, -1);
        add_observer(b, &bat, HOOK_ALL, 0, c->n_layers - 1, P);
        run_tokens(a, ids, N, logits);
        run_batch(b, ids, N, logits + (size_t)N * c->vocab_size);
        for (int p = 0; p < HOOK_COUNT; p++)
            for (int l = hook_in_layer(p) ? 0 : -1;
                 hook_fires(c, p) && l < (hook_in_layer(p) ? c->n_layers : 0); l++)
                for (int h = 0; h < (hook_per_head(p) ? c->n_heads : 1); h++) {
                    int n = hook_per_head(p) ? P + 1 : hook_width(c, p, P);
                    ck_assert_msg(memcmp(kept(&one, p, l, h), kept(&bat, p, l, h),
                                         sizeof(float) * n) == 0,
                                  "%s: %s (layer %d head %d) at position %d differs between "
                                  "a batch and one token", what, hook_name(p), l, h, P);
                }
        if (relations)
            check_relations(&one, m, logits + (size_t)P * c->vocab_size);
        transformer_free(a);
        transformer_free(b);
    }
    recorder_reset(&all, c, -1);
    recorder_reset(&one, c, -1);
    recorder_reset(&bat, c, -1);
    free(logits);
}

START_TEST(test_points_fire)
{
    model *m = open_model("stories260K.bin", TENSOR_F32);
    check_points(m, "stories260K", true);
    model_close(m);
    model_arch every = all_features(48);
    toy *full = toy_new(128, 512, 4, 2, 48, &every, true);
    set_threads(3);
    check_points(&full->m, "toy, every field, 3 threads", false);
    set_threads(omp_procs());
    toy_free(full);
}
END_TEST

/* per_layer_embd_out (Gemma 4's per-layer inputs, family_gguf.h's gemma4): handed at
 * every layer of every position, the same bits for a batch and for one token (one
 * token: thread 0's normed row; a batch: the batch's rows), on 1 and 3 threads. (That
 * it is what the layer adds, test_attribution's parts adding up to the logit hold.) */
typedef struct {
    int layers, width;
    float *rows; /* (positions, layers, width) */
} layer_rows;

static void capture_layer_rows(void *user, const hook_tensor *x)
{
    layer_rows *r = user;
    for (int i = 0; i < x->n; i++)
        memcpy(r->rows + ((size_t)(x->pos + i) * r->layers + x->layer) * r->width,
               x->data + (size_t)i * x->stride, sizeof(float) * (size_t)r->width);
}

START_TEST(test_per_layer_input_point)
{
    const char *path = temp_path("gemma4-points.gguf");
    ck_assert(family_gguf_write(path, "gemma4", NULL, NULL));
    model_options opt;
    model_options_default(&opt);
    opt.weights = TENSOR_F32;
    llm_err err;
    model *m;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    const model_config *c = &m->config;
    ck_assert(hook_fires(c, HOOK_PER_LAYER_EMBD_OUT));
    ck_assert_int_eq(hook_width(c, HOOK_PER_LAYER_EMBD_OUT, 0), c->dim);
    enum { N = 12 };
    int ids[N];
    make_ids(ids, N, c->vocab_size);
    size_t floats = (size_t)N * c->n_layers * c->dim;
    layer_rows got[3];
    float *logits = malloc(sizeof(float) * (size_t)N * c->vocab_size);
    for (int k = 0; k < 3; k++) { /* one token a call, a batch, a batch on 3 threads */
        got[k] = (layer_rows){c->n_layers, c->dim, calloc(floats, sizeof(float))};
        set_threads(k == 2 ? 3 : 1);
        transformer *t = new_transformer(m, 32, TRANSFORMER_KV_F32);
        hook h = {.fn = capture_layer_rows, .user = &got[k],
                  .points = HOOK_BIT(HOOK_PER_LAYER_EMBD_OUT), .layer_first = 0,
                  .layer_last = c->n_layers - 1, .pos = -1};
        int id;
        ck_assert_int_eq(transformer_hook_add(t, &h, &id, &err), LLM_OK);
        if (k == 0)
            run_tokens(t, ids, N, logits);
        else
            run_batch(t, ids, N, logits);
        transformer_free(t);
    }
    set_threads(omp_procs());
    for (int p = 0; p < N; p++) /* every layer of every position was handed */
        for (int l = 0; l < c->n_layers; l++) {
            double mag = 0.0;
            for (int i = 0; i < c->dim; i++)
                mag += fabs(got[0].rows[((size_t)p * c->n_layers + l) * c->dim + i]);
            ck_assert_msg(mag > 0.0, "per_layer_embd_out of layer %d at %d never handed", l, p);
        }
    ck_assert_msg(memcmp(got[0].rows, got[1].rows, sizeof(float) * floats) == 0,
                  "per_layer_embd_out differs between one token and a batch");
    ck_assert_msg(memcmp(got[1].rows, got[2].rows, sizeof(float) * floats) == 0,
                  "per_layer_embd_out differs between 1 and 3 threads");
    for (int k = 0; k < 3; k++)
        free(got[k].rows);
    free(logits);
    model_close(m);
    remove(path);
}
END_TEST

/* Gemma 4 with experts beside each layer's dense feed-forward (family_gguf.h's
 * gemma4-moe): the dense points fire with the experts' (hook_fires), and the steps are
 * what they are named after, recomputed here from the points and the weights at every
 * layer of every position: the router's logits are router · (RMSNorm(ffn_inp) / √dim ⊙
 * ffn_gate_inp.scale), and ffn_out is post_ffw_norm_2(ffn_moe_out) + post_ffw_norm_1(w2 ·
 * ffn_gate_par); one token a call gives the batch's bits. */
static float rms_of(const float *x, int n, float eps)
{
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    return 1.0f / sqrtf(ss / n + eps);
}

START_TEST(test_dense_beside_experts_points)
{
    const char *path = temp_path("gemma4-moe-points.gguf");
    ck_assert(family_gguf_write(path, "gemma4-moe", NULL, NULL));
    model_options opt;
    model_options_default(&opt);
    opt.weights = TENSOR_F32;
    llm_err err;
    model *m;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
    const model_config *c = &m->config;
    const hook_point pts[] = {HOOK_FFN_INP, HOOK_FFN_MOE_LOGITS, HOOK_FFN_GATE_PAR,
                              HOOK_FFN_MOE_OUT, HOOK_FFN_OUT};
    enum { P = sizeof pts / sizeof pts[0], N = 9 };
    int ids[N];
    make_ids(ids, N, c->vocab_size);
    float *logits = malloc(sizeof(float) * (size_t)N * c->vocab_size);
    layer_rows got[2][P];
    for (int k = 0; k < 2; k++) { /* one token a call, then a batch */
        transformer *t = new_transformer(m, 32, TRANSFORMER_KV_F32);
        for (int i = 0; i < P; i++) {
            ck_assert(hook_fires(c, pts[i]));
            int w = hook_width(c, pts[i], 0);
            got[k][i] = (layer_rows){c->n_layers, w,
                                     calloc((size_t)N * c->n_layers * w, sizeof(float))};
            hook h = {.fn = capture_layer_rows, .user = &got[k][i], .points = HOOK_BIT(pts[i]),
                      .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
            int id;
            ck_assert_int_eq(transformer_hook_add(t, &h, &id, &err), LLM_OK);
        }
        if (k == 0)
            run_tokens(t, ids, N, logits);
        else
            run_batch(t, ids, N, logits);
        transformer_free(t);
    }
    int dim = c->dim, E = c->n_experts;
    float *xn = malloc(sizeof(float) * dim), *down = malloc(sizeof(float) * dim);
    double worst_logit = 0.0, worst_out = 0.0;
    for (int p = 0; p < N; p++)
        for (int l = 0; l < c->n_layers; l++) {
            const model_layer *L = &m->layers[l];
            const float *row[P];
            for (int i = 0; i < P; i++)
                row[i] = got[1][i].rows + ((size_t)p * c->n_layers + l) * got[1][i].width;
            float s = rms_of(row[0], dim, c->rms_eps);
            for (int j = 0; j < dim; j++)
                xn[j] = row[0][j] * s / sqrtf((float)dim) * L->router_scale[j];
            for (int e = 0; e < E; e++) {
                double want = 0.0;
                for (int j = 0; j < dim; j++)
                    want += (double)L->router.f[(size_t)e * dim + j] * xn[j];
                worst_logit = fmax(worst_logit, fabs(want - row[1][e]) / (1.0 + fabs(want)));
            }
            for (int r = 0; r < dim; r++) {
                double d = 0.0;
                for (int j = 0; j < L->hidden_dim; j++)
                    d += (double)L->w2.f[(size_t)r * L->hidden_dim + j] * row[2][j];
                down[r] = (float)d;
            }
            float sd = rms_of(down, dim, c->rms_eps), se = rms_of(row[3], dim, c->rms_eps);
            for (int r = 0; r < dim; r++) {
                double want = (double)L->post_experts_norm[r] * se * row[3][r] +
                              (double)L->post_dense_norm[r] * sd * down[r];
                worst_out = fmax(worst_out, fabs(want - row[4][r]) / (1.0 + fabs(want)));
            }
        }
    ck_assert_msg(worst_logit < 1e-5, "the router's logits are not its product: %.3g",
                  worst_logit);
    ck_assert_msg(worst_out < 1e-5, "ffn_out is not the two normed parts added: %.3g",
                  worst_out);
    for (int i = 0; i < P; i++) {
        ck_assert_msg(memcmp(got[0][i].rows, got[1][i].rows,
                             sizeof(float) * (size_t)N * c->n_layers * got[0][i].width) == 0,
                      "%s differs between one token and a batch", hook_name(pts[i]));
        free(got[0][i].rows);
        free(got[1][i].rows);
    }
    free(xn);
    free(down);
    free(logits);
    model_close(m);
}
END_TEST

/* The mixtures of experts' points (the router's logits, probabilities, choices and
 * weights, the experts' sum) fire for a batch and for one token (gpt-oss: with its
 * sinks and biases on both paths), on fp32 and Q8_0
 * weights, on one thread and on three, with the same bits either way. */
START_TEST(test_expert_points_fire)
{
    const char *shapes[] = {"qwen3moe", "olmoe", "mixtral", "qwen3moe-wide", "gpt-oss"};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int k = 0; k < 4; k++) {
            const char *path = temp_path("moe.gguf");
            ck_assert(family_gguf_write(path, shapes[i], NULL, NULL));
            model_options opt;
            model_options_default(&opt);
            opt.weights = k % 2 ? TENSOR_BLOCKS : TENSOR_F32;
            model *m = NULL;
            llm_err err;
            ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
            remove(path);
            ck_assert_int_gt(m->config.n_experts, 0);
            char what[96];
            snprintf(what, sizeof what, "%s, %s, %d threads", shapes[i], k % 2 ? "Q8_0" : "F32",
                     k < 2 ? 1 : 3);
            set_threads(k < 2 ? 1 : 3);
            check_points(m, what, false);
            set_threads(omp_procs());
            model_close(m);
        }
}
END_TEST

/* An observer asks for one position and a range of layers: it gets those rows only. */
START_TEST(test_points_chosen)
{
    model *m = open_model("stories260K.bin", TENSOR_F32);
    const model_config *c = &m->config;
    int ids[10];
    make_ids(ids, 10, c->vocab_size);
    transformer *t = new_transformer(m, 32, TRANSFORMER_KV_F32);
    static recorder r;
    recorder_reset(&r, c, 5);
    hook_set points = HOOK_BIT(HOOK_INP_EMBD) | HOOK_BIT(HOOK_KQ_SOFT_MAX) | HOOK_BIT(HOOK_L_OUT);
    add_observer(t, &r, points, 1, 2, 5);
    run_batch(t, ids, 10, NULL);
    ck_assert_msg(r.bad == 0, "%s", r.why);
    ck_assert_int_eq(r.rows[HOOK_INP_EMBD], 1);
    ck_assert_int_eq(r.rows[HOOK_L_OUT], 2);
    ck_assert_int_eq(r.rows[HOOK_KQ_SOFT_MAX], 2 * c->n_heads);
    ck_assert_int_eq(r.rows[HOOK_KQV], 0);
    ck_assert(r.first_pos == 5 && r.last_pos == 5);
    ck_assert_ptr_null(r.kept[HOOK_L_OUT][0 + 1][0]);
    ck_assert_ptr_nonnull(r.kept[HOOK_L_OUT][1 + 1][0]);
    recorder_reset(&r, c, -1);
    transformer_free(t);
    model_close(m);
}
END_TEST

static void count_calls(void *user, const hook_tensor *x)
{
    (void)x;
#pragma omp atomic
    (*(int *)user)++;
}

START_TEST(test_hook_limits)
{
    model *m = open_model("stories260K.bin", TENSOR_F32);
    transformer *t = new_transformer(m, 16, TRANSFORMER_KV_AUTO);
    int calls = 0, ids[8], id;
    llm_err err;
    hook h = {.fn = count_calls, .user = &calls, .points = HOOK_BIT(HOOK_RESULT_NORM),
              .layer_first = 0, .layer_last = 0, .pos = -1};
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(transformer_hook_add(t, &h, &ids[i], &err), LLM_OK);
    ck_assert_int_eq(transformer_hook_add(t, &h, &id, &err), LLM_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.text, "8 hooks"));
    for (int i = 1; i < 8; i++)
        transformer_hook_remove(t, ids[i]);
    transformer_hook_remove(t, 99);
    ck_assert_ptr_nonnull(transformer_forward(t, 1, 0, NULL));
    ck_assert_int_eq(calls, 1);
    transformer_hook_remove(t, ids[0]);
    ck_assert_ptr_nonnull(transformer_forward(t, 1, 1, NULL));
    ck_assert_int_eq(calls, 1);
    hook bad = h;
    bad.points = HOOK_BIT(HOOK_COUNT); /* the first bit past the points */
    ck_assert_int_eq(transformer_hook_add(t, &bad, &id, &err), LLM_ERR_ARG);
    bad = h;
    bad.fn = NULL;
    ck_assert_int_eq(transformer_hook_add(t, &bad, &id, &err), LLM_ERR_ARG);
    bad = h;
    bad.pos = 16;
    ck_assert_int_eq(transformer_hook_add(t, &bad, &id, &err), LLM_ERR_ARG);
    hook_point p;
    ck_assert(hook_parse("kq_soft_max", &p) && p == HOOK_KQ_SOFT_MAX);
    ck_assert(hook_parse("Kcur", &p) && p == HOOK_KCUR);
    ck_assert(!hook_parse("kcur", &p));
    ck_assert_str_eq(hook_name(HOOK_RESULT_OUTPUT), "result_output");
    ck_assert_ptr_null(hook_name(HOOK_COUNT));
    transformer_free(t);
    model_close(m);
}
END_TEST

/* ---- interventions ---- */

/* The two interventions as the engine registers them (steering.c): their editors at
 * kqv and l_out, over a mask and a sum the test owns. */
typedef struct {
    const unsigned char *mask;
    const float *sum;
    bool on;
    knock_out heads;
    control_vectors vectors;
} test_edits;

static void attach_edits(transformer *t, test_edits *e, const model_config *c)
{
    e->on = true;
    e->heads = (knock_out){.mask = &e->mask, .enabled = &e->on, .n_heads = c->n_heads,
                           .attn_heads = c->n_heads, .head_size = c->head_size};
    e->vectors = (control_vectors){.sum = &e->sum, .dim = c->dim};
    hook hk = {.edit = knock_out_edit, .user = &e->heads, .points = HOOK_BIT(HOOK_KQV),
               .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    hook hv = {.edit = control_vectors_edit, .user = &e->vectors,
               .points = HOOK_BIT(HOOK_L_OUT), .layer_first = 0,
               .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    llm_err err;
    ck_assert_msg(transformer_hook_add(t, &hk, &id, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(transformer_hook_add(t, &hv, &id, &err) == LLM_OK, "%s", err.text);
}

/* Knock-out and steering, editors at kqv and l_out, through the batch do what they do
 * through one token (the same bits, also when one token's threads each edit their
 * share of the columns), change the logits, and show at their points: a knocked-out
 * head's kqv is 0, l_out is ffn_inp + ffn_out + the vector. */
static void check_interventions(const model *m, const char *what, bool against_ref)
{
    const model_config *c = &m->config;
    enum { N = 24 };
    int ids[N], vocab = c->vocab_size, L = c->n_layers, H = c->n_heads, dim = c->dim;
    make_ids(ids, N, vocab);
    float *steer = malloc(sizeof(float) * L * dim);
    unsigned char *mask = calloc((size_t)L * H, 1);
    for (int i = 0; i < L * dim; i++)
        steer[i] = 0.3f * sinf((float)i * 0.7f);
    for (int l = 0; l < L; l++)
        mask[l * H + (3 * l + 1) % H] = 1;
    size_t n = (size_t)N * vocab;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n),
          *plain = malloc(sizeof(float) * n);
    transformer *ta = new_transformer(m, N, TRANSFORMER_KV_F32);
    transformer *tb = new_transformer(m, N, TRANSFORMER_KV_F32);
    transformer *tc = new_transformer(m, N, TRANSFORMER_KV_F32);
    static recorder ra, rb;
    recorder_reset(&ra, c, N - 1);
    recorder_reset(&rb, c, N - 1);
    add_observer(ta, &ra, HOOK_ALL, 0, L - 1, N - 1);
    add_observer(tb, &rb, HOOK_ALL, 0, L - 1, N - 1);
    test_edits ea = {.mask = mask, .sum = steer}, eb = ea;
    attach_edits(ta, &ea, c);
    attach_edits(tb, &eb, c);
    run_tokens(ta, ids, N, a);
    run_batch(tb, ids, N, b);
    run_batch(tc, ids, N, plain);
    ck_assert_msg(memcmp(a, b, sizeof(float) * n) == 0,
                  "%s: the interventions act otherwise through a batch", what);
    ck_assert_msg(rel_diff(plain, a, n) > 1e-3, "%s: the interventions change nothing", what);
    if (against_ref) {
        float *want = malloc(sizeof(float) * n);
        ref_run(m, steer, mask, ids, N, want);
        double d = rel_diff(want, a, n);
        ck_assert_msg(d < 1e-4, "%s: with interventions, %.3g of the range from the reference",
                      what, d);
        free(want);
    }
    const recorder *rs[2] = {&ra, &rb};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < L; l++) {
            const float *kqv = kept(rs[k], HOOK_KQV, l, 0);
            const float *out = kept(rs[k], HOOK_L_OUT, l, 0);
            const float *inp = kept(rs[k], HOOK_FFN_INP, l, 0);
            const float *ffn = kept(rs[k], HOOK_FFN_OUT, l, 0);
            for (int h = 0; h < H; h++)
                for (int i = 0; mask[l * H + h] && i < c->head_size; i++)
                    ck_assert_msg(kqv[h * c->head_size + i] == 0.0f, "knocked-out kqv not 0");
            for (int i = 0; !m->layers[l].post_ffn_norm && i < dim; i++)
                ck_assert_msg(out[i] == (inp[i] + ffn[i]) + steer[l * dim + i],
                              "l_out is not ffn_inp + ffn_out + the vector");
        }
    recorder_reset(&ra, c, -1);
    recorder_reset(&rb, c, -1);
    transformer_free(ta);
    transformer_free(tb);
    transformer_free(tc);
    free(steer);
    free(mask);
    free(a);
    free(b);
    free(plain);
}

START_TEST(test_interventions_both_paths)
{
    model *m = open_model("stories260K.bin", TENSOR_F32);
    check_interventions(m, "stories260K", false);
    model_close(m);
    model_arch llama = model_arch_llama(16), every = all_features(16);
    toy *plain = toy_new(48, 96, 4, 2, 16, &llama, false);
    toy *full = toy_new(48, 96, 4, 2, 16, &every, true);
    check_interventions(&plain->m, "toy llama", true);
    check_interventions(&full->m, "toy, every field", true);
    toy_free(plain);
    toy_free(full);
    /* big enough for the one-token path's threads: 3 share each edit's columns */
    toy *wide = toy_new(128, 512, 4, 2, 32, &llama, false);
    set_threads(3);
    check_interventions(&wide->m, "toy llama, 3 threads", false);
    set_threads(omp_procs());
    toy_free(wide);
}
END_TEST

/* ---- the expert knock-out ---- */

/* What the router did at every position and layer: its logits (as observed: after the
 * editors), probabilities, choices and weights. */
enum { ROUTE_N = 16, ROUTE_L = 4, ROUTE_E = 64 };
typedef struct {
    int E, K;
    float logits[ROUTE_L][ROUTE_N][ROUTE_E], probs[ROUTE_L][ROUTE_N][ROUTE_E];
    float topk[ROUTE_L][ROUTE_N][ROUTE_E], weights[ROUTE_L][ROUTE_N][ROUTE_E];
} routes;

static void record_route(void *user, const hook_tensor *x)
{
    routes *r = user;
    float (*dst)[ROUTE_N][ROUTE_E] = x->point == HOOK_FFN_MOE_LOGITS ? r->logits
                                     : x->point == HOOK_FFN_MOE_PROBS ? r->probs
                                     : x->point == HOOK_FFN_MOE_TOPK  ? r->topk
                                                                      : r->weights;
    for (int i = 0; i < x->n; i++)
        memcpy(dst[x->layer][x->pos + i], x->data + (size_t)i * x->stride,
               sizeof(float) * (size_t)x->width);
}

static void observe_routes(transformer *t, routes *r, const model_config *c)
{
    *r = (routes){.E = c->n_experts, .K = c->n_experts_used};
    hook h = {.fn = record_route, .user = r,
              .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS) | HOOK_BIT(HOOK_FFN_MOE_PROBS) |
                        HOOK_BIT(HOOK_FFN_MOE_TOPK) | HOOK_BIT(HOOK_FFN_MOE_WEIGHTS),
              .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    llm_err err;
    ck_assert_msg(transformer_hook_add(t, &h, &id, &err) == LLM_OK, "%s", err.text);
}

/* Row `pos` of layer l: the knocked-out experts' logits are -inf and their
 * probabilities 0; the others' probabilities are the softmax of `want` (the logits the
 * router would have made, unedited) over the experts left in; the top-k never holds a
 * knocked-out expert; the weights are the chosen probabilities (renormalised over the
 * chosen where the model does). */
static void check_route(const routes *r, const model_config *c, int l, int pos,
                        const unsigned char *out, const float *want, const char *what)
{
    int E = r->E, K = r->K;
    const float *lg = r->logits[l][pos], *pr = r->probs[l][pos];
    double max = -INFINITY, sum = 0.0;
    for (int e = 0; e < E; e++)
        if (!out[e])
            max = fmax(max, want[e]);
    for (int e = 0; e < E; e++)
        if (!out[e])
            sum += exp(want[e] - max);
    for (int e = 0; e < E; e++) {
        if (out[e]) {
            ck_assert_msg(lg[e] == -INFINITY, "%s: L%d pos %d expert %d out, logit %g", what, l,
                          pos, e, lg[e]);
            ck_assert_msg(pr[e] == 0.0f, "%s: L%d pos %d expert %d out, probability %g", what,
                          l, pos, e, pr[e]);
            continue;
        }
        double p = exp(want[e] - max) / sum;
        ck_assert_msg(fabs(pr[e] - p) < 1e-6, "%s: L%d pos %d expert %d: probability %.9g, "
                      "the softmax over the rest %.9g", what, l, pos, e, pr[e], p);
    }
    double chosen = 0.0;
    for (int s = 0; s < K; s++) {
        int e = (int)r->topk[l][pos][s];
        ck_assert_msg(e >= 0 && e < E && !out[e], "%s: L%d pos %d chose expert %d, knocked out",
                      what, l, pos, e);
        chosen += pr[e];
    }
    for (int s = 0; s < K; s++) {
        double w = pr[(int)r->topk[l][pos][s]];
        if (c->arch.expert_norm_weights)
            w /= chosen;
        ck_assert_msg(fabs(r->weights[l][pos][s] - w) < 1e-6, "%s: L%d pos %d weight %d is %g, "
                      "not %g", what, l, pos, s, r->weights[l][pos][s], w);
    }
}

/* The expert knock-out (expert_knock_out.c at ffn_moe_logits): in each layer the
 * expert the unedited run chose first most often is out (in layer 0 the runner-up
 * too); through the batch and one token at a time (3 threads sharing the router's
 * columns), a knocked-out expert gets probability 0 and is never chosen, and the
 * others' probabilities are the softmax over the rest: in layer 0, of the unedited
 * run's logits (nothing before the router changed); after it, of the logits the
 * router made (the earlier layers' routes changed them). */
static void check_expert_knock_out(const char *shape)
{
    const char *path = temp_path("moe-knock.gguf");
    ck_assert(family_gguf_write(path, shape, NULL, NULL));
    model_options opt;
    model_options_default(&opt);
    opt.weights = TENSOR_F32;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
    const model_config *c = &m->config;
    int L = c->n_layers, E = c->n_experts, vocab = c->vocab_size, ids[ROUTE_N];
    ck_assert(L <= ROUTE_L && E <= ROUTE_E && E - 2 >= c->n_experts_used);
    make_ids(ids, ROUTE_N, vocab);
    size_t n = (size_t)ROUTE_N * vocab;
    float *plain = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * n),
          *b = malloc(sizeof(float) * n);
    static routes rp, ra, rb;
    transformer *tp = new_transformer(m, ROUTE_N, TRANSFORMER_KV_F32);
    observe_routes(tp, &rp, c);
    run_batch(tp, ids, ROUTE_N, plain);
    /* the experts to knock out: the most chosen first (and layer 0's runner-up) */
    unsigned char *mask = calloc((size_t)L * E, 1);
    for (int l = 0; l < L; l++) {
        int count[ROUTE_E] = {0};
        for (int p = 0; p < ROUTE_N; p++)
            count[(int)rp.topk[l][p][0]]++;
        for (int k = 0; k < (l == 0 ? 2 : 1); k++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!mask[l * E + e] && (best < 0 || count[e] > count[best]))
                    best = e;
            mask[l * E + best] = 1;
        }
    }
    const unsigned char *in_force = mask;
    expert_knock_out ko = {.mask = &in_force, .n_experts = E};
    hook edit = {.edit = expert_knock_out_edit, .user = &ko,
                 .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS), .layer_first = 0,
                 .layer_last = L - 1, .pos = -1};
    transformer *ta = new_transformer(m, ROUTE_N, TRANSFORMER_KV_F32);
    transformer *tb = new_transformer(m, ROUTE_N, TRANSFORMER_KV_F32);
    int id;
    ck_assert(transformer_hook_add(ta, &edit, &id, &err) == LLM_OK);
    ck_assert(transformer_hook_add(tb, &edit, &id, &err) == LLM_OK);
    observe_routes(ta, &ra, c);
    observe_routes(tb, &rb, c);
    set_threads(3);
    run_tokens(ta, ids, ROUTE_N, a);
    set_threads(omp_procs());
    run_batch(tb, ids, ROUTE_N, b);
    ck_assert_msg(rel_diff(a, b, n) < 1e-5, "%s: the knock-out acts otherwise through a batch",
                  shape);
    ck_assert_msg(rel_diff(plain, b, n) > 1e-4, "%s: knocking experts out changes nothing",
                  shape);
    const routes *rs[2] = {&ra, &rb};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < L; l++)
            for (int p = 0; p < ROUTE_N; p++) {
                char what[64];
                snprintf(what, sizeof what, "%s, %s", shape, k ? "a batch" : "one token");
                check_route(rs[k], c, l, p, mask + l * E, l == 0 ? rp.logits[0][p]
                                                                 : rs[k]->logits[l][p], what);
            }
    /* nothing out: the editor leaves the logits as they are */
    in_force = NULL;
    run_batch(tb, ids, ROUTE_N, b);
    ck_assert_msg(memcmp(plain, b, sizeof(float) * n) == 0, "%s: an empty mask changed the "
                  "logits", shape);
    transformer_free(tp);
    transformer_free(ta);
    transformer_free(tb);
    free(mask);
    free(plain);
    free(a);
    free(b);
    model_close(m);
}

START_TEST(test_expert_knock_out)
{
    check_expert_knock_out("qwen3moe"); /* the chosen weights renormalised */
    check_expert_knock_out("olmoe");    /* the chosen probabilities as they are */
}
END_TEST

/* ---- the expert forcing ---- */

/* A pass of ids through a new transformer of m with the knock-out (ko) and the forcing
 * (ef, at layers first..last) as editors, the routes observed into r and the logits
 * into logits: one token at a time on 3 threads (tokens true: the threads share the
 * router's columns), else one batch. n positions (one token at a time only; a batch:
 * ROUTE_N). */
static void run_forced(const model *m, expert_knock_out *ko, expert_force *ef, int first,
                       int last, routes *r, const int *ids, int n, bool tokens, float *logits)
{
    const model_config *c = &m->config;
    transformer *t = new_transformer(m, ROUTE_N, TRANSFORMER_KV_F32);
    hook edits[2] = {
        {.edit = expert_knock_out_edit, .user = ko, .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS),
         .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1},
        {.edit = expert_force_edit, .user = ef, .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS),
         .layer_first = first, .layer_last = last, .pos = -1},
    };
    int id;
    llm_err err;
    for (int i = 0; i < 2; i++)
        ck_assert_msg(transformer_hook_add(t, &edits[i], &id, &err) == LLM_OK, "%s", err.text);
    observe_routes(t, r, c);
    if (tokens) {
        set_threads(3);
        run_tokens(t, ids, n, logits);
        set_threads(omp_procs());
    } else {
        run_batch(t, ids, ROUTE_N, logits);
    }
    transformer_free(t);
}

/* Row pos of layer l in a and b: the same bits at every point of the router. */
static bool same_route(const routes *a, const routes *b, int l, int pos)
{
    size_t E = sizeof(float) * (size_t)a->E, K = sizeof(float) * (size_t)a->K;
    return !memcmp(a->logits[l][pos], b->logits[l][pos], E) &&
           !memcmp(a->probs[l][pos], b->probs[l][pos], E) &&
           !memcmp(a->topk[l][pos], b->topk[l][pos], K) &&
           !memcmp(a->weights[l][pos], b->weights[l][pos], K);
}

/* The expert forcing (expert_force.c at ffn_moe_logits), at layer 0 (beside a knock-out
 * of the expert the unedited run chose first most often there) and at the last layer:
 * the expert the unedited run chose first least often is forced. Through the batch and
 * one token at a time (3 threads sharing the router's columns), at every position:
 * the layers before the forced one have the unedited run's bits; at the forced layer
 * the other experts' logits are the unedited ones (-inf for the knocked-out), the
 * forced expert's is the smallest float above the largest of them (or its own where
 * it was above already), it is chosen first, and without a knock-out the others follow
 * in the unedited run's order (its last drops out unless the forced was among them);
 * every layer's probabilities are the softmax of its logits and the weights the
 * chosen probabilities, renormalised where the model does (check_route). The editor
 * acting at every layer gives the bits of one acting at the forced layer only (it
 * leaves a layer without a forced expert as it is), and forcing an expert the router
 * chose first anyway changes no bit. */
static void check_expert_force(const char *shape)
{
    const char *path = temp_path("moe-force.gguf");
    ck_assert(family_gguf_write(path, shape, NULL, NULL));
    model_options opt;
    model_options_default(&opt);
    opt.weights = TENSOR_F32;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
    const model_config *c = &m->config;
    int L = c->n_layers, E = c->n_experts, K = c->n_experts_used, vocab = c->vocab_size;
    int ids[ROUTE_N];
    ck_assert(L <= ROUTE_L && E <= ROUTE_E && K >= 1 && E - 1 >= K);
    make_ids(ids, ROUTE_N, vocab);
    size_t n = (size_t)ROUTE_N * vocab;
    float *plain[2] = {malloc(sizeof(float) * n), malloc(sizeof(float) * n)};
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    static routes rp[2], rf, rr;
    int *force = malloc(sizeof(int) * (size_t)L);
    unsigned char *mask = calloc((size_t)L * E, 1), zeros[ROUTE_E] = {0};
    const int *force_in = NULL;
    const unsigned char *out_in = NULL;
    expert_knock_out ko = {.mask = &out_in, .n_experts = E};
    expert_force ef = {.forced = &force_in, .out = &out_in, .n_experts = E};
    for (int k = 0; k < 2; k++) /* k 0: one token at a time; 1: a batch */
        run_forced(m, &ko, &ef, 0, L - 1, &rp[k], ids, ROUTE_N, k == 0, plain[k]);
    int layers[2] = {0, L - 1};
    for (int j = 0; j < (L > 1 ? 2 : 1); j++) {
        int lf = layers[j], count[ROUTE_E] = {0}, least = 0, most = 0;
        for (int p = 0; p < ROUTE_N; p++)
            count[(int)rp[1].topk[lf][p][0]]++;
        for (int e = 1; e < E; e++) {
            least = count[e] < count[least] ? e : least;
            most = count[e] > count[most] ? e : most;
        }
        for (int l = 0; l < L; l++)
            force[l] = l == lf ? least : -1;
        memset(mask, 0, (size_t)L * E);
        bool knock = j == 0 && most != least;
        if (knock)
            mask[lf * E + most] = 1;
        force_in = force;
        out_in = knock ? mask : NULL;
        for (int k = 0; k < 2; k++) {
            char what[96];
            snprintf(what, sizeof what, "%s, expert %d forced at layer %d%s, %s", shape, least,
                     lf, knock ? " beside a knock-out" : "", k ? "a batch" : "one token");
            run_forced(m, &ko, &ef, 0, L - 1, &rf, ids, ROUTE_N, k == 0, a);
            run_forced(m, &ko, &ef, lf, lf, &rr, ids, ROUTE_N, k == 0, b);
            ck_assert_msg(!memcmp(a, b, sizeof(float) * n), "%s: the editor changed a layer "
                          "without a forced expert", what);
            ck_assert_msg(rel_diff(plain[k], a, n) > 1e-4, "%s: forcing changed nothing", what);
            for (int p = 0; p < ROUTE_N; p++) {
                for (int l = 0; l < L; l++) {
                    ck_assert_msg(same_route(&rf, &rr, l, p), "%s: L%d pos %d: the editor "
                                  "acted outside the forced layer", what, l, p);
                    ck_assert_msg(l >= lf || same_route(&rf, &rp[k], l, p), "%s: L%d pos %d "
                                  "before the forced layer changed", what, l, p);
                    check_route(&rf, c, l, p, out_in ? mask + l * E : zeros, rf.logits[l][p],
                                what);
                }
                const float *lg = rf.logits[lf][p], *was = rp[k].logits[lf][p];
                float max = -INFINITY;
                for (int e = 0; e < E; e++) {
                    if (e == least)
                        continue;
                    float want = mask[lf * E + e] ? -INFINITY : was[e];
                    ck_assert_msg(!memcmp(&lg[e], &want, sizeof want), "%s: pos %d: expert "
                                  "%d's logit %.9g, not %.9g", what, p, e, lg[e], want);
                    max = fmaxf(max, want);
                }
                float want = was[least] > max ? was[least] : nextafterf(max, INFINITY);
                ck_assert_msg(!memcmp(&lg[least], &want, sizeof want), "%s: pos %d: the forced "
                              "logit %.9g, not %.9g (the others' largest %.9g)", what, p,
                              lg[least], want, max);
                ck_assert_msg((int)rf.topk[lf][p][0] == least, "%s: pos %d: expert %d chosen "
                              "first, not the forced %d", what, p, (int)rf.topk[lf][p][0], least);
                for (int s = 1, r = 0; !knock && s < K; s++, r++) {
                    r += (int)rp[k].topk[lf][p][r] == least;
                    ck_assert_msg(rf.topk[lf][p][s] == rp[k].topk[lf][p][r], "%s: pos %d: "
                                  "choice %d is expert %d, not %d (the router's order)", what,
                                  p, s, (int)rf.topk[lf][p][s], (int)rp[k].topk[lf][p][r]);
                }
            }
        }
    }
    /* the expert the router chose first at position 0 anyway: the same bits */
    for (int l = 0; l < L; l++)
        force[l] = l == L - 1 ? (int)rp[0].topk[L - 1][0][0] : -1;
    out_in = NULL;
    run_forced(m, &ko, &ef, 0, L - 1, &rf, ids, 1, true, a);
    for (int l = 0; l < L; l++)
        ck_assert_msg(same_route(&rf, &rp[0], l, 0), "%s: forcing the router's first choice "
                      "changed layer %d", shape, l);
    ck_assert_msg(!memcmp(a, plain[0], sizeof(float) * vocab), "%s: forcing the router's "
                  "first choice changed the logits", shape);
    free(force);
    free(mask);
    free(plain[0]);
    free(plain[1]);
    free(a);
    free(b);
    model_close(m);
}

START_TEST(test_expert_force)
{
    check_expert_force("qwen3moe"); /* the chosen weights renormalised */
    check_expert_force("olmoe");    /* the chosen probabilities as they are */
    check_expert_force("mixtral");
    check_expert_force("gpt-oss");  /* the router's bias, the weights renormalised */
}
END_TEST

/* An editor registered at a point that cannot be edited, or a hook with both functions
 * or neither, is refused; an editor sees each column of a row once, however the
 * threads share them. */
typedef struct {
    int seen[512]; /* times each column of layer 0's l_out, row 0, was handed */
} column_count;

static void count_columns(void *user, hook_slice *x)
{
    column_count *cc = user;
    if (x->pos == 0 && x->layer == 0)
        for (int j = 0; j < x->width; j++)
            cc->seen[x->col + j]++;
}

START_TEST(test_editors)
{
    model_arch llama = model_arch_llama(32);
    toy *wide = toy_new(128, 512, 4, 2, 32, &llama, false);
    transformer *t = new_transformer(&wide->m, 8, TRANSFORMER_KV_F32);
    static column_count cc;
    hook h = {.edit = count_columns, .user = &cc, .points = HOOK_BIT(HOOK_L_OUT),
              .layer_first = 0, .layer_last = 0, .pos = -1};
    int id;
    llm_err err;
    ck_assert_int_eq(transformer_hook_add(t, &h, &id, &err), LLM_OK);
    set_threads(3);
    ck_assert_ptr_nonnull(transformer_forward(t, 1, 0, NULL));
    for (int j = 0; j < wide->m.config.dim; j++)
        ck_assert_msg(cc.seen[j] == 1, "column %d of l_out was edited %d times", j,
                      cc.seen[j]);
    set_threads(omp_procs());
    hook bad = h;
    bad.points = HOOK_BIT(HOOK_KQ_SOFT_MAX);
    ck_assert_int_eq(transformer_hook_add(t, &bad, &id, &err), LLM_ERR_ARG);
    ck_assert_msg(strstr(err.text, "kq_soft_max cannot be edited"), "%s", err.text);
    bad = h;
    bad.fn = (hook_fn)1;
    ck_assert_int_eq(transformer_hook_add(t, &bad, &id, &err), LLM_ERR_ARG);
    transformer_free(t);
    toy_free(wide);
}
END_TEST

/* ---- the model description ---- */

static void set_biases(model_arch *a) { a->attn_bias = true; }
static void set_qk_norm(model_arch *a) { a->qk_norm = true; }
static void set_post_norms(model_arch *a) { a->post_norms = true; }
static void set_attn_cap(model_arch *a) { a->attn_softcap = 1.0f; }
static void set_final_cap(model_arch *a) { a->final_softcap = 2.0f; }
static void set_window(model_arch *a) { a->sliding_window = 4; }
static void set_window_base(model_arch *a)
{
    a->sliding_window = 4;
    a->rope_base_swa = 100.0f;
}
static void set_neox(model_arch *a) { a->rope_layout = MODEL_ROPE_HALVES; }
static void set_partial(model_arch *a) { a->rope_dims = 8; }
static void set_partial_neox(model_arch *a)
{
    a->rope_dims = 8;
    a->rope_layout = MODEL_ROPE_HALVES;
}
static void set_gelu(model_arch *a) { a->act = MODEL_ACT_GELU; }
static void set_embed_scale(model_arch *a) { a->embed_scale = 4.0f; }
static void set_query_scale(model_arch *a) { a->query_scale = 0.6f; }
static void set_every(model_arch *a) { *a = all_features(a->rope_dims); }

static const struct {
    const char *name;
    void (*set)(model_arch *a);
} fields[] = {
    {.name = "llama", .set = NULL},
    {.name = "q, k, v and output biases", .set = set_biases},
    {.name = "QK-norm", .set = set_qk_norm},
    {.name = "post-norms", .set = set_post_norms},
    {.name = "attention soft-cap", .set = set_attn_cap},
    {.name = "final soft-cap", .set = set_final_cap},
    {.name = "sliding window", .set = set_window},
    {.name = "sliding window with its own RoPE base", .set = set_window_base},
    {.name = "NEOX RoPE", .set = set_neox},
    {.name = "partial rotary, pairs", .set = set_partial},
    {.name = "partial rotary, NEOX", .set = set_partial_neox},
    {.name = "GELU", .set = set_gelu},
    {.name = "embedding scale", .set = set_embed_scale},
    {.name = "query scale", .set = set_query_scale},
    {.name = "every field", .set = set_every},
};

/* m as llama would run it: the description's llama values, no optional tensors. */
static void as_llama(const model *m, model *out, model_layer *layers)
{
    *out = *m;
    out->config.arch = model_arch_llama(m->config.head_size);
    for (int l = 0; l < m->config.n_layers; l++) {
        const model_layer *L = &m->layers[l];
        layers[l] = (model_layer){.rms_att = L->rms_att, .rms_ffn = L->rms_ffn, .wq = L->wq,
                                  .wk = L->wk, .wv = L->wv, .wo = L->wo, .w1 = L->w1,
                                  .w2 = L->w2, .w3 = L->w3};
    }
    out->layers = layers;
    model_layers_default(out);
}

/* Each field on its own, and all of them, on a toy whose head size (16) is not dim /
 * n_heads (48 / 4) and whose windows (4, 5) are shorter than the 20 positions run:
 * one token at a time and a batch against the reference, and the field changes the
 * reference's logits (so a pass that ignored it would fail). */
START_TEST(test_description_fields)
{
    enum { N = 12 };
    int ids[N];
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        model_arch a = model_arch_llama(16);
        if (fields[f].set)
            fields[f].set(&a);
        toy *t = toy_new(48, 96, 4, 2, 16, &a, true);
        const model *m = &t->m;
        int vocab = m->config.vocab_size;
        size_t n = (size_t)N * vocab;
        make_ids(ids, N, vocab);
        float *want = malloc(sizeof(float) * n), *one = malloc(sizeof(float) * n);
        float *bat = malloc(sizeof(float) * n), *plain = malloc(sizeof(float) * n);
        ref_run(m, NULL, NULL, ids, N, want);
        transformer *ta = new_transformer(m, N, TRANSFORMER_KV_F32);
        transformer *tb = new_transformer(m, N, TRANSFORMER_KV_F32);
        run_tokens(ta, ids, N, one);
        run_batch(tb, ids, N, bat);
        double d1 = rel_diff(want, one, n), d2 = rel_diff(want, bat, n);
        fprintf(stderr, "%-40s one token %.2g, batch %.2g of the range from the reference\n",
                fields[f].name, d1, d2);
        ck_assert_msg(d1 < 1e-4 && d2 < 1e-4, "%s: %.3g / %.3g from the reference",
                      fields[f].name, d1, d2);
        ck_assert_msg(memcmp(one, bat, sizeof(float) * n) == 0, "%s: batch != one token",
                      fields[f].name);
        if (fields[f].set) {
            model llama;
            model_layer layers[TOY_LAYERS];
            as_llama(m, &llama, layers);
            ref_run(&llama, NULL, NULL, ids, N, plain);
            ck_assert_msg(rel_diff(want, plain, n) > 1e-3, "%s changes nothing here",
                          fields[f].name);
        }
        transformer_free(ta);
        transformer_free(tb);
        free(want);
        free(one);
        free(bat);
        free(plain);
        toy_free(t);
    }
}
END_TEST

/* RoPE's frequency factors (Llama 3.1's rope_freqs; LongRoPE's long ones past the
 * original context, its short ones within it) and LongRoPE's attention factor, on a
 * NEOX toy with partial rotary, through both paths against the reference; each changes
 * the logits, and the long factors are used only in a context longer than
 * rope_long_after. */
START_TEST(test_rope_factors)
{
    enum { N = 12 };
    const struct {
        const char *name;
        bool freqs, long_freqs;
        int long_after;
        float attn_factor;
    } cases[] = {
        {.name = "frequency factors", .freqs = true},
        {.name = "LongRoPE, context past the original", .freqs = true, .long_freqs = true,
         .long_after = 10},
        {.name = "LongRoPE, context within the original", .freqs = true, .long_freqs = true,
         .long_after = N},
        {.name = "attention factor", .attn_factor = 1.3f},
        {.name = "LongRoPE with its attention factor", .freqs = true, .long_freqs = true,
         .long_after = 10, .attn_factor = 1.2f},
    };
    int ids[N];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        model_arch a = model_arch_llama(16);
        set_partial_neox(&a);
        toy *t = toy_new(48, 96, 4, 2, 16, &a, false);
        model *m = &t->m;
        model_config *c = &m->config;
        int vocab = c->vocab_size;
        size_t n = (size_t)N * vocab;
        make_ids(ids, N, vocab);
        float *plain = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
        float *one = malloc(sizeof(float) * n), *bat = malloc(sizeof(float) * n);
        ref_run(m, NULL, NULL, ids, N, plain);
        if (cases[k].freqs)
            c->rope_freqs = toy_array(t, a.rope_dims / 2, 2.0f, 1.0f);
        if (cases[k].long_freqs)
            c->rope_freqs_long = toy_array(t, a.rope_dims / 2, 20.0f, 15.0f);
        c->rope_long_after = cases[k].long_after;
        c->rope_attn_factor = cases[k].attn_factor;
        ref_run(m, NULL, NULL, ids, N, want);
        transformer *ta = new_transformer(m, N, TRANSFORMER_KV_F32);
        transformer *tb = new_transformer(m, N, TRANSFORMER_KV_F32);
        run_tokens(ta, ids, N, one);
        run_batch(tb, ids, N, bat);
        double d1 = rel_diff(want, one, n), d2 = rel_diff(want, bat, n);
        ck_assert_msg(d1 < 1e-4 && d2 < 1e-4, "%s: %.3g / %.3g from the reference",
                      cases[k].name, d1, d2);
        ck_assert_msg(rel_diff(want, plain, n) > 1e-3, "%s changes nothing here", cases[k].name);
        if (cases[k].long_freqs) { /* the pass chose the right ones: the others differ */
            const float *lf = c->rope_freqs_long, *sf = c->rope_freqs;
            c->rope_freqs_long = NULL;
            c->rope_freqs = cases[k].long_after < N ? sf : lf;
            ref_run(m, NULL, NULL, ids, N, plain);
            ck_assert_msg(rel_diff(want, plain, n) > 1e-3, "%s: the other factors give the same "
                          "logits", cases[k].name);
        }
        transformer_free(ta);
        transformer_free(tb);
        free(plain);
        free(want);
        free(one);
        free(bat);
        toy_free(t);
    }
}
END_TEST

/* What a loader of the llama architecture fills in: llama's values. */
START_TEST(test_llama_values)
{
    const char *files[] = {"stories260K.bin", "stories260K.gguf", "aidreams260K.bin"};
    for (int f = 0; f < 3; f++) {
        model *m = open_model(files[f], TENSOR_BLOCKS);
        const model_config *c = &m->config;
        const model_arch *a = &c->arch;
        ck_assert_str_eq(a->name, "llama");
        ck_assert_int_eq(a->rope_layout, MODEL_ROPE_PAIRS);
        ck_assert_int_eq(a->rope_dims, c->head_size);
        ck_assert_int_eq(a->act, MODEL_ACT_SILU);
        ck_assert(a->embed_scale == 1.0f && a->rope_base_swa == 0.0f);
        ck_assert(a->query_scale == 1.0f / sqrtf((float)c->head_size));
        ck_assert(a->attn_softcap == 0.0f && a->final_softcap == 0.0f);
        ck_assert(!a->attn_bias && !a->qk_norm && !a->post_norms);
        ck_assert(!a->fused_qkv && !a->fused_gate_up && a->sliding_window == 0);
        ck_assert_int_eq(c->q_dim, c->dim);
        ck_assert_int_eq(c->head_size * c->n_heads, c->dim);
        for (int l = 0; l < c->n_layers; l++) {
            const model_layer *L = &m->layers[l];
            ck_assert(!L->bq && !L->bk && !L->bv && !L->q_norm && !L->k_norm);
            ck_assert(!L->post_attn_norm && !L->post_ffn_norm && L->window == 0);
        }
        model_close(m);
    }
}
END_TEST

/* A fused tensor's parts are views of its rows (model_tensor_rows), for every layout. */
static void check_rows_view(const tensor *w, const char *what)
{
    int r0 = w->rows / 3, r1 = w->rows - 2;
    tensor v = model_tensor_rows(w, r0, r1);
    ck_assert_int_eq(v.rows, r1 - r0);
    ck_assert_int_eq(v.cols, w->cols);
    float *a = malloc(sizeof(float) * w->cols), *b = malloc(sizeof(float) * w->cols);
    for (int r = 0; r < v.rows; r++) {
        quant_dequantize_row(a, &v, r);
        quant_dequantize_row(b, w, r0 + r);
        ck_assert_msg(memcmp(a, b, sizeof(float) * w->cols) == 0, "%s: row %d of the view is "
                      "not row %d", what, r, r0 + r);
    }
    free(a);
    free(b);
}

START_TEST(test_fused_views)
{
    struct {
        const char *file;
        tensor_type type;
    } cases[] = {
        {.file = "stories260K.bin", .type = TENSOR_F32},
        {.file = "stories260K.bin", .type = TENSOR_Q8_0},
        {.file = "stories260K-q8_0.gguf", .type = TENSOR_BLOCKS},
        {.file = "rand256-q4_k_m.gguf", .type = TENSOR_BLOCKS},
    };
    tensor_type seen[4];
    for (int i = 0; i < 4; i++) {
        model *m = open_model(cases[i].file, cases[i].type);
        check_rows_view(&m->layers[0].w1, cases[i].file);
        check_rows_view(&m->layers[0].wq, cases[i].file);
        seen[i] = m->layers[0].w1.type;
        model_close(m);
    }
    ck_assert(seen[0] == TENSOR_F32 && seen[1] == TENSOR_Q8_0);
    ck_assert(seen[2] == TENSOR_Q8_0_BLOCKS && seen[3] == TENSOR_BLOCKS);
}
END_TEST

/* Attribution splits the logit of models with post-norms, biases and a final soft-cap:
 * the parts add up to the logit before the cap (the
 * post-norms' scales held at the position, as the final norm's), and the cap of that
 * sum is the logit. */
START_TEST(test_attribution_families)
{
    void (*const sets[])(model_arch *) = {set_post_norms, set_biases, set_final_cap, set_every};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        model_arch a = model_arch_llama(16);
        sets[k](&a);
        toy *t = toy_new(48, 96, 4, 2, 16, &a, true);
        const model_config *c = &t->m.config;
        transformer *tf = new_transformer(&t->m, 32, TRANSFORMER_KV_F32);
        int ids[8];
        make_ids(ids, 8, c->vocab_size);
        for (int i = 0; i < 7; i++)
            ck_assert_ptr_nonnull(transformer_forward(tf, ids[i], i, NULL));
        float *parts = malloc(sizeof(float) * (size_t)c->n_layers * transformer_parts_width(c));
        float *resid = malloc(sizeof(float) * (size_t)c->n_layers * c->dim);
        float *logits = malloc(sizeof(float) * (size_t)c->vocab_size);
        llm_err err;
        ck_assert_int_eq(transformer_components(tf, ids[7], 7, parts, resid, logits, &err), LLM_OK);
        attribution_input in = {.parts = parts, .final = resid + (size_t)(c->n_layers - 1) * c->dim,
                                .steer = NULL, .token = ids[7]};
        float cap = a.final_softcap, head[TOY_LAYERS * 4], mlp[TOY_LAYERS];
        for (int target = 0; target < c->vocab_size; target += 31) {
            step_attribution out;
            ck_assert_int_eq(attribution_compute(&t->m, &in, target, head, mlp, NULL, NULL, NULL,
                                                 &out, &err),
                             LLM_OK);
            double sum = attribution_sum(&out), logit = logits[target];
            double want = cap != 0.0f ? cap * atanh(logit / cap) : logit;
            ck_assert_msg(fabs(sum - want) <= 1e-4 * (1.0 + fabs(want)),
                          "case %zu, token %d: parts sum %g, the logit before the cap %g", k,
                          target, sum, want);
            ck_assert(fabs(out.before_cap - sum) <= 1e-5 * (1.0 + fabs(sum)));
            ck_assert(out.softcap == cap && out.post_norms == a.post_norms);
        }
        free(parts);
        free(resid);
        free(logits);
        transformer_free(tf);
        toy_free(t);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("forward");
    TCase *paths = tcase_create("paths");
    tcase_set_timeout(paths, 300);
    tcase_add_test(paths, test_batch_is_one_token);
    tcase_add_test(paths, test_interventions_both_paths);
    tcase_add_test(paths, test_expert_knock_out);
    tcase_add_test(paths, test_expert_force);
    tcase_add_test(paths, test_editors);
    suite_add_tcase(s, paths);
    TCase *points = tcase_create("points");
    tcase_set_timeout(points, 300);
    tcase_add_test(points, test_points_fire);
    tcase_add_test(points, test_per_layer_input_point);
    tcase_add_test(points, test_expert_points_fire);
    tcase_add_test(points, test_dense_beside_experts_points);
    tcase_add_test(points, test_points_chosen);
    tcase_add_test(points, test_hook_limits);
    suite_add_tcase(s, points);
    TCase *desc = tcase_create("description");
    tcase_set_timeout(desc, 300);
    tcase_add_test(desc, test_description_fields);
    tcase_add_test(desc, test_rope_factors);
    tcase_add_test(desc, test_llama_values);
    tcase_add_test(desc, test_fused_views);
    tcase_add_test(desc, test_attribution_families);
    suite_add_tcase(s, desc);
    return s;
}

TEST_MAIN(make_suite)
