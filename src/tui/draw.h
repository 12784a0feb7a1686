/* draw.h — what every pane is drawn with: the screen's shared state (its size, UTF-8,
 * colours), colour pairs, borders, clipped text, heatmap cells, and the one way out on
 * a fatal error.
 *
 * The panes, overlays and views (view_ops.h) draw into the curses windows tui.c gives
 * them with these; they share nothing else but the selected position (selection.h).
 * Only src/tui/ includes curses. */
#ifndef LLMCHAT_TUI_DRAW_H
#define LLMCHAT_TUI_DRAW_H

#include <curses.h>
#include <stdbool.h>

#include "options.h"

typedef enum { COLORS_NONE = 0, COLORS_8, COLORS_256 } tui_colors;

/* The screen, as every pane draws on it. */
typedef struct {
    bool utf8;         /* the locale is UTF-8: block and shade characters available */
    tui_colors colors;
    int n_shades;      /* heatmap buckets (draw_shade) */
    int rows, cols;
} tui_screen;

enum { /* colour pairs */
    PAIR_USER = 1,
    PAIR_ASSISTANT,
    PAIR_NOTICE,
    PAIR_FOCUS,
    PAIR_STATUS,
    PAIR_BAR,
    PAIR_CHOSEN,
    PAIR_DIM,
    PAIR_POS,  /* a signed value's colours (draw_signed_attr) */
    PAIR_NEG,
    PAIR_RAMP, /* PAIR_RAMP + bucket, up to SHADES_MAX buckets */
};
enum { SHADES_MAX = 10 };
/* The Conversation's token levels (token_shade.h): PAIR_LEVEL + level, levels 1..4. */
enum { PAIR_LEVEL = PAIR_RAMP + SHADES_MAX, LEVELS_MAX = 5 };

/* Right after newterm: remembers that curses is active (for tui_restore_terminal)
 * and sets up the theme's colours: 256-colour ramp, 8-colour fallback, or none
 * (THEME_MONO, which --no-color and $NO_COLOR give, or a terminal without colours). */
void draw_start(tui_screen *scr, app_theme theme);
/* The attribute for a colour pair, or fallback when colours are off. */
attr_t draw_attr(const tui_screen *scr, int pair, attr_t fallback);
/* Clears w and draws its border with title; the focused pane's border stands out. */
void draw_box(const tui_screen *scr, WINDOW *w, const char *title, bool focused);
/* Writes s at (y, x), cut to width columns (with an ellipsis when cut). */
void draw_text(const tui_screen *scr, WINDOW *w, int y, int x, int width, const char *s, attr_t a);
/* Where a grid's rows or columns go on past what is shown: a scroll marker at (y, x)
 * pointing up, down, left or right ('^', 'v', '<', '>': ▲ ▼ ◀ ▶ in UTF-8). */
void draw_scroll_mark(const tui_screen *scr, WINDOW *w, int y, int x, char dir);
/* One heatmap cell of bucket b (0..scr->n_shades-1). */
void draw_shade(const tui_screen *scr, WINDOW *w, int y, int x, int b);
/* The attribute that shades text in bucket b: the heatmap's colour as its background,
 * or without colours reverse / bold / dim. */
attr_t draw_shade_attr(const tui_screen *scr, int b);
/* The attribute of a signed value v against ref (the largest size shown): its size as
 * dim, normal, bold, reverse; its sign as a colour (or, without colours, a negative one
 * underlined). */
attr_t draw_signed_attr(const tui_screen *scr, float v, float ref);
/* Restores the terminal, prints the message and exits with status 1. */
void tui_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Bracketed paste (xterm's mode 2004): the terminal frames what is pasted in
 * ESC [200~ ... ESC [201~ (key_reader.h). tui.c turns it on with curses;
 * tui_restore_terminal and the crash path (signals_terminal_reset) turn it off. */
#define BRACKETED_PASTE_ON "\033[?2004h"
#define BRACKETED_PASTE_OFF "\033[?2004l"
/* endwin() and bracketed paste off if curses is active; safe to call twice. */
void tui_restore_terminal(void);

#endif
