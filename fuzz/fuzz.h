/* fuzz.h — what the fuzz targets share: the libFuzzer entry points, a way to hand
 * bytes to the core's path-based loaders without touching the disk, and the paths of
 * the fixtures some targets load once.
 *
 * Each fuzz/fuzz_*.c defines LLVMFuzzerTestOneInput (and LLVMFuzzerInitialize when it
 * needs set-up). The same file links either with libFuzzer (`make fuzz`: clang,
 * ASan + UBSan) or with fuzz/replay.c, a plain main() that feeds it the corpus files
 * (`make check`). A target aborts when one of its own checks fails, so a wrong
 * answer is a crash too. */
#ifndef LLMCHAT_FUZZ_H
#define LLMCHAT_FUZZ_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Fails the run (libFuzzer keeps the input as a crash) when cond is false. */
#define FUZZ_CHECK(cond)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* An in-memory file holding data[0..size), reachable by the path written to path
 * (/proc/self/fd/N). Returns the descriptor to close after use, or -1. */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t path_size)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)n;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

#ifndef FUZZ_SRCDIR
#define FUZZ_SRCDIR "."
#endif

/* Path of a file of the source tree (LLMCHAT_SRCDIR when set, else the tree the
 * target was built from), e.g. "data/models/tok512.bin". Static buffer. */
static inline const char *fuzz_source_path(const char *rel)
{
    static char buf[4096];
    const char *dir = getenv("LLMCHAT_SRCDIR");
    snprintf(buf, sizeof buf, "%s/%s", dir && *dir ? dir : FUZZ_SRCDIR, rel);
    return buf;
}

#endif
