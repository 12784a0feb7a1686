/* line_edit.h — the TUI's input line where GNU readline does not edit it (a build with
 * libedit, whose readline compatibility cannot edit a line inside the curses loop: see
 * input.c): a UTF-8 line with a cursor, the Emacs keys of readline's defaults that the
 * TUI documents (keys.c), history with Up and Down, and a reverse incremental search.
 *
 * Plain data: no terminal, no readline. The history is the caller's, read through a
 * count and a line getter; this module copies what it shows. Owns the line, the line
 * the history walk left and the search string. Tests: tests/test_line_edit.c. */
#ifndef LLMCHAT_TUI_LINE_EDIT_H
#define LLMCHAT_TUI_LINE_EDIT_H

#include <stdbool.h>
#include <stddef.h>

/* The earlier lines, oldest first. */
typedef struct {
    int (*count)(void *ctx);
    const char *(*line)(void *ctx, int i); /* line i, 0 the oldest; NULL: none */
    void *ctx;
} line_history;

typedef enum {
    LINE_LEFT,       /* Left, Ctrl-B: one character */
    LINE_RIGHT,      /* Right, Ctrl-F */
    LINE_HOME,       /* Home, Ctrl-A */
    LINE_END,        /* End, Ctrl-E */
    LINE_BACKSPACE,  /* Backspace, Ctrl-H: the character before the cursor */
    LINE_DELETE,     /* Delete, Ctrl-D: the character under the cursor */
    LINE_KILL_END,   /* Ctrl-K: from the cursor to the end */
    LINE_KILL_START, /* Ctrl-U: from the start to the cursor */
    LINE_KILL_WORD,  /* Ctrl-W: the word before the cursor (to the blank before it) */
    LINE_PREV,       /* Up, Ctrl-P: the earlier history line */
    LINE_NEXT,       /* Down, Ctrl-N: the later one, then the line being typed */
    LINE_SEARCH,     /* Ctrl-R: search the history backwards; again: the next match */
    LINE_CANCEL,     /* Ctrl-G: leave the search, the line as it was before it */
} line_command;

typedef struct line_edit line_edit;

/* An empty line over history h (copied; h->ctx is borrowed for the line's life). NULL:
 * out of memory. */
line_edit *line_edit_new(const line_history *h);
/* line_edit_free(NULL) does nothing. */
void line_edit_free(line_edit *e);

/* Types n bytes (one character) at the cursor, or into the search string while
 * searching. The commands: a command other than the search's own (LINE_SEARCH,
 * LINE_CANCEL, LINE_BACKSPACE) ends a search, keeping the line it found, and then
 * acts. false: out of memory (the line is as before). */
bool line_edit_type(line_edit *e, const char *s, size_t n);
bool line_edit_command(line_edit *e, line_command c);

/* The line (NUL-terminated, valid until the next call), its length and the cursor, in
 * bytes. */
const char *line_edit_text(const line_edit *e, size_t *len, size_t *point);
/* While searching, the prompt readline shows ("(reverse-i-search)`dog': "); else NULL. */
const char *line_edit_prompt(const line_edit *e);

/* Enter: the line, to be freed by the caller, and a new empty line (a search ends
 * first, the history walk starts again at the newest). NULL: out of memory. */
char *line_edit_take(line_edit *e);

#endif
