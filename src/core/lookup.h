/* lookup.h — prompt lookup: guesses for speculative decoding found in the sequence itself.
 *
 * Text that repeats what came before (an edit of a given passage, a summary quoting it,
 * code that reuses its names) continues, more often than not, the way it did the last
 * time the same few tokens appeared. The guess: the newest n tokens (n from ngram_max
 * down to ngram_min) are looked for earlier in the sequence, the newest earlier match
 * first, and the tokens that followed that match are the guess. No second model, no
 * state: a pure function of the sequence (engine_guesser's shape, engine.h). */
#ifndef LLMCHAT_LOOKUP_H
#define LLMCHAT_LOOKUP_H

enum { LOOKUP_NGRAM_MIN = 2, LOOKUP_NGRAM_MAX = 4 };

typedef struct {
    int ngram_min, ngram_max; /* 1 <= ngram_min <= ngram_max */
} lookup_options;

/* Up to max tokens that followed the newest earlier match of the sequence's last n
 * tokens (the longest n that matches) into guess; returns how many (0: no match). */
int lookup_guess(const lookup_options *o, const int *tokens, int n, int *guess, int max);

/* lookup_guess as an engine_guesser: user is a const lookup_options * (NULL: the
 * defaults, LOOKUP_NGRAM_MIN..LOOKUP_NGRAM_MAX). */
int lookup_guesser(void *user, const int *tokens, int n, int *guess, int max);

#endif
