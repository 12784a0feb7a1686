/* patch_view.h — the patching view: activation patching's grid (patch_board.h) as a
 * heatmap over the screen, opened by /patch TEXT (which starts a grid: the newest
 * message against TEXT in its place) or P from a pane (the last grid), and by
 * llmchat --view of a patching trace.
 *
 * Rows are layers, columns the prompt's positions (labelled with the clean prompt's
 * tokens, the corrupted one's under them where they differ) or a layer's heads. A cell
 * is its patched run's metric: the normalised logit difference (1: the clean run's, 0:
 * the corrupted run's) or the KL divergence from the clean run as a fraction of the
 * corrupted run's (0: the clean run's, 1: the corrupted run's), shaded by how much of
 * the clean run it brings back; '·' a cell not run yet, '-' a head the layer lacks. The title gives the site, the metric's tokens, the baselines
 * and the cells run; s cycles the site and m the metric (each runs the grid again);
 * Enter on a cell lists its patched run's most probable next tokens beside the clean
 * and corrupted runs' (the cell run again). Esc stops a grid that is running, then
 * closes the list, then the view.
 *
 * Owns its cursor and the list's tokens; reads the board the controller runs. */
#ifndef LLMCHAT_TUI_PATCH_VIEW_H
#define LLMCHAT_TUI_PATCH_VIEW_H

#include "view_ops.h"

/* The overlay (overlays.c's table): the whole screen above the status line. */
extern const view_ops patch_view_ops;

#endif
