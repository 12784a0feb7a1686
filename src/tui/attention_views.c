/* attention_views.c — the Attention pane's views as a table (see attention_views.h),
 * one row per view in the order v cycles them, and what several views draw alike.
 *
 * To add a view: its file (listed in Makefile.am) with its view_ops, declared in
 * attention_views.h, and its row below. Owns nothing. */
#include "attention_views.h"

#include <stdio.h>

const attn_view_row attn_views[] = {
    /* one layer's attention, queries x keys, of one head or the mean of the heads */
    [ATTN_VIEW_HEATMAP] = {.ops = &heatmap_view_ops, .shows = ATTN_SHOWS_MEAN | ATTN_SHOWS_SHADE,
                           .up_down = ATTN_AXIS_LAYER, .left_right = ATTN_AXIS_POSITION,
                           .reads_attention = true},
    /* the logit lens of the selected position: layers x its top 3 */
    {.ops = &lens_view_ops, .up_down = ATTN_AXIS_LAYER, .left_right = ATTN_AXIS_POSITION},
    /* the lens's top token, layers x positions */
    {.ops = &lens_grid_view_ops, .up_down = ATTN_AXIS_LAYER, .left_right = ATTN_AXIS_POSITION},
    /* every head of the layer at the selected position */
    {.ops = &heads_view_ops, .shows = ATTN_SHOWS_SHADE | ATTN_SHOWS_METRIC,
     .up_down = ATTN_AXIS_HEAD, .left_right = ATTN_AXIS_POSITION, .head_cursor = true,
     .reads_attention = true},
    /* layers x heads at the selected position */
    {.ops = &head_grid_view_ops, .shows = ATTN_SHOWS_METRIC, .up_down = ATTN_AXIS_LAYER,
     .left_right = ATTN_AXIS_HEAD, .head_cursor = true, .reads_attention = true},
    /* direct logit attribution at the selected position */
    {.ops = &attribution_view_ops, .shows = ATTN_SHOWS_TARGET, .up_down = ATTN_AXIS_LAYER,
     .left_right = ATTN_AXIS_POSITION, .head_cursor = true},
};
const int attn_view_count = (int)(sizeof attn_views / sizeof attn_views[0]);

int attn_first_visible(const attn_cursor *c, int l, int q)
{
    int window = source_window(c->src, l);
    return window > 0 && q >= window ? q - window + 1 : 0;
}

const char *attn_window_note(const attn_cursor *c, int l, char *buf, size_t size)
{
    int window = source_window(c->src, l);
    if (window <= 0)
        return "";
    snprintf(buf, size, "  window %d", window);
    return buf;
}

void attn_draw_outside(const tui_screen *scr, WINDOW *w, int y, int x)
{
    draw_text(scr, w, y, x, 1, "-", A_DIM);
}
