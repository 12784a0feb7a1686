/* steer.c — steering a reply by hand: take its newest token back, rewind it to the
 * position selected in Tokens, choose one of the model's candidates there, or force
 * typed text into it.
 *
 * Rewinding or forcing keeps what the reply was as a branch (chat.h); '<' and '>'
 * switch the newest reply between its branches, 'B' lists them.
 *
 * Every action goes through the chat (chat_rewind, chat_force), so the dialog, the
 * engine's records and the Conversation pane stay in step, and each leaves the reply
 * paused at its new end: Tokens then shows the candidates for the next position, and
 * the user decides again (a digit chooses, n samples one token, p resumes). Only the
 * newest reply can be steered; a reply that ended is reopened (its closing EOS goes).
 * Owns nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "tui_state.h"

static const chat_turn *newest_turn(const tui *t)
{
    return chat_get_turn(t->c, chat_turn_count(t->c) - 1);
}

/* Rewinds the newest reply to pos (keeping positions < pos) and pauses it there. */
static bool rewind_to(tui *t, int pos)
{
    llm_err err;
    err.text[0] = '\0';
    if (chat_rewind(t->c, pos, &err) != LLM_OK) {
        tui_notice(t, "[%s]", err.text);
        return false;
    }
    tui_show_reply(t);
    tui_show_branch(t);
    t->run.state = RUN_GENERATING;
    t->run.paused = true;
    t->sel.pos = -1; /* follow the newest position: its candidates are the next choice */
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    t->dirty |= DIRTY_ALL;
    return true;
}

/* Forces one token into the open reply; false when the reply did not go on. */
static bool force_one(tui *t, int id)
{
    chat_progress p;
    const char *text = NULL;
    llm_err err;
    err.text[0] = '\0';
    if (chat_force(t->c, id, &p, &text, &err) != LLM_OK) {
        tui_notice(t, "[cannot force token %d: %s]", id, err.text);
        return false;
    }
    tui_took_token(t, p, text, &err);
    return p == CHAT_GENERATING && chat_replying(t->c);
}

void steer_back(tui *t)
{
    const chat_turn *turn = newest_turn(t);
    if (!turn) {
        tui_notice(t, "[there is no reply to take tokens back from]");
        return;
    }
    int limit = chat_reply_limit(t->c);
    if (limit <= turn->reply_start) {
        tui_notice(t, "[the reply is empty: nothing to take back]");
        return;
    }
    rewind_to(t, limit - 1);
}

/* Whether the selected position sel can steer the newest reply: the position before
 * the reply (the reply written again) or one of the reply's. Says why not, in the
 * positions Tokens shows. */
static bool in_newest_reply(tui *t, int sel, char key)
{
    const chat_turn *turn = newest_turn(t);
    if (sel >= turn->reply_start - 1)
        return true;
    if (turn->end > turn->reply_start)
        tui_notice(t, "[%c steers the last reply, positions %d-%d: position %d is before it "
                      "(select %d to write the reply again)]", key, turn->reply_start,
                   turn->end - 1, sel, turn->reply_start - 1);
    else
        tui_notice(t, "[%c steers the last reply, which starts at position %d: position %d is "
                      "before it (select %d)]", key, turn->reply_start, sel, turn->reply_start - 1);
    return false;
}

void steer_rewind_to_selection(tui *t)
{
    int sel = selection_get(&t->sel, &t->src);
    if (sel < 0 || !newest_turn(t)) {
        tui_notice(t, "[there is no reply to rewind]");
        return;
    }
    if (!in_newest_reply(t, sel, 'r'))
        return;
    /* the newest position of a reply that ended is its closing token: r reopens the
     * reply there, the closing token undone, for another choice */
    int limit = chat_reply_limit(t->c);
    if (sel + 1 >= limit && chat_replying(t->c)) {
        tui_say(t, "r rewinds the reply to the selected position: it is the newest already "
                   "(Left selects an earlier one)");
        return;
    }
    rewind_to(t, sel + 1 > limit ? limit : sel + 1);
}

void steer_choose(tui *t, int k)
{
    int sel = selection_get(&t->sel, &t->src);
    const step_record *r = sel >= 0 ? engine_record(t->e, sel) : NULL;
    if (!r || !newest_turn(t)) {
        tui_notice(t, "[there is no reply to choose a token for]");
        return;
    }
    if (k > r->n_top) {
        tui_notice(t, "[position %d has %d candidates, not %d]", sel, r->n_top, k);
        return;
    }
    if (!in_newest_reply(t, sel, (char)('0' + k % 10)))
        return;
    int id = r->top[k - 1].id; /* read before the rewind changes the records */
    if (rewind_to(t, sel + 1))
        force_one(t, id);
}

void steer_force_text(tui *t, const char *text)
{
    if (!*text) {
        tui_notice(t, "[/force needs text: /force TEXT puts TEXT's tokens into the reply]");
        return;
    }
    if (!newest_turn(t)) {
        tui_notice(t, "[there is no reply to force text into: send a message first]");
        return;
    }
    if (!chat_replying(t->c) && !rewind_to(t, chat_reply_limit(t->c)))
        return;
    int n = tokenizer_encode(engine_tokenizer(t->e), text, NULL, 0);
    int *ids = n > 0 ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (!ids) {
        tui_notice(t, n == 0 ? "[/force: the text has no tokens]" : "[/force: out of memory]");
        return;
    }
    tokenizer_encode(engine_tokenizer(t->e), text, ids, n);
    for (int i = 0; i < n && force_one(t, ids[i]); i++)
        ;
    free(ids);
}

static const char NO_BRANCH[] =
    "[the reply has no other branch: rewinding it (r, Backspace) or choosing another token "
    "(1-9, 0) makes one]";

void steer_branch(tui *t, int delta)
{
    int i = chat_turn_count(t->c) - 1;
    int count = chat_branch_count(t->c, i);
    if (count < 2) {
        tui_notice(t, "%s", NO_BRANCH);
        return;
    }
    int from = chat_branch_current(t->c, i);
    int to = ((from + delta) % count + count) % count;
    chat_branch_view v;
    chat_branch_get(t->c, i, to, &v);
    int fork = v.fork; /* where it parts from the reply on screen */
    llm_err err;
    err.text[0] = '\0';
    if (chat_branch_switch(t->c, to, &err) != LLM_OK) {
        tui_notice(t, "[cannot switch to branch %d: %s]", to + 1, err.text);
        return;
    }
    tui_show_reply(t);
    tui_show_branch(t);
    if (chat_replying(t->c)) {
        t->run.state = RUN_GENERATING; /* a branch left open comes back paused */
        t->run.paused = true;
    } else {
        t->run.state = RUN_IDLE;
    }
    selection_set(&t->sel, &t->src, fork - 1); /* the candidates the branches chose from */
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    t->dirty |= DIRTY_ALL;
    tui_notice(t, "[branch %d/%d: parts from branch %d at position %d]", to + 1, count, from + 1,
               fork);
}

/* The first bytes of a branch's text from position pos on, into buf. */
static void branch_preview(const tui *t, const chat_branch_view *v, int reply_start, int pos,
                           char *buf, size_t size)
{
    const tokenizer *tok = engine_tokenizer(t->e);
    size_t n = 0;
    buf[0] = '\0';
    for (int k = pos - reply_start; k < v->n_tokens && n + 1 < size && n < 24; k++) {
        char piece[TOKENIZER_PIECE_MAX + 1];
        int prev = k > 0 ? v->tokens[k - 1] : tokenizer_bos(tok);
        size_t len = tokenizer_decode(tok, prev, v->tokens[k], piece, sizeof piece);
        if (tokenizer_is_control(tok, v->tokens[k]))
            len = (size_t)snprintf(piece, sizeof piece, "<%s>",
                                   v->tokens[k] == tokenizer_eos(tok) ? "end" : "ctl");
        if (n + len >= size)
            break;
        memcpy(buf + n, piece, len);
        n += len;
        buf[n] = '\0';
    }
}

void steer_list_branches(tui *t)
{
    int i = chat_turn_count(t->c) - 1;
    int count = chat_branch_count(t->c, i);
    const chat_turn *turn = newest_turn(t);
    if (!turn || count < 2) {
        tui_notice(t, "%s", NO_BRANCH);
        return;
    }
    int cur = chat_branch_current(t->c, i);
    int at = selection_get(&t->sel, &t->src) + 1; /* the token the selected candidates chose */
    bool here = false;
    chat_branch_view v;
    for (int k = 0; k < count; k++)
        here |= k != cur && chat_branch_get(t->c, i, k, &v) && v.fork == at;
    char line[1024];
    size_t n = (size_t)snprintf(line, sizeof line, here ? "[branches at position %d:" :
                                "[no branch parts at position %d; the reply's branches:", at);
    for (int k = 0; k < count && n < sizeof line; k++) {
        if (!chat_branch_get(t->c, i, k, &v))
            continue;
        if (k == cur) {
            n += (size_t)snprintf(line + n, sizeof line - n, " %d on screen,", k + 1);
            continue;
        }
        if (here && v.fork != at)
            continue;
        char preview[64];
        branch_preview(t, &v, turn->reply_start, v.fork, preview, sizeof preview);
        if (here)
            n += (size_t)snprintf(line + n, sizeof line - n, " %d \"%s\",", k + 1, preview);
        else
            n += (size_t)snprintf(line + n, sizeof line - n, " %d from %d \"%s\",", k + 1,
                                  v.fork, preview);
    }
    if (n >= sizeof line)
        n = sizeof line - 1;
    if (line[n - 1] == ',')
        line[--n] = '\0';
    tui_notice(t, "%s; < > switch]", line);
}
