/* keys.h — the TUI's key table: every key binding, where it works, what it does and
 * how the help overlay describes it.
 *
 * One row per key and context, as tig's request table: the main loop looks a key up
 * here and runs the row's action (tui.c), the help overlay lists the rows (help.c),
 * and tests/test_tui_keys.c checks the rows against the man page's KEYS section, both
 * ways. What the dispatcher needs to know of a key (does it steer the reply, does it
 * change the chat) is a field of its row, not a list in tui.c. A new key is one row
 * here (designated initializers: {.ctx = ..., .code = ..., .action = ..., .name = ...,
 * .help = ...}), its action's case where it is handled, and one item in
 * man/llmchat.1's KEYS section.
 * Modal answers (the quit question's y/n) and curses events (resize, mouse) are not
 * key bindings and are handled by tui.c directly. */
#ifndef LLMCHAT_TUI_KEYS_H
#define LLMCHAT_TUI_KEYS_H

#include <stdbool.h>
#include <stddef.h>

/* Where a binding works, in the order the dispatcher asks. The help overlay and the
 * man page have one section per context, titled as in keys_context_info. */
typedef enum {
    KEYS_HELP = 0,   /* while the help overlay is shown */
    KEYS_ANYWHERE,   /* whatever has the focus */
    KEYS_INPUT,      /* the input line has the focus */
    KEYS_PANES,      /* any pane (not the input line) has the focus */
    KEYS_CONV,       /* the Conversation pane has the focus */
    KEYS_TOKENS,     /* the Tokens pane has the focus */
    KEYS_ATTN,       /* the Attention pane has the focus */
    KEYS_COMPUTE,    /* the compute view is shown (asked before Anywhere) */
    KEYS_EXPERTS,    /* the experts view is shown (asked before Anywhere) */
    KEYS_PATCH,      /* the patching view is shown (asked before Anywhere) */
    KEYS_CONTEXT_COUNT
} keys_context;

typedef enum {
    ACT_NONE = 0,
    /* help overlay */
    ACT_HELP_NEXT_PAGE, ACT_HELP_PREV_PAGE,
    /* anywhere */
    ACT_FOCUS_NEXT, ACT_FOCUS_PREV, ACT_STOP, ACT_HELP, ACT_REDRAW, ACT_QUIT,
    /* input line: handed to readline (the key edits the line) */
    ACT_READLINE,
    /* steering the newest reply (steer.c) */
    ACT_PAUSE, ACT_STEP, ACT_TAKE_BACK, ACT_REWIND, ACT_CHOOSE,
    ACT_BRANCH_PREV, ACT_BRANCH_NEXT, ACT_BRANCH_LIST,
    /* Conversation */
    ACT_SCROLL_UP, ACT_SCROLL_DOWN, ACT_PAGE_UP, ACT_PAGE_DOWN, ACT_SCROLL_TOP, ACT_SCROLL_END,
    /* the selected position (Tokens, Attention) */
    ACT_SEL_PREV, ACT_SEL_NEXT, ACT_SEL_BACK10, ACT_SEL_AHEAD10, ACT_SEL_FIRST, ACT_SEL_NEWEST,
    /* Tokens */
    ACT_TOPK_MORE, ACT_TOPK_FEWER,
    /* Attention */
    ACT_LAYER_PREV, ACT_LAYER_NEXT, ACT_HEAD_PREV, ACT_HEAD_NEXT, ACT_HEAD_MEAN, ACT_LOG_SCALE,
    ACT_MASK_BOS, ACT_CAPTURE,
    /* Attention's views: heatmap, logit lens, lens grid, heads, layers x heads,
     * attribution */
    ACT_VIEW_NEXT, ACT_VIEW_PREV, ACT_HEAD_METRIC, ACT_OPEN_HEAD,
    /* the heads and attribution views: knock the cursor's head out of the forward
     * pass, or back in; a Gated DeltaNet head out with its state emptied */
    ACT_KNOCK_OUT, ACT_KNOCK_OUT_RESET,
    /* the experts view: the cursor's expert out of its layer's router choice, or back
     * in; forced as the layer's first choice, or no longer */
    ACT_EXPERT_KNOCK, ACT_EXPERT_FORCE,
    /* the attribution view: the token whose logit is split */
    ACT_TARGET_NEXT, ACT_TARGET_PREV,
    /* Attention's Up/Down: the layer (the heads view: the head) */
    ACT_CELL_UP, ACT_CELL_DOWN,
    /* slow motion (the live setting slow-motion) */
    ACT_SLOW_MOTION,
    /* Conversation's reply tokens shaded: off, by probability, by entropy */
    ACT_SHADE_TOKENS,
    /* Conversation's thinking spans: folded or shown */
    ACT_SHOW_THINKING,
    /* the compute view: open or close it; back one level; the weight behind a step */
    ACT_COMPUTE, ACT_COMPUTE_BACK, ACT_COMPUTE_WEIGHT,
    /* the experts view: open or close it; back one level; the range its counts are over */
    ACT_EXPERTS, ACT_EXPERTS_BACK, ACT_EXPERTS_RANGE,
    /* the patching view: open or close it; stop the grid, else back; the site, the
     * metric (each runs the grid again) */
    ACT_PATCH, ACT_PATCH_BACK, ACT_PATCH_SITE, ACT_PATCH_METRIC,
} key_action;

typedef struct {
    keys_context ctx;
    int code;          /* a character (Ctrl-C is 3) or, when keycode, a curses KEY_* code */
    bool keycode;
    int last;          /* a range of characters code..last (the digits), else 0 */
    key_action action;
    /* Properties of the action (every row of an action agrees; tests/test_tui_keys.c): */
    bool steers;       /* steers the newest reply or its pace (pause, step, take back, rewind,
                          choose, the branches, slow motion): it needs a chat, so it says
                          "read-only" while viewing a trace; on the input line it acts on
                          an empty line while a reply runs, and is typed otherwise */
    bool changes_chat; /* changes the chat's turns or branches: the chat is autosaved once
                          idle (implies steers) */
    bool paused_only;  /* on the input line it steers only a paused reply (Backspace: held
                          down to empty the line, it must not eat a running reply), and
                          says why not on an empty line otherwise */
    const char *name;  /* the key as the man page's KEYS section names it */
    const char *help;  /* the overlay's text; consecutive rows with the same text share
                          one overlay line ("Esc Ctrl-C  stop the reply") */
} key_binding;

typedef struct {
    const char *title; /* the overlay's heading and the man page's .Ss name */
} keys_context_info;

/* The table, in the help overlay's order; *n receives its length. */
const key_binding *keys_table(int *n);
const keys_context_info *keys_context_get(keys_context ctx);

/* The binding of a key in ctx, NULL when the key has none there. */
const key_binding *keys_find(keys_context ctx, int code, bool keycode);

/* A key's name as the help writes keys ("Shift-Left", "F5", "Ctrl-X", "x") into buf. */
void keys_name(int code, bool keycode, char *buf, size_t size);

/* ---- the help overlay's text, laid out for a screen size (help.c draws it) ---- */
enum { KEYS_HELP_LINES_MAX = 224, KEYS_HELP_COLS_MAX = 32 };

typedef struct {
    const char *heading; /* a context's title, else NULL */
    char keys[64];       /* the keys column: "Esc Ctrl-C"; "" on a text's second line */
    char help[64];       /* the text, or the part of it that fits a line (longer texts go
                            on over the next lines, keys ""); "" on a heading or a
                            keys-only line (keys too long for the keys column: they may
                            take several such lines, then the text follows) */
    bool cont;           /* goes on with the entry of the line above: never starts a
                            column unless the entry is taller than one */
} keys_help_line;

typedef struct {
    int width, height;   /* the overlay's size, borders included */
    int n_cols;          /* columns per page */
    int key_width;       /* screen columns of the keys column */
    int text_width;      /* screen columns of the text column: no text line is longer */
    int col_height;      /* lines per column */
    int n_columns;       /* columns in all */
    int n_pages;
    int col_start[KEYS_HELP_COLS_MAX + 1]; /* column c holds lines col_start[c] .. col_start[c+1]-1 */
    const char *col_heading[KEYS_HELP_COLS_MAX]; /* repeated at the top of column c, or NULL */
    keys_help_line lines[KEYS_HELP_LINES_MAX];
    int n_lines;
} keys_help_layout;

/* The overlay for a screen of cols x rows: its size, lines and pages. Page p shows
 * columns p * n_cols .. p * n_cols + n_cols - 1. */
void keys_help_layout_compute(int cols, int rows, keys_help_layout *l);

#endif
