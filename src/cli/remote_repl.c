/* remote_repl.c — `--server URL -m chat`: the plain chat over a served model
 * (remote_chat.h), for pipes and scripts: one message a line in; its reply streamed
 * out, and unless stdin and stdout are both terminals on one line (a newline written
 * as \n, a backslash as \\; an empty line when the message could not be answered, why
 * on stderr). The server renders and tokenizes the dialog. /set changes what the next
 * request sends; /reset, /system, /save, /load and /resume work on the dialog, which is
 * autosaved as a local chat is (served.h); /help and /quit work; the other commands
 * say that they need a local model. --trace writes the server's records. Ctrl-C
 * cancels the reply being written (the chat goes on); SIGTERM, SIGHUP or Ctrl-C twice
 * save and quit. The exit status is 1 when a reply failed or no message could be
 * answered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "remote_chat.h"
#include "served.h"
#include "signals.h"
#include "textfmt.h"
#include "std_streams.h"

typedef struct {
    served_session *served;
    remote_chat *rc; /* served->rc */
    bool escape;   /* one line a reply */
    bool quit;
    int asked, answered;
    int status;    /* 1 once a reply failed */
    bool changed;  /* a command changed the dialog: saved once it is done */
} served_repl;

/* Saves the chat (served_autosave_now); what it has to say (a failure's warning, the
 * new file it goes on in) goes to stderr. */
static void autosave(served_session *s)
{
    char msg[700];
    served_autosave_now(s, msg, sizeof msg);
    if (*msg)
        fprintf(stderr, "llmchat: %s\n", msg);
}

/* Writes bytes made safe for a terminal, escaped onto one line when asked. */
static void put_text(const served_repl *r, textfmt_stream *ts, const char *s, size_t n)
{
    char safe[4 * 256 + 16];
    for (size_t at = 0; at < n; at += 256) {
        size_t m = textfmt_stream_put(ts, s + at, n - at < 256 ? n - at : 256, safe, sizeof safe);
        for (size_t i = 0; i < m; i++) {
            const char *esc = !r->escape ? NULL : safe[i] == '\n' ? "\\n" : safe[i] == '\\' ? "\\\\" : NULL;
            if (esc)
                fputs(esc, stdout);
            else
                putchar(safe[i]);
        }
    }
}

static void reply_to(served_repl *r, const char *user)
{
    llm_err err;
    r->asked++;
    if (remote_chat_begin(r->rc, user, r->served->steps, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        if (r->escape)
            putchar('\n');
        fflush(stdout);
        return;
    }
    r->answered++;
    textfmt_stream ts = {0};
    signals_interrupted = 0;
    for (;;) {
        int n_new;
        remote_chat_progress p = remote_chat_step(r->rc, 100, &n_new, &err);
        int count = remote_chat_count(r->rc);
        const int *ids = remote_chat_tokens(r->rc);
        for (int pos = count - n_new; pos < count; pos++) {
            const char *piece = remote_chat_piece(r->rc, ids[pos]);
            if (piece)
                put_text(r, &ts, piece, strlen(piece));
        }
        if (!std_streams_flush()) { /* nowhere to write to: said by main, at the end */
            remote_chat_stop(r->rc);
            r->quit = true;
            r->status = 1;
            break;
        }
        if (p == REMOTE_CHAT_ERROR && !signals_interrupted) {
            fprintf(stderr, "%sllmchat: %s\n", r->escape ? "" : "\n", err.text);
            r->status = 1;
            break;
        }
        if (p == REMOTE_CHAT_DONE)
            break;
        if (p == REMOTE_CHAT_ERROR || signals_interrupted || signals_quit) { /* Ctrl-C */
            remote_chat_stop(r->rc);
            fprintf(stderr, "%s[stopped]\n", r->escape ? "" : "\n");
            break;
        }
    }
    signals_interrupted = 0;
    putchar('\n');
    fflush(stdout);
    autosave(r->served);
}

/* ---- the slash commands (command.c's table) ---- */

static void host_say(command_host *h, const char *text)
{
    (void)h;
    fprintf(stderr, "llmchat: %s\n", text);
}

static void host_read_only(command_host *h)
{
    host_say(h, "this needs a local model: the chat runs on a server (--server)");
}

/* Marks the dialog changed; it is saved when the command is done (a /load first
 * chooses the file it goes on in: saving at once would write the loaded chat over the
 * one it replaces). */
static void host_changed(command_host *h, command_change what)
{
    served_repl *r = h->user;
    if (what != COMMAND_CHANGED_SETTINGS)
        r->changed = true;
}

static void host_quit(command_host *h)
{
    ((served_repl *)h->user)->quit = true;
}

static void host_help(command_host *h)
{
    (void)h;
    fprintf(stderr, "llmchat: a chat over a server: type a message; /set NAME VALUE changes the "
                    "sampler settings the next request sends; /save FILE, /load FILE, /resume "
                    "[N], /reset, /system TEXT; /quit leaves\n");
}

/* The commands' host: the served chat. */
static command_host host_of(served_repl *r)
{
    return (command_host){.front_end = COMMAND_REPL, .user = r, .say = host_say,
                          .changed = host_changed, .quit = host_quit, .help = host_help,
                          .read_only = host_read_only, .served = r->served};
}

static void handle_line(served_repl *r, char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (!line[strspn(line, " \t")])
        return;
    command_call cmd;
    if (!command_parse(line, &cmd)) {
        reply_to(r, line);
        return;
    }
    command_host h = host_of(r);
    command_run(&h, &cmd);
    if (r->changed) {
        r->changed = false;
        autosave(r->served);
    }
}

int cli_remote_repl(const app_options *o)
{
    bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    served_session served;
    int rc = served_open(&served, o, "chat", terminal);
    if (rc != 0)
        return rc;
    signals_install();
    served_repl r = {.served = &served, .rc = served.rc, .escape = !terminal};
    if (o->resume_path) {
        command_host h = host_of(&r);
        if (command_load(&h, o->resume_path, true) == COMMAND_LOADED)
            autosave_use(&served.save, o->resume_path);
        r.changed = false; /* the file holds what was just read */
    }
    if (o->prompt)
        reply_to(&r, o->prompt);
    char *line = NULL;
    size_t cap = 0;
    while (!r.quit && !signals_quit) {
        errno = 0;
        if (getline(&line, &cap, stdin) < 0) {
            if (errno == EINTR) { /* Ctrl-C between messages */
                clearerr(stdin);
                signals_interrupted = 0;
                continue;
            }
            if (ferror(stdin)) {
                fprintf(stderr, "llmchat: reading standard input: %s\n", strerror(errno ? errno : EIO));
                r.status = 1;
            }
            break;
        }
        handle_line(&r, line);
    }
    free(line);
    int quit = served_quit_on_signal(&served);
    if (!quit)
        autosave(&served);
    int closed = served_close(&served);
    if (quit)
        return quit;
    if (r.asked > 0 && r.answered == 0) {
        fprintf(stderr, "llmchat: no message could be answered\n");
        return 1;
    }
    return r.status ? r.status : closed;
}
