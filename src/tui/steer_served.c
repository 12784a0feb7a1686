/* steer_served.c — steering a reply of a served model (llmchat --server URL): r forgets
 * the reply after the selected position, a digit puts the selected position's k-th
 * candidate next (one of the alternatives the server named), /force TEXT puts TEXT's
 * tokens (the server's tokenization) at the reply's end, and the reply goes on
 * from there in a new request with the whole sequence as ids (remote_chat_resume_at:
 * llama-server and vLLM take ids; llama-server's prompt cache makes it one token's
 * work). p stops a reply being written and lets a stopped one go on, n asks for one
 * token, Backspace takes the newest one back. Unlike a local reply's steering, a
 * choice streams on at once rather than pausing, the keys work in the panes (not on
 * the input line, whose steering keys need a reply being computed here) and no branches
 * are kept. Owns nothing. */
#include "tui_state.h"

#include <stdio.h>

#include "clock.h"

bool served_steers(key_action a)
{
    return a == ACT_REWIND || a == ACT_CHOOSE || a == ACT_PAUSE || a == ACT_STEP ||
           a == ACT_TAKE_BACK;
}

/* After a steering call with outcome st (what was done said in done): Conversation
 * shows the reply as it is now, and it streams on. */
static void went_on(tui *t, llm_status st, const llm_err *err, const char *done)
{
    if (st != LLM_OK) {
        tui_notice(t, "[%s]", err->text);
        return;
    }
    tui_show_remote_reply(t);
    tui_notice(t, "[%s; the server goes on from there]", done);
    t->run.state = remote_chat_replying(t->rc) ? RUN_GENERATING : RUN_STOPPED;
    t->dirty |= DIRTY_CONV;
    t->run.paused = false;
    t->sel.pos = -1;
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    t->save_pending = true;
    t->dirty |= DIRTY_ALL;
    tui_describe_remote(t);
}

/* The selected position, when a reply can go on after it; -1 with the reason said. */
static int selected_in_reply(tui *t)
{
    int sel = selection_get(&t->sel, &t->src);
    int n = remote_chat_turn_count(t->rc);
    const remote_turn *turn = n > 0 ? remote_chat_turn(t->rc, n - 1) : NULL;
    if (sel < 0 || !turn) {
        tui_notice(t, "[there is no reply to steer]");
        return -1;
    }
    if (sel + 1 < turn->reply_start || sel + 1 > turn->end) {
        tui_say(t, "select a position of the newest reply (or the one before it) in Tokens");
        return -1;
    }
    return sel;
}

void served_rewind_to_selection(tui *t)
{
    int sel = selected_in_reply(t);
    if (sel < 0)
        return;
    llm_err err;
    char done[64];
    snprintf(done, sizeof done, "rewound to position %d", sel + 1);
    went_on(t, remote_chat_resume_at(t->rc, sel + 1, NULL, 0, t->served->steps, 0, &err), &err,
            done);
}

void served_choose(tui *t, int k)
{
    int sel = selected_in_reply(t);
    if (sel < 0)
        return;
    const step_record *r = remote_chat_record(t->rc, sel);
    if (!r || k > r->n_top) {
        tui_notice(t, "[position %d has %d candidates from the server, not %d]", sel,
                   r ? r->n_top : 0, k);
        return;
    }
    llm_err err;
    char done[64];
    snprintf(done, sizeof done, "position %d forced", sel + 1);
    went_on(t, remote_chat_resume_at(t->rc, sel + 1, &r->top[k - 1].id, 1, t->served->steps, 0,
                                     &err),
            &err, done);
}

void served_force_text(tui *t, const char *text)
{
    if (!*text) {
        tui_notice(t, "[/force needs text: /force TEXT puts TEXT's tokens into the reply]");
        return;
    }
    llm_err err;
    went_on(t, remote_chat_force_text(t->rc, text, t->served->steps, &err), &err,
            "the text forced");
}

/* The newest turn, when it has a reply not being written; NULL with the reason said. */
static const remote_turn *stopped_reply(tui *t, const char *key)
{
    int n = remote_chat_turn_count(t->rc);
    const remote_turn *turn = n > 0 ? remote_chat_turn(t->rc, n - 1) : NULL;
    if (!turn) {
        tui_say(t, "%s: there is no reply yet", key);
        return NULL;
    }
    if (remote_chat_replying(t->rc)) {
        tui_say(t, "%s: the reply is being written (p pauses it)", key);
        return NULL;
    }
    return turn;
}

static const char SERVED_PAUSE_HINT[] =
    "[paused: p goes on, n asks for one token, a digit chooses, r rewinds, Backspace takes "
    "one back]";

void served_pause(tui *t)
{
    if (remote_chat_replying(t->rc)) { /* the request stops; the reply can go on from there */
        remote_chat_stop(t->rc);
        t->run.state = RUN_STOPPED;
        tui_notice(t, "%s", SERVED_PAUSE_HINT);
        t->dirty |= DIRTY_ALL;
        tui_describe_remote(t);
        return;
    }
    const remote_turn *turn = stopped_reply(t, "p");
    if (!turn)
        return;
    llm_err err;
    went_on(t, remote_chat_resume_at(t->rc, turn->end, NULL, 0, t->served->steps, 0, &err),
            &err, "going on");
}

void served_step(tui *t)
{
    const remote_turn *turn = stopped_reply(t, "n");
    if (!turn)
        return;
    llm_err err;
    llm_status st = remote_chat_resume_at(t->rc, turn->end, NULL, 0, t->served->steps, 1, &err);
    if (st != LLM_OK) {
        tui_notice(t, "[%s]", err.text);
        return;
    }
    t->run.state = remote_chat_replying(t->rc) ? RUN_GENERATING : RUN_STOPPED;
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    t->sel.pos = -1;
    t->dirty |= DIRTY_ALL;
    tui_describe_remote(t);
}

void served_back(tui *t)
{
    if (remote_chat_replying(t->rc))
        served_pause(t);
    int n = remote_chat_turn_count(t->rc);
    const remote_turn *turn = n > 0 ? remote_chat_turn(t->rc, n - 1) : NULL;
    if (!turn || turn->end <= turn->reply_start) {
        tui_say(t, "Backspace: the reply is empty, nothing to take back");
        return;
    }
    llm_err err;
    if (remote_chat_resume_at(t->rc, turn->end - 1, NULL, 0, t->served->steps, -1, &err) != LLM_OK) {
        tui_notice(t, "[%s]", err.text);
        return;
    }
    tui_show_remote_reply(t);
    t->run.state = RUN_STOPPED;
    t->sel.pos = -1;
    t->save_pending = true;
    t->dirty |= DIRTY_ALL;
    tui_describe_remote(t);
}
