/* help.h — the help overlay (? or F1): the key table drawn over the panes, a page at
 * a time when the screen is too small; and the text of the /help notice.
 *
 * Keeps no state: the caller keeps whether the overlay is shown and its page. */
#ifndef LLMCHAT_TUI_HELP_H
#define LLMCHAT_TUI_HELP_H

#include <stddef.h>

#include "draw.h"

/* How many pages the overlay has on scr. */
int help_pages(const tui_screen *scr);
/* Draws page *page (brought into range) over the screen. */
void help_draw(const tui_screen *scr, int *page);
/* The slash commands (command.c's table) and where the keys are, in one paragraph. */
void help_commands_text(char *buf, size_t size);

#endif
