/* think.h — where a reply's thinking is, found in its text. A reasoning model (Qwen3)
 * opens its reply with "<think>", reasons, writes "</think>" and then answers (Qwen 3.5's
 * template writes the "<think>" itself, at the end of the prompt); Gemma 4 opens a
 * thought channel, "<|channel>thought", and closes it with "<channel|>"; gpt-oss writes
 * harmony's analysis channel. Below, "<think>" and "</think>" stand for either pair. The
 * span is found in the reply's text, as llama.cpp's reasoning parser finds it, so one
 * definition holds whether <think> came as one token (Qwen3's vocabulary has it as a
 * user-defined token, decoded as its text) or as pieces of text ("<", "think", ">").
 * Front ends fold it (the TUI's Conversation) or dim it (the plain chat); the context
 * keeps every token whatever they show.
 *
 * Pure: no state, no allocation. */
#ifndef LLMCHAT_THINK_H
#define LLMCHAT_THINK_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    THINK_NONE = 0, /* the reply does not open with "<think>": no thinking */
    THINK_UNSURE,   /* the text so far may still become "<think>" ("", "\n<th"): wait */
    THINK_OPEN,     /* inside the span: "</think>" has not come (yet: the reply may be
                       streaming, or was cut short while thinking) */
    THINK_CLOSED,   /* the span is closed; the answer follows it */
} think_state;

/* Byte offsets in the reply's text. Meaningful for THINK_OPEN and THINK_CLOSED. */
typedef struct {
    think_state state;
    size_t start;    /* "<think>" starts here (after whitespace that opens the reply) */
    size_t body;     /* the thinking is [body, body_end): just after "<think>" */
    size_t body_end; /* "</think>" starts here; the text's length while open */
    size_t end;      /* the answer starts here: after "</think>" and the whitespace that
                        follows it; the text's length while open */
    bool empty;      /* the thinking is whitespace only (as /no_think's
                        "<think>\n\n</think>\n\n") */
} think_span;

/* The thinking span of a reply's text (len bytes, not necessarily NUL-terminated): a
 * "<think>" that opens it (after whitespace, if any) up to the first "</think>" after
 * it. Fills *out (its state: NONE, UNSURE, OPEN or CLOSED) and returns the state. */
think_state think_find(const char *text, size_t len, think_span *out);

/* think_find, or, when opened (the template opened the span in the prompt: Qwen 3.5's
 * "<think>\n" after the assistant's header), the span from the reply's start to the first
 * "</think>": OPEN until it comes, then CLOSED. */
think_state think_find_in(const char *text, size_t len, bool opened, think_span *out);

#endif
