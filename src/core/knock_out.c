/* knock_out.c — zeroing knocked-out heads' attention output at kqv, and emptying a
 * reset DeltaNet head's state through its beta and gate (knock_out.h). */
#include "knock_out.h"

#include <string.h>

/* beta and gate: one value per value head; a reset head's write strength 0 and its
 * decay 0 (its state emptied before the position's write, which writes nothing). */
static void empty_state(const unsigned char *row, hook_slice *x)
{
    float v = x->point == HOOK_DN_BETA ? 0.0f : KNOCK_OUT_EMPTY_GATE;
    for (int h = x->col; h < x->col + x->width; h++) {
        if (row[h] != KNOCK_OUT_RESET)
            continue;
        for (int i = 0; i < x->n; i++)
            x->data[(size_t)i * x->stride + (h - x->col)] = v;
    }
}

void knock_out_edit(void *user, hook_slice *x)
{
    const knock_out *k = user;
    const unsigned char *mask = *k->mask;
    if (!mask || !*k->enabled)
        return;
    const unsigned char *row = mask + (size_t)x->layer * k->n_heads;
    bool dn = k->layers && k->layers[x->layer].kind == MODEL_LAYER_DELTA_NET;
    if (x->point == HOOK_DN_BETA || x->point == HOOK_DN_GATE) {
        if (dn)
            empty_state(row, x);
        return;
    }
    int hs = dn ? k->dn_head_size : k->layers ? k->layers[x->layer].head_size : k->head_size;
    int heads = dn ? k->dn_heads : k->attn_heads;
    int end = x->col + x->width;
    for (int h = x->col / hs; h < heads && h * hs < end; h++) {
        if (!row[h])
            continue;
        int c0 = h * hs > x->col ? h * hs : x->col; /* the head's columns handed */
        int c1 = (h + 1) * hs < end ? (h + 1) * hs : end;
        for (int i = 0; i < x->n; i++)
            memset(x->data + (size_t)i * x->stride + (c0 - x->col), 0,
                   sizeof(float) * (size_t)(c1 - c0));
    }
}
