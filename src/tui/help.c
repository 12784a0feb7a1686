/* help.c — the key bindings: the help overlay (? or F1) and the /help notice.
 *
 * Owns the one table of bindings, so the overlay and the man page's KEYS section
 * can be checked against each other. The table is terse so that it fits 80x24 in two
 * columns (21 rows each); the man page has the details. Draws into a temporary window
 * over the panes. */
#include <string.h>

#include "draw.h"

typedef struct {
    const char *keys; /* NULL keys: a section heading in desc */
    const char *desc;
} binding;

static const binding bindings[] = {
    {NULL, "Anywhere"},
    {"Tab, S-Tab", "next / previous pane"},
    {"Esc, Ctrl-C", "stop the reply"},
    {"F1, ?", "this help (? in panes)"},
    {"PgUp, PgDn", "scroll conversation"},
    {"Ctrl-D", "quit (empty line)"},
    {NULL, "Input line (readline)"},
    {"Enter", "send message, /command"},
    {"Up, Down", "history (all runs)"},
    {"Ctrl-R", "search the history"},
    {"Ctrl-A/E/K/U..", "readline editing"},
    {"?", "help (empty line)"},
    {"/reset", "forget the dialog"},
    {"/system TEXT", "set system prompt"},
    {"/save FILE", "write dialog to FILE"},
    {"/force TEXT", "put TEXT in the reply"},
    {"/help, /quit", "commands; quit"},
    {NULL, "Any pane"},
    {"q", "quit (y/n if replying)"},
    {"p, n", "pause/resume; 1 token"},
    {"Backspace", "take a token back"},
    {"r", "rewind to selection"},
    {"1-9, 0", "choose candidate 1-10"},
    {NULL, "Conversation"},
    {"Up, Down", "scroll a line"},
    {"Home, End", "top / follow the end"},
    {NULL, "Tokens"},
    {"Left, Right", "move (Shift: by 10)"},
    {"Home, End", "first / follow newest"},
    {"+, -", "more / fewer top-k"},
    {NULL, "Attention"},
    {"[ ] / { } , .", "layer / head"},
    {"m, l", "head mean; log scale"},
    {"b", "mask BOS sink column"},
    {"c", "capture on/off (speed)"},
    {"Left, Right..", "move the selection"},
    {NULL, "Mouse (with --mouse)"},
    {"wheel, click", "scroll; focus a pane"},
};
enum { N_BINDINGS = sizeof bindings / sizeof bindings[0] };

/* Draws bindings [from, to) as a column at x, width w, from row 1. */
static void draw_column(tui *t, WINDOW *win, int from, int to, int x, int w, int max_y)
{
    int kw = w * 2 / 5 < 17 ? w * 2 / 5 : 17;
    for (int i = from, y = 1; i < to && y < max_y; i++, y++) {
        const binding *b = &bindings[i];
        if (!b->keys) {
            draw_text(t, win, y, x, w, b->desc, A_BOLD | A_UNDERLINE);
            continue;
        }
        draw_text(t, win, y, x + 1, kw - 1, b->keys, draw_attr(t, PAIR_USER, A_BOLD) | A_BOLD);
        draw_text(t, win, y, x + 1 + kw, w - 1 - kw, b->desc, A_NORMAL);
    }
}

void help_draw(tui *t)
{
    int rows = t->rows, cols = t->cols;
    /* one column when it fits, else two, split at a section heading near the middle */
    int ncol = N_BINDINGS + 3 <= rows || cols < 60 ? 1 : 2;
    int split = N_BINDINGS;
    if (ncol == 2) { /* the section heading that balances the two columns best */
        for (int i = 1; i < N_BINDINGS; i++) {
            int worst = i > N_BINDINGS - i ? i : N_BINDINGS - i;
            int best = split > N_BINDINGS - split ? split : N_BINDINGS - split;
            if (!bindings[i].keys && worst < best)
                split = i;
        }
    }
    int body = ncol == 1 ? N_BINDINGS : (split > N_BINDINGS - split ? split : N_BINDINGS - split);
    int h = body + 3, w = ncol == 1 ? 48 : 90;
    if (h > rows)
        h = rows;
    if (w > cols)
        w = cols;
    if (h < 3 || w < 10)
        return;
    WINDOW *win = newwin(h, w, (rows - h) / 2, (cols - w) / 2);
    if (!win)
        return;
    draw_box(t, win, "Help: keys", true);
    int colw = (w - 2) / ncol;
    draw_column(t, win, 0, split, 1, colw - 1, h - 2);
    if (ncol == 2)
        draw_column(t, win, split, N_BINDINGS, 1 + colw, colw - 1, h - 2);
    draw_text(t, win, h - 2, 2, w - 4, "Any key closes this help.", A_DIM);
    wnoutrefresh(win);
    delwin(win);
}

void help_commands_notice(tui *t)
{
    conv_add(t, ENTRY_NOTICE,
             "Commands: /reset (forget the dialog), /system TEXT (set the system prompt), "
             "/save FILE (write the dialog), /force TEXT (put TEXT's tokens into the reply), /quit, "
             "/help. Keys: F1 or ? (in a pane).");
}
