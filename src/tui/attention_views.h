/* attention_views.h — the Attention pane's views: what they share, and their table.
 *
 * The table (attention_views.c) has one row per view, in the order v cycles them: the
 * view's view_ops (view_ops.h: its name, as the help overlay and the man page call it,
 * and its draw, inside the pane's border) and what the pane's keys do in it: which of
 * the pane's settings it shows, what the arrows move, whether it has a cursor on one
 * layer and head, whether it reads the attention rows. The pane (attention_pane.c)
 * reads the row for every decision that depends on the view; the views read the
 * pane's cursor and settings (attn_cursor), which only the pane writes.
 *
 * A new view is a file that defines its view_ops (declared below with the others):
 * its draw reads the attn_cursor it is handed as its state, or keeps a state of its
 * own (new, free) made with env->host, the cursor; a why_not of its own when it
 * refuses a pane key the row alone cannot say; and one row in attention_views.c's
 * table, where it goes in v's order. Its name goes into the v / V text in keys.c and
 * the man page's KEYS section; tests/test_tui_views.c checks the row and the text.
 * Nothing else names a view. */
#ifndef LLMCHAT_TUI_ATTENTION_VIEWS_H
#define LLMCHAT_TUI_ATTENTION_VIEWS_H

#include <stdbool.h>
#include <stddef.h>

#include "draw.h"
#include "selection.h"
#include "source.h"
#include "view_ops.h"

/* What the views share: the pane's cursor and settings, changed by its keys. */
typedef struct {
    const tui_source *src;   /* the engine (its capture is switched by 'c'), or a trace */
    const model_config *cfg; /* n_layers, n_heads */
    tui_selection *sel;      /* the selected position, shared with Tokens */
    int layer, head;         /* the layer and head shown, the head cursor (from 0) */
    int target;              /* the attribution's target (source_attribution_target) */
    bool mean_heads;         /* the heatmap shows the mean of the heads */
    bool log_scale;          /* weights shaded on a log scale */
    bool mask_bos;           /* the first key (BOS, the "sink") left out of the shades */
    bool bos_metric;         /* heads shaded by their weight on BOS, not their entropy */
    bool capture;            /* the engine keeps attention rows */
} attn_cursor;

/* What a pair of arrow keys moves in a view. */
typedef enum {
    ATTN_AXIS_NONE = 0, /* not a row's value: every row says */
    ATTN_AXIS_LAYER,    /* the layer (as [ and ]) */
    ATTN_AXIS_HEAD,     /* the head (as { and }) */
    ATTN_AXIS_POSITION, /* the selected position */
} attn_axis;

/* The pane's settings a view shows: the keys that change them work in the views that
 * show them, and elsewhere say where they work. */
enum {
    ATTN_SHOWS_MEAN = 1 << 0,   /* m: one head, or the mean of the heads */
    ATTN_SHOWS_SHADE = 1 << 1,  /* l, b: weights on a log scale, BOS masked */
    ATTN_SHOWS_METRIC = 1 << 2, /* e: each head's entropy, or its weight on BOS */
    ATTN_SHOWS_TARGET = 1 << 3, /* t, T: the attribution's target */
};

/* A row of the table: a view and what the pane's keys do in it. */
typedef struct {
    const view_ops *ops;  /* .name, .draw; .new, .free and .why_not where it has them */
    unsigned shows;       /* ATTN_SHOWS_* */
    attn_axis up_down;    /* what Up and Down move: the layer or the head */
    attn_axis left_right; /* what Left and Right move: the position or the head */
    bool head_cursor;     /* a cursor on one layer and head: Enter opens it in the
                             heatmap, x knocks that head out */
    bool reads_attention; /* draws the selected position's attention rows: a live
                             engine computes them again first when they were dropped */
} attn_view_row;

/* The views, in v's order; attn_view_count of them. */
extern const attn_view_row attn_views[];
extern const int attn_view_count;
/* The heatmap's row: Enter opens a head cursor's layer and head there, and while there
 * are no positions yet the pane shows it (it says so) whatever view is chosen. */
enum { ATTN_VIEW_HEATMAP = 0 };

/* Each view's file: heatmap_view.c, lens_view.c (the lens and its grid), heads_view.c
 * (every head of a layer, layers x heads), attribution_view.c. */
extern const view_ops heatmap_view_ops;
extern const view_ops lens_view_ops;
extern const view_ops lens_grid_view_ops;
extern const view_ops heads_view_ops;
extern const view_ops head_grid_view_ops;
extern const view_ops attribution_view_ops;

/* ---- what several views draw alike ---- */
/* The first key query q sees at layer l: those before it are outside the layer's
 * sliding window (0 when it has none). */
int attn_first_visible(const attn_cursor *c, int l, int q);
/* "  window N" for a layer with a sliding window (its keys before the last N are
 * masked: drawn as dashes), else "". */
const char *attn_window_note(const attn_cursor *c, int l, char *buf, size_t size);
/* A key outside the window: a dim dash, which no shade looks like. */
void attn_draw_outside(const tui_screen *scr, WINDOW *w, int y, int x);

#endif
