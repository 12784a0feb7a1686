/* experts_format.h — the experts view's text, without curses (tested by
 * tests/test_tui_experts.c): a layer's route ("#12 0.41  #7 0.33"), the heat strip of
 * how often each expert was chosen (one shade a cell, the experts folded into the
 * columns there are), the router's distribution ranked, and which positions the
 * counts are over (the reply around the selected position).
 *
 * Owns nothing; pure functions over what the caller hands them. */
#ifndef LLMCHAT_TUI_EXPERTS_FORMAT_H
#define LLMCHAT_TUI_EXPERTS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

enum { EXPERTS_LINE_MAX = 1024, EXPERTS_SHADES = 5 };

/* A route of k experts with their weights, most probable first, in at most width
 * columns: "#12 0.41  #7 0.33"; the ones that do not fit are counted at the end
 * ("#12 0.41 +6"). weights NULL: the numbers only. Returns the columns written. */
int experts_route_text(const int *experts, const float *weights, int k, int width, char *out,
                       size_t size);
/* The columns a whole route of k experts out of n_experts takes ("#127 0.41" each,
 * two blanks between). */
int experts_route_width(int k, int n_experts);

/* How a strip of n_experts goes into width columns: `cells` cells of `cell_w` columns,
 * cell c counting experts c * per .. c * per + per - 1 (the last may hold fewer). One
 * expert a cell, up to three columns wide, when they fit; else `per` experts a column.
 * cells 0 when width < 1. */
typedef struct {
    int cells, per, cell_w;
} experts_fold;

void experts_fold_compute(int n_experts, int width, experts_fold *f);
/* The counts of the cells (f->cells) from each expert's (n_experts). Returns the
 * largest. */
int experts_fold_counts(const int *counts, int n_experts, const experts_fold *f, int *cells);
/* The cell of expert e. */
int experts_fold_cell(const experts_fold *f, int e);

/* The shade of a count against the largest: 0 (never chosen) .. EXPERTS_SHADES - 1
 * (as often as the most chosen); any choice at all is at least 1. */
int experts_shade(int count, int largest);
/* Its character: "·░▒▓█" in UTF-8, ".:+*#" without. */
const char *experts_shade_char(int shade, bool utf8);
/* The strip of a fold's cell counts (f->cells) as text: each cell cell_w columns, its
 * shade repeated cell_w - 1 times and a blank when cell_w > 1. Returns the columns. */
int experts_strip(const int *cells, const experts_fold *f, int largest, bool utf8, char *out,
                  size_t size);
/* The strip's scale line: the first expert's number under the first cell, the last's
 * ending under the last, and numbers between where they fit. Returns the columns. */
int experts_scale(const experts_fold *f, int n_experts, char *out, size_t size);

/* The experts ranked by probability (most probable first; equal ones by number), at
 * most max into order. Returns how many. */
int experts_rank(const float *probs, int n_experts, int *order, int max);

/* Positions first..last whose counts the strip shows around pos (0 <= pos < n): the
 * run of reply positions (prompt[p] false) that holds pos, or, at a prompt position,
 * the run of prompt positions; with all, every position 0..n-1. Returns true when the
 * range is a reply. */
bool experts_range(const bool *prompt, int n, int pos, bool all, int *first, int *last);

#endif
