/* tui.h — the curses debugger-chat front end (the only code that includes curses). */
#ifndef LLMCHAT_TUI_H
#define LLMCHAT_TUI_H

#include "options.h"
#include "model.h"
#include "tokenizer.h"

/* Runs the interactive TUI until the user quits. Returns the exit status. */
int tui_run(const app_options *o, const model *m, const tokenizer *tok);
/* llmchat --view TRACE: the TUI over a trace, read-only, with no model. Returns the
 * exit status (1 when the file is not a readable trace, 2 without a terminal). */
int tui_view(const app_options *o);

#endif
