/* attention_pane.h — the Attention pane: a heatmap of one layer's attention weights
 * (one head or the mean of the heads), ending at the selected position, and the other
 * views of that position 'v' steps through (logit lens, heads, direct logit
 * attribution: attention_views.h, a table of them).
 *
 * Its own state is the view shown, the cursor and settings the views share (layer,
 * head, mean, scale, BOS mask, the attribution's target) and whether the engine
 * captures attention ('c'); it shares the selected position with Tokens
 * (selection.h). */
#ifndef LLMCHAT_TUI_ATTENTION_PANE_H
#define LLMCHAT_TUI_ATTENTION_PANE_H

#include "source.h"
#include "view_ops.h"
#include "selection.h"

typedef struct attn_pane attn_pane;

extern const view_ops attn_pane_ops;

/* A pane over src's captured attention at sel; 'c' turns a live engine's capture off
 * and on. Exits through tui_die when out of memory. */
attn_pane *attn_new(const tui_source *src, tui_selection *sel);
void attn_free(attn_pane *ap);
/* The layer and head of the pane's cursor (from 0); true when the view shown has a head
 * cursor (the heads views, the attribution: attention_views.h), false otherwise. */
bool attn_head_cursor(const attn_pane *ap, int *layer, int *head);

#endif
