/* bench/anchor_server.h — llama.cpp's speculative decoding, timed through its own
 * llama-server: started on a free loopback port for one model (and a draft model),
 * asked for one greedy completion after a warm-up, then stopped. Part of the
 * benchmark, a front end: failures are returned as messages. */
#ifndef LLMCHAT_BENCH_ANCHOR_SERVER_H
#define LLMCHAT_BENCH_ANCHOR_SERVER_H

#include <stddef.h>

#include "measure.h"

/* The llama-server to run: path, else $LLMCHAT_ANCHOR_LLAMA_SERVER, else the one beside
 * llama_bench (may be NULL). NULL with the reason in why when there is none to run. */
const char *anchor_server_find(const char *path, const char *llama_bench, char *why,
                               size_t why_size);

typedef struct {
    double tok_s;          /* decode tokens per second, as the server timed them (its
                              last event's timings), else as they arrived */
    bool client_timed;     /* tok_s from the tokens' arrival: the server gave no timings */
    int drafted, accepted; /* its draft's guesses, and those the model took */
    int generated;         /* tokens that came */
    int tokens[DRAFT_TOKENS_MAX]; /* their ids (-1: not given) */
} anchor_server_result;

/* Runs `server` on model (with draft and up to k guesses a step when draft is not
 * NULL) on `threads` threads, a context for the prompt and gen tokens; one warm-up
 * completion, then one greedy completion of gen tokens after prompt[0..n_prompt) with
 * the prompt computed anew, into *out. Returns 0, or -1 with why. */
int anchor_server_run(const char *server, const char *model, const char *draft, int k,
                      int threads, const int *prompt, int n_prompt, int gen,
                      anchor_server_result *out, char *why, size_t why_size);

#endif
