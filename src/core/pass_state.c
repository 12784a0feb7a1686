/* pass_state.c — the buffers the forward pass works in and what it does with them
 * that is not a step of its own (pass_state.h): the activations of a chunk, the
 * quantized inputs (a batch's qbatches, each one-token thread's lane), the KV cache's
 * rows, the attention scratch per thread (and the kernels' scratch of the threads of
 * both, grown beside them), the kept classifier inputs and the logits computed from
 * them, with the model's final soft-cap.
 *
 * Owns nothing of its own: everything lives in the transformer's struct
 * (transformer_internal.h), made and freed by transformer.c through these calls, and
 * read and written by forward.c. */
#include "pass_state.h"

#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Positions per batch chunk for this shape and context (see CHUNK_BUDGET). */
int pass_chunk_positions(const model_config *p, int ctx)
{
    size_t per_position = sizeof(float) * (4 * (size_t)p->dim + 2 * (size_t)p->hidden_dim +
                                           2 * (size_t)p->kv_dim + (size_t)ctx +
                                           (2 * (size_t)p->n_layers + 1) * p->ple_dim +
                                           (size_t)p->n_experts_used *
                                               (2 * (size_t)p->dim +
                                                2 * (size_t)p->expert_hidden_dim) +
                                           (p->arch.dense_beside_experts ? 3 * (size_t)p->dim
                                                                         : 0));
    size_t n = CHUNK_BUDGET / per_position;
    n -= n % CHUNK_MIN;
    return n < CHUNK_MIN ? CHUNK_MIN : n > CHUNK_MAX ? CHUNK_MAX : (int)n;
}

void pass_buffers_free(batch_buffers *b, int n_qb)
{
    free(b->x);
    free(b->xn);
    free(b->q);
    free(b->kqv);
    free(b->proj);
    free(b->hb);
    free(b->hb2);
    free(b->rope);
    free(b->rope_swa);
    free(b->moe_logits);
    free(b->moe_probs);
    free(b->moe_topk);
    free(b->moe_weights);
    free(b->moe_sel);
    free(b->moe_row);
    free(b->moe_start);
    free(b->moe_fill);
    free(b->moe_x);
    free(b->moe_gate);
    free(b->moe_up);
    free(b->moe_down);
    free(b->qg);
    free(b->gate);
    free(b->ffn_dense);
    free(b->moe_in);
    free(b->moe_rin);
    free(b->dn_ext);
    free(b->dn_conv);
    free(b->dn_z);
    free(b->dn_beta);
    free(b->dn_g);
    free(b->dn_snorm);
    free(b->ple_in);
    free(b->ple_proj);
    free(b->ple_g);
    for (int i = 0; i < n_qb; i++)
        qbatch_free(b->qb[i]);
}

/* The buffers of a mixture of experts for n positions into b (none for a dense
 * model); false when out of memory. */
static bool experts_reserve(batch_buffers *b, const model_config *p, size_t n)
{
    size_t E = (size_t)p->n_experts, K = (size_t)p->n_experts_used, f = sizeof(float),
           H = (size_t)p->expert_hidden_dim, i = sizeof(int);
    if (E == 0)
        return true;
    b->moe_logits = malloc(f * n * E);
    b->moe_probs = malloc(f * n * E);
    b->moe_topk = malloc(f * n * K);
    b->moe_weights = malloc(f * n * K);
    b->moe_sel = malloc(i * n * K);
    b->moe_row = malloc(i * n * K);
    b->moe_start = malloc(i * (E + 1));
    b->moe_fill = malloc(i * E);
    b->moe_x = malloc(f * n * K * p->dim);
    b->moe_gate = malloc(f * n * K * H);
    b->moe_up = malloc(f * n * K * H);
    b->moe_down = malloc(f * n * K * p->dim);
    if (p->arch.dense_beside_experts) {
        b->ffn_dense = malloc(f * n * p->dim);
        b->moe_in = malloc(f * n * p->dim);
        b->moe_rin = malloc(f * n * p->dim);
        if (!b->ffn_dense || !b->moe_in || !b->moe_rin)
            return false;
    }
    return b->moe_logits && b->moe_probs && b->moe_topk && b->moe_weights && b->moe_sel &&
           b->moe_row && b->moe_start && b->moe_fill && b->moe_x && b->moe_gate && b->moe_up &&
           b->moe_down;
}

/* The buffers of gated attention and of Gated DeltaNet layers for n positions into b
 * (none for a model without them); false when out of memory. */
static bool hybrid_reserve(batch_buffers *b, const model_config *p, size_t n)
{
    size_t f = sizeof(float);
    if (p->arch.gated_attention) {
        b->qg = malloc(f * n * 2 * p->q_dim);
        b->gate = malloc(f * n * p->q_dim);
        if (!b->qg || !b->gate)
            return false;
    }
    if (p->dn_layers == 0)
        return true;
    b->dn_ext = malloc(f * (n + (size_t)p->dn_conv_width - 1) * p->dn_conv_dim);
    b->dn_conv = malloc(f * n * p->dn_conv_dim);
    b->dn_z = malloc(f * n * p->dn_value_dim);
    b->dn_beta = malloc(f * n * p->dn_v_heads);
    b->dn_g = malloc(f * n * p->dn_v_heads);
    b->dn_snorm = malloc(f * n * p->dn_v_heads);
    return b->dn_ext && b->dn_conv && b->dn_z && b->dn_beta && b->dn_g && b->dn_snorm;
}

/* The buffers of per-layer inputs for n positions into b (none without them); false
 * when out of memory. */
static bool layer_inputs_reserve(batch_buffers *b, const model_config *p, size_t n)
{
    size_t f = sizeof(float), width = (size_t)p->n_layers * p->ple_dim;
    if (p->ple_dim == 0)
        return true;
    b->ple_in = malloc(f * n * width);
    b->ple_proj = malloc(f * n * width);
    b->ple_g = malloc(f * n * p->ple_dim);
    return b->ple_in && b->ple_proj && b->ple_g;
}

/* Makes the batch buffers hold cap positions. On failure the old ones stay. */
bool pass_buffers_reserve(transformer *t, int cap)
{
    const model_config *p = &t->m->config;
    size_t n = (size_t)cap, f = sizeof(float);
    bool swa = p->arch.rope_base_swa > 0.0f;
    batch_buffers b = {
        .x = malloc(f * n * p->dim),
        .xn = malloc(f * n * p->dim),
        .q = malloc(f * n * p->q_dim),
        .kqv = malloc(f * n * model_mixer_width(p)),
        .proj = malloc(f * n * p->dim),
        .hb = malloc(f * n * model_ffn_width(p)),
        .hb2 = malloc(f * n * model_ffn_width(p)),
        .rope = malloc(f * n * p->arch.rope_dims),
        .rope_swa = swa ? malloc(f * n * model_swa_rope_dims(&p->arch)) : NULL,
    };
    bool ok = b.x && b.xn && b.q && b.kqv && b.proj && b.hb && b.hb2 && b.rope &&
              (b.rope_swa || !swa) && experts_reserve(&b, p, n) && hybrid_reserve(&b, p, n) &&
              layer_inputs_reserve(&b, p, n);
    for (int i = 0; i < t->n_qb; i++) {
        b.qb[i] = ok ? qbatch_new(cap, t->buf.qb[i]->len, t->buf.qb[i]->group) : NULL;
        ok = ok && b.qb[i];
    }
    if (!ok) {
        pass_buffers_free(&b, t->n_qb);
        return false;
    }
    pass_buffers_free(&t->buf, t->n_qb);
    t->buf = b;
    t->cap = cap;
    return true;
}

/* Index in buf.qb (and in each lane's qb) of the qbatch for vectors of len values
 * quantized with group, registered at _new; -1 if there is none. */
static int qbatch_index(const transformer *t, int len, int group)
{
    for (int i = 0; i < t->n_qb; i++)
        if (t->buf.qb[i]->len == len && t->buf.qb[i]->group == group)
            return i;
    return -1;
}

qbatch *qbatch_for(transformer *t, int len, int group)
{
    int i = qbatch_index(t, len, group);
    return i < 0 ? NULL : t->buf.qb[i];
}

/* Registers the (cols, group) of a Q8_0 weight; returns false when out of room. */
bool qbatch_register(transformer *t, const tensor *w)
{
    if (!tensor_is_q8(w) || qbatch_for(t, w->cols, w->group))
        return true;
    if (t->n_qb == MAX_QBATCHES)
        return false;
    qbatch *b = qbatch_new(1, w->cols, w->group);
    if (!b)
        return false;
    t->buf.qb[t->n_qb++] = b;
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

void lanes_free(transformer *t)
{
    lanes_destroy(t->lanes, t->n_lanes, t->n_qb);
    t->lanes = NULL;
    t->n_lanes = 0;
}

/* Makes one lane per thread the one-token path may use (the OpenMP thread count, at
 * least 1), and their scratches. On failure the old lanes stay and fewer threads are
 * used. */
int lanes_reserve(transformer *t)
{
    int want = 1;
#ifdef _OPENMP
    want = omp_get_max_threads();
#endif
    if (want <= t->n_lanes)
        return want;
    if (!kernels_workspace_reserve(t->ws, want))
        return t->n_lanes;
    const model_config *p = &t->m->config;
    struct lane *lanes = calloc((size_t)want, sizeof *lanes);
    bool ok = lanes != NULL;
    int big = p->dim > model_ffn_width(p) ? p->dim : model_ffn_width(p);
    if (p->q_dim > big)
        big = p->q_dim;
    for (int i = 0; ok && i < want; i++) {
        ok = (lanes[i].xn = malloc(sizeof(float) * big)) != NULL;
        for (int j = 0; ok && j < t->n_qb; j++)
            ok = (lanes[i].qb[j] = qbatch_new(1, t->buf.qb[j]->len, t->buf.qb[j]->group)) != NULL;
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

/* Lane ln's quantized copy of x for weight w (NULL for F32 weights). */
const qbatch *lane_input(const transformer *t, const struct lane *ln, const tensor *w)
{
    int i = tensor_is_q8(w) ? qbatch_index(t, w->cols, w->group) : -1;
    return i < 0 ? NULL : ln->qb[i];
}

/* Quantizes x (len values) into each of the lane's qbatches for that length. */
void lane_quantize(const transformer *t, struct lane *ln, const float *x, int len)
{
    for (int i = 0; i < t->n_qb; i++)
        if (t->buf.qb[i]->len == len)
            qbatch_quantize(ln->qb[i], x, 1);
}

/* ---- the KV cache ---- */

/* Layer l's cache is that of layer kv_layer (itself, or the one it shares), at
 * t->kv_base (values) and t->kv_rows (rows of one KV head at one position). */

size_t q8_row(const transformer *t, int l, int kh, int p)
{
    int src = t->m->layers[l].kv_layer;
    return t->kv_rows[src] + (size_t)kh * t->ctx + p;
}

size_t q8_at(const transformer *t, int l, int kh, int p)
{
    const model_layer *L = &t->m->layers[l];
    return t->kv_base[L->kv_layer] + ((size_t)kh * t->ctx + p) * L->head_size;
}

size_t cache_f32_at(const transformer *t, int l, int kh, int p)
{
    const model_layer *L = &t->m->layers[l];
    return t->kv_base[L->kv_layer] + (size_t)p * L->kv_dim + (size_t)kh * L->head_size;
}

void cache_store(transformer *t, int l, int pos, int kh, const float *k, const float *v)
{
    int hs = t->m->layers[l].head_size;
    if (t->kv == TRANSFORMER_KV_F32) {
        size_t at = cache_f32_at(t, l, kh, pos);
        memcpy(t->key_cache + at, k, sizeof(float) * hs);
        memcpy(t->value_cache + at, v, sizeof(float) * hs);
    } else {
        size_t r = q8_row(t, l, kh, pos), at = q8_at(t, l, kh, pos);
        quant_quantize_row(t->kq + at, t->ks + r, k, hs, hs, hs);
        quant_quantize_row(t->vq + at, t->vs + r, v, hs, hs, hs);
    }
}

/* Threads that may run attention: one scratch row of t->att and a scratch of t->ws
 * each. Grows both to the current OpenMP thread count; if that fails, fewer threads are
 * used. */
int attention_threads(transformer *t)
{
#ifdef _OPENMP
    int want = omp_get_max_threads();
    if (want > t->att_slots && kernels_workspace_reserve(t->ws, want)) {
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

/* ---- the classifier ---- */

/* Positions pos..pos+n-1 of the kept classifier inputs, as the classifier reads them:
 * *xq a view of t->cls_q's vectors (Q8_0), or *x of t->cls_f's rows (F32). */
void classifier_input(const transformer *t, int pos, qbatch *xq, const float **x)
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
void classifier_keep(transformer *t, int pos, int n, const float *xn)
{
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    if (t->cls_q)
        qbatch_quantize(&view, xn, n);
    else
        memcpy((float *)rows, xn, sizeof(float) * (size_t)n * t->m->config.dim);
}

void pass_softcap(float *x, int n, float cap)
{
    for (int i = 0; i < n; i++)
        x[i] = cap * tanhf(x[i] / cap);
}

/* The model's final soft-cap on n rows of logits, if it has one. */
static void logits_cap(const transformer *t, float *logits, int n)
{
    float cap = t->m->config.arch.final_softcap;
    int vocab = t->m->config.vocab_size;
    if (cap == 0.0f)
        return;
    /* in blocks of a row, so that one row's cap (tanhf over a 262,144-token vocabulary
     * takes milliseconds) is shared by the threads too */
    enum { CAP_BLOCK = 8192 };
    long blocks = ((long)vocab + CAP_BLOCK - 1) / CAP_BLOCK * n;
    long per_row = ((long)vocab + CAP_BLOCK - 1) / CAP_BLOCK;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (long b = 0; b < blocks; b++) {
        long row = b / per_row, at = b % per_row * CAP_BLOCK;
        int len = vocab - at < CAP_BLOCK ? (int)(vocab - at) : CAP_BLOCK;
        pass_softcap(logits + (size_t)row * vocab + at, len, cap);
    }
}

bool classifier_logits(transformer *t, int pos, int n, float *logits)
{
    qbatch view;
    const float *rows;
    classifier_input(t, pos, &view, &rows);
    if (!kernels_matmul(t->ws, logits, &t->m->wcls, rows, t->cls_q ? &view : NULL, n))
        return false;
    logits_cap(t, logits, n);
    return true;
}

bool classifier_logit_rows(const transformer *t, const float *xn, int n, float *logits)
{
    qbatch *xq = tensor_is_q8(&t->m->wcls) ? qbatch_for((transformer *)t, t->m->wcls.cols,
                                                          t->m->wcls.group)
                                           : NULL;
    if (xq)
        qbatch_quantize(xq, xn, n);
    if (!kernels_matmul(t->ws, logits, &t->m->wcls, xn, xq, n))
        return false;
    logits_cap(t, logits, n);
    return true;
}
