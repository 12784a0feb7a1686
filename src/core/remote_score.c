/* remote_score.c — a given token sequence scored by a served model (see
 * remote_score.h): llama-server one request a position, vLLM one request with
 * prompt_logprobs. No printing. */
#define _GNU_SOURCE /* open_memstream */
#include "remote_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "remote_internal.h"

enum { VLLM_TOP_MAX = 20 }; /* vLLM's default --max-logprobs */

bool remote_score_supported(const remote *r, llm_err *why)
{
    const remote_info *in = remote_describe(r);
    if (in->api == REMOTE_LLAMA_SERVER || (in->api == REMOTE_OPENAI && in->ids))
        return true;
    if (why)
        llm_fail(why, LLM_ERR_ARG, "%s (%s) gives no log-probabilities of a given text's "
                                   "tokens (llama-server and vLLM do)", in->base_url,
                 in->api == REMOTE_OLLAMA ? "ollama" : "an OpenAI-compatible server other than vLLM");
    return false;
}

/* ---- llama-server: one request a position ---- */

static llm_status llama_answer(const json_value *v, int want, remote_token *t, llm_err *err)
{
    memset(t, 0, sizeof *t);
    const json_value *probs = json_get(v, "completion_probabilities");
    const json_value *first = json_at(probs, 0);
    if (!first || first->type != JSON_OBJECT)
        return llm_fail(err, LLM_ERR_FORMAT, "llama-server's answer has no "
                                             "completion_probabilities: cannot score token %d", want);
    if (!remote_token_object(first, t) || t->id != want)
        return llm_fail(err, LLM_ERR_FORMAT, "llama-server generated token %d where token %d was "
                                             "forced (logit_bias): cannot score it", t->id, want);
    if (isnan(t->logprob))
        return llm_fail(err, LLM_ERR_FORMAT, "llama-server's answer gives token %d no logprob",
                        want);
    char why[160];
    if (!remote_token_logprobs_ok(t, why, sizeof why))
        return llm_fail(err, LLM_ERR_FORMAT, "llama-server's answer is malformed: %s", why);
    return LLM_OK;
}

llm_status remote_score_read_llama(const char *body, size_t len, int want, remote_token *t,
                                   llm_err *err)
{
    json_value *v = NULL;
    llm_err perr;
    if (json_parse(body, len, &v, &perr) != LLM_OK)
        return llm_fail(err, LLM_ERR_FORMAT, "llama-server answered something that is not JSON "
                                             "(%s)", perr.text);
    llm_status st = llama_answer(v, want, t, err);
    json_free(v);
    return st;
}

/* The request that scores ids[pos] after ids[0..pos): malloc'd, NULL when out of
 * memory. */
static char *llama_body(const int *ids, int pos, int top_n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fputs("{\"prompt\":[", f);
    for (int i = 0; i < pos; i++)
        fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fprintf(f, "],\"n_predict\":1,\"n_probs\":%d,\"temperature\":0,\"stream\":false,"
               "\"post_sampling_probs\":false,\"logit_bias\":[[%d,1000]],\"cache_prompt\":true}",
            top_n, ids[pos]);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static llm_status score_llama(remote *r, const int *ids, int n, int from, int top_n,
                              remote_score_fn fn, void *user, llm_err *err)
{
    remote_token *t = malloc(sizeof *t);
    if (!t)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    llm_status st = LLM_OK;
    for (int pos = from; pos < n && st == LLM_OK; pos++) {
        if (remote_cancelled(r)) {
            st = llm_fail(err, LLM_ERR_STOPPED, "stopped");
            break;
        }
        char *body = llama_body(ids, pos, top_n);
        if (!body) {
            st = llm_fail(err, LLM_ERR_NOMEM, "out of memory");
            break;
        }
        json_value *v = NULL;
        st = remote_post_json(r, "/completion", body, &v, err);
        free(body);
        if (st == LLM_OK) {
            st = llama_answer(v, ids[pos], t, err);
            if (st != LLM_OK)
                snprintf(err->text + strlen(err->text), sizeof err->text - strlen(err->text),
                         " (position %d)", pos);
        }
        json_free(v);
        if (st == LLM_OK && !fn(user, pos, t))
            st = llm_fail(err, LLM_ERR_STOPPED, "stopped");
    }
    free(t);
    return st;
}

/* ---- vLLM: prompt_logprobs ---- */

typedef struct {
    int id;
    int rank;       /* 0 when not given */
    float logprob;
    const char *text;
} vllm_entry;

static int by_rank(const void *a, const void *b)
{
    const vllm_entry *x = a, *y = b;
    if (x->logprob != y->logprob)
        return (x->logprob < y->logprob) - (x->logprob > y->logprob);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static bool key_id(const char *key, int *id)
{
    char *end;
    long v = strtol(key, &end, 10);
    if (end == key || *end || v < 0 || v >= (1L << 30))
        return false;
    *id = (int)v;
    return true;
}

/* Position pos's dictionary {"<id>": {logprob, rank, decoded_token}} into *t. */
static llm_status vllm_position(const json_value *d, int want, int pos, int top_n, remote_token *t,
                                llm_err *err)
{
    memset(t, 0, sizeof *t);
    t->id = want;
    t->logprob = NAN;
    if (!d || d->type != JSON_OBJECT)
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM's prompt_logprobs has no entry for position "
                                             "%d", pos);
    vllm_entry *e = calloc(d->count + 1, sizeof *e);
    if (!e)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    int m = 0;
    for (size_t k = 0; k < d->count; k++) {
        vllm_entry x = {0};
        double lp;
        const json_value *o = &d->items[k];
        if (!key_id(d->keys[k], &x.id) || !json_as_double(json_get(o, "logprob"), &lp))
            continue;
        x.logprob = (float)lp;
        json_as_int(json_get(o, "rank"), &x.rank);
        json_as_string(json_get(o, "decoded_token"), &x.text);
        if (x.id == want) {
            t->logprob = x.logprob;
            if (x.text)
                remote_piece_of_text(x.text, t->piece, &t->piece_len);
            if (x.rank > top_n)
                continue; /* the sequence's token, listed beside the top k */
        }
        e[m++] = x;
    }
    if (isnan(t->logprob)) {
        free(e);
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM's prompt_logprobs at position %d do not hold "
                                             "the prompt's token %d", pos, want);
    }
    qsort(e, (size_t)m, sizeof *e, by_rank);
    for (int k = 0; k < m && t->n_top < top_n && t->n_top < STEP_TOP_MAX; k++) {
        int j = t->n_top++;
        t->top[j].id = e[k].id;
        t->top[j].logprob = e[k].logprob;
        if (e[k].text)
            remote_piece_of_text(e[k].text, t->top[j].piece, &t->top[j].piece_len);
    }
    free(e);
    char why[160];
    if (!remote_token_logprobs_ok(t, why, sizeof why))
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM's prompt_logprobs at position %d are "
                                             "malformed: %s", pos, why);
    return LLM_OK;
}

static llm_status vllm_answer(const json_value *v, const int *ids, int n, int from, int top_n,
                              remote_score_fn fn, void *user, llm_err *err)
{
    const json_value *list = json_get(json_at(json_get(v, "choices"), 0), "prompt_logprobs");
    if (!list || list->type != JSON_ARRAY)
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM's answer has no choices[0].prompt_logprobs");
    if ((int)list->count < n)
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM's prompt_logprobs cover %zu positions of the "
                                             "%d sent", list->count, n);
    remote_token *t = malloc(sizeof *t);
    if (!t)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    llm_status st = LLM_OK;
    for (int pos = from; pos < n && st == LLM_OK; pos++) {
        st = vllm_position(json_at(list, (size_t)pos), ids[pos], pos, top_n, t, err);
        if (st == LLM_OK && !fn(user, pos, t))
            st = llm_fail(err, LLM_ERR_STOPPED, "stopped");
    }
    free(t);
    return st;
}

llm_status remote_score_read_vllm(const char *body, size_t len, const int *ids, int n, int from,
                                  int top_n, remote_score_fn fn, void *user, llm_err *err)
{
    json_value *v = NULL;
    llm_err perr;
    if (json_parse(body, len, &v, &perr) != LLM_OK)
        return llm_fail(err, LLM_ERR_FORMAT, "vLLM answered something that is not JSON (%s)",
                        perr.text);
    llm_status st = vllm_answer(v, ids, n, from, top_n, fn, user, err);
    json_free(v);
    return st;
}

static llm_status score_vllm(remote *r, const int *ids, int n, int from, int top_n,
                             remote_score_fn fn, void *user, llm_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    fputs("{\"model\":", f);
    json_write_request_string(f, remote_describe(r)->model);
    fputs(",\"prompt\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fprintf(f, "],\"max_tokens\":1,\"prompt_logprobs\":%d,\"temperature\":0,\"stream\":false}",
            top_n);
    if (fclose(f) != 0) {
        free(text);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    json_value *v = NULL;
    llm_status st = remote_post_json(r, "/v1/completions", text, &v, err);
    free(text);
    if (st == LLM_OK)
        st = vllm_answer(v, ids, n, from, top_n, fn, user, err);
    json_free(v);
    return st;
}

llm_status remote_score(remote *r, const int *ids, int n, int from, int top_n, remote_score_fn fn,
                        void *user, llm_err *err)
{
    if (!remote_score_supported(r, err))
        return LLM_ERR_ARG;
    if (from < 1 || from > n)
        return llm_fail(err, LLM_ERR_ARG, "nothing to score: positions %d..%d of %d", from, n - 1, n);
    if (from == n)
        return LLM_OK;
    int k = top_n < 1 ? 1 : top_n > STEP_TOP_MAX ? STEP_TOP_MAX : top_n;
    if (remote_describe(r)->api == REMOTE_LLAMA_SERVER)
        return score_llama(r, ids, n, from, k, fn, user, err);
    return score_vllm(r, ids, n, from, k > VLLM_TOP_MAX ? VLLM_TOP_MAX : k, fn, user, err);
}
