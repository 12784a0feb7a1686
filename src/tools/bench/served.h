/* bench/served.h — llmchat-bench --server URL: how fast a served model answers
 * llmchat's remote session (remote.h): time to first token of a prompt of -p tokens
 * and decode tokens/s of --gen tokens, over --rounds requests. Each round's prompt
 * starts with a token of its own, so no round finds it in the server's prompt cache.
 * The figures are the server's and the network's together, as a user sees them. */
#ifndef LLMCHAT_BENCH_SERVED_H
#define LLMCHAT_BENCH_SERVED_H

#include "bench_options.h"

/* Prints the table (or with --json one object); returns the exit status: 1 when the
 * server cannot be reached or a request fails (said on stderr). */
int served_run(const bench_options *o);

#endif
