/* progress.c — the progress line on stderr (see progress.h). */
#include "progress.h"

#include <stdio.h>

static const char *program = "llmchat";

void progress_program(const char *name)
{
    program = name;
}

void progress_show_verb(const char *verb, const char *file, uint64_t done, uint64_t total)
{
    static int shown = -1;
    static const char *shown_verb;
    int pct = total ? (int)(100 * done / total) : 100;
    if (pct == shown && verb == shown_verb)
        return;
    shown = pct;
    shown_verb = verb;
    fprintf(stderr, "\r%s: %s %s: %3d%%", program, verb, file, pct);
    if (done >= total)
        fputc('\n', stderr);
    fflush(stderr);
}

void progress_show(void *user, uint64_t done, uint64_t total)
{
    progress_show_verb("loading", user, done, total);
}
