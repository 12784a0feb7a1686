/* finite.h — finding NaN and infinity in float arrays: the checks that turn a corrupt
 * model into a message instead of gibberish. */
#ifndef LLMCHAT_FINITE_H
#define LLMCHAT_FINITE_H

#include <stddef.h>

/* Index of the first value of x (n) that is NaN or infinite, or -1 when all are
 * finite. Reads x as bits, so it vectorises and works under any floating-point mode. */
ptrdiff_t finite_first_bad(const float *x, size_t n);

#endif
