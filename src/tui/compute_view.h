/* compute_view.h — the compute view: a full-screen view of what the forward pass
 * computed at one position, opened with 'g' from a pane.
 *
 * Three levels, Esc going back one: the list (a layer's steps in order, named as
 * llama.cpp names its graph's tensors, each with its shape, L2 norm, min, max, a
 * histogram, mean and first values; the layers, and the embedding before them and the
 * output after, with [ and ]); a step's whole tensor, paged, one head at a time where
 * it has heads; and the weight behind a step (step_weight.h): the tensor, the block an
 * output element's row meets at one input group, decoded, the activation group as
 * llmchat quantizes it and the partial dot product.
 *
 * Owns its state (level, position, layer, step, head, cursor, scroll) and the weight
 * view's text; reads the steps through the source (a live engine runs the position
 * again for them, leaving the context as it was; a trace has the summaries it
 * recorded) and shares the selected position with Tokens and Attention. Its keys are
 * the key table's Compute view rows; p and n there are the controller's (the reply
 * goes on under the view). */
#ifndef LLMCHAT_TUI_COMPUTE_VIEW_H
#define LLMCHAT_TUI_COMPUTE_VIEW_H

#include "view_ops.h"

/* The overlay (overlays.c's table: 'g' opens it over the panes, the whole screen
 * above the status line): its state is made with the source and the selection. */
extern const view_ops compute_view_ops;

#endif
