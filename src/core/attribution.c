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
 * block's output row by row for s, and scales the parts once it is known. The
 * attention's output bias (gpt-oss) is a part of its own, u · bo. A layer of experts
 * adds Σ_s w_s · d_s (d_s each chosen expert's output, w_s its weight), so expert s's
 * part is w_s · (u · d_s); they add up to the layer's feed-forward part. Beside a dense
 * feed-forward (Gemma 4 26B-A4B) the sum is normed (weight p2, scale s2 of the sum)
 * before the dense output is added: expert s's part is w_s s2 (u ⊙ p2 · d_s), and the
 * dense feed-forward's is the layer's part less its experts'. Where layers
 * scale the stream after them (Gemma 4's layer_output_scale), what a layer writes is
 * scaled by its scale and every later one's, the embedding by all, a control vector
 * (added after its layer's scale) by the later ones'. A per-layer input (Gemma 4's
 * E2B, E4B) is what the layer adds after its feed-forward, taken as the stream got it
 * (per_layer_embd_out, its norm applied): its part is u · that, scaled as the layer's
 * other parts. Sums are in double; the parts are stored as float. */
#include "attribution.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transformer.h"

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

/* Layer l's head parts into head (model_heads_max: the layer's heads, then 0s): v (wo's
 * columns) = woᵀ (u ⊙ p), p the post-norm's weight (1 without one), then each head's
 * slice of v times its output o (an attention head's head_size values, a Gated
 * DeltaNet's value head's dn_head_v), all times the post-norm's scale when there is one.
 * y (dim: the block's output, its bias included, for that scale) and row (wo's columns)
 * are scratch. Returns the output bias's part (0 without one). */
static double layer_heads(const model *m, int l, const double *u, const float *o, float *row,
                          double *v, double *y, float *head)
{
    const model_config *c = &m->config;
    const model_layer *L = &m->layers[l];
    const tensor *wo = &L->wo;
    const float *post = L->post_attn_norm, *bo = L->bo;
    double bias = 0.0;
    memset(v, 0, sizeof(double) * (size_t)wo->cols);
    for (int r = 0; r < wo->rows; r++) {
        double ur = post ? u[r] * post[r] : u[r];
        if (ur == 0.0 && !post)
            continue;
        quant_dequantize_row(row, wo, r);
        double yr = bo ? bo[r] : 0.0;
        for (int j = 0; j < wo->cols; j++) {
            v[j] += ur * row[j];
            yr += (double)row[j] * o[j];
        }
        y[r] = yr;
        if (bo)
            bias += ur * bo[r];
    }
    double scale = post ? rms_scale(y, c->dim, c->rms_eps) : 1.0;
    bool dn = L->kind == MODEL_LAYER_DELTA_NET;
    int heads = dn ? c->dn_v_heads : c->n_heads, size = dn ? c->dn_head_v : L->head_size;
    for (int h = 0; h < model_heads_max(c); h++) {
        double s = 0.0;
        for (int j = h * size; h < heads && j < (h + 1) * size; j++)
            s += v[j] * o[j];
        head[h] = (float)(s * scale);
    }
    return bias * scale;
}

/* Layer l's feed-forward part: u · post(f), f its output (dim); y (dim) scratch. A
 * layer of experts also splits it: experts (n_used) and ids from the chosen experts'
 * numbers, weights and outputs that follow f in the layer's parts. */
static double layer_mlp(const model *m, int l, const double *u, const float *f, double *y,
                        float *experts, int *ids)
{
    const model_config *c = &m->config;
    const float *post = m->layers[l].post_ffn_norm;
    double s = 0.0, scale = 1.0;
    for (int i = 0; i < c->dim; i++) {
        y[i] = f[i];
        s += u[i] * (post ? post[i] : 1.0f) * f[i];
    }
    if (post)
        scale = rms_scale(y, c->dim, c->rms_eps);
    int K = c->n_experts_used;
    const float *topk = f + c->dim, *w = topk + K, *down = w + K;
    /* beside a dense feed-forward, the experts' sum is normed first: its weight p2 and
     * scale (of the sum, remade from the chosen experts' outputs into y) */
    const float *p2 = m->layers[l].post_experts_norm;
    double sum_scale = 1.0;
    if (experts && p2) {
        for (int i = 0; i < c->dim; i++) {
            y[i] = 0.0;
            for (int k = 0; k < K; k++)
                y[i] += (double)w[k] * down[(size_t)k * c->dim + i];
        }
        sum_scale = rms_scale(y, c->dim, c->rms_eps);
    }
    for (int k = 0; experts && k < K; k++) {
        const float *d = down + (size_t)k * c->dim;
        double e = 0.0;
        for (int i = 0; i < c->dim; i++)
            e += u[i] * (post ? post[i] : 1.0f) * (p2 ? p2[i] : 1.0f) * d[i];
        experts[k] = (float)(w[k] * e * sum_scale * scale);
        ids[k] = (int)topk[k];
    }
    return s * scale;
}

llm_status attribution_compute(const model *m, const attribution_input *in, int target,
                               float *head, float *mlp, float *expert, int *expert_id,
                               float *layer_input, step_attribution *a, llm_err *err)
{
    const model_config *c = &m->config;
    int dim = c->dim, layers = c->n_layers, used = c->n_experts > 0 ? c->n_experts_used : 0;
    int mix = model_mixer_width(c), heads = model_heads_max(c);
    bool ple = c->ple_dim > 0;
    size_t width = (size_t)(dim > mix ? dim : mix);
    size_t part = (size_t)transformer_parts_width(c);
    if (target < 0 || target >= c->vocab_size)
        return llm_fail(err, LLM_ERR_ARG, "token %d is outside the vocabulary (0..%d)", target,
                        c->vocab_size - 1);
    double *biases = malloc(sizeof(double) * (size_t)layers);
    /* u, then each layer's scratch (the layers run in parallel): v and y (width each),
     * a row (width) */
    double *u = malloc(sizeof(double) * width * (1 + 2 * (size_t)layers));
    float *rows = malloc(sizeof(float) * width * (1 + (size_t)layers));
    if (!u || !rows || !biases) {
        free(u);
        free(rows);
        free(biases);
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
        biases[l] = layer_heads(m, l, u, parts, rows + (size_t)(1 + l) * width, v, y,
                                head + (size_t)l * heads);
        mlp[l] = (float)layer_mlp(m, l, u, parts + mix, y,
                                  used ? expert + (size_t)l * used : NULL,
                                  used ? expert_id + (size_t)l * used : NULL);
        if (ple) /* per_layer_embd_out, last in the layer's parts */
            layer_input[l] = (float)dot(u, parts + mix + dim + used * ((size_t)dim + 2), dim);
    }
    /* the layers' output scales: after[l] those of layer l and the later ones */
    double *after = u + width; /* (layers + 1): the layers' scratch is done with */
    after[layers] = 1.0;
    for (int l = layers - 1; l >= 0; l--) {
        after[l] = after[l + 1] * (m->layers[l].out_scale ? *m->layers[l].out_scale : 1.0);
        if (after[l] == 1.0)
            continue;
        biases[l] *= after[l];
        mlp[l] = (float)(mlp[l] * after[l]);
        for (int h = 0; h < heads; h++)
            head[(size_t)l * heads + h] = (float)(head[(size_t)l * heads + h] * after[l]);
        for (int k = 0; k < used; k++)
            expert[(size_t)l * used + k] = (float)(expert[(size_t)l * used + k] * after[l]);
        if (ple)
            layer_input[l] = (float)(layer_input[l] * after[l]);
    }
    double bias_sum = 0.0;
    for (int l = 0; l < layers; l++)
        bias_sum += biases[l];
    a->biases = (float)bias_sum;
    a->n_used = used;
    a->expert = used ? expert : NULL;
    a->expert_id = used ? expert_id : NULL;
    a->layer_input = ple ? layer_input : NULL;

    quant_dequantize_row(rows, &m->token_embedding, in->token);
    a->embedding = (float)(dot(u, rows, dim) * c->arch.embed_scale * after[0]);
    double vectors = 0.0;
    for (int l = 0; in->steer && l < layers; l++)
        vectors += dot(u, in->steer + (size_t)l * dim, dim) * after[l + 1];
    a->vectors = (float)vectors;
    a->norm_scale = scale;
    a->target = target;
    a->n_layers = layers;
    a->n_heads = heads;
    a->head = head;
    a->mlp = mlp;
    a->softcap = c->arch.final_softcap;
    a->post_norms = c->arch.post_norms;
    a->before_cap = (float)attribution_sum(a);
    free(u);
    free(rows);
    free(biases);
    return LLM_OK;
}

double attribution_sum(const step_attribution *a)
{
    double s = (double)a->embedding + a->vectors + a->biases;
    for (int l = 0; l < a->n_layers; l++) {
        s += a->mlp[l];
        if (a->layer_input)
            s += a->layer_input[l];
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
        if (!a->expert)
            n = keep_largest(out, n, k, part_of(ATTRIBUTION_MLP, l, -1, a->mlp[l]));
        for (int e = 0; a->expert && e < a->n_used; e++) {
            size_t at = (size_t)l * a->n_used + e;
            n = keep_largest(out, n, k, part_of(ATTRIBUTION_EXPERT, l, a->expert_id[at],
                                                a->expert[at]));
        }
        if (a->layer_input)
            n = keep_largest(out, n, k,
                             part_of(ATTRIBUTION_LAYER_INPUT, l, -1, a->layer_input[l]));
    }
    if (a->vectors != 0.0f)
        n = keep_largest(out, n, k, part_of(ATTRIBUTION_VECTORS, -1, -1, a->vectors));
    if (a->biases != 0.0f)
        n = keep_largest(out, n, k, part_of(ATTRIBUTION_BIASES, -1, -1, a->biases));
    return n;
}
