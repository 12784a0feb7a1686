/* attention_views.h — the Attention pane's views, in the order 'v' cycles them, and
 * their names as the help overlay and the man page call them.
 *
 * One list for the pane (attention_pane.c draws each view) and for the check that the
 * key table's v / V text names every view (tests/test_tui_keys.c). No curses here. */
#ifndef LLMCHAT_TUI_ATTENTION_VIEWS_H
#define LLMCHAT_TUI_ATTENTION_VIEWS_H

typedef enum {
    VIEW_HEATMAP = 0, /* one layer's attention, queries x keys */
    VIEW_LENS,        /* the logit lens of the selected position: layers x top 3 */
    VIEW_LENS_GRID,   /* the lens's top token, layers x positions */
    VIEW_HEADS,       /* every head of the layer at the selected position */
    VIEW_HEAD_GRID,   /* layers x heads at the selected position */
    VIEW_ATTRIBUTION, /* direct logit attribution at the selected position */
    VIEW_COUNT
} attn_view;

static const char *const ATTN_VIEW_NAMES[VIEW_COUNT] = {
    [VIEW_HEATMAP] = "heatmap",
    [VIEW_LENS] = "lens",
    [VIEW_LENS_GRID] = "lens grid",
    [VIEW_HEADS] = "heads",
    [VIEW_HEAD_GRID] = "layers x heads",
    [VIEW_ATTRIBUTION] = "attribution",
};

#endif
