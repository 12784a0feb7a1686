/* draw.h — the TUI's shared state, and the pieces every pane is drawn with.
 *
 * `tui` holds what the panes read and the keys change: the engine and chat (owned
 * by tui.c), the layout and its curses windows, the focus, each pane's view state
 * (scroll, selected position, layer/head...) and which panes need redrawing. The
 * panes only read step records and the conversation entries; they never drive
 * the model.
 * Only src/tui/ includes curses. */
#ifndef LLMCHAT_TUI_DRAW_H
#define LLMCHAT_TUI_DRAW_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

#include "../chat.h"
#include "../cli_options.h"
#include "../engine.h"
#include "../model.h"
#include "../textfmt.h"
#include "../tokenizer.h"
#include "../trace.h"
#include "keys.h"
#include "layout.h"

typedef enum { FOCUS_INPUT = 0, FOCUS_CONV, FOCUS_TOKENS, FOCUS_ATTN, FOCUS_COUNT } tui_focus;
typedef enum { RUN_IDLE = 0, RUN_GENERATING, RUN_STOPPED } tui_run_state;
typedef enum { COLORS_NONE = 0, COLORS_8, COLORS_256 } tui_colors;

enum { /* dirty bits */
    DIRTY_CONV = 1,
    DIRTY_TOKENS = 2,
    DIRTY_ATTN = 4,
    DIRTY_STATUS = 8,
    DIRTY_INPUT = 16,
    DIRTY_ALL = 31,
};

enum { /* colour pairs */
    PAIR_USER = 1,
    PAIR_ASSISTANT,
    PAIR_NOTICE,
    PAIR_FOCUS,
    PAIR_STATUS,
    PAIR_BAR,
    PAIR_CHOSEN,
    PAIR_DIM,
    PAIR_RAMP, /* PAIR_RAMP + bucket, up to SHADES_MAX buckets */
};
enum { SHADES_MAX = 10 };
/* Candidates the engine keeps per record for the Tokens pane: room to show more than
 * the default 10, without the cost of STEP_TOP_MAX (a few per cent of decode speed on
 * small models). */
enum { TUI_TOP_N = 32 };

typedef enum { ENTRY_USER, ENTRY_ASSISTANT, ENTRY_NOTICE } conv_kind;

typedef struct {
    conv_kind kind;
    char *text;   /* (len) terminal-safe UTF-8, NUL-terminated, starting with the label */
    size_t len, cap;
    size_t label_len; /* bytes of the "You: " / "Assistant: " label at the start */
} conv_entry;

typedef struct tui {
    const cli_options *o;
    const model *m;
    const tokenizer *tok;
    engine *e;         /* owned */
    chat *c;           /* owned */
    trace_writer *tr;      /* owned; NULL without --trace */

    bool utf8;         /* the locale is UTF-8: block and shade characters available */
    tui_colors colors;
    int n_shades;      /* heatmap buckets for the colour mode */

    int rows, cols;
    tui_layout lay;
    WINDOW *w_conv, *w_tokens, *w_attn, *w_status, *w_input; /* NULL when folded */
    tui_focus focus;
    unsigned dirty;

    /* Conversation */
    conv_entry *entries; /* (n_entries) */
    int n_entries, cap_entries;
    int stream_entry;      /* the entry the reply streams into (-1 none) */
    textfmt_stream stream; /* carries split UTF-8 of the streaming reply */
    int conv_scroll;       /* lines scrolled up from the bottom; 0 follows */
    int conv_page;         /* lines of the last drawn page */

    /* Tokens and Attention share the selected position */
    int sel;               /* selected position; -1 follows the newest */
    int top_k_shown;
    int layer, head;
    bool mean_heads, log_scale, mask_bos;
    bool capture;          /* the engine keeps attention rows (c turns it off: faster) */
    float *attn_row;       /* (attn_row_cap) scratch: one query's weights */
    int attn_row_cap;

    /* run state */
    tui_run_state state;
    double reply_t0;        /* monotonic ms at the reply's first token */
    long long reply_tokens;
    double reply_rate;      /* wall-clock tok/s of the last reply (0 unknown) */
    int reply_budget;       /* max tokens per reply; 0 until EOS */
    int step_delay_ms;      /* pause after each token (LLMCHAT_STEP_DELAY_MS): slow motion */

    /* where the time goes while replies run (printed with LLMCHAT_TUI_STATS=1) */
    long long stat_tokens, stat_frames;
    double stat_busy_ms, stat_step_ms, stat_draw_ms;

    /* modes */
    bool help;              /* help overlay shown */
    int help_page;          /* its page shown */
    bool confirm_quit;      /* "quit? (y/n)" asked */
    bool paused;            /* replies do not advance until resumed ... */
    bool step_once;         /* ... except by one token when this is set */
    bool quit;
    char *pending;          /* a line sent while a reply runs, sent when it ends */
    char *history_path;
} tui;

/* Selected position (or the newest), -1 when the sequence is empty. */
int tui_selected(const tui *t);
/* Called by input.c with a finished line (owned by the caller). */
void tui_submit(tui *t, const char *line);
/* Asks to quit (with a y/n question while a reply runs). */
void tui_request_quit(tui *t);
/* After the chat took a reply token (sampled or forced) with progress p: streams
 * its text into Conversation and, when the reply ended, closes it with a notice. */
void tui_took_token(tui *t, chat_progress p, const char *text, const llm_err *err);
/* Adds a notice (a line such as "[stopped]") to Conversation. */
void tui_notice(tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Monotonic milliseconds. */
double tui_now_ms(void);

/* ---- draw.c ---- */
/* Right after newterm: remembers that curses is active (for tui_restore_terminal)
 * and sets up the colours: 256-colour ramp, 8-colour fallback or none. */
void draw_start(tui *t);
/* The attribute for a colour pair, or fallback when colours are off. */
attr_t draw_attr(const tui *t, int pair, attr_t fallback);
/* Clears w and draws its border with title; the focused pane's border stands out. */
void draw_box(const tui *t, WINDOW *w, const char *title, bool focused);
/* Writes s at (y, x), cut to width columns (with an ellipsis when cut). */
void draw_text(const tui *t, WINDOW *w, int y, int x, int width, const char *s, attr_t a);
/* One heatmap cell of bucket b (0..n_shades-1). */
void draw_shade(const tui *t, WINDOW *w, int y, int x, int b);
/* Restores the terminal, prints the message and exits with status 1. */
void tui_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* endwin() if curses is active; safe to call twice. */
void tui_restore_terminal(void);

/* ---- conversation.c ---- */
void conv_add(tui *t, conv_kind kind, const char *text);
/* Appends streamed reply bytes to the newest assistant entry (made terminal-safe);
 * notices added meanwhile stay above or below it. */
void conv_stream(tui *t, const char *bytes, size_t len);
/* Replaces the text of the newest assistant entry with reply (after a rewind). */
void conv_set_reply(tui *t, const char *reply);
void conv_clear(tui *t);
void conv_free(tui *t);
void conv_draw(tui *t);
void conv_scroll_by(tui *t, int lines);
/* Runs a Conversation action of the key table; false when it is not one. */
bool conv_act(tui *t, key_action a);

/* ---- steer.c: steering the newest reply (each leaves it paused) ---- */
/* Backspace: takes the newest reply token back (with a closing EOS). */
void steer_back(tui *t);
/* r: rewinds the reply so that the selected position is its newest. */
void steer_rewind_to_selection(tui *t);
/* 1-9, 0: rewinds to the selected position and forces its k-th candidate next. */
void steer_choose(tui *t, int k);
/* /force TEXT: forces TEXT's tokens into the reply (reopening it if it ended). */
void steer_force_text(tui *t, const char *text);

/* ---- tokens_pane.c ---- */
void tokens_draw(tui *t);
/* Runs a Tokens action (the selection, top-k) of the key table; false when it is not one. */
bool tokens_act(tui *t, key_action a);
/* Moves the selected position (shared with the Attention pane). */
void tokens_select(tui *t, int pos_or_minus1);

/* ---- attention_pane.c ---- */
void attn_draw(tui *t);
/* Runs an Attention action (or a selection move) of the key table; false when it is not one. */
bool attn_act(tui *t, key_action a);

/* ---- status_line.c ---- */
void status_draw(tui *t);

/* ---- input.c ---- */
void input_init(tui *t);
void input_shutdown(tui *t);
/* Feeds one key to readline (key is a curses key code or a byte of text). */
void input_key(tui *t, int key, bool is_keycode);
void input_draw(tui *t);
bool input_empty(void);

/* ---- help.c ---- */
void help_draw(tui *t);
/* How many pages the overlay has on the current screen. */
int help_pages(const tui *t);
/* Adds the slash commands to the conversation as a notice. */
void help_commands_notice(tui *t);

#endif
