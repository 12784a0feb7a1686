/* conversation.h — the Conversation pane: the dialog as the user sees it (user turns,
 * replies as they stream in, notices), wrapped and scrolled from the bottom.
 *
 * Its state (conv_pane) is only what is shown: the chat keeps the real dialog. */
#ifndef LLMCHAT_TUI_CONVERSATION_H
#define LLMCHAT_TUI_CONVERSATION_H

#include <stdbool.h>
#include <stddef.h>

#include "pane.h"

typedef enum { ENTRY_USER, ENTRY_ASSISTANT, ENTRY_NOTICE } conv_kind;

typedef struct conv_pane conv_pane;

extern const pane_ops conv_pane_ops;

conv_pane *conv_new(void); /* exits through tui_die when out of memory */
void conv_free(conv_pane *cv);

/* Adds an entry (an assistant entry becomes the one replies stream into) and follows
 * the end again. */
void conv_add(conv_pane *cv, conv_kind kind, const char *text);
/* Appends streamed reply bytes to the newest assistant entry (made terminal-safe);
 * notices added meanwhile stay above or below it. */
void conv_stream(conv_pane *cv, const char *bytes, size_t len);
/* Replaces the text of the newest assistant entry with reply (after a rewind). */
void conv_set_reply(conv_pane *cv, const char *reply);
/* Labels the newest assistant entry with its branch: "Assistant [branch 2/3]: ", or
 * plain "Assistant: " when count is 1. */
void conv_set_branch(conv_pane *cv, int number, int count);
/* While writing, the streaming reply ends in a block cursor. */
void conv_set_writing(conv_pane *cv, bool writing);
void conv_clear(conv_pane *cv);
/* Removes the newest notice whose text is text (a hint that no longer holds); false
 * when there is none. */
bool conv_drop_notice(conv_pane *cv, const char *text);
/* Scrolls up (lines > 0) or down; 0 lines up follows the end. */
void conv_scroll_by(conv_pane *cv, int lines);

#endif
