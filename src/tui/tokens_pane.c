/* tokens_pane.c — the Tokens pane (token inspector).
 *
 * For the selected position it shows the token (id, escaped piece, phase), the
 * probability the model had given it (from the previous record), the model's top-k
 * candidates for the following position (logit, probability, bar; the token that
 * was actually chosen or came next is marked) and the sampler's decision. Prompt
 * positions thus show what the model would have predicted there. Reads step records
 * only; owns nothing but the selection keys. */
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "format.h"

static void piece_of(const tui *t, int id, char *buf, size_t size)
{
    tuifmt_piece(tokenizer_piece(t->tok, id), tokenizer_is_control(t->tok, id), buf, size);
}

/* The sampler's decision for r->next, in SAMPLER_LINES lines from y. */
enum { SAMPLER_LINES = 3 };

static void draw_sampler(tui *t, WINDOW *w, int y, int width, const step_record *r)
{
    char line[256], k[24], p[24], mp[24], pr[16];
    if (r->next < 0) {
        draw_text(t, w, y, 1, width, "sampler: waiting for the next token", A_DIM);
        return;
    }
    if (!r->sampled) {
        const step_record *nx = engine_record(t->e, r->pos + 1);
        bool forced = nx && nx->phase == STEP_FORCED;
        draw_text(t, w, y, 1, width,
                  forced ? "sampler: the next token was forced" : "sampler: the next token came from the prompt",
                  A_DIM);
        return;
    }
    const sampler_record *s = &r->sampler;
    const sampler_config *c = &s->config;
    snprintf(line, sizeof line, "sampler: T %.2f, rep-penalized %d", c->temperature, s->n_penalized);
    draw_text(t, w, y, 1, width, line, A_NORMAL);
    if (c->top_k > 0) snprintf(k, sizeof k, "top-k %d", s->kept_top_k); else snprintf(k, sizeof k, "top-k off");
    if (c->top_p < 1.0f) snprintf(p, sizeof p, "top-p %d", s->kept_top_p); else snprintf(p, sizeof p, "top-p off");
    if (c->min_p > 0.0f) snprintf(mp, sizeof mp, "min-p %d", s->kept_min_p); else snprintf(mp, sizeof mp, "min-p off");
    snprintf(line, sizeof line, "kept: %s, %s, %s", k, p, mp);
    draw_text(t, w, y + 1, 1, width, line, A_NORMAL);
    tuifmt_prob(s->chosen_prob, pr, sizeof pr);
    if (s->greedy)
        snprintf(line, sizeof line, "greedy: chose rank %d", s->chosen_rank);
    else
        snprintf(line, sizeof line, "draw %.4f chose rank %d (p %s)", s->draw, s->chosen_rank, pr);
    draw_text(t, w, y + 2, 1, width, line, A_NORMAL);
}

void tokens_draw(tui *t)
{
    WINDOW *w = t->w_tokens;
    if (!w)
        return;
    draw_box(t, w, "Tokens", t->focus == FOCUS_TOKENS);
    int h = getmaxy(w) - 2, width = getmaxx(w) - 2;
    int pos = tui_selected(t);
    if (h <= 0 || width <= 0)
        return;
    if (pos < 0) {
        draw_text(t, w, 1, 1, width, "no tokens yet: type a message below", A_DIM);
        return;
    }
    const step_record *r = engine_record(t->e, pos);
    if (!r)
        return;
    char piece[128], line[512], p[16];
    int y = 1;

    /* the token at pos */
    piece_of(t, r->token, piece, sizeof piece);
    char where[48];
    if (t->sel < 0 || pos == engine_pos(t->e) - 1)
        snprintf(where, sizeof where, "pos %d (newest)", pos);
    else
        snprintf(where, sizeof where, "pos %d of 0-%d", pos, engine_pos(t->e) - 1);
    snprintf(line, sizeof line, "%s  id %d  %s  %s", where, r->token, piece, step_phase_name(r->phase));
    draw_text(t, w, y++, 1, width, line, A_BOLD);
    if (y > h)
        return;
    const step_record *prev = pos > 0 ? engine_record(t->e, pos - 1) : NULL;
    if (prev && prev->next == r->token) {
        tuifmt_prob(prev->next_prob, p, sizeof p);
        snprintf(line, sizeof line, "model gave it %s (rank %d)", p, prev->next_rank);
    } else {
        snprintf(line, sizeof line, "first position: no prediction");
    }
    draw_text(t, w, y++, 1, width, line, A_NORMAL);

    /* candidates for pos + 1, then the sampler's decision (2 lines, kept if room) */
    int sampler_lines = h - y + 1 >= 6 ? SAMPLER_LINES : 0;
    int room = h - y + 1 - sampler_lines - 1; /* minus the heading */
    if (room >= 0 && y <= h) {
        if (r->next >= 0) {
            piece_of(t, r->next, piece, sizeof piece);
            snprintf(line, sizeof line, "next (pos %d): %s  top %d:", pos + 1, piece, t->top_k_shown);
        } else {
            snprintf(line, sizeof line, "predicting pos %d, top %d%s:", pos + 1, t->top_k_shown,
                     t->paused && chat_replying(t->c) ? " (a digit chooses)" : "");
        }
        draw_text(t, w, y++, 1, width, line, A_UNDERLINE);
    }
    int n = r->n_top < t->top_k_shown ? r->n_top : t->top_k_shown;
    if (n > room)
        n = room;
    int pw = width / 4;
    pw = pw < 6 ? 6 : pw > 16 ? 16 : pw;
    int fixed = 3 + 1 + pw + 1 + 7 + 1 + 6 + 1;
    int bw = width - fixed;
    for (int i = 0; i < n; i++) {
        const step_candidate *cd = &r->top[i];
        bool chosen = cd->id == r->next;
        char fitted[128];
        piece_of(t, cd->id, piece, sizeof piece);
        int cols = tuifmt_fit(piece, pw, t->utf8, fitted, sizeof fitted);
        tuifmt_prob(cd->prob, p, sizeof p);
        attr_t a = chosen ? draw_attr(t, PAIR_CHOSEN, A_REVERSE) : A_NORMAL;
        wattron(w, a);
        mvwprintw(w, y, 1, "%s%2d ", chosen ? ">" : " ", i + 1);
        waddstr(w, fitted);
        for (int k = cols; k < pw; k++)
            waddch(w, ' ');
        wprintw(w, " %7.2f %6s ", cd->logit, p);
        wattroff(w, a);
        if (bw >= 2) {
            char bar[256];
            tuifmt_bar(cd->prob, bw, t->utf8, bar, sizeof bar);
            wattron(w, draw_attr(t, PAIR_BAR, A_NORMAL));
            waddstr(w, bar);
            wattroff(w, draw_attr(t, PAIR_BAR, A_NORMAL));
        }
        y++;
    }
    if (r->next >= 0 && n > 0 && r->next_rank > n && y <= h - sampler_lines) {
        tuifmt_prob(r->next_prob, p, sizeof p);
        piece_of(t, r->next, piece, sizeof piece);
        snprintf(line, sizeof line, "> rank %d: %s %s", r->next_rank, piece, p);
        draw_text(t, w, y++, 1, width, line, draw_attr(t, PAIR_CHOSEN, A_REVERSE));
    }
    if (sampler_lines)
        draw_sampler(t, w, h - SAMPLER_LINES + 1, width, r);
}

void tokens_select(tui *t, int pos)
{
    int newest = engine_pos(t->e) - 1;
    if (pos < 0 || pos >= newest)
        t->sel = -1;
    else
        t->sel = pos;
    t->dirty |= DIRTY_TOKENS | DIRTY_ATTN;
}

bool tokens_act(tui *t, key_action a)
{
    int cur = tui_selected(t);
    switch (a) {
    case ACT_SEL_PREV: tokens_select(t, cur > 0 ? cur - 1 : 0); return true;
    case ACT_SEL_NEXT: tokens_select(t, cur + 1); return true;
    case ACT_SEL_BACK10: tokens_select(t, cur > 10 ? cur - 10 : 0); return true;
    case ACT_SEL_AHEAD10: tokens_select(t, cur + 10); return true;
    case ACT_SEL_FIRST: tokens_select(t, 0); return true;
    case ACT_SEL_NEWEST: tokens_select(t, -1); return true;
    case ACT_TOPK_MORE:
        if (t->top_k_shown < TUI_TOP_N)
            t->top_k_shown++;
        t->dirty |= DIRTY_TOKENS;
        return true;
    case ACT_TOPK_FEWER:
        if (t->top_k_shown > 1)
            t->top_k_shown--;
        t->dirty |= DIRTY_TOKENS;
        return true;
    default: return false;
    }
}
