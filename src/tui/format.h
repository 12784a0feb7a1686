/* format.h — the TUI's text and number formatting, as plain functions.
 *
 * Everything here can be tested without a terminal (tests/test_tui_format.c): token
 * pieces for the Tokens pane, fitting UTF-8 text into a number of columns, word
 * wrapping, probabilities, bars, shade buckets of attention weights, and which part
 * of the attention matrix fits a pane. No curses here, no terminal output. */
#ifndef LLMCHAT_TUI_FORMAT_H
#define LLMCHAT_TUI_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "attribution.h"
#include "tokenizer.h"

/* A token piece for display: control tokens ("\n<s>\n") lose their surrounding
 * whitespace, everything else is escaped (textfmt_escape_piece) with spaces shown
 * as "␣". Always NUL-terminates; returns the length written. */
size_t tuifmt_piece(const char *piece, bool control, char *out, size_t size);

/* Token id of tok for display: its piece as tuifmt_piece writes it. */
size_t tuifmt_token(const tokenizer *tok, int id, char *out, size_t size);

/* Display width (columns) of the UTF-8 character at s (len bytes available) and
 * its byte length in *bytes (1 for an invalid byte, which is counted as 1 column). */
int tuifmt_char_width(const char *s, size_t len, int *bytes);

/* Columns of the character at s in a one-line editor, whose control bytes and
 * invalid UTF-8 show as a symbol of one column ('?', or ↵ ⇥ for a pasted newline
 * and tab: *symbol true, when symbol is not NULL); its byte length in *bytes. */
int tuifmt_line_char_width(const char *s, size_t len, int *bytes, bool *symbol);

/* The horizontal scroll of a one-line editor: the line s[0..len) shown in avail
 * columns (avail >= 1) with the cursor, before byte `point`, in view: at the right
 * edge once the text before it is wider than that. Returns the byte to draw from (a
 * character boundary) and in *skip the columns of text from there that stay left of
 * the view. Reads only about the last avail columns before the point, so a long
 * line scrolls as fast as a short one. */
size_t tuifmt_line_scroll(const char *s, size_t len, size_t point, int avail, int *skip);

/* Copies the longest prefix of s that fits in width columns into out; when s does
 * not fit and width >= 1, the last column becomes "…" (or "~" when !utf8).
 * Returns the columns used (0..width). Never splits a UTF-8 character. */
int tuifmt_fit(const char *s, int width, bool utf8, char *out, size_t size);

/* Word wrap: the number of bytes of s[0..len) that form the next line of at most
 * width columns (width >= 1). Breaks after the last space that fits, at '\n', or
 * hard inside a word that is longer than the line. *next receives the offset where
 * the following line starts (after the break's space or newline). Returns 0 with
 * *next = 0 when len is 0. */
size_t tuifmt_wrap(const char *s, size_t len, int width, size_t *next);

/* Number of lines s[0..len) takes when wrapped to width (at least 1). */
int tuifmt_wrap_count(const char *s, size_t len, int width);

/* A probability as a short percentage in at most 6 columns: "100%", "45.6%",
 * "0.12%", "<0.01%", "0%". */
void tuifmt_prob(float p, char *buf, size_t size);

/* Length of a probability bar in eighths of a column: round(p * width * 8),
 * clamped to [0, width * 8]. p outside [0, 1] is clamped. */
int tuifmt_bar_eighths(float p, int width);

/* The bar itself: full blocks and one partial block (▏▎▍▌▋▊▉) when utf8, '#' per
 * full column otherwise. Returns the columns used. */
int tuifmt_bar(float p, int width, bool utf8, char *out, size_t size);

/* Bucket 0..n_buckets-1 of an attention weight w relative to ref (the row's largest
 * weight): linear (round(w/ref * (n-1))) or log (three decades below ref map to
 * 0..n-1; anything under 1/1000 of ref is 0). 0 for w <= 0 or ref <= 0. */
int tuifmt_shade(float w, float ref, int n_buckets, bool log_scale);

/* Which part of the attention matrix is shown. Queries (rows) and keys (columns)
 * both run over positions 0..n_pos-1; the window ends at the focus position (the
 * selected one, or the newest) so that the focus row and its newest key are always
 * visible. n_rows/n_cols are 0 when nothing fits or n_pos is 0. */
typedef struct {
    int row0, n_rows; /* query positions row0 .. row0 + n_rows - 1 */
    int col0, n_cols; /* key positions col0 .. col0 + n_cols - 1 */
} tuifmt_heat_window;

void tuifmt_heat_window_compute(int n_pos, int focus, int rows_avail, int cols_avail,
                                tuifmt_heat_window *w);

/* The first item of a window of `avail` items that keeps `focus` visible and, when
 * possible, ends at the last item: used for lists that follow their newest entry. */
int tuifmt_window_start(int n_items, int focus, int avail);

/* A number in at most width columns, as precise as fits, from `decimals` decimals down
 * ("2.31", "2.3", "2"), dropping the 0 before the point when that makes it fit
 * ("0.93" -> ".93"); with sign always signed ("+2.31", "-.12"). When no digit fits: its
 * sign alone ("+", "-"; "0" for 0), or "*" unsigned; "" when width < 1.
 * Returns the columns used. */
int tuifmt_fixed(float v, int width, int decimals, bool sign, char *out, size_t size);

/* A signed value with up to 2 decimals: tuifmt_fixed(v, width, 2, true, ...), so
 * "+2.31", "+2.3", "+.12", "-12", then its sign alone. */
int tuifmt_signed(float v, int width, char *out, size_t size);

/* The first of n texts (longest wording first) whose display width is at most width;
 * the last when none fits (it is then cut). */
int tuifmt_pick(const char *const *texts, int n, int width);

/* Which of n_items consecutive items (a grid's rows or columns) are shown in avail
 * slots: from the first, or so that focus is the last shown when it would not be
 * visible; before / after say that items are hidden there (the view draws a scroll
 * marker and the keys that move the focus scroll it). count 0 when nothing fits. */
typedef struct {
    int first, count;
    bool before, after;
} tuifmt_span;

void tuifmt_span_compute(int n_items, int focus, int avail, tuifmt_span *s);

/* The columns of a grid of n cells per row beside a row label (the layers x heads
 * grid, the attribution view's heads), in width columns of which reserve are kept at
 * the right (the MLP column). A label is label_min..label_pref columns, a cell
 * cell_min..cell_max, each with its gap. */
typedef struct {
    int label_min, label_pref;
    int cell_min, cell_max;
    int reserve;
} tuifmt_grid_want;

typedef struct {
    int label_w, cell_w; /* 0 when n is 0 */
    tuifmt_span cols;    /* the cells shown: all of them when every one gets cell_min,
                            else as many as fit around focus */
} tuifmt_grid;

void tuifmt_grid_columns(const tuifmt_grid_want *want, int width, int n, int focus, tuifmt_grid *g);

/* One component of a direct logit attribution as the attribution view lists it, layers
 * and heads from 1: "L3 H7 +2.31", "L4 MLP -1.80", "embedding +0.52", "vectors +0.40". */
void tuifmt_attribution_part(const attribution_part *p, char *out, size_t size);

/* tokens per second from a count and milliseconds: "1234", "12.3", or "-" when
 * there is nothing to measure. */
void tuifmt_rate(double tokens, double ms, char *buf, size_t size);

#endif
