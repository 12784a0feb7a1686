/* tui.h — the curses debugger-chat front end (the only code that includes curses). */
#ifndef LLMCHAT_TUI_H
#define LLMCHAT_TUI_H

#include "options.h"
#include "session.h"

/* Runs the interactive TUI on the session main.c opened (its engine, chat, trace,
 * autosave, signals) until the user quits. Returns the exit status. */
int tui_run(session *s);
/* llmchat --view TRACE: the TUI over a trace, read-only, with no model. Returns the
 * exit status (1 when the file is not a readable trace, 2 without a terminal). */
int tui_view(const app_options *o);
/* llmchat --server URL in a terminal: the TUI over a served model (remote_chat.h): a
 * chat whose Tokens pane shows the server's top alternatives; what needs the weights
 * says so. Returns the exit status (1 when the server cannot be reached, 2 without a
 * terminal). */
int tui_remote(const app_options *o);

#endif
