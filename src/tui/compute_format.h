/* compute_format.h — the compute view's text, without curses (tests/test_tui_compute.c):
 * numbers in a few columns, a step's shape, the sparkline of its histogram, the
 * columns of the step list that fit a width (and which were left out), one row of the
 * list, what each step is, and the weight view's lines (a block taken apart, the
 * activation group, the partial dot product), wrapped to a width so that nothing is
 * cut. */
#ifndef LLMCHAT_TUI_COMPUTE_FORMAT_H
#define LLMCHAT_TUI_COMPUTE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "step.h"
#include "step_weight.h"

/* v in at most width columns, as precise as fits ("-0.0123", "1.2e5", "-inf"); "" when
 * width < 1. Returns the length (ASCII). */
int cfmt_number(float v, int width, char *out, size_t size);

/* "[64]", "[8,5]". Returns the length. */
int cfmt_shape(const step_tensor *t, char *out, size_t size);

/* The histogram as width columns of bars (eighths: U+2581..U+2588 in UTF-8, else
 * " .:-=+*#"), bins merged in equal runs when width is less than STEP_TENSOR_BINS; an
 * empty bin is a space. Returns the bytes written. */
int cfmt_sparkline(const unsigned hist[STEP_TENSOR_BINS], int width, bool utf8, char *out,
                   size_t size);

/* The step list's columns at a width, for names name_w and shapes shape_w wide (the
 * longest of the list: never cut): the name and the shape always, then, as room
 * allows, L2, min, max, the histogram, mean and the first values (as many as fit, up to
 * STEP_TENSOR_FIRST); `hidden` names the ones left out ("mean, first values"), "" when
 * none is. */
typedef struct {
    int name_w, shape_w, num_w, hist_w; /* hist_w 0: hidden */
    bool l2, min, max, mean;
    int n_first;
    int width;                          /* the columns the row takes */
    char hidden[64];
} compute_columns;

void compute_columns_for(int width, int name_w, int shape_w, compute_columns *c);

/* The header line of the list for c. */
void compute_header(const compute_columns *c, char *out, size_t size);
/* One row of the list: t in the columns c. */
void compute_row(const step_tensor *t, const compute_columns *c, bool utf8, char *out,
                 size_t size);

/* What a step holds, in a few words ("the queries, after RoPE"); "" for a name this
 * table does not know. */
const char *compute_step_about(const char *name);

/* Lines of text at most `width` columns each (ASCII). */
enum { COMPUTE_TEXT_LINES = 512, COMPUTE_LINE_MAX = 320 };
typedef struct {
    int n;
    char line[COMPUTE_TEXT_LINES][COMPUTE_LINE_MAX];
    bool cut;   /* more lines than COMPUTE_TEXT_LINES: the last says so */
} compute_text;

/* The weight view of w for a width (at least 20): the tensor, the block (and the
 * file's when the loader converted it), the activation group, the partial and the row
 * total, each number list wrapped. */
void compute_weight_text(const step_weight *w, int width, compute_text *out);

#endif
