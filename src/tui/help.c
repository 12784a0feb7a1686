/* help.c — the help overlay (? or F1): the key table (keys.c) drawn in columns over
 * the panes, a page at a time when it does not fit the screen, and the /help notice.
 *
 * Draws into a temporary window; owns nothing but the page shown (tui.help_page). */
#include <stdio.h>
#include <string.h>

#include "../command.h"
#include "draw.h"
#include "keys.h"

/* Draws the lines of one column at x, width w. */
static void draw_column(tui *t, WINDOW *win, const keys_help_layout *l, int col, int x, int w)
{
    int kw = l->key_width, y = 1;
    if (l->col_heading[col]) {
        char cont[96];
        snprintf(cont, sizeof cont, "%s (cont.)", l->col_heading[col]);
        draw_text(t, win, y++, x, w, cont, A_BOLD | A_UNDERLINE);
    }
    for (int i = l->col_start[col]; i < l->col_start[col + 1]; i++, y++) {
        const keys_help_line *ln = &l->lines[i];
        if (ln->heading) {
            draw_text(t, win, y, x, w, ln->heading, A_BOLD | A_UNDERLINE);
            continue;
        }
        draw_text(t, win, y, x + 1, ln->help ? kw - 1 : w - 1, ln->keys,
                  draw_attr(t, PAIR_USER, A_BOLD) | A_BOLD);
        if (ln->help)
            draw_text(t, win, y, x + 1 + kw, w - 1 - kw, ln->help, A_NORMAL);
    }
}

int help_pages(const tui *t)
{
    keys_help_layout l;
    keys_help_layout_compute(t->cols, t->rows, &l);
    return l.n_pages;
}

void help_draw(tui *t)
{
    static keys_help_layout l; /* large: kept off the stack */
    keys_help_layout_compute(t->cols, t->rows, &l);
    int h = l.height, w = l.width;
    if (h > t->rows)
        h = t->rows;
    if (l.n_pages == 0 || h < 3 || w < 10)
        return;
    if (t->help_page >= l.n_pages)
        t->help_page = l.n_pages - 1;
    WINDOW *win = newwin(h, w, (t->rows - h) / 2, (t->cols - w) / 2);
    if (!win)
        return;
    draw_box(t, win, "Help: keys", true);
    int colw = (w - 2) / l.n_cols;
    for (int c = 0; c < l.n_cols; c++) {
        int col = t->help_page * l.n_cols + c;
        if (col < l.n_columns)
            draw_column(t, win, &l, col, 1 + c * colw, colw - 1);
    }
    char footer[160];
    if (l.n_pages > 1)
        snprintf(footer, sizeof footer, "Page %d/%d: PgDn or Space next, PgUp back; any other key closes.",
                 t->help_page + 1, l.n_pages);
    else
        snprintf(footer, sizeof footer, "Any key closes this help. Mouse (--mouse): wheel, click.");
    draw_text(t, win, h - 2, 2, w - 4, footer, A_DIM);
    wnoutrefresh(win);
    delwin(win);
}

void help_commands_notice(tui *t)
{
    char buf[1200] = "Commands:";
    size_t o = strlen(buf);
    int n;
    const command_info *cmds = command_table(&n);
    for (int i = 0; i < n && o < sizeof buf; i++) {
        char usage[64], what[256];
        command_usage(&cmds[i], usage, sizeof usage);
        command_describe(&cmds[i], what, sizeof what);
        o += (size_t)snprintf(buf + o, sizeof buf - o, " %s (%s)%s", usage, what, i + 1 < n ? "," : ".");
    }
    if (o < sizeof buf)
        snprintf(buf + o, sizeof buf - o, " Keys: F1, or ? on an empty line or in a pane.");
    conv_add(t, ENTRY_NOTICE, buf);
}
