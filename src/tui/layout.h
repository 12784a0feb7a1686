/* layout.h — where the panes go for a given terminal size.
 *
 * Pure arithmetic (no curses; tested in tests/test_tui_format.c). The screen is
 * split into the three panes (Conversation, Tokens, Attention, each with a border
 * and a title), a status line and an input line at the bottom:
 *   wide    (>= 100 columns): Conversation left, Tokens over Attention on the right;
 *   stacked (>= 60 columns, e.g. 80x24): Conversation on top, Tokens | Attention below;
 *   narrow: Conversation over Tokens; then Conversation alone; then only the status
 *   and input lines (and below two rows only the input line).
 * Rectangles never leave the screen and never have negative sizes. */
#ifndef LLMCHAT_TUI_LAYOUT_H
#define LLMCHAT_TUI_LAYOUT_H

#include <stdbool.h>

enum {
    LAYOUT_PANE_MIN_W = 16, /* a bordered pane shows its title ("Conversation" + 4) */
    LAYOUT_PANE_MIN_H = 3,  /* border + one line of content */
};

typedef struct {
    int y, x, h, w;  /* top-left corner and size, in screen cells */
    bool visible;    /* false: the pane is folded away (h and w are then 0) */
} tui_rect;

typedef enum { LAYOUT_WIDE, LAYOUT_STACKED, LAYOUT_NARROW, LAYOUT_SINGLE, LAYOUT_BARE } layout_kind;

typedef struct {
    layout_kind kind;
    tui_rect conv, tokens, attn; /* bordered panes */
    tui_rect status, input;      /* one line each */
} tui_layout;

void layout_compute(int cols, int rows, tui_layout *l);

#endif
