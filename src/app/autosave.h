/* autosave.h — saved chats for the interactive front ends (the REPL and the TUI):
 * this session's autosave file, /save FILE, /load FILE, the list of recent chats that
 * /resume shows, and the latest one that --resume opens.
 *
 * Autosaves go to $XDG_STATE_HOME/llmchat/chats/ (default ~/.local/state/llmchat/
 * chats), one file per session named by its start time (20250101-120000-1234.json);
 * a resumed chat goes on in the file it came from. By default only interactive
 * sessions save (--autosave), and the newest --keep-chats files are kept. Every file is a saved chat
 * (chatfile.h), written atomically. The functions never print: they return what the
 * front end should say. */
#ifndef LLMCHAT_CLI_PERSIST_H
#define LLMCHAT_CLI_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "chat.h"
#include "chatfile.h"
#include "options.h"
#include "engine.h"

struct session;

typedef struct {
    char *path;     /* where this session saves (owned); NULL until the first save */
    bool warned;    /* a save failed and the front end was given the warning */
    bool off;       /* --autosave says this session saves nothing (autosave_init) */
    bool never;     /* --autosave never: not even a resumed chat */
    int keep;       /* --keep-chats: autosaved chats kept when this session first saves */
    struct stat known; /* path as this session last read or wrote it (have_known) */
    bool have_known;
    char *left;     /* the file /reset or /load left (owned): spared by the next prune */
} autosave_file;

/* Sets a up for a session (a zeroed struct) by o's --autosave and --keep-chats:
 * interactive tells whether a person is typing (the TUI; -m chat on a terminal). */
void autosave_init(autosave_file *a, const app_options *o, bool interactive);

/* Saves the session's whole chat to its file (s->save): nothing, returning true, when
 * --autosave says this session saves nothing or the chat never had a turn. The first
 * save of a new session file also removes the oldest autosaved chats beyond keep
 * (never one whose session, named in the file's name, still runs). A file that
 * changed since this session last read or wrote it (another llmchat resumed the same
 * chat and saved to it) is left as it is: the chat goes on in a new session file, and
 * msg says so. The trace's records so far go to its file first, whatever --autosave
 * says (a crash then leaves them). Returns true when it was saved. When it fails, the first failure's
 * warning goes into msg ("" for later ones: warn once, and the chat goes on). The front
 * end says msg whenever it is not "". */
bool autosave_now(struct session *s, char *msg, size_t size);
/* Writes cf to a's file as autosave_now does (nothing when a is off, or when there is
 * no file yet and cf has no turns): the front ends without a session (a served chat)
 * build cf themselves. */
bool autosave_write(autosave_file *a, const chatfile *cf, char *msg, size_t size);
/* Makes path the session's file from now on (a chat resumed from it): a resumed chat
 * is saved whatever --autosave says, unless it says never. */
void autosave_use(autosave_file *a, const char *path);
/* The conversation was replaced (/reset, /load): the file saved so far keeps it, and
 * the next save starts a new session file. */
void autosave_start_over(autosave_file *a);
void autosave_free(autosave_file *a);

/* The session's chat as a chatfile: chat_to_file plus what only the session knows
 * (the tokenizer's path, the step limit, absolute paths); with `all`, every reply's
 * other branches too (chat_branches_to_file). The caller clears cf. */
llm_status autosave_chat_to_file(const struct session *s, bool all, chatfile *cf, llm_err *err);

/* /save FILE: writes the session's chat to path (atomically): the branches on screen,
 * or with `all` (/save --all FILE, autosave) every branch. */
llm_status autosave_save_chat(const struct session *s, const char *path, bool all, llm_err *err);
/* /save's argument: "[--all] FILE". Returns FILE (a pointer into arg, "" when
 * missing) and sets *all. */
const char *autosave_save_args(const char *arg, bool *all);

/* /load FILE, /resume N, --resume: reads path and restores it into c (chat_restore)
 * with its interventions (set before its context is read again; keep_steering: the
 * session's stay, as when the command line gave some to a --resume) and, into
 * settings (NULL: none, as for --resume, whose settings load_resume settled), the
 * settings the file names (the sampler's, the seed, the step limit: the caller sets
 * them in the session); a chat saved with another model is loaded all the same (its text is
 * tokenized again when the vocabulary differs). notice says so, that old turns stay
 * out of the context, or what the interventions became or why they could not be set
 * ("" when there is nothing to say). *apart: the session does not run with the file's
 * interventions (kept its own, or could not set them): the file must not be saved
 * over, or they are lost. */
llm_status autosave_load_chat(chat *c, engine *e, const char *path, bool keep_steering,
                              live_settings *settings, bool *apart, char *notice, size_t size,
                              llm_err *err);

/* One saved chat of the list /resume shows. */
typedef struct {
    char path[4096];
    time_t when;        /* last saved */
    int n_turns;
    char first[61];     /* the first user message, cut to 60 bytes; "" when none */
} saved_chat;

enum { AUTOSAVE_RECENT_MAX = 10 };

/* The saved chats under the chats directory, newest first, at most max (files that
 * do not parse are left out), skipping the file named skip (this session's own; may
 * be NULL). Returns how many were written to out. */
int autosave_recent(saved_chat *out, int max, const char *skip);

/* The newest saved chat's path into buf; false when there is none. A newer file that
 * does not read as a saved chat is passed over, and why (the newest such) goes into
 * skipped ("" when none was). */
bool autosave_latest(char *buf, size_t size, char *skipped, size_t skipped_size);

#endif
