/* ran_with.c — a turn's interventions by segment (ran_with.h). */
#include "ran_with.h"

#include <stdlib.h>

#include "intervention_json.h"

void ran_with_clear(ran_with *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->seg[i].in);
    free(r->seg);
    r->seg = NULL;
    r->n = 0;
}

bool ran_with_add(ran_with *r, int from, const intervention *in)
{
    if (r->n > 0 && intervention_same(r->seg[r->n - 1].in, in))
        return true;
    intervention *copy = NULL;
    if (!intervention_is_empty(in) && !(copy = intervention_copy(in, NULL)))
        return false;
    ran_segment *grown = realloc(r->seg, sizeof *grown * (size_t)(r->n + 1));
    if (!grown) {
        free(copy);
        return false;
    }
    r->seg = grown;
    r->seg[r->n++] = (ran_segment){.from = from, .in = copy};
    return true;
}

const intervention *ran_with_at(const ran_with *r, int from)
{
    int i = 0;
    while (i + 1 < r->n && r->seg[i + 1].from <= from)
        i++;
    return r->seg[i].in;
}

bool ran_with_differs(const ran_with *r, const intervention *in)
{
    for (int i = 0; i < r->n; i++)
        if (!intervention_same(r->seg[i].in, in))
            return true;
    return false;
}

bool ran_with_copy(ran_with *dst, const ran_with *src)
{
    ran_with_clear(dst);
    for (int i = 0; i < src->n; i++)
        if (!ran_with_add(dst, src->seg[i].from, src->seg[i].in)) {
            ran_with_clear(dst);
            return false;
        }
    return true;
}
