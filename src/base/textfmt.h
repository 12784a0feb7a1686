/* textfmt.h — making model text safe and readable on a terminal.
 *
 * Pieces and decoded bytes can hold control bytes, partial UTF-8 sequences and
 * invisible spaces. These functions turn them into printable text; they never touch
 * a terminal themselves. */
#ifndef LLMCHAT_TEXTFMT_H
#define LLMCHAT_TEXTFMT_H

#include <stdbool.h>
#include <stddef.h>

/* Escapes a token piece for display: control bytes as \n \t \r or \xNN, invalid UTF-8
 * as \xNN, spaces as "␣" when visible_spaces. Always NUL-terminates (truncating at a
 * character boundary); returns the length written. */
size_t textfmt_escape_piece(const char *piece, size_t len, bool visible_spaces,
                            char *out, size_t size);

/* Does piece look like a control token ("<s>", "\n</s>\n", "<|im_end|>"): "<...>"
 * of at least 3 bytes once newlines and spaces around it are left out? */
bool textfmt_piece_is_control(const char *piece);

/* A token's piece as every front end shows it: a control token without the newlines
 * and spaces around it (llama2.c's BOS "\n<s>\n" is "<s>"), then escaped as
 * textfmt_escape_piece does. Returns the length written. */
size_t textfmt_token_piece(const char *piece, bool control, bool visible_spaces, char *out,
                           size_t size);

/* Makes streamed bytes safe for a terminal: keeps valid UTF-8 and \n, \t; drops other
 * control bytes except writing them as their Unicode control-picture (e.g. ␛).
 * Incomplete trailing sequences are held in a small carry buffer between calls. */
typedef struct {
    unsigned char carry[4];
    int n_carry;
} textfmt_stream;

/* Appends the safe form of in[0..len) to out (size), returns bytes written. */
size_t textfmt_stream_put(textfmt_stream *s, const char *in, size_t len, char *out, size_t size);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is invalid/truncated. */
int textfmt_utf8_len(const unsigned char *s, size_t avail);

/* Display width (terminal columns) of a UTF-8 string, treating every code point as
 * one column except combining marks (0) and East Asian wide characters (2). */
int textfmt_width(const char *s);

/* A count in a few characters: 999, 1.2K, 260K, 1.1M, 6.74B. */
void textfmt_count(long long n, char *buf, size_t size);

#endif
