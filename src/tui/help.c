/* help.c — the help overlay (? or F1): the key table (keys.c) drawn in columns over
 * the panes, a page at a time when it does not fit the screen, and the /help notice.
 *
 * Draws into a temporary window; owns nothing. */
#include "help.h"

#include <stdio.h>
#include <string.h>

#include "command.h"
#include "format.h"
#include "keys.h"

/* Draws the lines of one column at x, width w. */
static void draw_column(const tui_screen *scr, WINDOW *win, const keys_help_layout *l, int col, int x, int w)
{
    int kw = l->key_width, y = 1;
    if (l->col_heading[col]) {
        char cont[96];
        snprintf(cont, sizeof cont, "%s (cont.)", l->col_heading[col]);
        draw_text(scr, win, y++, x, w, cont, A_BOLD | A_UNDERLINE);
    }
    for (int i = l->col_start[col]; i < l->col_start[col + 1]; i++, y++) {
        const keys_help_line *ln = &l->lines[i];
        if (ln->heading) {
            draw_text(scr, win, y, x, w, ln->heading, A_BOLD | A_UNDERLINE);
            continue;
        }
        draw_text(scr, win, y, x + 1, ln->help[0] ? kw - 1 : w - 1, ln->keys,
                  draw_attr(scr, PAIR_USER, A_BOLD) | A_BOLD);
        if (ln->help[0])
            draw_text(scr, win, y, x + 1 + kw, w - 1 - kw, ln->help, A_NORMAL);
    }
}

static keys_help_layout layout; /* large: kept off the stack */

int help_pages(const tui_screen *scr)
{
    keys_help_layout_compute(scr->cols, scr->rows, &layout);
    return layout.n_pages;
}

void help_draw(const tui_screen *scr, int *page)
{
    const keys_help_layout *l = &layout;
    keys_help_layout_compute(scr->cols, scr->rows, &layout);
    int h = l->height, w = l->width;
    if (h > scr->rows)
        h = scr->rows;
    if (l->n_pages == 0 || h < 3 || w < 10)
        return;
    if (*page >= l->n_pages)
        *page = l->n_pages - 1;
    if (*page < 0)
        *page = 0;
    WINDOW *win = newwin(h, w, (scr->rows - h) / 2, (scr->cols - w) / 2);
    if (!win)
        return;
    draw_box(scr, win, "Help: keys", true);
    int colw = (w - 2) / l->n_cols;
    for (int c = 0; c < l->n_cols; c++) {
        int col = *page * l->n_cols + c;
        if (col < l->n_columns)
            draw_column(scr, win, l, col, 1 + c * colw, colw - 1);
    }
    char footer[3][160];
    int p = *page + 1, n = l->n_pages;
    if (n > 1) {
        snprintf(footer[0], sizeof footer[0], "Page %d/%d: PgDn or Space next, PgUp back; any other key closes.", p, n);
        snprintf(footer[1], sizeof footer[1], "Page %d/%d: Space next, PgUp back, other keys close", p, n);
        snprintf(footer[2], sizeof footer[2], "%d/%d: Space next, PgUp back", p, n);
    } else {
        snprintf(footer[0], sizeof footer[0], "Any key closes this help. Mouse (--mouse): wheel, click.");
        snprintf(footer[1], sizeof footer[1], "Any key closes this help.");
        snprintf(footer[2], sizeof footer[2], "Any key closes.");
    }
    const char *texts[] = {footer[0], footer[1], footer[2]};
    draw_text(scr, win, h - 2, 2, w - 4, texts[tuifmt_pick(texts, 3, w - 4)], A_DIM);
    wnoutrefresh(win);
    delwin(win);
}

void help_commands_text(char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "Commands:");
    int n;
    const command_info *cmds = command_table(&n);
    for (int i = 0; i < n && o < size; i++) {
        char usage[64], what[256];
        command_usage(&cmds[i], usage, sizeof usage);
        command_describe(&cmds[i], what, sizeof what);
        o += (size_t)snprintf(buf + o, size - o, " %s (%s)%s", usage, what, i + 1 < n ? "," : ".");
    }
    if (o < size)
        snprintf(buf + o, size - o, " Keys: F1, or ? on an empty line or in a pane.");
}
