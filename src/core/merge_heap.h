/* merge_heap.h — the queue both tokenizers merge symbols from: candidate merges of two
 * adjacent symbols, the one with the lowest key first, the leftmost on a tie.
 * SentencePiece (tokenizer.c) keys a merge by its piece's score negated (the highest
 * score first), byte-level BPE (tokenizer_bpe.c) by its merge's rank. */
#ifndef LLMCHAT_CORE_MERGE_HEAP_H
#define LLMCHAT_CORE_MERGE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    float key; /* lower merges first */
    int left;  /* symbol index of the left half */
    int right; /* symbol index of the right half */
    int size;  /* byte length of the merged piece, to detect stale entries */
} merge_pair;

typedef struct {
    merge_pair *v; /* (cap) binary min-heap */
    size_t n, cap;
} merge_heap;

/* Queues p; false when out of memory (the heap is unchanged). */
bool merge_heap_push(merge_heap *h, merge_pair p);
/* Takes the first merge out; h must not be empty. */
merge_pair merge_heap_pop(merge_heap *h);
void merge_heap_free(merge_heap *h);

#endif
