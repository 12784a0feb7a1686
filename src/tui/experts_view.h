/* experts_view.h — the experts view: what a mixture of experts' routers chose for the
 * selected token, opened with 'E' from a pane or /experts.
 *
 * Three levels, Esc going back one:
 *   layers  a row per layer: the experts chosen at the selected position with their
 *           weights ("L3  #12 0.41  #7 0.33"), and a heat strip of how often each
 *           expert was chosen at that layer over the reply around the position (or
 *           every position, 'a'), the position's own experts in reverse; with more
 *           experts than columns, several share a column;
 *   router  Enter on a layer: that layer's router distribution at the position
 *           (ffn_moe_probs, the position run again as the compute view does), the
 *           experts ranked by probability with bars, which were chosen and with what
 *           weight, and how often each was chosen over the range;
 *   tokens  Enter on an expert: the positions of the range whose route at that layer
 *           includes it, with their tokens and its weight there; Enter selects one.
 * Layers and experts are numbered from 1, as the other views and the status line do.
 * In the router and the tokens, x knocks the expert out and f forces it (the
 * controller's, actions.c, through experts_view_cursor).
 * Refused with one line where there are no routes (a model without experts, a trace).
 *
 * Owns its state (level, cursors, the range's choice, scratch for the counts); reads
 * the routes and the steps through the source; shares the selected position with
 * Tokens and Attention (it follows the newest while the selection does). Its keys are
 * the key table's Experts view rows; p and n there are the controller's. */
#ifndef LLMCHAT_TUI_EXPERTS_VIEW_H
#define LLMCHAT_TUI_EXPERTS_VIEW_H

#include "view_ops.h"

/* The overlay (overlays.c's table: 'E' or /experts opens it over the panes, the whole
 * screen above the status line). */
extern const view_ops experts_view_ops;

/* The expert under the cursor of the experts view v (layer and expert from 0): the
 * router's selected row, or the expert whose positions are listed. False with *why
 * (as the status line says it) on the layers' level, where there are no routes, or
 * where v is not the experts view. */
bool experts_view_cursor(const view_handle *v, int *layer, int *expert, const char **why);

#endif
