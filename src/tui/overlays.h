/* overlays.h — what opens over the panes, in one table (overlays.c: a row per overlay,
 * its view_ops and the action that opens it), and the stack of those open: the top one
 * is drawn last (tui.c) and handed every key first (actions.c).
 *
 * A new overlay is a file with its view_ops (view_ops.h: place, size, keys context,
 * draw, act, why_not, its state) and a row in overlays.c's table.
 *
 * Owns each overlay's state (made by its new when the TUI starts, freed at the end)
 * and the stack's order; knows nothing of the screen's windows. */
#ifndef LLMCHAT_TUI_OVERLAYS_H
#define LLMCHAT_TUI_OVERLAYS_H

#include <stdbool.h>

#include "keys.h"
#include "view_ops.h"

/* A row of the table: an overlay and the key action that opens it. */
typedef struct {
    const view_ops *ops;
    key_action opens;
    const char *command; /* the slash command that opens it too ("experts"), or NULL */
} overlay_row;

/* The table; *n receives its length. */
const overlay_row *overlays_table(int *n);

typedef struct overlay_stack overlay_stack;

/* Every overlay's state made with env, none open. Exits through tui_die when out of
 * memory. */
overlay_stack *overlays_new(const view_env *env);
void overlays_free(overlay_stack *s);

/* The overlay action a opens, NULL when it opens none. */
const view_ops *overlays_opened_by(key_action a);
/* The action that opens the overlay of slash command name, ACT_NONE when none does. */
key_action overlays_command(const char *name);
/* Why the overlay a opens cannot open now (its why_closed), NULL when it can. */
const char *overlays_why_closed(const overlay_stack *s, key_action a);
/* Puts the overlay a opens on top of the stack (from where it was, if it was open),
 * started over (its open). */
void overlays_push(overlay_stack *s, key_action a);
/* Takes the top one off the stack. */
void overlays_pop(overlay_stack *s);
/* How many are open. */
int overlays_count(const overlay_stack *s);
/* The i-th open one from the bottom (0); the top is overlays_count - 1. */
view_handle overlays_at(const overlay_stack *s, int i);

#endif
