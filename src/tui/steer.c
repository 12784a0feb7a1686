/* steer.c — steering a reply by hand: take its newest token back, rewind it to the
 * position selected in Tokens, choose one of the model's candidates there, or force
 * typed text into it.
 *
 * Every action goes through the chat (chat_rewind, chat_force), so the dialog, the
 * engine's records and the Conversation pane stay in step, and each leaves the reply
 * paused at its new end: Tokens then shows the candidates for the next position, and
 * the user decides again (a digit chooses, n samples one token, p resumes). Only the
 * newest reply can be steered; a reply that ended is reopened (its closing EOS goes).
 * Owns nothing. */
#include <stdlib.h>

#include "../clock.h"
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
    conv_set_reply(t->conv, newest_turn(t)->reply);
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

void steer_rewind_to_selection(tui *t)
{
    int sel = selection_get(&t->sel, t->e);
    if (sel < 0 || !newest_turn(t)) {
        tui_notice(t, "[there is no reply to rewind]");
        return;
    }
    rewind_to(t, sel + 1);
}

void steer_choose(tui *t, int k)
{
    int sel = selection_get(&t->sel, t->e);
    const step_record *r = sel >= 0 ? engine_record(t->e, sel) : NULL;
    if (!r || !newest_turn(t)) {
        tui_notice(t, "[there is no reply to choose a token for]");
        return;
    }
    if (k > r->n_top) {
        tui_notice(t, "[position %d has %d candidates, not %d]", sel, r->n_top, k);
        return;
    }
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
