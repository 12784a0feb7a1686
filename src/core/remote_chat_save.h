/* remote_chat_save.h — a dialog with a served model (remote_chat.h) as a saved chat
 * (chatfile.h) and back: what /save, /load, --resume and autosave keep of a chat over
 * --server.
 *
 * The file names the server (its URL, API and model) where a local chat names its
 * model file, and holds the turns' texts, the system prompt and the sampler settings.
 * It holds no reply ids: they are the server's vocabulary's, which llmchat does not
 * have; the next message renders the whole dialog on the server again anyway. A
 * saved chat of either kind loads into either kind of session: a local chat reads a
 * served one's texts (tokenized again), a served chat a local one's. */
#ifndef LLMCHAT_REMOTE_CHAT_SAVE_H
#define LLMCHAT_REMOTE_CHAT_SAVE_H

#include <stddef.h>

#include "chatfile.h"
#include "remote_chat.h"
#include "status.h"

/* The dialog as a chatfile (initialised here; the caller clears it): the server, the
 * system prompt, the sampler settings, every turn (the reply written so far of one
 * being written, as cut). */
llm_status remote_chat_to_file(const remote_chat *c, chatfile *cf, llm_err *err);

/* Replaces the dialog with cf's turns (a reply being written is stopped) and its
 * system prompt (its settings are the caller's: chatfile_settings_onto). A turn's other branches are
 * not kept (a served chat has one reply a turn): notice says how many were left, and
 * that the chat was saved with another model or server (notice "" when there is
 * nothing to say). On failure the dialog is empty. */
llm_status remote_chat_restore(remote_chat *c, const chatfile *cf, char *notice, size_t size,
                               llm_err *err);

#endif
