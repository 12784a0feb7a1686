/* actions.c — what the keys and the mouse do in the TUI: a key goes to the top overlay
 * when one is open (overlays.h: its bindings first, then Anywhere's, or, modal, any
 * other key closes it), else it is looked up in the key table (keys.c) where it works
 * now (Anywhere, the input line, Any pane, the focused pane) and its row's action runs
 * here, opens the overlay the action opens, or runs in the focused pane's act
 * (view_ops.h), which may first say why it would do nothing. The mouse (--mouse)
 * scrolls and focuses. The quit question's y/n and a resize are handled here too, and
 * a bracketed paste (its text into the input line, newlines kept).
 *
 * Owns nothing: it works on the controller's state (tui_state.h) through tui.c's
 * functions (stop the reply, quit, pause, redo the windows) and steer.c's. */
#include <stdio.h>

#include "experts_view.h"
#include "keys.h"
#include "tui_state.h"

/* The slow-motion steps the s key goes through, in ms after each token. */
static const int SLOW_STEPS[] = {0, 100, 300, 1000};

static void set_focus(tui *t, tui_focus f)
{
    t->focus = f;
    t->dirty |= DIRTY_ALL;
}

static bool focus_visible(const tui *t, tui_focus f)
{
    return f == FOCUS_INPUT || t->win[f] != NULL;
}

/* Tab / Shift-Tab: the next (dir 1) or previous (dir -1) pane that is not folded away. */
static void cycle_focus(tui *t, int dir)
{
    tui_focus f = t->focus;
    do
        f = (tui_focus)((f + FOCUS_COUNT + dir) % FOCUS_COUNT);
    while (!focus_visible(t, f));
    set_focus(t, f);
}

/* The top overlay off the stack: the next frame draws the screen again under it. */
static void close_overlay(tui *t)
{
    overlays_pop(t->overlays);
    touchwin(stdscr);
    wnoutrefresh(stdscr);
    t->dirty |= DIRTY_ALL;
}

/* Puts the overlay action a opens on top, or says why the screen cannot show it;
 * false when a opens none. */
static bool open_overlay(tui *t, key_action a)
{
    const view_ops *v = overlays_opened_by(a);
    if (!v)
        return false;
    const char *why = overlays_why_closed(t->overlays, a);
    if (why)
        tui_say(t, "%s", why);
    else if (!tui_overlay_fits(t, v))
        tui_say(t, "the %s needs a screen of at least %d x %d", v->name, v->min_cols, v->min_rows);
    else
        overlays_push(t->overlays, a);
    t->dirty |= DIRTY_ALL;
    return true;
}

bool tui_open_view(tui *t, const char *name)
{
    key_action a = overlays_command(name);
    return a != ACT_NONE && open_overlay(t, a);
}

static bool in_rect(const tui_rect *r, int y, int x)
{
    return r->visible && y >= r->y && y < r->y + r->h && x >= r->x && x < r->x + r->w;
}

/* The mouse (with --mouse): the wheel scrolls Conversation, or moves the selected
 * position over Tokens and Attention; a click focuses a pane. */
static void handle_mouse(tui *t)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return;
    tui_focus f = t->focus;
    bool found = true;
    if (in_rect(&t->lay.conv, ev.y, ev.x))
        f = FOCUS_CONV;
    else if (in_rect(&t->lay.tokens, ev.y, ev.x))
        f = FOCUS_TOKENS;
    else if (in_rect(&t->lay.attn, ev.y, ev.x))
        f = FOCUS_ATTN;
    else if (in_rect(&t->lay.input, ev.y, ev.x))
        f = FOCUS_INPUT;
    else
        found = false;
    bool on_positions = f == FOCUS_TOKENS || f == FOCUS_ATTN;
    if (ev.bstate & BUTTON4_PRESSED) {
        if (on_positions)
            selection_act(&t->sel, &t->src, ACT_SEL_PREV);
        else
            conv_scroll_by(t->conv, 3);
        t->dirty |= DIRTY_ALL;
    }
#ifdef BUTTON5_PRESSED
    else if (ev.bstate & BUTTON5_PRESSED) {
        if (on_positions)
            selection_act(&t->sel, &t->src, ACT_SEL_NEXT);
        else
            conv_scroll_by(t->conv, -3);
        t->dirty |= DIRTY_ALL;
    }
#endif
    else if (found && (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_RELEASED))) {
        set_focus(t, f);
    }
}

/* x in the heads and attribution views: the cursor's head out of the forward pass, or
 * back in; X (reset): a Gated DeltaNet head out with its state emptied (again: back in). */
static void knock_out(tui *t, bool reset)
{
    int l, h;
    if (!t->e) {
        tui_read_only(t);
        return;
    }
    if (!attn_head_cursor(t->attn, &l, &h)) {
        tui_say(t, reset ? "X knocks a DeltaNet head out with its state reset in the heads and "
                           "attribution views: v shows them"
                         : "x knocks a head out in the heads and attribution views: v shows them");
        return;
    }
    steering *s = engine_steering(t->e);
    bool out = reset ? !steering_is_reset(s, l, h) : !steering_is_out(s, l, h);
    llm_err err;
    llm_status st = out && reset ? steering_knock_out_reset(s, l, h, &err)
                                 : steering_knock_out(s, l, h, out, &err);
    if (st != LLM_OK)
        tui_notice(t, "[%s]", err.text);
    else if (out && reset)
        tui_notice(t, "[L%d H%d knocked out, its state emptied, from the next token on; back in, it starts from nothing; X restores it]",
                   l + 1, h + 1);
    else
        tui_notice(t, out ? "[L%d H%d knocked out from the next token on; Tokens shows what it changes at the selection; x restores it]"
                          : "[L%d H%d back in from the next token on]", l + 1, h + 1);
    t->dirty |= DIRTY_ALL;
}

/* x and f in the experts view: the cursor's expert out of its layer's router choice
 * (again: back in), or forced as the layer's first choice (again: no longer). Named
 * from 1 as the view names them, with the command that does the same and its numbers
 * from 0; said on the status line (the view covers Conversation) and noted in
 * Conversation. */
static void expert_key(tui *t, bool force)
{
    int l, e;
    const char *why = NULL;
    view_handle top = overlays_at(t->overlays, overlays_count(t->overlays) - 1);
    if (!t->e) {
        tui_read_only(t);
        return;
    }
    if (!experts_view_cursor(&top, &l, &e, &why)) {
        tui_say(t, "%s", why);
        return;
    }
    steering *s = engine_steering(t->e);
    int E = engine_model(t->e)->config.n_experts, K = engine_model(t->e)->config.n_experts_used;
    int forced = steering_expert_forced(s, l), left = 0;
    bool out = steering_expert_is_out(s, l, e);
    for (int i = 0; i < E; i++)
        left += !steering_expert_is_out(s, l, i);
    if (force && out) {
        tui_say(t, "L%d #%d is knocked out: x puts it back, then f can force it", l + 1, e + 1);
        return;
    }
    if (!force && forced == e) {
        tui_say(t, "L%d #%d is forced: f stops forcing it, then x can knock it out", l + 1, e + 1);
        return;
    }
    if (!force && !out && left - 1 < K) {
        tui_say(t, "L%d #%d stays in: %d of %d experts would be left, the router takes %d", l + 1,
                e + 1, left - 1, E, K);
        return;
    }
    llm_err err;
    llm_status st = force ? steering_force_expert(s, l, forced == e ? -1 : e, &err)
                          : steering_knock_out_expert(s, l, e, !out, &err);
    char said[LLM_ERR_TEXT_MAX + 64];
    if (st != LLM_OK)
        snprintf(said, sizeof said, "%s", err.text);
    else if (force && forced == e)
        snprintf(said, sizeof said, "L%d: no expert forced from the next token (as /force_expert off %d)",
                 l + 1, l);
    else if (force && forced >= 0)
        snprintf(said, sizeof said, "L%d #%d forced first from the next token, in place of #%d (as "
                 "/force_expert %d:%d)", l + 1, e + 1, forced + 1, l, e);
    else if (force)
        snprintf(said, sizeof said, "L%d #%d forced first from the next token (as /force_expert %d:%d); "
                 "f undoes", l + 1, e + 1, l, e);
    else if (!out)
        snprintf(said, sizeof said, "L%d #%d knocked out from the next token (as /knock expert %d:%d); "
                 "x undoes", l + 1, e + 1, l, e);
    else
        snprintf(said, sizeof said, "L%d #%d back in from the next token (as /knock restore expert %d:%d)",
                 l + 1, e + 1, l, e);
    tui_say(t, "%s", said);
    tui_notice(t, "[%s]", said);
    t->dirty |= DIRTY_ALL;
}

/* Esc, Ctrl-C: stops the reply, or says there is none. */
static void stop_key(tui *t)
{
    if (tui_replying(t))
        tui_stop_reply(t);
    else
        tui_say(t, "nothing to stop: no reply is running (quit: q in a pane, Ctrl-D on an empty line)");
}

/* n: one token of a paused reply. */
static void step_paused(tui *t)
{
    if (t->run.paused && tui_replying(t))
        t->step_once = true;
    else if (tui_replying(t))
        tui_say(t, "n steps a paused reply: p pauses this one");
    else
        tui_say(t, "n steps a paused reply: none is running (/step TEXT sends a message paused)");
}

/* s: the next slow-motion step (SLOW_STEPS), after the last one off. */
static void cycle_slow_motion(tui *t)
{
    int n = (int)(sizeof SLOW_STEPS / sizeof SLOW_STEPS[0]), i = 0;
    while (i < n && SLOW_STEPS[i] <= t->s->slow_motion_ms)
        i++;
    t->s->slow_motion_ms = i < n ? SLOW_STEPS[i] : 0;
    if (t->s->slow_motion_ms)
        tui_say(t, "slow motion: %d ms after each token (s: slower, then off)", t->s->slow_motion_ms);
    else
        tui_say(t, "slow motion off: full speed");
}

/* C: Conversation's reply tokens coloured by probability, by entropy, by speculative
 * decoding's verdict, or plain. */
static void cycle_shading(tui *t)
{
    token_shade_mode m = (token_shade_mode)((conv_shading(t->conv) + 1) % SHADE_MODES);
    conv_set_shading(t->conv, m);
    switch (m) {
    case SHADE_PROB:
        tui_say(t, "reply tokens coloured by the probability the model gave each, legend on the "
                   "status line (C: by entropy)");
        break;
    case SHADE_ENTROPY:
        tui_say(t, "reply tokens coloured by the entropy each was drawn from, legend on the status "
                   "line (C: by guesses)");
        break;
    case SHADE_GUESS:
        tui_say(t, "reply tokens coloured by speculative decoding: guesses the sampler accepted, "
                   "its own picks where it rejected one (--lookup, --draft; C: off)");
        break;
    default: tui_say(t, "reply tokens in plain colours (C: by probability)"); break;
    }
    t->dirty |= DIRTY_ALL;
}

/* z: every reply's thinking shown dimmed, or folded again (Conversation). */
static void toggle_thinking(tui *t)
{
    bool show = !conv_shows_thinking(t->conv);
    conv_set_show_thinking(t->conv, show);
    tui_say(t, show ? "thinking shown, dimmed (z folds it)" : "thinking folded (z unfolds it)");
    t->dirty |= DIRTY_CONV;
}

/* An action of the focused pane's own: it runs, or the pane says why it would do
 * nothing now. */
static void pane_action(tui *t, key_action a)
{
    const view_handle *p = &t->pane[t->focus];
    const char *why = p->ops && p->ops->why_not ? p->ops->why_not(p->state, a) : NULL;
    if (why)
        tui_say(t, "%s", why);
    else if (p->ops && p->ops->act(p->state, a))
        t->dirty |= DIRTY_ALL; /* the selection is shown by two panes */
}

/* Runs the action of binding b, pressed as key. The row says whether it steers (then
 * it needs a chat: read-only while viewing a trace) and whether it changes the chat
 * (then the chat is saved once idle). */
static void run_action(tui *t, const key_binding *b, int key)
{
    if (b->steers && !t->c && !(t->rc && served_steers(b->action))) {
        tui_read_only(t);
        return;
    }
    switch (b->action) {
    case ACT_FOCUS_NEXT: cycle_focus(t, 1); break;
    case ACT_FOCUS_PREV: cycle_focus(t, -1); break;
    case ACT_STOP: stop_key(t); break;
    case ACT_REDRAW:
        clearok(curscr, TRUE);
        t->dirty |= DIRTY_ALL;
        break;
    case ACT_QUIT: tui_request_quit(t); break;
    case ACT_READLINE:
        input_key(t->input, key, b->keycode);
        t->dirty |= DIRTY_INPUT;
        break;
    case ACT_PAUSE:
        if (t->rc)
            served_pause(t);
        else
            tui_toggle_pause(t);
        break;
    case ACT_STEP:
        if (t->rc)
            served_step(t);
        else
            step_paused(t);
        break;
    case ACT_SLOW_MOTION: cycle_slow_motion(t); break;
    case ACT_SHADE_TOKENS: cycle_shading(t); break;
    case ACT_SHOW_THINKING: toggle_thinking(t); break;
    case ACT_TAKE_BACK:
        if (t->rc)
            served_back(t);
        else
            steer_back(t);
        break;
    case ACT_REWIND:
        if (t->rc)
            served_rewind_to_selection(t);
        else
            steer_rewind_to_selection(t);
        break;
    case ACT_CHOOSE:
        if (t->rc)
            served_choose(t, key == '0' ? 10 : key - '0');
        else
            steer_choose(t, key == '0' ? 10 : key - '0');
        break;
    case ACT_BRANCH_PREV:
    case ACT_BRANCH_NEXT: steer_branch(t, b->action == ACT_BRANCH_NEXT ? 1 : -1); break;
    case ACT_BRANCH_LIST: steer_list_branches(t); break;
    case ACT_KNOCK_OUT: knock_out(t, false); break;
    case ACT_KNOCK_OUT_RESET: knock_out(t, true); break;
    case ACT_EXPERT_KNOCK: expert_key(t, false); break;
    case ACT_EXPERT_FORCE: expert_key(t, true); break;
    case ACT_PAGE_UP:
    case ACT_PAGE_DOWN: /* anywhere: Conversation scrolls */
        t->pane[FOCUS_CONV].ops->act(t->conv, b->action);
        t->dirty |= DIRTY_CONV;
        break;
    default:
        if (!open_overlay(t, b->action))
            pane_action(t, b->action);
        break;
    }
    if (b->changes_chat)
        t->save_pending = true; /* autosaved once idle */
}

/* A key while an overlay is open, to the top one: its binding's action runs there, or
 * the overlay says why it would do nothing. A key it does not take closes a modal
 * overlay (Esc and Ctrl-C still stop the reply); otherwise its own binding runs as
 * the controller's (p, n), or Anywhere's binding, or the status line says it does
 * nothing there. */
static void overlay_key(tui *t, bool keycode, int key)
{
    view_handle top = overlays_at(t->overlays, overlays_count(t->overlays) - 1);
    const key_binding *b = keys_find(top.ops->keys, key, keycode);
    const char *why = b && top.ops->why_not ? top.ops->why_not(top.state, b->action) : NULL;
    if (why) {
        tui_say(t, "%s", why);
        t->dirty |= DIRTY_ALL;
        return;
    }
    if (b && top.ops->act && top.ops->act(top.state, b->action)) {
        if (top.ops->is_open && !top.ops->is_open(top.state))
            close_overlay(t);
        t->dirty |= DIRTY_ALL;
        return;
    }
    const key_binding *any = keys_find(KEYS_ANYWHERE, key, keycode);
    if (top.ops->modal) {
        close_overlay(t);
        if (any && any->action == ACT_STOP)
            tui_stop_reply(t);
    } else if (b || any) {
        run_action(t, b ? b : any, key);
    } else {
        tui_say(t, "that key does nothing in the %s: ? lists its keys", top.ops->name);
    }
}

/* A key on the input line, b its binding there (or NULL): '?' and Ctrl-D act on an
 * empty line only, the steering keys on an empty line while a reply runs (those
 * marked paused_only while it is paused); otherwise they are typed. Backspace on an
 * empty line that it cannot steer says why it does nothing. */
static void input_line_key(tui *t, const key_binding *b, bool keycode, int key)
{
    bool empty = input_empty(t->input);
    bool may_steer = b && b->steers && (b->paused_only ? tui_replying(t) && t->run.paused : tui_replying(t));
    if (b && (b->action == ACT_READLINE || (empty && (!b->steers || may_steer)))) {
        run_action(t, b, key);
        return;
    }
    if (b && b->paused_only && empty) {
        if (!t->c)
            tui_read_only(t);
        else if (tui_replying(t))
            tui_say(t, "the line is empty; %s takes a reply token back once the reply is paused (p)", b->name);
        else
            tui_say(t, "the line is empty; %s takes a reply token back while a reply is paused, or in a pane (Tab)",
                    b->name);
        return;
    }
    input_key(t->input, key, keycode);
    t->dirty |= DIRTY_INPUT;
}

void tui_paste(tui *t, const key_event *ev, const char *text)
{
    if (ev->kind == KEY_EVENT_PASTE_BEGIN) { /* whatever was shown: the input line takes it */
        t->run.message = NULL;
        t->run.confirm_quit = false;
        while (overlays_count(t->overlays) > 0)
            close_overlay(t);
        if (t->focus != FOCUS_INPUT)
            set_focus(t, FOCUS_INPUT);
        t->dirty |= DIRTY_STATUS | DIRTY_INPUT;
        return;
    }
    if (ev->kind == KEY_EVENT_KEY) {
        input_paste(t->input, ev->key, ev->keycode);
        t->dirty |= DIRTY_INPUT;
    } else if (ev->kind == KEY_EVENT_PASTE_TEXT && text) {
        input_paste_text(t->input, text, (size_t)ev->key);
        t->dirty |= DIRTY_INPUT;
    }
}

/* One key from curses (keycode: a KEY_* code, else a character): the top overlay's,
 * else looked up in the key table: Anywhere first, then the input line's or the
 * panes' bindings. */
void tui_handle_key(tui *t, bool keycode, int key)
{
    /* A resize is not the user's answer to a message: the message stays. */
    if (keycode && key == KEY_RESIZE) {
        tui_make_windows(t);
        return;
    }
    if (t->run.message) {
        t->run.message = NULL;
        t->dirty |= DIRTY_STATUS;
    }
    if (keycode && key == KEY_MOUSE) {
        handle_mouse(t);
        return;
    }
    if (t->run.confirm_quit) {
        if (!keycode && (key == 'y' || key == 'Y'))
            t->quit = true;
        t->run.confirm_quit = false;
        t->dirty |= DIRTY_STATUS | DIRTY_INPUT;
        return;
    }
    if (overlays_count(t->overlays) > 0) {
        overlay_key(t, keycode, key);
        return;
    }
    const key_binding *b = keys_find(KEYS_ANYWHERE, key, keycode);
    if (b) {
        run_action(t, b, key);
        return;
    }
    if (t->focus == FOCUS_INPUT) {
        input_line_key(t, keys_find(KEYS_INPUT, key, keycode), keycode, key);
        return;
    }
    b = keys_find(KEYS_PANES, key, keycode);
    if (!b)
        b = keys_find(t->pane[t->focus].ops->keys, key, keycode);
    if (b) {
        run_action(t, b, key);
        return;
    }
    /* a key with no binding here: say so, rather than nothing */
    char name[16];
    keys_name(key, keycode, name, sizeof name);
    tui_say(t, "%s does nothing in %s: ? lists the keys, Tab goes on to the input line", name,
            t->pane[t->focus].ops->name);
}
