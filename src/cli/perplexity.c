/* perplexity.c — `-m perplexity`: teacher-forced negative log-likelihood of the
 * input text. The text is cut into windows of the context length, each starting with
 * BOS; every token of the text is predicted once. Prints the token count, the mean
 * NLL (nats per token) and the perplexity. With --trace every window's records are
 * written to the trace as they are scored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "session.h"
#include "signals.h"
#include "engine.h"
#include "trace.h"

typedef struct {
    double nll;     /* summed -log p(next) */
    long count;     /* predictions summed */
    trace_writer *trace; /* --trace: each record is written there too; NULL without */
} nll_sum;

static void add_prediction(void *user, const step_record *rec)
{
    nll_sum *s = user;
    if (s->trace)
        trace_observe(s->trace, rec);
    if (rec->next < 0)
        return;
    double p = rec->next_prob > 1e-30f ? rec->next_prob : 1e-30;
    s->nll -= log(p);
    s->count++;
}

int cli_perplexity(session *s)
{
    const tokenizer *tok = s->tok;
    engine *e = s->e;
    llm_err err;
    int n;
    int *ids = session_encode_input(s->o, tok, false, &n);
    if (!ids)
        return 1;
    if (n == 0) {
        fprintf(stderr, "llmchat: the input is empty: nothing to score\n");
        free(ids);
        return 1;
    }
    int window = engine_ctx(e) - 1; /* text tokens per window, after BOS */
    if (window < 1) {
        fprintf(stderr, "llmchat: a context of %d cannot score anything\n", engine_ctx(e));
        free(ids);
        return 1;
    }
    int *buf = malloc(sizeof(int) * (window + 1));
    nll_sum sum = {.trace = s->trace};
    engine_set_observer(e, add_prediction, &sum);
    int rc = 0;
    for (int start = 0; start < n && buf && !signals_interrupted; start += window) {
        int len = n - start < window ? n - start : window;
        buf[0] = tokenizer_bos(tok);
        for (int i = 0; i < len; i++)
            buf[i + 1] = ids[start + i];
        engine_rewind(e, 0, NULL);
        if (engine_prefill(e, buf, len + 1, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            rc = 1;
            break;
        }
    }
    if (!buf) {
        fprintf(stderr, "llmchat: out of memory\n");
        rc = 1;
    }
    if (rc == 0 && sum.count > 0) {
        double mean = sum.nll / sum.count;
        printf("tokens: %ld\nnll: %.6f\nperplexity: %.6f\n", sum.count, mean, exp(mean));
        if (signals_interrupted)
            fprintf(stderr, "llmchat: interrupted: scored the first %ld token%s only\n", sum.count,
                    sum.count == 1 ? "" : "s");
    }
    engine_set_observer(e, s->trace ? trace_observe : NULL, s->trace); /* as the session set it */
    free(buf);
    free(ids);
    return rc;
}
