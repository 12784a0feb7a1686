/* attention_pane.h — the Attention pane: a heatmap of one layer's attention weights
 * (one head or the mean of the heads), ending at the selected position, and the other
 * views of that position 'v' steps through (logit lens, heads, direct logit
 * attribution).
 *
 * Its own state is the view (layer, head, mean, scale, BOS mask, the attribution's
 * target) and whether the engine captures attention ('c'); it shares the selected
 * position with Tokens (selection.h). */
#ifndef LLMCHAT_TUI_ATTENTION_PANE_H
#define LLMCHAT_TUI_ATTENTION_PANE_H

#include "source.h"
#include "pane.h"
#include "selection.h"

typedef struct attn_pane attn_pane;

extern const pane_ops attn_pane_ops;

/* A pane over src's captured attention at sel; 'c' turns a live engine's capture off
 * and on. Exits through tui_die when out of memory. */
attn_pane *attn_new(const tui_source *src, tui_selection *sel);
void attn_free(attn_pane *ap);
/* The layer and head under the cursor of the heads and attribution views (from 0);
 * false in the other views. */
bool attn_head_cursor(const attn_pane *ap, int *layer, int *head);

#endif
