/* remote_repl.c — `--server URL -m chat`: the plain chat over a served model
 * (remote_chat.h), for pipes and scripts: one message a line in; its reply streamed
 * out, and unless stdin and stdout are both terminals on one line (a newline written
 * as \n, a backslash as \\; an empty line when the message could not be answered, why
 * on stderr). The server renders and tokenizes the dialog. /set changes what the next
 * request sends, /help and /quit work; the other commands say that they need a local
 * model. Ctrl-C cancels the reply being written (the chat goes on); the exit status is
 * 1 when a reply failed or no message could be answered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "remote_chat.h"
#include "remote_connect.h"
#include "signals.h"
#include "textfmt.h"

typedef struct {
    remote_chat *rc;
    int steps;     /* the replies' step limit (-n, /set steps; 0: none) */
    bool escape;   /* one line a reply */
    bool quit;
    int asked, answered;
    int status;    /* 1 once a reply failed */
} served_repl;

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
    if (remote_chat_begin(r->rc, user, r->steps, &err) != LLM_OK) {
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
        fflush(stdout);
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

static void host_changed(command_host *h, command_change what)
{
    (void)h, (void)what;
}

static void host_quit(command_host *h)
{
    ((served_repl *)h->user)->quit = true;
}

static void host_help(command_host *h)
{
    (void)h;
    fprintf(stderr, "llmchat: a chat over a server: type a message; /set NAME VALUE changes the "
                    "sampler settings the next request sends; /quit leaves\n");
}

static void host_get_settings(command_host *h, live_settings *out)
{
    served_repl *r = h->user;
    *out = (live_settings){.sampler = *remote_chat_sampler(r->rc), .steps = r->steps};
}

static void host_put_settings(command_host *h, const live_settings *in)
{
    served_repl *r = h->user;
    remote_chat_set_sampler(r->rc, &in->sampler);
    r->steps = in->steps;
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
    command_host h = {.front_end = COMMAND_REPL, .user = r, .say = host_say,
                      .changed = host_changed, .quit = host_quit, .help = host_help,
                      .read_only = host_read_only, .get_settings = host_get_settings,
                      .put_settings = host_put_settings};
    command_run(&h, &cmd);
}

int cli_remote_repl(const app_options *o)
{
    signals_install_sigint();
    remote *rem = remote_connect(o, o->server_url);
    if (!rem)
        return 1;
    llm_err err;
    served_repl r = {.steps = o->steps < 0 ? 0 : o->steps,
                     .escape = !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)};
    if (remote_chat_new(rem, o->system, &o->sampler, &r.rc, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        remote_close(rem);
        return 1;
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
            break;
        }
        handle_line(&r, line);
    }
    free(line);
    remote_chat_free(r.rc);
    remote_close(rem);
    if (r.asked > 0 && r.answered == 0) {
        fprintf(stderr, "llmchat: no message could be answered\n");
        return 1;
    }
    return r.status;
}
