/* token_shade.c — the shading of reply tokens by probability, entropy or speculative
 * decoding's verdict (see token_shade.h). The levels' bounds are fixed so that the same colour means the same
 * thing on every model and in every trace. */
#include "token_shade.h"

#include <math.h>
#include <string.h>

#include "textfmt.h"

/* Lower bounds of levels 0..3 (probability: the token is at level i when p >= bound);
 * upper bounds of levels 0..3 (entropy, nats: level i when H < bound). */
static const float prob_bounds[SHADE_LEVELS - 1] = {0.9f, 0.5f, 0.2f, 0.05f};
static const float entropy_bounds[SHADE_LEVELS - 1] = {0.5f, 1.5f, 2.5f, 3.5f};

static const char *const prob_labels[SHADE_LEVELS] = {"90%+", "50%+", "20%+", "5%+", "<5%"};
static const char *const entropy_labels[SHADE_LEVELS] = {"<0.5", "<1.5", "<2.5", "<3.5", "3.5+"};
static const char *const guess_labels[SHADE_LEVELS] = {"", "accepted", "", "", "rejected"};
enum { GUESS_ACCEPTED = 1, GUESS_REJECTED = SHADE_LEVELS - 1 };

int token_shade_level(token_shade_mode mode, const step_record *r)
{
    if (!r || r->next < 0)
        return -1;
    if (mode == SHADE_PROB) {
        if (!isfinite(r->next_prob))
            return -1;
        int lv = 0;
        while (lv < SHADE_LEVELS - 1 && r->next_prob < prob_bounds[lv])
            lv++;
        return lv;
    }
    if (mode == SHADE_ENTROPY) {
        if (!isfinite(r->entropy))
            return -1;
        int lv = 0;
        while (lv < SHADE_LEVELS - 1 && r->entropy >= entropy_bounds[lv])
            lv++;
        return lv;
    }
    if (mode == SHADE_GUESS && r->guessed) /* a token not guessed keeps plain colours */
        return r->guess == r->next ? GUESS_ACCEPTED : GUESS_REJECTED;
    return -1;
}

attr_t token_shade_attr(const tui_screen *scr, int lv)
{
    if (lv < 0 || lv >= SHADE_LEVELS)
        return A_NORMAL;
    if (scr->colors != COLORS_NONE && COLOR_PAIRS > PAIR_LEVEL + lv)
        return lv == 0 ? A_NORMAL : COLOR_PAIR(PAIR_LEVEL + lv) | (lv == SHADE_LEVELS - 1 ? A_BOLD : 0);
    /* without colours: what the model was sure of fades, surprises stand out (reverse
     * video is the selection's) */
    static const attr_t mono[SHADE_LEVELS] = {A_DIM, A_NORMAL, A_UNDERLINE, A_BOLD,
                                              A_BOLD | A_UNDERLINE};
    return mono[lv];
}

const char *token_shade_name(token_shade_mode mode)
{
    return mode == SHADE_ENTROPY ? "entropy" : mode == SHADE_GUESS ? "guesses" : "probability";
}

const char *token_shade_label(token_shade_mode mode, int lv)
{
    if (lv < 0 || lv >= SHADE_LEVELS)
        return "";
    return mode == SHADE_ENTROPY ? entropy_labels[lv]
         : mode == SHADE_GUESS   ? guess_labels[lv]
                                 : prob_labels[lv];
}

int token_shade_legend_width(token_shade_mode mode)
{
    if (mode == SHADE_OFF)
        return 0;
    int w = 1 + textfmt_width(token_shade_name(mode));
    for (int lv = 0; lv < SHADE_LEVELS; lv++)
        if (*token_shade_label(mode, lv))
            w += 1 + textfmt_width(token_shade_label(mode, lv));
    return w + 1;
}

void token_shade_legend_draw(const tui_screen *scr, WINDOW *w, int y, int x, token_shade_mode mode,
                             attr_t base)
{
    if (mode == SHADE_OFF)
        return;
    int end = getmaxx(w);
    const char *name = token_shade_name(mode);
    draw_text(scr, w, y, x + 1, end - x - 1, name, base);
    x += 1 + textfmt_width(name);
    for (int lv = 0; lv < SHADE_LEVELS && x < end; lv++) {
        const char *label = token_shade_label(mode, lv);
        if (!*label)
            continue;
        draw_text(scr, w, y, x, 1, " ", base);
        draw_text(scr, w, y, x + 1, end - x - 1, label, token_shade_attr(scr, lv));
        x += 1 + textfmt_width(label);
    }
}
