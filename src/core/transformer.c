/* transformer.c — the transformer's public calls: making and freeing its state (the
 * KV cache, fp32 or int8 rows with one scale per (position, head); the activation
 * buffers; the kept classifier inputs), the hooks registered on it, and running the
 * forward pass (forward.c) for one token, a batch, or a what-if, then the logits from
 * the kept inputs.
 *
 * Owns that state for one sequence. Borrows the model. Does not own weights or pick
 * kernels: every matmul goes through kernels.h. The buffers themselves are managed by
 * pass_state.c, which forward.c works in. A batch of tokens runs in chunks of 64-256
 * positions. The captures the debugger asks for (attention rows, the logit lens,
 * attribution, what-if logits) are observers at the pass's hook points for the one
 * call. The forward calls return NULL, and do nothing, when a token or a position is
 * out of range, and NULL when the kernels ran out of memory for their scratch (the
 * workspace the transformer owns, made at _new and freed at _free); the transformer
 * records why (transformer_error). */
#include "forward.h"
#include "pass_state.h"

#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int transformer_ctx(const transformer *t)
{
    return t->ctx;
}

int transformer_batch_chunk(const transformer *t)
{
    return t->chunk;
}

transformer_kv transformer_kv_type(const transformer *t)
{
    return t->kv;
}

/* Whether layer l of m writes a KV cache of its own (an attention layer that shares
 * none). */
static bool owns_cache(const model *m, int l)
{
    const model_layer *L = &m->layers[l];
    return L->kind != MODEL_LAYER_DELTA_NET && L->kv_layer == l;
}

/* Values (keys or values alike) and rows of one KV head at one position in the KV
 * cache of m for ctx positions: the layers' that own one. */
static void cache_size(const model *m, int ctx, size_t *values, size_t *rows)
{
    *values = *rows = 0;
    for (int l = 0; l < m->config.n_layers; l++)
        if (owns_cache(m, l)) {
            *values += (size_t)ctx * m->layers[l].kv_dim;
            *rows += (size_t)ctx * m->layers[l].n_kv_heads;
        }
}

/* Bytes of the KV cache of m for ctx positions of type kv. */
static size_t kv_bytes(const model *m, int ctx, transformer_kv kv)
{
    size_t values, rows;
    cache_size(m, ctx, &values, &rows);
    if (kv == TRANSFORMER_KV_F32)
        return 2 * values * sizeof(float);
    return 2 * values + 2 * rows * sizeof(float);
}

size_t transformer_kv_bytes(const transformer *t)
{
    return kv_bytes(t->m, t->ctx, t->kv);
}

const model *transformer_model(const transformer *t)
{
    return t->m;
}

void transformer_free(transformer *t)
{
    if (!t)
        return;
    pass_buffers_free(&t->buf, t->n_qb);
    lanes_free(t);
    kernels_workspace_free(t->ws);
    free(t->k_new);
    free(t->v_new);
    free(t->gate_keep);
    free(t->logit_rows);
    free(t->key_cache);
    free(t->value_cache);
    free(t->kq);
    free(t->vq);
    free(t->ks);
    free(t->vs);
    free(t->kv_f32);
    free(t->seq_kv);
    free(t->kv_base);
    free(t->kv_rows);
    free(t->logits);
    free(t->batch_of);
    qbatch_free(t->cls_q);
    free(t->cls_f);
    free(t->att);
    free(t->seq_dn);
    free(t->dn_kept);
    free(t->dn_kept_ok);
    free(t->dn_live);
    free(t->dn_marks);
    free(t->dn_index);
    free(t->tokens_at);
    free(t->dn_hist);
    free(t);
}

/* The recurrent state of a hybrid model's Gated DeltaNet layers (none for others): the
 * live state, its checkpoints (zeros: the state before position 0) and the tokens that
 * made it; false when out of memory. */
static bool recurrent_alloc(transformer *t)
{
    const model_config *c = &t->m->config;
    if (c->dn_layers == 0)
        return true;
    t->dn_floats = (size_t)(c->dn_conv_width - 1) * c->dn_conv_dim +
                   (size_t)c->dn_v_heads * c->dn_head_k * c->dn_head_v;
    size_t state = t->dn_floats * c->dn_layers, marks = (size_t)t->ctx / DN_MARK_EVERY + 1;
    t->dn_live = calloc(state, sizeof(float));
    t->dn_marks = calloc(state * marks, sizeof(float)); /* pages touched when first passed */
    t->dn_index = malloc(sizeof(int) * (size_t)c->n_layers);
    t->tokens_at = calloc((size_t)t->ctx, sizeof(int));
    t->dn_hist_floats = (size_t)c->dn_key_dim + 2 * (size_t)c->dn_v_heads;
    t->dn_hist = calloc((size_t)t->ctx * c->dn_layers * t->dn_hist_floats, sizeof(float));
    if (!t->dn_live || !t->dn_marks || !t->dn_index || !t->tokens_at || !t->dn_hist)
        return false;
    for (int l = 0, d = 0; l < c->n_layers; l++)
        t->dn_index[l] = t->m->layers[l].kind == MODEL_LAYER_DELTA_NET ? d++ : -1;
    return true;
}

/* The checkpoint of the state after position s DN_MARK_EVERY - 1. */
static float *recurrent_mark(const transformer *t, int s)
{
    return t->dn_marks + (size_t)s * t->m->config.dn_layers * t->dn_floats;
}

static size_t recurrent_bytes(const transformer *t)
{
    return sizeof(float) * t->dn_floats * t->m->config.dn_layers;
}

llm_status transformer_new(const model *m, int ctx_len, transformer **out, llm_err *err)
{
    return transformer_new_kv(m, ctx_len, TRANSFORMER_KV_AUTO, out, err);
}

/* The KV cache of t (ctx positions) of type kv; false when out of memory. */
static bool cache_alloc(transformer *t, transformer_kv kv)
{
    const model_config *p = &t->m->config;
    size_t cache, rows;
    cache_size(t->m, t->ctx, &cache, &rows);
    t->kv_base = calloc((size_t)p->n_layers, sizeof *t->kv_base);
    t->kv_rows = calloc((size_t)p->n_layers, sizeof *t->kv_rows);
    if (!t->kv_base || !t->kv_rows)
        return false;
    size_t base = 0, row = 0;
    for (int l = 0; l < p->n_layers; l++) {
        t->kv_base[l] = base;
        t->kv_rows[l] = row;
        if (owns_cache(t->m, l)) {
            base += (size_t)t->ctx * t->m->layers[l].kv_dim;
            row += (size_t)t->ctx * t->m->layers[l].n_kv_heads;
        }
    }
    cache = cache ? cache : 1; /* calloc(0) may give NULL */
    rows = rows ? rows : 1;
    t->kv = kv;
    if (kv == TRANSFORMER_KV_F32) {
        t->key_cache = calloc(cache, sizeof(float));
        t->value_cache = calloc(cache, sizeof(float));
        return t->key_cache && t->value_cache;
    }
    t->kq = calloc(cache, 1);
    t->vq = calloc(cache, 1);
    t->ks = calloc(rows, sizeof(float));
    t->vs = calloc(rows, sizeof(float));
    t->kv_f32 = malloc(sizeof(float) * 2 * t->ctx * p->head_size);
    return t->kq && t->vq && t->ks && t->vs && t->kv_f32;
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
    t->ws = kernels_workspace_new();
    if (kv == TRANSFORMER_KV_AUTO) /* wo: every layer kind has one */
        kv = tensor_is_q8(&m->layers[0].wo) ? TRANSFORMER_KV_Q8_0 : TRANSFORMER_KV_F32;
    bool ok = cache_alloc(t, kv);
    t->logits = calloc((size_t)p->vocab_size, sizeof(float));
    t->batch_of = calloc((size_t)t->ctx, 1);
    if (tensor_is_q8(&m->wcls))
        ok = ok && (t->cls_q = qbatch_new(t->ctx, m->wcls.cols, m->wcls.group)) != NULL;
    else
        ok = ok && (t->cls_f = malloc(sizeof(float) * (size_t)t->ctx * p->dim)) != NULL;
    t->chunk = pass_chunk_positions(p, t->ctx);
    t->att = calloc((size_t)t->chunk * t->ctx, sizeof(float));
    t->att_slots = 1;
    t->k_new = malloc(sizeof(float) * t->chunk * p->kv_dim);
    t->v_new = malloc(sizeof(float) * t->chunk * p->kv_dim);
    ok = ok && t->ws && t->logits && t->batch_of && t->att && t->k_new && t->v_new &&
         recurrent_alloc(t);
    for (int l = 0; ok && l < p->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        const tensor *ws[] = {&L->wq,       &L->wk,      &L->wv,     &L->wo,
                              &L->w1,       &L->w2,      &L->w3,     &L->dn_qkv,
                              &L->dn_z,     &L->dn_beta, &L->dn_alpha, &L->ple_gate,
                              &L->ple_proj, &m->ple_model_proj, &L->shexp_gate,
                              &L->shexp_up, &L->shexp_down};
        for (size_t i = 0; ok && i < sizeof ws / sizeof ws[0]; i++)
            ok = qbatch_register(t, ws[i]);
        for (int e = 0; ok && e < p->n_experts; e++)
            ok = qbatch_register(t, &L->expert_gate[e]) && qbatch_register(t, &L->expert_up[e]) &&
                 qbatch_register(t, &L->expert_down[e]);
    }
    ok = ok && qbatch_register(t, &m->wcls) && pass_buffers_reserve(t, 1) &&
         lanes_reserve(t) > 0;
    if (!ok) {
        transformer_free(t);
        char mb[32];
        return llm_fail(err, LLM_ERR_NOMEM,
                        "out of memory for a context of %d positions (KV cache %s MiB)",
                        ctx_len ? ctx_len : p->seq_len,
                        llm_group_digits(mb, sizeof mb,
                                         (long long)(kv_bytes(m, ctx_len ? ctx_len : p->seq_len,
                                                              kv) >> 20)));
    }
    *out = t;
    return LLM_OK;
}

/* Records why a forward call failed (transformer_error) and returns false. */
static bool failed(transformer *t, llm_status st, const char *what, int pos, int n)
{
    t->failure = st;
    if (st == LLM_ERR_NOMEM)
        llm_fail(&t->failure_text, st, "out of memory for the kernels' scratch (%s positions "
                                       "%d..%d)", what, pos, pos + n - 1);
    else
        llm_fail(&t->failure_text, st, "positions %d..%d or their tokens are out of range "
                                       "(a context of %d, a vocabulary of %d)",
                 pos, pos + n - 1, t->ctx, t->m->config.vocab_size);
    return false;
}

llm_status transformer_error(const transformer *t, llm_err *err)
{
    if (t->failure != LLM_OK && err)
        *err = t->failure_text;
    return t->failure;
}

bool transformer_logits(transformer *t, int pos, int n, float *logits)
{
    t->failure = LLM_OK;
    return classifier_logits(t, pos, n, logits) ||
           failed(t, LLM_ERR_NOMEM, "the logits of", pos, n);
}

/* ---- interventions and observers ---- */

/* The buffer result_output's observers are handed a batch's logits in (made when first
 * wanted); false when out of memory. */
static bool logit_rows_made(transformer *t)
{
    if (!t->logit_rows)
        t->logit_rows =
            malloc(sizeof(float) * OBSERVED_LOGIT_ROWS * (size_t)t->m->config.vocab_size);
    return t->logit_rows != NULL;
}

llm_status transformer_hook_add(transformer *t, const hook *h, int *id, llm_err *err)
{
    const model_config *c = &t->m->config;
    int slot = 0;
    while (slot < MAX_HOOKS && t->hook_used[slot])
        slot++;
    if (!h->fn == !h->edit || (h->points & ~HOOK_ALL) || h->pos < -1 || h->pos >= t->ctx)
        return llm_fail(err, LLM_ERR_ARG, "a hook needs an observer's or an editor's function "
                                          "(one of the two), known points and a position in "
                                          "0..%d (or -1)", t->ctx - 1);
    for (int p = 0; h->edit && p < HOOK_COUNT; p++)
        if ((h->points & HOOK_BIT(p)) && !hook_editable((hook_point)p))
            return llm_fail(err, LLM_ERR_ARG, "%s cannot be edited (only inp_embd, kqv and "
                                              "l_out)", hook_name((hook_point)p));
    if (slot == MAX_HOOKS)
        return llm_fail(err, LLM_ERR_ARG, "%d hooks are registered already", MAX_HOOKS);
    if ((h->points & HOOK_BIT(HOOK_FFN_GATE)) && !t->gate_keep &&
        !(t->gate_keep = malloc(sizeof(float) * (size_t)t->chunk * c->hidden_dim)))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for observing ffn_gate");
    if ((h->points & HOOK_BIT(HOOK_RESULT_OUTPUT)) && !logit_rows_made(t))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for observing result_output");
    t->hooks[slot] = *h;
    t->hook_used[slot] = true;
    *id = slot;
    return LLM_OK;
}

void transformer_hook_remove(transformer *t, int id)
{
    if (id >= 0 && id < MAX_HOOKS)
        t->hook_used[id] = false;
}

/* The hooks of a forward call: the registered ones, then the call's own observers (n);
 * the editors apart. */
static void hooks_collect(const transformer *t, const hook *own, int n, pass_hooks *out)
{
    out->n = 0;
    out->n_edit = 0;
    out->watch = 0;
    out->edits = 0;
    for (int i = 0; i < MAX_HOOKS; i++) {
        const hook *h = &t->hooks[i];
        if (!t->hook_used[i])
            continue;
        if (h->edit) {
            out->edit[out->n_edit++] = h;
            out->edits |= h->points;
        } else {
            out->list[out->n++] = h;
            out->watch |= h->points;
        }
    }
    for (int i = 0; i < n && i < CALL_HOOKS; i++) {
        out->list[out->n++] = &own[i];
        out->watch |= own[i].points;
    }
}

/* A call's own observer of points at every layer and position. */
static hook own_hook(hook_fn fn, void *user, hook_set points)
{
    return (hook){.fn = fn, .user = user, .points = points, .layer_first = 0,
                  .layer_last = 1 << 30, .pos = -1};
}

/* The attention rows a forward call was asked for: rows[i], when not NULL, receives
 * (n_layers, n_heads, pos0 + i + 1) for query pos0 + i. At kq_soft_max. */
typedef struct {
    float *const *rows;
    int pos0;
    int n_heads;
} attention_capture;

static void capture_attention(void *user, const hook_tensor *x)
{
    const attention_capture *a = user;
    for (int i = 0; i < x->n; i++) {
        int p = x->pos + i;
        float *dst = a->rows[p - a->pos0];
        if (dst)
            memcpy(dst + ((size_t)x->layer * a->n_heads + x->head) * (p + 1),
                   x->data + (size_t)i * x->stride, sizeof(float) * (p + 1));
    }
}

/* Runs tokens (n <= t->cap, or 1) at pos..pos+n-1 on the batch kernels or the token
 * kernels, with the registered observers and the attention capture when rows is not
 * NULL. False when out of memory for the kernels' scratch. */
/* Zeroes what the pass leaves alone in the attention rows of a call (rows[i], when not
 * NULL, for query pos + i): in a hybrid model a layer may have fewer heads than a row
 * holds (model_heads_max); their rows. */
static void rows_clear(const transformer *t, float *const *rows, int pos, int n)
{
    const model_config *c = &t->m->config;
    int heads = model_heads_max(c);
    for (int i = 0; rows && c->dn_layers > 0 && i < n; i++) {
        size_t keys = (size_t)(pos + i + 1);
        for (int l = 0; rows[i] && l < c->n_layers; l++) {
            int own = model_layer_heads(t->m, l);
            memset(rows[i] + ((size_t)l * heads + own) * keys, 0,
                   sizeof(float) * (size_t)(heads - own) * keys);
        }
    }
}

static bool run(transformer *t, const int *tokens, int n, int pos, bool batch,
                float *const *rows)
{
    const model_config *c = &t->m->config;
    attention_capture a = {.rows = rows, .pos0 = pos, .n_heads = model_heads_max(c)};
    rows_clear(t, rows, pos, n);
    hook own = own_hook(capture_attention, &a, HOOK_BIT(HOOK_KQ_SOFT_MAX));
    pass_hooks hooks;
    hooks_collect(t, &own, rows ? 1 : 0, &hooks);
    if (!forward_pass(t, tokens, n, pos, batch, &hooks))
        return false;
    memset(t->batch_of + pos, batch, (size_t)n);
    return true;
}

/* ---- the recurrent state ---- */

/* The state after position pos - 1 as transformer_keep_states kept it, or NULL: kept
 * by the run that took pos in, while pos is among the positions run in order. */
static const float *recurrent_kept(const transformer *t, int pos)
{
    if (!t->dn_kept || pos < t->dn_kept_from || pos > t->dn_kept_to || pos > t->dn_known ||
        !t->dn_kept_ok[pos - t->dn_kept_from])
        return NULL;
    return t->dn_kept + (size_t)(pos - t->dn_kept_from) * t->m->config.dn_layers * t->dn_floats;
}

/* Makes the recurrent state the one after position pos - 1 (pos <= t->dn_known): the
 * kept one (transformer_keep_states), else the checkpoint at or before pos (or the
 * live state, where it is between), then the positions from it to pos run again with
 * their tokens, on the kernels each ran on, with the editors as they are (no
 * observers: what they saw is not new). keep: the states passed are kept as the
 * sequence's (transformer_keep_states), for a run as the positions first ran; a
 * what-if's keeps none. Nothing for a model without recurrent layers or a state
 * already there. False when out of memory for the kernels' scratch. */
static bool recurrent_seek(transformer *t, int pos, bool keep)
{
    if (!t->dn_live || t->dn_at == pos)
        return true;
    const float *kept = recurrent_kept(t, pos);
    if (kept) {
        memcpy(t->dn_live, kept, recurrent_bytes(t));
        t->dn_at = pos;
        return true;
    }
    int from = pos / DN_MARK_EVERY * DN_MARK_EVERY;
    if (t->dn_at > from && t->dn_at < pos) /* the live state is on the way: from there */
        from = t->dn_at;
    else
        memcpy(t->dn_live, recurrent_mark(t, from / DN_MARK_EVERY), recurrent_bytes(t));
    t->dn_at = from;
    pass_hooks hooks;
    hooks_collect(t, NULL, 0, &hooks);
    hooks.n = 0;
    hooks.watch = 0;
    bool marking = t->dn_marking;
    t->dn_marking = keep; /* a seek passes no checkpoint: only the kept states */
    bool ok = true;
    for (int p = from, k; p < pos && ok; p += k) {
        bool batch = t->batch_of[p];
        for (k = 1; p + k < pos && k < t->cap && t->batch_of[p + k] == batch;)
            k++;
        ok = forward_pass(t, t->tokens_at + p, k, p, batch, &hooks);
        t->dn_at = p + k;
    }
    t->dn_marking = marking;
    return ok;
}

/* Before positions pos..pos+n-1 run (tokens): the recurrent state after pos - 1, and
 * the history from pos on replaced by these tokens. False (with t's failure set) when
 * pos follows positions not run yet, or out of memory. */
static bool recurrent_before(transformer *t, const int *tokens, int n, int pos)
{
    if (!t->dn_live)
        return true;
    if (pos > t->dn_known)
        return failed(t, LLM_ERR_ARG, "", pos, n);
    t->dn_marking = true;
    if (!recurrent_seek(t, pos, true))
        return failed(t, LLM_ERR_NOMEM, "running again", pos, n);
    t->dn_known = pos;
    memcpy(t->tokens_at + pos, tokens, sizeof(int) * (size_t)n);
    return true;
}

/* After positions up to end - 1 ran in order. */
static void recurrent_after(transformer *t, int end)
{
    if (t->dn_live)
        t->dn_at = t->dn_known = end;
}

/* ---- the forward calls ---- */

static bool tokens_valid(const transformer *t, const int *tokens, int n)
{
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= t->m->config.vocab_size)
            return false;
    return true;
}

const float *transformer_forward(transformer *t, int token, int pos, float *attn)
{
    return transformer_run(t, &token, 1, pos, TRANSFORMER_KERNELS_AUTO, NULL,
                           attn ? &attn : NULL);
}

const float *transformer_forward_batch(transformer *t, const int *tokens, int n, int pos,
                                       float *logits, float *const *attn)
{
    return transformer_run(t, tokens, n, pos, TRANSFORMER_KERNELS_AUTO, logits, attn);
}

const float *transformer_run(transformer *t, const int *tokens, int n, int pos,
                             transformer_kernels kernels, float *logits, float *const *attn)
{
    t->failure = LLM_OK;
    if (n <= 0 || pos < 0 || pos > t->ctx - n || !tokens_valid(t, tokens, n)) {
        failed(t, LLM_ERR_ARG, "", pos, n > 0 ? n : 1);
        return NULL;
    }
    bool batch = kernels == TRANSFORMER_KERNELS_BATCH ||
                 (kernels == TRANSFORMER_KERNELS_AUTO && n >= TRANSFORMER_BATCH_MIN);
    int want = n < t->chunk ? n : t->chunk;
    if (want > t->cap)
        pass_buffers_reserve(t, want); /* on failure, smaller chunks with what we have */
    if (!recurrent_before(t, tokens, n, pos))
        return NULL;
    for (int done = 0; done < n;) {
        int k = n == 1 ? 1 : n - done < t->cap ? n - done : t->cap;
        if (!run(t, tokens + done, k, pos + done, batch, attn ? attn + done : NULL)) {
            recurrent_after(t, pos + done);
            failed(t, LLM_ERR_NOMEM, "running", pos + done, k);
            return NULL;
        }
        done += k;
        recurrent_after(t, pos + done);
    }
    if (logits) {
        if (!classifier_logits(t, pos, n, logits)) {
            failed(t, LLM_ERR_NOMEM, "the logits of", pos, n);
            return NULL;
        }
        memcpy(t->logits, logits + (size_t)(n - 1) * t->m->config.vocab_size,
               sizeof(float) * t->m->config.vocab_size);
    } else if (!classifier_logits(t, pos + n - 1, 1, t->logits)) {
        failed(t, LLM_ERR_NOMEM, "the logits of", pos + n - 1, 1);
        return NULL;
    }
    return t->logits;
}

/* Whether enter (seqs, or NULL) is ascending within 0..n_layers and, where a sequence
 * begins after layer 0, no layer reads another's KV cache. */
static bool enter_valid(const transformer *t, const int *enter, int seqs)
{
    const model_config *c = &t->m->config;
    for (int s = 0; enter && s < seqs; s++)
        if (enter[s] < (s ? enter[s - 1] : 0) || enter[s] > c->n_layers)
            return false;
    if (enter && enter[seqs - 1] > 0)
        for (int l = 0; l < c->n_layers; l++)
            if (t->m->layers[l].kv_layer != l)
                return false;
    return true;
}

bool transformer_run_sequences(transformer *t, const int *tokens, int m, int seqs, int pos,
                               const int *enter, float *logits)
{
    t->failure = LLM_OK;
    int n = m * seqs;
    if (m <= 0 || seqs <= 0 || n > t->chunk || pos < 0 || pos > t->ctx - n ||
        (t->dn_live && pos > t->dn_known) || !tokens_valid(t, tokens, n) ||
        !enter_valid(t, enter, seqs))
        return failed(t, LLM_ERR_ARG, "", pos, n > 0 ? n : 1);
    if (n > t->cap)
        pass_buffers_reserve(t, n);
    int slots = attention_threads(t);
    if (slots > t->seq_kv_slots) {
        float *kv = realloc(t->seq_kv, sizeof(float) * (size_t)slots * 2 * t->ctx *
                                           (size_t)t->m->config.head_size);
        if (kv) {
            t->seq_kv = kv;
            t->seq_kv_slots = slots;
        }
    }
    if (t->dn_live && slots > t->seq_dn_slots) {
        const model_config *c = &t->m->config;
        float *S = realloc(t->seq_dn, sizeof(float) * (size_t)slots * c->dn_head_k * c->dn_head_v);
        if (S) {
            t->seq_dn = S;
            t->seq_dn_slots = slots;
        }
    }
    if (n > t->cap || slots > t->seq_kv_slots || (t->dn_live && slots > t->seq_dn_slots))
        return failed(t, LLM_ERR_NOMEM, "several sequences at", pos, n);
    /* every sequence begins from the recurrent state after pos - 1, which stays; the
     * positions from pos on are no longer the ones run in order */
    if (t->dn_live && !recurrent_seek(t, pos, false))
        return failed(t, LLM_ERR_NOMEM, "running again", pos, n);
    if (t->dn_live)
        t->dn_known = pos;
    bool marking = t->dn_marking;
    t->dn_marking = false;
    pass_hooks hooks;
    hooks_collect(t, NULL, 0, &hooks);
    bool ran = forward_pass_sequences(t, tokens, n, pos, m, enter, &hooks);
    t->dn_marking = marking;
    if (!ran)
        return failed(t, LLM_ERR_NOMEM, "several sequences at", pos, n);
    memset(t->batch_of + pos, 1, (size_t)n);
    if (!classifier_logits(t, pos, seqs, logits)) /* the kept rows: each sequence's last */
        return failed(t, LLM_ERR_NOMEM, "the logits of", pos, seqs);
    return true;
}

int transformer_rerun_cost(const transformer *t, int pos)
{
    if (!t->dn_live || pos == t->dn_at || recurrent_kept(t, pos))
        return 0;
    int from = pos / DN_MARK_EVERY * DN_MARK_EVERY;
    return pos - (t->dn_at > from && t->dn_at < pos ? t->dn_at : from);
}

bool transformer_seek(transformer *t, int pos)
{
    t->failure = LLM_OK;
    if (t->dn_live && (pos < 0 || pos > t->dn_known))
        return failed(t, LLM_ERR_ARG, "", pos, 1);
    bool marking = t->dn_marking;
    t->dn_marking = true;
    bool ok = recurrent_seek(t, pos, true);
    t->dn_marking = marking;
    return ok || failed(t, LLM_ERR_NOMEM, "running again", pos, 1);
}

bool transformer_keep_states(transformer *t, int from, int to)
{
    free(t->dn_kept);
    free(t->dn_kept_ok);
    t->dn_kept = NULL;
    t->dn_kept_ok = NULL;
    from = from < 1 ? 1 : from;
    to = to > t->ctx ? t->ctx : to;
    if (!t->dn_live || from > to)
        return true;
    size_t count = (size_t)(to - from + 1);
    float *kept = malloc(recurrent_bytes(t) * count);
    unsigned char *ok = calloc(count, 1);
    if (!kept || !ok) {
        free(kept);
        free(ok);
        return false;
    }
    t->dn_kept = kept;
    t->dn_kept_ok = ok;
    t->dn_kept_from = from;
    t->dn_kept_to = to;
    return true;
}

size_t transformer_state_bytes(const transformer *t)
{
    return t->dn_live ? recurrent_bytes(t) : 0;
}

bool transformer_ran_batch(const transformer *t, int pos)
{
    return pos >= 0 && pos < t->ctx && t->batch_of[pos];
}

/* ---- what-ifs: one position again ---- */

/* What running position pos writes besides scratch: its KV cache entries (every
 * layer and KV head), its kept classifier input and, in a hybrid model, the DeltaNets'
 * history of it (the recurrent state is saved apart). position_state_copy saves them
 * into save (position_state_bytes) or restores them from it. */
static size_t position_state_bytes(const transformer *t)
{
    const model_config *c = &t->m->config;
    size_t kv = 0;
    for (int l = 0; l < c->n_layers; l++) /* a key and a value of each of its KV heads */
        if (owns_cache(t->m, l))
            kv += 2 * (t->kv == TRANSFORMER_KV_F32
                           ? (size_t)t->m->layers[l].kv_dim * sizeof(float)
                           : (size_t)t->m->layers[l].kv_dim +
                                 (size_t)t->m->layers[l].n_kv_heads * sizeof(float));
    size_t cls = t->cls_q ? (size_t)t->cls_q->stride +
                                sizeof(float) * (size_t)(t->cls_q->stride / t->cls_q->group)
                          : sizeof(float) * (size_t)c->dim;
    return kv + cls + sizeof(float) * (size_t)c->dn_layers * t->dn_hist_floats;
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
    unsigned char *at = save;
    for (int l = 0; l < c->n_layers; l++) {
        size_t hs = (size_t)t->m->layers[l].head_size;
        for (int kh = 0; owns_cache(t->m, l) && kh < t->m->layers[l].n_kv_heads; kh++) {
            if (t->kv == TRANSFORMER_KV_F32) {
                size_t off = cache_f32_at(t, l, kh, pos);
                state_copy(t->key_cache + off, &at, hs * sizeof(float), restore);
                state_copy(t->value_cache + off, &at, hs * sizeof(float), restore);
            } else {
                size_t r = q8_row(t, l, kh, pos), q = q8_at(t, l, kh, pos);
                state_copy(t->kq + q, &at, hs, restore);
                state_copy(t->ks + r, &at, sizeof(float), restore);
                state_copy(t->vq + q, &at, hs, restore);
                state_copy(t->vs + r, &at, sizeof(float), restore);
            }
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
    if (t->dn_hist) /* the DeltaNets' keys, decays and strengths of pos */
        state_copy(t->dn_hist + (size_t)pos * c->dn_layers * t->dn_hist_floats, &at,
                   sizeof(float) * (size_t)c->dn_layers * t->dn_hist_floats, restore);
}

/* Where a what-if's observers copy to (each NULL when not asked for). */
typedef struct {
    const model_config *c;
    float *resid;           /* (n_layers, dim) l_out of each layer */
    float *parts;           /* (n_layers, transformer_parts_width) kqv, ffn_out, experts */
    float *logits;          /* (vocab) result_output */
} what_if_capture;

int transformer_parts_width(const model_config *c)
{
    int experts = c->n_experts > 0 ? c->n_experts_used * (c->dim + 2) : 0;
    return model_mixer_width(c) + c->dim + experts + (c->ple_dim > 0 ? c->dim : 0);
}

static void capture_what_if(void *user, const hook_tensor *x)
{
    const what_if_capture *w = user;
    const model_config *c = w->c;
    size_t bytes = sizeof(float) * (size_t)x->width;
    float *parts = w->parts ? w->parts + (size_t)x->layer * transformer_parts_width(c) : NULL;
    size_t mix = (size_t)model_mixer_width(c), experts = mix + c->dim,
           used = c->n_experts > 0 ? (size_t)c->n_experts_used : 0;
    size_t ple = experts + used * (c->dim + 2); /* per_layer_embd_out */
    if (x->point == HOOK_L_OUT && w->resid)
        memcpy(w->resid + (size_t)x->layer * c->dim, x->data, bytes);
    else if (x->point == HOOK_KQV && parts)
        memcpy(parts, x->data, bytes);
    else if (x->point == HOOK_FFN_OUT && parts)
        memcpy(parts + mix, x->data, bytes);
    else if (x->point == HOOK_FFN_MOE_TOPK && parts)
        memcpy(parts + experts, x->data, bytes);
    else if (x->point == HOOK_FFN_MOE_WEIGHTS && parts)
        memcpy(parts + experts + used, x->data, bytes);
    else if (x->point == HOOK_FFN_MOE_DOWN && parts)
        memcpy(parts + experts + 2 * used, x->data, bytes);
    else if (x->point == HOOK_PER_LAYER_EMBD_OUT && parts)
        memcpy(parts + ple, x->data, bytes);
    else if (x->point == HOOK_RESULT_OUTPUT && w->logits)
        memcpy(w->logits, x->data, bytes);
}

/* Puts back what a what-if's replay wrote of positions from..pos-1 (saved, when not
 * NULL) and the live state (live, when not NULL) as it was at position at; frees both. */
static void what_if_restore(transformer *t, int from, int pos, unsigned char *saved,
                            float *live, int at)
{
    size_t row = position_state_bytes(t);
    for (int p = from; saved && live && p < pos; p++)
        position_state_copy(t, p, saved + row * (size_t)(p - from), true);
    if (live) {
        memcpy(t->dn_live, live, recurrent_bytes(t));
        t->dn_at = at;
    }
    free(saved);
    free(live);
}

/* Runs token at pos once more over the KV cache of 0..pos-1, its observers copying
 * into cap (and the attention rows into attn when not NULL), and leaves the KV
 * cache, the kept classifier input and the logits as they were. `what` names the
 * caller in messages. */
static llm_status run_again(transformer *t, int token, int pos, const what_if_capture *cap,
                            float *attn, const char *what, llm_err *err)
{
    if (pos < 0 || pos >= t->ctx || !tokens_valid(t, &token, 1))
        return llm_fail(err, LLM_ERR_ARG, "%s: token %d at position %d is out of range", what,
                        token, pos);
    unsigned char *kv_save = malloc(position_state_bytes(t));
    if (!kv_save || (cap->logits && !logit_rows_made(t))) {
        free(kv_save);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the %s", what);
    }
    /* A hybrid: the live state, and what the positions run again to make the state before
     * pos write (from its checkpoint up to pos: no other checkpoint lies between), are
     * put back afterwards, so that a what-if leaves everything as it was. */
    size_t row = position_state_bytes(t);
    int from = pos, at0 = t->dn_at;
    float *live_save = NULL;
    unsigned char *replay_save = NULL;
    if (t->dn_live) {
        if (pos > t->dn_known) {
            free(kv_save);
            return llm_fail(err, LLM_ERR_ARG, "%s: position %d follows positions not run yet",
                            what, pos);
        }
        from = pos == t->dn_at ? pos : pos / DN_MARK_EVERY * DN_MARK_EVERY;
        live_save = malloc(recurrent_bytes(t));
        replay_save = malloc(row * (size_t)(pos - from) + 1);
        if (live_save && replay_save) {
            memcpy(live_save, t->dn_live, recurrent_bytes(t));
            for (int p = from; p < pos; p++)
                position_state_copy(t, p, replay_save + row * (size_t)(p - from), false);
        }
        if (!live_save || !replay_save || !recurrent_seek(t, pos, false)) {
            what_if_restore(t, from, pos, replay_save, live_save, at0);
            free(kv_save);
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the %s", what);
        }
    }
    t->dn_marking = false;
    position_state_copy(t, pos, kv_save, false);
    attention_capture a = {.rows = &attn, .pos0 = pos, .n_heads = model_heads_max(&t->m->config)};
    rows_clear(t, &attn, pos, 1);
    hook_set points = (cap->resid ? HOOK_BIT(HOOK_L_OUT) : 0) |
                      (cap->parts ? HOOK_BIT(HOOK_KQV) | HOOK_BIT(HOOK_FFN_OUT) |
                                        HOOK_BIT(HOOK_FFN_MOE_TOPK) |
                                        HOOK_BIT(HOOK_FFN_MOE_WEIGHTS) |
                                        HOOK_BIT(HOOK_FFN_MOE_DOWN) |
                                        HOOK_BIT(HOOK_PER_LAYER_EMBD_OUT)
                                  : 0) |
                      (cap->logits ? HOOK_BIT(HOOK_RESULT_OUTPUT) : 0);
    hook own[2] = {own_hook(capture_what_if, (void *)cap, points),
                   own_hook(capture_attention, &a, attn ? HOOK_BIT(HOOK_KQ_SOFT_MAX) : 0)};
    pass_hooks hooks;
    hooks_collect(t, own, 2, &hooks);
    bool ok = forward_pass(t, &token, 1, pos, t->batch_of[pos], &hooks);
    position_state_copy(t, pos, kv_save, true);
    free(kv_save);
    if (t->dn_live)
        what_if_restore(t, from, pos, replay_save, live_save, at0);
    if (!ok)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the kernels' scratch (the %s of "
                                            "position %d)", what, pos);
    return LLM_OK;
}

llm_status transformer_logit_lens(transformer *t, int token, int pos, float *layer_logits,
                                  llm_err *err)
{
    const model *m = t->m;
    const model_config *c = &m->config;
    size_t dim = (size_t)c->dim, vocab = (size_t)c->vocab_size;
    float *resid = malloc(sizeof(float) * c->n_layers * dim);
    float *xn = malloc(sizeof(float) * dim);
    if (!resid || !xn) {
        free(resid);
        free(xn);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the logit lens");
    }
    what_if_capture cap = {.c = c, .resid = resid};
    llm_status st = run_again(t, token, pos, &cap, NULL, "logit lens", err);
    for (int l = 0; l < c->n_layers && st == LLM_OK; l++) {
        float *out = layer_logits + l * vocab;
        forward_rmsnorm(xn, resid + l * dim, m->rms_final, c->dim, c->rms_eps);
        if (!classifier_logit_rows(t, xn, 1, out))
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory for the kernels' scratch (the "
                                              "logit lens of position %d)", pos);
    }
    free(resid);
    free(xn);
    return st;
}

llm_status transformer_attention_again(transformer *t, int token, int pos, float *attn,
                                       llm_err *err)
{
    what_if_capture cap = {.c = &t->m->config};
    return run_again(t, token, pos, &cap, attn, "attention", err);
}

llm_status transformer_forward_again(transformer *t, int token, int pos, float *logits,
                                     llm_err *err)
{
    what_if_capture cap = {.c = &t->m->config, .logits = logits};
    return run_again(t, token, pos, &cap, NULL, "what-if", err);
}

llm_status transformer_components(transformer *t, int token, int pos, float *parts,
                                  float *resid, float *logits, llm_err *err)
{
    what_if_capture cap = {.c = &t->m->config, .resid = resid, .parts = parts, .logits = logits};
    return run_again(t, token, pos, &cap, NULL, "attribution", err);
}

/* transformer_residuals' observer: l_out of position p into (p, layer). */
static void capture_residuals(void *user, const hook_tensor *x)
{
    const what_if_capture *w = user;
    size_t dim = (size_t)w->c->dim;
    memcpy(w->resid + ((size_t)x->pos * w->c->n_layers + x->layer) * dim, x->data,
           sizeof(float) * dim);
}

llm_status transformer_residuals(transformer *t, const int *tokens, int n, float *resid,
                                 llm_err *err)
{
    if (n < 1 || n > t->ctx || !tokens_valid(t, tokens, n))
        return llm_fail(err, LLM_ERR_ARG, "%d tokens do not fit the context of %d, or one is "
                                          "outside the vocabulary", n, t->ctx);
    what_if_capture cap = {.c = &t->m->config, .resid = resid};
    hook own = own_hook(capture_residuals, &cap, HOOK_BIT(HOOK_L_OUT));
    pass_hooks hooks;
    hooks_collect(t, &own, 1, &hooks);
    bool ok = true;
    if (t->dn_live) { /* from the state before position 0 */
        memset(t->dn_live, 0, recurrent_bytes(t));
        memcpy(t->tokens_at, tokens, sizeof(int) * (size_t)n);
        t->dn_marking = true;
    }
    for (int p = 0; p < n && ok; p++)
        ok = forward_pass(t, &tokens[p], 1, p, false, &hooks);
    memset(t->batch_of, 0, (size_t)n);
    recurrent_after(t, n);
    if (!ok)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the kernels' scratch (the "
                                            "residual streams)");
    return LLM_OK;
}
