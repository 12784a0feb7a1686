/* help.c — the key bindings: the help overlay (? or F1) and the /help notice.
 *
 * Owns the one table of bindings, so the overlay and the man page's KEYS section
 * can be checked against each other. Draws into a temporary window over the panes. */
#include <string.h>

#include "draw.h"

typedef struct {
    const char *keys; /* NULL keys: a section heading in desc */
    const char *desc;
} binding;

static const binding bindings[] = {
    {NULL, "Anywhere"},
    {"Tab, Shift-Tab", "move focus: input, Conversation, Tokens, Attention"},
    {"Esc, Ctrl-C", "stop the reply (everything is kept)"},
    {"F1", "this help (any key closes it)"},
    {"PgUp, PgDn", "scroll the conversation"},
    {"Ctrl-D", "quit, on an empty input line (asks while a reply runs)"},
    {NULL, "Input line (readline)"},
    {"Enter", "send the message or command"},
    {"Up, Down", "history (kept across runs)"},
    {"Left, Right, Home, End", "move; Ctrl-A, Ctrl-E, Ctrl-K, Ctrl-U... as in readline"},
    {"/reset", "forget the dialog"},
    {"/system TEXT", "set the system prompt"},
    {"/save FILE", "write the dialog to FILE"},
    {"/help, /quit", "list the commands, quit"},
    {NULL, "Any pane"},
    {"q", "quit (asks while a reply runs)"},
    {"?", "this help"},
    {NULL, "Conversation"},
    {"Up, Down, Home, End", "scroll by a line, to the top, follow the end"},
    {NULL, "Tokens"},
    {"Left, Right", "previous / next position (Shift: by 10)"},
    {"Home, End", "first position / follow the newest"},
    {"+, -", "show more / fewer candidates"},
    {NULL, "Attention"},
    {"[, ]", "previous / next layer"},
    {"{, }  or  ,, .", "previous / next head"},
    {"m", "mean over all heads"},
    {"l", "linear / log scale"},
    {"b", "mask the first (BOS sink) column"},
    {"Left, Right, Home, End", "move the selected position"},
    {NULL, "Mouse (with --mouse)"},
    {"wheel, click", "scroll the pane under the pointer, focus a pane"},
};
enum { N_BINDINGS = sizeof bindings / sizeof bindings[0] };

void help_draw(tui *t)
{
    int rows = t->rows, cols = t->cols;
    int h = N_BINDINGS + 4, w = 76;
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
    int kw = 24 < w / 2 ? 24 : w / 2;
    int y = 1;
    for (int i = 0; i < N_BINDINGS && y < h - 2; i++, y++) {
        const binding *b = &bindings[i];
        if (!b->keys) {
            draw_text(t, win, y, 2, w - 4, b->desc, A_BOLD | A_UNDERLINE);
            continue;
        }
        draw_text(t, win, y, 3, kw - 1, b->keys, draw_attr(t, PAIR_USER, A_BOLD));
        draw_text(t, win, y, 3 + kw, w - 4 - kw, b->desc, A_NORMAL);
    }
    draw_text(t, win, h - 2, 2, w - 4, "Press any key to close.", A_DIM);
    wnoutrefresh(win);
    delwin(win);
}

void help_commands_notice(tui *t)
{
    conv_add(t, ENTRY_NOTICE,
             "Commands: /reset (forget the dialog), /system TEXT (set the system prompt), "
             "/save FILE (write the dialog), /quit, /help. Keys: F1 or ? (in a pane).");
}
