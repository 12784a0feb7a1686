/* history_file.c — the line editor's history saved to its file (see history_file.h). */
#include "config.h"

#include "history_file.h"

#include <errno.h>
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

int history_file_save(const char *path, int n_added, int max_lines)
{
    int n = n_added < history_length ? n_added : history_length;
    if (n <= 0)
        return 0;
    struct stat before;
    bool existed = stat(path, &before) == 0;
    /* the bytes the append must add: a line an entry */
    off_t want = 0;
    for (int i = history_length - n; i < history_length; i++) {
        HIST_ENTRY *h = history_get(history_base + i);
        want += h && h->line ? (off_t)strlen(h->line) + 1 : 1;
    }
    int e = existed ? append_history(n, path) : write_history(path);
    struct stat after;
    if (e == 0 && (stat(path, &after) != 0 || after.st_size != (existed ? before.st_size : 0) + want))
        e = ENOSPC; /* cut short (readline does not say): taken back below */
    if (e != 0) { /* what went in goes again (where that fails too, it stays) */
        int undone = existed ? truncate(path, before.st_size) : unlink(path);
        (void)undone;
        return e;
    }
    history_truncate_file(path, max_lines);
    return 0;
}

#endif
