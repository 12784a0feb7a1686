/* sampler.h — turns logits into the next token, and says how it decided.
 *
 * Stages, in order: repetition penalty over the last N tokens (logits > 0 divided by
 * the penalty, < 0 multiplied), top-k, temperature and softmax, top-p (smallest set
 * whose probability reaches p), min-p (drop tokens below min_p × the top
 * probability), renormalise, one uniform draw. Temperature 0 is greedy: the argmax of
 * the penalised logits (first index on ties), no draw.
 * The sampler never modifies the logits it is given: it works on its own copy. It
 * owns that scratch space and its RNG state (xorshift64*, seeded). */
#ifndef LLMCHAT_SAMPLER_H
#define LLMCHAT_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

/* Each field is a row of settings_table (settings.c): its bounds, its default, its
 * keys in traces and saved chats. */
typedef struct {
    float temperature;    /* 0 = greedy */
    float top_p;          /* (0, 1]; 1 = off */
    int top_k;            /* 0 = off */
    float min_p;          /* [0, 1); 0 = off */
    float repeat_penalty; /* > 0; 1 = off */
    int repeat_last_n;    /* tokens of history the penalty looks at */
    uint64_t seed;
} sampler_config;

/* What one decision did. Counts are candidates left after each stage (a stage that is
 * off keeps what reached it, so kept_min_p is always the final candidate count). Greedy decisions run no stage: every kept_* is n_vocab,
 * draw is -1 and chosen_prob 1. NaN logits count as -inf; when the largest penalised
 * logit is not finite (all -inf, or +inf) the decision is greedy too. */
typedef struct {
    sampler_config config;   /* the settings in force */
    int n_vocab;
    int n_penalized;         /* distinct tokens whose logit the repetition penalty changed */
    int kept_top_k;
    int kept_top_p;
    int kept_min_p;
    bool greedy;
    float draw;              /* the uniform draw in [0, 1); -1 when greedy */
    int chosen;              /* the token id */
    float chosen_prob;       /* its probability in the final distribution (1 when greedy) */
    float chosen_model_prob; /* its probability under softmax of the raw logits */
    int chosen_rank;         /* its rank in the raw logits: 1 = the model's top choice */
} sampler_record;

/* Which stage removed a candidate in a decision. */
typedef enum {
    SAMPLER_KEPT = 0,   /* it survived every stage */
    SAMPLER_CUT_TOP_K,
    SAMPLER_CUT_TOP_P,
    SAMPLER_CUT_MIN_P,
    SAMPLER_CUT_GREEDY, /* a greedy decision keeps only the argmax */
} sampler_cut;

const char *sampler_cut_name(sampler_cut cut); /* "kept", "top-k", "top-p", "min-p", "greedy" */

typedef struct sampler sampler;

/* The table's defaults (a seed of 0). */
void sampler_config_default(sampler_config *c);
/* Checks ranges; on failure err names the option and the allowed range. */
llm_status sampler_config_check(const sampler_config *c, llm_err *err);

llm_status sampler_new(int n_vocab, const sampler_config *c, sampler **out, llm_err *err);
void sampler_free(sampler *s); /* NULL does nothing */
/* Replaces the settings; reseeds the RNG only when the seed changed. */
void sampler_configure(sampler *s, const sampler_config *c);
const sampler_config *sampler_get_config(const sampler *s);

/* Chooses the next token from logits (n_vocab), given the tokens so far (history,
 * oldest first; may be NULL when n_history is 0). Fills rec when not NULL. */
int sampler_choose(sampler *s, const float *logits, const int *history, int n_history,
                   sampler_record *rec);

/* Makes the next sampler_choose use `draw` (in [0, 1)) instead of drawing from the
 * RNG, which is not advanced: to replay a recorded decision. A greedy decision
 * ignores it; either way it is used once. Out of range: ignored. */
void sampler_set_next_draw(sampler *s, float draw);

/* What the last sampler_choose did to token id: the stage that removed it (or
 * SAMPLER_KEPT) and its probability in the final distribution, after the penalty,
 * temperature and the cuts, renormalised (0 when removed). O(1); valid until the
 * next sampler_choose. */
void sampler_fate(const sampler *s, int id, sampler_cut *cut, float *p_final);

/* Softmax of raw logits: writes the probability and 1-based rank of `id` (1 + the
 * number of logits strictly greater). A bad id or a NaN logit gives prob 0, rank 0. */
void sampler_model_prob(const float *logits, int n_vocab, int id, float *prob, int *rank);

/* The 1-based rank of v[id] among v[0..n): 1 + the number of values strictly greater. */
int sampler_rank(const float *v, int n, int id);

/* The indices of the k largest values of v[0..n) in descending order of value (ties:
 * the lower index first) into out (k entries). Returns min(k, n). Used for the
 * records' top candidates and the TUI's strongest attention weights. */
int sampler_top_k(const float *v, int n, int k, int *out);

#endif
