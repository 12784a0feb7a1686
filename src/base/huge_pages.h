/* huge_pages.h — memory of 2 MiB pages for big buffers that are read again and again
 * (a model's weights), through Linux's transparent huge pages.
 *
 * A decode step streams every weight once; in 4 KiB pages that is a page walk every
 * 4 KiB, which on some CPUs keeps the stream well short of the memory's speed. Pages
 * of 2 MiB take that away. The kernel gives them to anonymous memory it is asked to
 * (madvise MADV_HUGEPAGE) when its setting is "madvise" or "always", not to a file's
 * mapping; so a buffer that wants them is anonymous memory, 2 MiB-aligned, asked for
 * them before it is first written. Elsewhere than Linux nothing is offered and the
 * buffers are plain anonymous memory. */
#ifndef LLMCHAT_BASE_HUGE_PAGES_H
#define LLMCHAT_BASE_HUGE_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

/* Whether the kernel gives huge pages to memory that asks: its transparent huge page
 * setting exists and is not "never". */
bool huge_pages_offered(void);

/* Asks for huge pages on the whole 2 MiB pages inside [p, p + bytes) (madvise; does
 * nothing where that is not offered). Call before the memory is first written. */
void huge_pages_ask(void *p, size_t bytes);

/* Anonymous, readable and writable memory of `bytes` bytes starting on a 2 MiB
 * boundary, huge pages asked for when `huge`; NULL when the system has none to give.
 * Free it with huge_pages_free(p, bytes). */
void *huge_pages_alloc(size_t bytes, bool huge);
void huge_pages_free(void *p, size_t bytes);

/* Bytes of [p, p + bytes) that the kernel backs with huge pages now (the AnonHugePages
 * of the mappings that hold it, in /proc/self/smaps); 0 when that cannot be read. */
uint64_t huge_pages_backing(const void *p, size_t bytes);

/* The memory the kernel says is available for new allocations without swapping
 * (MemAvailable in /proc/meminfo), in bytes; 0 when that cannot be read. */
uint64_t memory_available_bytes(void);

#endif
