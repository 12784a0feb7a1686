/* chat_internal.h — the dialog's state, shared by chat.c (the dialog) and
 * chat_save.c (its saving and restoring); nothing else includes it. */
#ifndef LLMCHAT_CHAT_INTERNAL_H
#define LLMCHAT_CHAT_INTERNAL_H

#include "branch.h"
#include "chat.h"
#include "ran_with.h"

typedef struct {
    chat_turn view;    /* positions and flags; view.user / view.reply point at the texts below */
    char *user;
    char *reply;       /* NUL-terminated */
    size_t reply_len, reply_cap;
    int *restored;     /* (n_restored) reply ids to prefill instead of the engine's; set
                          by chat_restore, or by a re-reading of the context that did
                          not finish, until a prefill of them succeeds */
    int n_restored;
    ran_with ran;      /* the interventions its positions ran with, while they are not
                          the engine's records': set by chat_restore (the file's, or the
                          state the file set) and by a re-reading of the context, until
                          its prefill succeeds */
    reply_branches br; /* the reply's other branches (branch.h) */
} turn;

struct chat {
    engine *e;
    const tokenizer *tok;
    const chat_template *tmpl; /* how turns are rendered, and which tokens end a reply */
    chat_template *own_tmpl;   /* the default (llama2) template, when none was given */
    char *system;        /* "" for none */
    bool no_think;       /* turns rendered from now on ask for no thinking (qwen3; from the
                            start where the template does not think by default: gemma4) */
    bool system_stale;   /* the history must be prefilled again: the system prompt
                            changed, or its last re-reading stopped or failed */
    turn *turns;         /* (n_turns) the whole dialog, oldest first */
    int n_turns, cap_turns;
    int first;           /* turns[first..n_turns) are in the context; older ones were
                            dropped (positions -1) */
    bool replying;
    int max_reply;       /* 0 = until EOS */
    int reply_tokens;    /* tokens generated in the open reply */
    engine_guesser guesser; /* speculative decoding for replies (chat_set_guesser), or NULL */
    void *guesser_user;
    int max_guess;
    char text[TOKENIZER_PIECE_MAX + 1]; /* bytes of the last token (returned by chat_step) */
    char notice[512];
    bool has_notice;
};

/* Takes a turn out of the context: its texts stay, its positions go. */
void chat_drop_turn(turn *t);

/* Turn t's interventions by segment (ran_with.h) into out (emptied first): those it
 * holds, else those its positions ran with in the engine. False on no memory. */
bool chat_turn_ran_with(const chat *c, const turn *t, ran_with *out);

/* Adds a line to what chat_take_notice gives next ("; " after what it holds). */
void chat_add_notice(chat *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Drops the `drop` oldest turns in the context and re-prefills the rest from
 * position 0, the first with the system prompt, each position with the interventions
 * it ran with (the state in force is set back after; a state that cannot be set
 * again is said, and its positions read with the state in force). */
llm_status chat_rebuild(chat *c, int drop, llm_err *err);

/* The fewest of the oldest turns in the context to drop so that the rest, rebuilt,
 * takes at most room tokens (all of them when none fits). */
int chat_drop_to_fit(const chat *c, long room);

#endif
