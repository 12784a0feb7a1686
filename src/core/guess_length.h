/* guess_length.h — how many guesses a step of speculative decoding should ask for.
 *
 * A check of K guesses runs K + 1 positions in one call; it pays when the tokens it is
 * expected to add, 1 + a + a^2 + ... + a^K for a guess accepted with probability a (a
 * rejection ends the step), come cheaper than that many plain steps. Both sides are
 * measured as decoding goes: the acceptance from the checks, newest counting most, and
 * the cost of a call of n positions from the steps' wall time, the guesser's included
 * (a line in n through the checks' sizes, or from the plain steps' mean). The
 * choice is the K in [min, max] with the most tokens per millisecond. A new text's
 * first step tries them all; while the choice is 0 the acceptance drifts back towards
 * a hopeful prior, and after long enough a step tries them all again (and the next
 * one, where a guess was kept), so that a text that starts to repeat itself, or a
 * draft that starts to agree, is found out, and a check's cost once measured wrong is
 * measured again. No
 * clock and no model here: the engine tells it what each step cost (engine.c). */
#ifndef LLMCHAT_GUESS_LENGTH_H
#define LLMCHAT_GUESS_LENGTH_H

#include <stdbool.h>

enum { GUESS_LENGTH_MAX = 16 }; /* the most guesses a step can ask for (ENGINE_GUESS_MAX) */

typedef struct {
    double ms[GUESS_LENGTH_MAX + 2]; /* mean wall time of a step that ran n positions */
    double weight[GUESS_LENGTH_MAX + 2]; /* ... and how much it counts: a step 1, up to
                                            16, fading while the choice is 0 */
    double accepted, rejected; /* the checks' accepted guesses and rejections, decayed */
    int plain_run;             /* steps chosen 0 in a row */
    bool fresh;                /* a new text: its first choice tries all the guesses */
    /* a try's first step was asked for; its guesses were kept, so its second is next */
    enum { GUESS_TRY_NONE, GUESS_TRY_FIRST, GUESS_TRY_AGAIN } trying;
    int last_positions;        /* the newest step's positions (0: none yet) */
} guess_length;

void guess_length_init(guess_length *g);

/* A step ran `positions` positions (1: no guess ran) in ms milliseconds. A check right
 * after a plain step is not timed: its guesser may have caught up on the plain steps
 * first (a draft model runs them, or a whole prompt, as one batch). */
void guess_length_note_step(guess_length *g, int positions, double ms);

/* A check of `guessed` guesses kept the first `accepted` (accepted < guessed: the next
 * was rejected). */
void guess_length_note_check(guess_length *g, int guessed, int accepted);

/* A new text (the sequence rewound to its start): the acceptance is forgotten, the
 * costs kept, and the next choice tries all the guesses allowed (and the one after,
 * where the try kept a guess). */
void guess_length_new_text(guess_length *g);

/* How many guesses the next step should ask for, in [min, max] (min >= max: max). A
 * step chosen 0 is noted as such (the drift towards the prior). */
int guess_length_choose(guess_length *g, int min, int max);

/* The acceptance the choice uses now (0..1). */
double guess_length_acceptance(const guess_length *g);

#endif
