/* progress.c — the loading progress line on stderr (see progress.h). */
#include "progress.h"

#include <stdio.h>

static const char *program = "llmchat";

void progress_program(const char *name)
{
    program = name;
}

void progress_show(void *user, uint64_t done, uint64_t total)
{
    static int shown = -1;
    int pct = total ? (int)(100 * done / total) : 100;
    if (pct == shown)
        return;
    shown = pct;
    fprintf(stderr, "\r%s: loading %s: %3d%%", program, (const char *)user, pct);
    if (done >= total)
        fputc('\n', stderr);
    fflush(stderr);
}
