/* engine.c — the token sequence, its step records, and the prefill / step / force /
 * rewind operations over a transformer and a sampler (see engine.h).
 *
 * Owns: the transformer (KV cache), the sampler, the sequence, the records, the
 * captured attention rows and a copy of the newest logits. Borrows the model and the
 * tokenizer. Does not print, does not know about any front end. */
#include "engine.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attention_ring.h"
#include "attribution.h"
#include "expert_routes.h"
#include "clock.h"
#include "finite.h"
#include "kernels.h"
#include "steering.h"
#include "transformer.h"

/* Prompt positions whose logits are computed in one pass over the classifier when
 * their candidates are wanted at prefill (record_prompt): the batch_logits buffer. */
enum { PROMPT_LOGITS_BLOCK = 64 };

struct engine {
    const model *m;
    const tokenizer *tok;
    transformer *tf;
    sampler *smp;
    engine_options opt;     /* as given; opt.sampler is not kept: the sampler holds its
                               settings (engine_sampler_config) */
    int ctx;
    int vocab;
    int n;                  /* tokens in the sequence */
    int *tokens;            /* (ctx) */
    step_record *records;   /* (ctx) */
    bool applying;          /* observe_as_ran applies `applied` (steering_as_ran; NULL:
                               none) to a record's lens and steps, not the state in force */
    const intervention *applied;
    const float *logits;    /* (vocab) logits of position n-1, or NULL. Borrowed from the
                               transformer (or batch_logits): valid until the next forward,
                               which is also when they stop being n-1's. */
    float *batch_logits;    /* (PROMPT_LOGITS_BLOCK, vocab) */
    float *kept_logits;     /* (vocab) position n-1's logits after a rewind, computed again
                               from its kept classifier input */
    bool chosen;            /* the newest record's next was chosen by the sampler and not
                               run (engine_step with the context full, a rejected guess):
                               the next step runs it */
    float *guess_logits;    /* (ENGINE_GUESS_MAX + 1, vocab) engine_step_guessed's, made on
                               its first call */
    int last_guess[ENGINE_GUESS_MAX]; /* the newest call's guesses that ran ... */
    int last_guess_n;       /* ... how many (0: none, or forgotten) */
    int last_guess_pos;     /* ... the position of the token they followed */
    int last_guess_accepted; /* ... how many of them the sampler picked */
    guess_length guess_len; /* the acceptance and the cost of checks measured so far */
    int guess_asked;        /* the guesses the newest engine_step_guessed asked for */
    transformer_kernels kernels; /* what the positions run from now on compute with
                                    (engine_set_kernels; AUTO by default) */
    bool *pending;          /* (ctx) prompt positions whose candidates and next_prob are
                               computed when first asked for (engine_record) */
    float *probs;           /* (vocab) softmax of the logits at probs_of */
    const float *probs_of;  /* the logits probs was computed from, or NULL */
    float **attn;           /* (ctx) rows of (n_layers, model_heads_max, pos+1) in `ring`,
                               or NULL */
    attention_ring *ring;   /* where the rows live; made when capture is first on */
    step_lens_layer **lens; /* (ctx) each position's logit lens (n_layers), or NULL;
                               the array itself is made on the first lens */
    float *lens_logits;     /* (n_layers, vocab) scratch of engine_lens */
    steering *steer;        /* the control vectors and knocked-out heads: editors at the
                               transformer's hook points (steering_attach) */
    step_whatif whatif;     /* the last engine_whatif, valid while whatif_of is the
                               steering state and whatif_n the sequence length */
    const intervention *whatif_of;
    int whatif_n;
    float *whatif_logits;   /* (2, vocab) scratch: without and with the knock-outs */
    /* engine_attribution: what position parts_pos's forward pass left (-1: nothing),
     * run with the steering state parts_of, and the last attribution made from it */
    float *parts;           /* (n_layers, transformer_parts_width) transformer_components'
                               parts */
    float *parts_resid;     /* (n_layers, dim) the residual stream after each layer */
    float *parts_logits;    /* (vocab) */
    int parts_pos;
    const intervention *parts_of;
    float *attrib_head;     /* (n_layers, model_heads_max) */
    float *attrib_mlp;      /* (n_layers) */
    float *attrib_expert;   /* (n_layers, n_experts_used): a mixture of experts' parts */
    float *attrib_layer_input; /* (n_layers): per-layer inputs' parts (in attrib_head's
                               block, as attrib_mlp and attrib_expert are) */
    int *attrib_expert_id;  /* (n_layers, n_experts_used) */
    expert_routes *routes;  /* each position's chosen experts per layer (a model with
                               experts; else NULL): its observer records the sequence's
                               runs, not the what-ifs */
    step_attribution attrib; /* valid while attrib_ok, for parts_pos */
    bool attrib_ok;
    tensor_capture *cap;    /* the last engine_tensors, run with the steering state cap_of */
    const intervention *cap_of;
    step_tensor *sums;      /* (n_sums) a record's summaries while its observer sees it
                               (record_tensors); reused for every record */
    int n_sums;
    engine_observer observer;
    void *observer_user;
    engine_progress progress; /* told between a long batch's chunks, or NULL */
    void *progress_user;
    int progress_done;      /* the batch call under way: its tokens run before the
                               current prefill_batch ... */
    int progress_total;     /* ... of this many */
    engine_stats stats;
};

static void make_ring(engine *e);

void engine_options_default(engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->top_n = 10;
    o->record_prompt = true;
    o->guess_min = -1;
    o->attention_budget = (size_t)ENGINE_ATTENTION_MIB_DEFAULT << 20;
    sampler_config_default(&o->sampler);
}

llm_status engine_new(const model *m, const tokenizer *tok, const engine_options *o,
                      engine **out, llm_err *err)
{
    *out = NULL;
    engine_options defaults;
    if (!o) {
        engine_options_default(&defaults);
        o = &defaults;
    }
    if (o->top_n < 0 || o->top_n > STEP_TOP_MAX)
        return llm_fail(err, LLM_ERR_ARG, "top candidates per step must be 0..%d, got %d",
                        STEP_TOP_MAX, o->top_n);
    llm_status st = sampler_config_check(&o->sampler, err);
    if (st != LLM_OK)
        return st;
    engine *e = calloc(1, sizeof *e);
    if (!e)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory creating the engine");
    e->m = m;
    e->tok = tok;
    e->opt = *o;
    e->vocab = m->config.vocab_size;
    e->parts_pos = -1;
    guess_length_init(&e->guess_len);
    if ((st = transformer_new_kv(m, o->ctx_len, o->kv_cache, &e->tf, err)) != LLM_OK ||
        (st = sampler_new(e->vocab, &o->sampler, &e->smp, err)) != LLM_OK ||
        (st = steering_new(m->config.n_layers, model_heads_max(&m->config), m->config.dim,
                           &e->steer, err)) != LLM_OK ||
        (st = steering_attach(e->steer, e->tf, err)) != LLM_OK) {
        engine_free(e);
        return st;
    }
    e->ctx = transformer_ctx(e->tf);
    if (m->config.n_experts > 0) {
        int id;
        hook h;
        if ((st = expert_routes_new(&m->config, e->ctx, &e->routes, err)) != LLM_OK ||
            (h = expert_routes_hook(e->routes),
             (st = transformer_hook_add(e->tf, &h, &id, err)) != LLM_OK)) {
            engine_free(e);
            return st;
        }
    }
    e->tokens = malloc(sizeof(int) * e->ctx);
    e->records = calloc(e->ctx, sizeof(step_record));
    e->batch_logits = malloc(sizeof(float) * (size_t)PROMPT_LOGITS_BLOCK * e->vocab);
    e->kept_logits = malloc(sizeof(float) * e->vocab);
    e->pending = calloc(e->ctx, sizeof(bool));
    e->probs = malloc(sizeof(float) * e->vocab);
    e->attn = calloc(e->ctx, sizeof(float *));
    if (!e->tokens || !e->records || !e->batch_logits || !e->kept_logits || !e->pending ||
        !e->probs || !e->attn) {
        engine_free(e);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for a context of %d positions",
                        o->ctx_len);
    }
    if (o->capture_attention)
        make_ring(e);
    *out = e;
    return LLM_OK;
}

/* Bytes of the attention row of query pos: (n_layers, model_heads_max, pos + 1) floats. */
static size_t attention_row_bytes(const engine *e, int pos)
{
    return (size_t)e->m->config.n_layers * model_heads_max(&e->m->config) * (pos + 1) *
           sizeof(float);
}

/* The ring overwrote pos's row. */
static void forget_attention_row(void *user, int pos)
{
    engine *e = user;
    e->attn[pos] = NULL;
    e->records[pos].attn = NULL;
}

static void free_attention_row(engine *e, int pos)
{
    if (!e->attn[pos])
        return;
    attention_ring_give_back(e->ring, pos);
    forget_attention_row(e, pos);
}

/* The ring, made the first time capture is on: the budget, or less when the rows of the
 * whole context take less. Without memory for it nothing is captured. */
static void make_ring(engine *e)
{
    if (e->ring)
        return;
    size_t per_key =
        (size_t)e->m->config.n_layers * model_heads_max(&e->m->config) * sizeof(float);
    size_t all = per_key * (size_t)e->ctx * ((size_t)e->ctx + 1) / 2 + (size_t)64 * e->ctx;
    size_t bytes = e->opt.attention_budget < all ? e->opt.attention_budget : all;
    e->ring = attention_ring_new(bytes, e->ctx);
}

static void drop_lens(engine *e, int pos)
{
    if (!e->lens || !e->lens[pos])
        return;
    free(e->lens[pos]);
    e->lens[pos] = NULL;
    e->records[pos].lens = NULL;
}

/* Forgets what positions pos.. hold beside their records: attention rows, lenses, and
 * a what-if or an attribution of one of them. */
static void drop_attention_from(engine *e, int pos)
{
    if (e->parts_pos >= pos) {
        e->parts_pos = -1;
        e->attrib_ok = false;
    }
    if (e->whatif.pos >= pos)
        e->whatif_of = NULL;
    if (e->cap && e->cap->pos >= pos) {
        capture_free(e->cap);
        e->cap = NULL;
    }
    if (e->routes)
        expert_routes_forget_from(e->routes, pos);
    for (int p = pos; p < e->ctx; p++) {
        free_attention_row(e, p);
        drop_lens(e, p);
    }
}

void engine_free(engine *e)
{
    if (!e)
        return;
    if (e->attn && e->records)
        drop_attention_from(e, 0);
    free(e->attn);
    capture_free(e->cap);
    expert_routes_free(e->routes);
    free(e->sums);
    attention_ring_free(e->ring);
    free(e->lens);
    free(e->lens_logits);
    free(e->whatif_logits);
    free(e->parts);
    free(e->attrib_head);
    free(e->attrib_expert_id);
    free(e->batch_logits);
    free(e->guess_logits);
    free(e->kept_logits);
    free(e->pending);
    free(e->probs);
    free(e->records);
    free(e->tokens);
    sampler_free(e->smp);
    steering_free(e->steer);
    transformer_free(e->tf);
    free(e);
}

void engine_set_observer(engine *e, engine_observer fn, void *user)
{
    e->observer = fn;
    e->observer_user = user;
}

const float *engine_logits_of(const engine *e, int pos, float *out)
{
    if (pos < 0 || pos >= e->n || !transformer_logits(e->tf, pos, 1, out))
        return NULL;
    return out;
}

void engine_set_kernels(engine *e, transformer_kernels kernels)
{
    e->kernels = kernels;
}

void engine_set_progress(engine *e, engine_progress fn, void *user)
{
    e->progress = fn;
    e->progress_user = user;
}

void engine_set_sampler(engine *e, const sampler_config *c)
{
    sampler_configure(e->smp, c);
}

const sampler_config *engine_sampler_config(const engine *e) { return sampler_get_config(e->smp); }
void engine_set_capture(engine *e, bool on)
{
    e->opt.capture_attention = on;
    if (on)
        make_ring(e);
}
const model *engine_model(const engine *e) { return e->m; }
steering *engine_steering(engine *e) { return e->steer; }
const intervention *engine_intervention(const engine *e) { return steering_state(e->steer); }

const tokenizer *engine_tokenizer(const engine *e) { return e->tok; }
const expert_routes *engine_routes(const engine *e) { return e->routes; }
int engine_ctx(const engine *e) { return e->ctx; }
transformer_kv engine_kv_cache(const engine *e) { return transformer_kv_type(e->tf); }
size_t engine_kv_bytes(const engine *e) { return transformer_kv_bytes(e->tf); }
int engine_pos(const engine *e) { return e->n; }
int engine_rewind_cost(const engine *e, int pos) { return transformer_rerun_cost(e->tf, pos); }
const int *engine_tokens(const engine *e) { return e->tokens; }
const engine_stats *engine_get_stats(const engine *e) { return &e->stats; }

const float *engine_logits(const engine *e) { return e->logits; }
void engine_set_next_draw(engine *e, float draw) { sampler_set_next_draw(e->smp, draw); }

/* An attention row buffer for query pos, or NULL when capture is off, there is no
 * ring or the row is larger than it. Rows of the oldest positions are dropped to make
 * room. */
static float *attention_row(engine *e, int pos)
{
    if (!e->opt.capture_attention || !e->ring)
        return NULL;
    if (e->attn[pos])
        return e->attn[pos]; /* the same query again (same size) */
    e->attn[pos] = attention_ring_take(e->ring, pos, attention_row_bytes(e, pos),
                                       forget_attention_row, e);
    return e->attn[pos];
}

/* Softmax of one position's logits into e->probs (vectorised), once per logits. */
static const float *position_probs(engine *e, const float *logits)
{
    if (e->probs_of != logits) {
        memcpy(e->probs, logits, sizeof(float) * e->vocab);
        kernels_softmax(e->probs, e->vocab);
        e->probs_of = logits;
    }
    return e->probs;
}

/* The model's top_n candidates (by probability) for the logits of one position. */
static void fill_top(engine *e, step_record *r, const float *logits)
{
    int ids[STEP_TOP_MAX];
    int n = sampler_top_k(logits, e->vocab, e->opt.top_n, ids);
    r->n_top = n;
    if (n == 0)
        return;
    const float *p = position_probs(e, logits);
    /* H = -Σ p log p = log Z - Σ p·logit, and log Z = logit - log p of the top token */
    float mean_logit;
    kernels_rows_dot(&mean_logit, p, 0, 1, logits, e->vocab);
    r->entropy = logits[ids[0]] - logf(p[ids[0]]) - mean_logit;
    if (r->entropy < 0.0f)
        r->entropy = 0.0f; /* rounding on a distribution that is one token */
    for (int i = 0; i < n; i++) {
        r->top[i].id = ids[i];
        r->top[i].logit = logits[ids[i]];
        r->top[i].prob = p[ids[i]];
        r->top[i].p_final = 0.0f; /* the sampler fills these in when it decides */
        r->top[i].cut = SAMPLER_KEPT;
    }
}

/* Creates the record of position pos from the logits it produced. */
static void begin_record(engine *e, int pos, int token, step_phase phase, const float *logits,
                         bool with_top, double forward_ms)
{
    step_record *r = &e->records[pos];
    memset(r, 0, offsetof(step_record, top));
    r->pos = pos;
    r->token = token;
    r->phase = phase;
    r->next = -1;
    r->next_prob = NAN;
    r->next_rank = 0;
    r->forward_ms = forward_ms;
    r->batch = transformer_ran_batch(e->tf, pos);
    r->attn = e->attn[pos];
    r->lens = NULL;
    r->tensors = NULL;
    r->n_tensors = 0;
    r->intervention = steering_state(e->steer);
    r->entropy = NAN;
    if (with_top)
        fill_top(e, r, logits);
    else
        r->n_top = 0;
}

/* The probability and rank the logits of r's position gave r->next. */
static void rate_next(engine *e, step_record *r, const float *logits)
{
    const float *p = position_probs(e, logits);
    r->next_prob = p[r->next];
    r->next_rank = sampler_rank(logits, e->vocab, r->next);
}

/* The summaries of position pos's steps (record_tensors) into e->sums, set as its
 * record's while the observer sees it. On failure the record has none. */
static void attach_summaries(engine *e, step_record *r)
{
    const tensor_capture *cap =
        engine_tensors(e, r->pos, e->opt.tensor_first, e->opt.tensor_last, NULL);
    if (!cap)
        return;
    if (cap->n_steps > e->n_sums) {
        step_tensor *grown = realloc(e->sums, sizeof *grown * (size_t)cap->n_steps);
        if (!grown)
            return;
        e->sums = grown;
        e->n_sums = cap->n_steps;
    }
    for (int i = 0; i < cap->n_steps; i++)
        capture_summarize_step(&cap->steps[i], &e->sums[i]);
    r->tensors = e->sums;
    r->n_tensors = cap->n_steps;
}

/* Hands position pos's record to the observer (with its steps summarized when asked
 * for: they are valid during the call only). */
static void observe(engine *e, int pos)
{
    step_record *r = &e->records[pos];
    if (!e->observer)
        return;
    if (e->opt.record_tensors)
        attach_summaries(e, r);
    e->observer(e->observer_user, r);
    r->tensors = NULL;
    r->n_tensors = 0;
}

/* Drops position pos's lens and the kept capture (engine_tensors). */
static void forget_what_ifs(engine *e, int pos)
{
    drop_lens(e, pos);
    capture_free(e->cap);
    e->cap = NULL;
}

/* Hands position pos's record to the observer with its lens (record_lens) and steps
 * as the position ran: when the interventions changed since (a reply's last position
 * is finished by the next message, or at the end), they are computed with those it
 * ran with, and no what-if keeps them as the ones in force now. */
static void observe_as_ran(engine *e, int pos)
{
    step_record *r = &e->records[pos];
    bool as_ran = (e->opt.record_lens || (e->observer && e->opt.record_tensors)) &&
                  r->intervention != steering_state(e->steer) &&
                  steering_as_ran(e->steer, r->intervention);
    if (as_ran) { /* a lens or capture made with the ones in force is not this position's */
        forget_what_ifs(e, pos);
        e->applying = true;
        e->applied = r->intervention;
    }
    if (e->opt.record_lens)
        engine_lens(e, pos, NULL); /* on failure the record simply has no lens */
    observe(e, pos);
    if (as_ran) { /* nor are these the ones in force now */
        e->applying = false;
        steering_as_now(e->steer);
        forget_what_ifs(e, pos);
    }
}

/* Finishes the record of position pos with its successor; logits are pos's (or NULL
 * when they were not computed, then next_prob stays NaN). */
static void finish_record(engine *e, int pos, int next, const float *logits,
                          const sampler_record *decision, double sample_ms)
{
    step_record *r = &e->records[pos];
    r->next = next;
    if (decision) {
        r->sampled = true;
        r->sampler = *decision;
        r->next_prob = decision->chosen_model_prob;
        r->next_rank = decision->chosen_rank;
    }
    if ((!decision || decision->chosen != next) && logits)
        rate_next(e, r, logits);
    r->sample_ms = sample_ms;
    drop_lens(e, pos); /* computed without next: its next_rank is unknown */
    observe_as_ran(e, pos);
}

/* Fails when n positions' logits (n, vocab), the first at position pos, are not all
 * finite: a corrupt model (NaN weights in F32 tensors, which load does not scan). */
static llm_status check_logits(const engine *e, const float *logits, int n, int pos,
                               llm_err *err)
{
    ptrdiff_t bad = finite_first_bad(logits, (size_t)n * e->vocab);
    if (bad < 0)
        return LLM_OK;
    return llm_fail(err, LLM_ERR_NUMERIC,
                    "position %d: the model computed NaN or infinite logits: its weights "
                    "are probably corrupt", pos + (int)(bad / e->vocab));
}

/* Computes the candidates and the next token's probability of prompt position pos,
 * pending since prefill, from the logits the transformer computes again for it.
 * Positions whose logits are not finite, or cannot be had (out of memory for the
 * kernels' scratch), keep no candidates. */
static void fill_pending(engine *e, int pos)
{
    e->pending[pos] = false;
    float *logits = e->batch_logits;
    bool ok = transformer_logits(e->tf, pos, 1, logits);
    e->probs_of = NULL; /* the buffer was rewritten */
    if (!ok || finite_first_bad(logits, (size_t)e->vocab) >= 0)
        return;
    step_record *r = &e->records[pos];
    fill_top(e, r, logits);
    if (r->next >= 0)
        rate_next(e, r, logits);
}

const intervention *engine_ran_with(const engine *e, int pos)
{
    return pos >= 0 && pos < e->n ? e->records[pos].intervention : steering_state(e->steer);
}

step_phase engine_phase(const engine *e, int pos)
{
    return pos >= 0 && pos < e->n ? e->records[pos].phase : STEP_PROMPT;
}

/* Logically const: a pending record is completed to what prefill would have made it
 * (engine.h), so callers holding a const engine see the same record either way. */
const step_record *engine_record(const engine *e, int pos)
{
    if (pos < 0 || pos >= e->n)
        return NULL;
    if (e->pending[pos])
        fill_pending((engine *)e, pos);
    return &e->records[pos];
}

/* Computes the candidates of prompt positions pos..pos+n-1 (the logits of a block of
 * them per pass over the classifier) and finishes each with its successor. Fails,
 * changing nothing more, at the first block with non-finite logits. */
static llm_status record_prompt_block(engine *e, int pos, int n, llm_err *err)
{
    for (int done = 0; done < n; done += PROMPT_LOGITS_BLOCK) {
        int c = n - done < PROMPT_LOGITS_BLOCK ? n - done : PROMPT_LOGITS_BLOCK;
        bool ok = transformer_logits(e->tf, pos + done, c, e->batch_logits);
        e->probs_of = NULL; /* the buffer was rewritten */
        llm_status st = ok ? check_logits(e, e->batch_logits, c, pos + done, err)
                           : transformer_error(e->tf, err);
        if (st != LLM_OK)
            return st;
        for (int i = 0; i < c; i++) {
            int p = pos + done + i;
            const float *li = e->batch_logits + (size_t)i * e->vocab;
            e->pending[p] = false;
            fill_top(e, &e->records[p], li);
            finish_record(e, p, e->tokens[p + 1], li, NULL, 0.0);
        }
    }
    return LLM_OK;
}

/* The kernels of an engine call of n positions: what engine_set_kernels says, AUTO
 * decided once for the whole call (its chunks and batches all on the same kernels). */
static transformer_kernels call_kernels(const engine *e, int n)
{
    if (e->kernels != TRANSFORMER_KERNELS_AUTO)
        return e->kernels;
    return n >= TRANSFORMER_BATCH_MIN ? TRANSFORMER_KERNELS_BATCH : TRANSFORMER_KERNELS_TOKEN;
}

/* transformer_run of n tokens at pos for the sequence (every position's logits into
 * logits when not NULL): the experts' routes of those positions are recorded (without
 * memory for them they are not, and the run goes on). */
static const float *run_recorded(engine *e, const int *tokens, int n, int pos,
                                 transformer_kernels kernels, float *logits, float *const *attn)
{
    bool routes = e->routes && expert_routes_begin(e->routes, pos, n, NULL) == LLM_OK;
    const float *out = transformer_run(e->tf, tokens, n, pos, kernels, logits, attn);
    if (routes)
        expert_routes_end(e->routes);
    return out;
}

/* Runs n tokens at pos.. on `kernels` as transformer_run does, the last position's
 * logits in *last. When the call under way (progress_total tokens) is longer than one of
 * the transformer's chunks and a progress callback listens, as one call per chunk, the
 * callback told before each (the same chunks on the same kernels: the same bits).
 * LLM_ERR_STOPPED when the callback asked to stop, or the transformer's failure
 * (transformer_error: out of memory for the kernels' scratch), with err. */
static llm_status run_batch(engine *e, const int *tokens, int n, int pos,
                            transformer_kernels kernels, float *const *attn,
                            const float **last, llm_err *err)
{
    int chunk = transformer_batch_chunk(e->tf);
    bool chunked = e->progress && e->progress_total > chunk;
    for (int done = 0; done < n; done += chunked ? chunk : n) {
        int ran = e->progress_done + done;
        if (chunked && !e->progress(e->progress_user, ran, e->progress_total))
            return llm_fail(err, LLM_ERR_STOPPED, "stopped after %d of %d tokens", ran,
                            e->progress_total);
        int k = !chunked || n - done < chunk ? n - done : chunk;
        *last = run_recorded(e, tokens + done, k, pos + done, kernels, NULL,
                             attn ? attn + done : NULL);
        if (!*last)
            return transformer_error(e->tf, err);
    }
    return LLM_OK;
}

/* Appends n checked tokens and runs them as one batch (run_batch). */
static llm_status prefill_batch(engine *e, const int *tokens, int n, llm_err *err)
{
    if (e->n > 0 && e->records[e->n - 1].next != tokens[0])
        finish_record(e, e->n - 1, tokens[0], e->logits, NULL, 0.0);
    e->chosen = false;

    double t0 = clock_ms();
    int pos0 = e->n;
    bool any_attn = false;
    for (int i = 0; i < n; i++) {
        e->tokens[pos0 + i] = tokens[i];
        any_attn |= attention_row(e, pos0 + i) != NULL;
    }
    /* e->attn holds NULL for rows dropped to stay within the budget */
    const float *last = NULL;
    llm_status st = run_batch(e, tokens, n, pos0, call_kernels(e, e->progress_total),
                              any_attn ? e->attn + pos0 : NULL, &last, err);
    double per = (clock_ms() - t0) / n;
    e->probs_of = NULL; /* the buffers were rewritten */
    if (st == LLM_OK)
        st = check_logits(e, last, 1, pos0 + n - 1, err);
    for (int i = 0; i < n && st == LLM_OK; i++) {
        begin_record(e, pos0 + i, tokens[i], STEP_PROMPT, NULL, false, per);
        e->pending[pos0 + i] = i < n - 1;
    }
    e->n = pos0 + n;
    if (st == LLM_OK && e->opt.record_prompt)
        st = record_prompt_block(e, pos0, n - 1, err);
    if (st != LLM_OK) {
        for (int i = 0; i < n; i++)
            e->pending[pos0 + i] = false;
        drop_attention_from(e, pos0);
        e->n = pos0;
        e->logits = NULL;
        return st;
    }
    if (!e->opt.record_prompt)
        for (int i = 0; i < n - 1; i++)
            finish_record(e, pos0 + i, tokens[i + 1], NULL, NULL, 0.0);
    fill_top(e, &e->records[pos0 + n - 1], last);
    e->logits = last;
    return LLM_OK;
}

/* Prompt tokens from `from` whose attention rows take at most half the ring: the
 * batches an observer gets every row of (a batch's rows must all be in the ring when
 * its records are finished). At least one. */
static int rows_that_fit(const engine *e, int from, int n)
{
    size_t half = attention_ring_size(e->ring) / 2, sum = 0;
    int k = 0;
    while (k < n && (k == 0 || sum + attention_row_bytes(e, from + k) <= half))
        sum += attention_row_bytes(e, from + k++);
    return k;
}

llm_status engine_prefill(engine *e, const int *tokens, int n, llm_err *err)
{
    if (n <= 0)
        return LLM_OK;
    if (e->n + n > e->ctx)
        return llm_fail(err, LLM_ERR_CONTEXT,
                        "%d tokens do not fit: %d of the context's %d positions are in use",
                        n, e->n, e->ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= e->vocab)
            return llm_fail(err, LLM_ERR_ARG, "token id %d is outside the vocabulary (0..%d)",
                            tokens[i], e->vocab - 1);
    /* One batch, unless an observer (a trace) wants attention rows that would not all
     * stay in the ring until the batch's records are finished. */
    bool split = e->observer && e->opt.capture_attention && e->ring;
    double t0 = clock_ms();
    int pos0 = e->n;
    e->progress_total = n;
    for (int i = 0; i < n;) {
        int k = split ? rows_that_fit(e, pos0 + i, n - i) : n;
        e->progress_done = i;
        llm_status st = prefill_batch(e, tokens + i, k, err);
        if (st != LLM_OK) {
            drop_attention_from(e, pos0);
            for (int p = pos0; p < e->n; p++)
                e->pending[p] = false;
            e->n = pos0;
            e->logits = NULL;
            return st;
        }
        i += k;
    }
    e->stats.prefill_tokens = n;
    e->stats.prefill_ms = clock_ms() - t0;
    return LLM_OK;
}

/* Appends token at position e->n and runs it. On non-finite logits, or out of memory for
 * the kernels' scratch, nothing is appended, and there are no logits to step from until
 * a rewind. */
static llm_status run_token(engine *e, int token, step_phase phase, llm_err *err)
{
    int pos = e->n;
    e->tokens[pos] = token;
    float *attn = attention_row(e, pos);
    double t0 = clock_ms();
    const float *logits = run_recorded(e, &token, 1, pos, e->kernels, NULL, attn ? &attn : NULL);
    double ms = clock_ms() - t0;
    e->probs_of = NULL; /* the buffers were rewritten */
    llm_status st = logits ? check_logits(e, logits, 1, pos, err) : transformer_error(e->tf, err);
    if (st != LLM_OK) {
        free_attention_row(e, pos);
        e->logits = NULL;
        return st;
    }
    e->logits = logits;
    e->chosen = false;
    begin_record(e, pos, token, phase, logits, true, ms);
    e->n = pos + 1;
    e->stats.decode_tokens++;
    e->stats.decode_ms += ms;
    return LLM_OK;
}

/* The sampler decides the token after position pos (its logits, the history the
 * sequence up to pos): the candidates' fates and pos's record finished with it. */
static int decide(engine *e, int pos, const float *logits)
{
    int hist = sampler_get_config(e->smp)->repeat_last_n;
    if (hist > pos + 1)
        hist = pos + 1;
    sampler_record rec;
    double t0 = clock_ms();
    int next = sampler_choose(e->smp, logits, e->tokens + pos + 1 - hist, hist, &rec);
    double ms = clock_ms() - t0;
    e->stats.decode_ms += ms;
    step_record *r = &e->records[pos];
    for (int i = 0; i < r->n_top; i++)
        sampler_fate(e->smp, r->top[i].id, &r->top[i].cut, &r->top[i].p_final);
    finish_record(e, pos, next, NULL, &rec, ms);
    return next;
}

/* The next token: the one chosen and not run, else the sampler's decision now. */
static int next_token(engine *e)
{
    if (e->chosen)
        return e->records[e->n - 1].next;
    e->chosen = true;
    return decide(e, e->n - 1, e->logits);
}

/* engine_step without its timing. */
static llm_status plain_step(engine *e, int *token, llm_err *err)
{
    if (e->n == 0 || !e->logits)
        return llm_fail(err, LLM_ERR_ARG, "nothing to continue: prefill a prompt first");
    int next = next_token(e);
    *token = next;
    if (e->n >= e->ctx)
        return llm_fail(err, LLM_ERR_CONTEXT, "the context is full (%d positions)", e->ctx);
    return run_token(e, next, STEP_GEN, err);
}

/* A step that made one token without guesses took ms: what a token costs plainly. */
static void count_single(engine *e, double ms)
{
    e->stats.single_tokens++;
    e->stats.single_ms += ms;
}

llm_status engine_step(engine *e, int *token, llm_err *err)
{
    double t0 = clock_ms();
    llm_status st = plain_step(e, token, err);
    if (st == LLM_OK)
        count_single(e, clock_ms() - t0);
    return st;
}

/* Runs x and the guesses after it (n tokens from position e->n) as one call on the token
 * kernels (those set with engine_set_kernels, if not AUTO), every position's logits into
 * guess_logits. The sequence then holds them all, each with its record begun. */
static llm_status run_guesses(engine *e, const int *tokens, int n, llm_err *err)
{
    int pos = e->n;
    float *rows[ENGINE_GUESS_MAX + 1];
    bool any_attn = false;
    for (int i = 0; i < n; i++) {
        e->tokens[pos + i] = tokens[i];
        rows[i] = attention_row(e, pos + i);
        any_attn |= rows[i] != NULL;
    }
    transformer_kernels k =
        e->kernels == TRANSFORMER_KERNELS_AUTO ? TRANSFORMER_KERNELS_TOKEN : e->kernels;
    double t0 = clock_ms();
    const float *last = run_recorded(e, tokens, n, pos, k, e->guess_logits, any_attn ? rows : NULL);
    double ms = clock_ms() - t0;
    e->probs_of = NULL; /* the buffers were rewritten */
    llm_status st = last ? check_logits(e, e->guess_logits, n, pos, err)
                         : transformer_error(e->tf, err);
    if (st != LLM_OK) {
        drop_attention_from(e, pos);
        e->logits = NULL;
        return st;
    }
    e->chosen = false;
    for (int i = 0; i < n; i++)
        begin_record(e, pos + i, tokens[i], STEP_GEN, e->guess_logits + (size_t)i * e->vocab,
                     true, ms / n);
    e->n = pos + n;
    e->stats.decode_ms += ms;
    return LLM_OK;
}

/* engine_step_guessed without its timing; *ran: whether guesses ran. */
static llm_status step_guessed(engine *e, engine_guesser guesser, void *user, int max_guess,
                               int *tokens, int *n_appended, bool *ran, llm_err *err)
{
    *n_appended = 0;
    *ran = false;
    if (max_guess > ENGINE_GUESS_MAX)
        max_guess = ENGINE_GUESS_MAX;
    if (guesser && max_guess > 0 && e->opt.guess_min >= 0)
        max_guess = guess_length_choose(&e->guess_len, e->opt.guess_min, max_guess);
    if (!guesser || max_guess <= 0) {
        if (guesser)
            e->guess_asked = 0;
        llm_status st = plain_step(e, &tokens[0], err);
        *n_appended = st == LLM_OK;
        return st;
    }
    if (e->n == 0 || !e->logits)
        return llm_fail(err, LLM_ERR_ARG, "nothing to continue: prefill a prompt first");
    int x = next_token(e);
    if (e->n >= e->ctx)
        return llm_fail(err, LLM_ERR_CONTEXT, "the context is full (%d positions)", e->ctx);
    int room = e->ctx - e->n - 1;
    if (max_guess > room)
        max_guess = room;
    e->guess_asked = max_guess;
    int run[ENGINE_GUESS_MAX + 1];
    run[0] = x;
    e->tokens[e->n] = x; /* the guesser reads the sequence with x */
    int g = max_guess > 0 ? guesser(user, e->tokens, e->n + 1, run + 1, max_guess) : 0;
    if (g > max_guess)
        g = max_guess;
    for (int i = 1; i <= g; i++)
        if (run[i] < 0 || run[i] >= e->vocab)
            g = i - 1; /* a guess outside the vocabulary ends the guesses */
    if (g <= 0) {
        llm_status st = run_token(e, x, STEP_GEN, err);
        if (st == LLM_OK)
            tokens[(*n_appended)++] = x;
        return st;
    }
    if (!e->guess_logits &&
        !(e->guess_logits = malloc(sizeof(float) * (size_t)(ENGINE_GUESS_MAX + 1) * e->vocab)))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the guesses' logits");
    int pos = e->n;
    llm_status st = run_guesses(e, run, g + 1, err);
    if (st != LLM_OK)
        return st;
    *ran = true;
    e->stats.guess_rounds++;
    memcpy(e->last_guess, run + 1, sizeof(int) * (size_t)g);
    e->last_guess_n = g;
    e->last_guess_pos = pos;
    e->last_guess_accepted = 0;
    tokens[(*n_appended)++] = x;
    e->stats.decode_tokens++;
    for (int i = 1; i <= g; i++) {
        const float *logits = e->guess_logits + (size_t)(i - 1) * e->vocab;
        step_record *r = &e->records[pos + i - 1];
        r->guessed = true;
        r->guess = run[i];
        e->stats.guessed++;
        /* the history the sampler reads ends at pos + i - 1, as engine_step's would */
        int next = decide(e, pos + i - 1, logits);
        if (next != run[i]) {
            /* forget the guesses from here on; next is chosen, to be run first */
            drop_attention_from(e, pos + i);
            e->n = pos + i;
            e->chosen = true;
            e->logits = logits;
            e->stats.guessed += g - i;
            return LLM_OK;
        }
        tokens[(*n_appended)++] = next;
        e->last_guess_accepted++;
        e->stats.accepted++;
        e->stats.decode_tokens++;
    }
    e->logits = e->guess_logits + (size_t)g * e->vocab;
    return LLM_OK;
}

llm_status engine_step_guessed(engine *e, engine_guesser guesser, void *user, int max_guess,
                               int *tokens, int *n_appended, llm_err *err)
{
    double t0 = clock_ms();
    bool ran;
    llm_status st = step_guessed(e, guesser, user, max_guess, tokens, n_appended, &ran, err);
    double ms = clock_ms() - t0;
    if (guesser && max_guess > 0) {
        e->stats.spec_ms += ms;
        e->stats.spec_tokens += *n_appended;
        e->stats.spec_calls += *n_appended > 0;
        if (st == LLM_OK && *n_appended > 0) { /* what the next choice goes by */
            guess_length_note_step(&e->guess_len, ran ? e->last_guess_n + 1 : 1, ms);
            if (ran)
                guess_length_note_check(&e->guess_len, e->last_guess_n,
                                        e->last_guess_accepted);
        }
    }
    if (st == LLM_OK && !ran)
        count_single(e, ms);
    return st;
}

int engine_guess_length(const engine *e, double *acceptance)
{
    if (acceptance)
        *acceptance = guess_length_acceptance(&e->guess_len);
    return e->guess_asked;
}

int engine_last_guesses(const engine *e, int *pos, int *guess, int max, int *accepted)
{
    int n = e->last_guess_n < max ? e->last_guess_n : max;
    if (n > 0)
        memcpy(guess, e->last_guess, sizeof(int) * (size_t)n);
    *pos = n > 0 ? e->last_guess_pos : -1;
    *accepted = n > 0 ? e->last_guess_accepted : 0;
    return n;
}

llm_status engine_force(engine *e, int token, llm_err *err)
{
    if (token < 0 || token >= e->vocab)
        return llm_fail(err, LLM_ERR_ARG, "token id %d is outside the vocabulary (0..%d)",
                        token, e->vocab - 1);
    if (e->n >= e->ctx)
        return llm_fail(err, LLM_ERR_CONTEXT, "the context is full (%d positions)", e->ctx);
    if (e->n > 0)
        finish_record(e, e->n - 1, token, e->logits, NULL, 0.0);
    return run_token(e, token, STEP_FORCED, err);
}

llm_status engine_replace_sampled(engine *e, int token, llm_err *err)
{
    if (token < 0 || token >= e->vocab)
        return llm_fail(err, LLM_ERR_ARG, "token id %d is outside the vocabulary (0..%d)",
                        token, e->vocab - 1);
    int pos = e->n - 1;
    if (pos < 1 || !e->records[pos - 1].sampled || e->records[pos - 1].next != e->tokens[pos])
        return llm_fail(err, LLM_ERR_ARG, "the newest token was not sampled: nothing to replace");
    step_record *r = &e->records[pos - 1];
    sampler_record decision = r->sampler;
    double ms = r->sample_ms;
    step_candidate top[STEP_TOP_MAX]; /* the fates the sampler gave the candidates */
    int n_top = r->n_top;
    memcpy(top, r->top, sizeof top[0] * (size_t)n_top);
    llm_status st = engine_rewind(e, pos, err);
    if (st != LLM_OK)
        return st;
    if (r->n_top == n_top) /* the same logits (no steering change): the same candidates */
        memcpy(r->top, top, sizeof top[0] * (size_t)n_top);
    finish_record(e, pos - 1, token, e->logits, &decision, ms);
    return run_token(e, token, STEP_FORCED, err);
}

void engine_finish(engine *e)
{
    if (e->n > 0 && e->records[e->n - 1].next < 0 && e->observer)
        observe_as_ran(e, e->n - 1);
}

/* A hybrid's recurrent state after position pos - 1 (pos <= e->n's before a rewind),
 * made again from its checkpoint now, each position run again with the interventions
 * it first ran with (its record's), not those in force, which apply from the next
 * position run on. A state whose vectors are no longer loaded is run with those in
 * force (its numbers are gone). Nothing for a model without recurrent layers or when
 * the state is at hand. */
static llm_status seek_as_ran(engine *e, int pos, llm_err *err)
{
    int cost = transformer_rerun_cost(e->tf, pos);
    if (cost == 0)
        return LLM_OK;
    /* now, even when those positions ran with the interventions in force: they may
     * change before the next run (a rewind, /knock, then a step) */
    const intervention *now = steering_state(e->steer);
    bool ok = true;
    for (int p = pos - cost, end; p < pos && ok; p = end) {
        const intervention *in = e->records[p].intervention;
        for (end = p + 1; end < pos && e->records[end].intervention == in;)
            end++;
        if (in == now || !steering_as_ran(e->steer, in))
            steering_as_now(e->steer);
        ok = transformer_seek(e->tf, end);
    }
    if (!e->applying || !steering_as_ran(e->steer, e->applied)) /* as it was applied */
        steering_as_now(e->steer);
    return ok ? LLM_OK : transformer_error(e->tf, err);
}

/* Before a pass runs position pos again (transformer_*_again: its attention rows, lens,
 * what-if, attribution, steps): on a hybrid, when a position the pass would run again
 * before pos (from its checkpoint) ran with other interventions than those applied
 * now, the live recurrent state is made at pos with each as it ran (seek_as_ran), so
 * that the pass starts from the state pos ran from. *moved says so; again_end then puts
 * the live state back at the sequence's end the same way. */
static llm_status again_begin(engine *e, int pos, bool *moved, llm_err *err)
{
    const intervention *applied = e->applying ? e->applied : steering_state(e->steer);
    int cost = transformer_rerun_cost(e->tf, pos);
    *moved = false;
    for (int p = pos - cost; p < pos && !*moved; p++)
        *moved = e->records[p].intervention != applied;
    return *moved ? seek_as_ran(e, pos, err) : LLM_OK;
}

static void again_end(engine *e, bool moved)
{
    llm_err ignored; /* on failure (no memory) the next step's seek runs it again */
    if (moved)
        seek_as_ran(e, e->n, &ignored);
}

/* engine_rewind, with pos-1 kept as it ran (keep_last) or run again when the
 * interventions changed since. */
static llm_status rewind_to(engine *e, int pos, bool keep_last, llm_err *err)
{
    if (pos < 0 || pos > e->n)
        return llm_fail(err, LLM_ERR_ARG, "cannot rewind to position %d: the sequence has %d",
                        pos, e->n);
    if (pos == e->n && !e->chosen)
        return LLM_OK;
    e->chosen = false; /* a choice not run is forgotten with the rest */
    if (pos <= e->last_guess_pos + e->last_guess_accepted)
        e->last_guess_n = 0; /* what it guessed for is gone */
    drop_attention_from(e, pos);
    for (int p = pos; p < e->n; p++)
        e->pending[p] = false;
    e->n = pos;
    e->logits = NULL;
    e->whatif_of = NULL;
    if (pos == 0) { /* a new text: its guesses' acceptance is yet to be seen */
        guess_length_new_text(&e->guess_len);
        return LLM_OK;
    }
    step_record *r = &e->records[pos - 1];
    drop_lens(e, pos - 1); /* its next is about to be forgotten */
    bool same = keep_last || r->intervention == steering_state(e->steer);
    llm_status sought = seek_as_ran(e, same ? pos : pos - 1, err);
    if (sought != LLM_OK)
        return sought;
    if (same) {
        /* its logits as they were: the KV cache is left as it is */
        if (!transformer_logits(e->tf, pos - 1, 1, e->kept_logits))
            return transformer_error(e->tf, err);
        e->logits = e->kept_logits;
    } else {
        /* the vectors or knock-outs changed since: pos-1 runs again with the new ones,
         * so that the next token is chosen with them */
        const float *logits = run_recorded(e, &e->tokens[pos - 1], 1, pos - 1, e->kernels, NULL,
                                           e->attn[pos - 1] ? &e->attn[pos - 1] : NULL);
        if (!logits)
            return transformer_error(e->tf, err);
        e->logits = logits;
        r->intervention = steering_state(e->steer);
        r->batch = transformer_ran_batch(e->tf, pos - 1);
        r->n_top = 0;
    }
    e->probs_of = NULL;
    if (r->n_top == 0)
        fill_top(e, r, e->logits);
    e->pending[pos - 1] = false;
    r->next = -1;
    r->next_prob = NAN;
    r->next_rank = 0;
    r->sampled = false;
    r->guessed = false;
    return LLM_OK;
}

llm_status engine_rewind(engine *e, int pos, llm_err *err)
{
    return rewind_to(e, pos, false, err);
}

llm_status engine_rewind_as_ran(engine *e, int pos, llm_err *err)
{
    return rewind_to(e, pos, true, err);
}

/* Takes the record of position p back from a saved copy, with the engine's own
 * attention row; its lens is computed again when asked for. */
static void put_record(engine *e, int p, const step_record *saved)
{
    step_record *r = &e->records[p];
    drop_lens(e, p);
    *r = *saved;
    r->pos = p;
    r->token = e->tokens[p];
    r->attn = e->attn[p];
    r->lens = NULL;
    r->tensors = NULL;
    r->n_tensors = 0; /* the interventions it ran with are the saved record's */
    e->pending[p] = false;
}

/* Whether the editors can apply each of records[0..n]'s interventions again
 * (steering_as_ran: their vectors still loaded); the state in force applies after. */
static bool can_run_as_ran(engine *e, const step_record *records, int n)
{
    const intervention *now = steering_state(e->steer);
    bool ok = true;
    for (int i = 0; i <= n && ok; i++) {
        const intervention *in = records[i].intervention;
        if (in != now && (i == 0 || in != records[i - 1].intervention))
            ok = steering_as_ran(e->steer, in);
    }
    steering_as_now(e->steer);
    return ok;
}

llm_status engine_restore(engine *e, int pos, const int *tokens, int n,
                          const step_record *records, llm_err *err)
{
    if (pos < 1 || pos > e->n || n < 0)
        return llm_fail(err, LLM_ERR_ARG, "cannot restore from position %d: the sequence has %d",
                        pos, e->n);
    if (pos + n > e->ctx)
        return llm_fail(err, LLM_ERR_CONTEXT,
                        "%d tokens from position %d do not fit the context's %d positions", n,
                        pos, e->ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= e->vocab)
            return llm_fail(err, LLM_ERR_ARG, "token id %d is outside the vocabulary (0..%d)",
                            tokens[i], e->vocab - 1);
    /* each position runs with the interventions it first ran with (its record's), as
     * positions run again do; records whose vectors are no longer loaded (their numbers
     * are gone): the positions run with those in force and get records of their own, as
     * read positions, rather than logits and choices they no longer have */
    const intervention *now = steering_state(e->steer);
    if (records && n > 0 && !can_run_as_ran(e, records, n))
        records = NULL;
    for (int i = 0; records && n == 0 && i <= n; i++)
        if (records[i].intervention != now)
            records = NULL;
    if (!records || n == 0) {
        llm_status st = engine_rewind(e, pos, err);
        if (st == LLM_OK && n > 0)
            st = engine_prefill(e, tokens, n, err);
        if (st == LLM_OK && records)
            put_record(e, pos - 1, &records[0]);
        return st;
    }

    /* Forget pos.. without recomputing pos-1's logits: the batch brings new ones. */
    e->chosen = false;
    if (pos <= e->last_guess_pos + e->last_guess_accepted)
        e->last_guess_n = 0;
    drop_attention_from(e, pos);
    for (int p = pos; p < e->n; p++)
        e->pending[p] = false;
    /* pos-1 run again since with other interventions (a rewind after a change): its
     * cache as the branch's first token saw it, run again with the record's */
    int from = e->records[pos - 1].intervention != records[0].intervention ? pos - 1 : pos;
    e->n = from;
    e->logits = NULL;
    llm_status sought = seek_as_ran(e, from, err);
    if (sought != LLM_OK)
        return sought;
    bool any_attn = false;
    for (int i = 0; i < n; i++) {
        e->tokens[pos + i] = tokens[i];
        any_attn |= attention_row(e, pos + i) != NULL;
    }
    double t0 = clock_ms();
    e->progress_total = n;
    const float *last = NULL;
    llm_status st = LLM_OK;
    /* each position's kernels and interventions; i from -1 when pos-1 runs again */
    for (int i = from - pos, run; i < n && st == LLM_OK; i += run) {
        const step_record *r = &records[i + 1];
        run = 1;
        while (i + run < n && records[i + run + 1].batch == r->batch &&
               records[i + run + 1].intervention == r->intervention)
            run++;
        if (r->intervention == now || !steering_as_ran(e->steer, r->intervention))
            steering_as_now(e->steer);
        e->progress_done = i < 0 ? 0 : i;
        st = run_batch(e, e->tokens + pos + i, run, pos + i,
                       r->batch ? TRANSFORMER_KERNELS_BATCH : TRANSFORMER_KERNELS_TOKEN,
                       any_attn ? e->attn + pos + i : NULL, &last, err);
    }
    steering_as_now(e->steer);
    e->probs_of = NULL; /* the buffers were rewritten */
    if (st == LLM_OK)
        st = check_logits(e, last, 1, pos + n - 1, err);
    if (st != LLM_OK) {
        drop_attention_from(e, pos);
        return st;
    }
    e->n = pos + n;
    e->logits = last;
    for (int i = 0; i <= n; i++)
        put_record(e, pos - 1 + i, &records[i]);
    e->stats.prefill_tokens = n;
    e->stats.prefill_ms = clock_ms() - t0;
    for (int p = pos - 1; p < pos + n - 1; p++)
        observe_as_ran(e, p); /* its lens and steps with what it ran with */
    return LLM_OK;
}

/* One layer's lens from its logits (vocab): the top STEP_LENS_TOP and next's rank and
 * probability (when next >= 0). probs is (vocab) scratch. */
static void lens_layer_fill(step_lens_layer *out, const float *logits, float *probs, int vocab,
                            int next)
{
    memcpy(probs, logits, sizeof(float) * vocab);
    kernels_softmax(probs, vocab);
    int n = sampler_top_k(logits, vocab, STEP_LENS_TOP, out->id);
    for (int j = 0; j < STEP_LENS_TOP; j++) {
        if (j >= n)
            out->id[j] = -1;
        out->prob[j] = j < n ? probs[out->id[j]] : 0.0f;
    }
    out->next_rank = 0;
    out->next_prob = NAN;
    if (next >= 0 && next < vocab) {
        out->next_rank = sampler_rank(logits, vocab, next);
        out->next_prob = probs[next];
    }
}

const float *engine_attention(engine *e, int pos, llm_err *err)
{
    if (pos < 0 || pos >= e->n) {
        llm_fail(err, LLM_ERR_ARG, "no attention for position %d: the sequence has %d", pos, e->n);
        return NULL;
    }
    if (e->attn[pos])
        return e->attn[pos];
    if (!e->opt.capture_attention) {
        llm_fail(err, LLM_ERR_ARG, "attention capture is off");
        return NULL;
    }
    float *row = e->ring ? attention_ring_take(e->ring, pos, attention_row_bytes(e, pos),
                                               forget_attention_row, e)
                         : NULL;
    if (!row) {
        llm_fail(err, LLM_ERR_NOMEM, "the attention rows of position %d do not fit in %zu MiB",
                 pos, e->opt.attention_budget >> 20);
        return NULL;
    }
    e->attn[pos] = row;
    bool moved;
    llm_status st = again_begin(e, pos, &moved, err);
    if (st == LLM_OK)
        st = transformer_attention_again(e->tf, e->tokens[pos], pos, row, err);
    again_end(e, moved);
    if (st != LLM_OK) {
        free_attention_row(e, pos);
        return NULL;
    }
    e->records[pos].attn = row;
    return row;
}

const step_lens_layer *engine_lens(engine *e, int pos, llm_err *err)
{
    if (pos < 0 || pos >= e->n) {
        llm_fail(err, LLM_ERR_ARG, "no logit lens for position %d: the sequence has %d", pos,
                 e->n);
        return NULL;
    }
    if (e->lens && e->lens[pos])
        return e->lens[pos];
    int n_layers = e->m->config.n_layers;
    if (!e->lens)
        e->lens = calloc(e->ctx, sizeof *e->lens);
    if (e->lens && !e->lens_logits)
        e->lens_logits = malloc(sizeof(float) * (size_t)n_layers * e->vocab);
    step_lens_layer *layers = malloc(sizeof *layers * n_layers);
    float *probs = malloc(sizeof(float) * e->vocab);
    if (!e->lens || !e->lens_logits || !layers || !probs) {
        free(layers);
        free(probs);
        llm_fail(err, LLM_ERR_NOMEM, "out of memory for the logit lens");
        return NULL;
    }
    bool moved;
    llm_status st = again_begin(e, pos, &moved, err);
    if (st == LLM_OK)
        st = transformer_logit_lens(e->tf, e->tokens[pos], pos, e->lens_logits, err);
    again_end(e, moved);
    if (st != LLM_OK) {
        free(layers);
        free(probs);
        return NULL;
    }
    for (int l = 0; l < n_layers; l++)
        lens_layer_fill(&layers[l], e->lens_logits + (size_t)l * e->vocab, probs, e->vocab,
                        e->records[pos].next);
    free(probs);
    e->lens[pos] = layers;
    e->records[pos].lens = layers;
    return layers;
}

/* The probabilities of logits (vocab) into probs. */
static void softmax_of(const float *logits, float *probs, int vocab)
{
    memcpy(probs, logits, sizeof(float) * vocab);
    kernels_softmax(probs, vocab);
}

const step_whatif *engine_whatif(engine *e, int pos, llm_err *err)
{
    const unsigned char *mask = steering_mask(e->steer);
    const intervention *now = steering_state(e->steer);
    if (!mask) {
        llm_fail(err, LLM_ERR_ARG, "no head is knocked out");
        return NULL;
    }
    if (pos < 0 || pos >= e->n) {
        llm_fail(err, LLM_ERR_ARG, "no position %d: the sequence has %d", pos, e->n);
        return NULL;
    }
    if (e->whatif_of == now && e->whatif_n == e->n && e->whatif.pos == pos)
        return &e->whatif;
    if (!e->whatif_logits)
        e->whatif_logits = malloc(sizeof(float) * 4 * (size_t)e->vocab);
    if (!e->whatif_logits) {
        llm_fail(err, LLM_ERR_NOMEM, "out of memory for the what-if");
        return NULL;
    }
    float *before = e->whatif_logits, *after = before + e->vocab;
    float *pb = after + e->vocab, *pa = pb + e->vocab;
    bool moved;
    llm_status st = again_begin(e, pos, &moved, err);
    steering_heads_enabled(e->steer, false);
    if (st == LLM_OK)
        st = transformer_forward_again(e->tf, e->tokens[pos], pos, before, err);
    steering_heads_enabled(e->steer, true);
    if (st == LLM_OK)
        st = transformer_forward_again(e->tf, e->tokens[pos], pos, after, err);
    again_end(e, moved);
    if (st != LLM_OK)
        return NULL;
    softmax_of(before, pb, e->vocab);
    softmax_of(after, pa, e->vocab);
    step_whatif *w = &e->whatif;
    w->pos = pos;
    w->n_top = sampler_top_k(after, e->vocab, STEP_WHATIF_TOP, w->id);
    for (int i = 0; i < w->n_top; i++) {
        w->prob_before[i] = pb[w->id[i]];
        w->prob_after[i] = pa[w->id[i]];
    }
    int next = e->records[pos].next;
    if (next < 0)
        sampler_top_k(before, e->vocab, 1, &next);
    w->target = next;
    w->target_prob_before = pb[next];
    w->target_prob_after = pa[next];
    w->target_logit_before = before[next];
    w->target_logit_after = after[next];
    e->whatif_of = now;
    e->whatif_n = e->n;
    return w;
}

/* The components of pos's forward pass into e->parts, unless they are there already
 * (same position, same steering state). */
static llm_status components_of(engine *e, int pos, llm_err *err)
{
    const model_config *c = &e->m->config;
    const intervention *now = steering_state(e->steer);
    if (e->parts_pos == pos && e->parts_of == now)
        return LLM_OK;
    size_t dim = (size_t)c->dim, layers = (size_t)c->n_layers;
    size_t part = (size_t)transformer_parts_width(c), used = (size_t)c->n_experts_used;
    if (!e->parts) {
        e->parts = malloc(sizeof(float) * (layers * (part + dim) + (size_t)e->vocab));
        e->attrib_head = malloc(sizeof(float) * layers * (model_heads_max(c) + 2 + used));
        e->attrib_expert_id = malloc(sizeof(int) * (layers * used + 1));
        if (!e->parts || !e->attrib_head || !e->attrib_expert_id) {
            free(e->parts);
            free(e->attrib_head);
            free(e->attrib_expert_id);
            e->parts = e->attrib_head = NULL;
            e->attrib_expert_id = NULL;
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the attribution");
        }
        e->parts_resid = e->parts + layers * part;
        e->parts_logits = e->parts_resid + layers * dim;
        e->attrib_mlp = e->attrib_head + layers * (size_t)model_heads_max(c);
        e->attrib_expert = e->attrib_mlp + layers;
        e->attrib_layer_input = e->attrib_expert + layers * used;
    }
    e->parts_pos = -1;
    e->attrib_ok = false;
    bool moved;
    llm_status st = again_begin(e, pos, &moved, err);
    if (st == LLM_OK)
        st = transformer_components(e->tf, e->tokens[pos], pos, e->parts, e->parts_resid,
                                    e->parts_logits, err);
    again_end(e, moved);
    if (st != LLM_OK)
        return st;
    e->parts_pos = pos;
    e->parts_of = now;
    return LLM_OK;
}

const step_attribution *engine_attribution(engine *e, int pos, int token, llm_err *err)
{
    if (pos < 0 || pos >= e->n) {
        llm_fail(err, LLM_ERR_ARG, "no position %d: the sequence has %d", pos, e->n);
        return NULL;
    }
    if (token < 0 || token >= e->vocab) {
        llm_fail(err, LLM_ERR_ARG, "token %d is outside the vocabulary (0..%d)", token,
                 e->vocab - 1);
        return NULL;
    }
    const intervention *now = steering_state(e->steer);
    if (e->attrib_ok && e->parts_pos == pos && e->parts_of == now && e->attrib.target == token)
        return &e->attrib;
    if (components_of(e, pos, err) != LLM_OK)
        return NULL;
    const model_config *c = &e->m->config;
    attribution_input in = {.parts = e->parts,
                            .final = e->parts_resid + (size_t)(c->n_layers - 1) * c->dim,
                            .steer = steering_sum(e->steer),
                            .token = e->tokens[pos]};
    if (attribution_compute(e->m, &in, token, e->attrib_head, e->attrib_mlp, e->attrib_expert,
                            e->attrib_expert_id, e->attrib_layer_input, &e->attrib, err) !=
        LLM_OK)
        return NULL;
    e->attrib.pos = pos;
    e->attrib.logit = e->parts_logits[token];
    e->attrib_ok = true;
    return &e->attrib;
}

const tensor_capture *engine_tensors(engine *e, int pos, int layer_first, int layer_last,
                                     llm_err *err)
{
    if (pos < 0 || pos >= e->n) {
        llm_fail(err, LLM_ERR_ARG, "no position %d: the sequence has %d", pos, e->n);
        return NULL;
    }
    int last_layer = e->m->config.n_layers - 1;
    layer_first = layer_first < 0 ? 0 : layer_first;
    layer_last = layer_last > last_layer ? last_layer : layer_last;
    const intervention *now = steering_state(e->steer);
    tensor_capture *c = e->cap;
    if (c && c->pos == pos && c->layer_first == layer_first && c->layer_last == layer_last &&
        e->cap_of == now)
        return c;
    capture_free(e->cap);
    e->cap = NULL;
    if (capture_new(&e->m->config, pos, layer_first, layer_last, &c, err) != LLM_OK)
        return NULL;
    hook h = capture_hook(c);
    int id;
    bool moved = false;
    llm_status st = again_begin(e, pos, &moved, err);
    if (st == LLM_OK && (st = transformer_hook_add(e->tf, &h, &id, err)) == LLM_OK) {
        st = transformer_forward_again(e->tf, e->tokens[pos], pos, NULL, err);
        transformer_hook_remove(e->tf, id);
    }
    again_end(e, moved);
    if (st != LLM_OK) {
        capture_free(c);
        return NULL;
    }
    capture_finish(c);
    e->cap = c;
    e->cap_of = now;
    return c;
}
