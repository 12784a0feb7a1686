/* draw.c — colours, borders, clipped text and heatmap cells for every pane, and
 * the one way out on a fatal error (restore the terminal first).
 *
 * Owns the colour pairs, the themes (dark, light; mono has none) and whether curses
 * is active. Knows nothing about what a pane shows. */
#include "draw.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

static bool curses_active;

/* The colours of a theme (--theme, the config file's theme key). */
typedef struct {
    short user, assistant, notice, focus, status_fg, status_bg, bar, chosen_fg, chosen_bg, dim;
    short pos, neg;                 /* signed values (the attribution view) */
    short plain_bg;                 /* background when the terminal's own cannot be kept */
    short ramp256[SHADES_MAX];      /* heatmap, weakest to strongest; -1 = background */
    short ramp8[5];
    short levels[LEVELS_MAX];       /* token levels' text, sure to surprised; [0] unused */
} palette;

/* dark: for light text on a dark background; the heatmap goes from dark blue
 * through green to yellow; signed values are cyan (+) and red (-) */
static const palette dark = {
    COLOR_CYAN, COLOR_GREEN, COLOR_YELLOW, COLOR_YELLOW, COLOR_BLACK, COLOR_CYAN, COLOR_BLUE,
    COLOR_BLACK, COLOR_GREEN, COLOR_BLUE, COLOR_CYAN, COLOR_RED, COLOR_BLACK,
    {-1, 17, 19, 25, 31, 37, 71, 113, 185, 226},
    {-1, COLOR_BLUE, COLOR_CYAN, COLOR_YELLOW, COLOR_WHITE},
    {-1, COLOR_GREEN, COLOR_YELLOW, COLOR_MAGENTA, COLOR_RED},
};
/* light: for dark text on a light background (no yellow text); the heatmap goes
 * from pale yellow through orange to dark red; signed values are blue (+) and red (-) */
static const palette light = {
    COLOR_BLUE, COLOR_GREEN, COLOR_RED, COLOR_BLUE, COLOR_WHITE, COLOR_BLUE, COLOR_MAGENTA,
    COLOR_WHITE, COLOR_GREEN, COLOR_BLUE, COLOR_BLUE, COLOR_RED, COLOR_WHITE,
    {-1, 230, 229, 222, 215, 209, 203, 167, 124, 88},
    {-1, COLOR_YELLOW, COLOR_CYAN, COLOR_RED, COLOR_BLACK},
    {-1, COLOR_GREEN, COLOR_BLUE, COLOR_MAGENTA, COLOR_RED},
};

void draw_start(tui_screen *scr, app_theme theme)
{
    curses_active = true;
    scr->colors = COLORS_NONE;
    scr->n_shades = 5;
    /* mono: --theme mono, --no-color, NO_COLOR (options.c folds them into theme) */
    if (theme == THEME_MONO || !has_colors())
        return;
    if (start_color() == ERR)
        return;
    const palette *p = theme == THEME_LIGHT ? &light : &dark;
    short bg = p->plain_bg;
    if (use_default_colors() == OK)
        bg = -1;
    init_pair(PAIR_USER, p->user, bg);
    init_pair(PAIR_ASSISTANT, p->assistant, bg);
    init_pair(PAIR_NOTICE, p->notice, bg);
    init_pair(PAIR_FOCUS, p->focus, bg);
    init_pair(PAIR_STATUS, p->status_fg, p->status_bg);
    init_pair(PAIR_BAR, p->bar, bg);
    init_pair(PAIR_CHOSEN, p->chosen_fg, p->chosen_bg);
    init_pair(PAIR_DIM, p->dim, bg);
    init_pair(PAIR_POS, p->pos, bg);
    init_pair(PAIR_NEG, p->neg, bg);
    for (int i = 1; i < LEVELS_MAX && COLOR_PAIRS > PAIR_LEVEL + i; i++)
        init_pair((short)(PAIR_LEVEL + i), p->levels[i], bg);
    if (COLORS >= 256 && COLOR_PAIRS >= PAIR_RAMP + SHADES_MAX) {
        scr->colors = COLORS_256;
        scr->n_shades = SHADES_MAX;
        for (int i = 0; i < SHADES_MAX; i++)
            init_pair((short)(PAIR_RAMP + i), COLOR_WHITE, i == 0 ? bg : p->ramp256[i]);
    } else if (COLOR_PAIRS >= PAIR_RAMP + 5) {
        scr->colors = COLORS_8;
        scr->n_shades = 5;
        for (int i = 0; i < 5; i++)
            init_pair((short)(PAIR_RAMP + i), COLOR_BLACK, i == 0 ? bg : p->ramp8[i]);
    }
}

attr_t draw_attr(const tui_screen *scr, int pair, attr_t fallback)
{
    if (scr->colors == COLORS_NONE)
        return fallback;
    return COLOR_PAIR(pair);
}

void draw_box(const tui_screen *scr, WINDOW *w, const char *title, bool focused)
{
    werase(w);
    attr_t a = focused ? draw_attr(scr, PAIR_FOCUS, A_BOLD) | A_BOLD : A_NORMAL;
    wattron(w, a);
    box(w, 0, 0);
    wattroff(w, a);
    int width = getmaxx(w);
    if (width >= 4) {
        mvwaddch(w, 0, 1, ' ');
        draw_text(scr, w, 0, 2, width - 4, title, A_BOLD | (focused ? a : 0));
        int x = getcurx(w);
        if (x < width - 1)
            waddch(w, ' ');
    }
}

void draw_text(const tui_screen *scr, WINDOW *w, int y, int x, int width, const char *s, attr_t a)
{
    if (width <= 0 || y < 0 || x < 0 || y >= getmaxy(w) || x >= getmaxx(w))
        return;
    if (x + width > getmaxx(w))
        width = getmaxx(w) - x;
    char buf[1024];
    tuifmt_fit(s, width, scr->utf8, buf, sizeof buf);
    wattron(w, a);
    mvwaddstr(w, y, x, buf);
    wattroff(w, a);
}

void draw_scroll_mark(const tui_screen *scr, WINDOW *w, int y, int x, char dir)
{
    const char *mark = dir == '^'   ? "\xe2\x96\xb2"  /* ▲ */
                       : dir == 'v' ? "\xe2\x96\xbc"  /* ▼ */
                       : dir == '<' ? "\xe2\x97\x80"  /* ◀ */
                                    : "\xe2\x96\xb6"; /* ▶ */
    char ascii[2] = {dir, '\0'};
    draw_text(scr, w, y, x, 1, scr->utf8 ? mark : ascii, A_BOLD);
}

void draw_shade(const tui_screen *scr, WINDOW *w, int y, int x, int b)
{
    if (b < 0)
        b = 0;
    if (b >= scr->n_shades)
        b = scr->n_shades - 1;
    if (scr->colors != COLORS_NONE) {
        wattron(w, COLOR_PAIR(PAIR_RAMP + b));
        mvwaddch(w, y, x, ' ');
        wattroff(w, COLOR_PAIR(PAIR_RAMP + b));
        return;
    }
    static const char *shade_utf8[5] = {" ", "\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93",
                                        "\xe2\x96\x88"};
    static const char shade_ascii[5] = {' ', '.', ':', '+', '#'};
    if (scr->utf8)
        mvwaddstr(w, y, x, shade_utf8[b]);
    else
        mvwaddch(w, y, x, (chtype)shade_ascii[b]);
}

attr_t draw_shade_attr(const tui_screen *scr, int b)
{
    if (b < 0)
        b = 0;
    if (b >= scr->n_shades)
        b = scr->n_shades - 1;
    if (scr->colors != COLORS_NONE)
        return COLOR_PAIR(PAIR_RAMP + b);
    return 3 * b >= 2 * scr->n_shades ? A_REVERSE : 3 * b >= scr->n_shades ? A_BOLD : A_DIM;
}

attr_t draw_signed_attr(const tui_screen *scr, float v, float ref)
{
    static const attr_t size[4] = {A_DIM, A_NORMAL, A_BOLD, A_BOLD | A_REVERSE};
    attr_t a = size[tuifmt_shade(fabsf(v), ref, 4, false)];
    if (scr->colors != COLORS_NONE)
        return a | COLOR_PAIR(v < 0.0f ? PAIR_NEG : PAIR_POS);
    return v < 0.0f ? a | A_UNDERLINE : a;
}

void tui_restore_terminal(void)
{
    if (curses_active) {
        curses_active = false;
        endwin();
        fputs(BRACKETED_PASTE_OFF, stdout);
        fflush(stdout);
    }
}

void tui_die(const char *fmt, ...)
{
    tui_restore_terminal();
    va_list ap;
    va_start(ap, fmt);
    fputs("llmchat: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}
