/* remote_compare.h — a local model's distribution at one position against what a
 * served model said there (remote.h): is the local copy the model the server runs?
 *
 * The server gives the probabilities of its top k tokens only, so the comparison is
 * over k + 1 outcomes: those tokens, and the rest of the vocabulary as one. The KL
 * divergence over them, KL(server || local), is a lower bound of the KL over the
 * whole vocabulary (merging outcomes never raises it), and equals it when the top k
 * hold all the mass. Pure arithmetic: no I/O. */
#ifndef LLMCHAT_REMOTE_COMPARE_H
#define LLMCHAT_REMOTE_COMPARE_H

#include <stdbool.h>

#include "remote.h"

typedef struct {
    int pos;           /* the position whose next token is compared */
    int token;         /* the server's token there (t->id) */
    float p_server;    /* its probability on the server (NaN when not given) */
    float p_local;     /* and in the local model */
    float kl;          /* KL(server || local) over the server's top k and the rest (nats) */
    int server_top1;   /* the server's most probable token (its first alternative, else
                          its token) */
    int local_top1;    /* the local model's */
    bool top1_agree;
    int diff_id;       /* among the server's alternatives, the token whose probability
                          differs most between the two (-1 when there are none) */
    float diff_server, diff_local;
} remote_comparison;

/* Compares the local logits (n_vocab) at position pos with the server's token t
 * there. Alternatives outside the vocabulary or without an id are left out. Returns
 * false (out unfilled) when the server's token has no id. */
bool remote_compare(const float *logits, int n_vocab, const remote_token *t, int pos,
                    remote_comparison *out);

#endif
