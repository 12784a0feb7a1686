/* attribution.c — direct logit attribution (see attribution.h).
 *
 * With u[i] = wcls[target][i] · rms_final[i] · scale (the final RMSNorm folded into the
 * target's classifier row, scale the norm's 1 / rms at this position), the logit is
 * u · stream, and the stream is a sum of components, so each component's part is
 * u · component. A layer's attention output is wo · o, o the heads' outputs side by
 * side; head h's part is u · (wo[:, h's columns] · o_h) = (woᵀ u)[h's columns] · o_h,
 * so one pass over wo's rows per layer gives every head's part. Where a post-norm
 * (weight p, scale s = 1 / rms of the block's output at this position) sits between a
 * block and the stream, u becomes u ⊙ p · s for that block: the same pass computes the
 * block's output row by row for s, and scales the parts once it is known. Sums are in
 * double; the parts are stored as float. */
#include "attribution.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* u (dim) = wcls[target] · rms_final · scale; row is (dim) scratch. */
static void target_direction(const model *m, int target, float scale, float *row, double *u)
{
    int dim = m->config.dim;
    quant_dequantize_row(row, &m->wcls, target);
    for (int i = 0; i < dim; i++)
        u[i] = (double)row[i] * m->rms_final[i] * scale;
}

static double dot(const double *u, const float *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += u[i] * x[i];
    return s;
}

/* 1 / sqrt(mean(y²) + eps) over n values: an RMSNorm's scale. */
static double rms_scale(const double *y, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += y[i] * y[i];
    return 1.0 / sqrt(ss / n + eps);
}

/* Layer l's head parts into head (n_heads): v (q_dim) = woᵀ (u ⊙ p), p the post-norm's
 * weight (1 without one), then each head's slice of v times its output o (q_dim), all
 * times the post-norm's scale when there is one. y (dim: the block's output, for that
 * scale) and row (q_dim) are scratch. */
static void layer_heads(const model *m, int l, const double *u, const float *o, float *row,
                          double *v, double *y, float *head)
{
    const model_config *c = &m->config;
    const model_layer *L = &m->layers[l];
    const tensor *wo = &L->wo;
    const float *post = L->post_attn_norm;
    memset(v, 0, sizeof(double) * c->q_dim);
    for (int r = 0; r < wo->rows; r++) {
        double ur = post ? u[r] * post[r] : u[r];
        if (ur == 0.0 && !post)
            continue;
        quant_dequantize_row(row, wo, r);
        double yr = 0.0;
        for (int j = 0; j < wo->cols; j++) {
            v[j] += ur * row[j];
            yr += (double)row[j] * o[j];
        }
        y[r] = yr;
    }
    double scale = post ? rms_scale(y, c->dim, c->rms_eps) : 1.0;
    for (int h = 0; h < c->n_heads; h++) {
        double s = 0.0;
        for (int j = h * c->head_size; j < (h + 1) * c->head_size; j++)
            s += v[j] * o[j];
        head[h] = (float)(s * scale);
    }
}

/* Layer l's feed-forward part: u · post(f), f its output (dim); y (dim) scratch. */
static double layer_mlp(const model *m, int l, const double *u, const float *f, double *y)
{
    const model_config *c = &m->config;
    const float *post = m->layers[l].post_ffn_norm;
    if (!post)
        return dot(u, f, c->dim);
    double s = 0.0;
    for (int i = 0; i < c->dim; i++) {
        y[i] = f[i];
        s += u[i] * post[i] * f[i];
    }
    return s * rms_scale(y, c->dim, c->rms_eps);
}

llm_status attribution_compute(const model *m, const attribution_input *in, int target,
                               float *head, float *mlp, step_attribution *a, llm_err *err)
{
    const model_config *c = &m->config;
    int dim = c->dim, layers = c->n_layers;
    size_t width = (size_t)(dim > c->q_dim ? dim : c->q_dim), part = (size_t)c->q_dim + dim;
    if (target < 0 || target >= c->vocab_size)
        return llm_fail(err, LLM_ERR_ARG, "token %d is outside the vocabulary (0..%d)", target,
                        c->vocab_size - 1);
    /* u, then each layer's scratch (the layers run in parallel): v and y (width each),
     * a row (width) */
    double *u = malloc(sizeof(double) * width * (1 + 2 * (size_t)layers));
    float *rows = malloc(sizeof(float) * width * (1 + (size_t)layers));
    if (!u || !rows) {
        free(u);
        free(rows);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the attribution");
    }
    float ss = 0.0f; /* the scale as forward.c's rmsnorm computes it */
    for (int i = 0; i < dim; i++)
        ss += in->final[i] * in->final[i];
    float scale = 1.0f / sqrtf(ss / dim + c->rms_eps);
    target_direction(m, target, scale, rows, u);

#pragma omp parallel for schedule(dynamic, 1) if (layers > 1 && dim >= 512)
    for (int l = 0; l < layers; l++) {
        const float *parts = in->parts + (size_t)l * part;
        double *v = u + (size_t)(1 + 2 * l) * width, *y = v + width;
        layer_heads(m, l, u, parts, rows + (size_t)(1 + l) * width, v, y,
                    head + (size_t)l * c->n_heads);
        mlp[l] = (float)layer_mlp(m, l, u, parts + c->q_dim, y);
    }

    quant_dequantize_row(rows, &m->token_embedding, in->token);
    a->embedding = (float)(dot(u, rows, dim) * c->arch.embed_scale);
    double vectors = 0.0;
    for (int l = 0; in->steer && l < layers; l++)
        vectors += dot(u, in->steer + (size_t)l * dim, dim);
    a->vectors = (float)vectors;
    a->norm_scale = scale;
    a->target = target;
    a->n_layers = layers;
    a->n_heads = c->n_heads;
    a->head = head;
    a->mlp = mlp;
    a->softcap = c->arch.final_softcap;
    a->post_norms = c->arch.post_norms;
    a->before_cap = (float)attribution_sum(a);
    free(u);
    free(rows);
    return LLM_OK;
}

double attribution_sum(const step_attribution *a)
{
    double s = (double)a->embedding + a->vectors;
    for (int l = 0; l < a->n_layers; l++) {
        s += a->mlp[l];
        for (int h = 0; h < a->n_heads; h++)
            s += a->head[(size_t)l * a->n_heads + h];
    }
    return s;
}

/* Puts p among the k largest in out (n of them so far, largest first); returns n. */
static int keep_largest(attribution_part *out, int n, int k, attribution_part p)
{
    int at = n;
    while (at > 0 && fabsf(out[at - 1].value) < fabsf(p.value))
        at--;
    if (at >= k)
        return n;
    int moved = (n < k ? n : k - 1) - at;
    memmove(out + at + 1, out + at, sizeof *out * (size_t)moved);
    out[at] = p;
    return n < k ? n + 1 : n;
}

static attribution_part part_of(attribution_kind kind, int layer, int head, float value)
{
    return (attribution_part){.kind = kind, .layer = layer, .head = head, .value = value};
}

int attribution_top(const step_attribution *a, int k, attribution_part *out)
{
    if (k <= 0)
        return 0;
    int n = keep_largest(out, 0, k, part_of(ATTRIBUTION_EMBEDDING, -1, -1, a->embedding));
    for (int l = 0; l < a->n_layers; l++) {
        for (int h = 0; h < a->n_heads; h++)
            n = keep_largest(out, n, k,
                             part_of(ATTRIBUTION_HEAD, l, h, a->head[(size_t)l * a->n_heads + h]));
        n = keep_largest(out, n, k, part_of(ATTRIBUTION_MLP, l, -1, a->mlp[l]));
    }
    if (a->vectors != 0.0f)
        n = keep_largest(out, n, k, part_of(ATTRIBUTION_VECTORS, -1, -1, a->vectors));
    return n;
}
