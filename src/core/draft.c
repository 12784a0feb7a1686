/* draft.c — a draft model's greedy guesses (see draft.h). */
#include "draft.h"

#include <stdlib.h>

struct draft {
    engine *e;
};

llm_status draft_new(const model *m, int ctx, draft **out, llm_err *err)
{
    *out = NULL;
    draft *d = calloc(1, sizeof *d);
    if (!d)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the draft model");
    engine_options o;
    engine_options_default(&o);
    o.ctx_len = ctx;
    o.top_n = 0;
    o.record_prompt = false;
    o.sampler.temperature = 0.0f; /* greedy: a guess drawn with certainty */
    o.sampler.repeat_penalty = 1.0f;
    llm_status st = engine_new(m, NULL, &o, &d->e, err);
    if (st != LLM_OK) {
        free(d);
        return st;
    }
    *out = d;
    return LLM_OK;
}

void draft_free(draft *d)
{
    if (!d)
        return;
    engine_free(d->e);
    free(d);
}

const engine *draft_engine(const draft *d) { return d->e; }

int draft_guesser(void *user, const int *tokens, int n, int *guess, int max)
{
    draft *d = user;
    engine *e = d->e;
    int have = engine_pos(e), same = 0;
    const int *seq = engine_tokens(e);
    while (same < have && same < n && seq[same] == tokens[same])
        same++;
    if (max > engine_ctx(e) - n)
        max = engine_ctx(e) - n;
    if (n > engine_ctx(e) || max <= 0)
        return 0;
    llm_err err;
    /* the draft's logits after tokens[n - 1]: from what it ran, or run now */
    if (same == n) {
        if (engine_rewind(e, n, &err) != LLM_OK)
            return 0;
    } else if (engine_rewind(e, same, &err) != LLM_OK ||
               engine_prefill(e, tokens + same, n - same, &err) != LLM_OK) {
        engine_rewind(e, 0, &err); /* start again next time */
        return 0;
    }
    int k = 0;
    while (k < max && engine_step(e, &guess[k], &err) == LLM_OK)
        k++;
    return k;
}
