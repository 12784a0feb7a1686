/* file_replace.c — writing a file through a temporary one (see file_replace.h). */
#include "file_replace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

llm_status file_replace(const char *path, file_writer fn, const void *ctx, llm_err *err)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory writing %s", path);
    snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        llm_status st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    llm_status st = fn(f, path, ctx, err);
    if (st == LLM_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && st == LLM_OK)
        st = llm_fail(err, LLM_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    if (st == LLM_OK && rename(tmp, path) != 0)
        st = llm_fail(err, LLM_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (st != LLM_OK)
        unlink(tmp);
    free(tmp);
    return st;
}
