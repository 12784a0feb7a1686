/* curses_window.h — what the TUI's drawing tests share: a curses screen that writes to
 * /dev/null (so that windows can be drawn into and read back without a terminal), and
 * a window's rows read back as text. For test programs linked with ncursesw. */
#ifndef LLMCHAT_TESTS_CURSES_WINDOW_H
#define LLMCHAT_TESTS_CURSES_WINDOW_H

#include <curses.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static SCREEN *curses_window_term;
static FILE *curses_window_out, *curses_window_in;

/* A screen that writes to /dev/null (the first of xterm, vt100, dumb that the terminfo
 * database has); false when none can be made here. */
static inline bool open_terminal(void)
{
    curses_window_out = fopen("/dev/null", "w");
    curses_window_in = fopen("/dev/null", "r");
    const char *names[] = {"xterm", "vt100", "dumb"};
    for (size_t i = 0; i < 3 && !curses_window_term && curses_window_out && curses_window_in; i++)
        curses_window_term = newterm(names[i], curses_window_out, curses_window_in);
    return curses_window_term != NULL;
}

static inline void close_terminal(void)
{
    if (curses_window_term) {
        endwin();
        delscreen(curses_window_term);
        curses_window_term = NULL;
    }
    if (curses_window_out)
        fclose(curses_window_out);
    if (curses_window_in)
        fclose(curses_window_in);
    curses_window_out = curses_window_in = NULL;
}

/* Row y of w as text, trailing blanks dropped. */
static inline void row_of(WINDOW *w, int y, char *out, int size)
{
    int n = mvwinnstr(w, y, 0, out, size - 1);
    out[n < 0 ? 0 : n] = '\0';
    for (n = (int)strlen(out); n > 0 && out[n - 1] == ' '; n--)
        out[n - 1] = '\0';
}

/* Does a row of w hold text? */
static inline bool window_has(WINDOW *w, const char *text)
{
    char line[256];
    for (int y = 0; y < getmaxy(w); y++) {
        row_of(w, y, line, sizeof line);
        if (strstr(line, text))
            return true;
    }
    return false;
}

#endif
