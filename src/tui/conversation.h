/* conversation.h — the Conversation pane: the dialog as the user sees it (user turns,
 * replies as they stream in, notices), wrapped and scrolled from the bottom. A reply
 * knows the position of each of its tokens: shaded by probability or entropy
 * (token_shade.h), the selected position (selection.h) highlighted.
 *
 * Its state (conv_pane) is only what is shown: the chat keeps the real dialog. */
#ifndef LLMCHAT_TUI_CONVERSATION_H
#define LLMCHAT_TUI_CONVERSATION_H

#include <stdbool.h>
#include <stddef.h>

#include "view_ops.h"
#include "selection.h"
#include "source.h"
#include "token_shade.h"

typedef enum { ENTRY_USER, ENTRY_ASSISTANT, ENTRY_NOTICE } conv_kind;

typedef struct conv_pane conv_pane;

extern const view_ops conv_pane_ops;

/* A pane whose reply tokens are looked up in src's records and highlighted at sel.
 * Exits through tui_die when out of memory. */
conv_pane *conv_new(const tui_source *src, const tui_selection *sel);
void conv_free(conv_pane *cv);

/* Adds an entry (an assistant entry becomes the one replies stream into) and follows
 * the end again. */
void conv_add(conv_pane *cv, conv_kind kind, const char *text);
/* Whether the newest assistant entry's reply starts inside its thinking span (the
 * template opened it: chat_turn.think_opened), for folding it. */
void conv_set_think_opened(conv_pane *cv, bool opened);
/* Appends the text of the reply token at position pos to the newest assistant entry
 * (made terminal-safe; notices added meanwhile stay above or below it): the span it
 * covers is shaded and highlighted as pos. */
void conv_stream_token(conv_pane *cv, int pos, const char *bytes, size_t len);
/* Replaces the newest assistant entry's text with reply (after a rewind or a branch
 * switch), whose n tokens start at byte offsets off (ascending) and sit
 * at positions pos (chat_reply_spans). */
void conv_set_reply_tokens(conv_pane *cv, const char *reply, const int *pos, const size_t *off, int n);
/* The same for the newest user entry: its message text, the positions of its tokens. */
void conv_set_message_tokens(conv_pane *cv, const char *text, const int *pos, const size_t *off, int n);
/* How reply and message tokens are shaded (SHADE_OFF: not at all). */
void conv_set_shading(conv_pane *cv, token_shade_mode mode);
token_shade_mode conv_shading(const conv_pane *cv);
/* Labels the newest assistant entry with its branch: "Assistant [branch 2/3]: ", or
 * plain "Assistant: " when count is 1. */
void conv_set_branch(conv_pane *cv, int number, int count);
/* A reply's thinking (think.h: "<think>" at its start to "</think>"): folded into one
 * dim line ("thought for 57 tokens", the tokens folded; "thinking... 12 tokens" while
 * it runs; an empty span folds to nothing), the default, or shown dimmed. Display
 * only: the tokens and their positions stay. For every reply at once. */
void conv_set_show_thinking(conv_pane *cv, bool show);
bool conv_shows_thinking(const conv_pane *cv);
/* While writing, the streaming reply ends in a block cursor. */
void conv_set_writing(conv_pane *cv, bool writing);
void conv_clear(conv_pane *cv);
/* Removes the newest notice whose text is text (a hint that no longer holds); false
 * when there is none. */
bool conv_drop_notice(conv_pane *cv, const char *text);
/* Scrolls up (lines > 0) or down; 0 lines up follows the end. */
void conv_scroll_by(conv_pane *cv, int lines);

#endif
