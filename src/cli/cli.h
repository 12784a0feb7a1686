/* cli.h — the line-mode front ends main.c dispatches to: the plain chat (repl.c),
 * generate, tokenize, perplexity and --replay (replay_report.c). Each returns the
 * process exit status (0 success, 1 runtime failure, 2 usage error) and prints its own
 * messages. */
#ifndef LLMCHAT_CLI_H
#define LLMCHAT_CLI_H

#include "model.h"
#include "options.h"
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

#endif
