/* capture.h — a copy of the forward pass's steps at one position: the values every
 * hook point (hook.h) hands for some layers, and the steps outside the layers
 * (inp_embd, result_norm, result_output), kept by an observer registered at the
 * pass; and each step's summary (step_tensor: shape, first values, min / max / mean /
 * L2 norm, a histogram), as the compute view, `-m tensors` and --trace-tensors show
 * them.
 *
 * A capture's memory is fixed when it is made (capture_bytes): the widths of the
 * steps of its layers, the scores and weights of every head over pos + 1 keys, and the
 * steps outside the layers (the logits: vocab_size values). It owns its values; it
 * does not run the pass: the engine registers its observer for one what-if pass
 * (engine_tensors). Steps a family's pass does not hand are not in it, and new hook
 * points flow through as they are added to hook.c's table. No printing. */
#ifndef LLMCHAT_CAPTURE_H
#define LLMCHAT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "hook.h"
#include "model.h"
#include "status.h"
#include "step.h"

/* One step's values at the position. */
typedef struct {
    hook_point point;
    int layer;          /* -1 outside the layers */
    int n_dims;         /* 1 or 2 (hook_shape) */
    int shape[2];       /* [width] or [heads, per head]; a per-head point's rows are
                           [n_heads, pos + 1] */
    int n;              /* values: the product of the shape */
    float *values;      /* (n), owned by the capture; the per-head points' masked keys
                           are as the pass hands them (kq: -INFINITY) */
    bool seen;          /* the pass handed it */
} captured_step;

typedef struct {
    int pos;                 /* the position captured */
    int layer_first, layer_last; /* its layers (the steps outside the layers always) */
    int n_steps;             /* in `steps`: before capture_finish every step the layers
                                could have, after it the ones the pass handed */
    captured_step *steps;    /* (n_steps) in the pass's order: the steps before the
                                layers, each layer's in hook.h's order, those after */
    float *buf;              /* the values of all steps (owned) */
    size_t bytes;            /* what the capture takes (capture_bytes) */
} tensor_capture;

/* Bytes a capture of position pos, layers first..last of a model of config c takes. */
size_t capture_bytes(const model_config *c, int pos, int layer_first, int layer_last);

/* A capture of position pos (0 <= pos) and layers first..last (clamped to the model's;
 * first > last: only the steps outside the layers). */
llm_status capture_new(const model_config *c, int pos, int layer_first, int layer_last,
                       tensor_capture **out, llm_err *err);
void capture_free(tensor_capture *cap); /* NULL does nothing */

/* The observer that fills cap: every point, cap's layers, cap's position. Register it
 * (transformer_hook_add) for the pass of that position, then call capture_finish. */
hook capture_hook(tensor_capture *cap);

/* After the pass: keeps the steps it handed, in order. */
void capture_finish(tensor_capture *cap);

/* The step of point p at layer l (-1 outside the layers), or NULL. */
const captured_step *capture_find(const tensor_capture *cap, hook_point p, int layer);

/* The summary of n values v of a step called name at layer, shaped n_dims, shape. */
void capture_summarize(const char *name, int layer, int n_dims, const int shape[2],
                       const float *v, int n, step_tensor *out);
/* The same for a captured step. */
void capture_summarize_step(const captured_step *s, step_tensor *out);

#endif
