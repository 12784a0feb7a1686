/* session.h — what the front ends share to set up a session (session.c): the input
 * text, the engine's options, the --trace writer, the control vectors, the paths of state files. Each
 * function that can fail prints its message (this is the program layer). */
#ifndef LLMCHAT_SESSION_H
#define LLMCHAT_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "model.h"
#include "options.h"
#include "tokenizer.h"

/* Reads the whole input text of -f FILE (or returns a copy of -i TEXT). The caller
 * frees it. NULL with a message printed on failure. */
char *session_read_input(const app_options *o);

/* Reads the input (-i/-f) and tokenizes it, with a leading BOS when bos is true.
 * Returns a malloc'd array and its length in *n, or NULL with a message printed. */
int *session_encode_input(const app_options *o, const tokenizer *tok, bool bos, int *n);

/* Opens --trace FILE (if given) and attaches it to the engine as its observer.
 * *out is NULL when no trace was asked for. Returns 0, or 1 with a message printed. */
struct trace_writer;
int session_open_trace(const app_options *o, const model *m, const tokenizer *tok, engine *e,
                   struct trace_writer **out);
/* Closes the trace, printing a message if writing it failed; returns 0 or 1. */
int session_close_trace(struct trace_writer *t);

/* Loads --control-vector files and sets --control-vector-layers on e. Returns 0, or
 * the exit status (1 a bad file, 2 a bad layer range) with a message printed. */
int session_apply_vectors(const app_options *o, engine *e);

/* Engine options every front end starts from: defaults, then --ctx, the sampler
 * options and --kv-cache. */
void session_engine_options(const app_options *o, engine_options *eo);

/* The path of state file NAME: $XDG_STATE_HOME/llmchat/NAME (an absolute
 * $XDG_STATE_HOME), else $HOME/.local/state/llmchat/NAME, with its directories made
 * (mode 0700). malloc'd; NULL when neither variable is set or out of memory. */
char *session_state_file(const char *name);

#endif
