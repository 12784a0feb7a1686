/* steer_served.c — steering a reply of a served model (llmchat --server URL): r forgets
 * the reply after the selected position, a digit puts the selected position's k-th
 * candidate next (one of the alternatives the server named), and the reply goes on
 * from there in a new request with the whole sequence as ids (remote_chat_resume_at:
 * llama-server and vLLM take ids; llama-server's prompt cache makes it one token's
 * work). Unlike a local reply's steering, the reply streams on at once (no pause:
 * the server decides a request's tokens by itself) and keeps no branches. Owns
 * nothing. */
#include "tui_state.h"

#include "clock.h"

bool served_steers(key_action a)
{
    return a == ACT_REWIND || a == ACT_CHOOSE;
}

/* The newest reply goes on from pos, `forced` (>= 0) put there first. */
static void resume_at(tui *t, int pos, int forced)
{
    llm_err err;
    if (remote_chat_resume_at(t->rc, pos, forced, t->served->steps, &err) != LLM_OK) {
        tui_notice(t, "[%s]", err.text);
        return;
    }
    tui_show_remote_reply(t);
    tui_notice(t, forced >= 0 ? "[position %d forced; the server goes on from there]"
                              : "[rewound to position %d; the server goes on from there]",
               pos);
    t->run.state = remote_chat_replying(t->rc) ? RUN_GENERATING : RUN_STOPPED;
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
    if (sel >= 0)
        resume_at(t, sel + 1, -1);
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
    resume_at(t, sel + 1, r->top[k - 1].id);
}
