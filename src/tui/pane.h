/* pane.h — what a bordered pane is to the main loop (as tig's view_ops): a title, the
 * key-table context of its bindings, and its draw and action functions over its own
 * state.
 *
 * Conversation (conversation.c), Tokens (tokens_pane.c) and Attention
 * (attention_pane.c) each keep their state in their own struct, which only their file
 * writes; tui.c holds one tui_pane per pane, gives it a window and the focus, and
 * sends it the actions of its bindings. */
#ifndef LLMCHAT_TUI_PANE_H
#define LLMCHAT_TUI_PANE_H

#include <stdbool.h>

#include "draw.h"
#include "keys.h"

typedef struct {
    const char *title;
    keys_context keys; /* where its bindings are in the key table */
    /* Draws the pane's state into w (bordered, focused: the border stands out). */
    void (*draw)(void *state, WINDOW *w, const tui_screen *scr, bool focused);
    /* Runs one of its actions; false when a is not one of them. */
    bool (*act)(void *state, key_action a);
    /* Why action a would change nothing now, as the status line says it ("already at
     * the first position"); NULL when it would do something. May be NULL. */
    const char *(*why_not)(void *state, key_action a);
} pane_ops;

typedef struct {
    const pane_ops *ops;
    void *state; /* the pane's own struct */
} tui_pane;

#endif
