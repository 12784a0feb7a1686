/* status.h — status codes and error messages shared by the whole core.
 *
 * Core functions never print and never exit: they return an llm_status and, on
 * failure, write a sentence a user can act on into an llm_err the caller owns.
 * The front end decides how to show it. */
#ifndef LLMCHAT_STATUS_H
#define LLMCHAT_STATUS_H

#include <stddef.h>

#if defined(LLMCHAT_CORE) && (defined(NCURSES_VERSION) || defined(__NCURSES_H))
#error "curses is included in core code: only src/tui/ may use it"
#endif

typedef enum {
    LLM_OK = 0,
    LLM_ERR_IO,       /* a file cannot be opened, read, mapped or written */
    LLM_ERR_FORMAT,   /* bad magic, version, shape or size */
    LLM_ERR_MISMATCH, /* two inputs that must agree do not (tokenizer vs model) */
    LLM_ERR_NOMEM,    /* an allocation failed */
    LLM_ERR_ARG,      /* an argument is out of range */
    LLM_ERR_CONTEXT,  /* the tokens do not fit in the context window */
    LLM_ERR_NUMERIC,  /* weights or results that are not finite (NaN, Inf): a corrupt model */
    LLM_ERR_STOPPED,  /* the caller asked to stop (a progress callback said so) */
} llm_status;

enum { LLM_ERR_TEXT_MAX = 512 };

typedef struct {
    char text[LLM_ERR_TEXT_MAX]; /* one sentence, no trailing newline */
} llm_err;

/* Short name of a status ("format error", ...). */
const char *llm_status_name(llm_status s);

/* Formats a message into err (which may be NULL) and returns s, so that
 * `return llm_fail(err, LLM_ERR_IO, "%s: %s", path, strerror(errno));` reads well. */
llm_status llm_fail(llm_err *err, llm_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats n with thousands separators ("1,048,576") into buf; returns buf. */
const char *llm_group_digits(char *buf, size_t size, long long n);
const char *llm_group_digits_u64(char *buf, size_t size, unsigned long long n);

#endif
