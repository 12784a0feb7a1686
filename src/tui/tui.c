/* tui.c — the curses debugger-chat: sets up the terminal and runs the main loop over
 * the session's engine and chat. With --view (tui_view) the same panes run over a trace
 * read back (view.c) with no engine and no chat: keys and lines that would generate
 * or steer say "read-only" in the status line.
 *
 * The loop drives generation cooperatively: while a reply runs it calls chat_step()
 * once per iteration and polls the keyboard with a zero timeout between tokens;
 * panes that saw new records are marked dirty and redrawn together at most
 * FRAME_MS apart (one doupdate per frame), so drawing never holds generation back.
 * Slow motion (--slow-motion, /set slow-motion, the s key) waits some ms for keys
 * after each token, for watching the panes and steering. LLMCHAT_TUI_STATS=1 (or =FILE)
 * reports at exit how much of the reply time went to drawing and keys (benchmarks).
 * 'p' pauses replies and 'n' then advances them one token at a time; Backspace, 'r',
 * the digits and /force steer the newest reply by hand (steer.c).
 * Drives the engine and the chat of the session main.c opened for it (session.h:
 * also the trace, autosave and the signal handlers); owns the curses windows and the
 * panes (tui_state.h): Conversation, Tokens and Attention (view_ops.h: each its own
 * state, draw and actions), the input line, the status line and the overlays drawn
 * over them (overlays.h: the help, the compute view). The loop hands each key to
 * actions.c, which gives it to the top overlay, or looks it up in the key table
 * (keys.c) and runs its action or the focused pane's; slash commands (command.c) run
 * here through the command_host below. The chat is autosaved when a reply ends and
 * after every other change (autosave.h); SIGTERM, SIGHUP and SIGINT twice within a
 * second restore the terminal, save and quit; a crash restores the terminal first
 * (signals.h). */
#include "tui.h"

#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "signals.h"
#include "clock.h"
#include "command.h"
#include "help.h"
#include "intervention_json.h"
#include "keys.h"
#include "view.h"
#include "remote_connect.h"
#include "compare_strip.h"
#include "tui_state.h"

enum {
    FRAME_MS = 33,      /* at most ~30 redraws per second while idle (typing, keys) */
    FRAME_MS_BUSY = 66, /* ~15 while a reply runs: every frame's output is time taken
                           from decoding (docs/performance.md) */
    ATTN_FRAME_MS_BUSY = 200, /* ~5 for the Attention pane while a reply streams: a shade
                                 in every cell, it is most of a frame's output */
    IDLE_WAIT_MS = 250 /* how long an idle loop waits for a key before checking signals */
};

/* A reply runs (never while viewing a trace: there is no chat). */
bool tui_replying(const tui *t)
{
    return (t->c && chat_replying(t->c)) || (t->rc && remote_chat_replying(t->rc));
}

/* The notice shown while a reply waits for steering keys; removed when it goes on. */
static const char PAUSE_HINT[] = "[paused: n generates a token, a digit chooses one, p resumes]";
/* The same with speculative decoding, where n runs one call of the model. */
static const char GUESS_PAUSE_HINT[] =
    "[paused: n runs one step (the next token and the guesses accepted after it), a digit chooses "
    "one, p resumes]";

static const char *pause_hint(const tui *t)
{
    return t->s && t->s->guesser ? GUESS_PAUSE_HINT : PAUSE_HINT;
}

void tui_say(tui *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->said, sizeof t->said, fmt, ap);
    va_end(ap);
    t->run.message = t->said;
    t->dirty |= DIRTY_STATUS;
}

/* What a key or command that would generate or steer says while viewing a trace. */
void tui_read_only(tui *t)
{
    t->run.message = t->rc ? "this needs a local model: the chat runs on a server (--server)"
                           : "read-only: viewing a trace";
    t->dirty |= DIRTY_STATUS;
}

/* ---- windows ---- */

static void free_windows(tui *t)
{
    for (int f = 0; f < FOCUS_COUNT; f++) {
        if (t->win[f])
            delwin(t->win[f]);
        t->win[f] = NULL;
    }
    if (t->w_status)
        delwin(t->w_status);
    t->w_status = NULL;
    if (t->w_over)
        delwin(t->w_over);
    t->w_over = NULL;
}

static WINDOW *window_for(const tui_rect *r)
{
    if (!r->visible)
        return NULL;
    return newwin(r->h, r->w, r->y, r->x);
}

void tui_make_windows(tui *t)
{
    free_windows(t);
    getmaxyx(stdscr, t->screen.rows, t->screen.cols);
    layout_compute(t->screen.cols, t->screen.rows, &t->lay);
    t->win[FOCUS_CONV] = window_for(&t->lay.conv);
    t->win[FOCUS_TOKENS] = window_for(&t->lay.tokens);
    t->win[FOCUS_ATTN] = window_for(&t->lay.attn);
    t->win[FOCUS_INPUT] = window_for(&t->lay.input);
    t->w_status = window_for(&t->lay.status);
    if (t->lay.status.visible && t->lay.status.y >= 1)
        t->w_over = newwin(t->lay.status.y, t->screen.cols, 0, 0);

    if (t->win[FOCUS_INPUT])
        keypad(t->win[FOCUS_INPUT], TRUE);
    werase(stdscr);
    wnoutrefresh(stdscr);
    t->dirty = DIRTY_ALL;
}

static WINDOW *key_window(tui *t)
{
    return t->win[FOCUS_INPUT] ? t->win[FOCUS_INPUT] : stdscr;
}

/* The panes' views of the run state, brought up to date before a frame is drawn. */
static void sync_views(tui *t)
{
    conv_set_writing(t->conv, t->run.state == RUN_GENERATING);
    tokens_set_choosing(t->tokens, t->run.paused && tui_replying(t));
    t->run.slow_motion_ms = t->s ? t->s->slow_motion_ms : 0;
    t->run.shading = conv_shading(t->conv); /* the legend follows Conversation's colours */
    t->run.guesser = t->s ? t->s->guesser_name : NULL;
}

bool tui_overlay_fits(const tui *t, const view_ops *v)
{
    if (t->screen.cols < v->min_cols || t->screen.rows < v->min_rows)
        return false;
    return v->place != VIEW_SCREEN || t->w_over;
}

/* What a frame draws of the open overlays. */
typedef struct {
    int first;    /* the first one drawn: the top one of those that cover the screen
                     above the status line, else the bottom one */
    int shown;    /* how many of them from there fit the screen (0: the input line is
                     drawn as without overlays) */
    bool covered; /* the panes are not drawn: an overlay covers them */
    bool fresh;   /* one is drawn in a window of its own over a fresh frame */
} overlay_frame;

static overlay_frame overlays_in_frame(const tui *t)
{
    overlay_frame f = {0, 0, false, false};
    int n = overlays_count(t->overlays);
    for (int i = n - 1; i >= 0 && !f.covered; i--) {
        const view_ops *v = overlays_at(t->overlays, i).ops;
        if (v->place == VIEW_SCREEN && tui_overlay_fits(t, v)) {
            f.first = i;
            f.covered = true;
        }
    }
    for (int i = f.first; i < n; i++) {
        const view_ops *v = overlays_at(t->overlays, i).ops;
        if (!tui_overlay_fits(t, v))
            continue;
        f.shown++;
        f.fresh = f.fresh || v->place == VIEW_CENTRED;
    }
    return f;
}

/* The overlays from the first one drawn up, over the frame: one over the screen above
 * the status line in that window (on top, the input line waits below it, empty), one
 * of its own size in a window centred on the screen (the input line is not drawn). */
static void draw_overlays(tui *t, int first)
{
    int n = overlays_count(t->overlays);
    for (int i = first; i < n; i++) {
        view_handle o = overlays_at(t->overlays, i);
        if (!tui_overlay_fits(t, o.ops))
            continue;
        if (o.ops->place == VIEW_SCREEN) {
            o.ops->draw(o.state, t->w_over, &t->screen, true);
            wnoutrefresh(t->w_over);
            if (t->win[FOCUS_INPUT] && i == n - 1) {
                werase(t->win[FOCUS_INPUT]);
                wnoutrefresh(t->win[FOCUS_INPUT]);
            }
            continue;
        }
        int rows = 0, cols = 0;
        o.ops->size(o.state, &t->screen, &rows, &cols);
        WINDOW *w = rows > 0 && cols > 0 ? newwin(rows, cols, (t->screen.rows - rows) / 2,
                                                  (t->screen.cols - cols) / 2)
                                         : NULL;
        if (!w)
            continue;
        o.ops->draw(o.state, w, &t->screen, true);
        wnoutrefresh(w);
        delwin(w);
    }
}

static void draw_frame(tui *t)
{
    static int cursor = -1;
    unsigned d = t->dirty, later = 0;
    overlay_frame over = overlays_in_frame(t);
    if (over.fresh)
        d = DIRTY_ALL;
    double now = clock_ms();
    bool streaming = tui_replying(t) && !t->run.paused;
    if (streaming && d != DIRTY_ALL && (d & DIRTY_ATTN) && now - t->attn_drawn_ms < ATTN_FRAME_MS_BUSY) {
        d &= ~(unsigned)DIRTY_ATTN; /* a later frame draws it */
        later = DIRTY_ATTN;
    }
    if (d & DIRTY_ATTN)
        t->attn_drawn_ms = now;
    sync_views(t);
    for (int f = FOCUS_CONV; f < FOCUS_COUNT && !over.covered; f++) {
        const view_handle *p = &t->pane[f];
        if ((d & (1u << f)) && t->win[f]) {
            p->ops->draw(p->state, t->win[f], &t->screen, t->focus == (tui_focus)f);
            wnoutrefresh(t->win[f]);
        }
    }
    if ((d & DIRTY_STATUS) && t->w_status) {
        status_draw(t->w_status, &t->screen, t->e, &t->run);
        wnoutrefresh(t->w_status);
    }
    int want = 0;
    WINDOW *wi = t->win[FOCUS_INPUT];
    if (over.shown > 0) {
        if (d)
            draw_overlays(t, over.first);
    } else if (wi) {
        input_draw(t->input, wi, &t->screen, t->focus == FOCUS_INPUT); /* last: the cursor stays there */
        wnoutrefresh(wi);
        want = t->focus == FOCUS_INPUT && !t->run.confirm_quit;
    }
    if (want != cursor) {
        curs_set(want);
        cursor = want;
    }
    doupdate();
    t->dirty = later;
}

/* ---- the dialog ---- */

static void take_notice(tui *t)
{
    const char *n = chat_take_notice(t->c);
    if (n && *n) {
        char buf[600];
        snprintf(buf, sizeof buf, "[%s]", n);
        tui_notice(t, "%s", buf);
    }
}

void tui_notice(tui *t, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    conv_add(t->conv, ENTRY_NOTICE, buf);
    t->dirty |= DIRTY_CONV;
}

/* Saves the chat now (autosave_now: a chat that never had a turn is not written); a
 * failure is told once, in Conversation, and so is a new file the chat goes on in. */
static void autosave(tui *t)
{
    t->save_pending = false;
    char msg[700] = "";
    if (t->served)
        served_autosave_now(t->served, msg, sizeof msg);
    else if (t->s)
        autosave_now(t->s, msg, sizeof msg);
    if (*msg)
        tui_notice(t, "[%s]", msg);
}

/* The newest Conversation entry of the kind shows turn i's message or reply (the
 * turn in the context), each token's text at its position. */
static void show_tokens(tui *t, int i, conv_kind kind)
{
    const chat_turn *turn = chat_get_turn(t->c, i);
    int (*spans)(const chat *, int, int *, size_t *, int) =
        kind == ENTRY_USER ? chat_message_spans : chat_reply_spans;
    int n = spans(t->c, i, NULL, NULL, 0);
    int *pos = malloc(sizeof *pos * (size_t)(n + 1));
    size_t *off = malloc(sizeof *off * (size_t)(n + 1));
    if (!pos || !off)
        tui_die("out of memory");
    n = spans(t->c, i, pos, off, n);
    if (kind == ENTRY_USER)
        conv_set_message_tokens(t->conv, turn->user, pos, off, n);
    else
        conv_set_reply_tokens(t->conv, turn->reply, pos, off, n);
    free(pos);
    free(off);
}

void tui_show_reply(tui *t)
{
    show_tokens(t, chat_turn_count(t->c) - 1, ENTRY_ASSISTANT);
}

/* turn i of the served chat: its reply's tokens at their positions in the newest
 * Conversation entry of the assistant. */
static void show_remote_tokens(tui *t, int i)
{
    const remote_turn *turn = remote_chat_turn(t->rc, i);
    int k = remote_chat_reply_spans(t->rc, i, NULL, NULL, 0);
    int *pos = malloc(sizeof *pos * (size_t)(k + 1));
    size_t *off = malloc(sizeof *off * (size_t)(k + 1));
    if (!pos || !off)
        tui_die("out of memory");
    k = remote_chat_reply_spans(t->rc, i, pos, off, k);
    conv_set_reply_tokens(t->conv, turn->reply, pos, off, k);
    free(pos);
    free(off);
}

void tui_show_remote_reply(tui *t)
{
    show_remote_tokens(t, remote_chat_turn_count(t->rc) - 1);
}

/* Conversation shows a served chat's dialog again: each reply's tokens at their
 * positions where the server ran it in this session (a loaded turn has none until
 * the next message renders the dialog). */
static void show_remote_dialog(tui *t)
{
    conv_clear(t->conv);
    int n = remote_chat_turn_count(t->rc);
    for (int i = 0; i < n; i++) {
        const remote_turn *turn = remote_chat_turn(t->rc, i);
        conv_add(t->conv, ENTRY_USER, turn->user);
        conv_add(t->conv, ENTRY_ASSISTANT, turn->reply);
        if (remote_chat_reply_spans(t->rc, i, NULL, NULL, 0) > 0)
            show_remote_tokens(t, i);
        if (turn->cut)
            conv_add(t->conv, ENTRY_NOTICE, "[stopped]");
    }
    t->sel.pos = -1;
    t->run.state = RUN_IDLE;
    t->dirty |= DIRTY_ALL;
}

/* Conversation shows the chat's whole dialog again (after /load, /resume, --resume). */
static void show_dialog(tui *t)
{
    if (t->rc) {
        show_remote_dialog(t);
        return;
    }
    conv_clear(t->conv);
    int dropped = chat_dropped_count(t->c), live = chat_turn_count(t->c);
    for (int i = 0; i < dropped + live; i++) {
        const chat_turn *turn = i < dropped ? chat_get_dropped(t->c, i) : chat_get_turn(t->c, i - dropped);
        conv_add(t->conv, ENTRY_USER, turn->user);
        if (i >= dropped)
            show_tokens(t, i - dropped, ENTRY_USER);
        conv_add(t->conv, ENTRY_ASSISTANT, turn->reply);
        conv_set_think_opened(t->conv, turn->think_opened);
        if (i >= dropped)
            show_tokens(t, i - dropped, ENTRY_ASSISTANT);
        if (i >= dropped)
            conv_set_branch(t->conv, chat_branch_current(t->c, i - dropped) + 1,
                            chat_branch_count(t->c, i - dropped));
        if (turn->cut)
            conv_add(t->conv, ENTRY_NOTICE, "[stopped]");
    }
    if (dropped > 0)
        tui_notice(t, "[the %d oldest turn%s above are out of the context]", dropped,
                   dropped == 1 ? " is" : "s");
    t->sel.pos = -1;
    t->run.state = RUN_IDLE;
    t->dirty |= DIRTY_ALL;
}

/* The reply goes on by itself (or there is none): the pause hint goes. */
static void drop_pause_hint(tui *t)
{
    if (conv_drop_notice(t->conv, pause_hint(t)))
        t->dirty |= DIRTY_CONV;
}

/* Pausing lasts until the reply ends: the next message starts unpaused unless it
 * asks (/step, or p while idle). */
/* --compare-server: the newest reply's positions queued to be checked against the
 * server (between keys, in main_loop), its strip due when they are. */
static void check_reply(tui *t)
{
    if (!t->check || !t->c || chat_turn_count(t->c) == 0)
        return;
    int i = chat_turn_count(t->c) - 1, first;
    size_t off;
    if (chat_reply_spans(t->c, i, &first, &off, 1) < 1)
        return;
    t->check_from = first;
    t->check_to = engine_pos(t->e);
    server_check_forget(t->check, first);
    server_check_queue(t->check, first, t->check_to);
}

/* The next positions checked against the server; the strip under the reply once all
 * of it is. */
static void check_step(tui *t)
{
    llm_err err;
    if (server_check_step(t->check, t->e, &err) != LLM_OK) {
        tui_notice(t, "[the check against the server stopped: %s]", err.text);
        t->check_to = 0;
        return;
    }
    t->dirty |= DIRTY_TOKENS;
    if (server_check_pending(t->check) > 0 || t->check_to <= 0)
        return;
    server_check_summary sum;
    server_check_summarize(t->check, t->check_from, t->check_to, &sum);
    char piece[128] = "", strip[1024];
    if (sum.kl_max_pos >= 0)
        source_token(&t->src, engine_tokens(t->e)[sum.kl_max_pos], piece, sizeof piece);
    if (compare_strip_text(t->check, t->check_from, t->check_to, piece, t->screen.utf8, strip,
                           sizeof strip))
        tui_notice(t, "%s", strip);
    t->check_to = 0;
}

static void end_reply(tui *t, tui_run_state st)
{
    t->run.paused = false;
    drop_pause_hint(t);
    double ms = clock_ms() - t->reply_t0;
    if (t->reply_tokens > 0 && ms > 0)
        t->run.reply_rate = (double)t->reply_tokens * 1000.0 / ms;
    t->run.state = st;
    t->dirty |= DIRTY_ALL;
    t->save_pending = true;
    check_reply(t);
}

/* Sends text as a message; start_paused: its reply waits for n, a digit or p. */
static void begin_turn(tui *t, const char *text, bool start_paused)
{
    llm_err err;
    err.text[0] = '\0';
    conv_add(t->conv, ENTRY_USER, text);
    t->run.state = RUN_GENERATING;
    t->dirty |= DIRTY_ALL;
    draw_frame(t); /* show the message while the prompt is being read */
    llm_status st = chat_begin(t->c, text, t->s->steps, &err);
    t->run.prompt_total = 0;
    if (st != LLM_OK) {
        take_notice(t);
        if (st == LLM_ERR_STOPPED) /* Esc or Ctrl-C while a long prompt was read */
            tui_notice(t, "[%s of the prompt: the message was not sent]", err.text);
        else
            tui_notice(t, "[could not start the reply: %s]", err.text);
        t->run.state = st == LLM_ERR_STOPPED ? RUN_STOPPED : RUN_IDLE; /* the status line and q's question say so too */
        t->run.paused = false;
        t->dirty |= DIRTY_ALL;
        return;
    }
    take_notice(t);
    show_tokens(t, chat_turn_count(t->c) - 1, ENTRY_USER);
    if (start_paused)
        t->run.paused = true;
    if (t->run.paused) /* /step, or p while idle: until p resumes or the reply ends */
        tui_notice(t, "%s", pause_hint(t));
    conv_add(t->conv, ENTRY_ASSISTANT, "");
    conv_set_think_opened(t->conv, chat_get_turn(t->c, chat_turn_count(t->c) - 1)->think_opened);
    t->run.state = RUN_GENERATING;
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    t->dirty |= DIRTY_ALL;
}

void tui_show_branch(tui *t)
{
    if (!t->c)
        return; /* a trace has no branches */
    int i = chat_turn_count(t->c) - 1;
    conv_set_branch(t->conv, chat_branch_current(t->c, i) + 1, chat_branch_count(t->c, i));
}

/* After a step that added n tokens (already in Conversation): the panes redrawn, the
 * reply's end and what ended it said. */
static void took_tokens(tui *t, chat_progress p, int n, const llm_err *err)
{
    tui_show_branch(t);
    t->reply_tokens += n;
    t->dirty |= DIRTY_CONV | DIRTY_TOKENS | DIRTY_ATTN | DIRTY_STATUS;
    if (p == CHAT_GENERATING && tui_replying(t) && !err->text[0])
        return;
    end_reply(t, RUN_IDLE);
    take_notice(t);
    if (p == CHAT_REPLY_LIMIT) {
        tui_notice(t, "[reply cut at the step limit of %d token%s]", t->s->steps,
                   t->s->steps == 1 ? "" : "s");
    } else if (p == CHAT_REPLY_FULL) {
        tui_notice(t, "[the context is full: the reply was closed%s%s]", err->text[0] ? ": " : "", err->text);
    } else if (err->text[0]) {
        tui_notice(t, "[error: %s]", err->text);
        if (tui_replying(t)) {
            llm_err e2;
            chat_stop(t->c, &e2);
        }
    }
}

void tui_took_token(tui *t, chat_progress p, const char *text, const llm_err *err)
{
    if (text && *text)
        conv_stream_token(t->conv, engine_pos(t->e) - 1, text, strlen(text));
    took_tokens(t, p, 1, err);
}

/* After chat_step_run: each token's bytes into Conversation at its position. */
static void took_run(tui *t, chat_progress p, const chat_run *run, const llm_err *err)
{
    for (int i = 0; i < run->n; i++)
        if (run->offset[i + 1] > run->offset[i])
            conv_stream_token(t->conv, run->first + i, run->text + run->offset[i],
                              run->offset[i + 1] - run->offset[i]);
    took_tokens(t, p, run->n, err);
}

/* The served model's status line: the server, its model and the last round trip. */
void tui_describe_remote(tui *t)
{
    const remote_info *in = remote_describe(t->rem);
    char state[64];
    if (remote_chat_replying(t->rc))
        snprintf(state, sizeof state, "replying %lld tok", (long long)t->reply_tokens);
    else
        snprintf(state, sizeof state, "%s", t->run.state == RUN_STOPPED ? "stopped" : "idle");
    snprintf(t->view_line, sizeof t->view_line, "served %s | %s | %s at %s | rtt %.0f ms", in->model,
             state, remote_api_name(in->api), in->base_url, in->rtt_ms);
    t->run.viewing = t->view_line;
    t->dirty |= DIRTY_STATUS;
}

/* A message to the served model: its dialog rendered and tokenized on the server, the
 * reply's request opened (remote_chat_begin); the reply streams in remote_one. */
static void begin_remote_turn(tui *t, const char *text)
{
    llm_err err;
    conv_add(t->conv, ENTRY_USER, text);
    t->dirty |= DIRTY_ALL;
    draw_frame(t);
    if (remote_chat_begin(t->rc, text, t->served->steps, &err) != LLM_OK) {
        tui_notice(t, "[could not send it: %s]", err.text);
        t->run.state = RUN_IDLE;
        return;
    }
    conv_add(t->conv, ENTRY_ASSISTANT, "");
    t->run.state = RUN_GENERATING;
    t->reply_t0 = clock_ms();
    t->reply_tokens = 0;
    tui_describe_remote(t);
}

/* What came of the served reply since the last call (waiting a little for it): its
 * tokens into Conversation, its end and what ended it. */
static void remote_one(tui *t)
{
    int n_new;
    llm_err err;
    err.text[0] = '\0';
    remote_chat_progress p = remote_chat_step(t->rc, 20, &n_new, &err);
    int count = remote_chat_count(t->rc);
    const int *ids = remote_chat_tokens(t->rc);
    for (int pos = count - n_new; pos < count; pos++) {
        const char *piece = remote_chat_piece(t->rc, ids[pos]);
        if (piece && *piece)
            conv_stream_token(t->conv, pos, piece, strlen(piece));
    }
    if (n_new > 0) {
        t->reply_tokens += n_new;
        t->dirty |= DIRTY_CONV | DIRTY_TOKENS | DIRTY_ATTN | DIRTY_STATUS;
        tui_describe_remote(t);
    }
    if (p == REMOTE_CHAT_GENERATING)
        return;
    end_reply(t, p == REMOTE_CHAT_DONE ? RUN_IDLE : RUN_STOPPED);
    tui_describe_remote(t);
    if (p == REMOTE_CHAT_ERROR)
        tui_notice(t, "[the server failed: %s]", err.text);
}

static void generate_one(tui *t)
{
    if (t->rc) {
        remote_one(t);
        return;
    }
    chat_run run; /* with --lookup or --draft, several tokens at a time */
    llm_err err;
    err.text[0] = '\0';
    chat_progress p = chat_step_run(t->c, &run, &err);
    took_run(t, p, &run, &err);
}

void tui_stop_reply(tui *t)
{
    if (!tui_replying(t))
        return;
    if (t->rc) {
        remote_chat_stop(t->rc);
        end_reply(t, RUN_STOPPED);
        tui_describe_remote(t);
        tui_notice(t, "[stopped]");
        return;
    }
    llm_err err;
    chat_stop(t->c, &err); /* it cannot fail */
    end_reply(t, RUN_STOPPED);
    tui_notice(t, "[stopped]");
}

/* Quits, asking first (y/n) while a reply runs. */
void tui_request_quit(tui *t)
{
    if (tui_replying(t))
        t->run.confirm_quit = true;
    else
        t->quit = true;
    t->dirty |= DIRTY_STATUS;
}

void tui_toggle_pause(tui *t)
{
    t->run.paused = !t->run.paused;
    if (!t->run.paused)
        drop_pause_hint(t);
    else if (tui_replying(t))
        tui_notice(t, "%s", pause_hint(t));
    else
        tui_say(t, "the next reply starts paused (p again: it runs)");
    t->dirty |= DIRTY_STATUS | DIRTY_TOKENS;
}

static void submit(tui *t, const char *line, bool start_paused);

/* A line sent while a reply runs: after the lines queued before it. */
static void queue_line(tui *t, const char *line, bool start_paused)
{
    void *grown = realloc(t->pending, sizeof *t->pending * (size_t)(t->n_pending + 1));
    char *copy = strdup(line);
    if (!grown || !copy)
        tui_die("out of memory");
    t->pending = grown;
    t->pending[t->n_pending].line = copy;
    t->pending[t->n_pending++].paused = start_paused;
    if (t->n_pending == 1)
        tui_notice(t, "[queued: sent when this reply ends; Esc stops it now]");
    else
        tui_notice(t, "[queued: %d line%s wait%s, each sent when the reply before it ends]",
                   t->n_pending, t->n_pending == 1 ? "" : "s", t->n_pending == 1 ? "s" : "");
}

/* The oldest queued line, sent now (the reply before it has ended). */
static void send_queued(tui *t)
{
    char *line = t->pending[0].line;
    bool paused = t->pending[0].paused;
    t->n_pending--;
    memmove(t->pending, t->pending + 1, sizeof *t->pending * (size_t)t->n_pending);
    begin_turn(t, line, paused);
    free(line);
}

/* ---- what the slash commands (command.c, shared with the REPL) are given ---- */

static void host_say(command_host *h, const char *text)
{
    tui_notice(h->user, "[%s]", text);
}

static void host_stop_reply(command_host *h)
{
    tui_stop_reply(h->user);
}

static void host_changed(command_host *h, command_change what)
{
    tui *t = h->user;
    switch (what) {
    case COMMAND_CHANGED_DIALOG:
        if (t->check)
            server_check_forget(t->check, 1);
        show_dialog(t);
        t->save_pending = true;
        break;
    case COMMAND_CHANGED_CHAT: t->save_pending = true; break;
    case COMMAND_CHANGED_SETTINGS: t->dirty |= DIRTY_STATUS | DIRTY_TOKENS; break;
    }
}

static void host_quit(command_host *h)
{
    tui_request_quit(h->user);
}

static void host_help(command_host *h)
{
    char text[1200];
    help_commands_text(text, sizeof text);
    tui_notice(h->user, "%s", text);
}

static void host_force(command_host *h, const char *text)
{
    tui *t = h->user;
    if (t->rc)
        served_force_text(t, text);
    else
        steer_force_text(t, text);
}

static void host_read_only(command_host *h)
{
    tui_read_only(h->user);
}

static void host_send_paused(command_host *h, const char *text)
{
    submit(h->user, text, true);
}

static bool host_open_view(command_host *h, const char *name)
{
    return tui_open_view(h->user, name);
}

/* /patch TEXT: a grid of the newest message against TEXT in its place, its cells run
 * between the keys (main_loop) while the patching view shows them; /patch alone opens
 * the view of the last grid. */
static void host_patch(command_host *h, const char *text)
{
    tui *t = h->user;
    if (!text || !*text) {
        tui_open_view(t, "patch");
        return;
    }
    int *clean = NULL, *corrupt = NULL, n_clean = 0, n_corrupt = 0;
    char note[300];
    llm_err err;
    llm_status st = chat_patch_prompts(t->c, text, &clean, &n_clean, &corrupt, &n_corrupt, &err);
    if (st == LLM_OK)
        st = patch_board_start(t->patch, engine_model(t->e), engine_kv_cache(t->e), clean, n_clean,
                               corrupt, n_corrupt, PATCH_RESID_PRE, PATCH_LOGIT_DIFF, note,
                               sizeof note, &err);
    free(clean);
    free(corrupt);
    if (st != LLM_OK) {
        tui_notice(t, "[/patch: %s]", err.text);
        return;
    }
    if (*note)
        tui_notice(t, "[/patch: %s]", note);
    const intervention *in = engine_intervention(t->e);
    if (!intervention_is_empty(in)) { /* as -m patch, which refuses them */
        char now[600];
        steering_format(in, now, sizeof now);
        tui_notice(t, "[/patch: the grid runs the model as it is, without the interventions in "
                      "force (%s)]", now);
    }
    tui_open_view(t, "patch");
}

static command_host command_host_of(tui *t)
{
    return (command_host){.front_end = COMMAND_TUI, .s = t->s, .user = t, .say = host_say,
                          .stop_reply = host_stop_reply, .changed = host_changed,
                          .quit = host_quit, .help = host_help, .force = host_force,
                          .read_only = host_read_only, .send_paused = host_send_paused,
                          .open_view = host_open_view, .patch = host_patch,
                          .served = t->served};
}

/* A finished line from the input line, or the -i prompt: a command or a message
 * (start_paused: /step's, whose reply waits for steering keys). */
static void submit(tui *t, const char *line, bool start_paused)
{
    while (*line == ' ' || *line == '\t' || *line == '\n' || *line == '\r')
        line++;
    size_t len = strlen(line);
    if (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
        /* a paste's last newline (a pasted line's newlines are kept: input_paste) */
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        char *trimmed = strndup(line, len);
        if (!trimmed)
            tui_die("out of memory");
        submit(t, trimmed, start_paused);
        free(trimmed);
        return;
    }
    if (!*line)
        return;
    if (line[0] == '/') {
        char *copy = strdup(line); /* command_parse writes into it */
        if (!copy)
            tui_die("out of memory");
        command_call cmd;
        command_parse(copy, &cmd);
        command_host h = command_host_of(t);
        command_run(&h, &cmd);
        free(copy);
        return;
    }
    if (!t->c && !t->rc) {
        tui_read_only(t);
        return;
    }
    if (tui_replying(t)) {
        queue_line(t, line, start_paused);
        return;
    }
    if (t->rc)
        begin_remote_turn(t, line);
    else
        begin_turn(t, line, start_paused);
}

/* ---- set-up and the loop ---- */

/* LLMCHAT_TUI_STATS: how much of the reply time the UI took (a benchmark aid).
 * "1" prints one line on stderr; any other value is a file the line is appended to.
 * ui_fraction = (reply wall time - chat_step time) / reply wall time; prefill: the
 * newest prompt's tokens and the engine's time for them. */
static void print_stats(const tui *t, const char *where)
{
    FILE *f = stderr;
    if (strcmp(where, "1") != 0) {
        f = fopen(where, "a");
        if (!f) {
            fprintf(stderr, "llmchat: %s: %s\n", where, strerror(errno));
            return;
        }
    }
    if (t->stat_tokens == 0 || t->stat_busy_ms <= 0) {
        fprintf(f, "llmchat: tui stats: tokens 0\n");
    } else {
        double ui = t->stat_busy_ms - t->stat_step_ms;
        fprintf(f,
                "llmchat: tui stats: tokens %lld, reply %.1f ms (%.0f tok/s), chat_step %.1f ms (%.0f tok/s), "
                "drawing %.1f ms in %lld frames, other %.1f ms, ui_fraction %.4f, prefill %d tok %.1f ms\n",
                t->stat_tokens, t->stat_busy_ms, t->stat_tokens * 1000.0 / t->stat_busy_ms, t->stat_step_ms,
                t->stat_tokens * 1000.0 / t->stat_step_ms, t->stat_draw_ms, t->stat_frames,
                ui - t->stat_draw_ms, ui / t->stat_busy_ms, t->e ? engine_get_stats(t->e)->prefill_tokens : 0,
                t->e ? engine_get_stats(t->e)->prefill_ms : 0.0);
    }
    if (f != stderr)
        fclose(f);
}

/* The panes, over the session's engine or the trace being viewed. */
static void open_panes(tui *t)
{
    if (t->view) {
        t->src = view_source(t->view);
    } else if (t->rc) { /* no weights: one layer, one head, no attention rows */
        t->view_cfg = (model_config){.n_layers = 1, .n_heads = 1, .n_kv_heads = 1,
                                     .vocab_size = remote_describe(t->rem)->n_vocab};
        t->src = (tui_source){.rc = t->rc, .cfg = &t->view_cfg};
    } else {
        t->view_cfg = engine_model(t->e)->config;
        t->view_cfg.n_heads = model_heads_max(&t->view_cfg);
        t->src = (tui_source){.e = t->e, .cfg = &t->view_cfg, .tok = engine_tokenizer(t->e),
                              .check = t->check};
    }
    t->sel.pos = -1;
    t->conv = conv_new(&t->src, &t->sel);
    t->tokens = tokens_new(&t->src, &t->sel, t->o->top_k_shown > 0 ? t->o->top_k_shown : 10);
    t->attn = attn_new(&t->src, &t->sel);
    t->pane[FOCUS_CONV] = (view_handle){&conv_pane_ops, t->conv};
    t->pane[FOCUS_TOKENS] = (view_handle){&tokens_pane_ops, t->tokens};
    t->pane[FOCUS_ATTN] = (view_handle){&attn_pane_ops, t->attn};
    if (!(t->patch = patch_board_new()))
        tui_die("out of memory");
    view_env env = {.src = &t->src, .sel = &t->sel, .scr = &t->screen, .patch = t->patch};
    t->overlays = overlays_new(&env);
}

static void close_panes(tui *t)
{
    conv_free(t->conv);
    tokens_free(t->tokens);
    attn_free(t->attn);
    overlays_free(t->overlays);
    patch_board_free(t->patch);
}

/* The input line's callbacks. */
static void on_input_line(void *ctx, const char *line)
{
    tui *t = ctx;
    submit(t, line, false);
    t->dirty |= DIRTY_INPUT;
}

static void on_input_eof(void *ctx)
{
    tui_request_quit(ctx);
}

/* What a crash writes to the terminal before the default action: leave the
 * alternate screen, cursor back, attributes, keypad mode and bracketed paste off,
 * mouse reporting off.
 * Computed while curses runs; the signal handler only writes it. */
static const char *crash_reset_bytes(bool mouse)
{
    static char buf[256];
    const char *caps[] = {"sgr0", "cnorm", "rmkx", "rmcup"};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        const char *s = tigetstr((char *)caps[i]);
        if (s && s != (char *)-1 && n + strlen(s) < sizeof buf - 40) {
            memcpy(buf + n, s, strlen(s) + 1);
            n += strlen(s);
        }
    }
    snprintf(buf + n, sizeof buf - n, "%s%s", BRACKETED_PASTE_OFF,
             mouse ? "\033[?1000l\033[?1002l\033[?1006l" : "");
    return buf;
}

static int run_screen(tui *t);
static bool on_prompt_progress(void *user, int done, int total);

int tui_run(session *s)
{
    tui state;
    tui *t = &state;
    memset(t, 0, sizeof *t);
    t->s = s;
    t->o = s->o;
    t->e = s->e;
    t->c = s->c;
    t->run.template_name = template_name(chat_get_template(s->c));
    if (s->o->compare_server) { /* each reply checked against the server */
        if (!(t->check_rem = remote_connect(s->o, s->o->compare_server)))
            return 1;
        llm_err err;
        if (server_check_new(t->check_rem, s->e, &t->check, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: --compare-server: %s\n", err.text);
            remote_close(t->check_rem);
            return 1;
        }
    }
    int rc = run_screen(t);
    server_check_free(t->check);
    remote_close(t->check_rem);
    return rc;
}

int tui_view(const app_options *o)
{
    tui state;
    tui *t = &state;
    memset(t, 0, sizeof *t);
    t->o = o;
    llm_err err;
    if (view_open(o->view_path, &t->view, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    if (!session_have_terminal()) {
        view_close(t->view);
        return 2;
    }
    view_describe(t->view, t->view_line, sizeof t->view_line);
    t->run.viewing = t->view_line;
    signals_install(); /* before curses: it keeps the terminal modes a crash restores */
    return run_screen(t);
}

int tui_remote(const app_options *o)
{
    tui state;
    tui *t = &state;
    memset(t, 0, sizeof *t);
    t->o = o;
    served_session served;
    int rc = served_open(&served, o, "tui", true);
    if (rc != 0)
        return rc;
    t->served = &served;
    t->rem = served.rem;
    t->rc = served.rc;
    if (!session_have_terminal()) {
        served_close(&served);
        return 2;
    }
    tui_describe_remote(t);
    signals_install(); /* before curses: it keeps the terminal modes a crash restores */
    rc = run_screen(t);
    int closed = served_close(&served);
    return rc != 0 ? rc : closed;
}

/* Starts curses on the terminal (raw keys, the keypad, the mouse with --mouse) and
 * registers what a crash writes to restore it (the handlers are installed already:
 * session_open's, or tui_view's). NULL, with the reason said, when the terminal
 * cannot be drawn on. */
static SCREEN *start_terminal(tui *t)
{
    const app_options *o = t->o;
    setlocale(LC_ALL, "");
    /* the user's characters, but numbers with a '.': traces, chat files, /set and the
     * panes write and read them so (strtod and printf follow LC_NUMERIC) */
    setlocale(LC_NUMERIC, "C");
    t->screen.utf8 = MB_CUR_MAX > 1;
    const char *term_name = getenv("TERM");
    /* no TERM at all: say so without asking curses, whose failed newterm leaks its state */
    SCREEN *scr = term_name && *term_name ? newterm(NULL, stdout, stdin) : NULL;
    const char *cup = scr ? tigetstr("cup") : NULL;
    if (!scr || !cup || cup == (char *)-1) {
        /* no terminal description, or one that cannot place the cursor (TERM=dumb) */
        if (scr) {
            endwin();
            delscreen(scr);
        }
        fprintf(stderr, "llmchat: cannot start the terminal UI (TERM=%s%s); try -m chat\n",
                term_name ? term_name : "", scr ? ": it cannot place the cursor" : "");
        return NULL;
    }
    atexit(tui_restore_terminal);
    draw_start(&t->screen, o->theme);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    /* curses waits this long for the rest of a sequence; the key reader waits longer
     * for one that comes in pieces (key_reader.h) */
    set_escdelay(25);
    fputs(BRACKETED_PASTE_ON, stdout); /* a paste comes framed: its newlines do not send it */
    fflush(stdout);
    if (o->mouse) {
        mousemask(ALL_MOUSE_EVENTS, NULL);
        mouseinterval(0);
    }
    signals_terminal_reset(crash_reset_bytes(o->mouse));
    signal(SIGPIPE, SIG_IGN);
    return scr;
}

/* The panes, the windows and the input line, what the first frame says (the trace's
 * dialog, the model, the system prompt, a resumed chat), the -i prompt sent, and the
 * first frame drawn. */
static void open_screen(tui *t)
{
    const app_options *o = t->o;
    open_panes(t);
    tui_make_windows(t);
    input_handler ih = {on_input_line, on_input_eof, t};
    t->input = input_open(&ih, o->history_size);
    key_reader_init(&t->keys);
    t->tty_in = fileno(stdin); /* curses' input: newterm(NULL, stdout, stdin) */
    if (t->e)
        engine_set_progress(t->e, on_prompt_progress, t);
    if (t->view)
        view_show_dialog(t->view, t->conv);
    if (t->view && view_patch(t->view)) { /* a patching trace: its grid, shown */
        patch_board_show_trace(t->patch, view_patch(t->view));
        tui_open_view(t, "patch");
    }
    if (t->s)
        tui_notice(t, "[%s]", t->s->note);
    if (o->system && *o->system && !o->resume_path)
        tui_notice(t, "[system prompt: %s]", o->system);
    if (t->s && o->resume_path) {
        command_host h = command_host_of(t);
        session_resume(t->s, &h); /* what failed is said in Conversation */
        t->save_pending = false;
    }
    if (t->served && o->resume_path) {
        command_host h = command_host_of(t);
        if (command_load(&h, o->resume_path, true) == COMMAND_LOADED) /* else said there */
            autosave_use(&t->served->save, o->resume_path);
        t->save_pending = false;
    }
    if (o->prompt && *o->prompt && !t->view)
        submit(t, o->prompt, false);
    draw_frame(t);
}

/* Keeps ev to be handled after the events kept before it. */
static void hold_event(tui *t, const key_event *ev)
{
    if (t->n_held == t->held_cap) {
        int cap = t->held_cap ? 2 * t->held_cap : 64;
        key_event *grown = realloc(t->held, sizeof *grown * (size_t)cap);
        if (!grown)
            tui_die("out of memory");
        t->held = grown;
        t->held_cap = cap;
    }
    t->held[t->n_held++] = *ev;
}

/* key_sink: ev kept to be handled in turn, a pasted text's bytes with it. */
static void hold_sink(void *user, const key_event *ev, const char *text)
{
    tui *t = user;
    if (text) {
        size_t n = (size_t)ev->key;
        if (t->held_text_len + n > t->held_text_cap) {
            size_t cap = t->held_text_cap ? t->held_text_cap : 4096;
            while (cap < t->held_text_len + n)
                cap *= 2;
            char *grown = realloc(t->held_text, cap);
            if (!grown)
                tui_die("out of memory");
            t->held_text = grown;
            t->held_text_cap = cap;
        }
        memcpy(t->held_text + t->held_text_len, text, n);
        t->held_text_len += n;
    }
    hold_event(t, ev);
}

/* Handles the kept events, oldest first, until one leaves work for the loop (n: a
 * token) or quits: the rest wait for the next read_keys, so that every key acts once
 * and in the order typed. */
static void handle_held(tui *t)
{
    int i = 0;
    while (i < t->n_held && !t->quit && !t->step_once) {
        key_event ev = t->held[i++];
        if (ev.kind == KEY_EVENT_PASTE_TEXT) {
            tui_paste(t, &ev, t->held_text + t->held_text_head);
            t->held_text_head += (size_t)ev.key;
        } else if (ev.kind == KEY_EVENT_KEY && !ev.pasted) {
            tui_handle_key(t, ev.keycode, ev.key);
        } else {
            tui_paste(t, &ev, NULL);
        }
    }
    if (i == 0)
        return;
    t->n_held -= i;
    memmove(t->held, t->held + i, sizeof *t->held * (size_t)t->n_held);
    if (t->n_held == 0)
        t->held_text_head = t->held_text_len = 0;
}

/* While a paste is under way: what the terminal has sent, as much as one read brings,
 * waiting up to wait ms for it, handed to the key reader (key_reader_feed_bytes);
 * false when nothing came. Curses would read it a byte a system call (two with its
 * wait): a megabyte took seconds. Curses holds none of it: the paste's first marker
 * ended the last key it read, and it reads no further than the key it returns. */
static bool read_pasted(tui *t, int wait, key_sink *sink, void *user)
{
    struct pollfd p = {.fd = t->tty_in, .events = POLLIN};
    if (poll(&p, 1, wait) <= 0)
        return false;
    char buf[1 << 16];
    ssize_t n = read(t->tty_in, buf, sizeof buf);
    if (n <= 0) {
        if (n == 0 || (errno != EINTR && errno != EAGAIN))
            t->tty_in = -1; /* curses reads on and meets what ended it */
        return false;
    }
    key_reader_feed_bytes(&t->keys, buf, (size_t)n, clock_ms(), sink, user);
    return true;
}

/* The terminal's next input, waiting up to wait ms for it: one key through curses, or
 * while a paste is under way, what one read brings; its events to sink. False when
 * nothing came. */
static bool read_input(tui *t, int wait, key_sink *sink, void *user)
{
    if (key_reader_pasting(&t->keys) && t->tty_in >= 0)
        return read_pasted(t, wait, sink, user);
    WINDOW *kw = key_window(t);
    wtimeout(kw, wait);
    wint_t wc;
    int r = wget_wch(kw, &wc);
    if (r == ERR)
        return false;
    key_event ev[KEY_READER_EVENTS_MAX];
    int n = key_reader_feed(&t->keys, r == KEY_CODE_YES, (int)wc, clock_ms(), ev);
    for (int i = 0; i < n; i++)
        sink(user, &ev[i], NULL);
    return true;
}

/* Hands what the key reader decides after a wait with no input to sink. */
static void read_idle(tui *t, key_sink *sink, void *user)
{
    key_event ev[KEY_READER_EVENTS_MAX];
    int n = key_reader_idle(&t->keys, clock_ms(), ev);
    for (int i = 0; i < n; i++)
        sink(user, &ev[i], NULL);
}

/* Handles the keys waiting (those kept first), after waiting up to wait ms for the
 * first, put together by the key reader: a sequence in pieces waits for its rest up to
 * KEY_READER_ESC_MS, and a lone Esc acts once that wait is over. */
static void read_keys(tui *t, int wait)
{
    handle_held(t);
    if (t->quit || t->step_once)
        return;
    int esc = key_reader_wait_ms(&t->keys, clock_ms());
    if (esc >= 0 && esc < wait)
        wait = esc;
    while (read_input(t, wait, hold_sink, t)) {
        handle_held(t);
        if (t->quit || t->step_once)
            return;
        wait = 0;
    }
    read_idle(t, hold_sink, t);
    handle_held(t);
}

/* A key that stops the reply (Esc, Ctrl-C: the key table's), typed rather than pasted. */
static bool is_stop_key(const key_event *ev)
{
    if (ev->kind != KEY_EVENT_KEY || ev->pasted)
        return false;
    const key_binding *b = keys_find(KEYS_ANYWHERE, ev->key, ev->keycode);
    return b && b->action == ACT_STOP;
}

typedef struct {
    tui *t;
    bool stop; /* a stop key came */
} prompt_keys;

/* key_sink while a prompt is read: a stop key noted, the rest kept for after it. */
static void prompt_sink(void *user, const key_event *ev, const char *text)
{
    prompt_keys *k = user;
    if (is_stop_key(ev))
        k->stop = true;
    else
        hold_sink(k->t, ev, text);
}

/* Between the chunks of a long prompt (engine_set_progress): the status line says how
 * far it is, slow motion waits, the keys typed are kept for after it; Esc, Ctrl-C or a
 * signal to quit stops it (false). Draws nothing that reads the engine's records. */
static bool on_prompt_progress(void *user, int done, int total)
{
    tui *t = user;
    t->run.prompt_done = done;
    t->run.prompt_total = total;
    t->run.message = NULL;
    if (t->w_status) {
        status_draw(t->w_status, &t->screen, t->e, &t->run);
        wnoutrefresh(t->w_status);
        doupdate();
    }
    double until = clock_ms() + (t->s ? t->s->slow_motion_ms : 0);
    prompt_keys keys = {.t = t, .stop = false};
    for (;;) {
        double now = clock_ms();
        bool came = read_input(t, now >= until ? 0 : (int)(until - now) + 1, prompt_sink, &keys);
        if (!came)
            read_idle(t, prompt_sink, &keys);
        if (keys.stop || signals_quit || signals_interrupted)
            return false;
        if (!came && clock_ms() >= until)
            return true;
    }
}

/* The loop: a reply's next token (or the line queued for when it ended), the keys,
 * a frame when something changed and the last one is old enough; until q, Ctrl-D or
 * a signal to quit. */
static void main_loop(tui *t)
{
    double next_frame = 0;
    double next_step = 0; /* monotonic ms when slow motion allows the next token */
    while (!t->quit) {
        if (signals_quit)
            break;
        if (signals_interrupted) {
            signals_interrupted = 0;
            tui_stop_reply(t);
            if (t->patch)
                patch_board_stop(t->patch);
        }
        bool busy = tui_replying(t) && !t->run.confirm_quit && (!t->run.paused || t->step_once);
        if (t->save_pending && !busy)
            autosave(t);
        double t0 = clock_ms();
        /* slow motion: keys and resizes are handled while waiting, but do not hurry
         * the next token; a single step (n) is never delayed */
        bool step_due = t->step_once || t0 >= next_step;
        if (busy && step_due) {
            t->step_once = false;
            generate_one(t);
            t->stat_tokens++;
            t->stat_step_ms += clock_ms() - t0;
            next_step = clock_ms() + (t->s ? t->s->slow_motion_ms : 0);
        } else if (t->n_pending > 0 && !tui_replying(t)) {
            send_queued(t);
            continue;
        }
        /* a patching grid's next cell, between replies' tokens and the keys */
        bool cells_due = !busy && t->patch && patch_board_running(t->patch);
        if (cells_due) {
            llm_err err;
            if (patch_board_step(t->patch, &err) != LLM_OK)
                tui_say(t, "patching stopped: %s", err.text);
            t->dirty |= DIRTY_ALL;
        }
        /* --compare-server: the next positions of a reply checked against the server */
        bool checks_due = !busy && !cells_due && t->check && server_check_pending(t->check) > 0;
        if (checks_due)
            check_step(t);
        double now = clock_ms();
        int wait = IDLE_WAIT_MS;
        if (busy)
            wait = now >= next_step ? 0 : (int)(next_step - now) + 1; /* 0: poll between tokens */
        else if (cells_due || checks_due)
            wait = 0; /* poll between cells, between the server's answers */
        else if (t->dirty)
            wait = now >= next_frame ? 0 : (int)(next_frame - now) + 1;
        read_keys(t, wait);
        now = clock_ms();
        if (t->dirty && now >= next_frame && !t->quit) {
            draw_frame(t);
            next_frame = now + (tui_replying(t) ? FRAME_MS_BUSY : FRAME_MS);
            if (busy) {
                t->stat_frames++;
                t->stat_draw_ms += clock_ms() - now;
            }
        }
        if (busy && !(t->s && t->s->slow_motion_ms))
            t->stat_busy_ms += clock_ms() - t0;
    }
}

/* Gives the terminal back: the input history written (or why not said), curses
 * ended, LLMCHAT_TUI_STATS reported. */
static void close_screen(tui *t, SCREEN *scr)
{
    if (t->e)
        engine_set_progress(t->e, NULL, NULL);
    int history_errno = input_close(t->input);
    free_windows(t);
    tui_restore_terminal();
    delscreen(scr);
    if (history_errno) {
        char *path = session_state_file("history");
        fprintf(stderr, "llmchat: cannot write the input history %s: %s\n", path ? path : "",
                strerror(history_errno));
        free(path);
    }
    const char *stats = getenv("LLMCHAT_TUI_STATS");
    if (stats && *stats && strcmp(stats, "0") != 0)
        print_stats(t, stats);
}

/* After the screen is closed: a reply still running stopped (kept as far as it went),
 * the chat saved (and, quitting on a signal, where it is said:
 * session_quit_on_signal), the TUI's own state freed (the
 * session is main.c's to close). Returns the exit status: 128 + the signal that quit,
 * else 0. */
static int finish(tui *t)
{
    int rc = 0;
    if (tui_replying(t)) { /* the reply so far is kept, stopped, and saved with the chat */
        llm_err err;
        if (t->c)
            chat_stop(t->c, &err);
        else
            remote_chat_stop(t->rc);
        t->save_pending = true;
    }
    if (signals_quit && t->served)
        rc = served_quit_on_signal(t->served);
    else if (signals_quit)
        rc = session_quit_on_signal(t->s); /* the terminal is back: said on stderr */
    else if (t->save_pending)
        autosave(t);
    for (int i = 0; i < t->n_pending; i++)
        free(t->pending[i].line);
    free(t->pending);
    free(t->held);
    free(t->held_text);
    close_panes(t);
    view_close(t->view);
    if (t->rc)
        remote_chat_stop(t->rc); /* the request cancelled; tui_remote closes the chat */
    return rc;
}

/* The screen and the loop, over the session's engine or the trace opened; frees the
 * TUI's own state and the trace. */
static int run_screen(tui *t)
{
    SCREEN *scr = start_terminal(t);
    if (!scr) {
        view_close(t->view);
        return 1;
    }
    open_screen(t);
    main_loop(t);
    close_screen(t, scr);
    return finish(t);
}
