/* tui_state.h — the TUI controller's state: the session whose engine and chat it
 * drives, the panes and overlays it owns, the focus, the run state and what needs
 * redrawing.
 *
 * Only the controller sees it: tui.c (the loop, the frames, the dialog, commands),
 * actions.c (what keys and the mouse do) and steer.c (steering a reply). The panes never do: each keeps its own state (conversation.h,
 * tokens_pane.h, attention_pane.h, input.h) and is driven through its functions;
 * status_line.c draws the run state it is given. */
#ifndef LLMCHAT_TUI_STATE_H
#define LLMCHAT_TUI_STATE_H

#include <stdbool.h>

#include "chat.h"
#include "remote_chat.h"
#include "served.h"
#include "options.h"
#include "engine.h"
#include "session.h"
#include "attention_pane.h"
#include "conversation.h"
#include "draw.h"
#include "input.h"
#include "key_reader.h"
#include "layout.h"
#include "overlays.h"
#include "patch_board.h"
#include "selection.h"
#include "status_line.h"
#include "tokens_pane.h"
#include "view.h"
#include "view_ops.h"

/* What has the focus, in Tab's order. */
typedef enum { FOCUS_INPUT = 0, FOCUS_CONV, FOCUS_TOKENS, FOCUS_ATTN, FOCUS_COUNT } tui_focus;

enum { /* dirty bits: which parts of the screen need redrawing */
    DIRTY_INPUT = 1 << FOCUS_INPUT,
    DIRTY_CONV = 1 << FOCUS_CONV,
    DIRTY_TOKENS = 1 << FOCUS_TOKENS,
    DIRTY_ATTN = 1 << FOCUS_ATTN,
    DIRTY_STATUS = 1 << FOCUS_COUNT,
    DIRTY_ALL = (1 << (FOCUS_COUNT + 1)) - 1,
};

typedef struct tui {
    session *s;         /* borrowed: the session main.c opened (session.h); NULL with --view */
    const app_options *o;
    engine *e;          /* s->e, borrowed; NULL with --view */
    chat *c;            /* s->c, borrowed; NULL with --view */
    trace_view *view;   /* owned; llmchat --view TRACE (then s, e and c are NULL) */
    served_session *served; /* llmchat --server URL: the chat with the served model
                               (tui_remote's; then s, e and c are NULL) */
    remote *rem;        /* served->rem, borrowed */
    remote_chat *rc;    /* served->rc, borrowed: its dialog */
    remote *check_rem;  /* owned; --compare-server URL -m tui: the server each reply is
                           checked against ... */
    server_check *check; /* owned: ... and what it said (NULL without) */
    int check_from, check_to; /* the reply being checked, its strip due when done (to 0:
                                 none) */
    char view_line[400]; /* the status line while viewing */

    tui_screen screen;
    tui_layout lay;
    view_handle pane[FOCUS_COUNT];   /* the bordered panes by focus (pane[FOCUS_INPUT] has no ops) */
    WINDOW *win[FOCUS_COUNT];     /* each pane's window and the input line's; NULL when folded */
    WINDOW *w_status;
    conv_pane *conv;              /* owned; also pane[FOCUS_CONV].state */
    tokens_pane *tokens;          /* owned; also pane[FOCUS_TOKENS].state */
    attn_pane *attn;              /* owned; also pane[FOCUS_ATTN].state */
    input_line *input;            /* owned */
    overlay_stack *overlays;      /* owned: the help, the compute view; those open are
                                     drawn over the panes, the top one takes the keys */
    patch_board *patch;           /* owned: the patching view's grid (/patch, or a
                                     patching trace's); its cells run between the keys */
    WINDOW *w_over;               /* the screen above the status line, where a VIEW_SCREEN
                                     overlay is drawn; NULL without a status line */
    tui_source src;               /* what Tokens and Attention read: the engine or the trace */
    model_config view_cfg;        /* the engine's model's, n_heads the most heads a layer
                                     has (model_heads_max: a hybrid's attention rows) */
    tui_selection sel;            /* shared by Tokens and Attention */
    tui_focus focus;
    key_reader keys;              /* the terminal's keys put together (key_reader.h) */
    key_event *held;              /* (n_held, held_cap) read, not handled yet: those
                                   after a key that left work for the loop (n), and
                                   those typed while a prompt was read, oldest first */
    int n_held, held_cap;
    char *held_text;              /* (held_text_len, held_text_cap) the bytes of the held
                                     KEY_EVENT_PASTE_TEXT events, in order, the first
                                     not handled at held_text_head */
    size_t held_text_head, held_text_len, held_text_cap;
    int tty_in;                   /* the terminal's input (curses' too): a paste is read
                                     from it in bulk (read_keys); -1 when it failed */
    unsigned dirty;               /* DIRTY_* */
    double attn_drawn_ms;         /* when Attention was last drawn (monotonic ms) */

    /* run state */
    status_view run;        /* idle/generating/stopped, paused, the quit question, last rate */
    bool step_once;         /* n: a paused reply advances one token; the keys typed after
                               it wait until that token is taken (read_keys), so each n
                               is one token, in order, however fast they come */
    bool quit;
    struct {
        char *line;         /* owned */
        bool paused;        /* its reply starts paused (/step) */
    } *pending;             /* (n_pending) lines sent while a reply runs, oldest first:
                               each is sent in turn when the reply before it ends */
    int n_pending;
    double reply_t0;        /* monotonic ms at the reply's first token */
    long long reply_tokens;
    char said[240];         /* the status line's one-off message (run.message points here) */

    /* the saved chat (the session's, autosave.h): written when a reply ends, and once
     * idle after every other change (steering, /system, /reset, /load) */
    bool save_pending;

    /* where the time goes while replies run (printed with LLMCHAT_TUI_STATS=1) */
    long long stat_tokens, stat_frames;
    double stat_busy_ms, stat_step_ms, stat_draw_ms;
} tui;

/* ---- tui.c: the loop, the frames, the dialog, the slash commands ---- */
/* A reply runs (never while viewing a trace: there is no chat). */
bool tui_replying(const tui *t);
/* Stops the running reply, if any, with a "[stopped]" notice. */
void tui_stop_reply(tui *t);
/* Quits, asking first (y/n) while a reply runs. */
void tui_request_quit(tui *t);
/* p: pauses replies (the running one with a hint in Conversation, else the next), or
 * lets them run again. */
void tui_toggle_pause(tui *t);
/* Says on the status line that a key or command would generate or steer, which a
 * trace being viewed cannot. */
void tui_read_only(tui *t);
/* The windows again for the terminal's size (at start and on a resize). */
void tui_make_windows(tui *t);
/* Overlay v has the room it needs on the screen now (VIEW_SCREEN: the window above the
 * status line); where it has not, it is not drawn and not opened. */
bool tui_overlay_fits(const tui *t, const view_ops *v);
/* After the chat took a reply token (sampled or forced) with progress p: streams
 * its text into Conversation and, when the reply ended, closes it with a notice. */
void tui_took_token(tui *t, chat_progress p, const char *text, const llm_err *err);
/* Labels the newest reply in Conversation with its branch ("branch 2/3"). */
void tui_show_branch(tui *t);
/* Conversation shows the newest reply again as the chat has it (after a rewind or a
 * branch switch), with its tokens' positions. */
void tui_show_reply(tui *t);
/* Says something on the status line until the next key (why a key did nothing). */
void tui_say(tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds a notice (a line such as "[stopped]") to Conversation. */
void tui_notice(tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- actions.c: what the keys and the mouse do ---- */
/* One key from curses (keycode: a KEY_* code, else a character): the top overlay's
 * when one is open, else looked up in the key table: Anywhere first, then the input
 * line's or the panes' bindings; also the quit question's answer, a resize and the
 * mouse. */
void tui_handle_key(tui *t, bool keycode, int key);
/* A bracketed paste's begin, end, one of its keys or a run of its text (text: the
 * bytes of a KEY_EVENT_PASTE_TEXT, else NULL): what is pasted goes into the input line
 * as text, newlines included, whatever had the focus (key_reader.h). */
void tui_paste(tui *t, const key_event *ev, const char *text);
/* Opens the overlay of slash command name (/experts), or says why it cannot open;
 * false when no overlay has that command. */
bool tui_open_view(tui *t, const char *name);

/* ---- steer.c: steering the newest reply (each leaves it paused) ---- */
/* Backspace: takes the newest reply token back (with a closing EOS). */
void steer_back(tui *t);
/* r: rewinds the reply so that the selected position is its newest. */
void steer_rewind_to_selection(tui *t);
/* 1-9, 0: rewinds to the selected position and forces its k-th candidate next. */
void steer_choose(tui *t, int k);
/* /force TEXT: forces TEXT's tokens into the reply (reopening it if it ended). */
void steer_force_text(tui *t, const char *text);
/* <, >: puts the previous / next branch of the newest reply on screen (and in the
 * context), the selection at the position where it parts from the one that was. */
void steer_branch(tui *t, int delta);
/* B: lists the branches that part from the reply at the selected position (all of
 * them, with where they part, when none parts there). */
void steer_list_branches(tui *t);

/* ---- steer_served.c: steering a served reply (it streams on from the new end) ---- */
/* The steering keys a served reply takes (r and the digits), for the key table's
 * check. */
bool served_steers(key_action a);
/* r: the reply forgotten after the selected position, the rest asked of the server. */
void served_rewind_to_selection(tui *t);
/* 1-9, 0: the selected position's k-th candidate put next, the rest asked of the server. */
void served_choose(tui *t, int k);
/* p: stops the served reply being written, or lets the stopped one go on. */
void served_pause(tui *t);
/* n: one more token of the stopped served reply. */
void served_step(tui *t);
/* Backspace: the newest token of the served reply taken back (it stays stopped). */
void served_back(tui *t);
/* /force TEXT over a server: TEXT's tokens at the newest reply's end, then on. */
void served_force_text(tui *t, const char *text);
/* Conversation shows the newest served reply again as the chat has it. */
void tui_show_remote_reply(tui *t);
/* The status line of a served chat: the server, its model, what the reply does, the
 * round trip. */
void tui_describe_remote(tui *t);

#endif
