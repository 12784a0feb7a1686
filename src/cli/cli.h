/* cli.h — the line-mode front ends main.c dispatches to: the plain chat (repl.c),
 * generate, tokenize, perplexity, tensors and --replay (replay_report.c). Each runs on the
 * session main.c opened for it (session.h: the model, tokenizer, engine, chat, trace,
 * signals), returns the process exit status (0 success, 1 runtime failure, 2 usage
 * error) and prints its own messages. */
#ifndef LLMCHAT_CLI_H
#define LLMCHAT_CLI_H

#include "options.h"
#include "session.h"
#include "tokenizer.h"

int cli_generate(session *s);
int cli_repl(session *s);
int cli_tokenize(const app_options *o, const tokenizer *tok);
int cli_perplexity(session *s);
/* -m tensors: runs the input (with BOS as generate does) and writes every step of the
 * forward pass at the last position (--position P), one JSON object a line. */
int cli_tensors(session *s);
/* -m patch: activation patching of --clean against --corrupt (patching.h); prints the
 * grid, or one JSON object with --json. */
int cli_patch(session *s);
/* --server URL -m generate: the prompt continued by a served model (remote.h); no
 * local model. */
int cli_remote_generate(const app_options *o);
/* --server URL -m chat: the plain chat over a served model (remote_chat.h). */
int cli_remote_repl(const app_options *o);
/* --server URL -m perplexity: the input's perplexity under a served model
 * (remote_score.h); no local model. */
int cli_remote_perplexity(const app_options *o);
/* MODEL --compare-server URL: the local model against the served one on the server's
 * greedy continuation of the prompt (remote_compare.h). */
int cli_compare_server(session *s);

/* --replay: reads the trace (printing its problems) and, when the command line does
 * not say, takes the model path, weights and KV cache type from its header. Returns
 * 0, or the exit status with a message printed. session_open calls it before it finds
 * the model (session_needs.prepare); then cli_replay runs the trace (s->replay). */
struct trace_reader;
int cli_replay_open(app_options *o, struct trace_reader **out);
int cli_replay(session *s);
/* --replay TRACE --server URL: the trace's sequence scored by the server and run by the
 * local model, compared position by position (replay_server.c); cli_replay hands it
 * over. */
int cli_replay_server(session *s);
/* --replay of a patching run (s->replay has a patch line): runs it again and checks the
 * grid (replay_patch.c); cli_replay hands such a trace to it. */
int cli_replay_patch(session *s);

#endif
