/* token_shade.h — how the Conversation shades reply tokens: by the probability the
 * model gave each token, by the entropy of the distribution it was drawn from, or by
 * what speculative decoding made of it (a guess the sampler accepted, the sampler's
 * own pick where it rejected one; the C key cycles off, probability, entropy, guesses).
 * Five levels, from what the model was sure
 * of to what surprised it, each with its attribute (a colour, or without colours an
 * attribute: dim, plain, underline, bold, bold underlined) and its legend label.
 *
 * Plain data and curses attributes; the Conversation and the status line use it. */
#ifndef LLMCHAT_TUI_TOKEN_SHADE_H
#define LLMCHAT_TUI_TOKEN_SHADE_H

#include "draw.h"
#include "step.h"

typedef enum { SHADE_OFF = 0, SHADE_PROB, SHADE_ENTROPY, SHADE_GUESS, SHADE_MODES } token_shade_mode;

enum { SHADE_LEVELS = LEVELS_MAX };

/* The level (0: sure .. SHADE_LEVELS - 1: surprised) of the token that followed the
 * position of record r (its next), or -1 when r does not say (no record, no next, or a
 * trace without entropies). */
int token_shade_level(token_shade_mode mode, const step_record *r);
/* The attribute text of level lv is drawn with (A_NORMAL for -1). */
attr_t token_shade_attr(const tui_screen *scr, int lv);
/* "probability", "entropy" or "guesses". */
const char *token_shade_name(token_shade_mode mode);
/* The legend's label of level lv: "90%+" ... "<5%", "<0.5" ... "3.5+" nats, or for
 * guesses "accepted" (level 1) and "rejected" (level 4: the sampler's pick where a guess
 * was rejected); "" for a level the mode does not use. */
const char *token_shade_label(token_shade_mode mode, int lv);
/* Columns the legend takes (" probability 90%+ 50%+ 20%+ 5%+ <5% "). */
int token_shade_legend_width(token_shade_mode mode);
/* Draws the legend at (y, x) of w, each label in its level's attribute, the title in
 * base. */
void token_shade_legend_draw(const tui_screen *scr, WINDOW *w, int y, int x, token_shade_mode mode,
                             attr_t base);

#endif
