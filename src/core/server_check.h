/* server_check.h — a local model's positions checked against a served model as a chat
 * goes (the TUI with --compare-server URL): is the local copy the model the server
 * runs, on the text this chat wrote?
 *
 * A reply that ended is queued; each server_check_step scores the next queued positions
 * on the server (remote_score.h: llama-server one request a position, vLLM the rest of
 * the reply at once) and compares the server's distribution there with the one the
 * local engine computed (engine_logits_of, remote_compare.h: KL(server || local) over
 * the server's top k and the rest, top-1 agreement, the largest difference). A front end
 * calls it between keys, so a long reply is checked without freezing the screen. A
 * rewind forgets the positions it removes. Borrows the connection and the engine; no
 * printing. */
#ifndef LLMCHAT_SERVER_CHECK_H
#define LLMCHAT_SERVER_CHECK_H

#include <stdbool.h>

#include "engine.h"
#include "remote.h"
#include "remote_compare.h"
#include "status.h"

typedef struct server_check server_check;

/* Fails (one line, LLM_ERR_ARG) when the server cannot score a given text (ollama,
 * OpenAI-compatible servers other than vLLM) or its vocabulary is not the local
 * model's size. */
llm_status server_check_new(remote *r, const engine *e, server_check **out, llm_err *err);
void server_check_free(server_check *c); /* NULL does nothing */

/* Queues the predictions of positions from..to-1 of the engine's sequence (the token
 * at each such position, predicted from the ones before it; from >= 1). A range
 * already queued or checked is not checked again. */
void server_check_queue(server_check *c, int from, int to);
/* Positions queued and not checked yet. */
int server_check_pending(const server_check *c);
/* Checks the next queued positions (one request). Fails with one line when the
 * server does (the queue is dropped: a failing server is not asked again for it). */
llm_status server_check_step(server_check *c, engine *e, llm_err *err);
/* Forgets what it knows from position pos on (the engine rewound there). */
void server_check_forget(server_check *c, int pos);

/* The comparison of the prediction of position pos's token (made at pos - 1), NULL
 * when it was not checked. Its pos field is pos - 1, as remote_compare names it. */
const remote_comparison *server_check_at(const server_check *c, int pos);

typedef struct {
    int checked;         /* predictions compared in the range */
    int top1_agree;
    double kl_mean, kl_max;
    int kl_max_pos;      /* the position whose prediction had the largest KL (-1: none) */
} server_check_summary;
void server_check_summarize(const server_check *c, int from, int to, server_check_summary *out);

#endif
