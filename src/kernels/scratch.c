/* kernels/scratch.c — the kernels' scratch and workspaces (kernels/scratch.h): the
 * blocks of each slot, grown on demand, the failures counted where an allocation
 * fails, and a workspace's array of scratches, one per thread, grown by reserve.
 *
 * Each scratch is its own 64-byte-aligned allocation, so that threads writing their
 * counts and slot pointers never share a cache line. */
#include "scratch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct kernels_scratch {
    struct {
        void *p;
        size_t bytes; /* what p holds; 0 with p NULL */
    } slot[SCRATCH_SLOTS];
    unsigned failures;
};

struct kernels_workspace {
    kernels_scratch **scratch; /* (threads) */
    int threads;
    unsigned failures;         /* reserves that failed */
};

/* The test limit of kernels_scratch_limit_bytes. */
static size_t limit_bytes = SIZE_MAX;

void kernels_scratch_limit_bytes(size_t bytes)
{
    limit_bytes = bytes;
}

static size_t round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

kernels_scratch *kernels_scratch_new(void)
{
    kernels_scratch *s = aligned_alloc(64, round64(sizeof *s));
    if (s)
        memset(s, 0, sizeof *s);
    return s;
}

void kernels_scratch_free(kernels_scratch *s)
{
    if (!s)
        return;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        free(s->slot[i].p);
    free(s);
}

void *kernels_scratch_get(kernels_scratch *s, scratch_slot slot, size_t bytes)
{
    if (bytes <= s->slot[slot].bytes && s->slot[slot].p)
        return s->slot[slot].p;
    if (bytes == 0)
        bytes = 1;
    free(s->slot[slot].p);
    void *p = bytes <= limit_bytes && bytes <= SIZE_MAX - 63 ? aligned_alloc(64, round64(bytes))
                                                             : NULL;
    s->slot[slot].p = p;
    s->slot[slot].bytes = p ? round64(bytes) : 0;
    if (!p)
        s->failures++;
    return p;
}

unsigned kernels_scratch_failures(const kernels_scratch *s)
{
    return s->failures;
}

kernels_workspace *kernels_workspace_new(void)
{
    return calloc(1, sizeof(kernels_workspace));
}

void kernels_workspace_free(kernels_workspace *ws)
{
    if (!ws)
        return;
    for (int i = 0; i < ws->threads; i++)
        kernels_scratch_free(ws->scratch[i]);
    free(ws->scratch);
    free(ws);
}

bool kernels_workspace_reserve(kernels_workspace *ws, int threads)
{
    if (threads <= ws->threads)
        return true;
    kernels_scratch **grown = realloc(ws->scratch, sizeof *grown * (size_t)threads);
    if (grown)
        ws->scratch = grown;
    while (grown && ws->threads < threads) {
        kernels_scratch *s = kernels_scratch_new();
        if (!s)
            break;
        ws->scratch[ws->threads++] = s;
    }
    if (ws->threads < threads)
        ws->failures++;
    return ws->threads >= threads;
}

int kernels_workspace_threads(const kernels_workspace *ws)
{
    return ws->threads;
}

kernels_scratch *kernels_workspace_scratch(const kernels_workspace *ws, int thread)
{
    return ws->scratch[thread];
}

bool kernels_workspace_failed(const kernels_workspace *ws)
{
    bool failed = ws->failures > 0;
    for (int i = 0; i < ws->threads && !failed; i++)
        failed = ws->scratch[i]->failures > 0;
    return failed;
}

void kernels_workspace_clear(kernels_workspace *ws)
{
    ws->failures = 0;
    for (int i = 0; i < ws->threads; i++)
        ws->scratch[i]->failures = 0;
}
