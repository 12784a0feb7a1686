/* overlays.c — the overlays' table and their stack (see overlays.h).
 *
 * Owns each overlay's state and the stack's order: indices into the table. */
#include "overlays.h"

#include <stdlib.h>
#include <string.h>

#include "compute_view.h"
#include "experts_view.h"
#include "help.h"
#include "patch_view.h"

/* Every overlay, and the key action that opens it (from a pane, or over another
 * overlay). */
static const overlay_row table[] = {
    {.ops = &help_view_ops, .opens = ACT_HELP},
    {.ops = &compute_view_ops, .opens = ACT_COMPUTE},
    {.ops = &experts_view_ops, .opens = ACT_EXPERTS, .command = "experts"},
    {.ops = &patch_view_ops, .opens = ACT_PATCH, .command = "patch"},
};
enum { N_TABLE = sizeof table / sizeof table[0] };

struct overlay_stack {
    void *state[N_TABLE]; /* each row's, from its new (NULL without) */
    int open[N_TABLE];    /* (n) rows open, bottom first */
    int n;
};

const overlay_row *overlays_table(int *n)
{
    *n = N_TABLE;
    return table;
}

overlay_stack *overlays_new(const view_env *env)
{
    overlay_stack *s = calloc(1, sizeof *s);
    if (!s)
        tui_die("out of memory");
    for (int i = 0; i < N_TABLE; i++)
        s->state[i] = table[i].ops->new ? table[i].ops->new(env) : NULL;
    return s;
}

void overlays_free(overlay_stack *s)
{
    if (!s)
        return;
    for (int i = 0; i < N_TABLE; i++)
        if (table[i].ops->free)
            table[i].ops->free(s->state[i]);
    free(s);
}

static int row_of(key_action a)
{
    for (int i = 0; i < N_TABLE; i++)
        if (table[i].opens == a)
            return i;
    return -1;
}

const view_ops *overlays_opened_by(key_action a)
{
    int r = row_of(a);
    return r < 0 ? NULL : table[r].ops;
}

key_action overlays_command(const char *name)
{
    for (int i = 0; i < N_TABLE; i++)
        if (table[i].command && !strcmp(table[i].command, name))
            return table[i].opens;
    return ACT_NONE;
}

const char *overlays_why_closed(const overlay_stack *s, key_action a)
{
    int r = row_of(a);
    return r < 0 || !table[r].ops->why_closed ? NULL : table[r].ops->why_closed(s->state[r]);
}

void overlays_push(overlay_stack *s, key_action a)
{
    int r = row_of(a);
    if (r < 0)
        return;
    int k = 0; /* the stack without r */
    for (int i = 0; i < s->n; i++)
        if (s->open[i] != r)
            s->open[k++] = s->open[i];
    s->open[k] = r;
    s->n = k + 1;
    if (table[r].ops->open)
        table[r].ops->open(s->state[r]);
}

void overlays_pop(overlay_stack *s)
{
    if (s->n > 0)
        s->n--;
}

int overlays_count(const overlay_stack *s)
{
    return s->n;
}

view_handle overlays_at(const overlay_stack *s, int i)
{
    int r = s->open[i];
    return (view_handle){table[r].ops, s->state[r]};
}
