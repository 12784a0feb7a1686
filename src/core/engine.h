/* engine.h — runs a model over a growing token sequence and keeps a step record per
 * position.
 *
 * The engine owns the transformer (and with it the KV cache), the sampler, the token
 * sequence, one step record per position and the captured attention rows. It borrows
 * the model and the tokenizer, which must outlive it. Operations:
 *   prefill  append prompt tokens and run them (batched);
 *   step     sample the next token from the newest logits and run it;
 *   force    run a token the caller chose instead of sampling;
 *   rewind   forget positions from `pos` on (the KV cache entries are simply reused);
 * Front ends and the trace writer learn about finished records through an optional
 * observer callback. No printing, no exit, no curses. */
#ifndef LLMCHAT_ENGINE_H
#define LLMCHAT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "capture.h"
#include "expert_routes.h"
#include "guess_length.h"
#include "model.h"
#include "sampler.h"
#include "status.h"
#include "steering.h"
#include "step.h"
#include "tokenizer.h"
#include "transformer.h"

typedef struct engine engine;

enum { ENGINE_ATTENTION_MIB_DEFAULT = 64 };

/* Called when a record is finished (its `next` became known). The record stays
 * valid until the engine rewinds past it or is freed. */
typedef void (*engine_observer)(void *user, const step_record *rec);

typedef struct {
    int ctx_len;              /* 0 = the model's seq_len */
    transformer_kv kv_cache;  /* KV cache type; default AUTO follows the weights */
    int top_n;                /* candidates kept per record (default 10, at most STEP_TOP_MAX) */
    bool capture_attention;   /* keep every position's attention rows */
    bool record_prompt;       /* compute prompt positions' top candidates and next_prob
                                 during prefill, before the observer sees their records
                                 (a trace needs them; default true). When false they are
                                 computed when engine_record is first asked for the
                                 position, and prefill runs the classifier only for the
                                 last position */
    bool record_lens;         /* compute each position's logit lens as its record is
                                 finished (--trace-lens): one more forward pass each */
    bool record_tensors;      /* summarize the pass's steps at each position as its record
                                 is finished (--trace-tensors): one more forward pass each;
                                 the record's `tensors` are valid while the observer sees it */
    int tensor_first, tensor_last; /* the layers summarized (the steps outside the layers
                                      always) */
    size_t attention_budget;  /* bytes of attention rows kept (the newest positions'):
                                 one block of this size, written in turn and reused
                                 (attention_ring.h), made and touched when capture is
                                 first on; the oldest rows are dropped to make room
                                 (default ENGINE_ATTENTION_MIB_DEFAULT MiB, or what
                                 the whole context's rows take when that is less) */
    sampler_config sampler;   /* the sampler's first settings; from then on the sampler
                                 holds them (engine_set_sampler, engine_sampler_config) */
    int guess_min;            /* engine_step_guessed asks its guesser for between this
                                 many and its max_guess guesses, as many as pay by the
                                 acceptance and the cost of a check measured so far
                                 (guess_length.h); -1 (the default): always max_guess */
} engine_options;

void engine_options_default(engine_options *o);

/* tok is only handed back by engine_tokenizer: NULL is fine for callers that need no
 * text (the benchmark). */
llm_status engine_new(const model *m, const tokenizer *tok, const engine_options *o,
                      engine **out, llm_err *err);
void engine_free(engine *e); /* NULL does nothing */

void engine_set_observer(engine *e, engine_observer fn, void *user);

/* Told how a long batch goes: before each chunk of one that is longer than the
 * transformer runs at a time (transformer_batch_chunk) — engine_prefill's, and so
 * chat_begin's and the context's re-reading, and engine_restore's — with the tokens
 * of that call run so far (done, from 0) and its total. Called in the caller's thread
 * between chunks; it may read the engine (engine_pos, engine_get_stats, the model) but
 * must not run, rewind or ask for records. Returning false stops the batch there: the
 * call fails with LLM_ERR_STOPPED as on any other failure. The chunks are the
 * transformer's own, so the numbers are those of one uninterrupted batch, bit for
 * bit. Short batches never call it; fn NULL: no calls. */
typedef bool (*engine_progress)(void *user, int done, int total);
void engine_set_progress(engine *e, engine_progress fn, void *user);
void engine_set_sampler(engine *e, const sampler_config *c);
const sampler_config *engine_sampler_config(const engine *e);
void engine_set_capture(engine *e, bool capture_attention);

const model *engine_model(const engine *e);
const tokenizer *engine_tokenizer(const engine *e);
int engine_ctx(const engine *e);          /* context length in positions */
transformer_kv engine_kv_cache(const engine *e); /* the KV cache's type (F32 or Q8_0) */
/* Positions a rewind to pos runs again before it (transformer_rerun_cost: a hybrid
 * model's recurrent state from its checkpoint; 0 for others). */
int engine_rewind_cost(const engine *e, int pos);
size_t engine_kv_bytes(const engine *e);         /* the KV cache's size */
int engine_pos(const engine *e);          /* tokens in the sequence so far */
const int *engine_tokens(const engine *e);/* (engine_pos) borrowed, valid until the next call that changes the sequence */
/* The logits (vocab) of the newest position, or NULL when there are none (empty
 * sequence, after a failure). Borrowed: valid until the next call that runs or
 * rewinds. */
const float *engine_logits(const engine *e);
/* The kernels the positions run from now on compute with (transformer_kernels): AUTO
 * (the default: a prompt of TRANSFORMER_BATCH_MIN tokens or more on the batch kernels,
 * the rest on the token kernels), or TOKEN or BATCH for every position, as a replay
 * runs each position on the kernels its record says (step_record.batch). */
void engine_set_kernels(engine *e, transformer_kernels kernels);
/* The logits (vocab) of position pos (0 <= pos < engine_pos) into out, as the pass that
 * ran it computed them: again from the classifier input the transformer kept, bit for
 * bit. Returns out, or NULL for a bad position or when out of memory for the kernels'
 * scratch. */
const float *engine_logits_of(const engine *e, int pos, float *out);
/* The next engine_step's sampler uses `draw` instead of its RNG (sampler_set_next_draw):
 * replaying a recorded decision. */
void engine_set_next_draw(engine *e, float draw);
/* The record of position pos (0 <= pos < engine_pos), or NULL. A prompt position run
 * without record_prompt gets its candidates and next_prob here, on first request (one
 * pass over the classifier; later requests are free): the record is then what prefill
 * with record_prompt would have made it, bit for bit. Not thread-safe against other
 * calls on the same engine. */
const step_record *engine_record(const engine *e, int pos);

/* How pos's token got there (its record's phase), without completing a pending
 * record as engine_record does; STEP_PROMPT outside the sequence. */
step_phase engine_phase(const engine *e, int pos);
/* The interventions position pos ran with (its record's; NULL: none were ever set),
 * without completing a pending record; those in force outside the sequence. */
const intervention *engine_ran_with(const engine *e, int pos);

/* The attention rows of position pos (0 <= pos < engine_pos): (n_layers, n_heads,
 * pos + 1), the record's `attn`. While capture is on, rows that were not captured or
 * that newer ones replaced in the attention block are computed again by one forward
 * pass of pos over the KV cache, which it leaves as it was (bit for bit what decoding
 * or the prompt's batch wrote), and take
 * the place of the oldest rows. NULL with err when capture is off, the rows are larger than the block,
 * on no memory or a bad position. */
const float *engine_attention(engine *e, int pos, llm_err *err);

/* The logit lens of position pos (0 <= pos < engine_pos): for each layer
 * (n_layers), what the residual stream after it predicts for pos + 1, and the rank
 * and probability of the token that came next (when known). Computed on demand by
 * one forward pass of pos over the KV cache, which it leaves as it was; kept until a
 * rewind to pos or earlier, or until pos's next becomes known, and set as the
 * record's `lens`. On a hybrid the recurrent state it starts from is the one pos ran
 * from (the positions since its checkpoint run with the interventions they ran with),
 * as for the attention rows, the what-ifs and attribution. NULL with err on failure
 * (no memory, bad position). */
const step_lens_layer *engine_lens(engine *e, int pos, llm_err *err);

/* Every step of the forward pass at position pos (0 <= pos < engine_pos) for layers
 * first..last (clamped to the model's; the steps outside the layers always): pos run
 * again over the KV cache of 0..pos-1 with the vectors and knock-outs in force now,
 * one token as decoding runs it, leaving the KV cache as it was (as the lens does),
 * with a capture (capture.h) registered at the pass's hook points for that one pass.
 * Nothing observes the pass otherwise: decoding pays for no capture. The capture takes
 * capture_bytes(...) and is kept until the next call with another position, layers or
 * steering state, a rewind to pos or earlier, or engine_free; borrowed. NULL with err
 * on failure (no memory, bad position). */
const tensor_capture *engine_tensors(engine *e, int pos, int layer_first, int layer_last,
                                     llm_err *err);

/* A mixture of experts' routes (expert_routes.h): each position's chosen experts and
 * their weights at every layer, as the sequence ran them (prefill, steps, a rewind's
 * run again; not the what-ifs), forgotten on a rewind past them. NULL for a model
 * without experts. Borrowed: valid until engine_free. */
const expert_routes *engine_routes(const engine *e);

/* Appends n prompt tokens and runs them as one batch (telling engine_set_progress's
 * callback between its chunks when long). Records are created for each;
 * the one before the first new token (if any, and not yet finished) is finished with
 * next = tokens[0]. With an observer and attention capture, a prompt whose rows would
 * not fit in half the attention block runs in several batches, whose records the
 * observer sees (rows included) before the next batch. Fails with LLM_ERR_CONTEXT,
 * changing nothing, when the tokens do not fit; on other failures the sequence ends
 * where it was, with no logits (the observer may have seen earlier batches). */
llm_status engine_prefill(engine *e, const int *tokens, int n, llm_err *err);

/* Samples the next token from the newest position's logits, appends it (phase GEN)
 * and runs it. *token receives the id. Requires engine_pos >= 1. Fails with
 * LLM_ERR_CONTEXT when the context is full: then the id is chosen and recorded as
 * the newest record's next, but not run. When the newest record's next is already
 * chosen and not run (that failure, or engine_step_guessed's rejected guess), that
 * token is appended and run without a new decision. engine_rewind to engine_pos
 * forgets such a choice. */
llm_status engine_step(engine *e, int *token, llm_err *err);

/* Speculative decoding (docs/speculative.md). A guesser proposes up to max tokens that
 * may follow tokens[0..n) (the sequence, the token just chosen included) into guess;
 * returns how many (0..max). user is engine_step_guessed's. */
typedef int (*engine_guesser)(void *user, const int *tokens, int n, int *guess, int max);
enum { ENGINE_GUESS_MAX = GUESS_LENGTH_MAX };

/* One step of speculative decoding: the next token x is chosen as engine_step chooses
 * it (or is the one an earlier call chose and did not run); guesser proposes up to
 * max_guess (at most ENGINE_GUESS_MAX, and what the context has room for; with
 * engine_options.guess_min >= 0, the number in [guess_min, max_guess] that pays) tokens
 * to follow x; x and the guesses run as one call of the transformer on the token kernels
 * (a matrix-vector product's bits for every position, so each position's numbers are
 * those one engine_step at a time would give, while the weights are read once for all
 * of them). Then each guess is checked in order by the sampler deciding its position
 * as engine_step would (same settings, same history, same draw from the RNG): a guess
 * the sampler picks stays in the sequence (phase GEN); at the first it does not pick,
 * the guesses from there on are forgotten and the sampler's pick is chosen as the
 * newest record's next but not run (the next engine_step or engine_step_guessed runs
 * it first, as it runs the token engine_step chose when the context was full). So the
 * sequence is token for token the one engine_step calls make with the same sampler
 * settings and seed, and every record is as they would have made it, plus `guessed`
 * and `guess` where a guess was checked. For a guess drawn with certainty (lookup, a
 * greedy draft) this is the standard accept/reject rule: accepted with probability
 * p(guess), the rest drawn from p without it. tokens (max_guess + 1) receives the ids
 * appended (x, then the accepted guesses), *n_appended how many; the observer sees
 * each finished record. Failures as engine_step's (LLM_ERR_CONTEXT when x does not
 * fit: x chosen, not run). guesser NULL or max_guess 0: engine_step. */
llm_status engine_step_guessed(engine *e, engine_guesser guesser, void *user, int max_guess,
                               int *tokens, int *n_appended, llm_err *err);

/* The guesses of the newest engine_step_guessed call that ran any, for a front end to
 * show: up to max of them into guess (for positions *pos + 1, *pos + 2, ...: *pos is
 * the position of the token they followed), *accepted how many the sampler picked (the
 * one after those, if any, it rejected; the rest were not checked). Returns how many
 * (0, *pos -1: none yet, or a rewind took away what they were checked against). */
int engine_last_guesses(const engine *e, int *pos, int *guess, int max, int *accepted);

/* How many guesses the newest engine_step_guessed call with a guesser asked for (after
 * engine_options.guess_min's choice and the context's room; 0 before any such call),
 * and the acceptance that choice assumed (0..1; the checks' so far, with a prior). */
int engine_guess_length(const engine *e, double *acceptance);

/* Like engine_step with the caller's token instead of a sampled one (phase FORCED). */
llm_status engine_force(engine *e, int token, llm_err *err);

/* Forgets positions pos..end (0 <= pos <= engine_pos) so that the next step samples
 * for pos again: from position pos-1's logits as they were (computed again from its
 * kept classifier input; the KV cache is left as it is), or, when the control vectors
 * or knock-outs changed since pos-1 ran, from pos-1 run again with the new ones (its
 * record then says so). */
llm_status engine_rewind(engine *e, int pos, llm_err *err);
/* Like engine_rewind, but position pos-1 keeps the cache and logits it ran with even
 * when the interventions changed since: for a caller that runs the positions from pos
 * with the interventions they first ran with (a branch read back as it ran). */
llm_status engine_rewind_as_ran(engine *e, int pos, llm_err *err);

/* Puts tokens[0..n) at positions pos.. in place of what the sequence holds from pos
 * on (a branch of a reply coming back): the KV cache before pos is kept and only the
 * new positions are computed, as one batch. When records is not NULL, records[0..n]
 * are saved copies of the records of positions pos-1 .. pos+n-1 (as engine_record
 * gave them when the branch was in the sequence) and the records take their content
 * back (phase, candidates, the sampler's decision, timings); each position runs on the
 * kernels and with the interventions its record names (so it gets the numbers it had;
 * pos-1 runs again with its record's when it ran with others since), the state in
 * force applying again after; attention rows and lenses are computed anew, as they
 * ran. Without records, or when one of them ran with a vector no longer loaded (its
 * numbers are gone: the positions run with the interventions in force), the new
 * positions are prompt positions, as after engine_prefill (pos-1 runs again too, as
 * engine_rewind runs it). The observer sees each finished record again. Requires
 * 1 <= pos <= engine_pos; fails with LLM_ERR_CONTEXT, changing nothing, when the
 * tokens do not fit. On other failures (non-finite logits, no memory) the sequence
 * ends at pos with no logits, as after a failed prefill. */
llm_status engine_restore(engine *e, int pos, const int *tokens, int n,
                          const step_record *records, llm_err *err);

/* The newest token, which the sampler chose, gives way to `token` (phase FORCED): the
 * position is run again with it, and the record before it keeps the sampler's decision
 * (sampled, sampler.chosen the id drawn, the candidates' fates) with next now `token`
 * (next_prob and next_rank token's). The chat closes a reply so when the model drew
 * BOS: the record says what the model chose and what took its place. Fails when the
 * newest token was not sampled. */
llm_status engine_replace_sampled(engine *e, int token, llm_err *err);

/* Ends a run: hands the newest record, still unfinished (next = -1), to the observer
 * so that a trace holds every processed position. Call once when nothing more will be
 * generated (end of generate, quitting a chat). */
void engine_finish(engine *e);

/* The control vectors (steering.h): load, rescale, drop them or set their layers
 * there; they apply from the next position run on (positions already run keep what
 * they were computed with). Owned by the engine. */
steering *engine_steering(engine *e);
/* steering_state of it: what the next position will run with (NULL: nothing ever set). */
const intervention *engine_intervention(const engine *e);

/* The what-if of position pos (0 <= pos < engine_pos) with the heads knocked out now
 * (steering_mask): pos run again with and without them, leaving the KV cache as it
 * was, as the lens does. NULL with err when no head is out (nothing to compare) or on
 * failure. Kept until the knock-outs or the sequence change; borrowed. */
const step_whatif *engine_whatif(engine *e, int pos, llm_err *err);

/* Direct logit attribution (step_attribution, attribution.h) of token's logit at
 * position pos (0 <= pos < engine_pos): pos run again with the vectors and knock-outs
 * in force now, leaving the KV cache as it was (as the lens does), its components
 * projected onto token's classifier row through the final norm. Another token at the
 * same position reuses the pass. Kept until the next call with another position or
 * token, a change of the steering state, a rewind to pos or earlier, or engine_free;
 * borrowed. NULL with err on failure (no memory, bad position or token). */
const step_attribution *engine_attribution(engine *e, int pos, int token, llm_err *err);

/* Timings of the most recent prefill batch and of decoding so far (tokens/second). */
typedef struct {
    int prefill_tokens;       /* tokens in the last prefill */
    double prefill_ms;        /* its wall time */
    long long decode_tokens;  /* tokens generated or forced since engine_new */
    double decode_ms;         /* their total forward + sampling time */
    long long guessed;        /* guesses engine_step_guessed ran */
    long long accepted;       /* ... of which the sampler picked */
    long long guess_rounds;   /* its calls that ran guesses */
    long long spec_calls;     /* engine_step_guessed's calls with a guesser that appended ... */
    long long spec_tokens;    /* ... these tokens ... */
    double spec_ms;           /* ... and its wall time, the guesser's included */
    long long single_tokens;  /* tokens sampled and run one at a time (engine_step, or
                                 engine_step_guessed when no guess ran) ... */
    double single_ms;         /* ... and those calls' wall time: what a token costs
                                 plainly */
} engine_stats;
const engine_stats *engine_get_stats(const engine *e);

#endif
