/* command.h — the chat's slash commands: one table (names, aliases, argument syntax,
 * help text, which front ends run them) and one parser, shared by the REPL
 * (repl.c) and the TUI (tui/tui.c), so both read "/name args" by the same rules
 * and /help lists the same commands.
 *
 * Each front end keeps its own handlers and switches on the command's id. A new
 * command is one row in command.c's table, one id here, and a handler in each front
 * end that runs it (plus its item in the man page's CHAT COMMANDS, which
 * tests/test_command.c checks). Never prints. */
#ifndef LLMCHAT_COMMAND_H
#define LLMCHAT_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    CMD_UNKNOWN = 0, /* a name that no command has */
    CMD_RESET,
    CMD_SYSTEM,
    CMD_SAVE,
    CMD_LOAD,
    CMD_RESUME,
    CMD_FORCE,
    CMD_SET,
    CMD_HELP,
    CMD_QUIT,
} command_id;

/* Which front ends run a command (command_info.front_ends). */
enum { COMMAND_REPL = 1, COMMAND_TUI = 2, COMMAND_EVERYWHERE = COMMAND_REPL | COMMAND_TUI };

typedef struct {
    command_id id;
    const char *name;     /* without the slash: "system" */
    const char *aliases;  /* other names, separated by spaces ("exit q"), or NULL */
    const char *arg;      /* the argument's syntax ("TEXT", "FILE"), or NULL: takes none */
    const char *help;     /* one short line for /help */
    unsigned front_ends;  /* COMMAND_REPL | COMMAND_TUI */
} command_info;

typedef struct {
    command_id id;
    const command_info *info; /* NULL for CMD_UNKNOWN */
    const char *name;         /* the name as typed, without the slash */
    const char *arg;          /* the argument, blanks trimmed at both ends; "" when none */
} command_call;

/* The table, in /help's order; *n receives its length. */
const command_info *command_table(int *n);

/* The command named name (or one of its aliases), NULL when none. */
const command_info *command_find(const char *name);

/* Parses a line in place. A line whose first non-blank character is '/' is a
 * command: its name runs to the next blank, the rest (trimmed of blanks, including
 * a trailing newline) is its argument. Writes NULs into line to end the name and the
 * argument; call->name and call->arg point into it. Returns false (call untouched)
 * when the line is not a command. */
bool command_parse(char *line, command_call *call);

/* "/system TEXT": the command with its argument's syntax, into buf (NUL-terminated).
 * Returns the length it needed, as snprintf. */
int command_usage(const command_info *ci, char *buf, size_t size);

/* The front end that runs ci when it is not everywhere ("the TUI", "-m chat"), else NULL. */
const char *command_only_in(const command_info *ci);

/* What /help says of ci: its help text, the front end it is limited to and its
 * aliases ("leave, as Ctrl-D does; also /exit, /q"), into buf (NUL-terminated). */
void command_describe(const command_info *ci, char *buf, size_t size);

#endif
