/* expert_routes.c — the experts each position chose, per layer (see expert_routes.h).
 *
 * Three arrays over positions, grown (doubling, up to the context) when positions
 * are about to run, never inside the pass: the experts' numbers, their weights and
 * which of the two points each layer handed. */
#include "expert_routes.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SEEN_TOPK = 1, SEEN_WEIGHTS = 2, SEEN_BOTH = 3 };

struct expert_routes {
    int n_layers, n_experts, used, ctx;
    int cap;            /* positions the arrays hold */
    int n;              /* positions 0..n-1 may have routes */
    bool listening;     /* between begin and end */
    int16_t *experts;   /* (cap, n_layers, used) the chosen experts, most probable first */
    float *weights;     /* (cap, n_layers, used) their weights */
    unsigned char *seen; /* (cap, n_layers) SEEN_* bits */
};

llm_status expert_routes_new(const model_config *c, int ctx, expert_routes **out, llm_err *err)
{
    *out = NULL;
    if (c->n_experts <= 0 || c->n_experts > INT16_MAX || c->n_experts_used <= 0 ||
        c->n_experts_used > c->n_experts || c->n_layers <= 0 || ctx <= 0)
        return llm_fail(err, LLM_ERR_ARG, "no routes to keep for %d experts (%d used), %d layers",
                        c->n_experts, c->n_experts_used, c->n_layers);
    expert_routes *r = calloc(1, sizeof *r);
    if (!r)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the experts' routes");
    r->n_layers = c->n_layers;
    r->n_experts = c->n_experts;
    r->used = c->n_experts_used;
    r->ctx = ctx;
    *out = r;
    return LLM_OK;
}

void expert_routes_free(expert_routes *r)
{
    if (!r)
        return;
    free(r->experts);
    free(r->weights);
    free(r->seen);
    free(r);
}

static size_t slot(const expert_routes *r, int pos, int layer)
{
    return (size_t)pos * r->n_layers + layer;
}

static void observe(void *user, const hook_tensor *x)
{
    expert_routes *r = user;
    if (!r->listening || x->layer < 0 || x->layer >= r->n_layers || x->width != r->used)
        return;
    for (int i = 0; i < x->n; i++) {
        int pos = x->pos + i;
        if (pos < 0 || pos >= r->n)
            continue;
        const float *row = x->data + (size_t)i * x->stride;
        size_t s = slot(r, pos, x->layer);
        if (x->point == HOOK_FFN_MOE_TOPK) {
            for (int k = 0; k < r->used; k++)
                r->experts[s * r->used + k] = (int16_t)lroundf(row[k]);
            r->seen[s] |= SEEN_TOPK;
        } else {
            memcpy(r->weights + s * r->used, row, sizeof(float) * r->used);
            r->seen[s] |= SEEN_WEIGHTS;
        }
    }
}

hook expert_routes_hook(expert_routes *r)
{
    return (hook){.fn = observe,
                  .user = r,
                  .points = HOOK_BIT(HOOK_FFN_MOE_TOPK) | HOOK_BIT(HOOK_FFN_MOE_WEIGHTS),
                  .layer_first = 0,
                  .layer_last = r->n_layers - 1,
                  .pos = -1};
}

/* Room for positions 0..want-1. */
static bool reserve(expert_routes *r, int want)
{
    if (want <= r->cap)
        return true;
    int cap = r->cap > 0 ? r->cap : 64;
    while (cap < want)
        cap = cap > r->ctx / 2 ? r->ctx : cap * 2;
    size_t cells = (size_t)cap * r->n_layers;
    int16_t *ex = realloc(r->experts, sizeof *ex * cells * r->used);
    if (ex)
        r->experts = ex;
    float *w = realloc(r->weights, sizeof *w * cells * r->used);
    if (w)
        r->weights = w;
    unsigned char *seen = realloc(r->seen, cells);
    if (seen)
        r->seen = seen;
    if (!ex || !w || !seen)
        return false;
    r->cap = cap;
    return true;
}

llm_status expert_routes_begin(expert_routes *r, int pos, int n, llm_err *err)
{
    r->listening = false;
    if (pos < 0 || n < 0 || pos + n > r->ctx)
        return llm_fail(err, LLM_ERR_ARG, "positions %d..%d are outside the context's %d", pos,
                        pos + n - 1, r->ctx);
    if (!reserve(r, pos + n))
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the experts' routes of %d positions",
                        pos + n);
    r->n = pos + n;
    if (n > 0)
        memset(r->seen + slot(r, pos, 0), 0, (size_t)n * r->n_layers);
    r->listening = true;
    return LLM_OK;
}

void expert_routes_end(expert_routes *r)
{
    r->listening = false;
}

void expert_routes_forget_from(expert_routes *r, int pos)
{
    if (pos >= 0 && pos < r->n)
        r->n = pos;
}

int expert_routes_layers(const expert_routes *r) { return r->n_layers; }
int expert_routes_experts(const expert_routes *r) { return r->n_experts; }
int expert_routes_used(const expert_routes *r) { return r->used; }
int expert_routes_positions(const expert_routes *r) { return r->n; }

static bool known(const expert_routes *r, int pos, int layer)
{
    return pos >= 0 && pos < r->n && layer >= 0 && layer < r->n_layers &&
           r->seen[slot(r, pos, layer)] == SEEN_BOTH;
}

bool expert_routes_of(const expert_routes *r, int pos, int layer, int *experts, float *weights)
{
    if (!known(r, pos, layer))
        return false;
    size_t s = slot(r, pos, layer) * r->used;
    for (int k = 0; k < r->used; k++) {
        experts[k] = r->experts[s + k];
        if (weights)
            weights[k] = r->weights[s + k];
    }
    return true;
}

int expert_routes_count(const expert_routes *r, int layer, int first, int last, int *counts)
{
    memset(counts, 0, sizeof(int) * r->n_experts);
    first = first < 0 ? 0 : first;
    last = last >= r->n ? r->n - 1 : last;
    int positions = 0;
    for (int p = first; p <= last; p++) {
        if (!known(r, p, layer))
            continue;
        positions++;
        const int16_t *ex = r->experts + slot(r, p, layer) * r->used;
        for (int k = 0; k < r->used; k++)
            if (ex[k] >= 0 && ex[k] < r->n_experts)
                counts[ex[k]]++;
    }
    return positions;
}

int expert_routes_chose(const expert_routes *r, int layer, int expert, int first, int last,
                        int *out, float *weights, int max)
{
    first = first < 0 ? 0 : first;
    last = last >= r->n ? r->n - 1 : last;
    int found = 0;
    for (int p = first; p <= last; p++) {
        if (!known(r, p, layer))
            continue;
        size_t s = slot(r, p, layer) * r->used;
        for (int k = 0; k < r->used; k++) {
            if (r->experts[s + k] != expert)
                continue;
            if (found < max) {
                out[found] = p;
                if (weights)
                    weights[found] = r->weights[s + k];
            }
            found++;
            break;
        }
    }
    return found;
}
