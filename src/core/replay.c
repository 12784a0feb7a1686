/* replay.c — replaying a trace's sequence on an engine and comparing predictions
 * (replay.h).
 *
 * Owns its buffers for the duration of a run; borrows the engine and the records.
 * Each position runs on the kernels its record says it ran on, so that a replay on the
 * same build and kernel table reproduces every position bit for bit. */
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

double replay_kl(const step_candidate *top, int n_top, const float *probs, int vocab)
{
    const double floor_q = 1e-30;
    double kl = 0.0, p_in = 0.0, q_in = 0.0;
    for (int i = 0; i < n_top; i++) {
        double p = top[i].prob;
        int id = top[i].id;
        if (!(p > 0.0) || id < 0 || id >= vocab)
            continue;
        double q = probs[id];
        kl += p * log(p / (q > floor_q ? q : floor_q));
        p_in += p;
        q_in += q;
    }
    double p_rest = 1.0 - p_in, q_rest = 1.0 - q_in;
    if (p_rest > 1e-9)
        kl += p_rest * log(p_rest / (q_rest > floor_q ? q_rest : floor_q));
    return kl > 0.0 ? kl : 0.0; /* rounding can dip below the true minimum, 0 */
}

/* Runs the trace's token at p: prompt, forced, or decided again. */
static llm_status run_position(engine *e, const step_record *const *seq, int p,
                               replay_position *out, llm_err *err)
{
    const step_record *rec = seq[p];
    const step_record *prev = p > 0 ? seq[p - 1] : NULL;
    int token = rec->token;
    if (p == 0 || rec->phase == STEP_PROMPT)
        return engine_prefill(e, &token, 1, err);
    if (rec->phase == STEP_FORCED || !prev->sampled) {
        /* a record that lost its sampler; a hole filled from the one before (next -1)
         * is said as the missing record it is */
        out->unsampled = rec->phase == STEP_GEN && !prev->sampled && prev->next >= 0;
        return engine_force(e, token, err);
    }
    if (sampler_config_check(&prev->sampler.config, NULL) == LLM_OK)
        engine_set_sampler(e, &prev->sampler.config);
    if (!prev->sampler.greedy)
        engine_set_next_draw(e, prev->sampler.draw);
    int chosen;
    llm_status st = engine_step(e, &chosen, err);
    if (st != LLM_OK)
        return st;
    out->redecided = true;
    out->new_choice = chosen;
    if (chosen == token)
        return LLM_OK;
    if ((st = engine_rewind(e, p, err)) != LLM_OK)
        return st;
    return engine_force(e, token, err);
}

/* The sequence to run: seq's records, a missing one known from the record before it
 * (its token is that one's next) written into filled; without it, the replay ends
 * there (out->gap). Returns how many positions run. */
static int fill_holes(const step_record *const *seq, int n, step_record *filled,
                      const step_record **run, replay_summary *out)
{
    for (int p = 0; p < n; p++) {
        run[p] = seq[p];
        if (seq[p])
            continue;
        const step_record *prev = p > 0 ? run[p - 1] : NULL;
        if (!prev || prev->next < 0) {
            out->gap = p;
            return p;
        }
        filled[p].pos = p;
        filled[p].token = prev->next;
        filled[p].next = -1;
        filled[p].intervention = prev->intervention;
        filled[p].phase = prev->sampled ? STEP_GEN
                          : prev->phase == STEP_PROMPT ? STEP_PROMPT : STEP_FORCED;
        run[p] = &filled[p];
        out->filled++;
    }
    return n;
}

/* The new distribution at a position against the trace's candidates there. */
static void compare_position(const float *logits, const step_record *rec, float *probs,
                             int vocab, replay_position *r, replay_summary *out, double *kl_sum)
{
    memcpy(probs, logits, sizeof(float) * vocab);
    kernels_softmax(probs, vocab);
    r->compared = true;
    r->trace_top1 = rec->top[0].id;
    r->trace_top1_prob = rec->top[0].prob;
    sampler_top_k(logits, vocab, 1, &r->new_top1);
    r->new_top1_prob = probs[r->new_top1];
    r->kl = replay_kl(rec->top, rec->n_top, probs, vocab);
    out->compared++;
    if (r->new_top1 == r->trace_top1) {
        out->top1_same++;
    } else if (out->first_top1_diff < 0) {
        out->first_top1_diff = r->pos;
        out->first_top1_diff_token = r->token;
    }
    /* The trace's logits are written to 9 digits: a float exactly. A null there (NaN:
     * the writer's non-finite numbers) is the same as a non-finite logit now, and
     * differs from any finite one; once a difference is NaN, the largest stays NaN. */
    float worst = 0.0f;
    for (int i = 0; i < rec->n_top; i++) {
        int id = rec->top[i].id;
        float was = rec->top[i].logit, d = INFINITY;
        if (id >= 0 && id < vocab)
            d = isnan(was) && !isfinite(logits[id]) ? 0.0f : fabsf(logits[id] - was);
        if (!(d <= worst) && !isnan(worst))
            worst = d;
    }
    if (worst == 0.0f) {
        out->logits_same++;
    } else {
        if (out->first_logits_diff < 0)
            out->first_logits_diff = r->pos;
        if (!(worst <= out->logits_max_diff) && !isnan(out->logits_max_diff))
            out->logits_max_diff = worst;
    }
    *kl_sum += r->kl;
    if (out->kl_max_pos < 0 || r->kl > out->kl_max) {
        out->kl_max = r->kl;
        out->kl_max_pos = r->pos;
    }
}

/* Whether position p of seq counts as a prompt position (position 0 always does). */
static bool is_prompt(const step_record *const *seq, int p)
{
    return p == 0 || seq[p]->phase == STEP_PROMPT;
}

/* How many positions from p run as one prefill: prompt positions on the same kernels
 * with the same control vectors. */
static int prompt_run(const step_record *const *seq, const bool *batch, int p, int n)
{
    int k = 1;
    while (p + k < n && is_prompt(seq, p + k) && batch[p + k] == batch[p] &&
           seq[p + k]->intervention == seq[p]->intervention)
        k++;
    return k;
}

/* Runs the positions of seq (holes filled) in order, each on the kernels batch[] says:
 * a run of prompt positions as one prefill (each position's logits computed again
 * from what the engine kept, bit for bit), the others one at a time. */
static llm_status run_all(engine *e, const step_record *const *seq, const bool *batch, int n,
                          int *tokens, float *probs, float *logits_of, replay_observer fn,
                          void *user, replay_summary *out, llm_err *err)
{
    int vocab = engine_model(e)->config.vocab_size;
    double kl_sum = 0.0;
    llm_status st = LLM_OK;
    const intervention *applied = NULL;
    int ran_to = 0; /* positions before it have run */
    for (int p = 0; p < n && st == LLM_OK; p++) {
        if (seq[p]->intervention != applied) { /* the control vectors the trace ran p with */
            applied = seq[p]->intervention;
            if ((st = steering_set(engine_steering(e), applied, err)) != LLM_OK)
                break;
        }
        if (p > 0 && seq[p - 1]->next >= 0 && seq[p - 1]->next != seq[p]->token &&
            out->unlinked++ == 0) {
            out->first_unlinked = p;
            out->first_unlinked_token = seq[p]->token;
            out->first_unlinked_chosen = seq[p - 1]->next;
        }
        replay_position r;
        memset(&r, 0, sizeof r);
        r.pos = p;
        r.token = seq[p]->token;
        r.phase = seq[p]->phase;
        r.new_choice = -1;
        if (p >= ran_to) {
            engine_set_kernels(e, batch[p] ? TRANSFORMER_KERNELS_BATCH
                                           : TRANSFORMER_KERNELS_TOKEN);
            int k = is_prompt(seq, p) ? prompt_run(seq, batch, p, n) : 1;
            if (k > 1) {
                for (int i = 0; i < k; i++)
                    tokens[i] = seq[p + i]->token;
                st = engine_prefill(e, tokens, k, err);
            } else {
                st = run_position(e, seq, p, &r, err);
            }
            engine_set_kernels(e, TRANSFORMER_KERNELS_AUTO);
            if (st != LLM_OK)
                break;
            ran_to = p + k;
        }
        out->positions++;
        out->unsampled += r.unsampled;
        if (r.redecided) {
            out->sampled++;
            if (r.new_choice == r.token) {
                out->sampled_same++;
            } else if (out->first_choice_diff < 0) {
                out->first_choice_diff = p;
                out->first_choice_diff_token = r.token;
                out->first_choice_diff_chosen = r.new_choice;
            }
        }
        const float *logits = engine_logits(e);
        if (p < engine_pos(e) - 1)
            logits = engine_logits_of(e, p, logits_of);
        if (logits && seq[p]->n_top > 0)
            compare_position(logits, seq[p], probs, vocab, &r, out, &kl_sum);
        if (fn)
            fn(user, &r);
    }
    out->kl_mean = out->compared ? kl_sum / out->compared : 0.0;
    return st;
}

/* Which kernels each position of run[0..n) ran on: as the records say, or, for a trace
 * written before they said it, as the engine chose then (a run of
 * TRANSFORMER_BATCH_MIN prompt positions or more on the batch kernels). */
static void kernels_of(const step_record *const *run, int n, bool known, bool *batch)
{
    for (int p = 0; p < n;) {
        int k = 1;
        if (!known && is_prompt(run, p))
            while (p + k < n && is_prompt(run, p + k))
                k++;
        for (int i = 0; i < k; i++)
            batch[p + i] = known ? run[p + i]->batch : k >= TRANSFORMER_BATCH_MIN;
        p += k;
    }
}

/* Every control-vector state of run[0..n) against the model, before anything runs; the
 * first thing a vector has to say into out->steer_notice. */
static llm_status check_steering(engine *e, const step_record *const *run, int n,
                                 replay_summary *out, llm_err *err)
{
    const intervention *checked = NULL;
    for (int p = 0; p < n; p++) {
        if (!run[p]->intervention || run[p]->intervention == checked)
            continue;
        checked = run[p]->intervention;
        llm_err why;
        char said[sizeof out->steer_notice];
        if (steering_check(engine_steering(e), checked, said, sizeof said, &why) != LLM_OK)
            return llm_fail(err, LLM_ERR_MISMATCH, "from position %d on: %s", p, why.text);
        if (*said && !out->steer_notice[0])
            snprintf(out->steer_notice, sizeof out->steer_notice, "%s", said);
    }
    return LLM_OK;
}

llm_status replay_run(engine *e, const step_record *const *seq, int n, bool kernels_known,
                      replay_observer fn, void *user, replay_summary *out, llm_err *err)
{
    memset(out, 0, sizeof *out);
    out->first_top1_diff = out->first_choice_diff = out->kl_max_pos = out->gap = -1;
    out->first_logits_diff = -1;
    out->first_unlinked = out->first_unlinked_token = out->first_unlinked_chosen = -1;
    out->first_top1_diff_token = out->first_choice_diff_token = out->first_choice_diff_chosen = -1;
    int vocab = engine_model(e)->config.vocab_size;
    if (engine_pos(e) != 0)
        return llm_fail(err, LLM_ERR_ARG, "replay needs an empty engine");
    if (n > engine_ctx(e))
        return llm_fail(err, LLM_ERR_CONTEXT,
                        "the trace holds %d positions but the context %d (raise -c)", n,
                        engine_ctx(e));
    step_record *filled = calloc(n > 0 ? (size_t)n : 1, sizeof *filled);
    const step_record **run = malloc(sizeof *run * (n > 0 ? (size_t)n : 1));
    float *probs = malloc(sizeof(float) * vocab), *logits_of = malloc(sizeof(float) * vocab);
    bool *batch = malloc(sizeof(bool) * (n > 0 ? (size_t)n : 1));
    int *tokens = malloc(sizeof(int) * (n > 0 ? (size_t)n : 1));
    llm_status st = LLM_OK;
    if (!filled || !run || !probs || !logits_of || !batch || !tokens) {
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory for the replay");
        goto out;
    }
    n = fill_holes(seq, n, filled, run, out);
    for (int p = 0; p < n; p++) {
        int token = run[p]->token;
        if (token < 0 || token >= vocab) {
            st = llm_fail(err, LLM_ERR_MISMATCH,
                          "position %d holds token %d, outside the model's vocabulary "
                          "(0..%d): the trace is of another vocabulary", p, token, vocab - 1);
            goto out;
        }
    }
    if ((st = check_steering(e, run, n, out, err)) != LLM_OK)
        goto out;
    kernels_of(run, n, kernels_known, batch);
    st = run_all(e, run, batch, n, tokens, probs, logits_of, fn, user, out, err);
out:
    free(probs);
    free(logits_of);
    free(batch);
    free(tokens);
    free(filled);
    free(run);
    return st;
}
