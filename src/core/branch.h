/* branch.h — the branches of one reply: the continuations it had before a rewind or a
 * forced token took it elsewhere, kept so that the user can go back to them.
 *
 * A reply's branches are whole replies (their tokens from the reply's first, their
 * text, the step records that made them); two branches share the tokens before the
 * position where they fork. One of them is in the context: its tokens and records
 * live in the engine, its text in the chat's turn, and its slot here is empty.
 *
 * A rewind does not make a branch at once: the continuation it cuts off is stashed,
 * and becomes a branch only when the reply diverges from it (a token differs, or the
 * reply is left shorter when the next turn starts). A reply that grows back into the
 * stashed continuation token for token forgets the stash: nothing diverged. While a
 * stash is pending it counts as a branch (the one before the reply in the context).
 *
 * Pure bookkeeping: this module owns the stored branches and knows nothing of the
 * engine; chat.c snapshots the reply into a branch and moves the engine between them
 * (chat_branch_switch). */
#ifndef LLMCHAT_BRANCH_H
#define LLMCHAT_BRANCH_H

#include <stdbool.h>

#include "ran_with.h"
#include "status.h"
#include "step.h"

typedef struct {
    int *tokens;          /* (n_tokens) the reply's ids from its first, a closing stop
                             token included */
    int n_tokens;
    step_record *records; /* (n_tokens + 1) the records of positions reply_start - 1 ..
                             reply_start + n_tokens - 1 (attn and lens NULL), or NULL when
                             not known (a branch read from a saved chat) */
    ran_with ran;         /* a branch read from a saved chat (records NULL): the
                             interventions its positions ran with, by segment from the
                             reply's first token (ran_with.h); none: those in force */
    char *text;           /* the reply's text (owned) */
    bool open;            /* the reply was paused, not closed with a stop token */
    bool complete;        /* closed with a stop token */
    bool cut;             /* stopped short (step limit, user, context) */
} reply_branch;

typedef struct {
    reply_branch *slot;   /* (n) every branch in order of creation; slot[cur] is the one
                             in the context, kept empty */
    int n;                /* 0 while the reply never diverged (a single branch) */
    int cur;
    reply_branch stash;   /* the continuation the last rewind cut off (when stashed) */
    bool stashed;
} reply_branches;

void branch_free(reply_branch *b);        /* frees what b owns and empties it */
void branches_free(reply_branches *bs);   /* every branch and the stash */

/* The number of branches (1 for a reply that never diverged; a pending stash counts)
 * and the index of the one in the context (0-based). */
int branches_count(const reply_branches *bs);
int branches_current(const reply_branches *bs);
/* Branch i as stored, or NULL for the one in the context (and i out of range). */
const reply_branch *branches_get(const reply_branches *bs, int i);

/* Takes snap (moved in: the caller's copy is emptied) as the stash, unless one is
 * pending already (that one is the longer continuation: snap is freed). */
void branches_stash(reply_branches *bs, reply_branch *snap);

/* The reply in the context now has live_len tokens, the newest token `tok`: when it
 * differs from the stash at that index the stash becomes a branch; when the reply
 * grew past the stash or matches it whole, the stash is forgotten. */
llm_status branches_note_token(reply_branches *bs, int live_len, int tok, llm_err *err);

/* Turns a pending stash into a branch (the reply in the context becomes the newest
 * branch). On no memory the stash is lost and LLM_ERR_NOMEM returned. */
llm_status branches_settle(reply_branches *bs, llm_err *err);

/* Exchanges the reply in the context with branch i (settled, i != current): *live
 * (moved in) is stored in the current slot, branch i is moved out into *out, and i
 * becomes current. */
void branches_swap(reply_branches *bs, int i, reply_branch *live, reply_branch *out);

/* Stores a branch read from a file: appends *b (moved in) to the slots; `current`
 * appends the empty slot of the reply in the context instead (b is ignored). */
llm_status branches_append(reply_branches *bs, reply_branch *b, bool current, llm_err *err);

/* Tokens a and b have in common from their first (where two branches fork). */
int branch_common_prefix(const int *a, int na, const int *b, int nb);

#endif
