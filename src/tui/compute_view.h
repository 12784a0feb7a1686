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
 * recorded) and shares the selected position with Tokens and Attention. */
#ifndef LLMCHAT_TUI_COMPUTE_VIEW_H
#define LLMCHAT_TUI_COMPUTE_VIEW_H

#include <stdbool.h>

#include "draw.h"
#include "keys.h"
#include "selection.h"
#include "source.h"

typedef struct compute_view compute_view;

/* A view over src, at sel's position when opened. Exits through tui_die when out of
 * memory. */
compute_view *compute_new(const tui_source *src, tui_selection *sel);
void compute_free(compute_view *cv);

/* Opens the list at the selected position (the layer and step it showed last). */
void compute_open(compute_view *cv);
bool compute_is_open(const compute_view *cv);

/* Runs one of its actions (the key table's Compute view rows); false when a is not one
 * of them. ACT_COMPUTE_BACK at the list, and ACT_COMPUTE, close it. */
bool compute_act(compute_view *cv, key_action a);
/* Why a would change nothing now (the status line says it), or NULL. */
const char *compute_why_not(compute_view *cv, key_action a);

/* Draws the view into w (the whole screen but the status line). */
void compute_draw(compute_view *cv, WINDOW *w, const tui_screen *scr);

#endif
