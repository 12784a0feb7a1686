/* kernels/scratch.h — the kernels' scratch memory, owned by whoever runs the kernels and
 * passed in to them (kernels.h): the transformer keeps one workspace for its passes,
 * a test or a tool its own, or none (the calls then make one for themselves).
 *
 * A kernels_scratch is one thread's: a fixed set of named slots, one per use (the
 * enum below), each a 64-byte-aligned block that grows when a kernel asks for more
 * than it holds (its contents are then lost) and is kept between calls, so that a
 * product allocates only the first time it sees a shape. A kernels_workspace is the
 * scratches of every thread of a pool, scratch i for OpenMP thread number i; it grows
 * only from outside parallel regions (kernels_workspace_reserve), and a thread finds
 * its scratch in O(1). A workspace serves one caller at a time (nothing in it is
 * locked): the kernels.h call it is handed, or the threads of its owner's own region.
 *
 * Running out of memory is reported, never hidden: kernels_scratch_get returns NULL and
 * counts a failure in the scratch; the kernel that asked stops, its outputs undefined,
 * and the calls of kernels.h report it (false). The counts stay until
 * kernels_workspace_clear, so that an owner may run many per-thread calls and ask once.
 * Owns every block it hands out; frees them at _free. Knows nothing of what the kernels
 * keep in them. */
#ifndef LLMCHAT_KERNELS_SCRATCH_H
#define LLMCHAT_KERNELS_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

/* The uses of a scratch: one block each, which the kernel named owns during a call. */
typedef enum {
    SCRATCH_ROWS_Q,       /* kernels.c: Q8_0_BLOCKS rows made Q8_0, their values, */
    SCRATCH_ROWS_SCALE,   /*   and their scales */
    SCRATCH_GROUP_SUMS,   /* kernels.c: the activations' group sums (block types) */
    SCRATCH_X_ORDER,      /* kernels.c: vectors in the order a block dot reads them */
    SCRATCH_PACK_Q,       /* kernels.c: the GEMM's packed vectors, */
    SCRATCH_PACK_SCALE,   /*   and their scales */
    SCRATCH_UNPACK_Q,     /* kernels.c: prefill's block rows made exact Q8_0: values, */
    SCRATCH_UNPACK_SCALE, /*   scales, */
    SCRATCH_UNPACK_MIN,   /*   mins, */
    SCRATCH_UNPACK_PART,  /*   and a part's products before they are added */
    SCRATCH_DECODE_X,     /* x86-avx512.c: x's part of the decode kernels */
    SCRATCH_GEMM_TILE,    /* x86-avx512.c: the GEMM's staging tile */
    SCRATCH_GEMM_BIAS,    /* x86-avx512.c, x86-avx2-gemm.c: the GEMM's row sums */
    SCRATCH_GEMM_WIDE_ROWS, /* x86-avx2-gemm.c: the rows its wide GEMM reads, as int16 */
    SCRATCH_ATTENTION, /* x86-avx512.c, x86-avx2-attention.c: attention's key and value tiles */
    SCRATCH_MINS,         /* x86-avx512-mins.c, x86-avx2-gemm.c: the mins by group */
    SCRATCH_PANEL_SUMS,   /* x86-avx512-panels.c: the vectors' block sums */
    SCRATCH_AMX_SCALES,   /* x86-amx.c: a row block's scales */
    SCRATCH_ROW_GATHERED, /* kernels.c: a row held in Q4_K panels, as the file's blocks */
    SCRATCH_SLOTS
} scratch_slot;

typedef struct kernels_scratch kernels_scratch;
typedef struct kernels_workspace kernels_workspace;

/* A scratch of its own (not a workspace's): for a call made without one. NULL when out
 * of memory. _free(NULL) does nothing. */
kernels_scratch *kernels_scratch_new(void);
void kernels_scratch_free(kernels_scratch *s);

/* Slot `slot` of s, at least `bytes` long (0 counts as 1), 64-byte aligned; valid until
 * the next get of the same slot. NULL, with a failure counted in s, when out of memory. */
void *kernels_scratch_get(kernels_scratch *s, scratch_slot slot, size_t bytes);

/* Failures counted in s since it was made or its workspace cleared: a kernel call
 * compares the count before and after to know whether it failed. */
unsigned kernels_scratch_failures(const kernels_scratch *s);

/* For tests: no slot grows beyond `bytes` (SIZE_MAX, the default: no limit); asking for
 * more fails as running out of memory would. For every scratch of the process; not while
 * kernels run. */
void kernels_scratch_limit_bytes(size_t bytes);

/* An empty workspace (no scratch yet), or NULL when out of memory. _free(NULL) does
 * nothing; it frees every scratch and block. */
kernels_workspace *kernels_workspace_new(void);
void kernels_workspace_free(kernels_workspace *ws);

/* Makes scratches 0..threads-1 exist (from outside parallel regions). False when out of
 * memory: the scratches made so far stay, and a failure is counted in ws. */
bool kernels_workspace_reserve(kernels_workspace *ws, int threads);
/* The scratches that exist. */
int kernels_workspace_threads(const kernels_workspace *ws);
/* Scratch `thread` (< kernels_workspace_threads), for OpenMP thread number `thread`;
 * the pointer stays valid until kernels_workspace_free. */
kernels_scratch *kernels_workspace_scratch(const kernels_workspace *ws, int thread);

/* Whether anything ran out of memory in ws (a reserve, or any of its scratches) since
 * it was made or last cleared. */
bool kernels_workspace_failed(const kernels_workspace *ws);
/* Forgets the failures of ws and of its scratches (their blocks stay). */
void kernels_workspace_clear(kernels_workspace *ws);

#endif
