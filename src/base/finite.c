/* finite.c — see finite.h. */
#include "finite.h"

#include <stdint.h>
#include <string.h>

enum { CHUNK = 4096 }; /* values scanned branch-free before looking at the result */

ptrdiff_t finite_first_bad(const float *x, size_t n)
{
    for (size_t lo = 0; lo < n; lo += CHUNK) {
        size_t hi = n - lo < CHUNK ? n : lo + CHUNK;
        uint32_t any = 0;
        for (size_t i = lo; i < hi; i++) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            any |= (u & 0x7f800000u) == 0x7f800000u; /* exponent all ones: Inf or NaN */
        }
        if (!any)
            continue;
        for (size_t i = lo; i < hi; i++) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            if ((u & 0x7f800000u) == 0x7f800000u)
                return (ptrdiff_t)i;
        }
    }
    return -1;
}
