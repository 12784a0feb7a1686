/* control_vectors.c — adding the control vectors' sum at l_out (control_vectors.h). */
#include "control_vectors.h"

#include <stddef.h>

void control_vectors_edit(void *user, hook_slice *x)
{
    const control_vectors *cv = user;
    const float *sum = *cv->sum;
    if (!sum)
        return;
    const float *v = sum + (size_t)x->layer * cv->dim + x->col;
    for (int i = 0; i < x->n; i++) {
        float *row = x->data + (size_t)i * x->stride;
        for (int j = 0; j < x->width; j++)
            row[j] += v[j];
    }
}
