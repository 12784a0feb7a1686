/* attribution.c — direct logit attribution (see attribution.h).
 *
 * With u[i] = wcls[target][i] · rms_final[i] · scale (the final RMSNorm folded into the
 * target's classifier row, scale the norm's 1 / rms at this position), the logit is
 * u · stream, and the stream is a sum of components, so each component's part is
 * u · component. A layer's attention output is wo · o, o the heads' outputs side by
 * side; head h's part is u · (wo[:, h's columns] · o_h) = (woᵀ u)[h's columns] · o_h,
 * so one pass over wo's rows per layer gives every head's part. Sums are in double;
 * the parts are stored as float. */
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

/* Layer l's head parts into head (n_heads): v (q_dim) = woᵀ u, then each head's slice
 * of v times its output o (q_dim); row is (q_dim) scratch. */
static void layer_heads(const model *m, int l, const double *u, const float *o, float *row,
                        double *v, float *head)
{
    const model_config *c = &m->config;
    const tensor *wo = &m->layers[l].wo;
    memset(v, 0, sizeof(double) * c->q_dim);
    for (int r = 0; r < wo->rows; r++) {
        if (u[r] == 0.0)
            continue;
        quant_dequantize_row(row, wo, r);
        for (int j = 0; j < wo->cols; j++)
            v[j] += u[r] * row[j];
    }
    for (int h = 0; h < c->n_heads; h++) {
        double s = 0.0;
        for (int j = h * c->head_size; j < (h + 1) * c->head_size; j++)
            s += v[j] * o[j];
        head[h] = (float)s;
    }
}

/* Why the parts of a model with description a would not add up to its logit (a
 * phrase), or NULL when they do: a norm or a cap between a component and the stream
 * is not linear, and a bias is a part this split does not list. */
static const char *attribution_unsupported(const model_arch *a)
{
    if (a->post_norms)
        return "its post-attention and post-feed-forward norms are not linear";
    if (a->final_softcap != 0.0f)
        return "its logits are soft-capped";
    if (a->attn_out_bias)
        return "its attention output bias is not split out";
    return NULL;
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
    const char *why = attribution_unsupported(&c->arch);
    if (why)
        return llm_fail(err, LLM_ERR_ARG, "attribution does not split a %s model's logit: %s",
                        c->arch.name, why);
    /* u, then one (v, row) pair of scratch per layer: the layers run in parallel */
    double *u = malloc(sizeof(double) * width * (1 + layers));
    float *rows = malloc(sizeof(float) * width * (1 + layers));
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
        layer_heads(m, l, u, parts, rows + (size_t)(1 + l) * width, u + (size_t)(1 + l) * width,
                    head + (size_t)l * c->n_heads);
        mlp[l] = (float)dot(u, parts + c->q_dim, dim);
    }

    quant_dequantize_row(rows, &m->token_embedding, in->token);
    a->embedding = (float)(dot(u, rows, dim) * c->arch.embed_scale);
    double vectors = 0.0;
    for (int l = 0; in->steer && l < layers; l++)
        vectors += dot(u, in->steer + (size_t)l * dim, dim);
    a->vectors = (float)vectors;
    a->offset = 0.0f;
    a->norm_scale = scale;
    a->target = target;
    a->n_layers = layers;
    a->n_heads = c->n_heads;
    a->head = head;
    a->mlp = mlp;
    free(u);
    free(rows);
    return LLM_OK;
}

double attribution_sum(const step_attribution *a)
{
    double s = (double)a->embedding + a->vectors + a->offset;
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
