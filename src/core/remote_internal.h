/* remote_internal.h — what the files of the remote client share beyond remote.h
 * (remote_score.c): a JSON request on the connection, the reading of one token object,
 * a token's text as a piece. Not for the front ends. */
#ifndef LLMCHAT_REMOTE_INTERNAL_H
#define LLMCHAT_REMOTE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "remote.h"

/* POSTs body to the server's path; the answer parsed into *out (the caller frees it).
 * Fails with one line as every request of remote.c does (an error status with the
 * server's message, an answer that is not JSON, the connection). */
llm_status remote_post_json(remote *r, const char *path, const char *body, json_value **out,
                            llm_err *err);

/* Whether the connection's cancel flag (http_options.cancelled) is up. */
bool remote_cancelled(const remote *r);

/* One token object as llama-server writes it ({id, token, bytes, logprob, top_logprobs})
 * into *t; false when it has neither id nor text. */
bool remote_token_object(const json_value *o, remote_token *t);

/* Whether t's logprobs are ones a probability has: each finite and at most 0 (a
 * thousandth over allowed for rounding) or absent (NaN). False with why (the token
 * and the number) when one is not: an answer that holds one is malformed. */
bool remote_token_logprobs_ok(const remote_token *t, char *why, size_t size);

/* A token's text as its piece ("token_id:N" names no bytes: ""). */
void remote_piece_of_text(const char *text, char *piece, size_t *len);

/* "token_id:123" (vLLM's return_tokens_as_token_ids) to 123, else -1. */
int remote_id_of_text(const char *text);

#endif
