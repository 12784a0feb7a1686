/* history_file.c — the line editor's history saved to its file (see history_file.h). */
#include "config.h"

#include "history_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#else
#include <readline/history.h>
#endif

#ifdef HAVE_LIBEDIT

int history_file_save(const char *path, int n_added, int max_lines)
{
    (void)max_lines; /* the list is stifled to it: write_history writes no more */
    if (n_added <= 0)
        return 0;
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return ENOMEM;
    snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
    int e = write_history(tmp);
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0)
        unlink(tmp);
    free(tmp);
    return e;
}

#else

/* Writes all n bytes at buf to fd; the bytes written into *done. 0 or an errno. */
static int write_all(int fd, const char *buf, size_t n, size_t *done)
{
    *done = 0;
    while (*done < n) {
        ssize_t w = write(fd, buf + *done, n - *done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        *done += (size_t)w;
    }
    return 0;
}

int history_file_save(const char *path, int n_added, int max_lines)
{
    int n = n_added < history_length ? n_added : history_length;
    if (n <= 0)
        return 0;
    /* this run's lines, a line an entry, appended in one write where the system allows:
     * another session's lines appended meanwhile stay whole around them */
    size_t len = 0;
    for (int i = history_length - n; i < history_length; i++) {
        HIST_ENTRY *h = history_get(history_base + i);
        len += (h && h->line ? strlen(h->line) : 0) + 1;
    }
    char *text = malloc(len);
    if (!text)
        return ENOMEM;
    size_t at = 0;
    for (int i = history_length - n; i < history_length; i++) {
        HIST_ENTRY *h = history_get(history_base + i);
        size_t k = h && h->line ? strlen(h->line) : 0;
        if (k)
            memcpy(text + at, h->line, k);
        at += k;
        text[at++] = '\n';
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        free(text);
        return e;
    }
    struct stat before, after;
    bool sized = fstat(fd, &before) == 0;
    size_t done;
    int e = write_all(fd, text, len, &done);
    free(text);
    /* cut short (a full disk): what went in goes again, unless another session has
     * appended since (then the file stays as it is) */
    if (e != 0 && sized && fstat(fd, &after) == 0 && after.st_size == before.st_size + (off_t)done) {
        int undone = ftruncate(fd, before.st_size);
        (void)undone;
    }
    if (close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0)
        history_truncate_file(path, max_lines);
    return e;
}

#endif
