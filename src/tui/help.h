/* help.h — the help overlay (? or F1): the key table drawn over the panes, a page at
 * a time when the screen is too small; and the text of the /help notice.
 *
 * The overlay is a row of overlays.c's table; its state is the page shown. */
#ifndef LLMCHAT_TUI_HELP_H
#define LLMCHAT_TUI_HELP_H

#include <stddef.h>

#include "view_ops.h"

extern const view_ops help_view_ops;

/* The slash commands (command.c's table) and where the keys are, in one paragraph. */
void help_commands_text(char *buf, size_t size);

#endif
