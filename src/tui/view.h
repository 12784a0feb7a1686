/* view.h — llmchat --view TRACE: a trace read back for the TUI, with no model.
 *
 * Owns the trace reader and what the panes need from it: the sequence as it stood
 * at the end of the run (a source for Tokens and Attention), the model shape, the
 * dialog the tokens spell for Conversation and the lines the reader skipped. Draws
 * nothing and reads no keys: tui.c runs the panes over it. */
#ifndef LLMCHAT_TUI_VIEW_H
#define LLMCHAT_TUI_VIEW_H

#include <stddef.h>

#include "status.h"
#include "trace_read.h"
#include "conversation.h"
#include "source.h"

typedef struct trace_view trace_view;

/* Reads the trace at path. Fails with a message when the file cannot be read, is not
 * an llmchat trace, has a newer format version or holds no step records. */
llm_status view_open(const char *path, trace_view **out, llm_err *err);
void view_close(trace_view *v); /* NULL does nothing */

/* The positions for Tokens and Attention (valid until view_close). */
tui_source view_source(const trace_view *v);
/* Adds to Conversation what the trace is, the lines it skipped (each "line N: why")
 * and the dialog: the prompt's text as user turns, sampled and forced tokens as
 * replies. */
void view_show_dialog(const trace_view *v, conv_pane *cv);
/* The trace's patching run (-m patch --trace), NULL when it has none (valid until
 * view_close). */
const trace_patch *view_patch(const trace_view *v);
/* One line for the status line: the file, model, template, shape, positions and
 * what the records carry. */
void view_describe(const trace_view *v, char *out, size_t size);

#endif
