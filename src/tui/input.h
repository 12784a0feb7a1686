/* input.h — the input line: GNU readline driven through its callback interface inside
 * the curses loop (in a build with libedit: line_edit.h, libedit keeping the history),
 * with history kept across runs ($XDG_STATE_HOME/llmchat/history).
 *
 * Its own state is the history file and the number of lines this run added; the line
 * being edited is readline's, which is global: one input line at a time. */
#ifndef LLMCHAT_TUI_INPUT_H
#define LLMCHAT_TUI_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "draw.h"

typedef struct {
    void (*submit)(void *ctx, const char *line); /* Enter: a finished line */
    void (*eof)(void *ctx);                      /* readline's end of input */
    void *ctx;
} input_handler;

typedef struct input_line input_line;

/* Sets readline up (no tty handling, no signals, output to /dev/null; with libedit
 * only its history) and reads the history, keeping at most history_size lines (0: no history file is read or
 * written). Exits through tui_die when out of memory. */
input_line *input_open(const input_handler *h, int history_size);
/* Appends this run's lines to the history file and releases readline. */
/* Saves the new history lines and frees the line. Returns 0, or the errno of a
 * history file that could not be written (the caller says so once the terminal is
 * back). */
int input_close(input_line *in);

/* Feeds one key to readline (a curses key code, or a character). */
void input_key(input_line *in, int key, bool keycode);
/* One key of a bracketed paste: inserted as text at the cursor, a newline ('\r',
 * '\n', "\r\n", keypad Enter) as a newline, tabs as tabs; no key acts as a command
 * (Enter does not send the line) and other control keys are dropped. */
void input_paste(input_line *in, int key, bool keycode);
/* n bytes of a bracketed paste read as they came (the locale's encoding), inserted by
 * the rules above in one edit; input_paste hands a key's bytes to it. */
void input_paste_text(input_line *in, const char *s, size_t n);
bool input_empty(const input_line *in);
/* The prompt and the line, scrolled so that the cursor shows; the cursor is left there. */
void input_draw(const input_line *in, WINDOW *w, const tui_screen *scr, bool focused);

#endif
