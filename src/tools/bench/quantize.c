/* bench/quantize.c — runs llama-quantize for --quant (see bench/quantize.h). */
#define _GNU_SOURCE
#include "quantize.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *quantize_find(const char *path, const char *llama_bench, char *why, size_t why_size)
{
    static char beside[4096];
    const char *p = path;
    if (!p || !*p)
        p = getenv("LLMCHAT_ANCHOR_LLAMA_QUANTIZE");
    if ((!p || !*p) && llama_bench) {
        const char *slash = strrchr(llama_bench, '/');
        int dir = slash ? (int)(slash - llama_bench) + 1 : 0;
        snprintf(beside, sizeof beside, "%.*sllama-quantize", dir, llama_bench);
        p = beside;
    }
    if (!p || !*p) {
        snprintf(why, why_size,
                 "no llama-quantize: give --quantize PATH, set LLMCHAT_ANCHOR_LLAMA_QUANTIZE, or "
                 "give a llama-bench with one beside it (--anchor)");
        return NULL;
    }
    if (access(p, X_OK) != 0) {
        snprintf(why, why_size, "cannot run llama-quantize at %s: %s", p, strerror(errno));
        return NULL;
    }
    return p;
}

int quantize_type_ok(const char *type)
{
    static const char *const types[] = {"q4_0",   "q4_1",   "q5_0",   "q5_1", "q4_k_m",
                                        "q4_k_s", "q5_k_m", "q5_k_s", "q6_k", "mxfp4_moe"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i]))
            return 1;
    return 0;
}

int quantize_file(const char *llama_quantize, const char *in, const char *out, const char *type,
                  int threads, char *why, size_t why_size)
{
    if (access(out, R_OK) == 0)
        return 0;
    char upper[16], tmp[4200], nthreads[16];
    size_t i = 0;
    for (; type[i] && i + 1 < sizeof upper; i++)
        upper[i] = (char)toupper((unsigned char)type[i]);
    upper[i] = '\0';
    snprintf(tmp, sizeof tmp, "%s.part", out);
    snprintf(nthreads, sizeof nthreads, "%d", threads > 0 ? threads : 1);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "cannot start llama-quantize: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(126);
        execl(llama_quantize, llama_quantize, "--allow-requantize", in, tmp, upper, nthreads,
              (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(why, why_size, "waiting for llama-quantize: %s", strerror(errno));
            return -1;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || rename(tmp, out) != 0) {
        unlink(tmp);
        snprintf(why, why_size, "%s %s %s %s failed (status %d)", llama_quantize, in, out, upper,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}
