/* repl.c — `-m chat`: the plain REPL. On a terminal it reads lines with readline
 * (its keys read in bulk, tty_reader.h; editing, history kept in
 * $XDG_STATE_HOME/llmchat/chat_history; the prompt and the echo go to the terminal,
 * never to a redirected stdout); from a pipe it takes one
 * user turn per input line. Replies stream to stdout. Unless stdin and stdout are both
 * terminals, each message gets exactly one line there: its reply with a newline written
 * as \n and a backslash as \\ (empty when the message could not be answered), so that
 * a script reads one reply per line. Ctrl-C stops a reply (the chat goes on; a token
 * the step in progress made is dropped, unseen) or clears the line being typed; twice
 * within a second,
 * like SIGTERM and SIGHUP, it saves the chat and leaves (signals.h). On a terminal
 * (or with --autosave always) the chat is autosaved after every turn and every command
 * that changes it (autosave.h). /set slow-motion is kept but has no effect here: the
 * REPL has no keys to press between tokens. A reply's thinking (think.h: Qwen3's
 * "<think>" ... "</think>") is shown dimmed on a terminal, plain otherwise: a
 * line-oriented program hides nothing.
 * Slash commands are parsed by command.c (the table the TUI shares); their handlers
 * are here. */
#include "config.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#else
#include <readline/history.h>
#include <readline/readline.h>
#endif

#include "chat.h"
#include "cli.h"
#include "session.h"
#include "autosave.h"
#include "signals.h"
#include "command.h"
#include "engine.h"
#include "history_file.h"
#include "textfmt.h"
#include "think.h"
#include "tty_reader.h"
#include "std_streams.h"

typedef struct {
    session *s;           /* the chat, the engine, the live settings, the saved-chat file */
    const app_options *o; /* s->o */
    chat *c;              /* s->c */
    bool tty;             /* stdin is a terminal: readline */
    bool lines;           /* one line per reply on stdout, newlines escaped */
    FILE *term;           /* where readline's prompt and echo go (a terminal) */
    bool quit;
    int status;           /* exit status so far */
    int n_asked;          /* user messages sent to the model */
    int n_answered;       /* of those, the ones whose turn could start */
    bool changed;         /* the dialog changed since the last autosave */
    int history_added;    /* lines this run put into the history (saved at the end) */
} repl;

/* Autosaves the chat when it changed (autosave_now: nothing is written for a chat
 * that never had a turn); warns once when that fails. */
static void autosave(repl *r)
{
    if (!r->changed)
        return;
    char msg[700];
    autosave_now(r->s, msg, sizeof msg); /* msg: a failure's warning, or where it went on */
    if (*msg)
        fprintf(stderr, "llmchat: %s\n", msg);
    r->changed = false;
}

/* /help: every command of the table, those another front end runs marked as such. */
static void print_help(FILE *f)
{
    fputs("Type a message and press Enter. Commands:\n", f);
    int n;
    const command_info *t = command_table(&n);
    for (int i = 0; i < n; i++) {
        char usage[64], what[256];
        command_usage(&t[i], usage, sizeof usage);
        command_describe(&t[i], what, sizeof what);
        fprintf(f, "  %-15s %s\n", usage, what);
    }
    fputs("Ctrl-C stops a reply without leaving.\n", f);
}

/* A reply as it streams to stdout: its thinking dimmed when dim is allowed. */
typedef struct {
    bool dim;          /* stdout is a terminal and colours are wanted */
    bool dimmed;       /* the terminal is in dim now */
    bool escape;       /* one line: a newline written as \n, a backslash as \\ */
    size_t shown;      /* the reply's bytes written so far */
    bool think_opened; /* the reply starts inside its thinking span (qwen35) */
    textfmt_stream ts; /* carries split UTF-8 */
} reply_out;

/* Writes safe text (textfmt_stream_put's: no control byte but \n and \t), its
 * newlines and backslashes escaped when the reply must stay on one line. */
static void put_safe(const reply_out *o, const char *s, size_t n)
{
    if (!o->escape) {
        fwrite(s, 1, n, stdout);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n')
            fputs("\\n", stdout);
        else if (s[i] == '\\')
            fputs("\\\\", stdout);
        else
            putchar(s[i]);
    }
}

static void put_bytes(reply_out *o, const char *s, size_t n, bool dim)
{
    if (n == 0)
        return;
    if (o->dim && dim != o->dimmed) {
        fputs(dim ? "\033[2m" : "\033[22m", stdout);
        o->dimmed = dim;
    }
    char safe[4 * 256 + 16];
    while (n > 0) {
        size_t chunk = n > 256 ? 256 : n; /* each byte grows to at most 4 */
        put_safe(o, safe, textfmt_stream_put(&o->ts, s, chunk, safe, sizeof safe));
        s += chunk;
        n -= chunk;
    }
}

static const char *newest_reply(const chat *c)
{
    return chat_get_turn(c, chat_turn_count(c) - 1)->reply;
}

/* Writes the reply's first len bytes that are not out yet, the thinking span dimmed;
 * while the reply may still be opening with "<think>" they wait, unless done. */
static void put_reply(reply_out *o, const char *reply, size_t len, bool done)
{
    size_t have = strlen(reply);
    if (len > have)
        len = have;
    think_span sp;
    think_state st = think_find_in(reply, len, o->think_opened, &sp);
    if (st == THINK_UNSURE && !done)
        return;
    bool span = st == THINK_OPEN || st == THINK_CLOSED;
    size_t from = o->shown, a = span ? sp.start : len, b = span ? sp.end : len;
    if (from < a)
        put_bytes(o, reply + from, a - from, false);
    if (from < b && a < b)
        put_bytes(o, reply + (from > a ? from : a), b - (from > a ? from : a), true);
    if (b < len)
        put_bytes(o, reply + (from > b ? from : b), len - (from > b ? from : b), false);
    o->shown = len;
    if (done && o->dimmed) {
        fputs("\033[22m", stdout);
        o->dimmed = false;
    }
    std_streams_flush();
}

/* Runs one user turn and streams the reply to stdout. */
static void reply_to(repl *r, const char *user)
{
    llm_err err;
    int max = r->s->steps;
    r->n_asked++;
    if (chat_begin(r->c, user, max, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        if (r->lines) { /* the message's line, empty: the next reply stays on the next */
            putchar('\n');
            fflush(stdout);
        }
        return;
    }
    r->n_answered++;
    r->changed = true;
    const char *note = chat_take_notice(r->c);
    if (note)
        fprintf(stderr, "llmchat: %s\n", note);
    reply_out out = {.dim = isatty(STDOUT_FILENO) && r->o->theme != THEME_MONO,
                     .escape = r->lines,
                     .think_opened = chat_get_turn(r->c, chat_turn_count(r->c) - 1)->think_opened};
    size_t streamed = 0; /* the reply's bytes the steps gave */
    signals_interrupted = 0;
    for (;;) {
        if (ferror(stdout)) { /* nowhere to write to: said by main, at the end */
            chat_stop(r->c, &err);
            r->quit = true;
            r->status = 1;
            break;
        }
        if (signals_interrupted || signals_quit) {
            put_reply(&out, newest_reply(r->c), streamed, true);
            chat_stop(r->c, &err);
            fprintf(stderr, "%s[stopped]\n", r->tty ? "\n" : "");
            break;
        }
        chat_run run; /* with --lookup or --draft, several tokens at a time */
        int before = chat_reply_limit(r->c);
        chat_progress p = chat_step_run(r->c, &run, &err);
        const char *text = run.text;
        if (p == CHAT_GENERATING && (signals_interrupted || signals_quit)) {
            /* Ctrl-C came while the step ran: its tokens are not shown, nor kept */
            chat_stop_at(r->c, before, &err);
            put_reply(&out, newest_reply(r->c), streamed, true);
            fprintf(stderr, "%s[stopped]\n", r->tty ? "\n" : "");
            break;
        }
        if (p != CHAT_GENERATING) {
            streamed += strlen(text); /* a step's tokens may end with the stop token */
            put_reply(&out, newest_reply(r->c), streamed, true);
            if (p == CHAT_REPLY_FULL)
                fprintf(stderr, "\nllmchat: the context is full: the reply was cut; the next "
                                "message drops the oldest turns\n");
            if (p == CHAT_REPLY_ERROR) {
                fprintf(stderr, "\nllmchat: %s\n", err.text);
                r->status = 1;
            }
            break;
        }
        streamed += strlen(text);
        put_reply(&out, newest_reply(r->c), streamed, false);
    }
    signals_interrupted = 0;
    autosave(r); /* before the reply's newline: a reply seen whole is a reply saved */
    putchar('\n');
    fflush(stdout);
}

/* ---- what the slash commands (command.c) are given ---- */

static void host_say(command_host *h, const char *text)
{
    (void)h;
    fprintf(stderr, "llmchat: %s\n", text);
}

static void host_changed(command_host *h, command_change what)
{
    repl *r = h->user;
    if (what != COMMAND_CHANGED_SETTINGS)
        r->changed = true;
}

static void host_quit(command_host *h)
{
    ((repl *)h->user)->quit = true;
}

static void host_help(command_host *h)
{
    print_help(((repl *)h->user)->lines ? stderr : stdout); /* stdout: replies alone */
}

static command_host command_host_of(repl *r)
{
    return (command_host){.front_end = COMMAND_REPL, .s = r->s, .user = r, .say = host_say,
                          .changed = host_changed, .quit = host_quit, .help = host_help};
}

static void handle_line(repl *r, char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    const char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return;
    command_call cmd;
    if (command_parse(line, &cmd)) {
        command_host h = command_host_of(r);
        command_run(&h, &cmd);
        autosave(r);
    } else {
        reply_to(r, line);
    }
}

/* ---- terminal: readline (GNU readline's callback interface, so Ctrl-C can clear the
 * line) ---- */

static repl *active;

/* A line read (NULL: the end of input): into the history, then handled. Frees it. */
static void take_line(char *line)
{
    if (!line) {
        active->quit = true;
        fputc('\n', active->term);
        return;
    }
    if (*line) {
        add_history(line);
        active->history_added++;
    }
    handle_line(active, line);
    free(line);
}

#ifdef HAVE_LIBEDIT
/* libedit's rl_callback_read_char writes through a freed pointer once a line outgrows
 * 1 KB (3.1-20221030; docs/testing.md): its readline() instead, which Ctrl-C ends with
 * NULL and EINTR (the handler has no SA_RESTART), dropping the line being typed. */
static void read_lines(repl *r)
{
    while (!r->quit && !signals_quit) {
        errno = 0;
        char *line = readline("> ");
        if (signals_quit) {
            free(line);
            break;
        }
        if (!line && errno == EINTR) {
            signals_interrupted = 0;
            fputc('\n', r->term);
            continue;
        }
        take_line(line);
    }
}
#else
static void on_readline(char *line)
{
    rl_callback_handler_remove();
    take_line(line);
    if (!active->quit)
        rl_callback_handler_install("> ", on_readline);
}

static void read_lines(repl *r)
{
    rl_callback_handler_install("> ", on_readline);
    tty_reader_install();
    while (!r->quit && !signals_quit) {
        if (tty_reader_pending()) { /* read already: select() would not see it */
            rl_callback_read_char();
            continue;
        }
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(STDIN_FILENO, &fds);
        int ready = select(STDIN_FILENO + 1, &fds, NULL, NULL, NULL);
        if (signals_quit)
            break;
        if (signals_interrupted) {
            signals_interrupted = 0;
            rl_replace_line("", 0);
            rl_crlf();
            rl_on_new_line();
            rl_redisplay();
            continue;
        }
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            break;
        rl_callback_read_char();
    }
    rl_callback_handler_remove();
}
#endif

/* Where the prompt and the echo of what is typed go: stdout on a terminal, else (stdout
 * redirected to a file: only replies go there) stderr when it is the terminal, else
 * the controlling terminal itself. The caller closes what is not stdout or stderr. */
static FILE *terminal_out(void)
{
    if (isatty(STDOUT_FILENO))
        return stdout;
    if (isatty(STDERR_FILENO))
        return stderr;
    FILE *f = fopen("/dev/tty", "w");
    return f ? f : stderr;
}

static void run_terminal(repl *r)
{
    active = r;
    /* the terminal's characters in the environment's encoding, as GNU readline sets
     * LC_CTYPE itself; libedit does not, and in the C locale drops every byte above 127
     * of what is typed or pasted */
    setlocale(LC_CTYPE, "");
    r->term = terminal_out();
    rl_outstream = r->term;
    char *history_path = r->o->history_size > 0 ? session_state_file("chat_history") : NULL;
    stifle_history(r->o->history_size);
    if (history_path)
        read_history(history_path);
    rl_catch_signals = 0;
    const model *m = r->s->m;
    fprintf(stderr, "llmchat: chatting with %s (%s, %s). /help for commands, Ctrl-D to leave.\n",
            m->name, m->weights_label, m->weights_size);
    fprintf(stderr, "llmchat: %s\n", r->s->note); /* the model's source and the template */
    if (r->o->prompt)
        reply_to(r, r->o->prompt);
    read_lines(r);
    if (history_path) {
        /* this run's lines appended: another session's, ended meanwhile, stay */
        int e = history_file_save(history_path, r->history_added, r->o->history_size);
        if (e != 0)
            fprintf(stderr, "llmchat: cannot write the input history %s: %s\n", history_path,
                    strerror(e));
        free(history_path);
    }
    if (r->term != stdout && r->term != stderr)
        fclose(r->term);
}

/* A NUL byte cannot be part of a message (C strings end there): it becomes U+2400
 * (the symbol for NUL, as the panes show control bytes), so no text after it is
 * lost. Returns the line, grown when needed (*cap updated), or NULL on no memory. */
static char *replace_nuls(char *line, size_t len, size_t *cap)
{
    size_t nuls = 0;
    for (size_t i = 0; i < len; i++)
        nuls += line[i] == '\0';
    if (nuls == 0)
        return line;
    size_t need = len + 2 * nuls + 1;
    if (need > *cap) {
        char *grown = realloc(line, need);
        if (!grown)
            return NULL;
        line = grown;
        *cap = need;
    }
    for (size_t i = len; i-- > 0;) { /* from the end, moving the tail right */
        if (line[i] != '\0')
            continue;
        memmove(line + i + 3, line + i + 1, len - i - 1);
        memcpy(line + i, "\xe2\x90\x80", 3);
        len += 2;
    }
    line[len] = '\0';
    return line;
}

static void run_pipe(repl *r)
{
    if (r->o->prompt)
        reply_to(r, r->o->prompt);
    char *line = NULL;
    size_t cap = 0;
    while (!r->quit && !signals_quit) {
        errno = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
            if (errno == EINTR) { /* SIGINT between messages: say it was seen */
                clearerr(stdin);
                signals_interrupted = 0;
                if (!signals_quit)
                    fprintf(stderr, "llmchat: interrupted; a second Ctrl-C within a second saves and quits\n");
                continue;
            }
            if (ferror(stdin)) {
                fprintf(stderr, "llmchat: reading standard input: %s\n",
                        strerror(errno ? errno : EIO));
                r->status = 1;
            }
            break;
        }
        char *whole = replace_nuls(line, (size_t)n, &cap);
        if (!whole) {
            fprintf(stderr, "llmchat: out of memory reading a line\n");
            r->status = 1;
            break;
        }
        line = whole;
        handle_line(r, line);
    }
    free(line);
}

int cli_repl(session *s)
{
    repl r = {.s = s, .o = s->o, .c = s->c, .tty = isatty(STDIN_FILENO), .term = stderr};
    r.lines = !r.tty || !isatty(STDOUT_FILENO);
    command_host h = command_host_of(&r);
    if (!session_resume(s, &h))
        return 1;
    r.changed = false; /* a resumed chat's file holds what was just read */
    if (r.tty)
        run_terminal(&r);
    else
        run_pipe(&r);
    if (signals_quit) {
        /* SIGTERM, SIGHUP or SIGINT twice: readline gave the terminal back */
        fputc('\n', stderr);
        r.status = session_quit_on_signal(s);
    }
    if (r.n_answered > 0)
        session_say_guesses(s);
    if (r.n_asked > 0 && r.n_answered == 0) {
        fprintf(stderr, "llmchat: no message could be answered\n");
        r.status = 1;
    }
    return r.status;
}
