/* transformer.c — the Llama 2 forward pass, with exactly the math of llama2.c's run.c:
 * RMSNorm, RoPE over interleaved pairs (epsilon and RoPE base from the model config), grouped-query attention over the
 * KV cache, SwiGLU feed-forward, residuals, final RMSNorm and classifier. The KV cache
 * is fp32 (run.c's numbers) or int8 rows with one scale per (position, head).
 *
 * Owns the KV cache, the activation buffers and the quantized activations for one
 * sequence. Borrows the model. Does not own weights or pick kernels: every matmul
 * goes through kernels.h. A batch of tokens is processed in chunks of 64-256
 * positions with matrix-matrix kernels, attention parallel over heads (OpenMP), each
 * head a batch of queries. A single token runs in one parallel region whose threads
 * share every matrix's rows and meet at a barrier per data dependence (forward_one).
 * Both forward functions return NULL, and do nothing, when a token or a position is
 * out of range. */
#include "transformer.h"

#include "barrier.h"
#include "clock.h"
#include "cpus.h"
#include "team.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* A batch is processed in chunks of positions: the most whose buffers (activations,
 * new keys and values, one thread's attention rows) fit in CHUNK_BUDGET, a multiple
 * of CHUNK_MIN, at most CHUNK_MAX. Bigger chunks mean fewer passes over the weights
 * and fewer parallel regions; the budget keeps 7B (dim 4096, 4096 positions) at 128.
 * PARALLEL_TOKENS: a batch's per-token steps go parallel from this many tokens on
 * (below, a parallel region costs more than it saves). */
enum { CHUNK_MIN = 64, CHUNK_MAX = 256, MAX_QBATCHES = 8, PARALLEL_TOKENS = 8 };
#define CHUNK_BUDGET ((size_t)32 << 20)

struct transformer {
    const model *m;         /* borrowed; must outlive the transformer */
    int ctx;                /* positions the KV cache holds */
    transformer_kv kv;      /* F32: key_cache / value_cache; Q8_0: kq, ks, vq, vs */
    float *key_cache;       /* (layer, ctx, kv_dim) */
    float *value_cache;     /* (layer, ctx, kv_dim) */
    int8_t *kq, *vq;        /* (layer, kv_head, ctx, head_size) int8 rows */
    float *ks, *vs;         /* (layer, kv_head, ctx) their scales */
    float *kv_f32;          /* (att_slots, 2, ctx, head_size) one head's keys and values
                               made fp32 again, for batched attention over a Q8_0 cache */
    float *logits;          /* (vocab) of the last position run */
    /* The classifier's input of every position run (its final normed state), kept
     * like the KV cache so that transformer_logits can compute any position's logits
     * later; pages are touched only for positions run. */
    qbatch *cls_q;          /* Q8_0 classifier: (ctx) vectors quantized for it */
    float *cls_f;           /* F32 classifier: (ctx, dim) */
    int chunk;              /* positions per batch chunk (chunk_positions) */
    float *att;             /* (att_slots, chunk, ctx) attention weights, one slot per thread */
    int att_slots;

    int cap;                /* positions the buffers below hold (1..chunk) */
    float *x;               /* (cap, dim) residual stream */
    float *xb;              /* (cap, dim) normed input / attention output */
    float *xb2;             /* (cap, dim) projection output */
    float *q;               /* (cap, dim) queries */
    float *hb;              /* (cap, hidden_dim) w1 x, then the SwiGLU product */
    float *hb2;             /* (cap, hidden_dim) w3 x */
    float *rope;            /* (cap, head_size) cos, sin of each pair at each position */
    /* Quantized activations, one per distinct (len, group) among the Q8_0 weights:
     * each holds cap vectors. */
    qbatch *qb[MAX_QBATCHES];
    int n_qb;

    /* The one-token path runs a single parallel region; each thread normalises and
     * quantizes the shared input itself (no barrier for it) into its own lane. */
    struct lane {
        float *xn;                  /* (max(dim, hidden_dim)) normed input */
        qbatch *qb[MAX_QBATCHES];   /* one vector each, like t->qb */
    } *lanes;                       /* (n_lanes) */
    int n_lanes;
    barrier meet;                   /* the one-token path's barrier */
    team team;                      /* its thread count beside busy programs (team.h) */
    float *k_new;                   /* (chunk, kv_dim) new keys, before the cache */
    float *v_new;                   /* (chunk, kv_dim) new values */
    float *resid_capture;           /* (n_layers, dim) or NULL: forward_one copies the
                                       residual stream after each layer here (the lens) */
    const float *steer;             /* (n_layers, dim) or NULL: added to the residual
                                       stream after each layer (control vectors);
                                       borrowed (transformer_set_steer) */
    const unsigned char *head_mask; /* (n_layers, n_heads) or NULL: a head whose entry is
                                       not 0 has its attention output zeroed before wo
                                       (knocked out); borrowed (transformer_set_head_mask) */
    float *logits_capture;          /* (vocab) or NULL: run_again copies the logits of the
                                       position it ran here before restoring them */
    float *parts_capture;           /* (n_layers, 2, dim) or NULL: forward_one copies each
                                       layer's attention output before wo (the heads side
                                       by side) and its feed-forward output here (direct
                                       logit attribution) */
};

int transformer_ctx(const transformer *t)
{
    return t->ctx;
}

transformer_kv transformer_kv_type(const transformer *t)
{
    return t->kv;
}

/* Bytes of the KV cache for ctx positions of config p. */
static size_t kv_bytes(const model_config *p, int ctx, transformer_kv kv)
{
    size_t values = 2 * (size_t)p->n_layers * ctx * p->kv_dim;
    if (kv == TRANSFORMER_KV_F32)
        return values * sizeof(float);
    return values + 2 * (size_t)p->n_layers * ctx * p->n_kv_heads * sizeof(float);
}

size_t transformer_kv_bytes(const transformer *t)
{
    return kv_bytes(&t->m->config, t->ctx, t->kv);
}

const model *transformer_model(const transformer *t)
{
    return t->m;
}

/* ---- buffers ---- */

/* Positions per batch chunk for this shape and context (see CHUNK_BUDGET). */
static int chunk_positions(const model_config *p, int ctx)
{
    size_t per_position = sizeof(float) * (4 * (size_t)p->dim + 2 * (size_t)p->hidden_dim +
                                           2 * (size_t)p->kv_dim + (size_t)ctx);
    size_t n = CHUNK_BUDGET / per_position;
    n -= n % CHUNK_MIN;
    return n < CHUNK_MIN ? CHUNK_MIN : n > CHUNK_MAX ? CHUNK_MAX : (int)n;
}

typedef struct {
    float *x, *xb, *xb2, *q, *hb, *hb2, *rope;
    qbatch *qb[MAX_QBATCHES];
} batch_buffers;

static void buffers_free(batch_buffers *b, int n_qb)
{
    free(b->x);
    free(b->xb);
    free(b->xb2);
    free(b->q);
    free(b->hb);
    free(b->hb2);
    free(b->rope);
    for (int i = 0; i < n_qb; i++)
        qbatch_free(b->qb[i]);
}

/* Makes the batch buffers hold cap positions. On failure the old ones stay. */
static bool transformer_reserve(transformer *t, int cap)
{
    const model_config *p = &t->m->config;
    batch_buffers b = {0};
    size_t n = (size_t)cap;
    b.x = malloc(sizeof(float) * n * p->dim);
    b.xb = malloc(sizeof(float) * n * p->dim);
    b.xb2 = malloc(sizeof(float) * n * p->dim);
    b.q = malloc(sizeof(float) * n * p->dim);
    b.hb = malloc(sizeof(float) * n * p->hidden_dim);
    b.hb2 = malloc(sizeof(float) * n * p->hidden_dim);
    b.rope = malloc(sizeof(float) * n * p->head_size);
    bool ok = b.x && b.xb && b.xb2 && b.q && b.hb && b.hb2 && b.rope;
    for (int i = 0; i < t->n_qb; i++) {
        b.qb[i] = ok ? qbatch_new(cap, t->qb[i]->len, t->qb[i]->group) : NULL;
        ok = ok && b.qb[i];
    }
    if (!ok) {
        buffers_free(&b, t->n_qb);
        return false;
    }
    batch_buffers old = {t->x, t->xb, t->xb2, t->q, t->hb, t->hb2, t->rope, {0}};
    memcpy(old.qb, t->qb, sizeof old.qb);
    buffers_free(&old, t->n_qb);
    t->x = b.x;
    t->xb = b.xb;
    t->xb2 = b.xb2;
    t->q = b.q;
    t->hb = b.hb;
    t->hb2 = b.hb2;
    t->rope = b.rope;
    memcpy(t->qb, b.qb, sizeof t->qb);
    t->cap = cap;
    return true;
}

/* Index in t->qb (and in each lane's qb) of the qbatch for vectors of len values
 * quantized with group, registered at _new; -1 if there is none. */
static int qbatch_index(const transformer *t, int len, int group)
{
    for (int i = 0; i < t->n_qb; i++)
        if (t->qb[i]->len == len && t->qb[i]->group == group)
            return i;
    return -1;
}

static qbatch *qbatch_for(transformer *t, int len, int group)
{
    int i = qbatch_index(t, len, group);
    return i < 0 ? NULL : t->qb[i];
}

/* Registers the (cols, group) of a Q8_0 weight; returns false when out of room. */
static bool qbatch_register(transformer *t, const tensor *w)
{
    if (!tensor_is_q8(w) || qbatch_for(t, w->cols, w->group))
        return true;
    if (t->n_qb == MAX_QBATCHES)
        return false;
    qbatch *b = qbatch_new(1, w->cols, w->group);
    if (!b)
        return false;
    t->qb[t->n_qb++] = b;
    return true;
}

/* Frees n lanes (those not fully allocated hold NULLs) and the array. */
static void lanes_destroy(struct lane *lanes, int n, int n_qb)
{
    for (int i = 0; lanes && i < n; i++) {
        free(lanes[i].xn);
        for (int j = 0; j < n_qb; j++)
            qbatch_free(lanes[i].qb[j]);
    }
    free(lanes);
}

static void lanes_free(transformer *t)
{
    lanes_destroy(t->lanes, t->n_lanes, t->n_qb);
    t->lanes = NULL;
    t->n_lanes = 0;
}

/* Makes one lane per thread the one-token path may use (the OpenMP thread count, at
 * least 1). On failure the old lanes stay and fewer threads are used. */
static int lanes_reserve(transformer *t)
{
    int want = 1;
#ifdef _OPENMP
    want = omp_get_max_threads();
#endif
    if (want <= t->n_lanes)
        return want;
    const model_config *p = &t->m->config;
    struct lane *lanes = calloc((size_t)want, sizeof *lanes);
    bool ok = lanes != NULL;
    int big = p->dim > p->hidden_dim ? p->dim : p->hidden_dim;
    for (int i = 0; ok && i < want; i++) {
        ok = (lanes[i].xn = malloc(sizeof(float) * big)) != NULL;
        for (int j = 0; ok && j < t->n_qb; j++)
            ok = (lanes[i].qb[j] = qbatch_new(1, t->qb[j]->len, t->qb[j]->group)) != NULL;
    }
    if (!ok) {
        lanes_destroy(lanes, want, t->n_qb);
        return t->n_lanes;
    }
    lanes_free(t);
    t->lanes = lanes;
    t->n_lanes = want;
    return want;
}

void transformer_free(transformer *t)
{
    if (!t)
        return;
    batch_buffers b = {t->x, t->xb, t->xb2, t->q, t->hb, t->hb2, t->rope, {0}};
    memcpy(b.qb, t->qb, sizeof b.qb);
    buffers_free(&b, t->n_qb);
    lanes_free(t);
    free(t->k_new);
    free(t->v_new);
    free(t->key_cache);
    free(t->value_cache);
    free(t->kq);
    free(t->vq);
    free(t->ks);
    free(t->vs);
    free(t->kv_f32);
    free(t->logits);
    qbatch_free(t->cls_q);
    free(t->cls_f);
    free(t->att);
    free(t);
}

llm_status transformer_new(const model *m, int ctx_len, transformer **out, llm_err *err)
{
    return transformer_new_kv(m, ctx_len, TRANSFORMER_KV_AUTO, out, err);
}

llm_status transformer_new_kv(const model *m, int ctx_len, transformer_kv kv, transformer **out,
                              llm_err *err)
{
    *out = NULL;
    const model_config *p = &m->config;
    if (ctx_len < 0 || ctx_len > p->seq_len)
        return llm_fail(err, LLM_ERR_ARG,
                        "context length %d is out of range: %s allows 1 to %d", ctx_len,
                        m->name, p->seq_len);
    transformer *t = calloc(1, sizeof *t);
    if (!t)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the transformer state");
    t->m = m;
    t->ctx = ctx_len ? ctx_len : p->seq_len;
    if (kv == TRANSFORMER_KV_AUTO)
        kv = tensor_is_q8(&m->layers[0].wq) ? TRANSFORMER_KV_Q8_0 : TRANSFORMER_KV_F32;
    t->kv = kv;
    size_t cache = (size_t)p->n_layers * t->ctx * p->kv_dim;
    size_t rows = (size_t)p->n_layers * p->n_kv_heads * t->ctx;
    bool ok;
    if (kv == TRANSFORMER_KV_F32) {
        t->key_cache = calloc(cache, sizeof(float));
        t->value_cache = calloc(cache, sizeof(float));
        ok = t->key_cache && t->value_cache;
    } else {
        t->kq = calloc(cache, 1);
        t->vq = calloc(cache, 1);
        t->ks = calloc(rows, sizeof(float));
        t->vs = calloc(rows, sizeof(float));
        t->kv_f32 = malloc(sizeof(float) * 2 * t->ctx * p->head_size);
        ok = t->kq && t->vq && t->ks && t->vs && t->kv_f32;
    }
    t->logits = calloc((size_t)p->vocab_size, sizeof(float));
    if (tensor_is_q8(&m->wcls))
        ok = ok && (t->cls_q = qbatch_new(t->ctx, m->wcls.cols, m->wcls.group)) != NULL;
    else
        ok = ok && (t->cls_f = malloc(sizeof(float) * (size_t)t->ctx * p->dim)) != NULL;
    t->chunk = chunk_positions(p, t->ctx);
    t->att = calloc((size_t)t->chunk * t->ctx, sizeof(float));
    t->att_slots = 1;
    t->k_new = malloc(sizeof(float) * t->chunk * p->kv_dim);
    t->v_new = malloc(sizeof(float) * t->chunk * p->kv_dim);
    ok = ok && t->logits && t->att && t->k_new && t->v_new;
    for (int l = 0; ok && l < p->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        const tensor *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
        for (size_t i = 0; ok && i < sizeof ws / sizeof ws[0]; i++)
            ok = qbatch_register(t, ws[i]);
    }
    ok = ok && qbatch_register(t, &m->wcls) && transformer_reserve(t, 1) &&
         lanes_reserve(t) > 0;
    if (!ok) {
        transformer_free(t);
        char mb[32];
        return llm_fail(err, LLM_ERR_NOMEM,
                        "out of memory for a context of %d positions (KV cache %s MiB)",
                        ctx_len ? ctx_len : p->seq_len,
                        llm_group_digits(mb, sizeof mb,
                                         (long long)(kv_bytes(p, ctx_len ? ctx_len : p->seq_len,
                                                              kv) >> 20)));
    }
    *out = t;
    return LLM_OK;
}

/* ---- the math of run.c ---- */

static void rmsnorm(float *o, const float *x, const float *weight, int size, float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < size; j++)
        o[j] = weight[j] * (ss * x[j]);
}

/* out[j] (n, w[j]->rows) = x (n, cols) · w[j]ᵀ for `count` weights sharing the input x.
 * Q8_0 weights get x quantized once per distinct (cols, group). */
static void matmul_shared(transformer *t, const float *x, int n, int count,
                          const tensor *const *w, float *const *out)
{
    qbatch *done[MAX_QBATCHES];
    int n_done = 0;
    for (int j = 0; j < count; j++) {
        qbatch *xq = NULL;
        if (tensor_is_q8(w[j])) {
            xq = qbatch_for(t, w[j]->cols, w[j]->group);
            bool fresh = true;
            for (int d = 0; d < n_done; d++)
                fresh = fresh && done[d] != xq;
            if (fresh) {
                qbatch_quantize(xq, x, n);
                done[n_done++] = xq;
            }
        }
        if (n == 1)
            kernels_matvec(out[j], w[j], x, xq);
        else
            kernels_gemm(out[j], w[j], x, xq, n);
    }
}

static void matmul(transformer *t, float *out, const tensor *w, const float *x, int n)
{
    matmul_shared(t, x, n, 1, &w, &out);
}

/* x[i] += y[i] for i < n: a residual. */
static void add_into(float *x, const float *y, int n)
{
    for (int i = 0; i < n; i++)
        x[i] += y[i];
}

/* cos and sin of every RoPE pair for positions pos..pos+n-1 into t->rope, as run.c
 * computes them: freq = 1 / base^(head_dim / head_size), angle = pos * freq (base
 * 10000 in llama2.c); as llama.cpp scales them: the angle is divided by the pair's
 * factor from rope_freqs.weight (Llama 3.1+) and multiplied by the linear scale
 * (1 / rope.scaling.factor). Every path (prefill, decode, the lens, attention
 * recomputation, replay) gets its angles here. */
static void rope_angles(transformer *t, int pos, int n)
{
    int hs = t->m->config.head_size;
    float base = t->m->config.rope_base;
    float scale = t->m->config.rope_scale > 0.0f ? t->m->config.rope_scale : 1.0f;
    const float *factors = t->m->config.rope_freqs;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++) {
        float *r = t->rope + (size_t)i * hs;
        for (int hd = 0; hd < hs; hd += 2) {
            float freq = 1.0f / powf(base, hd / (float)hs);
            if (factors)
                freq /= factors[hd / 2];
            float val = (pos + i) * scale * freq;
            r[hd] = cosf(val);
            r[hd + 1] = sinf(val);
        }
    }
}

/* Rotates each interleaved pair of the heads of vec (len values, heads of hs). */
static void rope_apply(float *vec, int len, const float *r, int hs)
{
    for (int i = 0; i < len; i += 2) {
        float fcr = r[i % hs], fci = r[i % hs + 1];
        float v0 = vec[i], v1 = vec[i + 1];
        vec[i] = v0 * fcr - v1 * fci;
        vec[i + 1] = v0 * fci + v1 * fcr;
    }
}

/* ---- the KV cache ---- */

/* Row of (layer l, KV head kh, position p) in the Q8_0 cache. */
static size_t q8_row(const transformer *t, int l, int kh, int p)
{
    return ((size_t)l * t->m->config.n_kv_heads + kh) * t->ctx + p;
}

/* Stores the rotated key k and the value v (head_size each) of KV head kh at
 * position pos of layer l. */
static void cache_store(transformer *t, int l, int pos, int kh, const float *k, const float *v)
{
    const model_config *c = &t->m->config;
    int hs = c->head_size;
    if (t->kv == TRANSFORMER_KV_F32) {
        size_t at = ((size_t)l * t->ctx + pos) * c->kv_dim + (size_t)kh * hs;
        memcpy(t->key_cache + at, k, sizeof(float) * hs);
        memcpy(t->value_cache + at, v, sizeof(float) * hs);
    } else {
        size_t r = q8_row(t, l, kh, pos);
        quant_quantize_row(t->kq + r * hs, t->ks + r, k, hs, hs, hs);
        quant_quantize_row(t->vq + r * hs, t->vs + r, v, hs, hs, hs);
    }
}

/* Stores token i's keys and values (rows i of t->k_new, t->v_new: (n, kv_dim)), every
 * KV head, at position pos + i. */
static void cache_store_token(transformer *t, int l, int pos, int i)
{
    const model_config *c = &t->m->config;
    for (int kh = 0; kh < c->n_kv_heads; kh++) {
        size_t at = (size_t)i * c->kv_dim + (size_t)kh * c->head_size;
        cache_store(t, l, pos + i, kh, t->k_new + at, t->v_new + at);
    }
}

/* Threads that may run attention: one scratch row of t->att each. Grows t->att to
 * the current OpenMP thread count; if that fails, fewer threads are used. */
static int attention_threads(transformer *t)
{
#ifdef _OPENMP
    int want = omp_get_max_threads();
    if (want > t->att_slots) {
        size_t hs = (size_t)t->m->config.head_size;
        float *grown = realloc(t->att, sizeof(float) * (size_t)want * t->chunk * t->ctx);
        if (grown)
            t->att = grown;
        if (grown && t->kv == TRANSFORMER_KV_Q8_0) {
            float *kv = realloc(t->kv_f32, sizeof(float) * (size_t)want * 2 * t->ctx * hs);
            if (kv)
                t->kv_f32 = kv;
            else
                grown = NULL;
        }
        if (grown)
            t->att_slots = want;
    }
#endif
    return t->att_slots;
}

/* Causal attention of layer l for the n queries at positions pos..pos+n-1 (q: (n, dim))
 * over the cached keys and values 0..pos+i; output into xb (n, dim). attn[i], when
 * not NULL, receives query i's weights at layer l: (n_heads, pos + i + 1). Parallel
 * over heads; each head runs all n queries at once, so each key and value row it
 * loads serves a block of queries. */
static void attention(transformer *t, int l, int pos, int n, const float *q, float *xb,
                      float *const *attn)
{
    const model_config *c = &t->m->config;
    int hs = c->head_size, kv_dim = c->kv_dim, n_heads = c->n_heads;
    int kv_mul = c->n_heads / c->n_kv_heads, dim = c->dim;
    /* Threads only pay off with enough work: a parallel region costs microseconds. */
    long work = (long)n * n_heads * (pos + n) * hs;
    int threads = work >= 65536 ? attention_threads(t) : 1;
    (void)threads; /* unused without OpenMP */
    size_t slot = (size_t)t->chunk * t->ctx;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int h = 0; h < n_heads; h++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float *att = t->att + (size_t)tid * slot; /* (n, pos + n) */
        int kh = h / kv_mul;
        const float *k, *v;
        size_t stride;
        if (t->kv == TRANSFORMER_KV_F32) {
            k = t->key_cache + (size_t)l * t->ctx * kv_dim + (size_t)kh * hs;
            v = t->value_cache + (size_t)l * t->ctx * kv_dim + (size_t)kh * hs;
            stride = kv_dim;
        } else {
            /* this head's rows as fp32 (pos + n, hs): a query block reuses each */
            float *kf = t->kv_f32 + (size_t)tid * 2 * t->ctx * hs, *vf = kf + (size_t)t->ctx * hs;
            size_t r = q8_row(t, l, kh, 0);
            quant_dequantize_rows(kf, t->kq + r * hs, t->ks + r, pos + n, hs);
            quant_dequantize_rows(vf, t->vq + r * hs, t->vs + r, pos + n, hs);
            k = kf;
            v = vf;
            stride = hs;
        }
        kernels_attention_f32(xb + (size_t)h * hs, dim, att, pos + n, q + (size_t)h * hs, dim, k,
                            v, stride, n, pos, hs, scale);
        if (attn)
            for (int i = 0; i < n; i++)
                if (attn[i])
                    memcpy(attn[i] + ((size_t)l * n_heads + h) * (pos + i + 1),
                           att + (size_t)i * (pos + n), sizeof(float) * (pos + i + 1));
    }
}

/* ---- the classifier ---- */

/* Positions pos..pos+n-1 of the kept classifier inputs, as the classifier reads them:
 * *xq a view of t->cls_q's vectors (Q8_0), or *x of t->cls_f's rows (F32). */
static void classifier_input(const transformer *t, int pos, qbatch *xq, const float **x)
{
    *x = NULL;
    if (t->cls_q) {
        const qbatch *b = t->cls_q;
        *xq = *b;
        xq->q = b->q + (size_t)pos * b->stride;
        xq->scale = b->scale + (size_t)pos * (b->stride / b->group);
    } else {
        *x = t->cls_f + (size_t)pos * t->m->config.dim;
    }
}

/* Keeps the classifier inputs xn (n, dim), the final normed states of positions
 * pos..pos+n-1. */
static void classifier_keep(transformer *t, int pos, int n, const float *xn)
{
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    if (t->cls_q)
        qbatch_quantize(&view, xn, n);
    else
        memcpy((float *)rows, xn, sizeof(float) * (size_t)n * t->m->config.dim);
}

/* Keeps one position's classifier input from an already quantized copy: xq (Q8_0
 * classifier) or xn (F32). */
static void classifier_keep_one(transformer *t, int pos, const qbatch *xq, const float *xn)
{
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    if (t->cls_q) {
        memcpy(view.q, xq->q, (size_t)view.stride);
        memcpy(view.scale, xq->scale, sizeof(float) * (size_t)(view.stride / view.group));
    } else {
        memcpy((float *)rows, xn, sizeof(float) * t->m->config.dim);
    }
}

void transformer_logits(transformer *t, int pos, int n, float *logits)
{
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    kernels_matmul(logits, &t->m->wcls, rows, t->cls_q ? &view : NULL, n);
}

/* ---- control vectors ---- */

void transformer_set_steer(transformer *t, const float *steer)
{
    t->steer = steer;
}

/* Adds layer l's steering row to the residual streams of a batch's n tokens. */
static void steer_rows(transformer *t, int l, int n)
{
    int dim = t->m->config.dim;
    const float *v = t->steer + (size_t)l * dim;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++)
        add_into(t->x + (size_t)i * dim, v, dim);
}

/* Thread tid's share (of nt) of adding layer l's steering row to the one token's
 * residual stream; the caller places the barrier. */
static void steer_share(transformer *t, int l, int tid, int nt)
{
    int dim = t->m->config.dim;
    int i0 = (int)((long)dim * tid / nt), i1 = (int)((long)dim * (tid + 1) / nt);
    add_into(t->x + i0, t->steer + (size_t)l * dim + i0, i1 - i0);
}

/* ---- knocked-out heads ---- */

void transformer_set_head_mask(transformer *t, const unsigned char *mask)
{
    t->head_mask = mask;
}

/* Zeroes the attention output (in t->xb) of layer l's knocked-out heads for n tokens. */
static void mask_heads(transformer *t, int l, int n)
{
    const model_config *c = &t->m->config;
    for (int h = 0; h < c->n_heads; h++)
        if (t->head_mask[l * c->n_heads + h])
            for (int i = 0; i < n; i++)
                memset(t->xb + (size_t)i * c->dim + (size_t)h * c->head_size, 0,
                       sizeof(float) * c->head_size);
}

/* Runs n (<= cap) tokens at positions pos..: the KV cache and the classifier inputs
 * of those positions. */
static void forward_chunk(transformer *t, const int *tokens, int n, int pos,
                          float *const *attn)
{
    const model *m = t->m;
    const model_config *c = &m->config;
    int dim = c->dim, hidden = c->hidden_dim, kv_dim = c->kv_dim, hs = c->head_size;

    /* The per-token steps between the matmuls (norms, RoPE, the KV store, residuals,
     * SwiGLU) run on all threads too. Each token's values are computed alone, so the
     * results do not depend on the threads. */
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++)
        quant_dequantize_row(t->x + (size_t)i * dim, &m->token_embedding, tokens[i]);
    rope_angles(t, pos, n);

    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
        for (int i = 0; i < n; i++)
            rmsnorm(t->xb + (size_t)i * dim, t->x + (size_t)i * dim, L->rms_att, dim, t->m->config.rms_eps);
        const tensor *qkv[] = {&L->wq, &L->wk, &L->wv};
        float *qkv_out[] = {t->q, t->k_new, t->v_new};
        matmul_shared(t, t->xb, n, 3, qkv, qkv_out);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
        for (int i = 0; i < n; i++) {
            const float *r = t->rope + (size_t)i * hs;
            rope_apply(t->q + (size_t)i * dim, dim, r, hs);
            rope_apply(t->k_new + (size_t)i * kv_dim, kv_dim, r, hs);
            cache_store_token(t, l, pos, i);
        }

        attention(t, l, pos, n, t->q, t->xb, attn);
        if (t->head_mask)
            mask_heads(t, l, n);
        matmul(t, t->xb2, &L->wo, t->xb, n);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
        for (int i = 0; i < n; i++) {
            float *x = t->x + (size_t)i * dim;
            add_into(x, t->xb2 + (size_t)i * dim, dim);
            rmsnorm(t->xb + (size_t)i * dim, x, L->rms_ffn, dim, t->m->config.rms_eps);
        }
        const tensor *ffn[] = {&L->w1, &L->w3};
        float *ffn_out[] = {t->hb, t->hb2};
        matmul_shared(t, t->xb, n, 2, ffn, ffn_out);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
        for (int i = 0; i < n; i++)
            kernels_swiglu(t->hb + (size_t)i * hidden, t->hb2 + (size_t)i * hidden, hidden);
        matmul(t, t->xb, &L->w2, t->hb, n);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
        for (int i = 0; i < n; i++)
            add_into(t->x + (size_t)i * dim, t->xb + (size_t)i * dim, dim);
        if (t->steer)
            steer_rows(t, l, n);
    }

#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++)
        rmsnorm(t->xb + (size_t)i * dim, t->x + (size_t)i * dim, m->rms_final, dim, t->m->config.rms_eps);
    classifier_keep(t, pos, n, t->xb);
}

/* ---- one token: a single parallel region ---- */

/* Below this many weight bytes per token the one-token path runs on one thread:
 * barriers would cost more than the rows they share (the 260K toy models). */
enum { ONE_TOKEN_PARALLEL_MIN_BYTES = 1 << 19 };

/* What a thread does with a range of rows of one weight. */
typedef enum {
    ROWS_STORE,   /* out[r] = w[r] · x */
    ROWS_ADD,     /* out[r] = w[r] · x, then add_to[r] += out[r] (a residual) */
    ROWS_SWIGLU,  /* out[r] = silu(w[r] · x) * (w2[r] · x), out2 holding w2's rows */
} rows_mode;

typedef struct {
    rows_mode mode;
    const tensor *w, *w2;   /* w2: ROWS_SWIGLU's up projection, same shape as w */
    const float *x;         /* (w->cols) fp32 input, read by F32 weights */
    const qbatch *xq, *xq2; /* x quantized for w and for w2, read by Q8_0 weights */
    float *out;             /* (w->rows) */
    float *out2;            /* (w->rows) ROWS_SWIGLU scratch */
    float *add_to;          /* (w->rows) ROWS_ADD target */
} rows_job;

static void rows_run(const rows_job *j, int r0, int r1)
{
    kernels_matmul_rows(j->out, j->w, j->x, j->xq, 1, r0, r1);
    if (j->mode == ROWS_ADD) {
        add_into(j->add_to + r0, j->out + r0, r1 - r0);
    } else if (j->mode == ROWS_SWIGLU) {
        kernels_matmul_rows(j->out2, j->w2, j->x, j->xq2, 1, r0, r1);
        kernels_swiglu(j->out + r0, j->out2 + r0, r1 - r0);
    }
}

/* Thread tid's share of the rows of `count` jobs, when nt threads share them: one
 * contiguous range of each matrix, starting at a multiple of the kernels' row block
 * (so results do not depend on the split): one long stream per matrix and thread,
 * which the memory system serves fastest (docs/performance.md). No barrier at the
 * end: the caller places it. */
static void rows_share(const rows_job *jobs, int count, int tid, int nt)
{
    int block = kernels_row_block();
    for (int j = 0; j < count; j++) {
        int rows = jobs[j].w->rows, blocks = (rows + block - 1) / block;
        int r0 = (int)((long)blocks * tid / nt) * block;
        int r1 = (int)((long)blocks * (tid + 1) / nt) * block;
        if (r1 > rows)
            r1 = rows;
        if (r0 < r1)
            rows_run(&jobs[j], r0, r1);
    }
}

/* Lane ln's quantized copy of x for weight w (NULL for F32 weights). */
static const qbatch *lane_input(const transformer *t, const struct lane *ln, const tensor *w)
{
    int i = tensor_is_q8(w) ? qbatch_index(t, w->cols, w->group) : -1;
    return i < 0 ? NULL : ln->qb[i];
}

/* Quantizes x (len values) into each of the lane's qbatches for that length. */
static void lane_quantize(const transformer *t, struct lane *ln, const float *x, int len)
{
    for (int i = 0; i < t->n_qb; i++)
        if (t->qb[i]->len == len)
            qbatch_quantize(ln->qb[i], x, 1);
}

/* Attention of query head h at position pos over layer l's cache into t->xb; att is
 * this thread's scratch (pos + 1). */
static void head_attend(transformer *t, int l, int pos, int h, float *att)
{
    const model_config *c = &t->m->config;
    int hs = c->head_size, kv_dim = c->kv_dim, kh = h / (c->n_heads / c->n_kv_heads);
    float scale = 1.0f / sqrtf((float)hs);
    float *out = t->xb + (size_t)h * hs;
    const float *q = t->q + (size_t)h * hs;
    if (t->kv == TRANSFORMER_KV_F32) {
        size_t off = (size_t)l * t->ctx * kv_dim + (size_t)kh * hs;
        kernels_attention_f32(out, c->dim, att, (size_t)pos + 1, q, c->dim, t->key_cache + off,
                            t->value_cache + off, kv_dim, 1, pos, hs, scale);
    } else {
        size_t r = q8_row(t, l, kh, 0);
        kernels_attention_q8(out, att, q, t->kq + r * hs, t->ks + r, t->vq + r * hs, t->vs + r,
                           pos + 1, hs, scale);
    }
}

/* The whole forward pass of one token in one parallel region: every thread takes
 * its share of the rows of each matrix, then waits at one barrier per data dependence
 * (five a layer). Norms and activation quantization are cheap and are done by every thread
 * for itself rather than by one thread while the others wait. Attention is shared
 * by KV head. The barrier spins for a bounded time, then sleeps (barrier.h); between
 * tokens the threads wait in OpenMP's pool. The team has one thread fewer after a
 * token whose threads waited long for a CPU (other programs ran on them), one more
 * after a run of tokens that did not (team.h). Writes t->logits. */
/* Thread tid's part of one token's forward pass when nt threads share it (see
 * forward_one): its rows of every matrix, its KV heads' attention, the barriers. */
static void token_share(transformer *t, int pos, float *attn, int tid, int nt)
{
    const model *m = t->m;
    const model_config *c = &m->config;
    int dim = c->dim, hidden = c->hidden_dim, hs = c->head_size;
    int kv_mul = c->n_heads / c->n_kv_heads;
    struct lane *ln = &t->lanes[tid];
    float *att = t->att + (size_t)tid * t->chunk * t->ctx; /* (pos + 1) */
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];

        rmsnorm(ln->xn, t->x, L->rms_att, dim, t->m->config.rms_eps);
        lane_quantize(t, ln, ln->xn, dim);
        rows_job qkv[3] = {
            {ROWS_STORE, &L->wq, NULL, ln->xn, lane_input(t, ln, &L->wq), NULL, t->q, NULL, NULL},
            {ROWS_STORE, &L->wk, NULL, ln->xn, lane_input(t, ln, &L->wk), NULL, t->k_new, NULL, NULL},
            {ROWS_STORE, &L->wv, NULL, ln->xn, lane_input(t, ln, &L->wv), NULL, t->v_new, NULL, NULL},
        };
        rows_share(qkv, 3, tid, nt);
        barrier_wait(&t->meet);

        int kh0 = (int)((long)c->n_kv_heads * tid / nt);
        int kh1 = (int)((long)c->n_kv_heads * (tid + 1) / nt);
        for (int kh = kh0; kh < kh1; kh++) {
            rope_apply(t->k_new + (size_t)kh * hs, hs, t->rope, hs);
            cache_store(t, l, pos, kh, t->k_new + (size_t)kh * hs, t->v_new + (size_t)kh * hs);
            for (int h = kh * kv_mul; h < (kh + 1) * kv_mul; h++) {
                rope_apply(t->q + (size_t)h * hs, hs, t->rope, hs);
                head_attend(t, l, pos, h, att);
                if (t->head_mask && t->head_mask[l * c->n_heads + h])
                    memset(t->xb + (size_t)h * hs, 0, sizeof(float) * hs);
                if (attn)
                    memcpy(attn + ((size_t)l * c->n_heads + h) * (pos + 1), att,
                           sizeof(float) * (pos + 1));
            }
        }
        barrier_wait(&t->meet); /* t->xb is whole */
        if (t->parts_capture && tid == 0) /* t->xb is only read until the next layer */
            memcpy(t->parts_capture + (size_t)l * 2 * dim, t->xb, sizeof(float) * dim);

        lane_quantize(t, ln, t->xb, dim);
        rows_job wo = {ROWS_ADD, &L->wo, NULL, t->xb, lane_input(t, ln, &L->wo), NULL,
                       t->xb2, NULL, t->x};
        rows_share(&wo, 1, tid, nt);
        barrier_wait(&t->meet);

        rmsnorm(ln->xn, t->x, L->rms_ffn, dim, t->m->config.rms_eps);
        lane_quantize(t, ln, ln->xn, dim);
        rows_job ffn = {ROWS_SWIGLU, &L->w1, &L->w3, ln->xn, lane_input(t, ln, &L->w1),
                        lane_input(t, ln, &L->w3), t->hb, t->hb2, NULL};
        rows_share(&ffn, 1, tid, nt);
        barrier_wait(&t->meet);

        lane_quantize(t, ln, t->hb, hidden);
        rows_job down = {ROWS_ADD, &L->w2, NULL, t->hb, lane_input(t, ln, &L->w2), NULL,
                         t->xb2, NULL, t->x};
        rows_share(&down, 1, tid, nt);
        barrier_wait(&t->meet);
        if (t->parts_capture && tid == 0) /* t->xb2 is next written by the next layer's wo */
            memcpy(t->parts_capture + ((size_t)l * 2 + 1) * dim, t->xb2, sizeof(float) * dim);
        if (t->steer) {
            steer_share(t, l, tid, nt);
            barrier_wait(&t->meet);
        }
        if (t->resid_capture && tid == 0) /* t->x is only read until the next barrier */
            memcpy(t->resid_capture + (size_t)l * dim, t->x, sizeof(float) * dim);
    }
    rmsnorm(ln->xn, t->x, m->rms_final, dim, t->m->config.rms_eps);
    lane_quantize(t, ln, ln->xn, dim);
    if (tid == 0)
        classifier_keep_one(t, pos, lane_input(t, ln, &m->wcls), ln->xn);
    rows_job cls = {ROWS_STORE, &m->wcls, NULL, ln->xn, lane_input(t, ln, &m->wcls), NULL,
                    t->logits, NULL, NULL};
    rows_share(&cls, 1, tid, nt);
}

static void forward_one(transformer *t, int token, int pos, float *attn)
{
    const model *m = t->m;
    const model_config *c = &m->config;
    int dim = c->dim, hidden = c->hidden_dim;

    quant_dequantize_row(t->x, &m->token_embedding, token);
    rope_angles(t, pos, 1);
    int threads = lanes_reserve(t);
    int slots = attention_threads(t);
    if (slots < threads)
        threads = slots;
    if ((double)dim * hidden * 3 * c->n_layers < ONE_TOKEN_PARALLEL_MIN_BYTES)
        threads = 1;
    /* The OpenMP team always has `most` threads (a team whose size changes makes
     * libgomp end and start threads); `act` of them work this token. */
    int most = threads, act = team_threads(&t->team, most), used = 1;
    unsigned long long spin_ns = barrier_spin_for(act, cpus_usable());
    long long waited = 0, started = (long long)clock_ns();

#pragma omp parallel num_threads(most) if (act > 1)
    {
        int tid = 0, nt = 1;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int workers = nt < act ? nt : act;
#pragma omp single
        barrier_init(&t->meet, (unsigned)workers, spin_ns); /* (OpenMP's barrier ends the single) */
        if (tid == 0)
            used = workers;
        if (tid < workers) { /* the others wait at the region's end */
            long long wait_at = team_cpu_wait_ns();
            token_share(t, pos, attn, tid, workers);
            long long mine = team_cpu_wait_ns() - wait_at;
#pragma omp atomic
            waited += mine;
        }
    }
    if (most > 1)
        team_update(&t->team, used, most, waited, (long long)clock_ns() - started);
}

static bool tokens_valid(const transformer *t, const int *tokens, int n)
{
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= t->m->config.vocab_size)
            return false;
    return true;
}

const float *transformer_forward(transformer *t, int token, int pos, float *attn)
{
    if (pos < 0 || pos >= t->ctx || !tokens_valid(t, &token, 1))
        return NULL;
    forward_one(t, token, pos, attn);
    return t->logits;
}

const float *transformer_forward_batch(transformer *t, const int *tokens, int n, int pos,
                                       float *logits, float *const *attn)
{
    if (n <= 0 || pos < 0 || pos > t->ctx - n || !tokens_valid(t, tokens, n))
        return NULL;
    int want = n < t->chunk ? n : t->chunk;
    if (want > t->cap)
        transformer_reserve(t, want); /* on failure, smaller chunks with what we have */
    for (int done = 0; done < n;) {
        int k = n - done < t->cap ? n - done : t->cap;
        forward_chunk(t, tokens + done, k, pos + done, attn ? attn + done : NULL);
        done += k;
    }
    if (logits) {
        transformer_logits(t, pos, n, logits);
        memcpy(t->logits, logits + (size_t)(n - 1) * t->m->config.vocab_size,
               sizeof(float) * t->m->config.vocab_size);
    } else {
        transformer_logits(t, pos + n - 1, 1, t->logits);
    }
    return t->logits;
}

/* ---- the logit lens ---- */

/* What running position pos writes besides scratch: its KV cache entries (every
 * layer and KV head) and its kept classifier input. position_state_copy saves them
 * into save (position_state_bytes) or restores them from it. */
static size_t position_state_bytes(const transformer *t)
{
    const model_config *c = &t->m->config;
    size_t rows = (size_t)c->n_layers * c->n_kv_heads * 2;
    size_t kv = t->kv == TRANSFORMER_KV_F32 ? rows * c->head_size * sizeof(float)
                                            : rows * (c->head_size + sizeof(float));
    size_t cls = t->cls_q ? (size_t)t->cls_q->stride +
                                sizeof(float) * (size_t)(t->cls_q->stride / t->cls_q->group)
                          : sizeof(float) * (size_t)c->dim;
    return kv + cls;
}

/* Copies n bytes between a place in the transformer and the save buffer at *at. */
static void state_copy(void *place, unsigned char **at, size_t n, bool restore)
{
    memcpy(restore ? place : *at, restore ? *at : place, n);
    *at += n;
}

static void position_state_copy(transformer *t, int pos, unsigned char *save, bool restore)
{
    const model_config *c = &t->m->config;
    size_t hs = (size_t)c->head_size;
    unsigned char *at = save;
    for (int l = 0; l < c->n_layers; l++)
        for (int kh = 0; kh < c->n_kv_heads; kh++) {
            if (t->kv == TRANSFORMER_KV_F32) {
                size_t off = ((size_t)l * t->ctx + pos) * c->kv_dim + (size_t)kh * hs;
                state_copy(t->key_cache + off, &at, hs * sizeof(float), restore);
                state_copy(t->value_cache + off, &at, hs * sizeof(float), restore);
            } else {
                size_t r = q8_row(t, l, kh, pos);
                state_copy(t->kq + r * hs, &at, hs, restore);
                state_copy(t->ks + r, &at, sizeof(float), restore);
                state_copy(t->vq + r * hs, &at, hs, restore);
                state_copy(t->vs + r, &at, sizeof(float), restore);
            }
        }
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    if (t->cls_q) {
        state_copy(view.q, &at, (size_t)view.stride, restore);
        state_copy(view.scale, &at, sizeof(float) * (size_t)(view.stride / view.group), restore);
    } else {
        state_copy((float *)rows, &at, sizeof(float) * (size_t)c->dim, restore);
    }
}

/* Runs token at pos once more over the KV cache of 0..pos-1, keeping the residual
 * stream after each layer in resid (n_layers, dim) and the attention rows in attn
 * (either may be NULL), and leaves the KV cache, the kept classifier input and the
 * logits as they were. `what` names the caller in messages. */
static llm_status run_again(transformer *t, int token, int pos, float *resid, float *attn,
                            const char *what, llm_err *err)
{
    if (pos < 0 || pos >= t->ctx || !tokens_valid(t, &token, 1))
        return llm_fail(err, LLM_ERR_ARG, "%s: token %d at position %d is out of range", what,
                        token, pos);
    size_t vocab = (size_t)t->m->config.vocab_size;
    unsigned char *kv_save = malloc(position_state_bytes(t));
    float *logits_save = malloc(sizeof(float) * vocab);
    if (!kv_save || !logits_save) {
        free(kv_save);
        free(logits_save);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the %s", what);
    }
    position_state_copy(t, pos, kv_save, false);
    memcpy(logits_save, t->logits, sizeof(float) * vocab);
    t->resid_capture = resid;
    forward_one(t, token, pos, attn);
    t->resid_capture = NULL;
    if (t->logits_capture)
        memcpy(t->logits_capture, t->logits, sizeof(float) * vocab);
    position_state_copy(t, pos, kv_save, true);
    memcpy(t->logits, logits_save, sizeof(float) * vocab);
    free(kv_save);
    free(logits_save);
    return LLM_OK;
}

llm_status transformer_logit_lens(transformer *t, int token, int pos, float *layer_logits,
                                  llm_err *err)
{
    const model *m = t->m;
    const model_config *c = &m->config;
    size_t dim = (size_t)c->dim, vocab = (size_t)c->vocab_size;
    float *resid = malloc(sizeof(float) * c->n_layers * dim);
    if (!resid)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the logit lens");
    llm_status st = run_again(t, token, pos, resid, NULL, "logit lens", err);
    for (int l = 0; l < c->n_layers && st == LLM_OK; l++) {
        rmsnorm(t->xb, resid + l * dim, m->rms_final, c->dim, c->rms_eps);
        matmul(t, layer_logits + l * vocab, &m->wcls, t->xb, 1);
    }
    free(resid);
    return st;
}

llm_status transformer_attention_again(transformer *t, int token, int pos, float *attn,
                                       llm_err *err)
{
    return run_again(t, token, pos, NULL, attn, "attention", err);
}

llm_status transformer_forward_again(transformer *t, int token, int pos, float *logits,
                                     llm_err *err)
{
    t->logits_capture = logits;
    llm_status st = run_again(t, token, pos, NULL, NULL, "what-if", err);
    t->logits_capture = NULL;
    return st;
}

llm_status transformer_components(transformer *t, int token, int pos, float *parts,
                                  float *resid, float *logits, llm_err *err)
{
    t->parts_capture = parts;
    t->logits_capture = logits;
    llm_status st = run_again(t, token, pos, resid, NULL, "attribution", err);
    t->parts_capture = NULL;
    t->logits_capture = NULL;
    return st;
}

llm_status transformer_residuals(transformer *t, const int *tokens, int n, float *resid,
                                 llm_err *err)
{
    const model_config *c = &t->m->config;
    if (n < 1 || n > t->ctx || !tokens_valid(t, tokens, n))
        return llm_fail(err, LLM_ERR_ARG, "%d tokens do not fit the context of %d, or one is "
                                          "outside the vocabulary", n, t->ctx);
    for (int p = 0; p < n; p++) {
        t->resid_capture = resid + (size_t)p * c->n_layers * c->dim;
        forward_one(t, tokens[p], p, NULL);
    }
    t->resid_capture = NULL;
    return LLM_OK;
}
