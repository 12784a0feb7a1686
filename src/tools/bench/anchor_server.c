/* bench/anchor_server.c — llama-server as the speculative-decoding anchor (see
 * bench/anchor_server.h). The server's log goes to a temporary file, whose last line
 * is the message when it does not come up. */
#define _GNU_SOURCE
#include "anchor_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote.h"

/* Seconds a server may take to load its models and answer. */
enum { SERVER_START_S = 300 };

const char *anchor_server_find(const char *path, const char *llama_bench, char *why,
                               size_t why_size)
{
    static char beside[4096];
    const char *p = path;
    if (!p || !*p)
        p = getenv("LLMCHAT_ANCHOR_LLAMA_SERVER");
    if ((!p || !*p) && llama_bench) {
        const char *slash = strrchr(llama_bench, '/');
        int dir = slash ? (int)(slash - llama_bench) + 1 : 0;
        snprintf(beside, sizeof beside, "%.*sllama-server", dir, llama_bench);
        p = beside;
    }
    if (!p || !*p) {
        snprintf(why, why_size, "no llama-server: give --anchor-server PATH, set "
                                "LLMCHAT_ANCHOR_LLAMA_SERVER, or give a llama-bench with one "
                                "beside it (--anchor)");
        return NULL;
    }
    if (access(p, X_OK) != 0) {
        snprintf(why, why_size, "cannot run llama-server at %s: %s", p, strerror(errno));
        return NULL;
    }
    return p;
}

/* A loopback port nobody listens on now (0 when none could be had). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* The last non-empty line of the file at path into buf. */
static void last_line(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    for (char line[512]; f && fgets(line, sizeof line, f);)
        if (line[0] != '\n')
            snprintf(buf, size, "%.255s", line);
    if (f)
        fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

static pid_t start_server(const char *server, const char *model, const char *draft, int k,
                          int threads, int ctx, int port, const char *log)
{
    char t[16], c[16], p[16], kk[16];
    snprintf(t, sizeof t, "%d", threads);
    snprintf(c, sizeof c, "%d", ctx);
    snprintf(p, sizeof p, "%d", port);
    snprintf(kk, sizeof kk, "%d", k);
    const char *argv[40] = {server, "-m", model, "-t", t, "-tb", t, "-c", c, "-np", "1",
                            "--host", "127.0.0.1", "--port", p};
    int n = 15;
    if (draft) {
        const char *more[] = {"-md", draft, "--spec-type", "draft-simple", "--spec-draft-n-max",
                              kk, "--spec-draft-n-min", "0", "-td", t, "-tbd", t};
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
            argv[n++] = more[i];
    }
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_TRUNC);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        execv(server, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void stop_server(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; i++) { /* 10 s, then the hard way */
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

typedef struct {
    anchor_server_result *out;
} collect;

static bool keep_token(void *user, const remote_token *t)
{
    anchor_server_result *r = ((collect *)user)->out;
    if (r->generated < DRAFT_TOKENS_MAX)
        r->tokens[r->generated] = t->id;
    r->generated++;
    return true;
}

int anchor_server_run(const char *server, const char *model, const char *draft, int k,
                      int threads, const int *prompt, int n_prompt, int gen,
                      anchor_server_result *out, char *why, size_t why_size)
{
    char log[] = "/tmp/llmchat-anchor-server-XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0) {
        snprintf(why, why_size, "no temporary file: %s", strerror(errno));
        return -1;
    }
    close(fd);
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    int ctx = n_prompt + gen + k + 64;
    pid_t pid = port ? start_server(server, model, draft, k, threads, ctx, port, log) : -1;
    if (pid < 0) {
        snprintf(why, why_size, "cannot start llama-server: %s", port ? strerror(errno) : "no port");
        unlink(log);
        return -1;
    }
    remote_options ro = {.url = url};
    http_options_default(&ro.http);
    ro.http.retries = 0;
    ro.http.connect_timeout_s = 2;
    remote *r = NULL;
    llm_err err = {0};
    int rc = -1;
    time_t t0 = time(NULL);
    while (remote_open(&ro, &r, &err) != LLM_OK) { /* loading: refused, or 503 */
        r = NULL;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            char last[256];
            last_line(log, last, sizeof last);
            snprintf(why, why_size, "llama-server stopped (status %d)%s%s",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, last[0] ? ": " : "", last);
            unlink(log);
            return -1;
        }
        if (time(NULL) - t0 > SERVER_START_S) {
            snprintf(why, why_size, "llama-server did not answer in %d s: %s", SERVER_START_S,
                     err.text);
            goto done;
        }
        nanosleep(&(struct timespec){0, 200000000}, NULL);
    }
    for (int pass = 0; pass < 2; pass++) { /* a warm-up, then the one timed */
        remote_request q = {.prompt = prompt, .n_prompt = n_prompt, .max_tokens = gen,
                            .top_n = 1, .ignore_eos = true, .uncached = true};
        sampler_config_default(&q.sampler);
        q.sampler.temperature = 0;
        memset(out, 0, sizeof *out);
        collect c = {out};
        remote_result res;
        if (remote_complete(r, &q, keep_token, &c, &res, &err) != LLM_OK) {
            snprintf(why, why_size, "llama-server: %s", err.text);
            goto done;
        }
        out->tok_s = res.server_decode_tok_s;
        out->drafted = res.server_drafted;
        out->accepted = res.server_draft_accepted;
        out->client_timed = false;
        if (out->tok_s <= 0 && out->generated > 1 && res.total_ms > res.first_token_ms) {
            /* no timings in the last event: the tokens' arrival, as --server times them */
            out->tok_s = (out->generated - 1) / ((res.total_ms - res.first_token_ms) / 1e3);
            out->client_timed = true;
        }
    }
    if (out->tok_s <= 0)
        snprintf(why, why_size, "llama-server gave no timings and fewer than 2 tokens");
    else
        rc = 0;
done:
    remote_close(r);
    stop_server(pid);
    unlink(log);
    return rc;
}
