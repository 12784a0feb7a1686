/* remote_perplexity.c — `--server URL -m perplexity`: the perplexity of the input text
 * under a served model, as -m perplexity computes it under a local one. The server
 * tokenizes the text; it is cut into windows of the server's context, each after BOS
 * (at most n_ctx - 1 tokens of text; one fewer on vLLM, whose request also generates
 * one); every token of the text is scored once by the server (remote_score.h: one
 * request a token on llama-server, one a window on vLLM). Prints the token count, the
 * mean NLL (nats per token) and the perplexity, as the local one does; the server on
 * stderr. Ctrl-C stops between requests: what was scored is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "remote_connect.h"
#include "remote_score.h"
#include "session.h"
#include "signals.h"

typedef struct {
    double nll;    /* summed -log p(token) */
    long count;    /* tokens summed */
} nll_sum;

static bool add_token(void *user, int pos, const remote_token *t)
{
    (void)pos;
    nll_sum *s = user;
    /* p taken as 1e-30 at least (log 1e-30 = -69.0776), as the local one takes it */
    double lp = t->logprob > -69.0776f ? (double)t->logprob : -69.0776;
    s->nll -= lp;
    s->count++;
    return true;
}

/* The text's tokens as the server gives them, and its BOS (-1 when its model adds
 * none): the text tokenized with and without special tokens. */
static int *server_tokens(remote *r, const char *text, int *n, int *bos)
{
    llm_err err;
    int *with = NULL, *plain = NULL, n_with = 0;
    if (remote_tokenize(r, text, true, &with, &n_with, &err) != LLM_OK ||
        remote_tokenize(r, text, false, &plain, n, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        free(with);
        return NULL;
    }
    *bos = n_with == *n + 1 && memcmp(with + 1, plain, (size_t)*n * sizeof *plain) == 0 ? with[0]
                                                                                        : -1;
    free(with);
    return plain;
}

int cli_remote_perplexity(const app_options *o)
{
    signals_install_sigint();
    char *text = session_read_input(o);
    if (!text)
        return 1;
    int rc = 1, *ids = NULL, *buf = NULL, n = 0, bos = -1;
    llm_err err;
    remote *r = remote_connect(o, o->server_url);
    if (!r)
        goto out;
    const remote_info *in = remote_describe(r);
    char where[512];
    remote_connect_describe(r, where, sizeof where);
    fprintf(stderr, "server: %s\n", where);
    if (!remote_score_supported(r, &err)) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        goto out;
    }
    ids = server_tokens(r, text, &n, &bos);
    if (!ids)
        goto out;
    int first = bos >= 0 ? 0 : 1; /* without BOS the text's first token is only context */
    if (n - first <= 0) {
        fprintf(stderr, "llmchat: the input is %s: nothing to score\n",
                n == 0 ? "empty" : "one token and the server's model has no BOS");
        goto out;
    }
    /* text tokens a window scores, after its first token (BOS, or the one before) */
    int window = in->n_ctx > 0 ? in->n_ctx - 1 - (in->api == REMOTE_OPENAI) : n;
    if (window < 1) {
        fprintf(stderr, "llmchat: the server's context of %d cannot score anything\n", in->n_ctx);
        goto out;
    }
    buf = malloc(sizeof(int) * ((size_t)window + 1));
    if (!buf) {
        fprintf(stderr, "llmchat: out of memory\n");
        goto out;
    }
    nll_sum sum = {0};
    llm_status st = LLM_OK;
    for (int start = first; start < n && st == LLM_OK; start += window) {
        int len = n - start < window ? n - start : window;
        buf[0] = bos >= 0 ? bos : ids[start - 1];
        memcpy(buf + 1, ids + start, (size_t)len * sizeof *buf);
        st = remote_score(r, buf, len + 1, 1, 1, add_token, &sum, &err);
    }
    bool interrupted = st == LLM_ERR_STOPPED && signals_interrupted;
    if (st != LLM_OK && !interrupted) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        goto out;
    }
    if (sum.count > 0) {
        double mean = sum.nll / sum.count;
        printf("tokens: %ld\nnll: %.6f\nperplexity: %.6f\n", sum.count, mean, exp(mean));
        fflush(stdout);
    }
    if (interrupted)
        fprintf(stderr, "llmchat: interrupted: scored the first %ld token%s only\n", sum.count,
                sum.count == 1 ? "" : "s");
    rc = 0;
out:
    free(buf);
    free(ids);
    free(text);
    remote_close(r);
    return rc;
}
