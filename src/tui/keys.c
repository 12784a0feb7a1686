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
#define KC(k) (k), true, 0  /* a curses key code */
#define CH(c) (c), false, 0 /* a character */
enum { ESC = 27, DEL = 127 };

static const char HELP_SEL[] = "move the selection";
static const char HELP_SEL10[] = "move by 10";
static const char HELP_SEL_ENDS[] = "first / follow newest";

static const key_binding table[] = {
    {KEYS_ANYWHERE, CH('\t'), ACT_FOCUS_NEXT, "Tab", "next / previous pane"},
    {KEYS_ANYWHERE, KC(KEY_BTAB), ACT_FOCUS_PREV, "Shift-Tab", "next / previous pane"},
    {KEYS_ANYWHERE, CH(ESC), ACT_STOP, "Esc", "stop the reply"},
    {KEYS_ANYWHERE, CH(CTRL('c')), ACT_STOP, "Ctrl-C", "stop the reply"},
    {KEYS_ANYWHERE, KC(KEY_F(1)), ACT_HELP, "F1", "this help"},
    {KEYS_ANYWHERE, KC(KEY_PPAGE), ACT_PAGE_UP, "PgUp", "scroll conversation"},
    {KEYS_ANYWHERE, KC(KEY_NPAGE), ACT_PAGE_DOWN, "PgDn", "scroll conversation"},
    {KEYS_ANYWHERE, CH(CTRL('l')), ACT_REDRAW, "Ctrl-L", "redraw the screen"},

    {KEYS_INPUT, CH('\r'), ACT_READLINE, "Enter", "send message, /command"},
    {KEYS_INPUT, KC(KEY_ENTER), ACT_READLINE, "Enter", "send message, /command"},
    {KEYS_INPUT, KC(KEY_UP), ACT_READLINE, "Up", "history (all runs)"},
    {KEYS_INPUT, KC(KEY_DOWN), ACT_READLINE, "Down", "history (all runs)"},
    {KEYS_INPUT, CH(CTRL('r')), ACT_READLINE, "Ctrl-R", "search the history"},
    {KEYS_INPUT, KC(KEY_LEFT), ACT_READLINE, "Left", "move in the line"},
    {KEYS_INPUT, KC(KEY_RIGHT), ACT_READLINE, "Right", "move in the line"},
    {KEYS_INPUT, KC(KEY_HOME), ACT_READLINE, "Home", "start / end of line"},
    {KEYS_INPUT, KC(KEY_END), ACT_READLINE, "End", "start / end of line"},
    {KEYS_INPUT, CH(CTRL('a')), ACT_READLINE, "Ctrl-A", "readline editing"},
    {KEYS_INPUT, CH(CTRL('e')), ACT_READLINE, "Ctrl-E", "readline editing"},
    {KEYS_INPUT, CH(CTRL('k')), ACT_READLINE, "Ctrl-K", "readline editing"},
    {KEYS_INPUT, CH(CTRL('u')), ACT_READLINE, "Ctrl-U", "readline editing"},
    {KEYS_INPUT, CH(CTRL('w')), ACT_READLINE, "Ctrl-W", "readline editing"},
    /* on a non-empty line these two are typed (tui.c) */
    {KEYS_INPUT, CH('?'), ACT_HELP, "?", "help (empty line)"},
    {KEYS_INPUT, CH(CTRL('d')), ACT_QUIT, "Ctrl-D", "quit (empty line)"},
    /* steering from the input line: on an empty line while a reply runs (tui.c) */
    {KEYS_INPUT, CH('p'), ACT_PAUSE, "p", "steer: empty line, replying"},
    {KEYS_INPUT, CH('n'), ACT_STEP, "n", "steer: empty line, replying"},
    {KEYS_INPUT, '1', false, '9', ACT_CHOOSE, "1-9", "steer: empty line, replying"},
    {KEYS_INPUT, CH('0'), ACT_CHOOSE, "0", "steer: empty line, replying"},

    {KEYS_PANES, CH('q'), ACT_QUIT, "q", "quit (y/n if replying)"},
    {KEYS_PANES, CH('?'), ACT_HELP, "?", "this help"},
    {KEYS_PANES, CH('p'), ACT_PAUSE, "p", "pause / resume replies"},
    {KEYS_PANES, CH('n'), ACT_STEP, "n", "one token while paused"},
    {KEYS_PANES, KC(KEY_BACKSPACE), ACT_TAKE_BACK, "Backspace", "take a token back"},
    {KEYS_PANES, CH(DEL), ACT_TAKE_BACK, "Backspace", "take a token back"},
    {KEYS_PANES, CH(CTRL('h')), ACT_TAKE_BACK, "Backspace", "take a token back"},
    {KEYS_PANES, CH('r'), ACT_REWIND, "r", "rewind to selection"},
    {KEYS_PANES, '1', false, '9', ACT_CHOOSE, "1-9", "choose candidate 1-10"},
    {KEYS_PANES, CH('0'), ACT_CHOOSE, "0", "choose candidate 1-10"},
    {KEYS_PANES, CH('<'), ACT_BRANCH_PREV, "<", "previous / next branch"},
    {KEYS_PANES, CH('>'), ACT_BRANCH_NEXT, ">", "previous / next branch"},
    {KEYS_PANES, CH('B'), ACT_BRANCH_LIST, "B", "branches at selection"},
    {KEYS_PANES, CH('s'), ACT_SLOW_MOTION, "s", "slow motion: off/100/300/1000 ms"},
    {KEYS_PANES, CH('C'), ACT_SHADE_TOKENS, "C", "colour reply: prob/entropy/off"},

    {KEYS_CONV, KC(KEY_UP), ACT_SCROLL_UP, "Up", "scroll a line"},
    {KEYS_CONV, KC(KEY_DOWN), ACT_SCROLL_DOWN, "Down", "scroll a line"},
    {KEYS_CONV, KC(KEY_HOME), ACT_SCROLL_TOP, "Home", "top / follow the end"},
    {KEYS_CONV, KC(KEY_END), ACT_SCROLL_END, "End", "top / follow the end"},

    {KEYS_TOKENS, KC(KEY_LEFT), ACT_SEL_PREV, "Left", HELP_SEL},
    {KEYS_TOKENS, KC(KEY_RIGHT), ACT_SEL_NEXT, "Right", HELP_SEL},
    {KEYS_TOKENS, KC(KEY_SLEFT), ACT_SEL_BACK10, "Shift-Left", HELP_SEL10},
    {KEYS_TOKENS, KC(KEY_SRIGHT), ACT_SEL_AHEAD10, "Shift-Right", HELP_SEL10},
    {KEYS_TOKENS, KC(KEY_HOME), ACT_SEL_FIRST, "Home", HELP_SEL_ENDS},
    {KEYS_TOKENS, KC(KEY_END), ACT_SEL_NEWEST, "End", HELP_SEL_ENDS},
    {KEYS_TOKENS, CH('+'), ACT_TOPK_MORE, "+", "more / fewer top-k"},
    {KEYS_TOKENS, CH('='), ACT_TOPK_MORE, "=", "more / fewer top-k"},
    {KEYS_TOKENS, CH('-'), ACT_TOPK_FEWER, "-", "more / fewer top-k"},

    {KEYS_ATTN, CH('['), ACT_LAYER_PREV, "[", "previous / next layer"},
    {KEYS_ATTN, CH(']'), ACT_LAYER_NEXT, "]", "previous / next layer"},
    {KEYS_ATTN, CH('{'), ACT_HEAD_PREV, "{", "previous / next head"},
    {KEYS_ATTN, CH('}'), ACT_HEAD_NEXT, "}", "previous / next head"},
    {KEYS_ATTN, CH(','), ACT_HEAD_PREV, ",", "previous / next head"},
    {KEYS_ATTN, CH('.'), ACT_HEAD_NEXT, ".", "previous / next head"},
    {KEYS_ATTN, CH('m'), ACT_HEAD_MEAN, "m", "mean of the heads"},
    {KEYS_ATTN, CH('l'), ACT_LOG_SCALE, "l", "log scale"},
    {KEYS_ATTN, CH('b'), ACT_MASK_BOS, "b", "mask BOS sink column"},
    {KEYS_ATTN, CH('c'), ACT_CAPTURE, "c", "attention capture on/off"},
    {KEYS_ATTN, CH('v'), ACT_VIEW_NEXT, "v", "view: heat/lens/heads/attrib"},
    {KEYS_ATTN, CH('V'), ACT_VIEW_PREV, "V", "view: heat/lens/heads/attrib"},
    {KEYS_ATTN, CH('e'), ACT_HEAD_METRIC, "e", "heads: entropy / BOS weight"},
    {KEYS_ATTN, CH('\r'), ACT_OPEN_HEAD, "Enter", "heads grid: open in heatmap"},
    {KEYS_ATTN, KC(KEY_ENTER), ACT_OPEN_HEAD, "Enter", "heads grid: open in heatmap"},
    {KEYS_ATTN, CH('x'), ACT_KNOCK_OUT, "x", "heads, attrib: knock head out/in"},
    {KEYS_ATTN, CH('t'), ACT_TARGET_NEXT, "t", "attribution: next / prev target"},
    {KEYS_ATTN, CH('T'), ACT_TARGET_PREV, "T", "attribution: next / prev target"},
    {KEYS_ATTN, KC(KEY_LEFT), ACT_SEL_PREV, "Left", HELP_SEL},
    {KEYS_ATTN, KC(KEY_RIGHT), ACT_SEL_NEXT, "Right", HELP_SEL},
    {KEYS_ATTN, KC(KEY_SLEFT), ACT_SEL_BACK10, "Shift-Left", HELP_SEL10},
    {KEYS_ATTN, KC(KEY_SRIGHT), ACT_SEL_AHEAD10, "Shift-Right", HELP_SEL10},
    {KEYS_ATTN, KC(KEY_HOME), ACT_SEL_FIRST, "Home", HELP_SEL_ENDS},
    {KEYS_ATTN, KC(KEY_END), ACT_SEL_NEWEST, "End", HELP_SEL_ENDS},
    {KEYS_ATTN, KC(KEY_UP), ACT_CELL_UP, "Up", "layer (heads view: head)"},
    {KEYS_ATTN, KC(KEY_DOWN), ACT_CELL_DOWN, "Down", "layer (heads view: head)"},

    {KEYS_HELP, KC(KEY_NPAGE), ACT_HELP_NEXT_PAGE, "PgDn", "next page"},
    {KEYS_HELP, CH(' '), ACT_HELP_NEXT_PAGE, "Space", "next page"},
    {KEYS_HELP, KC(KEY_PPAGE), ACT_HELP_PREV_PAGE, "PgUp", "previous page"},
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

/* Appends a line; the layout has room for KEYS_HELP_LINES_MAX. */
static void add_line(keys_help_layout *l, const char *heading, const char *keys, const char *help, size_t n)
{
    if (l->n_lines >= KEYS_HELP_LINES_MAX)
        return;
    keys_help_line *ln = &l->lines[l->n_lines++];
    ln->heading = heading;
    snprintf(ln->keys, sizeof ln->keys, "%s", keys ? keys : "");
    if (n >= sizeof ln->help)
        n = sizeof ln->help - 1;
    memcpy(ln->help, help ? help : "", help ? n : 0);
    ln->help[help ? n : 0] = '\0';
}

/* Adds help after keys, wrapped at blanks to lines of at most width (the table's texts
 * are ASCII); a word longer than width is cut. */
static void add_wrapped(keys_help_layout *l, const char *keys, const char *help, int width)
{
    size_t len = strlen(help), w = width > 1 ? (size_t)width : 1;
    do {
        size_t n = len;
        if (n > w) {
            n = w;
            while (n > 0 && help[n] != ' ')
                n--;
            if (n == 0)
                n = w;
        }
        add_line(l, NULL, keys, help, n);
        keys = "";
        help += n;
        len -= n;
        while (*help == ' ') {
            help++;
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
            add_line(l, contexts[ctx].title, NULL, NULL, 0);
        }
        char keys[sizeof l->lines[0].keys] = "";
        int j = i;
        for (; j < N_TABLE && same_line(&table[i], &table[j]); j++) {
            if (named_before(i, j, table[j].name))
                continue;
            size_t n = strlen(keys);
            snprintf(keys + n, sizeof keys - n, "%s%s", n ? " " : "", table[j].name);
        }
        if ((int)strlen(keys) > key_width) {
            add_line(l, NULL, keys, NULL, 0);
            add_wrapped(l, "", table[i].help, text_width);
        } else {
            add_wrapped(l, keys, table[i].help, text_width);
        }
        i = j;
    }
}

/* Splits the lines into columns of at most height lines. A column that starts inside a
 * context repeats its heading on its first line; a heading never ends a column and a
 * text line never starts one away from its keys. Returns the number of columns (at
 * most KEYS_HELP_COLS_MAX; 0 when height is too small to hold anything). */
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
            if (l->lines[end - 1].heading)
                end--; /* move a column's last heading to the next column */
            else if (!l->lines[end].heading && !l->lines[end].keys[0])
                end--; /* keep a text line with its keys */
            if (end <= start)
                end = start + room;
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
