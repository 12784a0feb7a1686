/* trace_order.h — which record of a trace holds each position of the sequence the run
 * ended with (docs/trace-format.md, "Order, rewinds and regeneration").
 *
 * llmchat writes records in position order; a rewind writes the position before the
 * rewind point again (with the same token, unless it is position 0) and goes on from
 * there: a record for p replaces the one in force for p and forgets those after p. A
 * trace in that order is read by that rule. A trace out of that order (lines moved,
 * shuffled, or a rewind that changes a position's token) is read by position when no
 * position holds two different records, and refused otherwise, naming both lines. A
 * line that repeats, byte for byte, the record in force for its position (a copied
 * line) changes nothing. Works on plain arrays; owns only the index it returns. */
#ifndef LLMCHAT_TRACE_ORDER_H
#define LLMCHAT_TRACE_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

/* One record as read, in file order. */
typedef struct {
    int pos;            /* its position, from 0 */
    int token;          /* its input token */
    int line;           /* its line in the file, from 1 */
    uint64_t hash;      /* FNV-1a of the line's bytes */
    int skipped_before; /* unreadable lines between the record before it and it (each
                           may have held a position) */
} trace_order_entry;

typedef struct {
    int *at;            /* (n) the entry in force at each position, or -1: none (owned) */
    int n;              /* one past the last position of the sequence */
    int held;           /* positions with a record */
    int replaced;       /* entries a later one for their position replaced, or forgot */
    int copies;         /* entries that repeat the one in force byte for byte: ignored */
    bool by_position;   /* out of the writer's order, every position held once, and some
                           record before one of a lower position: read by position */
    char disorder[160]; /* when by_position: the first place out of order, in words */
} trace_order;

/* Orders e[0..count). Fails with LLM_ERR_FORMAT (err naming the two lines) when the
 * entries are out of the writer's order and a position holds two different records,
 * or with LLM_ERR_NOMEM. On failure out->at is NULL. */
llm_status trace_order_build(const trace_order_entry *e, int count, trace_order *out,
                             llm_err *err);
void trace_order_free(trace_order *o); /* frees o->at; NULL does nothing */

#endif
