/* lookup.c — prompt lookup's guesses (see lookup.h). */
#include "lookup.h"

#include <string.h>

/* The start of the newest match of tokens[n - m .. n) that ends before n - 1 (so that
 * at least one token follows it), or -1. */
static int newest_match(const int *tokens, int n, int m)
{
    const int *tail = tokens + n - m;
    for (int j = n - m - 1; j >= 0; j--)
        if (tokens[j] == tail[0] && !memcmp(tokens + j, tail, sizeof(int) * (size_t)m))
            return j;
    return -1;
}

int lookup_guess(const lookup_options *o, const int *tokens, int n, int *guess, int max)
{
    int lo = o ? o->ngram_min : LOOKUP_NGRAM_MIN, hi = o ? o->ngram_max : LOOKUP_NGRAM_MAX;
    if (lo < 1)
        lo = 1;
    for (int m = hi; m >= lo; m--) {
        if (m + 1 > n)
            continue;
        int j = newest_match(tokens, n, m);
        if (j < 0)
            continue;
        int from = j + m, k = n - from < max ? n - from : max;
        memcpy(guess, tokens + from, sizeof(int) * (size_t)k);
        return k;
    }
    return 0;
}

int lookup_guesser(void *user, const int *tokens, int n, int *guess, int max)
{
    return lookup_guess(user, tokens, n, guess, max);
}
