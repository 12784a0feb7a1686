/* remote_score.h — a given token sequence scored by a served model (remote.h): at each
 * position, the log-probability of the sequence's token after the ones before it and
 * the server's most probable alternatives there. What perplexity over a server and a
 * trace compared with a server need.
 *
 * llama-server gives no log-probabilities of a prompt's tokens, so each position is one
 * request: the tokens before it as the prompt, one token to generate, and a logit bias
 * of +1000 on the sequence's token so that it is the one chosen. llama-server computes
 * the log-probabilities it returns from the logits before the bias (its
 * get_token_probabilities reads the raw logits), so the answer is the unforced
 * distribution. The prompt cache is on: each request computes one new token (the
 * reuse moves log-probabilities by about 1e-6, docs/remote.md). vLLM gives them for a
 * whole prompt in one request (prompt_logprobs). ollama and other OpenAI-compatible
 * servers give none: remote_score fails (LLM_ERR_ARG). */
#ifndef LLMCHAT_REMOTE_SCORE_H
#define LLMCHAT_REMOTE_SCORE_H

#include <stdbool.h>
#include <stddef.h>

#include "remote.h"

/* Gets position pos's token as the server scored it: t->id is ids[pos], t->logprob its
 * log-probability given ids[0..pos), t->top the server's alternatives there (most
 * probable first). False stops the scoring (remote_score then fails with
 * LLM_ERR_STOPPED). */
typedef bool (*remote_score_fn)(void *user, int pos, const remote_token *t);

/* Scores ids[from..n) (1 <= from <= n), in order, each with top_n alternatives
 * (1..STEP_TOP_MAX; vLLM caps it at 20). Fails with one line when the server gives no
 * prompt log-probabilities (LLM_ERR_ARG), on a failed request or an answer that does
 * not score the sequence's token, and with LLM_ERR_STOPPED when fn says stop or the
 * connection's cancel flag is up (positions delivered stay delivered). */
llm_status remote_score(remote *r, const int *ids, int n, int from, int top_n, remote_score_fn fn,
                        void *user, llm_err *err);

/* Whether the server can score (llama-server; vLLM); when not, why in one line. */
bool remote_score_supported(const remote *r, llm_err *why);

/* The readers of the answers, for the tests: llama-server's POST /completion answer
 * (stream false) that forced token want, into *t; vLLM's POST /v1/completions answer
 * with prompt_logprobs for the prompt ids[0..n), positions from..n-1 delivered to fn
 * with top_n alternatives. */
llm_status remote_score_read_llama(const char *body, size_t len, int want, remote_token *t,
                                   llm_err *err);
llm_status remote_score_read_vllm(const char *body, size_t len, const int *ids, int n, int from,
                                  int top_n, remote_score_fn fn, void *user, llm_err *err);

#endif
