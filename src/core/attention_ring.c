/* attention_ring.c — captured attention rows in one reused block (see attention_ring.h).
 *
 * The rows held are a queue in the order they were taken (rows[head_slot - count ..
 * head_slot), modulo max_rows); their bytes follow one another through the block, from
 * the oldest row's offset to `next`, wrapping at most once. */
#include "attention_ring.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { LINE = 64 }; /* rows start on cache lines */

typedef struct {
    int pos;      /* -1: given back, its space not yet reused */
    size_t off;   /* into the block */
    size_t bytes; /* rounded up to LINE */
} ring_row;

struct attention_ring {
    unsigned char *block; /* (size) */
    size_t size;
    size_t next;          /* where the next row goes, if it fits before the end */
    ring_row *rows;       /* (max_rows) the queue */
    int max_rows;
    int oldest;           /* slot of the oldest row */
    int count;
};

attention_ring *attention_ring_new(size_t bytes, int max_rows)
{
    if (max_rows < 1)
        return NULL;
    attention_ring *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->size = bytes / LINE * LINE;
    r->max_rows = max_rows;
    r->rows = malloc(sizeof(ring_row) * (size_t)max_rows);
    r->block = r->size ? aligned_alloc(LINE, r->size) : NULL;
    if (!r->rows || (r->size && !r->block)) {
        attention_ring_free(r);
        return NULL;
    }
    memset(r->block, 0, r->size); /* the pages now, not in the middle of a token */
    return r;
}

void attention_ring_free(attention_ring *r)
{
    if (!r)
        return;
    free(r->block);
    free(r->rows);
    free(r);
}

size_t attention_ring_size(const attention_ring *r) { return r->size; }
int attention_ring_rows(const attention_ring *r) { return r->count; }

static ring_row *slot(const attention_ring *r, int i) /* i-th oldest */
{
    return &r->rows[(r->oldest + i) % r->max_rows];
}

static void drop_oldest(attention_ring *r, attention_ring_evict evict, void *user)
{
    ring_row *o = slot(r, 0);
    if (o->pos >= 0 && evict)
        evict(user, o->pos);
    r->oldest = (r->oldest + 1) % r->max_rows;
    r->count--;
}

static bool overlaps_any(const attention_ring *r, size_t off, size_t bytes)
{
    for (int i = 0; i < r->count; i++) {
        const ring_row *w = slot(r, i);
        if (w->off < off + bytes && off < w->off + w->bytes)
            return true;
    }
    return false;
}

float *attention_ring_take(attention_ring *r, int pos, size_t bytes, attention_ring_evict evict,
                           void *user)
{
    bytes = (bytes + LINE - 1) / LINE * LINE;
    if (bytes == 0 || bytes > r->size)
        return NULL;
    size_t off = r->next + bytes <= r->size ? r->next : 0;
    while (r->count > 0 && (r->count == r->max_rows || overlaps_any(r, off, bytes)))
        drop_oldest(r, evict, user);
    *slot(r, r->count) = (ring_row){pos, off, bytes};
    r->count++;
    r->next = off + bytes;
    return (float *)(r->block + off);
}

void attention_ring_give_back(attention_ring *r, int pos)
{
    for (int i = r->count - 1; i >= 0; i--)
        if (slot(r, i)->pos == pos) {
            slot(r, i)->pos = -1;
            break;
        }
    while (r->count > 0 && slot(r, r->count - 1)->pos < 0) { /* the newest: reuse its space */
        r->next = slot(r, r->count - 1)->off;
        r->count--;
    }
    while (r->count > 0 && slot(r, 0)->pos < 0)
        drop_oldest(r, NULL, NULL);
    if (r->count == 0)
        r->next = 0;
}
