/* expert_knock_out.c — the router's logits of knocked-out experts set to -INFINITY at
 * ffn_moe_logits (expert_knock_out.h). */
#include "expert_knock_out.h"

#include <math.h>

void expert_knock_out_edit(void *user, hook_slice *x)
{
    const expert_knock_out *k = user;
    const unsigned char *mask = *k->mask;
    if (!mask || x->layer < 0)
        return;
    const unsigned char *row = mask + (size_t)x->layer * k->n_experts;
    for (int c = 0; c < x->width && x->col + c < k->n_experts; c++) {
        if (!row[x->col + c])
            continue;
        for (int i = 0; i < x->n; i++)
            x->data[(size_t)i * x->stride + c] = -INFINITY;
    }
}
