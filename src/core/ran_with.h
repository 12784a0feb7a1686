/* ran_with.h — the interventions (intervention.h) a turn's positions ran with, as
 * segments numbered from the turn's reply: position `from` of the first segment is
 * the reply's first token when 0, the prompt's last when -1. Numbered so, a turn keeps
 * its segments when it is rendered again with more tokens before it (the system
 * prompt, once the turns before it have left the context): the first segment covers
 * every position before its own `from` as well.
 *
 * A saved chat holds them for a turn that did not run wholly with the interventions in
 * force at the save (chatfile.h, "ran_with"), and the chat reads such a turn back with
 * them (chat_rebuild), so that a loaded or re-read context is the one that ran. */
#ifndef LLMCHAT_RAN_WITH_H
#define LLMCHAT_RAN_WITH_H

#include <stdbool.h>

#include "intervention.h"

typedef struct {
    int from;           /* first position, from the reply's first (negative: the prompt) */
    intervention *in;   /* NULL: none (owned: one block, intervention_copy) */
} ran_segment;

typedef struct {
    ran_segment *seg;   /* (n) by from, ascending; none: not known */
    int n;
} ran_with;

/* Frees what r holds and empties it. */
void ran_with_clear(ran_with *r);

/* Appends a segment from `from` (above the last one's) running with a copy of in
 * (NULL or empty: none); nothing when in is the same as the last segment's
 * (intervention_same). False on no memory. */
bool ran_with_add(ran_with *r, int from, const intervention *in);

/* The interventions position `from` ran with (NULL: none); r must hold a segment. */
const intervention *ran_with_at(const ran_with *r, int from);

/* Whether r holds a segment whose interventions are not the same as in's. */
bool ran_with_differs(const ran_with *r, const intervention *in);

/* dst (emptied first) as a copy of src. False on no memory (dst then empty). */
bool ran_with_copy(ran_with *dst, const ran_with *src);

#endif
