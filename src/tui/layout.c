/* layout.c — where the panes go for a given terminal size (see layout.h).
 *
 * Owns nothing; pure arithmetic over the screen size, no curses. */
#include "layout.h"

#include <string.h>

static tui_rect rect(int y, int x, int h, int w)
{
    tui_rect r = {0, 0, 0, 0, false};
    if (h >= LAYOUT_PANE_MIN_H && w >= LAYOUT_PANE_MIN_W) {
        r.y = y;
        r.x = x;
        r.h = h;
        r.w = w;
        r.visible = true;
    }
    return r;
}

static tui_rect line(int y, int w)
{
    tui_rect r = {y, 0, 1, w, w >= 1 && y >= 0};
    if (!r.visible)
        r.h = r.w = r.y = 0;
    return r;
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void layout_compute(int cols, int rows, tui_layout *l)
{
    memset(l, 0, sizeof *l);
    l->kind = LAYOUT_BARE;
    if (cols < 1 || rows < 1)
        return;
    l->input = line(rows - 1, cols);
    if (rows >= 2)
        l->status = line(rows - 2, cols);
    int body = rows - 2; /* rows above the status line */
    if (body < LAYOUT_PANE_MIN_H || cols < LAYOUT_PANE_MIN_W)
        return;

    if (cols >= 100 && body >= 12) {
        l->kind = LAYOUT_WIDE;
        int cw = cols * 11 / 20;
        int th = clamp(21, body / 3, body - body / 3);
        l->conv = rect(0, 0, body, cw);
        l->tokens = rect(0, cw, th, cols - cw);
        l->attn = rect(th, cw, body - th, cols - cw);
    } else if (cols >= 2 * LAYOUT_PANE_MIN_W + 28 && body >= 12) {
        l->kind = LAYOUT_STACKED;
        int ch = clamp(body * 2 / 5, LAYOUT_PANE_MIN_H, body - 8);
        int tw = cols / 2;
        l->conv = rect(0, 0, ch, cols);
        l->tokens = rect(ch, 0, body - ch, tw);
        l->attn = rect(ch, tw, body - ch, cols - tw);
    } else if (body >= 10) {
        l->kind = LAYOUT_NARROW;
        int ch = body / 2;
        l->conv = rect(0, 0, ch, cols);
        l->tokens = rect(ch, 0, body - ch, cols);
    } else {
        l->kind = LAYOUT_SINGLE;
        l->conv = rect(0, 0, body, cols);
    }
}
