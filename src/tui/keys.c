/* keys.c — the key table (see keys.h), its look-up, and the help overlay's text laid
 * out in columns and pages.
 *
 * Owns the table. Uses curses only for its KEY_* codes: no drawing here (help.c draws
 * the overlay from keys_help_layout_compute's lines). */
#include "keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define CTRL(c) ((c) & 0x1f)
/* A curses KEY_* code; a row without it binds the character in .code. */
#define KEYCODE(k) .code = (k), .keycode = true
enum { ESC = 27, DEL = 127 };

#define HELP_COMPUTE_UPDOWN "step (values: row; weight: scroll)"
#define HELP_COMPUTE_PAGE "a page"
#define HELP_COMPUTE_SIDE "position (values: value; weight: group)"
#define HELP_COMPUTE_ENDS "first / newest (values, weight: ends)"
#define HELP_COMPUTE_OPEN "values (Enter), weight (w)"
#define HELP_COMPUTE_BACK "back; from the list: close"

#define HELP_EXPERTS_UPDOWN "layer (router, tokens: a row)"
#define HELP_EXPERTS_OPEN "router of the layer; who chose"
#define HELP_EXPERTS_BACK "back; from the layers: close"

#define HELP_PATCH_UPDOWN "layer"
#define HELP_PATCH_SIDE "position (heads: head)"
#define HELP_PATCH_ENDS "first / last position"
#define HELP_PATCH_OPEN "the cell's top tokens"
#define HELP_PATCH_BACK "stop the grid; back; close"

static const char HELP_SEL[] = "move the selection";
static const char HELP_SEL10[] = "move by 10";
static const char HELP_SEL_ENDS[] = "first / follow newest";
/* every view of attention_views.c's table, in its order (tests/test_tui_views.c checks) */
static const char HELP_VIEWS[] = "next / previous view: heatmap, lens, lens grid, heads, "
                                 "layers x heads, attribution";

static const key_binding table[] = {
    {.ctx = KEYS_ANYWHERE, .code = '\t', .action = ACT_FOCUS_NEXT, .name = "Tab",
     .help = "next / previous pane"},
    {.ctx = KEYS_ANYWHERE, KEYCODE(KEY_BTAB), .action = ACT_FOCUS_PREV, .name = "Shift-Tab",
     .help = "next / previous pane"},
    {.ctx = KEYS_ANYWHERE, .code = ESC, .action = ACT_STOP, .name = "Esc", .help = "stop the reply"},
    {.ctx = KEYS_ANYWHERE, .code = CTRL('c'), .action = ACT_STOP, .name = "Ctrl-C", .help = "stop the reply"},
    {.ctx = KEYS_ANYWHERE, KEYCODE(KEY_F(1)), .action = ACT_HELP, .name = "F1", .help = "this help"},
    {.ctx = KEYS_ANYWHERE, KEYCODE(KEY_PPAGE), .action = ACT_PAGE_UP, .name = "PgUp",
     .help = "scroll conversation"},
    {.ctx = KEYS_ANYWHERE, KEYCODE(KEY_NPAGE), .action = ACT_PAGE_DOWN, .name = "PgDn",
     .help = "scroll conversation"},
    {.ctx = KEYS_ANYWHERE, .code = CTRL('l'), .action = ACT_REDRAW, .name = "Ctrl-L",
     .help = "redraw the screen"},

    {.ctx = KEYS_INPUT, .code = '\r', .action = ACT_READLINE, .name = "Enter",
     .help = "send message, /command"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_ENTER), .action = ACT_READLINE, .name = "Enter",
     .help = "send message, /command"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_UP), .action = ACT_READLINE, .name = "Up", .help = "history (all runs)"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_DOWN), .action = ACT_READLINE, .name = "Down",
     .help = "history (all runs)"},
    {.ctx = KEYS_INPUT, .code = CTRL('r'), .action = ACT_READLINE, .name = "Ctrl-R",
     .help = "search the history"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_LEFT), .action = ACT_READLINE, .name = "Left",
     .help = "move in the line"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_RIGHT), .action = ACT_READLINE, .name = "Right",
     .help = "move in the line"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_HOME), .action = ACT_READLINE, .name = "Home",
     .help = "start / end of line"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_END), .action = ACT_READLINE, .name = "End",
     .help = "start / end of line"},
    {.ctx = KEYS_INPUT, .code = CTRL('a'), .action = ACT_READLINE, .name = "Ctrl-A",
     .help = "readline editing"},
    {.ctx = KEYS_INPUT, .code = CTRL('e'), .action = ACT_READLINE, .name = "Ctrl-E",
     .help = "readline editing"},
    {.ctx = KEYS_INPUT, .code = CTRL('k'), .action = ACT_READLINE, .name = "Ctrl-K",
     .help = "readline editing"},
    {.ctx = KEYS_INPUT, .code = CTRL('u'), .action = ACT_READLINE, .name = "Ctrl-U",
     .help = "readline editing"},
    {.ctx = KEYS_INPUT, .code = CTRL('w'), .action = ACT_READLINE, .name = "Ctrl-W",
     .help = "readline editing"},
    /* on a non-empty line these two are typed (tui.c) */
    {.ctx = KEYS_INPUT, .code = '?', .action = ACT_HELP, .name = "?", .help = "help (empty line)"},
    {.ctx = KEYS_INPUT, .code = CTRL('d'), .action = ACT_QUIT, .name = "Ctrl-D", .help = "quit (empty line)"},
    /* steering from the input line: on an empty line while a reply runs (tui.c) */
    {.ctx = KEYS_INPUT, .code = 'p', .action = ACT_PAUSE, .steers = true, .name = "p",
     .help = "steer: empty line, replying"},
    {.ctx = KEYS_INPUT, .code = 'n', .action = ACT_STEP, .steers = true, .name = "n",
     .help = "steer: empty line, replying"},
    {.ctx = KEYS_INPUT, .code = '1', .last = '9', .action = ACT_CHOOSE, .steers = true, .changes_chat = true,
     .name = "1-9", .help = "steer: empty line, replying"},
    {.ctx = KEYS_INPUT, .code = '0', .action = ACT_CHOOSE, .steers = true, .changes_chat = true, .name = "0",
     .help = "steer: empty line, replying"},
    {.ctx = KEYS_INPUT, KEYCODE(KEY_BACKSPACE), .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .paused_only = true, .name = "Backspace", .help = "steer: empty line, paused"},
    {.ctx = KEYS_INPUT, .code = DEL, .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .paused_only = true, .name = "Backspace", .help = "steer: empty line, paused"},
    {.ctx = KEYS_INPUT, .code = CTRL('h'), .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .paused_only = true, .name = "Backspace", .help = "steer: empty line, paused"},

    {.ctx = KEYS_PANES, .code = 'q', .action = ACT_QUIT, .name = "q", .help = "quit (y/n if replying)"},
    {.ctx = KEYS_PANES, .code = '?', .action = ACT_HELP, .name = "?", .help = "this help"},
    {.ctx = KEYS_PANES, .code = 'p', .action = ACT_PAUSE, .steers = true, .name = "p",
     .help = "pause / resume replies"},
    {.ctx = KEYS_PANES, .code = 'n', .action = ACT_STEP, .steers = true, .name = "n",
     .help = "one token while paused"},
    {.ctx = KEYS_PANES, KEYCODE(KEY_BACKSPACE), .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .name = "Backspace", .help = "take a token back"},
    {.ctx = KEYS_PANES, .code = DEL, .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .name = "Backspace", .help = "take a token back"},
    {.ctx = KEYS_PANES, .code = CTRL('h'), .action = ACT_TAKE_BACK, .steers = true, .changes_chat = true,
     .name = "Backspace", .help = "take a token back"},
    {.ctx = KEYS_PANES, .code = 'r', .action = ACT_REWIND, .steers = true, .changes_chat = true, .name = "r",
     .help = "rewind to selection"},
    {.ctx = KEYS_PANES, .code = '1', .last = '9', .action = ACT_CHOOSE, .steers = true, .changes_chat = true,
     .name = "1-9", .help = "choose candidate 1-10"},
    {.ctx = KEYS_PANES, .code = '0', .action = ACT_CHOOSE, .steers = true, .changes_chat = true, .name = "0",
     .help = "choose candidate 1-10"},
    {.ctx = KEYS_PANES, .code = '<', .action = ACT_BRANCH_PREV, .steers = true, .changes_chat = true,
     .name = "<", .help = "previous / next branch"},
    {.ctx = KEYS_PANES, .code = '>', .action = ACT_BRANCH_NEXT, .steers = true, .changes_chat = true,
     .name = ">", .help = "previous / next branch"},
    {.ctx = KEYS_PANES, .code = 'B', .action = ACT_BRANCH_LIST, .steers = true, .name = "B",
     .help = "branches at selection"},
    {.ctx = KEYS_PANES, .code = 's', .action = ACT_SLOW_MOTION, .steers = true, .name = "s",
     .help = "slow motion: off/100/300/1000 ms"},
    {.ctx = KEYS_PANES, .code = 'g', .action = ACT_COMPUTE, .name = "g",
     .help = "compute view of the position"},
    {.ctx = KEYS_PANES, .code = 'E', .action = ACT_EXPERTS, .name = "E",
     .help = "experts view of the position"},
    {.ctx = KEYS_PANES, .code = 'P', .action = ACT_PATCH, .name = "P",
     .help = "patching view (/patch TEXT)"},
    {.ctx = KEYS_PANES, .code = 'C', .action = ACT_SHADE_TOKENS, .name = "C",
     .help = "colour: prob, entropy, guesses, off"},

    {.ctx = KEYS_CONV, KEYCODE(KEY_UP), .action = ACT_SCROLL_UP, .name = "Up", .help = "scroll a line"},
    {.ctx = KEYS_CONV, KEYCODE(KEY_DOWN), .action = ACT_SCROLL_DOWN, .name = "Down", .help = "scroll a line"},
    {.ctx = KEYS_CONV, KEYCODE(KEY_HOME), .action = ACT_SCROLL_TOP, .name = "Home",
     .help = "top / follow the end"},
    {.ctx = KEYS_CONV, KEYCODE(KEY_END), .action = ACT_SCROLL_END, .name = "End",
     .help = "top / follow the end"},
    {.ctx = KEYS_CONV, .code = 'z', .action = ACT_SHOW_THINKING, .name = "z",
     .help = "unfold / fold the thinking"},

    {.ctx = KEYS_TOKENS, KEYCODE(KEY_LEFT), .action = ACT_SEL_PREV, .name = "Left", .help = HELP_SEL},
    {.ctx = KEYS_TOKENS, KEYCODE(KEY_RIGHT), .action = ACT_SEL_NEXT, .name = "Right", .help = HELP_SEL},
    {.ctx = KEYS_TOKENS, KEYCODE(KEY_SLEFT), .action = ACT_SEL_BACK10, .name = "Shift-Left",
     .help = HELP_SEL10},
    {.ctx = KEYS_TOKENS, KEYCODE(KEY_SRIGHT), .action = ACT_SEL_AHEAD10, .name = "Shift-Right",
     .help = HELP_SEL10},
    {.ctx = KEYS_TOKENS, KEYCODE(KEY_HOME), .action = ACT_SEL_FIRST, .name = "Home", .help = HELP_SEL_ENDS},
    {.ctx = KEYS_TOKENS, KEYCODE(KEY_END), .action = ACT_SEL_NEWEST, .name = "End", .help = HELP_SEL_ENDS},
    {.ctx = KEYS_TOKENS, .code = '+', .action = ACT_TOPK_MORE, .name = "+", .help = "more / fewer top-k"},
    {.ctx = KEYS_TOKENS, .code = '=', .action = ACT_TOPK_MORE, .name = "=", .help = "more / fewer top-k"},
    {.ctx = KEYS_TOKENS, .code = '-', .action = ACT_TOPK_FEWER, .name = "-", .help = "more / fewer top-k"},

    {.ctx = KEYS_ATTN, .code = '[', .action = ACT_LAYER_PREV, .name = "[", .help = "previous / next layer"},
    {.ctx = KEYS_ATTN, .code = ']', .action = ACT_LAYER_NEXT, .name = "]", .help = "previous / next layer"},
    {.ctx = KEYS_ATTN, .code = '{', .action = ACT_HEAD_PREV, .name = "{", .help = "previous / next head"},
    {.ctx = KEYS_ATTN, .code = '}', .action = ACT_HEAD_NEXT, .name = "}", .help = "previous / next head"},
    {.ctx = KEYS_ATTN, .code = ',', .action = ACT_HEAD_PREV, .name = ",", .help = "previous / next head"},
    {.ctx = KEYS_ATTN, .code = '.', .action = ACT_HEAD_NEXT, .name = ".", .help = "previous / next head"},
    {.ctx = KEYS_ATTN, .code = 'm', .action = ACT_HEAD_MEAN, .name = "m", .help = "mean of the heads"},
    {.ctx = KEYS_ATTN, .code = 'l', .action = ACT_LOG_SCALE, .name = "l", .help = "log scale"},
    {.ctx = KEYS_ATTN, .code = 'b', .action = ACT_MASK_BOS, .name = "b", .help = "mask BOS sink column"},
    {.ctx = KEYS_ATTN, .code = 'c', .action = ACT_CAPTURE, .name = "c", .help = "attention capture on/off"},
    {.ctx = KEYS_ATTN, .code = 'v', .action = ACT_VIEW_NEXT, .name = "v", .help = HELP_VIEWS},
    {.ctx = KEYS_ATTN, .code = 'V', .action = ACT_VIEW_PREV, .name = "V", .help = HELP_VIEWS},
    {.ctx = KEYS_ATTN, .code = 'e', .action = ACT_HEAD_METRIC, .name = "e",
     .help = "heads: entropy / BOS weight"},
    {.ctx = KEYS_ATTN, .code = '\r', .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = "heads grid: open in heatmap"},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_ENTER), .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = "heads grid: open in heatmap"},
    {.ctx = KEYS_ATTN, .code = 'x', .action = ACT_KNOCK_OUT, .name = "x",
     .help = "heads, attrib: knock head out/in"},
    {.ctx = KEYS_ATTN, .code = 'X', .action = ACT_KNOCK_OUT_RESET, .name = "X",
     .help = "DeltaNet head out, state reset"},
    {.ctx = KEYS_ATTN, .code = 't', .action = ACT_TARGET_NEXT, .name = "t",
     .help = "attribution: next / prev target"},
    {.ctx = KEYS_ATTN, .code = 'T', .action = ACT_TARGET_PREV, .name = "T",
     .help = "attribution: next / prev target"},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_LEFT), .action = ACT_SEL_PREV, .name = "Left", .help = HELP_SEL},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_RIGHT), .action = ACT_SEL_NEXT, .name = "Right", .help = HELP_SEL},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_SLEFT), .action = ACT_SEL_BACK10, .name = "Shift-Left",
     .help = HELP_SEL10},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_SRIGHT), .action = ACT_SEL_AHEAD10, .name = "Shift-Right",
     .help = HELP_SEL10},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_HOME), .action = ACT_SEL_FIRST, .name = "Home", .help = HELP_SEL_ENDS},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_END), .action = ACT_SEL_NEWEST, .name = "End", .help = HELP_SEL_ENDS},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_UP), .action = ACT_CELL_UP, .name = "Up",
     .help = "layer (heads view: head)"},
    {.ctx = KEYS_ATTN, KEYCODE(KEY_DOWN), .action = ACT_CELL_DOWN, .name = "Down",
     .help = "layer (heads view: head)"},

    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_UP), .action = ACT_CELL_UP, .name = "Up", .help = HELP_COMPUTE_UPDOWN},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_DOWN), .action = ACT_CELL_DOWN, .name = "Down",
     .help = HELP_COMPUTE_UPDOWN},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_PPAGE), .action = ACT_PAGE_UP, .name = "PgUp",
     .help = HELP_COMPUTE_PAGE},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_NPAGE), .action = ACT_PAGE_DOWN, .name = "PgDn",
     .help = HELP_COMPUTE_PAGE},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_LEFT), .action = ACT_SEL_PREV, .name = "Left",
     .help = HELP_COMPUTE_SIDE},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_RIGHT), .action = ACT_SEL_NEXT, .name = "Right",
     .help = HELP_COMPUTE_SIDE},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_HOME), .action = ACT_SEL_FIRST, .name = "Home",
     .help = HELP_COMPUTE_ENDS},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_END), .action = ACT_SEL_NEWEST, .name = "End",
     .help = HELP_COMPUTE_ENDS},
    {.ctx = KEYS_COMPUTE, .code = '[', .action = ACT_LAYER_PREV, .name = "[",
     .help = "previous / next layer"},
    {.ctx = KEYS_COMPUTE, .code = ']', .action = ACT_LAYER_NEXT, .name = "]",
     .help = "previous / next layer"},
    {.ctx = KEYS_COMPUTE, .code = '{', .action = ACT_HEAD_PREV, .name = "{",
     .help = "previous / next head (values)"},
    {.ctx = KEYS_COMPUTE, .code = '}', .action = ACT_HEAD_NEXT, .name = "}",
     .help = "previous / next head (values)"},
    {.ctx = KEYS_COMPUTE, .code = '\r', .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_COMPUTE_OPEN},
    {.ctx = KEYS_COMPUTE, KEYCODE(KEY_ENTER), .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_COMPUTE_OPEN},
    {.ctx = KEYS_COMPUTE, .code = 'w', .action = ACT_COMPUTE_WEIGHT, .name = "w",
     .help = HELP_COMPUTE_OPEN},
    {.ctx = KEYS_COMPUTE, .code = ESC, .action = ACT_COMPUTE_BACK, .name = "Esc",
     .help = HELP_COMPUTE_BACK},
    {.ctx = KEYS_COMPUTE, .code = 'q', .action = ACT_COMPUTE_BACK, .name = "q",
     .help = HELP_COMPUTE_BACK},
    {.ctx = KEYS_COMPUTE, .code = 'g', .action = ACT_COMPUTE, .name = "g", .help = HELP_COMPUTE_BACK},
    {.ctx = KEYS_COMPUTE, .code = 'p', .action = ACT_PAUSE, .steers = true, .name = "p",
     .help = "pause / step the reply"},
    {.ctx = KEYS_COMPUTE, .code = 'n', .action = ACT_STEP, .steers = true, .name = "n",
     .help = "pause / step the reply"},

    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_UP), .action = ACT_CELL_UP, .name = "Up",
     .help = HELP_EXPERTS_UPDOWN},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_DOWN), .action = ACT_CELL_DOWN, .name = "Down",
     .help = HELP_EXPERTS_UPDOWN},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_PPAGE), .action = ACT_PAGE_UP, .name = "PgUp",
     .help = "a page"},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_NPAGE), .action = ACT_PAGE_DOWN, .name = "PgDn",
     .help = "a page"},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_LEFT), .action = ACT_SEL_PREV, .name = "Left",
     .help = "previous / next position"},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_RIGHT), .action = ACT_SEL_NEXT, .name = "Right",
     .help = "previous / next position"},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_HOME), .action = ACT_SEL_FIRST, .name = "Home",
     .help = "first / newest position"},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_END), .action = ACT_SEL_NEWEST, .name = "End",
     .help = "first / newest position"},
    {.ctx = KEYS_EXPERTS, .code = '\r', .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_EXPERTS_OPEN},
    {.ctx = KEYS_EXPERTS, KEYCODE(KEY_ENTER), .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_EXPERTS_OPEN},
    {.ctx = KEYS_EXPERTS, .code = 'a', .action = ACT_EXPERTS_RANGE, .name = "a",
     .help = "counts: the reply / all"},
    {.ctx = KEYS_EXPERTS, .code = 'x', .action = ACT_EXPERT_KNOCK, .steers = true, .name = "x",
     .help = "router, who chose: expert out/in"},
    {.ctx = KEYS_EXPERTS, .code = 'f', .action = ACT_EXPERT_FORCE, .steers = true, .name = "f",
     .help = "router, who chose: force / unforce"},
    {.ctx = KEYS_EXPERTS, .code = ESC, .action = ACT_EXPERTS_BACK, .name = "Esc",
     .help = HELP_EXPERTS_BACK},
    {.ctx = KEYS_EXPERTS, .code = 'q', .action = ACT_EXPERTS_BACK, .name = "q",
     .help = HELP_EXPERTS_BACK},
    {.ctx = KEYS_EXPERTS, .code = 'E', .action = ACT_EXPERTS, .name = "E", .help = HELP_EXPERTS_BACK},
    {.ctx = KEYS_EXPERTS, .code = 'p', .action = ACT_PAUSE, .steers = true, .name = "p",
     .help = "pause / step the reply"},
    {.ctx = KEYS_EXPERTS, .code = 'n', .action = ACT_STEP, .steers = true, .name = "n",
     .help = "pause / step the reply"},

    {.ctx = KEYS_PATCH, KEYCODE(KEY_UP), .action = ACT_CELL_UP, .name = "Up",
     .help = HELP_PATCH_UPDOWN},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_DOWN), .action = ACT_CELL_DOWN, .name = "Down",
     .help = HELP_PATCH_UPDOWN},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_PPAGE), .action = ACT_PAGE_UP, .name = "PgUp",
     .help = "a page of layers"},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_NPAGE), .action = ACT_PAGE_DOWN, .name = "PgDn",
     .help = "a page of layers"},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_LEFT), .action = ACT_SEL_PREV, .name = "Left",
     .help = HELP_PATCH_SIDE},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_RIGHT), .action = ACT_SEL_NEXT, .name = "Right",
     .help = HELP_PATCH_SIDE},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_HOME), .action = ACT_SEL_FIRST, .name = "Home",
     .help = HELP_PATCH_ENDS},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_END), .action = ACT_SEL_NEWEST, .name = "End",
     .help = HELP_PATCH_ENDS},
    {.ctx = KEYS_PATCH, .code = '\r', .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_PATCH_OPEN},
    {.ctx = KEYS_PATCH, KEYCODE(KEY_ENTER), .action = ACT_OPEN_HEAD, .name = "Enter",
     .help = HELP_PATCH_OPEN},
    {.ctx = KEYS_PATCH, .code = 's', .action = ACT_PATCH_SITE, .name = "s",
     .help = "next site"},
    {.ctx = KEYS_PATCH, .code = 'm', .action = ACT_PATCH_METRIC, .name = "m",
     .help = "logit difference / KL"},
    {.ctx = KEYS_PATCH, .code = ESC, .action = ACT_PATCH_BACK, .name = "Esc",
     .help = HELP_PATCH_BACK},
    {.ctx = KEYS_PATCH, .code = CTRL('c'), .action = ACT_PATCH_BACK, .name = "Ctrl-C",
     .help = HELP_PATCH_BACK},
    {.ctx = KEYS_PATCH, .code = 'q', .action = ACT_PATCH_BACK, .name = "q",
     .help = HELP_PATCH_BACK},
    {.ctx = KEYS_PATCH, .code = 'P', .action = ACT_PATCH, .name = "P", .help = "close"},

    {.ctx = KEYS_HELP, KEYCODE(KEY_NPAGE), .action = ACT_HELP_NEXT_PAGE, .name = "PgDn", .help = "next page"},
    {.ctx = KEYS_HELP, .code = ' ', .action = ACT_HELP_NEXT_PAGE, .name = "Space", .help = "next page"},
    {.ctx = KEYS_HELP, KEYCODE(KEY_PPAGE), .action = ACT_HELP_PREV_PAGE, .name = "PgUp",
     .help = "previous page"},
};
enum { N_TABLE = sizeof table / sizeof table[0] };

static const keys_context_info contexts[KEYS_CONTEXT_COUNT] = {
    [KEYS_HELP] = {"Help overlay"},
    [KEYS_ANYWHERE] = {"Anywhere"},
    [KEYS_INPUT] = {"Input line"},
    [KEYS_PANES] = {"Any pane"},
    [KEYS_CONV] = {"Conversation"},
    [KEYS_TOKENS] = {"Tokens"},
    [KEYS_ATTN] = {"Attention"},
    [KEYS_COMPUTE] = {"Compute view"},
    [KEYS_EXPERTS] = {"Experts view"},
    [KEYS_PATCH] = {"Patching view"},
};

const key_binding *keys_table(int *n)
{
    *n = N_TABLE;
    return table;
}

const keys_context_info *keys_context_get(keys_context ctx)
{
    return ctx >= 0 && ctx < KEYS_CONTEXT_COUNT ? &contexts[ctx] : NULL;
}

const key_binding *keys_find(keys_context ctx, int code, bool keycode)
{
    for (int i = 0; i < N_TABLE; i++) {
        const key_binding *b = &table[i];
        if (b->ctx != ctx || b->keycode != keycode)
            continue;
        if (b->last ? code >= b->code && code <= b->last : code == b->code)
            return b;
    }
    return NULL;
}

/* ---- the help overlay's text ---- */

/* Does the group starting at row i already name `name` (rows i..j-1)? */
static bool named_before(int i, int j, const char *name)
{
    for (int k = i; k < j; k++)
        if (!strcmp(table[k].name, name))
            return true;
    return false;
}

static bool same_line(const key_binding *a, const key_binding *b)
{
    return a->ctx == b->ctx && !strcmp(a->help, b->help);
}

/* Appends a line (cont: it goes on with the entry above it); the layout has room for
 * KEYS_HELP_LINES_MAX. */
static void add_line(keys_help_layout *l, const char *heading, const char *keys, size_t keys_n,
                     const char *help, size_t n, bool cont)
{
    if (l->n_lines >= KEYS_HELP_LINES_MAX)
        return;
    keys_help_line *ln = &l->lines[l->n_lines++];
    ln->heading = heading;
    ln->cont = cont;
    if (keys_n >= sizeof ln->keys)
        keys_n = sizeof ln->keys - 1;
    memcpy(ln->keys, keys ? keys : "", keys ? keys_n : 0);
    ln->keys[keys ? keys_n : 0] = '\0';
    if (n >= sizeof ln->help)
        n = sizeof ln->help - 1;
    memcpy(ln->help, help ? help : "", help ? n : 0);
    ln->help[help ? n : 0] = '\0';
}

/* The bytes of s[0..len) that make its next line of at most width (ASCII, broken at
 * the last blank that fits; a word longer than width is cut). */
static size_t line_part(const char *s, size_t len, int width)
{
    size_t n = len, w = width > 1 ? (size_t)width : 1;
    if (n > w) {
        n = w;
        while (n > 0 && s[n] != ' ')
            n--;
        if (n == 0)
            n = w;
    }
    return n;
}

/* Adds text wrapped at blanks to lines of at most width: as keys lines (help NULL:
 * keys whose text starts on the next line), or as the text after keys, which the
 * first line shows (cont: that first line goes on with the entry above it). */
static void add_wrapped(keys_help_layout *l, const char *keys, const char *help, int width, bool cont)
{
    bool as_keys = help == NULL;
    const char *s = as_keys ? keys : help;
    size_t len = strlen(s);
    do {
        size_t n = line_part(s, len, width);
        if (as_keys)
            add_line(l, NULL, s, n, NULL, 0, cont);
        else
            add_line(l, NULL, keys, strlen(keys), s, n, cont);
        keys = "";
        cont = true;
        s += n;
        len -= n;
        while (*s == ' ') {
            s++;
            len--;
        }
    } while (len > 0);
}

/* All lines for a keys column of key_width and a text column of text_width: a heading
 * per context, then one line per group of consecutive rows with the same text; keys
 * that do not fit the column get a line of their own, the text follows on the next. */
static void compose(keys_help_layout *l, int key_width, int text_width)
{
    l->n_lines = 0;
    keys_context ctx = KEYS_CONTEXT_COUNT;
    for (int i = 0; i < N_TABLE;) {
        if (table[i].ctx != ctx) {
            ctx = table[i].ctx;
            add_line(l, contexts[ctx].title, NULL, 0, NULL, 0, false);
        }
        char keys[sizeof l->lines[0].keys] = "";
        int j = i;
        for (; j < N_TABLE && same_line(&table[i], &table[j]); j++) {
            if (named_before(i, j, table[j].name))
                continue;
            size_t n = strlen(keys);
            snprintf(keys + n, sizeof keys - n, "%s%s", n ? " " : "", table[j].name);
        }
        if ((int)strlen(keys) > key_width) { /* the keys on lines of their own */
            add_wrapped(l, keys, NULL, key_width + 1 + text_width, false); /* the column */
            add_wrapped(l, "", table[i].help, text_width, true);
        } else {
            add_wrapped(l, keys, table[i].help, text_width, false);
        }
        i = j;
    }
}

/* Splits the lines into columns of at most height lines. A column that starts inside a
 * context repeats its heading on its first line; a heading never ends a column and an
 * entry (its keys and its text's lines) is never split unless it is taller than a
 * column. Returns the number of columns (at most KEYS_HELP_COLS_MAX; 0 when height is
 * too small to hold anything). */
static int split_columns(keys_help_layout *l, int height)
{
    if (height < 3)
        return 0;
    int n = 0, start = 0;
    const char *heading = NULL; /* the context the next line belongs to */
    while (start < l->n_lines && n < KEYS_HELP_COLS_MAX) {
        bool repeat = !l->lines[start].heading;
        int room = repeat ? height - 1 : height;
        int end = start + room < l->n_lines ? start + room : l->n_lines;
        if (end < l->n_lines) {
            int whole = end;
            while (whole > start && l->lines[whole].cont)
                whole--; /* the entry that would be split goes to the next column */
            if (whole > start && l->lines[whole - 1].heading)
                whole--; /* and so does a heading it would leave at the bottom */
            end = whole > start ? whole : end;
        }
        l->col_heading[n] = repeat ? heading : NULL;
        l->col_start[n++] = start;
        for (int i = start; i < end; i++)
            if (l->lines[i].heading)
                heading = l->lines[i].heading;
        start = end;
    }
    l->col_start[n] = start;
    return n;
}

void keys_name(int code, bool keycode, char *buf, size_t size)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {KEY_LEFT, "Left"},           {KEY_RIGHT, "Right"},         {KEY_UP, "Up"},
        {KEY_DOWN, "Down"},           {KEY_SLEFT, "Shift-Left"},    {KEY_SRIGHT, "Shift-Right"},
        {KEY_SR, "Shift-Up"},         {KEY_SF, "Shift-Down"},       {KEY_HOME, "Home"},
        {KEY_END, "End"},             {KEY_SHOME, "Shift-Home"},    {KEY_SEND, "Shift-End"},
        {KEY_PPAGE, "PgUp"},          {KEY_NPAGE, "PgDn"},          {KEY_IC, "Insert"},
        {KEY_DC, "Delete"},           {KEY_SDC, "Shift-Delete"},    {KEY_BTAB, "Shift-Tab"},
        {KEY_BACKSPACE, "Backspace"}, {KEY_ENTER, "Enter"},
    };
    if (!keycode) {
        if (code == '\t')
            snprintf(buf, size, "Tab");
        else if (code == '\r' || code == '\n')
            snprintf(buf, size, "Enter");
        else if (code == 27)
            snprintf(buf, size, "Esc");
        else if (code == 127 || code == 8) /* DEL, or ^H from some terminals */
            snprintf(buf, size, "Backspace");
        else if (code >= 0 && code < 32)
            snprintf(buf, size, "Ctrl-%c", '@' + code);
        else if (code == ' ')
            snprintf(buf, size, "Space");
        else if (code > ' ' && code < 127)
            snprintf(buf, size, "%c", code);
        else
            snprintf(buf, size, "that key");
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == code) {
            snprintf(buf, size, "%s", names[i].name);
            return;
        }
    if (code >= KEY_F(1) && code <= KEY_F(63))
        snprintf(buf, size, "F%d", code - KEY_F(0));
    else
        snprintf(buf, size, "that key");
}

void keys_help_layout_compute(int cols, int rows, keys_help_layout *l)
{
    memset(l, 0, sizeof *l);
    l->n_cols = cols >= 60 ? 2 : 1;
    /* as wide as the longest text needs, when the screen has room */
    int longest = 0;
    for (int i = 0; i < N_TABLE; i++)
        longest = (int)strlen(table[i].help) > longest ? (int)strlen(table[i].help) : longest;
    int want = l->n_cols * (17 + longest + 2) + 2;
    int most = l->n_cols == 1 ? 48 : want;
    l->width = cols < most ? cols : most;
    int colw = (l->width - 2) / l->n_cols - 1; /* a column less its gap */
    l->key_width = colw * 2 / 5 < 17 ? colw * 2 / 5 : 17;
    l->text_width = colw - 1 - l->key_width;
    compose(l, l->key_width - 1, l->text_width);
    /* the shortest columns that hold everything on one page, else pages of full ones */
    int max_h = rows - 3; /* borders and the footer line */
    int h = (l->n_lines + l->n_cols - 1) / l->n_cols;
    for (; h < max_h; h++)
        if (split_columns(l, h) <= l->n_cols)
            break;
    if (h > max_h)
        h = max_h;
    l->n_columns = split_columns(l, h);
    l->col_height = h;
    l->height = h + 3;
    l->n_pages = l->n_columns > 0 ? (l->n_columns + l->n_cols - 1) / l->n_cols : 0;
}
