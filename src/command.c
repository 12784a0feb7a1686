/* command.c — the slash-command table and its parser (see command.h).
 *
 * Owns the table. Knows nothing of what a command does: the front ends run them. */
#include "command.h"

#include <stdio.h>
#include <string.h>

static const command_info table[] = {
    {CMD_RESET, "reset", NULL, NULL, "forget the dialog; the system prompt stays", COMMAND_EVERYWHERE},
    {CMD_SYSTEM, "system", NULL, "TEXT", "set the system prompt; without TEXT, clear it", COMMAND_EVERYWHERE},
    {CMD_SAVE, "save", NULL, "[--all] FILE", "write the dialog to FILE; --all: every branch", COMMAND_EVERYWHERE},
    {CMD_LOAD, "load", NULL, "FILE", "replace the dialog with the chat saved in FILE", COMMAND_EVERYWHERE},
    {CMD_RESUME, "resume", NULL, "[N]", "list the recent saved chats; with N, reopen the N-th",
     COMMAND_EVERYWHERE},
    {CMD_FORCE, "force", NULL, "TEXT", "put TEXT's tokens into the newest reply", COMMAND_TUI},
    {CMD_STEP, "step", NULL, "TEXT", "send TEXT with its reply paused: n steps, p runs", COMMAND_TUI},
    {CMD_SET, "set", NULL, "[NAME VALUE]", "show the sampler settings, or change one from the next token",
     COMMAND_EVERYWHERE},
    {CMD_HELP, "help", NULL, NULL, "list the commands", COMMAND_EVERYWHERE},
    {CMD_QUIT, "quit", "exit q", NULL, "leave, as Ctrl-D does", COMMAND_EVERYWHERE},
};
enum { N_TABLE = sizeof table / sizeof table[0] };

const command_info *command_table(int *n)
{
    *n = N_TABLE;
    return table;
}

/* Is name one of the space-separated words of list? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t w = strcspn(p, " ");
        if (w == n && !strncmp(p, name, n))
            return true;
        p += w;
        p += strspn(p, " ");
    }
    return false;
}

const command_info *command_find(const char *name)
{
    for (int i = 0; i < N_TABLE; i++)
        if (!strcmp(table[i].name, name) || in_list(table[i].aliases, name))
            return &table[i];
    return NULL;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool command_parse(char *line, command_call *call)
{
    while (is_blank(*line))
        line++;
    if (*line != '/')
        return false;
    char *name = line + 1;
    char *p = name;
    while (*p && !is_blank(*p))
        p++;
    char *arg = p;
    if (*p) {
        *p = '\0';
        arg = p + 1;
        while (is_blank(*arg))
            arg++;
        size_t n = strlen(arg);
        while (n > 0 && is_blank(arg[n - 1]))
            arg[--n] = '\0';
    }
    call->name = name;
    call->arg = arg;
    call->info = command_find(name);
    call->id = call->info ? call->info->id : CMD_UNKNOWN;
    return true;
}

int command_usage(const command_info *ci, char *buf, size_t size)
{
    return snprintf(buf, size, "/%s%s%s", ci->name, ci->arg ? " " : "", ci->arg ? ci->arg : "");
}

const char *command_only_in(const command_info *ci)
{
    switch (ci->front_ends) {
    case COMMAND_TUI: return "the TUI";
    case COMMAND_REPL: return "-m chat";
    default: return NULL;
    }
}

void command_describe(const command_info *ci, char *buf, size_t size)
{
    const char *only = command_only_in(ci);
    size_t o = (size_t)snprintf(buf, size, "%s", ci->help);
    if (only && o < size)
        o += (size_t)snprintf(buf + o, size - o, "; only in %s", only);
    const char *p = ci->aliases;
    for (bool first = true; p && *p && o < size; first = false) {
        size_t w = strcspn(p, " ");
        o += (size_t)snprintf(buf + o, size - o, "%s/%.*s", first ? "; also " : ", ", (int)w, p);
        p += w;
        p += strspn(p, " ");
    }
}
