/* selection.h — the selected position, the one piece of state two panes share: Tokens
 * and Attention both show it and both move it (Left, Right, Shift: by 10, Home, End),
 * and steering ('r', the digits) acts at it.
 *
 * Owned by tui.c; the two panes hold a pointer to it. It either follows the newest
 * position (new tokens move it along) or stays where it was put. */
#ifndef LLMCHAT_TUI_SELECTION_H
#define LLMCHAT_TUI_SELECTION_H

#include <stdbool.h>

#include "source.h"
#include "keys.h"

typedef struct {
    int pos; /* the selected position; -1: follows the newest */
} tui_selection;

/* The selected position (the newest one while following), -1 when src has none. */
int selection_get(const tui_selection *s, const tui_source *src);

/* Selects pos; -1, or the newest position or beyond, follows the newest again. */
void selection_set(tui_selection *s, const tui_source *src, int pos);

/* Does the selection follow the newest position? */
bool selection_follows(const tui_selection *s, const tui_source *src);

/* Why selection action a would not move the selection ("already at the first
 * position"), or NULL when it would (or a is not a selection action). */
const char *selection_why_not(const tui_selection *s, const tui_source *src, key_action a);

/* Runs a selection action of the key table (ACT_SEL_*); false when a is not one. */
bool selection_act(tui_selection *s, const tui_source *src, key_action a);

#endif
