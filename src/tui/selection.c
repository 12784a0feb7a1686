/* selection.c — the selected position shared by Tokens and Attention (see selection.h).
 *
 * Owns nothing but the position. */
#include "selection.h"

int selection_get(const tui_selection *s, const tui_source *src)
{
    int n = source_count(src);
    if (n <= 0)
        return -1;
    if (s->pos < 0 || s->pos >= n)
        return n - 1;
    return s->pos;
}

void selection_set(tui_selection *s, const tui_source *src, int pos)
{
    int newest = source_count(src) - 1;
    s->pos = pos < 0 || pos >= newest ? -1 : pos;
}

bool selection_follows(const tui_selection *s, const tui_source *src)
{
    return s->pos < 0 || s->pos >= source_count(src) - 1;
}

const char *selection_why_not(const tui_selection *s, const tui_source *src, key_action a)
{
    int cur = selection_get(s, src);
    bool back = a == ACT_SEL_PREV || a == ACT_SEL_BACK10 || a == ACT_SEL_FIRST;
    bool ahead = a == ACT_SEL_NEXT || a == ACT_SEL_AHEAD10 || a == ACT_SEL_NEWEST;
    if (!back && !ahead)
        return NULL;
    if (cur < 0)
        return "no positions yet: send a message first";
    if (back && cur == 0)
        return "already at the first position";
    if (ahead && selection_follows(s, src))
        return "already at the newest position (the selection follows it)";
    return NULL;
}

bool selection_act(tui_selection *s, const tui_source *src, key_action a)
{
    int cur = selection_get(s, src);
    switch (a) {
    case ACT_SEL_PREV: selection_set(s, src, cur > 0 ? cur - 1 : 0); return true;
    case ACT_SEL_NEXT: selection_set(s, src, cur + 1); return true;
    case ACT_SEL_BACK10: selection_set(s, src, cur > 10 ? cur - 10 : 0); return true;
    case ACT_SEL_AHEAD10: selection_set(s, src, cur + 10); return true;
    case ACT_SEL_FIRST: selection_set(s, src, 0); return true;
    case ACT_SEL_NEWEST: selection_set(s, src, -1); return true;
    default: return false;
    }
}
