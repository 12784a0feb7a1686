/* merge_heap.h — what both tokenizers merge with: a list of symbols (stretches of the
 * text, linked left to right) and a queue of candidate merges of two adjacent symbols,
 * the one with the lowest key first, the leftmost on a tie, applied by one loop
 * (merge_heap_run). SentencePiece (tokenizer.c) keys a merge by its piece's score
 * negated (the highest score first), byte-level BPE (tokenizer_bpe.c) by its merge's
 * rank: each says which pairs are candidates through its own merge_pair_fn. */
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

/* A stretch of the text being merged. */
typedef struct {
    int start;  /* byte offset into the text */
    int len;    /* bytes; 0 once merged into its left neighbour */
    int prev;   /* index of the previous live symbol, -1 at the start */
    int next;   /* index of the next live symbol, -1 at the end */
    int frozen; /* never merges (an invalid UTF-8 byte, for SentencePiece) */
} merge_symbol;

/* Queues the merge of symbols left and right when the tokenizer has one (either may be
 * -1: nothing to do); false when out of memory. */
typedef bool (*merge_pair_fn)(void *ctx, const merge_symbol *sym, int left, int right,
                              merge_heap *h);

/* Pops and applies merges until the queue is empty, queueing the new neighbours of
 * each merged symbol through pair (stale entries, whose sides have changed since they
 * were queued, are dropped). False when pair fails. */
bool merge_heap_run(merge_heap *h, merge_symbol *sym, merge_pair_fn pair, void *ctx);

#endif
