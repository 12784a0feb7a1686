/* capture.c — the forward pass's steps at one position, copied at the hook points, and
 * their summaries (see capture.h). Owns each capture's values. */
#include "capture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True for the points outside the layers that the pass reaches before them. */
static bool before_layers(hook_point p)
{
    for (int q = 0; q < HOOK_COUNT; q++)
        if (hook_in_layer((hook_point)q))
            return (int)p < q;
    return true;
}

/* Calls fn for every step of a capture in the pass's order, with its index. */
typedef void (*step_fn)(void *user, int i, hook_point p, int layer);

static int each_step(int layer_first, int layer_last, step_fn fn, void *user)
{
    int i = 0;
    for (int p = 0; p < HOOK_COUNT; p++)
        if (!hook_in_layer((hook_point)p) && before_layers((hook_point)p))
            fn(user, i++, (hook_point)p, -1);
    for (int l = layer_first; l <= layer_last; l++)
        for (int p = 0; p < HOOK_COUNT; p++)
            if (hook_in_layer((hook_point)p))
                fn(user, i++, (hook_point)p, l);
    for (int p = 0; p < HOOK_COUNT; p++)
        if (!hook_in_layer((hook_point)p) && !before_layers((hook_point)p))
            fn(user, i++, (hook_point)p, -1);
    return i;
}

typedef struct {
    const model_config *c;
    int pos;
    size_t floats;
    captured_step *steps; /* NULL: only count */
} layout;

static void lay_out(void *user, int i, hook_point p, int layer)
{
    layout *o = user;
    int dims[2];
    int nd = hook_shape(o->c, p, o->pos, dims);
    int n = dims[0] * (nd == 2 ? dims[1] : 1);
    if (o->steps)
        o->steps[i] = (captured_step){.point = p, .layer = layer, .n_dims = nd,
                                      .shape = {dims[0], nd == 2 ? dims[1] : 1}, .n = n,
                                      .values = NULL, .seen = false};
    o->floats += (size_t)n;
}

/* The layers clamped to the model's; first > last when none. */
static void clamp_layers(const model_config *c, int *first, int *last)
{
    if (*first < 0)
        *first = 0;
    if (*last > c->n_layers - 1)
        *last = c->n_layers - 1;
}

size_t capture_bytes(const model_config *c, int pos, int layer_first, int layer_last)
{
    clamp_layers(c, &layer_first, &layer_last);
    layout o = {.c = c, .pos = pos};
    int n = each_step(layer_first, layer_last, lay_out, &o);
    return sizeof(tensor_capture) + sizeof(captured_step) * (size_t)n + sizeof(float) * o.floats;
}

llm_status capture_new(const model_config *c, int pos, int layer_first, int layer_last,
                       tensor_capture **out, llm_err *err)
{
    *out = NULL;
    if (pos < 0)
        return llm_fail(err, LLM_ERR_ARG, "no position %d to capture", pos);
    clamp_layers(c, &layer_first, &layer_last);
    layout o = {.c = c, .pos = pos};
    int n = each_step(layer_first, layer_last, lay_out, &o);
    tensor_capture *cap = calloc(1, sizeof *cap);
    if (cap) {
        cap->steps = calloc((size_t)n, sizeof *cap->steps);
        cap->buf = malloc(sizeof(float) * (o.floats ? o.floats : 1));
    }
    if (!cap || !cap->steps || !cap->buf) {
        capture_free(cap);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the %zu MB of the pass's steps",
                        (sizeof(float) * o.floats) >> 20);
    }
    o.steps = cap->steps;
    o.floats = 0;
    each_step(layer_first, layer_last, lay_out, &o);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        cap->steps[i].values = cap->buf + at;
        at += (size_t)cap->steps[i].n;
    }
    cap->pos = pos;
    cap->layer_first = layer_first;
    cap->layer_last = layer_last;
    cap->n_steps = n;
    cap->bytes = sizeof *cap + sizeof(captured_step) * (size_t)n + sizeof(float) * at;
    *out = cap;
    return LLM_OK;
}

void capture_free(tensor_capture *cap)
{
    if (!cap)
        return;
    free(cap->steps);
    free(cap->buf);
    free(cap);
}

/* The index of (p, layer) among the steps before capture_finish, or -1. The steps are
 * laid out in each_step's order, so it is found by arithmetic. */
static int step_index(const tensor_capture *cap, hook_point p, int layer)
{
    int before = 0, per_layer = 0, k = -1;
    for (int q = 0; q < HOOK_COUNT; q++) {
        if (hook_in_layer((hook_point)q)) {
            if (q == (int)p)
                k = per_layer;
            per_layer++;
        } else if (before_layers((hook_point)q)) {
            if (q == (int)p)
                return layer < 0 ? before : -1;
            before++;
        }
    }
    int layers = cap->layer_last - cap->layer_first + 1;
    if (layers < 0)
        layers = 0;
    if (k >= 0)
        return layer >= cap->layer_first && layer <= cap->layer_last
                   ? before + (layer - cap->layer_first) * per_layer + k
                   : -1;
    int after = 0;
    for (int q = 0; q < HOOK_COUNT; q++)
        if (!hook_in_layer((hook_point)q) && !before_layers((hook_point)q)) {
            if (q == (int)p)
                return layer < 0 ? before + layers * per_layer + after : -1;
            after++;
        }
    return -1;
}

/* The observer: one row (the capture's position) of a point, or one head's. A
 * per-head point is called from several threads, each for its own heads: only head
 * 0's call marks the step seen. */
static void capture_observe(void *user, const hook_tensor *x)
{
    tensor_capture *cap = user;
    int i = step_index(cap, x->point, x->layer);
    if (i < 0 || x->pos != cap->pos || x->n < 1)
        return;
    captured_step *s = &cap->steps[i];
    if (x->head >= 0) {
        int w = x->width < s->shape[1] ? x->width : s->shape[1];
        if (x->head < s->shape[0])
            memcpy(s->values + (size_t)x->head * s->shape[1], x->data, sizeof(float) * (size_t)w);
        if (x->head == 0)
            s->seen = true;
        return;
    }
    int w = x->width < s->n ? x->width : s->n;
    memcpy(s->values, x->data, sizeof(float) * (size_t)w);
    if (s->n_dims == 1 && w < s->n) /* a layer narrower than the widest (hook_shape) */
        s->n = s->shape[0] = w;
    s->seen = true;
}

hook capture_hook(tensor_capture *cap)
{
    return (hook){.fn = capture_observe, .user = cap, .points = HOOK_ALL,
                  .layer_first = cap->layer_first, .layer_last = cap->layer_last,
                  .pos = cap->pos};
}

void capture_finish(tensor_capture *cap)
{
    int k = 0;
    for (int i = 0; i < cap->n_steps; i++)
        if (cap->steps[i].seen)
            cap->steps[k++] = cap->steps[i];
    cap->n_steps = k;
}

const captured_step *capture_find(const tensor_capture *cap, hook_point p, int layer)
{
    for (int i = 0; cap && i < cap->n_steps; i++)
        if (cap->steps[i].point == p && cap->steps[i].layer == layer)
            return &cap->steps[i];
    return NULL;
}

void capture_summarize(const char *name, int layer, int n_dims, const int shape[2],
                       const float *v, int n, step_tensor *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "?");
    out->layer = layer;
    out->n_dims = n_dims;
    out->shape[0] = shape[0];
    out->shape[1] = n_dims == 2 ? shape[1] : 1;
    out->n = n;
    out->n_first = n < STEP_TENSOR_FIRST ? n : STEP_TENSOR_FIRST;
    memcpy(out->first, v, sizeof(float) * (size_t)out->n_first);
    double sum = 0.0, ss = 0.0;
    float lo = INFINITY, hi = -INFINITY;
    int finite = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        finite++;
        sum += v[i];
        ss += (double)v[i] * v[i];
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    out->n_masked = n - finite;
    if (finite == 0) {
        out->min = out->max = out->mean = out->l2 = NAN;
        return;
    }
    out->min = lo;
    out->max = hi;
    out->mean = (float)(sum / finite);
    out->l2 = (float)sqrt(ss);
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        int b = STEP_TENSOR_BINS / 2;
        if (hi > lo) {
            b = (int)((double)(v[i] - lo) / ((double)hi - lo) * STEP_TENSOR_BINS);
            b = b < 0 ? 0 : b >= STEP_TENSOR_BINS ? STEP_TENSOR_BINS - 1 : b;
        }
        out->hist[b]++;
    }
}

void capture_summarize_step(const captured_step *s, step_tensor *out)
{
    capture_summarize(hook_name(s->point), s->layer, s->n_dims, s->shape, s->values, s->n, out);
}
