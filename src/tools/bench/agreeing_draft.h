/* bench/agreeing_draft.h — speculative decoding with a real draft model, llmchat beside
 * llama.cpp's llama-server on the same pair of files (--speculate K --agreeing-draft L).
 * Part of the benchmark, a front end: prints its table. */
#ifndef LLMCHAT_BENCH_AGREEING_DRAFT_H
#define LLMCHAT_BENCH_AGREEING_DRAFT_H

#include "bench_options.h"

/* Times the pair of GGUF files (model, draft) for shape `name`: o->rounds rounds, each
 * llmchat plain then speculative (one child), then llama-server without and with the
 * draft when server is not NULL; prints the medians. Returns 0, or 1 when a run failed
 * or llmchat's speculative tokens were not its plain ones. */
int agreeing_draft_shape(const bench_options *o, const char *name, int layers,
                         const char *model, const char *draft, const char *server);

#endif
