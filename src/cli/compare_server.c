/* compare_server.c — `llmchat MODEL --compare-server URL -i TEXT`: is the local model
 * the model the server runs? The prompt, tokenized by MODEL's tokenizer, goes to the
 * server as ids; the server continues it greedily (-n tokens, default 32) with its top
 * 10 alternatives per token; MODEL then runs the prompt and the server's tokens as one
 * batch, and each generated position's distributions are compared
 * (remote_compare.h): the KL divergence over the server's top 10 and the rest, the
 * top-1 agreement, the token whose probability differs most. Printed as a table and a
 * summary, or with --json as one object. Exit 0 when the comparison ran, whatever it
 * found; 1 when it could not run. The printing is compare_report.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare_report.h"
#include "remote_compare.h"
#include "remote_connect.h"
#include "signals.h"
#include "textfmt.h"

enum { COMPARE_TOP = 10, COMPARE_STEPS_DEFAULT = 32 };

typedef struct {
    remote_token *toks;
    int n, cap;
} collected;

static bool collect(void *user, const remote_token *t)
{
    collected *c = user;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        remote_token *grown = realloc(c->toks, (size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        c->toks = grown;
        c->cap = cap;
    }
    c->toks[c->n++] = *t;
    return true;
}

int cli_compare_server(session *s)
{
    const app_options *o = s->o;
    const tokenizer *tok = s->tok;
    engine *e = s->e;
    const model_config *cfg = &engine_model(e)->config;
    int n_prompt;
    bool bos;
    int *ids = session_encode_prompt(o, tok, &n_prompt, &bos);
    if (!ids)
        return 1;
    int rc = 1, *seq = NULL;
    float *logits = NULL;
    remote_comparison *cmp = NULL;
    collected got = {0};
    llm_err err;
    remote *r = remote_connect(o, o->compare_server);
    if (!r)
        goto out;
    const remote_info *in = remote_describe(r);
    char where[512];
    remote_connect_describe(r, where, sizeof where);
    if (!in->ids) {
        fprintf(stderr, "llmchat: --compare-server needs a server that answers with token ids "
                        "(llama-server, vLLM); %s names tokens by their text\n", where);
        goto out;
    }
    if (in->n_vocab > 0 && in->n_vocab != cfg->vocab_size) {
        fprintf(stderr, "llmchat: the server's vocabulary has %d tokens and the model's %d: they "
                        "are not the same model (%s)\n", in->n_vocab, cfg->vocab_size, where);
        goto out;
    }
    int steps = o->steps < 0 ? COMPARE_STEPS_DEFAULT : o->steps;
    if (steps == 0 || n_prompt + steps > engine_ctx(e))
        steps = engine_ctx(e) - n_prompt;
    if (steps <= 0) {
        fprintf(stderr, "llmchat: the prompt is %d tokens and the context holds %d: no room to "
                        "compare (see -c)\n", n_prompt, engine_ctx(e));
        goto out;
    }
    remote_request q = {.prompt = ids, .n_prompt = n_prompt, .max_tokens = steps,
                        .top_n = COMPARE_TOP, .sampler = o->sampler};
    q.sampler.temperature = 0; /* greedy: the server's choices are its top-1 */
    q.uncached = true;         /* the numbers of one pass, whatever the server ran before */
    remote_result res;
    llm_status st = remote_complete(r, &q, collect, &got, &res, &err);
    if (st != LLM_OK && !(st == LLM_ERR_STOPPED && signals_interrupted && got.n > 0)) {
        fprintf(stderr, "llmchat: %s\n", st == LLM_ERR_STOPPED && !signals_interrupted
                                             ? "out of memory for the server's tokens"
                                             : err.text);
        goto out;
    }
    if (got.n == 0) {
        fprintf(stderr, "llmchat: the server generated no token (stop: %s)\n", res.stop);
        goto out;
    }
    /* MODEL runs the prompt and the server's tokens (all but the last) as one batch */
    seq = malloc((size_t)(n_prompt + got.n) * sizeof *seq);
    logits = malloc((size_t)cfg->vocab_size * sizeof *logits);
    cmp = calloc((size_t)got.n, sizeof *cmp);
    if (!seq || !logits || !cmp) {
        fprintf(stderr, "llmchat: out of memory\n");
        goto out;
    }
    memcpy(seq, ids, (size_t)n_prompt * sizeof *seq);
    for (int i = 0; i < got.n; i++) {
        if (got.toks[i].id < 0 || got.toks[i].id >= cfg->vocab_size) {
            fprintf(stderr, "llmchat: the server's token %d (id %d) is outside the model's "
                            "vocabulary of %d\n", i, got.toks[i].id, cfg->vocab_size);
            goto out;
        }
        if (got.toks[i].n_top == 0 && isnan(got.toks[i].logprob)) {
            fprintf(stderr, "llmchat: the server gave no probabilities for its token %d (a "
                            "llama-server with a draft model, -md, sends none for the tokens "
                            "its draft guessed): nothing to compare there; run it without "
                            "the draft\n", i);
            goto out;
        }
        seq[n_prompt + i] = got.toks[i].id;
    }
    if (engine_prefill(e, seq, n_prompt + got.n - 1, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        goto out;
    }
    for (int i = 0; i < got.n; i++) {
        int pos = n_prompt - 1 + i;
        if (!engine_logits_of(e, pos, logits)) {
            fprintf(stderr, "llmchat: out of memory for position %d's logits\n", pos);
            goto out;
        }
        remote_compare(logits, cfg->vocab_size, &got.toks[i], pos, &cmp[i]);
    }
    compare_report report = {.server = where, .info = in, .model = engine_model(e)->path,
                             .prompt_tokens = n_prompt, .top = COMPARE_TOP, .tok = tok,
                             .json = o->json};
    compare_report_print(&report, cmp, got.n);
    rc = 0;
out:
    free(cmp);
    free(logits);
    free(seq);
    free(got.toks);
    free(ids);
    remote_close(r);
    return rc;
}
