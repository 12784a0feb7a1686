/* expert_force.c — a forced expert's router logit raised just above the others' at
 * ffn_moe_logits (expert_force.h). */
#include "expert_force.h"

#include <math.h>

void expert_force_edit(void *user, hook_slice *x)
{
    const expert_force *f = user;
    const int *forced = *f->forced;
    if (!forced || x->layer < 0)
        return;
    int e = forced[x->layer];
    if (e < x->col || e >= x->col + x->width || e >= f->n_experts)
        return; /* none forced here, or another thread's column */
    const unsigned char *out = *f->out ? *f->out + (size_t)x->layer * f->n_experts : NULL;
    for (int i = 0; i < x->n; i++) {
        float *row = x->data + (size_t)i * x->stride - x->col; /* column 0 of row i */
        float max = -INFINITY;
        for (int o = 0; o < f->n_experts; o++)
            if (o != e && !(out && out[o]) && row[o] > max)
                max = row[o];
        if (!(row[e] > max))
            row[e] = nextafterf(max, INFINITY);
    }
}
