/* attribution_view.h — the Attention pane's direct logit attribution view: for the
 * selected position and a target token, what each head (a grid of layers by heads),
 * each layer's MLP (a column), the embedding (a row) and the control vectors wrote
 * toward the target's logit, shaded by sign and size, then the largest of them listed.
 *
 * Draws only: the pane (attention_pane.c) owns the cursor and which target is shown;
 * the engine computes the attribution when it is drawn (source_attribution), a trace
 * cannot (it holds no weights). */
#ifndef LLMCHAT_TUI_ATTRIBUTION_VIEW_H
#define LLMCHAT_TUI_ATTRIBUTION_VIEW_H

#include "draw.h"
#include "source.h"
#include "step.h"

/* What the view shows. */
typedef struct {
    int pos;         /* the selected position */
    int target;      /* which target (source_attribution_target) */
    int layer, head; /* the cursor, from 0 */
} attribution_view;

/* The view into w's h x width inside (from row 1, column 1). */
void attribution_view_draw(const tui_source *src, const tui_screen *scr, WINDOW *w, int h,
                           int width, const attribution_view *v);

#endif
