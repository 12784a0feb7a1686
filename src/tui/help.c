/* help.c — the help overlay (? or F1): the key table (keys.c) drawn in columns over
 * the panes, a page at a time when it does not fit the screen, and the /help notice.
 *
 * Owns the overlay's state (the page, the layout of its text); draws into the window
 * the frame gives it (help_size, centred). */
#include "help.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The overlay's state: the page shown, and the text laid out for the screen. */
typedef struct {
    const tui_screen *scr;
    int page;
    int cols, rows;          /* the screen size the layout is for (0: none yet) */
    keys_help_layout layout; /* large: kept off the stack */
} help_view;

/* The key table laid out for a screen of scr's size (again only when the size changed). */
static const keys_help_layout *layout_for(help_view *hv, const tui_screen *scr)
{
    if (hv->cols != scr->cols || hv->rows != scr->rows) {
        keys_help_layout_compute(scr->cols, scr->rows, &hv->layout);
        hv->cols = scr->cols;
        hv->rows = scr->rows;
    }
    return &hv->layout;
}

static void *help_new(const view_env *env)
{
    help_view *hv = calloc(1, sizeof *hv);
    if (!hv)
        tui_die("out of memory");
    hv->scr = env->scr;
    return hv;
}

static void help_free(void *state)
{
    free(state);
}

static void help_open(void *state)
{
    help_view *hv = state;
    hv->page = 0;
}

/* The overlay's size on scr: the layout's, no taller than the screen; 0 rows when it
 * cannot be drawn. */
static void help_size(void *state, const tui_screen *scr, int *rows, int *cols)
{
    const keys_help_layout *l = layout_for(state, scr);
    *rows = l->height < scr->rows ? l->height : scr->rows;
    *cols = l->width;
    if (l->n_pages == 0 || *rows < 3 || *cols < 10)
        *rows = *cols = 0;
}

/* Draws the page shown (brought into range) into w, a window of help_size. */
static void help_draw(void *state, WINDOW *w, const tui_screen *scr, bool focused)
{
    help_view *hv = state;
    const keys_help_layout *l = layout_for(hv, scr);
    int h = getmaxy(w), width = getmaxx(w);
    if (hv->page >= l->n_pages)
        hv->page = l->n_pages - 1;
    if (hv->page < 0)
        hv->page = 0;
    draw_box(scr, w, "Help: keys", true);
    int colw = (width - 2) / l->n_cols;
    for (int c = 0; c < l->n_cols; c++) {
        int col = hv->page * l->n_cols + c;
        if (col < l->n_columns)
            draw_column(scr, w, l, col, 1 + c * colw, colw - 1);
    }
    char footer[3][160];
    int p = hv->page + 1, n = l->n_pages;
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
    draw_text(scr, w, h - 2, 2, width - 4, texts[tuifmt_pick(texts, 3, width - 4)], A_DIM);
}

/* The paging keys page while there is a page that way; false otherwise, which closes
 * the overlay (it is modal: any other key closes it too). */
static bool help_act(void *state, key_action a)
{
    help_view *hv = state;
    if (a == ACT_HELP_NEXT_PAGE && hv->page + 1 < layout_for(hv, hv->scr)->n_pages) {
        hv->page++;
        return true;
    }
    if (a == ACT_HELP_PREV_PAGE && hv->page > 0) {
        hv->page--;
        return true;
    }
    return false;
}

const view_ops help_view_ops = {
    .name = "help",
    .keys = KEYS_HELP,
    .place = VIEW_CENTRED,
    .modal = true,
    .min_cols = 10, /* help_size: a page needs a line of keys between */
    .min_rows = 6,  /* the borders and the footer */
    .new = help_new,
    .free = help_free,
    .open = help_open,
    .size = help_size,
    .draw = help_draw,
    .act = help_act,
};

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
