/* tokens_pane.h — the Tokens pane (token inspector): for the selected position, the
 * token, the probability the model had given it, the model's top-k candidates for the
 * next position and the sampler's decision.
 *
 * Its own state is how many candidates it shows; it reads step records (source.h)
 * and shares the selected position with Attention (selection.h). */
#ifndef LLMCHAT_TUI_TOKENS_PANE_H
#define LLMCHAT_TUI_TOKENS_PANE_H

#include <stdbool.h>

#include "source.h"
#include "view_ops.h"
#include "selection.h"

/* Candidates the engine keeps per record for the Tokens pane: room to show more than
 * the default 10, without the cost of keeping STEP_TOP_MAX per record. */
enum { TUI_TOP_N = 32 };

typedef struct tokens_pane tokens_pane;

extern const view_ops tokens_pane_ops;

/* A pane over src's records, showing top_k_shown candidates (1..TUI_TOP_N) at sel.
 * Exits through tui_die when out of memory. */
tokens_pane *tokens_new(const tui_source *src, tui_selection *sel, int top_k_shown);
void tokens_free(tokens_pane *tp);

/* Whether a digit would choose a candidate now (a paused reply): the pane says so. */
void tokens_set_choosing(tokens_pane *tp, bool choosing);

#endif
