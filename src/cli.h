/* cli.h — the front ends main.c dispatches to. Each returns the process exit status
 * (0 success, 1 runtime failure, 2 usage error) and prints its own messages. */
#ifndef LLMCHAT_CLI_H
#define LLMCHAT_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "options.h"
#include "engine.h"
#include "model.h"
#include "tokenizer.h"

int cli_generate(const app_options *o, const model *m, const tokenizer *tok);
int cli_repl(const app_options *o, const model *m, const tokenizer *tok);
int cli_tokenize(const app_options *o, const tokenizer *tok);
int cli_perplexity(const app_options *o, const model *m, const tokenizer *tok);

/* --replay: reads the trace (printing its problems) and, when the command line does
 * not say, takes the model path, weights and KV cache type from its header. Returns
 * 0, or the exit status with a message printed. Then cli_replay runs it. */
struct trace_reader;
int cli_replay_open(app_options *o, struct trace_reader **out);
int cli_replay(const app_options *o, const model *m, const tokenizer *tok,
               struct trace_reader *r);

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

/* Engine options every front end starts from: defaults, then --ctx, the sampler
 * options and --kv-cache. */
void session_engine_options(const app_options *o, engine_options *eo);

/* The path of state file NAME: $XDG_STATE_HOME/llmchat/NAME (an absolute
 * $XDG_STATE_HOME), else $HOME/.local/state/llmchat/NAME, with its directories made
 * (mode 0700). malloc'd; NULL when neither variable is set or out of memory. */
char *session_state_file(const char *name);

/* ---- discover.c: which model to open ---- */
/* The bundled demo model, in DATADIR/models. */
#define DISCOVER_BUNDLED_MODEL "chat260K.bin"
/* The data directory: $LLMCHAT_DATADIR, else the installed one (models.tsv, models/). */
const char *discover_data_dir(void);
/* llmchat-fetch's default directory, $XDG_DATA_HOME/llmchat/models (else under
 * ~/.local/share), in buf; NULL when neither variable is usable. */
const char *discover_fetch_dir(char *buf, size_t size);
/* Settles o->model_path: the one options_parse found (a file, or a models.tsv name fetched
 * into the fetch directory), else the bundled model. buf holds the path when it is
 * made here. Returns 0, or 1 with a message naming the command that gets a model. */
int discover_model(app_options *o, char *buf, size_t size);
/* Which model is open and why, in a sentence for the TUI and the REPL banner. */
void discover_model_note(const app_options *o, const model *m, char *buf, size_t size);

/* Set by the SIGINT handler; front ends poll it between tokens. */
extern volatile int signals_interrupted;
void signals_install_sigint(void);

#endif
