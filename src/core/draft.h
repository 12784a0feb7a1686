/* draft.h — a draft model's guesses for speculative decoding: a second, smaller model
 * with the same vocabulary (Qwen3-0.6B for Qwen3-8B, stories15M for stories110M) runs
 * the same sequence in an engine of its own and guesses greedily what comes next; the
 * big model checks the guesses in one pass (engine_step_guessed, engine.h). Between
 * calls the draft keeps what it ran: a call runs only the tokens the big model added
 * since (those it guessed right are there already). No printing. */
#ifndef LLMCHAT_DRAFT_H
#define LLMCHAT_DRAFT_H

#include "engine.h"
#include "model.h"
#include "status.h"

typedef struct draft draft;

/* A draft over model m (borrowed: it must outlive the draft), ctx positions (0: the
 * model's own). */
llm_status draft_new(const model *m, int ctx, draft **out, llm_err *err);
void draft_free(draft *d); /* NULL does nothing */

/* Its guesses as an engine_guesser (user: the draft): brings the draft's sequence to
 * tokens[0..n) (rewinding to where they part, running the rest as one batch), then up
 * to max greedy steps of the draft, fewer where its context ends. 0 when the draft
 * cannot run (its context is full, no memory): the big model then steps alone. */
int draft_guesser(void *user, const int *tokens, int n, int *guess, int max);

/* The draft's own engine: its timings (engine_get_stats). */
const engine *draft_engine(const draft *d);

#endif
