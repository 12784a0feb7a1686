/* bench/anchor.c — runs llama.cpp's llama-bench and reads its JSON (see bench/anchor.h).
 *
 * The JSON is an array of flat objects, one per test; only three keys of each are read
 * (n_prompt, n_gen, avg_ts), by scanning each object's text: no general JSON parser. */
#define _GNU_SOURCE
#include "anchor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shell_quote.h"

const char *anchor_find(const char *path, char *why, size_t why_size)
{
    const char *p = path;
    if (!p || !*p)
        p = getenv("LLMCHAT_ANCHOR_LLAMA_BENCH");
    if (!p || !*p) {
        snprintf(why, why_size,
                 "no llama-bench: give --anchor PATH or set LLMCHAT_ANCHOR_LLAMA_BENCH");
        return NULL;
    }
    if (access(p, X_OK) != 0) {
        snprintf(why, why_size, "cannot run llama-bench at %s: %s", p, strerror(errno));
        return NULL;
    }
    return p;
}

/* The number after "key": inside obj[0..len), or -1. */
static double key_number(const char *obj, size_t len, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    size_t k = strlen(pat);
    for (size_t i = 0; i + k <= len; i++)
        if (memcmp(obj + i, pat, k) == 0) {
            const char *v = obj + i + k;
            while (*v == ' ')
                v++;
            char *end;
            double x = strtod(v, &end);
            return end == v ? -1.0 : x;
        }
    return -1.0;
}

double anchor_json_avg_ts(const char *json, int n_prompt, int n_gen)
{
    for (const char *o = strchr(json, '{'); o; o = strchr(o + 1, '{')) {
        const char *end = strchr(o, '}');
        if (!end)
            break;
        size_t len = (size_t)(end - o);
        if (key_number(o, len, "n_prompt") == n_prompt && key_number(o, len, "n_gen") == n_gen)
            return key_number(o, len, "avg_ts");
        o = end;
    }
    return -1.0;
}

/* Reads all of f into a new string (NULL on failure). */
static char *slurp(FILE *f)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0)
            break;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* How a child ended, from pclose's status, for a message: the shell between reports a
 * signal as 128 + its number. */
static void describe_status(int status, char *buf, size_t size)
{
    int sig = 0;
    if (status == -1)
        snprintf(buf, size, "it could not be started");
    else if (WIFSIGNALED(status))
        sig = WTERMSIG(status);
    else if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) - 128 < NSIG)
        sig = WEXITSTATUS(status) - 128;
    else if (WIFEXITED(status))
        snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
    else
        snprintf(buf, size, "status %d", status);
    if (sig)
        snprintf(buf, size, "killed by signal %d, %s%s", sig, strsignal(sig),
                 sig == SIGILL ? ": an instruction this CPU lacks (built for another machine?)" : "");
}


int anchor_run(const char *llama_bench, const char *gguf, int n_prompt, int n_gen, int threads,
               int reps, anchor_result *out, char *why, size_t why_size)
{
    char errpath[] = "/tmp/llmchat-anchor-XXXXXX";
    int fd = mkstemp(errpath);
    if (fd < 0) {
        snprintf(why, why_size, "no temporary file: %s", strerror(errno));
        return -1;
    }
    close(fd);
    char cmd[8192] = "";
    shell_quote(cmd, sizeof cmd, llama_bench);
    strcat(cmd, " -m ");
    shell_quote(cmd, sizeof cmd, gguf);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " -p %d -n %d -t %d", n_prompt, n_gen, threads);
    if (reps > 0) {
        n = strlen(cmd);
        snprintf(cmd + n, sizeof cmd - n, " -r %d", reps);
    }
    strcat(cmd, " -o json 2>");
    shell_quote(cmd, sizeof cmd, errpath);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    char *json = p ? slurp(p) : NULL;
    int status = p ? pclose(p) : -1;
    out->prefill_tok_s = json ? anchor_json_avg_ts(json, n_prompt, 0) : -1;
    out->decode_tok_s = json ? anchor_json_avg_ts(json, 0, n_gen) : -1;
    free(json);
    int rc = 0;
    if (status != 0 || out->prefill_tok_s <= 0 || out->decode_tok_s <= 0) {
        char last[256] = "";
        FILE *e = fopen(errpath, "r");
        for (char line[256]; e && fgets(line, sizeof line, e);)
            if (line[0] != '\n')
                snprintf(last, sizeof last, "%s", line);
        if (e)
            fclose(e);
        last[strcspn(last, "\n")] = '\0';
        char how[160];
        if (status == 0)
            snprintf(how, sizeof how, "its JSON gave no prompt and generation rates");
        else
            describe_status(status, how, sizeof how);
        snprintf(why, why_size, "llama-bench failed (%s)%s%s", how, last[0] ? ": " : "", last);
        rc = -1;
    }
    unlink(errpath);
    return rc;
}
