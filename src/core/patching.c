/* patching.c — activation patching: the clean run's activations captured by an
 * observer, then one corrupted run per cell with an editor that puts one of them back
 * (patching.h). */
#include "patching.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

/* The places past the prompt a position's cells run in together (a batch chunk's most). */
enum { PATCH_GROUP_PLACES = 256 };

/* The most the corrupted run's stream may take (bytes) for a group's cells to skip the
 * layers before theirs. */
#define PATCH_STREAM_MAX (1024.0 * 1024 * 1024)

/* The most the clean run's activations of a site may take (bytes). */
#define PATCH_CLEAN_MAX (4.0 * 1024 * 1024 * 1024)

static const char *const SITE_NAMES[PATCH_SITE_COUNT] = {
    [PATCH_RESID_PRE] = "resid_pre",
    [PATCH_ATTN_OUT] = "attn_out",
    [PATCH_MLP_OUT] = "mlp_out",
    [PATCH_HEAD] = "head",
    [PATCH_HEAD_Q] = "head_q",
    [PATCH_HEAD_K] = "head_k",
    [PATCH_HEAD_V] = "head_v",
    [PATCH_EXPERT] = "expert",
};

const char *patch_site_name(patch_site s)
{
    return s >= 0 && s < PATCH_SITE_COUNT ? SITE_NAMES[s] : NULL;
}

bool patch_site_parse(const char *name, patch_site *out)
{
    for (int s = 0; s < PATCH_SITE_COUNT; s++)
        if (!strcmp(name, SITE_NAMES[s])) {
            *out = (patch_site)s;
            return true;
        }
    return false;
}

int patching_ctx(const model *m, int n)
{
    int most = m->config.seq_len;
    return n + PATCH_GROUP_PLACES < most ? n + PATCH_GROUP_PLACES : n > most ? n : most;
}

bool patch_site_positions(patch_site s)
{
    return s == PATCH_RESID_PRE || s == PATCH_ATTN_OUT || s == PATCH_MLP_OUT;
}

const char *patch_site_column(patch_site s)
{
    return patch_site_positions(s) ? "position" : s == PATCH_EXPERT ? "expert" : "head";
}

int patch_site_cols(patch_site s, const model_config *c, int n)
{
    return patch_site_positions(s)                    ? n
           : s == PATCH_EXPERT                        ? c->n_experts
           : s == PATCH_HEAD_K || s == PATCH_HEAD_V   ? c->n_kv_heads
                                                      : model_heads_max(c);
}

/* What the clean run left and what a patched run puts back. The clean run's rows of
 * the site, layer l - first at position p: clean + ((l - first) * n + p) * width. */
typedef struct {
    const model *m;
    patch_site site;
    int first, n, width;   /* rows of clean: (layers, n, width) */
    float *clean;
    float *ffn_inp;        /* mlp_out: the clean run's ffn_inp (layers, n, dim); then,
                              in a patched run, its own at the patched position (dim) */
    /* expert: clean holds each position's chosen experts' outputs (width K * dim, in
     * ffn_moe_topk's order); these their numbers and weights (layers, n, K) */
    int K;
    float *clean_ids, *clean_w;
    float *now_ids, *now_w, *now_down; /* the patched run's at the cell's layer: (n, K),
                                          (n, K), (n, K * dim) */
    /* the patched run's cell */
    int layer, pos;        /* pos -1: every position (a head or expert site) */
    int c0, c1;            /* the columns put back; expert: c0 is the expert */
    /* or a group of cells run together (transformer_run_sequences): layers
     * layer..layer+seqs-1 at position pos, sequence s's rows at places pos + s * seq_m,
     * each beginning at its cell's layer (enter, or NULL: all at 0) with the corrupted
     * run's stream there (corrupt_stream: (n_layers + 1, n, dim), the stream entering
     * each layer and the one after the last) */
    int seqs, seq_m;
    const int *enter;
    float *corrupt_stream;
} patcher;

static float *clean_row(const patcher *q, int l, int p)
{
    return q->clean + ((size_t)(l - q->first) * q->n + p) * q->width;
}

/* The clean run: keeps the site's rows of layers first..last. */
static void capture(void *user, const hook_tensor *x)
{
    patcher *q = user;
    int dim = q->m->config.dim;
    for (int i = 0; i < x->n; i++) {
        const float *row = x->data + (size_t)i * x->stride;
        int p = x->pos + i;
        if (p >= q->n)
            continue;
        switch (x->point) {
        case HOOK_INP_EMBD: /* resid_pre of layer 0 */
            if (q->first == 0)
                memcpy(clean_row(q, 0, p), row, sizeof(float) * dim);
            break;
        case HOOK_L_OUT:
            if (q->site == PATCH_RESID_PRE && x->layer + 1 >= q->first)
                memcpy(clean_row(q, x->layer + 1, p), row, sizeof(float) * dim);
            else if (q->site == PATCH_MLP_OUT) { /* what the block added: l_out - ffn_inp */
                float *out = clean_row(q, x->layer, p);
                const float *in = q->ffn_inp + ((size_t)(x->layer - q->first) * q->n + p) * dim;
                for (int j = 0; j < dim; j++)
                    out[j] = row[j] - in[j];
            }
            break;
        case HOOK_FFN_INP:
            memcpy(q->ffn_inp + ((size_t)(x->layer - q->first) * q->n + p) * dim, row,
                   sizeof(float) * dim);
            break;
        case HOOK_KQV:
        case HOOK_QCUR:
        case HOOK_KCUR:
        case HOOK_VCUR:
        case HOOK_FFN_MOE_DOWN:
            memcpy(clean_row(q, x->layer, p), row, sizeof(float) * (size_t)x->width);
            break;
        case HOOK_FFN_MOE_TOPK:
        case HOOK_FFN_MOE_WEIGHTS: {
            size_t at = ((size_t)(x->layer - q->first) * q->n + p) * q->K;
            memcpy((x->point == HOOK_FFN_MOE_TOPK ? q->clean_ids : q->clean_w) + at, row,
                   sizeof(float) * q->K);
            break;
        }
        default:
            break;
        }
    }
}

/* In a group, the sequence whose patched position is at place `at`, or -1 (another
 * position of a sequence). */
static int group_seq(const patcher *q, int at)
{
    int r = at - q->pos;
    return r >= 0 && r % q->seq_m == 0 && r / q->seq_m < q->seqs ? r / q->seq_m : -1;
}

/* The corrupted run: the stream entering each layer and the one after the last. */
static void keep_stream(void *user, const hook_tensor *x)
{
    patcher *q = user;
    int dim = q->m->config.dim;
    for (int i = 0; i < x->n; i++)
        if (x->pos + i < q->n)
            memcpy(q->corrupt_stream + ((size_t)(x->layer + 1) * q->n + x->pos + i) * dim,
                   x->data + (size_t)i * x->stride, sizeof(float) * (size_t)dim);
}

/* mlp_out's patched run: its own ffn_inp at the patched position (a group: each
 * sequence's at its layer, ffn_inp + s * dim). */
static void see_ffn_inp(void *user, const hook_tensor *x)
{
    patcher *q = user;
    int dim = q->m->config.dim;
    for (int i = 0; i < x->n; i++) {
        int s = q->seqs ? group_seq(q, x->pos + i) : x->pos + i == q->pos ? 0 : -1;
        if (s >= 0 && (!q->seqs || x->layer == q->layer + s))
            memcpy(q->ffn_inp + (size_t)s * dim, x->data + (size_t)i * x->stride,
                   sizeof(float) * (size_t)dim);
    }
}

/* expert's patched run: its own chosen experts, weights and outputs at the cell's layer. */
static void see_experts(void *user, const hook_tensor *x)
{
    patcher *q = user;
    float *to = x->point == HOOK_FFN_MOE_TOPK ? q->now_ids
                : x->point == HOOK_FFN_MOE_WEIGHTS ? q->now_w : q->now_down;
    for (int i = 0; i < x->n; i++)
        if (x->pos + i < q->n)
            memcpy(to + (size_t)(x->pos + i) * x->width, x->data + (size_t)i * x->stride,
                   sizeof(float) * (size_t)x->width);
}

/* The slot of expert e among a position's K chosen (ids), -1 when it was not chosen. */
static int slot_of(const float *ids, int K, int e)
{
    for (int k = 0; k < K; k++)
        if ((int)ids[k] == e)
            return k;
    return -1;
}

/* expert's editor: at each position, the expert's weighted output as the clean run had
 * it (0 where it was not chosen) in place of the patched run's own. */
static void put_back_expert(const patcher *q, hook_slice *x)
{
    int K = q->K, dim = q->m->config.dim, e = q->c0;
    for (int i = 0; i < x->n; i++) {
        int p = x->pos + i;
        size_t at = ((size_t)(q->layer - q->first) * q->n + p) * K;
        int kc = slot_of(q->clean_ids + at, K, e), kn = slot_of(q->now_ids + (size_t)p * K, K, e);
        float *dst = x->data + (size_t)i * x->stride;
        for (int j = 0; j < x->width; j++) {
            int c = x->col + j;
            float d = 0.0f;
            if (kc >= 0)
                d += q->clean_w[at + kc] * clean_row(q, q->layer, p)[(size_t)kc * dim + c];
            if (kn >= 0)
                d -= q->now_w[(size_t)p * K + kn] * q->now_down[((size_t)p * K + kn) * dim + c];
            dst[j] += d;
        }
    }
}

static hook_point site_point(patch_site s, int l, int *layer);

/* The columns of layer l's site a cell puts back (attn_out: the layer's mixer width). */
static int site_width(const patcher *q, int l)
{
    const model *m = q->m;
    if (q->site != PATCH_ATTN_OUT)
        return m->config.dim;
    return m->layers[l].kind == MODEL_LAYER_DELTA_NET ? m->config.dn_value_dim
                                                      : m->layers[l].q_dim;
}

/* A group's editor: each sequence's patched position, at its own layer's point, as the
 * clean run had it there (mlp_out: its ffn_inp plus what the clean block added). */
static void put_back_group(const patcher *q, hook_slice *x)
{
    int dim = q->m->config.dim;
    for (int i = 0; i < x->n; i++) {
        int r = x->pos + i - q->pos, hl;
        if (q->enter && x->point == HOOK_L_OUT && r >= 0 && r / q->seq_m < q->seqs &&
            x->layer == q->enter[r / q->seq_m] - 1) /* the rows of a sequence beginning here */
            memcpy(x->data + (size_t)i * x->stride,
                   q->corrupt_stream + ((size_t)(x->layer + 1) * q->n + q->pos + r % q->seq_m) *
                                           dim + x->col,
                   sizeof(float) * (size_t)x->width);
        int s = group_seq(q, x->pos + i);
        if (s < 0 || site_point(q->site, q->layer + s, &hl) != x->point || hl != x->layer)
            continue;
        int a = x->col, b = x->col + x->width, w = site_width(q, q->layer + s);
        b = b < w ? b : w;
        const float *src = clean_row(q, q->layer + s, q->pos);
        float *dst = x->data + (size_t)i * x->stride - x->col;
        if (q->site == PATCH_MLP_OUT)
            for (int j = a; j < b; j++)
                dst[j] = q->ffn_inp[(size_t)s * dim + j] + src[j];
        else if (a < b)
            memcpy(dst + a, src + a, sizeof(float) * (size_t)(b - a));
    }
}

/* The editor: the cell's columns c0..c1 of its rows as the clean run had them (mlp_out:
 * the patched run's ffn_inp plus what the clean run's block added; expert:
 * put_back_expert; a group: put_back_group). */
static void put_back(void *user, hook_slice *x)
{
    const patcher *q = user;
    if (q->seqs) {
        put_back_group(q, x);
        return;
    }
    if (q->site == PATCH_EXPERT) {
        put_back_expert(q, x);
        return;
    }
    int a = x->col > q->c0 ? x->col : q->c0;
    int b = x->col + x->width < q->c1 ? x->col + x->width : q->c1;
    for (int i = 0; i < x->n && a < b; i++) {
        int p = x->pos + i;
        const float *src = clean_row(q, q->layer, p);
        float *dst = x->data + (size_t)i * x->stride - x->col;
        if (q->site == PATCH_MLP_OUT)
            for (int j = a; j < b; j++)
                dst[j] = q->ffn_inp[j] + src[j];
        else
            memcpy(dst + a, src + a, sizeof(float) * (size_t)(b - a));
    }
}

void patch_result_free(patch_result *r)
{
    if (!r)
        return;
    free(r->grid);
    free(r->clean_logits);
    free(r->corrupt_logits);
    memset(r, 0, sizeof *r);
}

/* log-softmax of logits (vocab) into out (double). */
static void log_softmax(const float *logits, int vocab, double *out)
{
    double max = -INFINITY, sum = 0.0;
    for (int i = 0; i < vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    double lse = max + log(sum);
    for (int i = 0; i < vocab; i++)
        out[i] = (double)logits[i] - lse;
}

/* The index of the largest of logits (vocab); the first of equals. */
static int top_token(const float *logits, int vocab)
{
    int best = 0;
    for (int i = 1; i < vocab; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

/* KL(clean || other) in nats. */
static double kl_from_clean(const float *clean, const float *other, int vocab)
{
    double *a = malloc(sizeof(double) * 2 * (size_t)vocab), kl = 0.0;
    if (!a)
        return NAN;
    double *b = a + vocab;
    log_softmax(clean, vocab, a);
    log_softmax(other, vocab, b);
    for (int i = 0; i < vocab; i++)
        kl += exp(a[i]) * (a[i] - b[i]);
    free(a);
    return kl;
}

double patching_metric(const patch_spec *s, const patch_result *r, const float *logits,
                       int vocab)
{
    if (s->metric == PATCH_KL)
        return kl_from_clean(r->clean_logits, logits, vocab);
    double ld = (double)logits[r->answer] - logits[r->wrong];
    return (ld - r->corrupt) / (r->clean - r->corrupt) + 0.0; /* + 0: no -0 */
}

/* The hook point where layer l's site is edited (and observed in the clean run), and
 * the layer the hook names. */
static hook_point site_point(patch_site s, int l, int *layer)
{
    *layer = l;
    switch (s) {
    case PATCH_RESID_PRE:
        *layer = l - 1;
        return l == 0 ? HOOK_INP_EMBD : HOOK_L_OUT;
    case PATCH_MLP_OUT: return HOOK_L_OUT;
    case PATCH_HEAD_Q: return HOOK_QCUR;
    case PATCH_HEAD_K: return HOOK_KCUR;
    case PATCH_HEAD_V: return HOOK_VCUR;
    case PATCH_EXPERT: return HOOK_FFN_MOE_OUT;
    default: return HOOK_KQV;
    }
}

/* Checks s against the model and the prompts. */
static llm_status spec_ok(const model *m, const int *clean, const int *corrupt, int n,
                          const patch_spec *s, int ctx, llm_err *err)
{
    const model_config *c = &m->config;
    int top = s->site == PATCH_RESID_PRE ? c->n_layers : c->n_layers - 1;
    if (s->site < 0 || s->site >= PATCH_SITE_COUNT)
        return llm_fail(err, LLM_ERR_ARG, "no such patching site");
    if (n < 1 || n > ctx)
        return llm_fail(err, LLM_ERR_ARG, "the prompts are %d tokens: patching needs 1 to %d", n,
                        ctx);
    if (s->site == PATCH_EXPERT && c->n_experts == 0)
        return llm_fail(err, LLM_ERR_ARG, "the expert site needs a mixture of experts: this "
                        "model's layers have none");
    if (s->layer_first < 0 || s->layer_last < s->layer_first || s->layer_last > top)
        return llm_fail(err, LLM_ERR_ARG, "layers %d-%d: %s has layers 0-%d", s->layer_first,
                        s->layer_last, patch_site_name(s->site), top);
    for (int i = 0; i < n; i++)
        if (clean[i] < 0 || clean[i] >= c->vocab_size || corrupt[i] < 0 ||
            corrupt[i] >= c->vocab_size)
            return llm_fail(err, LLM_ERR_ARG, "position %d: a token outside the vocabulary", i);
    if (s->metric == PATCH_LOGIT_DIFF &&
        (s->answer < -1 || s->answer >= c->vocab_size || s->wrong < -1 ||
         s->wrong >= c->vocab_size))
        return llm_fail(err, LLM_ERR_ARG, "the answer and wrong tokens must be in the vocabulary");
    return LLM_OK;
}

/* Runs ids[from..n-1] at from on the batch kernels with hooks (count) registered; the
 * last position's logits into logits (vocab). */
static llm_status run_with(transformer *t, const int *ids, int from, int n, const hook *hooks,
                           int count, float *logits, llm_err *err)
{
    int id[3] = {-1, -1, -1};
    llm_status st = LLM_OK;
    for (int i = 0; i < count && st == LLM_OK; i++)
        st = transformer_hook_add(t, &hooks[i], &id[i], err);
    if (st == LLM_OK) {
        const float *out = transformer_run(t, ids + from, n - from, from,
                                           TRANSFORMER_KERNELS_BATCH, NULL, NULL);
        if (out)
            memcpy(logits, out, sizeof(float) * (size_t)transformer_model(t)->config.vocab_size);
        else
            st = transformer_error(t, err);
    }
    for (int i = 0; i < count; i++)
        transformer_hook_remove(t, id[i]);
    return st;
}



/* The columns head h of layer l holds at the site's point (kqv; Qcur; Kcur, Vcur: KV
 * head h), or false when the layer has no such head there. */
static bool head_columns(const model *m, patch_site s, int l, int h, int *c0, int *c1)
{
    const model_layer *L = &m->layers[l];
    bool dn = L->kind == MODEL_LAYER_DELTA_NET;
    int size = dn && s == PATCH_HEAD ? m->config.dn_head_v : L->head_size;
    int heads = s == PATCH_HEAD ? model_layer_heads(m, l) : s == PATCH_HEAD_Q ? m->config.n_heads
                                                                             : L->n_kv_heads;
    if (h >= heads || (dn && s != PATCH_HEAD) ||
        ((s == PATCH_HEAD_K || s == PATCH_HEAD_V) && L->kv_layer != l))
        return false;
    *c0 = h * size;
    *c1 = *c0 + size;
    return true;
}

/* What the expert site reads of each run. */
#define EXPERT_POINTS                                                                      \
    (HOOK_BIT(HOOK_FFN_MOE_TOPK) | HOOK_BIT(HOOK_FFN_MOE_WEIGHTS) | HOOK_BIT(HOOK_FFN_MOE_DOWN))

struct patching {
    transformer *t;
    patch_spec spec;
    int n;
    int *clean, *corrupt; /* (n) each */
    patcher q;
    float *logits;        /* (vocab) a patched run's */
    patch_result r;
    int cells, next;      /* the grid's cells in the order they run; the next one's index */
    int agree;            /* the first position where the prompts differ (n: none) */
    int corrupt_below;    /* the KV cache holds the corrupted run's rows of the positions
                             below it (a patched run writes its position and after) */
    bool groups;          /* a position's cells run together (transformer_run_sequences) */
    int *group_enter;     /* (rows) each sequence's first layer, when the later layers of
                             a group begin at their cells' (skipping the layers before, the
                             corrupted run's); NULL when they run from the embedding */
    int *group_tokens;    /* (rows * n) a group's sequences' tokens */
    float *group_logits;  /* (rows, vocab) each sequence's last logits */
};

/* Whether the spec's cells are (layer, head) rather than (layer, position). */
static bool by_head(const patching *pt)
{
    return !patch_site_positions(pt->spec.site);
}

/* Cell k of the run order: heads row by row; positions from the last (so that each
 * run's cache before its position is the corrupted run's), the layers of a position
 * together. */
static void cell_at(const patching *pt, int k, int *row, int *col)
{
    if (by_head(pt)) {
        *row = k / pt->r.cols;
        *col = k % pt->r.cols;
    } else {
        *row = k % pt->r.rows;
        *col = pt->n - 1 - k / pt->r.rows;
    }
}

/* The run order's index of cell (row, col). */
static int cell_index(const patching *pt, int row, int col)
{
    return by_head(pt) ? row * pt->r.cols + col : (pt->n - 1 - col) * pt->r.rows + row;
}

/* Sets the patcher to cell (row, col); false when the cell's layer has no such head. */
static bool aim(patching *pt, int row, int col)
{
    const model *m = pt->q.m;
    patcher *q = &pt->q;
    q->seqs = 0;
    q->layer = pt->spec.layer_first + row;
    if (pt->spec.site == PATCH_EXPERT) {
        q->pos = -1;
        q->c0 = col;
        return true;
    }
    if (by_head(pt)) {
        q->pos = -1;
        return head_columns(m, pt->spec.site, q->layer, col, &q->c0, &q->c1);
    }
    q->pos = col;
    q->c0 = 0;
    q->c1 = site_width(q, q->layer);
    return true;
}

/* Makes the KV cache before position from the corrupted run's again where a cell run out
 * of order wrote positions below it (the corrupted prompt run again from there). */
static llm_status corrupt_cache_below(patching *pt, int from, llm_err *err)
{
    if (pt->corrupt_below >= from)
        return LLM_OK;
    llm_status st = run_with(pt->t, pt->corrupt, pt->corrupt_below, pt->n, NULL, 0, pt->logits,
                             err);
    if (st == LLM_OK)
        pt->corrupt_below = pt->n;
    return st;
}

/* Runs the cell the patcher is aimed at: the corrupted prompt from the cell's position
 * (a head site: from the start) with the clean activation put back; its last
 * position's logits into pt->logits. */
static llm_status run_cell(patching *pt, llm_err *err)
{
    patcher *q = &pt->q;
    int from = q->pos < 0 ? 0 : q->pos, hl;
    llm_status st0 = corrupt_cache_below(pt, from, err);
    if (st0 != LLM_OK)
        return st0;
    hook_point point = site_point(q->site, q->layer, &hl);
    bool expert = q->site == PATCH_EXPERT;
    hook h[2] = {
        {.edit = put_back, .user = q, .points = HOOK_BIT(point), .layer_first = hl,
         .layer_last = hl, .pos = q->pos},
        {.fn = expert ? see_experts : see_ffn_inp, .user = q,
         .points = expert ? EXPERT_POINTS : HOOK_BIT(HOOK_FFN_INP), .layer_first = q->layer,
         .layer_last = q->layer, .pos = q->pos},
    };
    llm_status st = run_with(pt->t, pt->corrupt, from, pt->n, h,
                             q->site == PATCH_MLP_OUT || expert ? 2 : 1, pt->logits, err);
    pt->corrupt_below = from;
    if (st == LLM_OK) {
        pt->r.runs++;
        pt->r.passes++;
        pt->r.positions_run += pt->n - from;
    }
    return st;
}

/* How many cells of position col from row on run together: as many of its layers as
 * one batch chunk and the context's places past col hold (below 2: one at a time). */
static int group_size(const patching *pt, int row, int col)
{
    if (!pt->groups)
        return 1;
    int m = pt->n - col, fit = transformer_batch_chunk(pt->t) / m;
    int room = (transformer_ctx(pt->t) - col) / m, left = pt->r.rows - row;
    fit = fit < room ? fit : room;
    return fit < left ? fit : left;
}

/* Runs the cells of rows row..row+seqs-1 at position col together: one sequence each,
 * the corrupted prompt from col with that cell's activation put back; their metrics
 * into the grid. */
static llm_status run_group(patching *pt, int row, int col, int seqs, llm_err *err)
{
    patcher *q = &pt->q;
    const model_config *c = &q->m->config;
    int m = pt->n - col, lo = c->n_layers, hi = 0;
    hook_set points = 0;
    q->layer = pt->spec.layer_first + row;
    q->pos = col;
    q->seqs = seqs;
    q->seq_m = m;
    q->enter = pt->group_enter ? pt->group_enter + row : NULL;
    for (int s = 0; s < seqs; s++) {
        int hl;
        points |= HOOK_BIT(site_point(q->site, q->layer + s, &hl));
        hl = hl < 0 ? 0 : hl;
        lo = hl < lo ? hl : lo;
        hi = hl > hi ? hl : hi;
        if (q->enter && q->enter[s] > 0) { /* where its rows begin: l_out before */
            points |= HOOK_BIT(HOOK_L_OUT);
            lo = q->enter[s] - 1 < lo ? q->enter[s] - 1 : lo;
            hi = q->enter[s] - 1 > hi ? q->enter[s] - 1 : hi;
        }
    }
    for (int s = 0; s < seqs; s++)
        memcpy(pt->group_tokens + (size_t)s * m, pt->corrupt + col, sizeof(int) * (size_t)m);
    hook h[2] = {
        {.edit = put_back, .user = q, .points = points, .layer_first = lo, .layer_last = hi,
         .pos = -1},
        {.fn = see_ffn_inp, .user = q, .points = HOOK_BIT(HOOK_FFN_INP),
         .layer_first = q->layer, .layer_last = q->layer + seqs - 1, .pos = -1},
    };
    int id[2] = {-1, -1}, count = q->site == PATCH_MLP_OUT ? 2 : 1;
    llm_status st = LLM_OK;
    for (int i = 0; i < count && st == LLM_OK; i++)
        st = transformer_hook_add(pt->t, &h[i], &id[i], err);
    if (st == LLM_OK && !transformer_run_sequences(pt->t, pt->group_tokens, m, seqs, col,
                                                   q->enter, pt->group_logits))
        st = transformer_error(pt->t, err);
    for (int i = 0; i < count; i++)
        transformer_hook_remove(pt->t, id[i]);
    q->seqs = 0;
    q->enter = NULL;
    pt->corrupt_below = col;
    if (st != LLM_OK)
        return st;
    for (int s = 0; s < seqs; s++)
        pt->r.grid[(size_t)(row + s) * pt->r.cols + col] = (float)patching_metric(
            &pt->spec, &pt->r, pt->group_logits + (size_t)s * c->vocab_size, c->vocab_size);
    pt->r.runs += seqs;
    pt->r.passes++;
    pt->r.positions_run += (long)seqs * m;
    return LLM_OK;
}

/* Checks the spec, runs the clean and corrupted prompts and settles the baselines. */
static llm_status start(patching *pt, llm_err *err)
{
    const patch_spec *s = &pt->spec;
    const model *m = transformer_model(pt->t);
    const model_config *c = &m->config;
    int n = pt->n, vocab = c->vocab_size, rows = s->layer_last - s->layer_first + 1;
    patch_result *out = &pt->r;
    int K = c->n_experts_used;
    int width = s->site == PATCH_ATTN_OUT || s->site == PATCH_HEAD ? model_mixer_width(c)
                : s->site == PATCH_HEAD_Q ? c->q_dim
                : s->site == PATCH_HEAD_K || s->site == PATCH_HEAD_V ? c->kv_dim
                : s->site == PATCH_EXPERT ? K * c->dim
                                          : c->dim;
    if ((double)rows * n * width * sizeof(float) > (double)PATCH_CLEAN_MAX)
        return llm_fail(err, LLM_ERR_ARG, "the clean run's %s activations of %d layers and %d "
                        "positions would take %.1f GB: patch fewer layers (--layers)",
                        patch_site_name(s->site), rows, n,
                        (double)rows * n * width * sizeof(float) / 1e9);
    pt->q = (patcher){.m = m, .site = s->site, .first = s->layer_first, .n = n, .width = width,
                      .K = K};
    out->rows = rows;
    out->cols = patch_site_cols(s->site, c, n);
    pt->cells = rows * out->cols;
    out->grid = malloc(sizeof(float) * (size_t)pt->cells);
    out->clean_logits = malloc(sizeof(float) * vocab);
    out->corrupt_logits = malloc(sizeof(float) * vocab);
    pt->logits = malloc(sizeof(float) * vocab);
    pt->q.clean = malloc(sizeof(float) * (size_t)rows * n * width);
    if (s->site == PATCH_MLP_OUT)
        pt->q.ffn_inp = malloc(sizeof(float) * (size_t)rows * n * c->dim);
    bool expert = s->site == PATCH_EXPERT;
    if (expert) {
        pt->q.clean_ids = malloc(sizeof(float) * 2 * (size_t)rows * n * K);
        pt->q.now_ids = malloc(sizeof(float) * 2 * (size_t)n * K);
        pt->q.now_down = malloc(sizeof(float) * (size_t)n * K * c->dim);
        pt->q.clean_w = pt->q.clean_ids ? pt->q.clean_ids + (size_t)rows * n * K : NULL;
        pt->q.now_w = pt->q.now_ids ? pt->q.now_ids + (size_t)n * K : NULL;
    }
    if (!out->grid || !out->clean_logits || !out->corrupt_logits || !pt->logits ||
        !pt->q.clean || (s->site == PATCH_MLP_OUT && !pt->q.ffn_inp) ||
        (expert && (!pt->q.clean_ids || !pt->q.now_ids || !pt->q.now_down)))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the patching runs");
    for (int i = 0; i < pt->cells; i++)
        out->grid[i] = NAN;
    /* the clean run, its site captured; then the corrupted run */
    int first_hl, last_hl;
    hook_point first = site_point(s->site, s->layer_first, &first_hl);
    hook_set points = HOOK_BIT(first) | HOOK_BIT(site_point(s->site, s->layer_last, &last_hl));
    if (s->site == PATCH_MLP_OUT)
        points |= HOOK_BIT(HOOK_FFN_INP);
    if (expert)
        points = EXPERT_POINTS;
    hook cap = {.fn = capture, .user = &pt->q, .points = points,
                .layer_first = first_hl < 0 ? 0 : first_hl, .layer_last = last_hl, .pos = -1};
    llm_status st;
    /* a position's cells together where there is room (patching_ctx; a hybrid model's
     * from its recurrent state at the position, which each sequence copies); each
     * beginning at its cell's layer where no layer reads another's KV cache and the
     * corrupted run's stream is not too big to keep */
    pt->groups = patch_site_positions(s->site) && rows > 1 && transformer_ctx(pt->t) >= n + 2;
    bool own_caches = true;
    for (int l = 0; l < c->n_layers; l++)
        own_caches = own_caches && m->layers[l].kv_layer == l;
    size_t stream_bytes = sizeof(float) * (size_t)(c->n_layers + 1) * n * c->dim;
    if (pt->groups) {
        pt->group_tokens = malloc(sizeof(int) * (size_t)rows * n);
        pt->group_logits = malloc(sizeof(float) * (size_t)rows * vocab);
        if (own_caches && stream_bytes <= PATCH_STREAM_MAX) {
            pt->group_enter = malloc(sizeof(int) * (size_t)rows);
            pt->q.corrupt_stream = malloc(stream_bytes);
        }
        if (!pt->group_tokens || !pt->group_logits ||
            (own_caches && stream_bytes <= PATCH_STREAM_MAX &&
             (!pt->group_enter || !pt->q.corrupt_stream)))
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the patching runs");
        for (int r = 0; pt->group_enter && r < rows; r++)
            pt->group_enter[r] = s->layer_first + r;
    }
    hook keep = {.fn = keep_stream, .user = &pt->q,
                 .points = HOOK_BIT(HOOK_INP_EMBD) | HOOK_BIT(HOOK_L_OUT), .layer_first = 0,
                 .layer_last = c->n_layers - 1, .pos = -1};
    bool keeping = pt->q.corrupt_stream != NULL;
    while (pt->agree < n && pt->clean[pt->agree] == pt->corrupt[pt->agree])
        pt->agree++;
    /* a hybrid's recurrent state where each group begins, kept as the corrupted run
     * passes it (no group then runs positions again to make it), within the stream's
     * bound; without it (too big, out of memory) each is made from its checkpoint */
    if (pt->groups && c->dn_layers > 0 &&
        (double)(n - pt->agree) * transformer_state_bytes(pt->t) <= PATCH_STREAM_MAX)
        transformer_keep_states(pt->t, pt->agree, n - 1);
    if ((st = run_with(pt->t, pt->clean, 0, n, &cap, 1, out->clean_logits, err)) != LLM_OK ||
        (st = run_with(pt->t, pt->corrupt, 0, n, keeping ? &keep : NULL, keeping ? 1 : 0,
                       out->corrupt_logits, err)) != LLM_OK)
        return st;
    pt->corrupt_below = n;
    if (s->site == PATCH_MLP_OUT) /* from now on: a patched run's own ffn_inp (dim each) */
        memset(pt->q.ffn_inp, 0, sizeof(float) * c->dim);
    if (s->metric == PATCH_KL) {
        out->clean = 0.0;
        out->corrupt = kl_from_clean(out->clean_logits, out->corrupt_logits, vocab);
        return LLM_OK;
    }
    out->answer = s->answer >= 0 ? s->answer : top_token(out->clean_logits, vocab);
    out->wrong = s->wrong >= 0 ? s->wrong : top_token(out->corrupt_logits, vocab);
    if (out->answer == out->wrong && s->answer >= 0 && s->wrong >= 0)
        return llm_fail(err, LLM_ERR_ARG, "the answer and the wrong token are the same token "
                        "(#%d): their logit difference is 0 in every run; name two different "
                        "tokens", out->answer);
    if (out->answer == out->wrong)
        return llm_fail(err, LLM_ERR_ARG, "the answer and the wrong token are both #%d (the %s "
                        "run's most probable): name the two tokens, or measure the KL "
                        "divergence", out->answer, s->answer < 0 ? "clean" : "corrupted");
    out->clean = (double)out->clean_logits[out->answer] - out->clean_logits[out->wrong];
    out->corrupt = (double)out->corrupt_logits[out->answer] - out->corrupt_logits[out->wrong];
    if (out->clean == out->corrupt)
        return llm_fail(err, LLM_ERR_ARG, "the clean and corrupted prompts give the same logit "
                        "difference (%.4g): there is nothing for a patch to bring back",
                        out->clean);
    return LLM_OK;
}

llm_status patching_begin(transformer *t, const int *clean, const int *corrupt, int n,
                          const patch_spec *s, patching **out, llm_err *err)
{
    *out = NULL;
    const model *m = transformer_model(t);
    llm_status st = spec_ok(m, clean, corrupt, n, s, transformer_ctx(t), err);
    if (st != LLM_OK)
        return st;
    patching *pt = calloc(1, sizeof *pt);
    if (!pt || !(pt->clean = malloc(sizeof(int) * 2 * (size_t)n))) {
        free(pt);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the patching runs");
    }
    pt->t = t;
    pt->spec = *s;
    pt->n = n;
    pt->corrupt = pt->clean + n;
    memcpy(pt->clean, clean, sizeof(int) * n);
    memcpy(pt->corrupt, corrupt, sizeof(int) * n);
    if ((st = start(pt, err)) != LLM_OK) {
        patching_free(pt);
        return st;
    }
    *out = pt;
    return LLM_OK;
}

llm_status patching_step(patching *pt, llm_err *err)
{
    if (pt->next >= pt->cells)
        return LLM_OK;
    int row, col;
    cell_at(pt, pt->next, &row, &col);
    if (!by_head(pt) && col < pt->agree) {
        /* the prompts agree up to col: the clean run's activations there are the
           corrupted run's, so each cell of col is the corrupted run, without a run */
        float v = (float)patching_metric(&pt->spec, &pt->r, pt->r.corrupt_logits,
                                         pt->q.m->config.vocab_size);
        for (int r = row; r < pt->r.rows; r++)
            pt->r.grid[(size_t)r * pt->r.cols + col] = v;
        pt->next += pt->r.rows - row;
        return LLM_OK;
    }
    int seqs = by_head(pt) ? 1 : group_size(pt, row, col);
    if (seqs > 1) {
        llm_status st = corrupt_cache_below(pt, col, err);
        if (st != LLM_OK)
            return st;
        st = run_group(pt, row, col, seqs, err);
        if (st == LLM_OK)
            pt->next += seqs;
        return st;
    }
    float *v = &pt->r.grid[(size_t)row * pt->r.cols + col];
    if (aim(pt, row, col)) {
        llm_status st = run_cell(pt, err);
        if (st != LLM_OK)
            return st;
        *v = (float)patching_metric(&pt->spec, &pt->r, pt->logits,
                                    pt->q.m->config.vocab_size);
    }
    pt->next++;
    return LLM_OK;
}

bool patching_finished(const patching *pt)
{
    return pt->next >= pt->cells;
}

int patching_cells_done(const patching *pt)
{
    return pt->next;
}

int patching_cell_count(const patching *pt)
{
    return pt->cells;
}

bool patching_cell_ran(const patching *pt, int row, int col)
{
    return row >= 0 && row < pt->r.rows && col >= 0 && col < pt->r.cols &&
           cell_index(pt, row, col) < pt->next;
}

const patch_result *patching_result(const patching *pt)
{
    return &pt->r;
}

const patch_spec *patching_spec(const patching *pt)
{
    return &pt->spec;
}

llm_status patching_cell_logits(patching *pt, int row, int col, float *logits, llm_err *err)
{
    if (row < 0 || row >= pt->r.rows || col < 0 || col >= pt->r.cols)
        return llm_fail(err, LLM_ERR_ARG, "no cell %d, %d in a %d x %d grid", row, col,
                        pt->r.rows, pt->r.cols);
    patcher keep = pt->q;
    if (!aim(pt, row, col)) {
        pt->q = keep;
        return llm_fail(err, LLM_ERR_ARG, "layer %d has no %s head %d",
                        pt->spec.layer_first + row, patch_site_name(pt->spec.site), col);
    }
    int runs = pt->r.runs, passes = pt->r.passes;
    long positions = pt->r.positions_run;
    llm_status st = run_cell(pt, err);
    pt->r.runs = runs, pt->r.passes = passes, pt->r.positions_run = positions; /* the grid's */
    pt->q = keep;
    if (st == LLM_OK)
        memcpy(logits, pt->logits, sizeof(float) * (size_t)pt->q.m->config.vocab_size);
    return st;
}

void patching_free(patching *pt)
{
    if (!pt)
        return;
    if (pt->t)
        transformer_keep_states(pt->t, 1, 0); /* what start kept, if anything */
    patch_result_free(&pt->r);
    free(pt->logits);
    free(pt->q.clean);
    free(pt->q.ffn_inp);
    free(pt->q.clean_ids);
    free(pt->q.now_ids);
    free(pt->q.now_down);
    free(pt->group_tokens);
    free(pt->group_enter);
    free(pt->q.corrupt_stream);
    free(pt->group_logits);
    free(pt->clean);
    free(pt);
}

llm_status patching_run(transformer *t, const int *clean, const int *corrupt, int n,
                        const patch_spec *s, patch_result *out, llm_err *err)
{
    memset(out, 0, sizeof *out);
    patching *pt;
    llm_status st = patching_begin(t, clean, corrupt, n, s, &pt, err);
    while (st == LLM_OK && !patching_finished(pt))
        st = s->stop && *s->stop ? llm_fail(err, LLM_ERR_STOPPED, "interrupted")
                                 : patching_step(pt, err);
    if (pt) {
        *out = pt->r; /* the result moves to the caller */
        memset(&pt->r, 0, sizeof pt->r);
    }
    patching_free(pt);
    return st;
}
