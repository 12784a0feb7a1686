/* model_memory.c — where a model file's bytes live while it is open: mapped from the
 * file, or read into memory of 2 MiB pages (--huge-pages; model.h), and the choice
 * between the two.
 *
 * A mapping costs nothing at open and shares the page cache, but the page cache's
 * pages are 4 KiB, and a decode step that streams every weight walks a page table
 * every 4 KiB. Memory of its own, 2 MiB-aligned and asked for huge pages, takes a copy
 * of the file at open (from the page cache, or from the disk as the mapping would on
 * the first step) and then reads at the memory's speed. Either way the bytes are
 * read-only once the file is in them (but for the Q4_K panels the loader packs in place
 * of their blocks: model.c), and the loaders see the same bytes. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1 /* madvise */
#include "model_internal.h"

#include "huge_pages.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *const huge_page_names[] = {
    [MODEL_HUGE_PAGES_AUTO] = "auto",
    [MODEL_HUGE_PAGES_ON] = "on",
    [MODEL_HUGE_PAGES_OFF] = "off",
};

bool model_huge_pages_parse(const char *name, model_huge_pages *out)
{
    for (size_t i = 0; i < sizeof huge_page_names / sizeof huge_page_names[0]; i++)
        if (strcmp(name, huge_page_names[i]) == 0) {
            *out = (model_huge_pages)i;
            return true;
        }
    return false;
}

const char *model_huge_pages_name(model_huge_pages h)
{
    return (unsigned)h < sizeof huge_page_names / sizeof huge_page_names[0] ? huge_page_names[h]
                                                                            : "?";
}

bool model_huge_pages_choose(model_huge_pages want, bool offered, uint64_t file_bytes,
                             uint64_t available)
{
    if (want == MODEL_HUGE_PAGES_ON)
        return true;
    if (want == MODEL_HUGE_PAGES_OFF)
        return false;
    return offered && available > 0 && file_bytes <= available / 2;
}

llm_status model_memory_hold(int fd, size_t size, bool read_in, const char *path, void **out,
                             llm_err *err)
{
    if (!read_in) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            return llm_fail(err, LLM_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        *out = map;
        return LLM_OK;
    }
    uint8_t *p = huge_pages_alloc(size, true);
    if (!p)
        return llm_fail(err, LLM_ERR_NOMEM,
                        "%s: out of memory to read the file into; --huge-pages off maps it",
                        path);
    /* in pieces of whole huge pages, in parallel: the kernel clears each new page in the
     * thread that first writes it, which on a big file is most of the time */
    const size_t piece = 16 * HUGE_PAGE_BYTES;
    const long pieces = (long)((size + piece - 1) / piece);
    int failed = 0; /* the first error number met; -1: the file ended early */
#pragma omp parallel for schedule(dynamic, 1)
    for (long i = 0; i < pieces; i++) {
        size_t at = (size_t)i * piece, end = at + piece < size ? at + piece : size;
        while (at < end) {
            ssize_t n = pread(fd, p + at, end - at, (off_t)at);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                int e = n < 0 ? errno : -1;
#pragma omp critical(model_memory_read)
                if (!failed)
                    failed = e;
                break;
            }
            at += (size_t)n;
        }
    }
    if (failed) {
        huge_pages_free(p, size);
        return failed > 0
                   ? llm_fail(err, LLM_ERR_IO, "%s: cannot read: %s", path, strerror(failed))
                   : llm_fail(err, LLM_ERR_IO, "%s: the file shrank while it was read", path);
    }
    (void)mprotect(p, size, PROT_READ); /* as the mapping: a stray write faults */
    *out = p;
    return LLM_OK;
}

void model_memory_release(void *p, size_t size, bool read_in)
{
    if (!p)
        return;
    if (read_in)
        huge_pages_free(p, size);
    else
        munmap(p, size);
}

bool model_memory_writable(void *p, size_t size, bool writable)
{
    return mprotect(p, size, writable ? PROT_READ | PROT_WRITE : PROT_READ) == 0;
}

void model_memory_give_back(const void *p, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)p + page - 1) / page * page;
    uintptr_t to = ((uintptr_t)p + n) / page * page;
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_DONTNEED);
}
