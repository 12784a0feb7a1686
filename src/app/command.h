/* command.h — the chat's slash commands: one table (names, aliases, argument syntax,
 * help text, properties and the handler of each) and one parser, shared by the REPL
 * (cli/repl.c) and the TUI (tui/tui.c). Both front ends read "/name args" by the same
 * rules, run the same handler and print the same words; /help lists the same
 * commands.
 *
 * A front end hands the commands a command_host: its session (the chat, the engine,
 * the live settings, the saved-chat file), and a few things only it can do (say a line, stop a reply, redraw after a change, quit,
 * show help, force text, send a message paused). A new command is one row in
 * command.c's table with its handler, one id here, and its item in the man page's
 * CHAT COMMANDS (which tests/test_command.c checks). Never prints: what a command says goes through
 * host->say. */
#ifndef LLMCHAT_COMMAND_H
#define LLMCHAT_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "session.h"

struct served_session;

typedef enum {
    CMD_UNKNOWN = 0, /* a name that no command has */
    CMD_RESET,
    CMD_SYSTEM,
    CMD_SAVE,
    CMD_LOAD,
    CMD_RESUME,
    CMD_FORCE,
    CMD_SET,
    CMD_VECTOR,
    CMD_KNOCK,
    CMD_FORCE_EXPERT,
    CMD_HELP,
    CMD_QUIT,
    CMD_STEP,
    CMD_THINK,
    CMD_NO_THINK,
    CMD_EXPERTS,
    CMD_PATCH,
} command_id;

/* Which front ends run a command (command_info.front_ends). */
enum { COMMAND_REPL = 1, COMMAND_TUI = 2, COMMAND_EVERYWHERE = COMMAND_REPL | COMMAND_TUI };

/* What a change did (command_host.changed). */
typedef enum {
    COMMAND_CHANGED_DIALOG,   /* the dialog was replaced or reset: show it again, save it */
    COMMAND_CHANGED_CHAT,     /* the chat changed but not its shown turns (the system
                                 prompt, a forced text): save it */
    COMMAND_CHANGED_SETTINGS, /* the live sampler settings or the control vectors:
                                 redraw what shows them */
} command_change;

typedef struct command_host command_host;

/* What a front end gives the commands. s is NULL when there is no model (the TUI on
 * a trace): commands that need one are refused then. */
struct command_host {
    unsigned front_end;          /* COMMAND_REPL or COMMAND_TUI */
    session *s;                  /* its chat, engine, options, live settings and file */
    void *user;                  /* the front end's own state, for the functions below */
    /* Says one line to the user: a sentence, no newline, no decoration. */
    void (*say)(command_host *h, const char *text);
    /* A reply is being written and the dialog is about to change: stop it. */
    void (*stop_reply)(command_host *h);
    void (*changed)(command_host *h, command_change what);
    void (*quit)(command_host *h);
    void (*help)(command_host *h);
    /* Puts text's tokens into the newest reply; NULL where the front end cannot. */
    void (*force)(command_host *h, const char *text);
    /* Says that the front end views a trace and cannot change it; NULL: h->say does. */
    void (*read_only)(command_host *h);
    /* Sends text as a message whose reply waits at its first token (/step); NULL where
     * the front end cannot pause a reply. */
    void (*send_paused)(command_host *h, const char *text);
    /* Opens the front end's view of that name ("experts"), or says why it cannot;
     * false (nothing said) where the front end has no such view; NULL where it has
     * no views. */
    bool (*open_view)(command_host *h, const char *name);
    /* /patch: starts a patching grid of the newest message against text in its place
     * and shows it (text NULL or "": shows the last one); NULL where the front end has
     * no patching view. */
    void (*patch)(command_host *h, const char *text);
    /* A chat with a served model (--server; s is NULL then): the commands marked
     * `served` work on it (/set its settings, /save and /load its dialog); NULL for a
     * local model or a trace. */
    struct served_session *served;
};

typedef struct {
    command_id id;
    const char *name;     /* without the slash: "system" */
    const char *aliases;  /* other names, separated by spaces ("exit q"), or NULL */
    const char *arg;      /* the argument's syntax ("TEXT", "FILE"), or NULL: takes none */
    const char *help;     /* one short line for /help */
    unsigned front_ends;  /* COMMAND_REPL | COMMAND_TUI */
    bool needs_model;     /* refused while viewing a trace (no chat) */
    bool served;          /* runs over a served model too (command_host.served) */
    bool stops_reply;     /* a reply being written stops first */
    /* Runs the command with its argument ("" when none). */
    void (*run)(command_host *h, const char *arg);
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

/* Runs a parsed command for the front end h: an unknown name, a command of another
 * front end, or one that needs a model while there is none is said so; otherwise the
 * row's handler runs. */
void command_run(command_host *h, const command_call *call);

/* What command_load did: failed (0), loaded, or loaded while the session does not run
 * with the interventions the file was saved with (the file must not be saved over). */
typedef enum { COMMAND_LOAD_FAILED = 0, COMMAND_LOADED, COMMAND_LOADED_APART } command_loaded;
/* Loads the chat saved in path into the host's chat, as /load does (also --resume's
 * way in, resuming: interventions the command line gave stay, autosave_load_chat):
 * says what was loaded, or why not, and when apart, that the chat goes on in a new
 * file (the caller sees to it). */
command_loaded command_load(command_host *h, const char *path, bool resuming);

/* "/system TEXT": the command with its argument's syntax, into buf (NUL-terminated).
 * Returns the length it needed, as snprintf. */
int command_usage(const command_info *ci, char *buf, size_t size);

/* A command's argument split at spaces and tabs into at most max words of fewer than
 * COMMAND_WORD_MAX characters each (w[i], NUL-terminated), their count in *n; false
 * when there are more, or one is longer. */
enum { COMMAND_WORD_MAX = 64 };
bool command_words(const char *arg, char (*w)[COMMAND_WORD_MAX], int max, int *n);

/* The front end that runs ci when it is not everywhere ("the TUI", "-m chat"), else NULL. */
const char *command_only_in(const command_info *ci);

/* What /help says of ci: its help text, the front end it is limited to and its
 * aliases ("leave, as Ctrl-D does; also /exit, /q"), into buf (NUL-terminated). */
void command_describe(const command_info *ci, char *buf, size_t size);

#endif
