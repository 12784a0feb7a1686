/* merge_heap.c — the tokenizers' queue of candidate merges (see merge_heap.h). */
#include "merge_heap.h"

#include <stdlib.h>

/* a goes before b: lower key, then leftmost */
static bool before(const merge_pair *a, const merge_pair *b)
{
    return a->key != b->key ? a->key < b->key : a->left < b->left;
}

bool merge_heap_push(merge_heap *h, merge_pair p)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        merge_pair *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    for (; i > 0 && before(&p, &h->v[(i - 1) / 2]); i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = p;
    return true;
}

merge_pair merge_heap_pop(merge_heap *h)
{
    merge_pair top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

void merge_heap_free(merge_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

bool merge_heap_run(merge_heap *h, merge_symbol *sym, merge_pair_fn pair, void *ctx)
{
    while (h->n > 0) {
        merge_pair top = merge_heap_pop(h);
        merge_symbol *l = &sym[top.left], *r = &sym[top.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != top.size)
            continue; /* stale: one side has changed since it was queued */
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0)
            sym[r->next].prev = top.left;
        if (!pair(ctx, sym, l->prev, top.left, h) || !pair(ctx, sym, top.left, l->next, h))
            return false;
    }
    return true;
}
