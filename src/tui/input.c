/* input.c — the input line (see input.h).
 *
 * Curses owns the terminal; readline only edits a line. Keys arrive from the main
 * loop: text bytes are handed to readline one at a time through rl_getc_function and
 * rl_callback_read_char, cursor and history keys (which curses has already decoded)
 * call readline's commands directly, and readline's redisplay does nothing: the line
 * is drawn with the panes. Readline never touches the tty (its prep/deprep, signal
 * and SIGWINCH handling are off) and writes only to /dev/null.
 * Owns the history file ($XDG_STATE_HOME/llmchat/history, found by session_state_file). */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

struct input_line {
    input_handler on;
    char *history_path; /* NULL: no history file */
    int history_size;   /* the most lines kept (--history-size) */
    int added;          /* history entries added by this run (appended at exit) */
    FILE *devnull;      /* readline's output */
};

static input_line *g_input; /* readline's callbacks are global: the one line they serve */
static int g_byte;          /* the byte readline reads next */
static bool g_have_byte;
static const char *g_prompt = "> ";

static int input_getc(FILE *f)
{
    (void)f;
    if (!g_have_byte)
        return EOF;
    g_have_byte = false;
    return g_byte;
}

#if HAVE_DECL_RL_INPUT_AVAILABLE_HOOK
static int input_available(void)
{
    return g_have_byte;
}
#endif

static void input_redisplay(void)
{
}

#ifdef HAVE_LIBEDIT
static void prep_term(void) /* libedit's hook takes no argument */
{
}
#else
static void prep_term(int meta)
{
    (void)meta;
}
#endif

static void deprep_term(void)
{
}

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
    in->on.submit(in->on.ctx, line);
    free(line);
}

input_line *input_open(const input_handler *h, int history_size)
{
    input_line *in = calloc(1, sizeof *in);
    if (!in)
        tui_die("out of memory");
    in->on = *h;
    g_input = in;
    in->devnull = fopen("/dev/null", "w");
    rl_readline_name = "llmchat";
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
    using_history();
    stifle_history(history_size);
    in->history_size = history_size;
    in->history_path = history_size > 0 ? session_state_file("history") : NULL;
    if (in->history_path)
        read_history(in->history_path);
    rl_callback_handler_install(g_prompt, on_line);
    return in;
}

int input_close(input_line *in)
{
    if (!in)
        return 0;
    int failed = 0;
    rl_callback_handler_remove();
    if (in->history_path && in->added > 0) {
        /* append, so that several llmchat sessions do not overwrite each other's lines */
        int n = in->added < history_length ? in->added : history_length;
        struct stat st;
        int r = stat(in->history_path, &st) == 0 ? append_history(n, in->history_path)
                                                 : write_history(in->history_path);
        if (r == 0)
            history_truncate_file(in->history_path, in->history_size);
        else
            failed = r;
    }
    free(in->history_path);
    if (in->devnull) {
        rl_outstream = NULL;
        fclose(in->devnull);
    }
    g_input = NULL;
    free(in);
    return failed;
}

static void feed_byte(int b)
{
    g_byte = b;
    g_have_byte = true;
    rl_callback_read_char();
    g_have_byte = false;
}

#if HAVE_DECL_RL_BACKWARD_CHAR
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
#else
/* The same keys where the library exports no commands (libedit): the Emacs control
 * byte its editor binds to each. Delete is forward then back (Ctrl-D would end the
 * input on an empty line). */
static void command_key(int key)
{
    switch (key) {
    case KEY_LEFT: feed_byte(0x02); break;      /* C-b */
    case KEY_RIGHT: feed_byte(0x06); break;     /* C-f */
    case KEY_UP: feed_byte(0x10); break;        /* C-p */
    case KEY_DOWN: feed_byte(0x0e); break;      /* C-n */
    case KEY_HOME: feed_byte(0x01); break;      /* C-a */
    case KEY_END: feed_byte(0x05); break;       /* C-e */
    case KEY_BACKSPACE: feed_byte(0x08); break; /* C-h */
    case KEY_DC:
        if (rl_point < rl_end) {
            feed_byte(0x06);
            feed_byte(0x08);
        }
        break;
    case KEY_ENTER: feed_byte('\r'); break;
    default: break;
    }
}
#endif

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
        for (size_t i = 0; i < n; i++)
            feed_byte((unsigned char)mb[i]);
    }
}

void input_draw(const input_line *in, WINDOW *w, const tui_screen *scr, bool focused)
{
    (void)in;
    werase(w);
    int width = getmaxx(w);
    attr_t pa = focused ? draw_attr(scr, PAIR_USER, A_BOLD) | A_BOLD : A_DIM;
    /* readline's own prompt when it shows one (e.g. "(reverse-i-search)`x': ") */
    char prompt[256];
    tuifmt_fit(rl_display_prompt && *rl_display_prompt ? rl_display_prompt : g_prompt,
               width / 2 > 2 ? width / 2 : width, scr->utf8, prompt, sizeof prompt);
    int pw = textfmt_width(prompt);
    if (pw > width)
        pw = width;
    wattron(w, pa);
    mvwaddstr(w, 0, 0, prompt);
    wattroff(w, pa);
    int avail = width - pw - 1; /* keep a column for the cursor at the end */
    const char *s = rl_line_buffer ? rl_line_buffer : "";
    int len = rl_end, point = rl_point;
    if (avail < 1) {
        wmove(w, 0, pw < width ? pw : width - 1);
        return;
    }
    /* columns before the cursor decide the horizontal scroll */
    int cur_col = 0;
    for (int i = 0; i < point && i < len;) {
        int b, cw = tuifmt_char_width(s + i, (size_t)(len - i), &b);
        bool ctl = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f ||
                   textfmt_utf8_len((const unsigned char *)s + i, (size_t)(len - i)) == 0;
        cur_col += ctl ? 1 : cw;
        i += b;
    }
    int start = cur_col >= avail ? cur_col - avail + 1 : 0;
    int col = 0, cursor_x = pw;
    for (int i = 0; i < len;) {
        int b, cw = tuifmt_char_width(s + i, (size_t)(len - i), &b);
        /* control bytes and invalid UTF-8 show as one reversed '?' */
        bool ctl = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f ||
                   textfmt_utf8_len((const unsigned char *)s + i, (size_t)(len - i)) == 0;
        if (ctl)
            cw = 1;
        if (i == point)
            cursor_x = pw + col - start;
        if (col >= start && col + cw - start <= avail) {
            wmove(w, 0, pw + col - start);
            if (ctl)
                waddch(w, '?' | A_REVERSE);
            else
                waddnstr(w, s + i, b);
        }
        col += cw;
        i += b;
    }
    if (point >= len)
        cursor_x = pw + col - start;
    if (cursor_x >= width)
        cursor_x = width - 1;
    wmove(w, 0, cursor_x);
}
