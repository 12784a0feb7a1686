/* compare_strip.h — the line the TUI writes under a reply once it has been checked
 * against a served model (--compare-server URL -m tui, server_check.h): a strip of
 * the KL divergence at each of the reply's tokens, then the top-1 agreement, the mean
 * and the largest KL and the token where it was largest:
 *
 *   [vs server: ▁▁▂▁█▁▁▃  top-1 7/8 · KL mean 1.2e-03 · max 8.1e-03 at " dog"]
 *
 * One cell a token (the largest KL of a group of tokens when the reply is longer than
 * the strip): ▁ below 1e-5 nats, then one step a decade, █ from 0.1 (ASCII .:-=+*#@
 * on a terminal without UTF-8). No curses: the TUI shows it as a notice. */
#ifndef LLMCHAT_TUI_COMPARE_STRIP_H
#define LLMCHAT_TUI_COMPARE_STRIP_H

#include <stdbool.h>
#include <stddef.h>

#include "server_check.h"

enum { COMPARE_STRIP_CELLS = 48 };

/* The strip of the predictions of positions from..to-1 into out; piece is the text of
 * the token where the KL was largest (as the Tokens pane shows it). Returns false
 * (out "") when none of them was checked. */
bool compare_strip_text(const server_check *c, int from, int to, const char *piece, bool utf8,
                        char *out, size_t size);

/* The cell of one KL divergence: 0 (below 1e-5 nats) to 7 (0.1 or more). */
int compare_strip_level(double kl);

#endif
