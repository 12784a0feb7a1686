/* guess_length.c — how many guesses a step of speculative decoding should ask for: the
 * acceptance and the cost of a check measured as decoding goes (guess_length.h). */
#include "guess_length.h"

#include <string.h>

enum {
    GUESS_LENGTH_WINDOW = 16, /* steps a size's mean time counts at most */
    GUESS_LENGTH_PLAIN_FIRST = 2, /* plain steps timed before any guess (the line's a) */
    GUESS_LENGTH_PROBE = 64,  /* after this many steps chosen 0 in a row, one at max */
};

/* The hopeful prior of the acceptance and its weight, in guesses; how much a check's
 * counts keep of the earlier ones (a window of about ten checks), and a step chosen 0
 * (the prior is back after some 50 of them). */
static const double PRIOR_ACCEPTANCE = 0.7, PRIOR_WEIGHT = 2.0, DECAY = 0.9, DRIFT = 0.97;

void guess_length_init(guess_length *g)
{
    memset(g, 0, sizeof *g);
}

void guess_length_note_step(guess_length *g, int positions, double ms)
{
    if (positions < 1 || positions > GUESS_LENGTH_MAX + 1 || !(ms >= 0))
        return;
    bool after_check = g->last_positions > 1;
    g->last_positions = positions;
    if (positions == 1 && g->trying == GUESS_TRY_FIRST)
        g->trying = GUESS_TRY_NONE; /* the try found nothing to guess */
    if (positions > 1 && !after_check)
        return; /* its guesser may have caught up first on the plain steps before it (a
                   draft model runs them as a batch): not what a check costs */
    double *mean = &g->ms[positions];
    if (g->weight[positions] >= 2) { /* a step the machine held up counts as 3x the mean */
        if (ms > 3 * *mean)
            ms = 3 * *mean;
        if (ms < *mean / 3)
            ms = *mean / 3;
    }
    if (g->weight[positions] < GUESS_LENGTH_WINDOW)
        g->weight[positions] += 1;
    *mean += (ms - *mean) / g->weight[positions];
}

void guess_length_note_check(guess_length *g, int guessed, int accepted)
{
    if (guessed <= 0)
        return;
    g->accepted = g->accepted * DECAY + accepted;
    g->rejected = g->rejected * DECAY + (accepted < guessed);
    if (g->trying == GUESS_TRY_FIRST)
        g->trying = accepted > 0 ? GUESS_TRY_AGAIN : GUESS_TRY_NONE;
}

void guess_length_new_text(guess_length *g)
{
    g->accepted = g->rejected = 0;
    g->plain_run = 0;
    g->fresh = true;
    g->trying = GUESS_TRY_NONE;
}

double guess_length_acceptance(const guess_length *g)
{
    return (g->accepted + PRIOR_ACCEPTANCE * PRIOR_WEIGHT) /
           (g->accepted + g->rejected + PRIOR_WEIGHT);
}

/* The cost of a step of n positions as a line, *at_one + *per (n - 1) for n >= 2 (a
 * plain step costs the plain steps' mean): before any check, flat at that mean (a guess
 * is tried before it is judged); with checks of one size seen, the line from the plain
 * steps' mean to theirs (a check costs something beyond its positions: sizes between
 * are not free); with several, the least-squares line through them, each size counting
 * as its steps (so that one size's few slow steps do not decide alone). */
static void cost_line(const guess_length *g, double *at_one, double *per)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    int sizes = 0, seen = 0;
    for (int p = 2; p <= GUESS_LENGTH_MAX + 1; p++)
        if (g->weight[p] > 0) {
            double w = g->weight[p];
            sw += w, sx += w * p, sy += w * g->ms[p], sxx += w * p * p, sxy += w * p * g->ms[p];
            sizes++;
            seen = p;
        }
    *at_one = g->ms[1];
    *per = 0;
    if (sizes == 1) {
        *per = (g->ms[seen] - g->ms[1]) / (seen - 1);
    } else if (sizes > 1) {
        double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
        *per = slope > 0 ? slope : 0;
        *at_one = (sy - *per * (sx - sw)) / sw; /* the line's value at n = 1 */
    }
}

int guess_length_choose(guess_length *g, int min, int max)
{
    if (max > GUESS_LENGTH_MAX)
        max = GUESS_LENGTH_MAX;
    if (min >= max)
        return max < 0 ? 0 : max;
    if (min < 0)
        min = 0;
    if (g->weight[1] < GUESS_LENGTH_PLAIN_FIRST && min == 0)
        return 0; /* a plain step, timed: the line's a */
    if (g->plain_run >= GUESS_LENGTH_PROBE || g->fresh || g->trying == GUESS_TRY_AGAIN) {
        /* a try, whatever the estimate; where its guesses were kept, a second, since the
         * first after plain steps is not timed (guess_length_note_step) and a cost once
         * measured wrong must be met again */
        g->trying = g->trying == GUESS_TRY_AGAIN ? GUESS_TRY_NONE : GUESS_TRY_FIRST;
        g->plain_run = 0;
        g->fresh = false;
        return max;
    }
    const double a = guess_length_acceptance(g);
    double at_one, per;
    cost_line(g, &at_one, &per);
    int best = min;
    double best_rate = -1, tokens = 1, power = 1;
    for (int k = 1; k <= min; k++)
        tokens += (power *= a);
    for (int k = min; k <= max; k++) {
        if (k > min)
            tokens += (power *= a); /* 1 + a + ... + a^k */
        double cost = k == 0 ? g->ms[1] : at_one + per * k;
        if (cost < 0)
            cost = 0;
        double rate = cost > 0 ? tokens / cost : tokens;
        if (rate > best_rate * (1 + 1e-9)) {
            best_rate = rate;
            best = k;
        }
    }
    if (best == 0) { /* the counts fade, so that the prior comes back, and so do the
                        checks' times, so that the next check's counts for more */
        g->plain_run++;
        g->accepted *= DRIFT;
        g->rejected *= DRIFT;
        for (int p = 2; p <= GUESS_LENGTH_MAX + 1; p++)
            if (g->weight[p] > 0) /* still seen, but the next check's time all but
                                     replaces it after a long wait */
                g->weight[p] = g->weight[p] * DRIFT > 0.01 ? g->weight[p] * DRIFT : 0.01;
    } else {
        g->plain_run = 0;
    }
    return best;
}
