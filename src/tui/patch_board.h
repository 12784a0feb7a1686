/* patch_board.h — the patching grid the TUI shows (/patch, the patching view): a grid
 * being run on the model a cell at a time between the keys (patching.h), or one read
 * from a trace (llmchat --view of a -m patch --trace; no model, so no cell runs again).
 *
 * Owns the prompts, the patching and the transformer it runs on (a KV cache of its
 * own: the chat's is not touched); borrows the model. Draws nothing: the patching view
 * (patch_view.c) reads it, the controller (tui.c) starts, steps and stops it. */
#ifndef LLMCHAT_TUI_PATCH_BOARD_H
#define LLMCHAT_TUI_PATCH_BOARD_H

#include <stdbool.h>

#include "patching.h"
#include "status.h"
#include "trace_read.h"
#include "transformer.h"

typedef struct patch_board patch_board;

/* What the view shows. */
typedef struct {
    patch_site site;
    patch_metric metric;
    int layer_first;
    int rows, cols;              /* layers; positions (n) or heads */
    const float *grid;           /* (rows, cols): NAN where a cell has not run or the layer
                                    has no such head (patch_board_cell_ran tells which) */
    int n;
    const int *clean, *corrupt;  /* (n) the two prompts */
    int answer, wrong;           /* the logit difference's tokens */
    double clean_value, corrupt_value; /* the two runs' logit differences (KL: 0 and the
                                          corrupted run's) */
    const float *clean_logits, *corrupt_logits; /* (vocab) NULL from a trace */
    int done, total;             /* cells run, cells in all */
    bool running;                /* cells are left and it was not stopped */
    bool live;                   /* a model runs it (else a trace's) */
} patch_grid;

patch_board *patch_board_new(void); /* NULL when out of memory */
void patch_board_free(patch_board *b); /* NULL does nothing */

/* Starts a grid of every layer on m (a transformer of patching_ctx positions, KV cache
 * kv) for the prompts clean and corrupt (n_clean, n_corrupt ids: refused with both
 * counts when they differ, and above 1024 tokens), site and metric; the answer and wrong tokens are the two runs' top
 * tokens, and where those agree the metric becomes the KL divergence (*note says so;
 * else ""). Runs the two prompts now; the cells run in patch_board_step. The grid
 * before is dropped, also when this fails. */
llm_status patch_board_start(patch_board *b, const model *m, transformer_kv kv, const int *clean,
                             int n_clean, const int *corrupt, int n_corrupt, patch_site site,
                             patch_metric metric, char *note, size_t note_size, llm_err *err);
/* The same prompts again with another site or metric (a live grid only); the grid
 * before stays when this fails, as it does when the logit difference is asked for
 * where it fell back to KL (the runs' top tokens agree: nothing to measure). */
llm_status patch_board_restart(patch_board *b, patch_site site, patch_metric metric, char *note,
                               size_t note_size, llm_err *err);

/* Shows a trace's grid (trace_read.h; borrowed until the board starts another or is
 * freed). */
void patch_board_show_trace(patch_board *b, const trace_patch *tp);

/* Whether there is a grid to show. */
bool patch_board_has_grid(const patch_board *b);
bool patch_board_running(const patch_board *b);
/* Runs the next cell. On a failure the grid stops where it was. */
llm_status patch_board_step(patch_board *b, llm_err *err);
/* Stops the grid: the cells run stay, the rest are not run. */
void patch_board_stop(patch_board *b);

/* The grid as it stands (false when there is none). */
bool patch_board_grid(const patch_board *b, patch_grid *out);
bool patch_board_cell_ran(const patch_board *b, int row, int col);
/* Cell (row, col)'s patched run's next-token logits (vocab, the board's until the next
 * call): run again on the model; fails for a trace's grid (it needs the model), a cell
 * outside the grid, a head the layer lacks. */
llm_status patch_board_cell_logits(patch_board *b, int row, int col, const float **logits,
                                   llm_err *err);

#endif
