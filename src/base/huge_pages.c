/* huge_pages.c — anonymous memory of 2 MiB pages, and what the kernel says of them
 * (huge_pages.h). */
#define _GNU_SOURCE 1
#include "huge_pages.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

bool huge_pages_offered(void)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return false;
    char line[128] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    /* "always [madvise] never": the bracketed word is the setting */
    return got && strstr(line, "[never]") == NULL && strchr(line, '[') != NULL;
#else
    return false;
#endif
}

static uintptr_t round_up(uintptr_t v, uintptr_t to)
{
    return (v + to - 1) / to * to;
}

void huge_pages_ask(void *p, size_t bytes)
{
#if defined(MADV_HUGEPAGE)
    uintptr_t from = round_up((uintptr_t)p, HUGE_PAGE_BYTES);
    uintptr_t to = ((uintptr_t)p + bytes) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

static size_t page_bytes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

void *huge_pages_alloc(size_t bytes, bool huge)
{
    size_t len = round_up(bytes ? bytes : 1, page_bytes());
    if (len > SIZE_MAX - HUGE_PAGE_BYTES)
        return NULL;
    /* more than asked, then the parts before the first 2 MiB boundary and after the
     * buffer given back, so that every whole huge page of it can be one */
    uint8_t *raw = mmap(NULL, len + HUGE_PAGE_BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)round_up((uintptr_t)raw, HUGE_PAGE_BYTES);
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + len + HUGE_PAGE_BYTES - (p + len));
    if (tail)
        munmap(p + len, tail);
    if (huge)
        huge_pages_ask(p, len);
    return p;
}

void huge_pages_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, round_up(bytes ? bytes : 1, page_bytes()));
}

uint64_t huge_pages_backing(const void *p, size_t bytes)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 0;
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    uint64_t total = 0;
    bool inside = false;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        uintmax_t from, to, kib;
        if (sscanf(line, "%jx-%jx ", &from, &to) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = from < hi && to > lo; /* a mapping's first line */
        else if (inside && sscanf(line, "AnonHugePages: %ju kB", &kib) == 1)
            total += (uint64_t)kib << 10;
    }
    fclose(f);
    return total;
}

uint64_t memory_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t bytes = 0;
    while (fgets(line, sizeof line, f)) {
        uintmax_t kib;
        if (sscanf(line, "MemAvailable: %ju kB", &kib) == 1) {
            bytes = (uint64_t)kib << 10;
            break;
        }
    }
    fclose(f);
    return bytes;
}
