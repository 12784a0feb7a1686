/* served.h — a chat with a served model (llmchat --server URL) as the front ends run
 * it, the TUI and -m chat: what session.h is for a local model.
 *
 * served_open connects (remote_connect.h), starts the dialog (remote_chat.h) with the
 * options' system prompt and sampler settings, opens --trace (the server's records as
 * the reply streams: trace.h with the server's pieces) and sets up autosave
 * (autosave.h: the same chats directory, --autosave and --keep-chats as a local chat).
 * The chat is saved as remote_chat_save.h says: /save, /load, /resume and --resume
 * work on it, and a saved chat of either kind loads into either.
 *
 * Each function that can fail prints its message (this is the program layer), except
 * those that return an llm_status or a message for the front end to show. */
#ifndef LLMCHAT_SERVED_H
#define LLMCHAT_SERVED_H

#include <stdbool.h>
#include <stddef.h>

#include "autosave.h"
#include "options.h"
#include "remote.h"
#include "remote_chat.h"
#include "settings.h"

struct trace_writer;

typedef struct served_session {
    const app_options *o;          /* borrowed */
    remote *rem;                   /* owned */
    remote_chat *rc;               /* owned */
    int steps;                     /* the replies' step limit (-n, /set steps; 0: none) */
    autosave_file save;            /* this session's saved-chat file */
    struct trace_writer *trace;    /* owned; NULL without --trace */
} served_session;

/* Opens s (zeroed here) for o: mode names the trace's mode ("tui", "chat"); interactive
 * tells autosave whether a person types. Returns 0, or an exit status with the reason
 * printed (everything opened closed again). */
int served_open(served_session *s, const app_options *o, const char *mode, bool interactive);
/* Closes s: the trace written into place (its failure printed; returns 1 then), the
 * dialog and the connection freed (a reply still running is cancelled). */
int served_close(served_session *s);

/* The settings the next request sends (no slow motion: the server streams at its own
 * pace), and changing them. */
live_settings served_settings(const served_session *s);
void served_set_settings(served_session *s, const live_settings *ls);

/* /save FILE. */
llm_status served_save_chat(const served_session *s, const char *path, llm_err *err);
/* /load FILE, /resume N, --resume: replaces the dialog with the chat saved in path
 * and, with settings (not for --resume, whose settings load_resume settled), takes
 * the settings it names (the sampler's, the seed, the step limit), as a local chat's
 * /load does; notice as remote_chat_restore says it. */
llm_status served_load_chat(served_session *s, const char *path, bool settings, bool *apart,
                            char *notice, size_t size, llm_err *err);
/* Autosaves the chat (autosave_write); false with the first failure's warning in msg. */
bool served_autosave_now(served_session *s, char *msg, size_t size);
/* On a quitting signal: the chat saved, where it is said on stderr; returns 128 + the
 * signal (0 when none came). */
int served_quit_on_signal(served_session *s);

#endif
