/* tokens_pane.c — the Tokens pane (token inspector, see tokens_pane.h).
 *
 * For the selected position it shows the token (id, escaped piece, phase), the
 * probability the model had given it (from the previous record), the model's top-k
 * candidates for the following position (logit, probability, bar; the token that
 * was actually chosen or came next is marked; after a sampled decision, each one's
 * final probability or the stage that removed it) and the sampler's decision. Prompt
 * positions thus show what the model would have predicted there. Reads step records
 * only; owns how many candidates it shows. */
#include "tokens_pane.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "steering.h"
#include "textfmt.h"
#include "format.h"
#include "token_shade.h"

struct tokens_pane {
    const tui_source *src; /* the engine, or a trace */
    tui_selection *sel; /* shared with Attention */
    int top_k_shown;    /* 1..TUI_TOP_N */
    bool choosing;      /* a paused reply: a digit chooses the next token */
};

tokens_pane *tokens_new(const tui_source *src, tui_selection *sel, int top_k_shown)
{
    tokens_pane *tp = calloc(1, sizeof *tp);
    if (!tp)
        tui_die("out of memory");
    tp->src = src;
    tp->sel = sel;
    tp->top_k_shown = top_k_shown < 1 ? 1 : top_k_shown > TUI_TOP_N ? TUI_TOP_N : top_k_shown;
    return tp;
}

void tokens_free(tokens_pane *tp)
{
    free(tp);
}

void tokens_set_choosing(tokens_pane *tp, bool choosing)
{
    tp->choosing = choosing;
}

/* The first of n wordings (the fullest first) that fits width, at (y, 1); the last is
 * cut when none fits. */
static void draw_wording(const tui_screen *scr, WINDOW *w, int y, int width, const char *const *texts,
                         int n, attr_t a)
{
    draw_text(scr, w, y, 1, width, texts[tuifmt_pick(texts, n, width)], a);
}

enum { WORDINGS = 4, LINE_MAX = 512 };
typedef char wording[WORDINGS][LINE_MAX];

/* draw_wording over the n first of words. */
static void draw_words(const tui_screen *scr, WINDOW *w, int y, int width, wording words, int n, attr_t a)
{
    const char *texts[WORDINGS];
    for (int i = 0; i < n; i++)
        texts[i] = words[i];
    draw_wording(scr, w, y, width, texts, n, a);
}

/* The sampler's decision for r->next, in SAMPLER_LINES lines from y. */
enum { SAMPLER_LINES = 3 };

static void draw_sampler(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int y, int width,
                         const step_record *r)
{
    char k[24], p[24], mp[24], pr[16], samp[96] = "";
    wording words;
    if (r->next < 0) { /* the settings the next decision will use (/set changes them) */
        const sampler_config *next = source_sampler(tp->src);
        if (!next) {
            draw_text(scr, w, y, 1, width, "sampler: nothing followed", A_DIM);
            return;
        }
        settings_format_short(next, samp, sizeof samp);
        snprintf(words[0], LINE_MAX, "sampler: waiting for the next token (%s)", samp);
        snprintf(words[1], LINE_MAX, "sampler: waiting (%s)", samp);
        snprintf(words[2], LINE_MAX, "sampler: %s", samp);
        draw_words(scr, w, y, width, words, 3, A_DIM);
        return;
    }
    if (!r->sampled && tp->src->rc && r->n_top > 0) { /* a served reply's token */
        const sampler_config *sc = source_sampler(tp->src);
        char settings[160];
        settings_format_short(sc, settings, sizeof settings);
        snprintf(words[0], LINE_MAX, "sampler: the server's, with %s", settings);
        snprintf(words[1], LINE_MAX, "sampler: the server's (%s)", settings);
        snprintf(words[2], LINE_MAX, "sampler: the server's");
        draw_words(scr, w, y, width, words, 3, A_DIM);
        return;
    }
    if (!r->sampled) {
        const step_record *nx = source_record(tp->src, r->pos + 1);
        bool forced = nx && nx->phase == STEP_FORCED;
        const char *said[] = {
            forced ? "sampler: the next token was forced" : "sampler: the next token came from the prompt",
            forced ? "sampler: next token forced" : "sampler: next token from the prompt",
            forced ? "next token forced" : "next token from the prompt"};
        draw_wording(scr, w, y, width, said, 3, A_DIM);
        return;
    }
    const sampler_record *s = &r->sampler;
    const sampler_config *c = &s->config;
    settings_format_short(c, samp, sizeof samp);
    snprintf(words[0], LINE_MAX, "sampler: %s, rep-penalized %d", samp, s->n_penalized);
    snprintf(words[1], LINE_MAX, "sampler: %s, rep-pen. %d", samp, s->n_penalized);
    snprintf(words[2], LINE_MAX, "sampler: %s", samp);
    draw_words(scr, w, y, width, words, 3, A_NORMAL);
    if (c->top_k > 0) snprintf(k, sizeof k, "%d", s->kept_top_k); else snprintf(k, sizeof k, "off");
    if (c->top_p < 1.0f) snprintf(p, sizeof p, "%d", s->kept_top_p); else snprintf(p, sizeof p, "off");
    if (c->min_p > 0.0f) snprintf(mp, sizeof mp, "%d", s->kept_min_p); else snprintf(mp, sizeof mp, "off");
    snprintf(words[0], LINE_MAX, "kept: top-k %s, top-p %s, min-p %s", k, p, mp);
    snprintf(words[1], LINE_MAX, "kept: k %s, p %s, min-p %s", k, p, mp);
    draw_words(scr, w, y + 1, width, words, 2, A_NORMAL);
    if (s->chosen != r->next) { /* the chat put the end token in its place */
        char drawn[64], put[64], how[24];
        if (s->greedy)
            snprintf(how, sizeof how, "greedy");
        else
            snprintf(how, sizeof how, "draw %.4f", s->draw);
        source_token(tp->src, s->chosen, drawn, sizeof drawn);
        source_token(tp->src, r->next, put, sizeof put);
        snprintf(words[0], LINE_MAX, "%s chose %s (rank %d): it ends the reply, %s closes it", how,
                 drawn, s->chosen_rank, put);
        snprintf(words[1], LINE_MAX, "%s chose %s (rank %d): reply ends", how, drawn,
                 s->chosen_rank);
        snprintf(words[2], LINE_MAX, "%s chose %s, reply ends", how, drawn);
        snprintf(words[3], LINE_MAX, "chose %s", drawn);
        draw_words(scr, w, y + 2, width, words, 4, A_NORMAL);
        return;
    }
    tuifmt_prob(s->chosen_prob, pr, sizeof pr);
    if (s->greedy) {
        snprintf(words[0], LINE_MAX, "greedy: chose rank %d", s->chosen_rank);
        draw_words(scr, w, y + 2, width, words, 1, A_NORMAL);
        return;
    }
    snprintf(words[0], LINE_MAX, "draw %.4f chose rank %d (p %s after the sampler)", s->draw,
             s->chosen_rank, pr);
    snprintf(words[1], LINE_MAX, "draw %.4f chose rank %d (%s after sampler)", s->draw, s->chosen_rank, pr);
    snprintf(words[2], LINE_MAX, "draw %.4f chose rank %d (p %s)", s->draw, s->chosen_rank, pr);
    snprintf(words[3], LINE_MAX, "draw %.4f: rank %d", s->draw, s->chosen_rank);
    draw_words(scr, w, y + 2, width, words, 4, A_NORMAL);
}

/* With heads knocked out, what they change at r's position (WHATIF_LINES lines from
 * y): the token that came next (or the top-1), before and after, and the new top. */
enum { WHATIF_LINES = 2 };

static void draw_whatif(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int y, int width,
                        const step_whatif *wi)
{
    char line[512], piece[64], a[16], b[16];
    source_token(tp->src, wi->target, piece, sizeof piece);
    tuifmt_prob(wi->target_prob_before, b, sizeof b);
    tuifmt_prob(wi->target_prob_after, a, sizeof a);
    snprintf(line, sizeof line, "heads out: %s %s -> %s, logit %+.2f", piece, b, a,
             wi->target_logit_after - wi->target_logit_before);
    draw_text(scr, w, y, 1, width, line, A_BOLD);
    size_t o = (size_t)snprintf(line, sizeof line, "with them out:");
    for (int i = 0; i < wi->n_top && o < sizeof line; i++) {
        source_token(tp->src, wi->id[i], piece, sizeof piece);
        tuifmt_prob(wi->prob_before[i], b, sizeof b);
        tuifmt_prob(wi->prob_after[i], a, sizeof a);
        o += (size_t)snprintf(line + o, sizeof line - o, " %s %s->%s", piece, b, a);
    }
    draw_text(scr, w, y + 1, 1, width, line, A_NORMAL);
}

/* The token at pos (line 1) and, when the pane has a second line (h >= 2), the
 * probability the model had given it. Returns the next line. */
static int draw_token(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int width, int h, int pos,
                      const step_record *r)
{
    char piece[128], line[512], p[16], where[48];
    source_token(tp->src, r->token, piece, sizeof piece);
    if (selection_follows(tp->sel, tp->src))
        snprintf(where, sizeof where, "pos %d (newest)", pos);
    else
        snprintf(where, sizeof where, "pos %d of 0-%d", pos, source_count(tp->src) - 1);
    snprintf(line, sizeof line, "%s  id %d  %s  %s", where, r->token, piece, step_phase_name(r->phase));
    char steer[256]; /* what the position ran with (a trace's "steer" too) */
    if (r->intervention && steering_format(r->intervention, steer, sizeof steer) > 0) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, "  | %s", steer);
    }
    draw_text(scr, w, 1, 1, width, line, A_BOLD);
    if (h < 2)
        return 2;
    const step_record *prev = pos > 0 ? source_record(tp->src, pos - 1) : NULL;
    if (!prev || prev->next != r->token) {
        draw_text(scr, w, 2, 1, width, "first position: no prediction", A_NORMAL);
        return 3;
    }
    wording words;
    if (prev->sampled && prev->sampler.chosen != r->token) { /* it took a drawn token's place */
        char drawn[64];
        source_token(tp->src, prev->sampler.chosen, drawn, sizeof drawn);
        tuifmt_prob(prev->sampler.chosen_model_prob, p, sizeof p);
        snprintf(words[0], LINE_MAX, "in place of %s, which the model gave %s and the sampler drew",
                 drawn, p);
        snprintf(words[1], LINE_MAX, "in place of %s (model %s, drawn)", drawn, p);
        snprintf(words[2], LINE_MAX, "for drawn %s (%s)", drawn, p);
        snprintf(words[3], LINE_MAX, "for %s", drawn);
        draw_words(scr, w, 2, width, words, 4, A_NORMAL);
        return 3;
    }
    if (tp->src->rc && isnan(prev->next_prob)) { /* beyond the alternatives it sent */
        const char *said[] = {"the server sent no probability for it (not among its top)",
                              "the server sent no probability for it", "probability not sent"};
        draw_wording(scr, w, 2, width, said, 3, A_DIM);
        return 3;
    }
    tuifmt_prob(prev->next_prob, p, sizeof p);
    if (prev->guessed) { /* speculative decoding checked a guess for this position */
        char guess[64];
        source_token(tp->src, prev->guess, guess, sizeof guess);
        if (prev->guess == r->token) {
            snprintf(words[0], LINE_MAX, "a guess the sampler accepted; the model gave it %s (rank %d)",
                     p, prev->next_rank);
            snprintf(words[1], LINE_MAX, "guessed, accepted; model gave it %s (rank %d)", p,
                     prev->next_rank);
            snprintf(words[2], LINE_MAX, "guess accepted (%s)", p);
            snprintf(words[3], LINE_MAX, "guessed (%s)", p);
        } else {
            snprintf(words[0], LINE_MAX, "the sampler's pick, the guess %s rejected; the model gave it %s (rank %d)",
                     guess, p, prev->next_rank);
            snprintf(words[1], LINE_MAX, "guess %s rejected; model gave this %s", guess, p);
            snprintf(words[2], LINE_MAX, "guess %s rejected (%s)", guess, p);
            snprintf(words[3], LINE_MAX, "not %s (%s)", guess, p);
        }
        draw_words(scr, w, 2, width, words, 4, A_NORMAL);
        return 3;
    }
    const remote_comparison *vs = tp->src->check ? server_check_at(tp->src->check, pos) : NULL;
    if (vs) { /* checked against the server (--compare-server): its probability */
        char ps[32];
        tuifmt_prob(vs->p_server, ps, sizeof ps);
        snprintf(words[0], LINE_MAX, "model gave it %s (rank %d); the server %s, KL %.1e", p,
                 prev->next_rank, ps, vs->kl);
        snprintf(words[1], LINE_MAX, "model %s (rank %d); server %s, KL %.1e", p, prev->next_rank,
                 ps, vs->kl);
        snprintf(words[2], LINE_MAX, "model %s; server %s", p, ps);
        snprintf(words[3], LINE_MAX, "%s; server %s", p, ps);
        draw_words(scr, w, 2, width, words, 4, A_NORMAL);
        return 3;
    }
    snprintf(words[0], LINE_MAX, "model gave it %s (rank %d) before the sampler", p, prev->next_rank);
    snprintf(words[1], LINE_MAX, "model gave it %s (rank %d) before sampling", p, prev->next_rank);
    snprintf(words[2], LINE_MAX, "model gave it %s (rank %d)", p, prev->next_rank);
    snprintf(words[3], LINE_MAX, "model: %s, rank %d", p, prev->next_rank);
    draw_words(scr, w, 2, width, words, 4, A_NORMAL);
    return 3;
}

/* The newest call's guesses (speculative decoding, engine_last_guesses) when they touch
 * pos (its token was checked against them, or was one of them): into guess, *at the
 * position of the token they followed, *accepted how many the sampler took. 0: none. */
static int draft_at(const tokens_pane *tp, int pos, int *guess, int *at, int *accepted)
{
    if (!tp->src->e)
        return 0; /* a trace keeps each position's checked guess, not whole drafts */
    int n = engine_last_guesses(tp->src->e, at, guess, ENGINE_GUESS_MAX, accepted);
    return n > 0 && pos >= *at && pos <= *at + *accepted + 1 ? n : 0;
}

/* The draft line at y: "draft at pos 40:" and each guess in the colours of C's guesses
 * mode: accepted, rejected, and dimmed those after the rejected one (never checked). */
static void draw_draft(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int y, int width,
                       const int *guess, int n, int at, int accepted)
{
    char head[48], piece[64];
    snprintf(head, sizeof head, "draft at pos %d:", at);
    draw_text(scr, w, y, 1, width, head, A_NORMAL);
    int x = 1 + textfmt_width(head);
    for (int i = 0; i < n && x < width; i++) {
        source_token(tp->src, guess[i], piece, sizeof piece);
        attr_t a = i < accepted    ? token_shade_attr(scr, 1)
                 : i == accepted   ? token_shade_attr(scr, SHADE_LEVELS - 1)
                                   : A_DIM;
        draw_text(scr, w, y, x + 1, width - x, piece, a);
        x += 1 + textfmt_width(piece);
    }
}

/* How the lines from y to h are shared: the candidates' heading and rows, the line of
 * the token that came next when it is below them, and at the bottom what knocked-out
 * heads change and the sampler's decision (each kept only if there is room). */
typedef struct {
    int sampler_lines, whatif_lines; /* 0 when left out */
    int room;   /* lines for candidate rows (the heading not counted); < 0: none */
    int wanted; /* the candidates to show: top-k shown, at most those recorded */
    int n;      /* the candidate rows shown */
    bool below; /* the token that came next is not among them: "> rank 142: ..." */
} rows_plan;

static rows_plan plan_rows(const tokens_pane *tp, const step_record *r, bool whatif, int y, int h)
{
    rows_plan pl;
    pl.sampler_lines = h - y + 1 >= 6 ? SAMPLER_LINES : 0;
    pl.whatif_lines = whatif && h - y + 1 - pl.sampler_lines >= 2 + WHATIF_LINES ? WHATIF_LINES : 0;
    pl.room = h - y + 1 - pl.sampler_lines - pl.whatif_lines - 1; /* minus the heading */
    pl.wanted = r->n_top < tp->top_k_shown ? r->n_top : tp->top_k_shown;
    pl.n = pl.wanted;
    if (pl.n > pl.room)
        pl.n = pl.room;
    if (r->next >= 0 && r->next_rank > pl.n && pl.n > 0 && pl.n == pl.room)
        pl.n--; /* room for "> rank 142: ..." */
    pl.below = r->next >= 0 && r->next_rank > pl.n && pl.n > 0;
    return pl;
}

/* The candidates' heading at y: the position they predict, how many rows are shown,
 * and over the last column "final" after a sampled decision. */
static void draw_heading(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int y, int width, int pos,
                         const step_record *r, const rows_plan *pl)
{
    char top[48], short_top[48], piece[128];
    wording words;
    bool cut = pl->n < pl->wanted;
    snprintf(top, sizeof top, cut ? "top %d of %d (no room)" : "top %d", pl->n, pl->wanted);
    snprintf(short_top, sizeof short_top, cut ? "top %d/%d" : "top %d", pl->n, pl->wanted);
    const char *digit = tp->choosing ? " (a digit chooses)" : "";
    if (r->next >= 0 && r->guessed && r->guess != r->next) { /* a guess rejected */
        char guess[64];
        source_token(tp->src, r->next, piece, sizeof piece);
        source_token(tp->src, r->guess, guess, sizeof guess);
        snprintf(words[0], LINE_MAX, "next (pos %d): %s, not the guess %s  %s:", pos + 1, piece,
                 guess, top);
        snprintf(words[1], LINE_MAX, "next (pos %d): %s, not %s  %s:", pos + 1, piece, guess,
                 short_top);
        snprintf(words[2], LINE_MAX, "next: %s, not %s  %s:", piece, guess, short_top);
    } else if (r->next >= 0) {
        source_token(tp->src, r->next, piece, sizeof piece);
        snprintf(words[0], LINE_MAX, "next (pos %d): %s  %s:", pos + 1, piece, top);
        snprintf(words[1], LINE_MAX, "next (pos %d): %s  %s:", pos + 1, piece, short_top);
        snprintf(words[2], LINE_MAX, "next: %s  %s:", piece, short_top);
    } else {
        snprintf(words[0], LINE_MAX, "predicting pos %d, %s%s:", pos + 1, top, digit);
        snprintf(words[1], LINE_MAX, "predicting pos %d, %s%s:", pos + 1, short_top, digit);
        snprintf(words[2], LINE_MAX, "pos %d, %s%s:", pos + 1, short_top, tp->choosing ? ", digit picks" : "");
    }
    snprintf(words[3], LINE_MAX, "%s:", short_top);
    const char *texts[WORDINGS] = {words[0], words[1], words[2], words[3]};
    int i = tuifmt_pick(texts, WORDINGS, width);
    draw_text(scr, w, y, 1, width, texts[i], A_UNDERLINE);
    if (r->sampled && width >= 40 && textfmt_width(texts[i]) + 8 <= width)
        draw_text(scr, w, y, 1 + width - 6, 6, " final", A_UNDERLINE); /* the last column */
}

/* The columns of a candidate row: the piece, the bar, the final probability. */
typedef struct {
    int piece;  /* screen columns of the piece */
    int bar;    /* of the bar (< 2: none) */
    int final;  /* of the final probability or the stage that cut it (0: none) */
} row_columns;

static row_columns columns_for(const step_record *r, int width)
{
    row_columns c;
    c.piece = width / 4;
    c.piece = c.piece < 6 ? 6 : c.piece > 16 ? 16 : c.piece;
    /* after a sampled decision: each candidate's final probability, or the stage that
     * removed it */
    c.final = r->sampled && width >= 40 ? 7 : 0;
    c.bar = width - (3 + 1 + c.piece + 1 + 7 + 1 + 6 + 1 + c.final);
    return c;
}

/* Candidate i of r at line y: rank, piece, logit, probability, bar, final. */
static void draw_candidate(const tokens_pane *tp, const tui_screen *scr, WINDOW *w, int y, int width,
                           const step_record *r, int i, const row_columns *c)
{
    const step_candidate *cd = &r->top[i];
    bool chosen = cd->id == r->next;
    char piece[128], fitted[128], p[16];
    source_token(tp->src, cd->id, piece, sizeof piece);
    int cols = tuifmt_fit(piece, c->piece, scr->utf8, fitted, sizeof fitted);
    tuifmt_prob(cd->prob, p, sizeof p);
    attr_t a = chosen ? draw_attr(scr, PAIR_CHOSEN, A_REVERSE) : A_NORMAL;
    wattron(w, a);
    mvwprintw(w, y, 1, "%s%2d ", chosen ? ">" : " ", i + 1);
    waddstr(w, fitted);
    for (int k = cols; k < c->piece; k++)
        waddch(w, ' ');
    wprintw(w, " %7.2f %6s ", cd->logit, p);
    wattroff(w, a);
    if (c->bar >= 2) {
        char bar[256];
        tuifmt_bar(cd->prob, c->bar, scr->utf8, bar, sizeof bar);
        wattron(w, draw_attr(scr, PAIR_BAR, A_NORMAL));
        waddstr(w, bar);
        wattroff(w, draw_attr(scr, PAIR_BAR, A_NORMAL));
    }
    if (c->final) {
        char fin[16];
        if (cd->cut == SAMPLER_KEPT)
            tuifmt_prob(cd->p_final, fin, sizeof fin);
        else
            snprintf(fin, sizeof fin, "%s", sampler_cut_name(cd->cut));
        attr_t fa = cd->cut == SAMPLER_KEPT ? A_BOLD : A_DIM;
        wattron(w, fa);
        mvwprintw(w, y, 1 + width - c->final, " %6s", fin);
        wattroff(w, fa);
    }
}

static void tokens_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    tokens_pane *tp = state;
    draw_box(scr, w, tokens_pane_ops.name, focused);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    int pos = selection_get(tp->sel, tp->src);
    if (h <= 0 || width <= 0)
        return;
    if (pos < 0) {
        draw_text(scr, w, 1, 1, width, "no tokens yet: type a message below", A_DIM);
        return;
    }
    const step_record *r = source_record(tp->src, pos);
    if (!r)
        return;
    int y = draw_token(tp, scr, w, width, h, pos, r);
    if (y > h)
        return;

    /* candidates for pos + 1, then the sampler's decision (kept if room); the heading
     * says how many rows are shown, and the chosen token's line is kept when it is
     * below them */
    const step_whatif *wi = source_whatif(tp->src, pos);
    int guess[ENGINE_GUESS_MAX], at, accepted;
    int drafted = draft_at(tp, pos, guess, &at, &accepted);
    int draft_lines = drafted && h - y + 1 >= 8 ? 1 : 0; /* above whatif and the sampler */
    rows_plan pl = plan_rows(tp, r, wi != NULL, y, h - draft_lines);
    if (pl.room >= 0 && y <= h)
        draw_heading(tp, scr, w, y++, width, pos, r, &pl);
    row_columns c = columns_for(r, width);
    for (int i = 0; i < pl.n; i++)
        draw_candidate(tp, scr, w, y++, width, r, i, &c);
    if (pl.below && y <= h - draft_lines - pl.sampler_lines - pl.whatif_lines) {
        char piece[128], line[512], p[16];
        tuifmt_prob(r->next_prob, p, sizeof p);
        source_token(tp->src, r->next, piece, sizeof piece);
        snprintf(line, sizeof line, "> rank %d: %s %s", r->next_rank, piece, p);
        draw_text(scr, w, y++, 1, width, line, draw_attr(scr, PAIR_CHOSEN, A_REVERSE));
    }
    if (draft_lines)
        draw_draft(tp, scr, w, h - pl.sampler_lines - pl.whatif_lines, width, guess, drafted, at,
                   accepted);
    if (pl.whatif_lines)
        draw_whatif(tp, scr, w, h - pl.sampler_lines - WHATIF_LINES + 1, width, wi);
    if (pl.sampler_lines)
        draw_sampler(tp, scr, w, h - SAMPLER_LINES + 1, width, r);
}

static bool tokens_act(void *state, key_action a)
{
    tokens_pane *tp = state;
    switch (a) {
    case ACT_TOPK_MORE:
        if (tp->top_k_shown < TUI_TOP_N)
            tp->top_k_shown++;
        return true;
    case ACT_TOPK_FEWER:
        if (tp->top_k_shown > 1)
            tp->top_k_shown--;
        return true;
    default: return selection_act(tp->sel, tp->src, a);
    }
}

static const char *tokens_why_not(void *state, key_action a)
{
    tokens_pane *tp = state;
    if (a == ACT_TOPK_MORE && tp->top_k_shown >= TUI_TOP_N)
        return "Tokens already shows the most candidates the engine keeps";
    if (a == ACT_TOPK_FEWER && tp->top_k_shown <= 1)
        return "Tokens already shows one candidate";
    return selection_why_not(tp->sel, tp->src, a);
}

const view_ops tokens_pane_ops = {
    .name = "Tokens",
    .keys = KEYS_TOKENS,
    .place = VIEW_PANE,
    .draw = tokens_draw,
    .act = tokens_act,
    .why_not = tokens_why_not,
};
