/* remote_chat.h — a dialog with a served model (remote.h), as the TUI shows it: the
 * turns, the token sequence the server ran and a step record per position.
 *
 * Each message renders the whole dialog with the server's chat template and tokenizes
 * it there (remote_render_chat), then streams the reply (remote_stream), polled
 * between the front end's keys. The positions the new prompt shares with the sequence
 * before keep their records (an earlier reply's candidates); the others are prompt
 * positions without candidates. Each reply token makes the record of the position
 * before it (remote_record: the server's top alternatives) and a new position.
 * Pieces come from the server (its tokenizer's and its tokens' bytes), kept by id.
 * ollama renders and tokenizes a dialog only inside a request (POST /api/chat) and
 * names tokens by their text, as an OpenAI-compatible server that does not tokenize
 * (not vLLM) does through POST /v1/chat/completions: there each message adds one
 * position that stands for
 * the whole dialog rendered (piece "<dialog>", id 0), and the reply's tokens get ids
 * of the chat's own, one per distinct text, as they come.
 * Borrows the connection; owns the texts, the sequence and the records. No printing. */
#ifndef LLMCHAT_REMOTE_CHAT_H
#define LLMCHAT_REMOTE_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "remote.h"
#include "sampler.h"
#include "status.h"
#include "step.h"

typedef struct remote_chat remote_chat;

typedef struct {
    const char *user;   /* the message */
    const char *reply;  /* the reply so far */
    int reply_start;    /* the position of the reply's first token */
    int end;            /* one past its last */
    bool complete;      /* the model ended it (EOS, a stop string) */
    bool cut;           /* stopped by the step limit, the user or a failure */
} remote_turn;

typedef enum {
    REMOTE_CHAT_GENERATING = 0, /* the reply goes on (tokens may have come) */
    REMOTE_CHAT_DONE,           /* it ended: the server stopped it */
    REMOTE_CHAT_ERROR,          /* it failed (err says why; the tokens before stay) */
} remote_chat_progress;

llm_status remote_chat_new(remote *r, const char *system, const sampler_config *s,
                           remote_chat **out, llm_err *err);
void remote_chat_free(remote_chat *c); /* NULL does nothing */

/* The system prompt (NULL: none); a change holds from the next message on. */
const char *remote_chat_system(const remote_chat *c);
llm_status remote_chat_set_system(remote_chat *c, const char *system, llm_err *err);
/* Forgets the dialog and the sequence (a reply being written is stopped first); the
 * system prompt and the sampler stay. */
void remote_chat_reset(remote_chat *c);
/* Appends a finished turn by its text only (a saved chat coming back): it has no
 * positions until the next message renders the dialog again, which holds it. */
llm_status remote_chat_add_turn(remote_chat *c, const char *user, const char *reply,
                                bool complete, bool cut, llm_err *err);

/* Called when a position's record is finished (its next token became known: a reply
 * token arrived, or the next message's prompt follows it), as an engine's observer
 * is; a position the dialog's new rendering changes is finished again. NULL: none. */
typedef void (*remote_chat_observer)(void *user, const step_record *rec);
void remote_chat_set_observer(remote_chat *c, remote_chat_observer fn, void *user);
/* Hands the newest record, still unfinished (next -1), to the observer: the chat is
 * over (as engine_finish). */
void remote_chat_finish(remote_chat *c);

void remote_chat_set_sampler(remote_chat *c, const sampler_config *s);
const sampler_config *remote_chat_sampler(const remote_chat *c);
remote *remote_chat_remote(const remote_chat *c);

/* Sends a message: renders and tokenizes the dialog with it on the server and opens the
 * reply's request (max_reply tokens at most; 0: until the model stops or the context
 * is full). Fails, adding no turn, when the server cannot render, tokenize or take
 * the request, or the prompt does not fit the server's context. */
llm_status remote_chat_begin(remote_chat *c, const char *user, int max_reply, llm_err *err);
/* Waits up to timeout_ms for the reply to go on; the tokens that came are in the
 * sequence (and *n_new says how many) when it returns. */
remote_chat_progress remote_chat_step(remote_chat *c, int timeout_ms, int *n_new, llm_err *err);
/* Steering the newest reply by hand: forgets it from position pos on (reply_start <=
 * pos <= its end; a reply being written is stopped first), puts the n_forced tokens
 * `forced` at pos on (phase FORCED: tokens the server named), and lets
 * the reply go on from there in a new request (the whole sequence as ids: llama-server's
 * prompt cache makes that cheap), max_reply tokens in all at most (0: until the model
 * stops or the context is full); max_new limits this request (0: no limit of its own;
 * n > 0: n tokens at most; -1: no request, the reply stays stopped at its new end). A
 * served reply keeps no branches: what was forgotten
 * is gone. Fails (LLM_ERR_ARG) for a server that takes no ids (ollama, an
 * OpenAI-compatible server's chat), a position outside the newest reply or a token the
 * server never named. */
llm_status remote_chat_resume_at(remote_chat *c, int pos, const int *forced, int n_forced,
                                 int max_reply, int max_new, llm_err *err);
/* /force TEXT: TEXT tokenized by the server (no BOS) and forced at the end of the
 * newest reply (a reply being written stops where it is), which then goes on as
 * remote_chat_resume_at says. */
llm_status remote_chat_force_text(remote_chat *c, const char *text, int max_reply, llm_err *err);
/* Stops the reply being written (the request cancelled; the turn is cut). */
void remote_chat_stop(remote_chat *c);
bool remote_chat_replying(const remote_chat *c);

int remote_chat_turn_count(const remote_chat *c);
const remote_turn *remote_chat_turn(const remote_chat *c, int i);
/* Where each reply token's text starts in turn i's reply: pos and byte offset, at most
 * max; returns the count (as chat_reply_spans). */
int remote_chat_reply_spans(const remote_chat *c, int i, int *pos, size_t *off, int max);

int remote_chat_count(const remote_chat *c);          /* positions */
const int *remote_chat_tokens(const remote_chat *c);   /* (count) their ids */
const step_record *remote_chat_record(const remote_chat *c, int pos); /* NULL out of range */
/* The text of token id as the server gave it; NULL when it never did. */
const char *remote_chat_piece(const remote_chat *c, int id);

#endif
