/* vector_files.c — where control vectors are written and found (vector_files.h).
 *
 * Owns nothing: path arithmetic over xdg.h, and the directory created for make. */
#define _POSIX_C_SOURCE 200809L
#include "vector_files.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "xdg.h"

static bool has_gguf(const char *s)
{
    size_t n = strlen(s);
    return n > 5 && !strcmp(s + n - 5, ".gguf");
}

const char *vector_files_dir(char *buf, size_t size)
{
    return xdg_path("XDG_DATA_HOME", ".local/share", "llmchat/vectors", buf, size);
}

/* mkdir -p dir; false with errno set when a part cannot be made. */
static bool make_dirs(char *dir)
{
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        bool ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
        *p = c;
        if (!ok)
            return false;
        if (!c)
            return true;
    }
}

llm_status vector_files_make_path(const char *arg, char *path, size_t psize, char *name,
                                  size_t nsize, llm_err *err)
{
    const char *ext = has_gguf(arg) ? "" : ".gguf";
    const char *base = strrchr(arg, '/');
    base = base ? base + 1 : arg;
    if (!*base)
        return llm_fail(err, LLM_ERR_ARG, "/vector make: '%s' names a directory, not a vector", arg);
    snprintf(name, nsize, "%.*s", (int)(strlen(base) - (*ext ? 0 : 5)), base);
    if (strchr(arg, '/')) {
        if ((size_t)snprintf(path, psize, "%s%s", arg, ext) >= psize)
            return llm_fail(err, LLM_ERR_ARG, "/vector make: the path is too long");
        return LLM_OK;
    }
    char dir[4096];
    if (!vector_files_dir(dir, sizeof dir))
        return llm_fail(err, LLM_ERR_ARG, "/vector make: neither XDG_DATA_HOME nor HOME says where "
                                          "vectors go: give a path (./%s)", arg);
    if (!make_dirs(dir))
        return llm_fail(err, LLM_ERR_IO, "/vector make: cannot create %s: %s", dir, strerror(errno));
    if ((size_t)snprintf(path, psize, "%s/%s%s", dir, arg, ext) >= psize)
        return llm_fail(err, LLM_ERR_ARG, "/vector make: the path is too long");
    return LLM_OK;
}

bool vector_files_find(const char *arg, char *path, size_t size)
{
    struct stat st;
    snprintf(path, size, "%s", arg);
    if (strchr(arg, '/') || stat(arg, &st) == 0)
        return false;
    char dir[4096], in_dir[4096 + 256];
    if (!vector_files_dir(dir, sizeof dir))
        return false;
    snprintf(in_dir, sizeof in_dir, "%s/%s%s", dir, arg, has_gguf(arg) ? "" : ".gguf");
    if (stat(in_dir, &st) != 0)
        return false;
    snprintf(path, size, "%s", in_dir);
    return true;
}
