/* attention_ring.h — the memory captured attention rows live in: one block of a fixed
 * size, written in turn and reused, so that keeping the newest rows costs no new
 * memory while a reply runs.
 *
 * Rows are placed one after another in the order they are taken; when the next row
 * does not fit before the end of the block it starts again at the front. A row
 * overwrites the oldest rows: they are evicted, oldest first, and the owner learns
 * which positions lost their rows through a callback. Giving back the newest rows
 * (a rewind) makes their space the next to be used. The block is written once when
 * it is made, so that its pages are in memory before the first token needs them
 * (a page first touched inside a forward pass costs a fault and a clearing).
 * No printing; the engine is the only user. */
#ifndef LLMCHAT_ATTENTION_RING_H
#define LLMCHAT_ATTENTION_RING_H

#include <stddef.h>

typedef struct attention_ring attention_ring;

/* Called for each position whose row a newer one overwrote. */
typedef void (*attention_ring_evict)(void *user, int pos);

/* A ring of `bytes` (rounded down to whole cache lines) for at most max_rows rows at a
 * time, its pages touched; NULL when there is no memory. */
attention_ring *attention_ring_new(size_t bytes, int max_rows);
void attention_ring_free(attention_ring *r); /* NULL does nothing */

/* The ring's size in bytes. */
size_t attention_ring_size(const attention_ring *r);

/* A row of `bytes` for position pos, evicting the oldest rows until it has room (evict
 * is called for each, before this returns; rows older than one it overwrites go
 * first). NULL, evicting nothing, when bytes exceed the ring. The row's contents are
 * whatever was there. */
float *attention_ring_take(attention_ring *r, int pos, size_t bytes, attention_ring_evict evict,
                           void *user);

/* Gives pos's row back (the caller forgets it; evict is not called). When it is the
 * newest row, its space is the next to be taken. Unknown positions are ignored. */
void attention_ring_give_back(attention_ring *r, int pos);

/* Rows held (tests). */
int attention_ring_rows(const attention_ring *r);

#endif
