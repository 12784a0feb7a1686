/* chat.h — the dialog state on top of an engine, in a chat template (template.h).
 *
 * The default template is Llama 2's (docs/formats.md, "The chat template"): the first
 * turn is
 *     BOS "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]"
 * (BOS "[INST] {user} [/INST]" without a system prompt); later turns are
 * BOS "[INST] {user} [/INST]". Others (mistral, zephyr, chatml) come with
 * chat_new_template. User text is tokenized as text, so it never yields a control
 * token. A reply runs until one of the template's stop tokens (EOS; <|im_end|> for
 * chatml), which is run through the model so it sits in the KV cache; a reply cut
 * short (step limit, user) is closed with the template's end token. History is never re-processed while it fits; when a new turn
 * would not fit, the oldest turns are dropped (the system prompt is kept), the rest
 * re-prefilled, and chat_take_notice() says so.
 *
 * The chat owns the turns' texts; it borrows the engine and tokenizer. */
#ifndef LLMCHAT_CHAT_H
#define LLMCHAT_CHAT_H

#include <stdbool.h>
#include <stdio.h>

#include "engine.h"
#include "status.h"
#include "template.h"
#include "tokenizer.h"

/* Renders one Llama 2 turn's template text (without BOS). system may be NULL or "" for
 * none; pass it only for the first turn. Returns a malloc'd string (NULL on no memory). */
char *chat_template_text(const char *system, const char *user);

/* Tokenizes one Llama 2 turn: BOS followed by the template text's tokens. Returns the
 * number of ids needed (may exceed max, as tokenizer_encode), or -1 on no memory. */
int chat_template_tokens(const tokenizer *tok, const char *system, const char *user,
                         int *ids, int max);

typedef struct chat chat;

typedef struct {
    const char *user;   /* the user's text (owned by the chat) */
    const char *reply;  /* the assistant's text so far (owned by the chat) */
    int start;          /* position of the turn's first token (BOS in Llama 2) */
    int reply_start;    /* position of the first reply token (the [/INST] end + 1) */
    int end;            /* one past the last position of the turn (after its end token) */
    bool complete;      /* the reply was closed with a stop token (EOS, <|im_end|>) */
    bool cut;           /* the reply was cut short (step limit, user stop, context) */
    bool think_opened;  /* the turn's template opened the reply's thinking span in the
                           prompt (qwen35): the reply starts inside it (think_find_in) */
} chat_turn;

typedef enum {
    CHAT_GENERATING = 0, /* chat_step produced a token; call again */
    CHAT_REPLY_DONE,     /* the model ended the reply with a stop token (EOS, ...) */
    CHAT_REPLY_LIMIT,    /* the step limit was reached; the reply was closed */
    CHAT_REPLY_FULL,     /* the context is full; the reply was closed */
    CHAT_REPLY_ERROR,    /* the engine failed (err says why, e.g. non-finite logits) */
} chat_progress;

/* A chat in the Llama 2 template. */
llm_status chat_new(engine *e, const char *system, chat **out, llm_err *err);
/* A chat in template tmpl (borrowed: it must outlive the chat; NULL: Llama 2's). */
llm_status chat_new_template(engine *e, const chat_template *tmpl, const char *system, chat **out,
                             llm_err *err);
/* The chat's template (its name for the status line and the trace: template_name). */
const chat_template *chat_get_template(const chat *c);

/* Thinking on or off for the turns sent from now on, in a template with the switch
 * (qwen3: off renders Qwen3's enable_thinking=false, an empty <think></think> span
 * after the assistant's header). On by default. False, changing nothing, when the
 * template has no switch. A rebuilt context renders its kept turns with the current
 * setting. */
bool chat_set_thinking(chat *c, bool on);
/* Whether the next turn asks for thinking (false for templates without the switch). */
bool chat_thinking(const chat *c);
void chat_free(chat *c); /* NULL does nothing */

/* Sets the system prompt (NULL or "" for none). The history is kept and re-read with
 * the new prompt on the next turn. */
llm_status chat_set_system(chat *c, const char *system, llm_err *err);
const char *chat_system(const chat *c);

/* Forgets every turn and empties the engine's sequence (the system prompt stays). */
void chat_reset(chat *c);

/* Starts a turn: renders and prefills the template for user text. max_reply is the
 * most tokens the reply may take (0 = until EOS or the context's end); it is also
 * the room kept free when deciding whether old turns must be dropped. */
llm_status chat_begin(chat *c, const char *user, int max_reply, llm_err *err);

/* Generates one reply token. *token receives it (EOS included) and *text, when not
 * NULL, the bytes it adds to the reply (borrowed, valid until the next call). */
chat_progress chat_step(chat *c, int *token, const char **text, llm_err *err);

/* Speculative decoding for the replies from now on (docs/speculative.md): each
 * chat_step_run runs the next token and up to max_guess of guesser's guesses as one
 * call of the model (engine_step_guessed), the sampler checking them, so that a step
 * may add several tokens; the reply is token for token the one plain steps make.
 * guesser NULL or max_guess 0: plain steps. user is the guesser's (borrowed). */
void chat_set_guesser(chat *c, engine_guesser guesser, void *user, int max_guess);

/* What one chat_step_run added to the reply. */
typedef struct {
    int n;          /* tokens added (the closing stop token included); 0 when the reply
                       ended without a new one (step limit, full context) */
    int first;      /* the position of the first */
    int tokens[ENGINE_GUESS_MAX + 1];
    size_t offset[ENGINE_GUESS_MAX + 2]; /* token i's bytes: text[offset[i] .. offset[i + 1]) */
    char text[(ENGINE_GUESS_MAX + 1) * TOKENIZER_PIECE_MAX + 1]; /* the bytes they add */
} chat_run;

/* One call of the model for the open reply: chat_step's token, or with a guesser
 * (chat_set_guesser) that token and the guesses the sampler accepted after it. Stops
 * where chat_step would: no guess is asked for past a stop token or BOS, the first
 * stop token closes the reply, BOS ends it as in chat_step, and the reply never exceeds
 * its step limit (fewer guesses are asked for near it). */
chat_progress chat_step_run(chat *c, chat_run *run, llm_err *err);

/* Appends the caller's token to the open reply instead of a sampled one (the step's
 * phase is FORCED) and runs it, like chat_step; *progress says what followed (a forced
 * EOS closes the reply). Fails with LLM_ERR_ARG, changing nothing, when no reply is
 * open or the id is outside the vocabulary or BOS. Ignores the reply's step limit. */
llm_status chat_force(chat *c, int token, chat_progress *progress, const char **text, llm_err *err);

/* Takes the newest turn's reply back to position pos (its reply_start up to
 * chat_reply_limit): the tokens from pos on are forgotten, the reply text shortened
 * to match, and the reply is open again (a closing EOS goes too), so that chat_step
 * or chat_force continue it from pos. Fails with LLM_ERR_ARG, changing nothing, for a
 * position outside the reply. */
llm_status chat_rewind(chat *c, int pos, llm_err *err);

/* One past the newest turn's last reply token, not counting a closing EOS (the
 * furthest chat_rewind may go); -1 with no turn. */
int chat_reply_limit(const chat *c);

/* Stops the current reply: closes it with a forced EOS. Nothing when idle. */
llm_status chat_stop(chat *c, llm_err *err);

/* Stops the current reply with its tokens from pos on forgotten, as if never made: no
 * branch keeps them (a front end drops the token a step made after the user asked to
 * stop, which nobody saw). Then closes it as chat_stop does. Fails with LLM_ERR_ARG,
 * changing nothing, for a position outside the open reply (reply_start .. its end);
 * nothing when idle. */
llm_status chat_stop_at(chat *c, int pos, llm_err *err);

bool chat_replying(const chat *c);     /* a turn is open and its reply not closed */
int chat_turn_count(const chat *c);
const chat_turn *chat_get_turn(const chat *c, int i);
/* Where each token of turn i's reply (in the context) starts in its text: for the reply
 * tokens that added bytes, in order, the position (pos) and the byte offset in
 * chat_get_turn(c, i)->reply (offset); at most max written. Returns how many there are:
 * 0 for a turn out of range. */
int chat_reply_spans(const chat *c, int i, int *pos, size_t *offset, int max);
/* The same for turn i's message (chat_get_turn(c, i)->user): the prompt tokens whose
 * text falls inside it, found in the turn's prompt decoded, their offsets clamped to
 * its start (the first token may begin with the template's space). 0 when the message
 * cannot be found there (nothing is coloured then). */
int chat_message_spans(const chat *c, int i, int *pos, size_t *offset, int max);

/* What /patch compares: the newest turn's prompt as the model read it (the context from
 * its start to the assistant's first token; *clean, *n_clean) and the same with that
 * turn's message replaced by user (the template rendered alike; *corrupt, *n_corrupt).
 * Two malloc'd arrays, which may differ in length. Fails (LLM_ERR_ARG) with no turn in
 * the context or an empty user; LLM_ERR_NOMEM. */
llm_status chat_patch_prompts(const chat *c, const char *user, int **clean, int *n_clean,
                              int **corrupt, int *n_corrupt, llm_err *err);

/* A message for the user produced by the last call (e.g. "context full: dropped the
 * 2 oldest turns"), or NULL. Returns it once, then NULL. */
const char *chat_take_notice(chat *c);

/* Turns dropped from the context to make room (oldest first): their texts and flags
 * stay, their positions are -1. chat_get_turn counts only the turns in the context. */
int chat_dropped_count(const chat *c);
const chat_turn *chat_get_dropped(const chat *c, int i);

/* ---- branches (branch.h) ----
 * A rewind or a forced token that takes a reply away from what it was keeps the old
 * continuation as a branch: each reply is a tree of branches, one of them in the
 * context. Turns are counted as chat_get_turn's. */

/* How many branches turn i's reply has (1 when it never diverged; 0 for a bad i), and
 * the index (0-based) of the one in the context. */
int chat_branch_count(const chat *c, int i);
int chat_branch_current(const chat *c, int i);

typedef struct {
    const int *tokens; /* (n_tokens) the reply's ids from its first, a closing stop included */
    int n_tokens;
    const char *text;  /* the reply's text */
    int fork;          /* the position where it departs from the reply in the context (the
                          first token that differs, or where the shorter ends); -1 for the
                          reply in the context */
    bool complete;     /* closed with a stop token */
    bool open;         /* still open (paused): chat_step would continue it */
} chat_branch_view;

/* Branch k of turn i's reply; false when there is none. Borrowed until the next call
 * that changes the chat. */
bool chat_branch_get(const chat *c, int i, int k, chat_branch_view *out);

/* Puts branch k of the newest reply in the context, and keeps the reply that was
 * there as a branch. Only the positions from the fork on are computed again (the KV
 * cache before it is kept); the branch's step records come back as they were (a
 * branch read from a saved chat has none: its positions come back as prompt
 * positions). The reply's text, end and state are the branch's: an open branch is
 * open again (chat_step continues it). Fails with LLM_ERR_ARG, changing nothing, for
 * a k out of range; on an engine failure the reply stays as it was. */
llm_status chat_branch_switch(chat *c, int k, llm_err *err);

/* ---- saving and restoring (the format: chatfile.h) ---- */
struct chatfile;
/* Fills cf (initialised here; the caller clears it) with the whole dialog: system
 * prompt, every turn (dropped ones too) with its reply ids, the engine's sampler
 * settings and context, the model's path, the last step limit. A reply still open is
 * saved as it stands (neither complete nor cut). */
llm_status chat_to_file(const chat *c, struct chatfile *cf, llm_err *err);
/* Adds to cf, filled by chat_to_file, every reply's other branches (/save --all,
 * autosave): what chat_restore gives back as branches. */
llm_status chat_branches_to_file(const chat *c, struct chatfile *cf, llm_err *err);
/* chat_to_file, then chatfile_write: an atomic write of the saved-chat file. */
llm_status chat_save(const chat *c, const char *path, llm_err *err);
/* Replaces the dialog with cf's: system prompt and turns, the kept ones re-prefilled
 * into the engine. With the vocabulary the file names (its size and fingerprint), each
 * reply comes back as its saved ids and the token that closed it (EOS, <|eot_id|>,
 * <|im_start|>, ...; nothing for a reply that ran into the end of the context), so that
 * the context is token for token the one saved; with another, the reply text is
 * tokenized and closed with the template's end token. A reply that was open comes back
 * closed with the end token (cut). Turns the file marks out of the context stay out; when the rest
 * does not fit this engine's context, the oldest are dropped too and
 * chat_take_notice() says so. Does not change the engine's sampler settings. On
 * failure the chat is empty. */
llm_status chat_restore(chat *c, const struct chatfile *cf, llm_err *err);

#endif
