/* server_check.c — a local model's positions checked against a served model as a chat
 * goes (see server_check.h). */
#include "server_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remote_score.h"

enum { CHECK_TOP = 10 };   /* the server's alternatives compared at each position */

typedef struct {
    int from, to;
} range;

struct server_check {
    remote *r;
    int n_vocab;
    remote_comparison *at;  /* (cap) by position: the prediction of that position's token */
    bool *done;
    int cap;
    range *queue;
    int n_queue, cap_queue;
    float *logits;          /* (n_vocab) scratch */
    const engine *e;        /* during a step */
    llm_err why;            /* a comparison that could not be made */
    llm_status why_status;
    bool failed;
};

llm_status server_check_new(remote *r, const engine *e, server_check **out, llm_err *err)
{
    *out = NULL;
    if (!remote_score_supported(r, err))
        return LLM_ERR_ARG;
    const remote_info *in = remote_describe(r);
    int n_vocab = engine_model(e)->config.vocab_size;
    if (in->n_vocab > 0 && in->n_vocab != n_vocab)
        return llm_fail(err, LLM_ERR_ARG, "the server's model has %d tokens, the local one %d: "
                                          "not the same vocabulary", in->n_vocab, n_vocab);
    server_check *c = calloc(1, sizeof *c);
    if (!c || !(c->logits = malloc(sizeof *c->logits * (size_t)n_vocab))) {
        free(c);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    }
    c->r = r;
    c->n_vocab = n_vocab;
    *out = c;
    return LLM_OK;
}

void server_check_free(server_check *c)
{
    if (!c)
        return;
    free(c->at);
    free(c->done);
    free(c->queue);
    free(c->logits);
    free(c);
}

static bool make_room(server_check *c, int n)
{
    if (n <= c->cap)
        return true;
    int cap = c->cap ? c->cap : 256;
    while (cap < n)
        cap *= 2;
    remote_comparison *at = realloc(c->at, sizeof *at * (size_t)cap);
    if (!at)
        return false;
    c->at = at;
    bool *done = realloc(c->done, sizeof *done * (size_t)cap);
    if (!done)
        return false;
    memset(done + c->cap, 0, sizeof *done * (size_t)(cap - c->cap));
    c->done = done;
    c->cap = cap;
    return true;
}

void server_check_queue(server_check *c, int from, int to)
{
    if (from < 1)
        from = 1;
    if (from >= to || !make_room(c, to))
        return;
    if (c->n_queue == c->cap_queue) {
        int cap = c->cap_queue ? 2 * c->cap_queue : 8;
        range *q = realloc(c->queue, sizeof *q * (size_t)cap);
        if (!q)
            return;
        c->queue = q;
        c->cap_queue = cap;
    }
    c->queue[c->n_queue++] = (range){from, to};
}

int server_check_pending(const server_check *c)
{
    int n = 0;
    for (int i = 0; i < c->n_queue; i++)
        for (int p = c->queue[i].from; p < c->queue[i].to; p++)
            n += !c->done[p];
    return n;
}

/* The server's score of position pos's token against the local prediction of it. */
static bool on_score(void *user, int pos, const remote_token *t)
{
    server_check *c = user;
    if (!engine_logits_of(c->e, pos - 1, c->logits)) {
        c->why_status = llm_fail(&c->why, LLM_ERR_NOMEM, "out of memory for the local logits of "
                                 "position %d", pos - 1);
        c->failed = true;
        return false;
    }
    if (remote_compare(c->logits, c->n_vocab, t, pos - 1, &c->at[pos]))
        c->done[pos] = true;
    return true;
}

llm_status server_check_step(server_check *c, engine *e, llm_err *err)
{
    while (c->n_queue > 0) {
        range *q = &c->queue[0];
        while (q->from < q->to && c->done[q->from])
            q->from++;
        if (q->to > engine_pos(e))
            q->to = engine_pos(e); /* the sequence got shorter */
        if (q->from < q->to)
            break;
        memmove(c->queue, c->queue + 1, sizeof *c->queue * (size_t)--c->n_queue);
    }
    if (c->n_queue == 0)
        return LLM_OK;
    range *q = &c->queue[0];
    /* llama-server scores one position a request; vLLM a whole prompt in one */
    int to = remote_describe(c->r)->api == REMOTE_LLAMA_SERVER ? q->from + 1 : q->to;
    c->e = e;
    c->failed = false;
    llm_status st = remote_score(c->r, engine_tokens(e), to, q->from, CHECK_TOP, on_score, c, err);
    if (c->failed)
        st = llm_fail(err, c->why_status, "%s", c->why.text);
    if (st != LLM_OK) {
        c->n_queue = 0;
        return st;
    }
    q->from = to;
    return LLM_OK;
}

void server_check_forget(server_check *c, int pos)
{
    if (pos < 1)
        pos = 1;
    for (int p = pos; p < c->cap; p++)
        c->done[p] = false;
    for (int i = 0; i < c->n_queue; i++)
        if (c->queue[i].to > pos)
            c->queue[i].to = pos;
}

const remote_comparison *server_check_at(const server_check *c, int pos)
{
    return pos >= 1 && pos < c->cap && c->done[pos] ? &c->at[pos] : NULL;
}

void server_check_summarize(const server_check *c, int from, int to, server_check_summary *out)
{
    *out = (server_check_summary){.kl_max_pos = -1};
    double sum = 0;
    for (int p = from < 1 ? 1 : from; p < to && p < c->cap; p++) {
        if (!c->done[p])
            continue;
        const remote_comparison *x = &c->at[p];
        out->checked++;
        out->top1_agree += x->top1_agree;
        sum += x->kl;
        if (out->kl_max_pos < 0 || x->kl > out->kl_max) {
            out->kl_max = x->kl;
            out->kl_max_pos = p;
        }
    }
    out->kl_mean = out->checked ? sum / out->checked : 0;
}
