/* fnv1a.h — the 64-bit FNV-1a hash (Fowler, Noll, Vo): what the trace reader uses to
 * tell a repeated line from a rewritten one, and what a trace records of a control
 * vector's file so that --replay can tell the file changed. Not a cryptographic hash:
 * it catches accidents (a file overwritten, a line copied), not forgeries. */
#ifndef LLMCHAT_FNV1A_H
#define LLMCHAT_FNV1A_H

#include <stddef.h>
#include <stdint.h>

enum { FNV1A64_HEX = 17 }; /* 16 hex digits and a NUL */

#define FNV1A64_START 0xcbf29ce484222325ULL

/* h updated with data[0..n); start from FNV1A64_START. */
static inline uint64_t fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#endif
