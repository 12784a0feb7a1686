/* input.c — the input line (see input.h).
 *
 * Curses owns the terminal; readline only edits a line. Keys arrive from the main
 * loop: text bytes are handed to readline one at a time through rl_getc_function and
 * rl_callback_read_char, cursor and history keys (which curses has already decoded)
 * call readline's commands directly, and readline's redisplay does nothing: the line
 * is drawn with the panes. Readline never touches the tty (its prep/deprep, signal
 * and SIGWINCH handling are off) and writes only to /dev/null.
 *
 * With libedit the line is line_edit.h's and libedit keeps only the history: its
 * readline compatibility cannot edit a line inside the curses loop. It edits only when
 * its streams are a terminal with echo on (else each byte comes back as a line of its
 * own), it switches that terminal between its own modes around every line whatever
 * the hooks say, its callback drops the first key after each line, and (3.1-20221030)
 * it writes through a freed pointer once a line outgrows 1 KB, redrawing the whole line
 * on every key besides (docs/testing.md).
 * Owns the history file ($XDG_STATE_HOME/llmchat/history, found by session_state_file)
 * and, with libedit, the line being edited. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#else
#include <readline/history.h>
#include <readline/readline.h>
#endif

#include "input.h"

#include "session.h"
#include "textfmt.h"
#include "format.h"
#include "history_file.h"
#include "line_edit.h"

struct input_line {
    input_handler on;
    bool pasted_cr;     /* the last pasted key was '\r' (a "\r\n" is one newline) */
    char *history_path; /* NULL: no history file */
    int history_size;   /* the most lines kept (--history-size) */
    int added;          /* history entries added by this run (appended at exit) */
    FILE *devnull;      /* readline's output */
#ifdef HAVE_LIBEDIT
    line_edit *edit;    /* the line (libedit edits none here) */
#endif
};

static input_line *g_input; /* readline's callbacks are global: the one line they serve */
static const char *g_prompt = "> ";

/* A finished line (NULL: the end of input): into the history unless it repeats the
 * newest line, then to the handler. Frees the line. */
static void on_line(char *line)
{
    input_line *in = g_input;
    if (!line) { /* EOF */
        in->on.eof(in->on.ctx);
        return;
    }
    if (*line) {
        HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
        if (!last || strcmp(last->line, line) != 0) {
            add_history(line);
            in->added++;
        }
    }
#ifndef HAVE_LIBEDIT
    rl_replace_line("", 0); /* the line is sent: it is not shown while its prompt is read */
#endif
    in->on.submit(in->on.ctx, line);
    free(line);
}

/* The input line of handler h, the one readline's callbacks serve. */
static input_line *line_new(const input_handler *h)
{
    input_line *in = calloc(1, sizeof *in);
    if (!in)
        tui_die("out of memory");
    in->on = *h;
    g_input = in;
    rl_readline_name = "llmchat";
    return in;
}

/* The history file holds an entry a line: a pasted message's newlines are written
 * there as HISTORY_NEWLINE (the record separator, which typed text does not hold) and
 * read back as newlines, so that the message comes back whole in the next run. */
enum { HISTORY_NEWLINE = 0x1e };

/* Every history entry with byte `from` in it, with `to` in its place. */
static void history_swap(char from, char to)
{
    for (int i = 0; i < history_length; i++) {
        HIST_ENTRY *h = history_get(history_base + i);
        if (!h || !h->line || !strchr(h->line, from))
            continue;
        char *line = strdup(h->line);
        if (!line)
            return;
        for (char *p = line; (p = strchr(p, from)) != NULL;)
            *p++ = to;
        HIST_ENTRY *old = replace_history_entry(i, line, h->data); /* copies line */
        free(line);
        if (old)
            free_history_entry(old);
    }
}

/* Reads the history file, keeping at most history_size lines. */
static void history_open(input_line *in, int history_size)
{
    using_history();
    stifle_history(history_size);
    in->history_size = history_size;
    in->history_path = history_size > 0 ? session_state_file("history") : NULL;
    if (in->history_path) {
        read_history(in->history_path);
        history_swap(HISTORY_NEWLINE, '\n');
    }
}

/* Saves this run's lines. Returns 0 or an errno. */
static int history_close(input_line *in)
{
    int failed = 0;
    if (in->history_path && in->added > 0) {
        history_swap('\n', HISTORY_NEWLINE);
        failed = history_file_save(in->history_path, in->added, in->history_size);
        history_swap(HISTORY_NEWLINE, '\n');
    }
    free(in->history_path);
    return failed;
}

#ifdef HAVE_LIBEDIT

/* line_history over readline's history list (libedit's). */
static int history_count(void *ctx)
{
    (void)ctx;
    return history_length;
}

static const char *history_line(void *ctx, int i)
{
    (void)ctx;
    HIST_ENTRY *h = history_get(history_base + i);
    return h ? h->line : NULL;
}

input_line *input_open(const input_handler *h, int history_size)
{
    input_line *in = line_new(h);
    history_open(in, history_size);
    line_history hist = {.count = history_count, .line = history_line};
    in->edit = line_edit_new(&hist);
    if (!in->edit)
        tui_die("out of memory");
    return in;
}

int input_close(input_line *in)
{
    if (!in)
        return 0;
    int failed = history_close(in);
    line_edit_free(in->edit);
    g_input = NULL;
    free(in);
    return failed;
}

static void edit_command(input_line *in, line_command c)
{
    if (!line_edit_command(in->edit, c))
        tui_die("out of memory");
}

static void edit_type(input_line *in, const char *s, size_t n)
{
    if (!line_edit_type(in->edit, s, n))
        tui_die("out of memory");
}

static void edit_submit(input_line *in)
{
    char *line = line_edit_take(in->edit);
    if (!line)
        tui_die("out of memory");
    on_line(line);
}

/* A cursor, history or deletion key (curses' code). */
static void command_key(input_line *in, int key)
{
    switch (key) {
    case KEY_LEFT: edit_command(in, LINE_LEFT); break;
    case KEY_RIGHT: edit_command(in, LINE_RIGHT); break;
    case KEY_UP: edit_command(in, LINE_PREV); break;
    case KEY_DOWN: edit_command(in, LINE_NEXT); break;
    case KEY_HOME: edit_command(in, LINE_HOME); break;
    case KEY_END: edit_command(in, LINE_END); break;
    case KEY_BACKSPACE: edit_command(in, LINE_BACKSPACE); break;
    case KEY_DC: edit_command(in, LINE_DELETE); break;
    case KEY_ENTER: edit_submit(in); break;
    default: break;
    }
}

/* A character: text, or one of readline's Emacs control keys (others are dropped). */
static void char_key(input_line *in, int key)
{
    static const struct {
        int key;
        line_command c;
    } controls[] = {
        {0x01, LINE_HOME},      {0x02, LINE_LEFT},       {0x04, LINE_DELETE},
        {0x05, LINE_END},       {0x06, LINE_RIGHT},      {0x07, LINE_CANCEL},
        {0x08, LINE_BACKSPACE}, {0x0b, LINE_KILL_END},   {0x0e, LINE_NEXT},
        {0x10, LINE_PREV},      {0x12, LINE_SEARCH},     {0x15, LINE_KILL_START},
        {0x17, LINE_KILL_WORD}, {0x7f, LINE_BACKSPACE},
    };
    if (key == '\r' || key == '\n') {
        edit_submit(in);
        return;
    }
    for (size_t i = 0; i < sizeof controls / sizeof controls[0]; i++)
        if (controls[i].key == key) {
            edit_command(in, controls[i].c);
            return;
        }
    if (key < 0x20 && key != '\t')
        return;
    char mb[MB_LEN_MAX];
    size_t n = 1;
    if (key < 0x80) {
        mb[0] = (char)key;
    } else {
        mbstate_t ps;
        memset(&ps, 0, sizeof ps);
        n = wcrtomb(mb, (wchar_t)key, &ps);
        if (n == (size_t)-1)
            return;
    }
    edit_type(in, mb, n);
}

static void insert_text(input_line *in, const char *s, size_t n)
{
    edit_type(in, s, n);
}

bool input_empty(const input_line *in)
{
    size_t len, point;
    line_edit_text(in->edit, &len, &point);
    return len == 0;
}

void input_key(input_line *in, int key, bool keycode)
{
    if (keycode)
        command_key(in, key);
    else if (key >= 0)
        char_key(in, key);
}

/* The line being edited, its length, the cursor, and the prompt to show. */
static const char *line_now(const input_line *in, int *len, int *point, const char **prompt)
{
    size_t n, p;
    const char *s = line_edit_text(in->edit, &n, &p);
    *len = n > INT_MAX ? INT_MAX : (int)n;
    *point = p > (size_t)*len ? *len : (int)p;
    const char *search = line_edit_prompt(in->edit);
    *prompt = search ? search : g_prompt;
    return s;
}

#else /* GNU readline */

/* The bytes of the key readline reads now: a character's whole UTF-8 sequence, since
 * some of its commands (incremental search) read a character's bytes in one call */
static unsigned char g_bytes[MB_LEN_MAX];
static int g_n_bytes, g_next_byte;

static int input_getc(FILE *f)
{
    (void)f;
    if (g_next_byte >= g_n_bytes)
        return EOF;
    return g_bytes[g_next_byte++];
}

#if HAVE_DECL_RL_INPUT_AVAILABLE_HOOK
static int input_available(void)
{
    return g_next_byte < g_n_bytes;
}
#endif

static void input_redisplay(void)
{
}

static void prep_term(int meta)
{
    (void)meta;
}

static void deprep_term(void)
{
}

input_line *input_open(const input_handler *h, int history_size)
{
    input_line *in = line_new(h);
    in->devnull = fopen("/dev/null", "w");
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
#if HAVE_DECL_RL_CHANGE_ENVIRONMENT
    rl_change_environment = 0;
#endif
    rl_prep_term_function = prep_term;
    rl_deprep_term_function = deprep_term;
    rl_getc_function = input_getc;
#if HAVE_DECL_RL_INPUT_AVAILABLE_HOOK
    rl_input_available_hook = input_available;
#endif
    rl_redisplay_function = input_redisplay;
    rl_instream = stdin;
    rl_outstream = in->devnull ? in->devnull : stderr;
    rl_inhibit_completion = 1;
    history_open(in, history_size);
    rl_callback_handler_install(g_prompt, on_line);
    return in;
}

int input_close(input_line *in)
{
    if (!in)
        return 0;
    rl_callback_handler_remove();
    int failed = history_close(in);
    if (in->devnull) {
        rl_outstream = NULL;
        fclose(in->devnull);
    }
    g_input = NULL;
    free(in);
    return failed;
}

/* A key's bytes to readline, as many calls as it takes to read them all. */
static void feed_bytes(const unsigned char *b, int n)
{
    memcpy(g_bytes, b, (size_t)n);
    g_n_bytes = n;
    g_next_byte = 0;
    while (g_next_byte < g_n_bytes) {
        int before = g_next_byte;
        rl_callback_read_char();
        if (g_next_byte == before) /* read nothing: the rest cannot go in */
            break;
    }
    g_n_bytes = g_next_byte = 0;
}

static void feed_byte(int b)
{
    unsigned char one = (unsigned char)b;
    feed_bytes(&one, 1);
}

/* A cursor, history or deletion key: GNU readline's command, called directly. */
static void command_key(int key)
{
    switch (key) {
    case KEY_LEFT: rl_backward_char(1, 0); break;
    case KEY_RIGHT: rl_forward_char(1, 0); break;
    case KEY_UP: rl_get_previous_history(1, 0); break;
    case KEY_DOWN: rl_get_next_history(1, 0); break;
    case KEY_HOME: rl_beg_of_line(1, 0); break;
    case KEY_END: rl_end_of_line(1, 0); break;
    case KEY_BACKSPACE: rl_rubout(1, 0); break;
    case KEY_DC: rl_delete(1, 0); break;
    case KEY_ENTER: feed_byte('\r'); break;
    default: break;
    }
}

static void insert_text(input_line *in, const char *s, size_t n)
{
    (void)in;
    char small[64];
    char *buf = n < sizeof small ? small : malloc(n + 1); /* readline takes a C string */
    if (!buf)
        tui_die("out of memory");
    memcpy(buf, s, n);
    buf[n] = '\0';
    rl_insert_text(buf);
    if (buf != small)
        free(buf);
}

bool input_empty(const input_line *in)
{
    (void)in;
    return rl_end == 0;
}

void input_key(input_line *in, int key, bool keycode)
{
    (void)in;
    if (keycode) {
        command_key(key);
        return;
    }
    if (key >= 0 && key < 0x80) {
        feed_byte(key);
    } else if (key >= 0x80) { /* a wide character from get_wch: feed its UTF-8 bytes */
        char mb[MB_LEN_MAX];
        mbstate_t ps;
        memset(&ps, 0, sizeof ps);
        size_t n = wcrtomb(mb, (wchar_t)key, &ps);
        if (n == (size_t)-1)
            return;
        feed_bytes((const unsigned char *)mb, (int)n);
    }
}

/* The line being edited, its length, the cursor, and the prompt to show: readline's
 * own when it shows one (e.g. "(reverse-i-search)`x': "). */
static const char *line_now(const input_line *in, int *len, int *point, const char **prompt)
{
    (void)in;
    *len = rl_end;
    *point = rl_point;
    *prompt = rl_display_prompt && *rl_display_prompt ? rl_display_prompt : g_prompt;
    return rl_line_buffer ? rl_line_buffer : "";
}

#endif

void input_paste(input_line *in, int key, bool keycode)
{
    char mb[MB_LEN_MAX];
    size_t n = 1;
    if (keycode) { /* keypad Enter: a newline; the other keys nothing */
        in->pasted_cr = false;
        if (key == KEY_ENTER)
            insert_text(in, "\n", 1);
        return;
    }
    if (key >= 0 && key < 0x80) {
        mb[0] = (char)key;
    } else {
        mbstate_t ps;
        memset(&ps, 0, sizeof ps);
        n = key < 0 ? (size_t)-1 : wcrtomb(mb, (wchar_t)key, &ps);
        if (n == (size_t)-1) {
            in->pasted_cr = false;
            return;
        }
    }
    input_paste_text(in, mb, n);
}

void input_paste_text(input_line *in, const char *s, size_t n)
{
    char small[64];
    char *kept = n <= sizeof small ? small : malloc(n);
    if (!kept)
        tui_die("out of memory");
    size_t k = 0;
    bool cr = in->pasted_cr;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool after_cr = cr;
        cr = c == '\r';
        if (c == '\r' || (c == '\n' && !after_cr)) /* "\r\n" is one newline */
            kept[k++] = '\n';
        else if (!(c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f)) /* other controls dropped */
            kept[k++] = (char)c;
    }
    in->pasted_cr = cr;
    if (k > 0)
        insert_text(in, kept, k);
    if (kept != small)
        free(kept);
}

void input_draw(const input_line *in, WINDOW *w, const tui_screen *scr, bool focused)
{
    werase(w);
    int width = getmaxx(w);
    attr_t pa = focused ? draw_attr(scr, PAIR_USER, A_BOLD) | A_BOLD : A_DIM;
    int len, point;
    const char *line_prompt;
    const char *s = line_now(in, &len, &point, &line_prompt);
    char prompt[256];
    tuifmt_fit(line_prompt, width / 2 > 2 ? width / 2 : width, scr->utf8, prompt, sizeof prompt);
    int pw = textfmt_width(prompt);
    if (pw > width)
        pw = width;
    wattron(w, pa);
    mvwaddstr(w, 0, 0, prompt);
    wattroff(w, pa);
    int avail = width - pw - 1; /* keep a column for the cursor at the end */
    if (avail < 1) {
        wmove(w, 0, pw < width ? pw : width - 1);
        return;
    }
    /* the columns before the cursor decide the horizontal scroll */
    int skip;
    int i = (int)tuifmt_line_scroll(s, (size_t)len, point < 0 ? 0 : (size_t)point, avail, &skip);
    int col = 0, cursor_x = pw;
    for (; i < len && col - skip <= avail;) {
        bool symbol;
        int b, cw = tuifmt_line_char_width(s + i, (size_t)(len - i), &b, &symbol);
        if (i == point)
            cursor_x = pw + col - skip;
        if (col >= skip && col + cw - skip <= avail) {
            wmove(w, 0, pw + col - skip);
            if ((s[i] == '\n' || s[i] == '\t') && scr->utf8) { /* a pasted newline, tab */
                wattron(w, A_DIM);
                waddstr(w, s[i] == '\n' ? "\xe2\x86\xb5" : "\xe2\x87\xa5"); /* ↵ ⇥ */
                wattroff(w, A_DIM);
            } else if (symbol)
                waddch(w, '?' | A_REVERSE); /* control bytes and invalid UTF-8 */
            else
                waddnstr(w, s + i, b);
        }
        col += cw;
        i += b;
    }
    if (point >= len)
        cursor_x = pw + col - skip;
    if (cursor_x >= width)
        cursor_x = width - 1;
    wmove(w, 0, cursor_x);
}
