/* forward.c — the forward pass, written once for one token and for a batch of them.
 *
 * A layer is one sequence of steps (layer_pass): RMSNorm, its mixer — attention (the
 * q/k/v projections and biases, QK-norm and RoPE, the KV cache, windows, soft-capping,
 * a gated attention's output gate) or a Gated DeltaNet (the projections, a causal
 * convolution, each value head's recurrent state: delta_net.h), as the layer's kind
 * says — the output projection (post-norm), the residual, the gated feed-forward (SiLU
 * or GELU) or a mixture of experts, control vectors. What a model family changes is
 * read from the model's description (model_config.arch, the layer kinds, the optional
 * tensors of model_layer), never from its name. The math is llama2.c's run.c where
 * llama has it.
 *
 * Two executions of the same steps differ only in how threads share the work:
 *   - one token (decode): every thread runs the whole pass in one parallel region and
 *     takes its share of each step (rows of every matrix, KV heads of attention),
 *     meeting the others at a barrier per data dependence (pass_sync); norms and the
 *     activations' quantization are done by every thread into its own lane;
 *   - a batch (prefill): the steps run one after the other on the calling thread, each
 *     parallel inside (matrix-matrix kernels, loops over tokens, over heads).
 * and in which kernels do the arithmetic, chosen per call (transformer_kernels): the
 * token kernels (a matrix-vector product's bits for every vector; an int8 KV cache read
 * as it is stored) or the batch kernels (prefill's GEMM over packed activations; the
 * cache's rows made fp32). A position's numbers depend on its tokens, the
 * interventions and those kernels, never on the batch it ran in: a batch on the token
 * kernels gives the bits of one token at a time, one token on the batch kernels the
 * bits it had in its prompt's batch.
 * Every step does the same on either: the residual is added in the products' job, the
 * pass ends with the final norm kept as the classifier's input (the logits are made
 * from it afterwards, classifier_logits, the one place of the final soft-cap).
 * The steps hand their results to the observers at the named hook points (hook.h),
 * after the editors registered there (the interventions: a knocked-out head's kqv
 * zeroed, control vectors added at l_out) have changed them. A point nobody observes
 * or edits costs one test.
 *
 * The kernels work in the transformer's workspace (t->ws): the products of a batch
 * hand it whole to the kernels, a thread of the one-token region or of attention uses
 * its own scratch in it (thread i, scratch i). A kernel out of memory for its scratch
 * fails the pass (forward_pass returns false); the pass runs on to its end, its
 * results undefined.
 *
 * Owns nothing: it works in the pass state (pass_state.h: the transformer's buffers,
 * quantized inputs, KV cache, kept classifier inputs and the kernels' workspace) and
 * never calls the transformer back. */
#include "forward.h"

#include "clock.h"
#include "cpus.h"
#include "delta_net.h"
#include "dequant.h"
#include "kernels.h"
#include "pass_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many weight bytes per token the one-token path runs on one thread:
 * barriers would cost more than the rows they share (the 260K toy models). */
enum { ONE_TOKEN_PARALLEL_MIN_BYTES = 1 << 19, PROJ_JOBS_MAX = 4 };

/* One forward call's state, and (one token) one thread's view of it. */
typedef struct {
    transformer *t;
    const model *m;
    const model_config *c;
    const int *tokens;      /* (n) */
    int pos, n;             /* positions pos..pos+n-1 */
    int seq;                /* rows per sequence: n; in a pass of several sequences
                               (forward_pass_sequences) each one's m: row r is position
                               pos + r % m of sequence r / m, kept at cache place pos + r */
    int row0;               /* a sequence's view of the pass (head_attend): its first row,
                               pos its first position, n its rows */
    const int *enter;       /* a pass of sequences: the layer each begins at (ascending), or
                               NULL (all at 0); a layer runs the rows of those begun */
    bool sequences;         /* a pass of sequences (forward_pass_sequences): each begins
                               from the recurrent state after pos - 1, which it leaves as
                               it is */
    bool lasts;             /* a pass of sequences after its last layer's mixer: the call's
                               rows are each sequence's last (row i: position pos + i * seq
                               + seq - 1), the only rows the logits read on from there */
    bool one;               /* one token: every thread runs the pass; else a batch */
    bool batch;             /* the batch kernels (GEMM products, the int8 cache made
                               fp32); else the token kernels */
    int tid, nt;            /* this thread, of nt sharing the token (a batch: 0 of 1) */
    struct lane *ln;        /* one token: this thread's lane */
    const pass_hooks *hooks;
    hook_set watch;         /* hooks->watch */
    hook_set edits;         /* hooks->edits */
    bool *failed;           /* the call's: set when a kernel ran out of memory */
} pass;

/* Marks the pass failed (from any thread). */
static void pass_fail(const pass *p)
{
    __atomic_store_n(p->failed, true, __ATOMIC_RELAXED);
}

/* ---- the math of run.c ---- */

/* o[j] = weight[j] * (s * x[j]), j < size; o may be x. Each 8 values are read into a
 * buffer before any is written, so the compiler may do them as vectors. */
static void scale_row(float *o, const float *x, const float *weight, float s, int size)
{
    int j = 0;
    for (; j + 8 <= size; j += 8) {
        float t[8];
        for (int u = 0; u < 8; u++)
            t[u] = weight[j + u] * (s * x[j + u]);
        for (int u = 0; u < 8; u++)
            o[j + u] = t[u];
    }
    for (; j < size; j++)
        o[j] = weight[j] * (s * x[j]);
}

void forward_rmsnorm(float *o, const float *x, const float *weight, int size, float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    scale_row(o, x, weight, ss, size);
}

/* RMSNorm of `rows` rows of x (size each, contiguous) into o (may be x), as
 * forward_rmsnorm does row by row and with its bits: each row's sum of squares still
 * adds in j order, but NORM_ROWS rows' sums advance side by side, so the adds of one
 * row no longer wait for each other's latency. */
enum { NORM_ROWS = 8 };

/* The rows of block b (NORM_ROWS rows a block) of a batch of n rows. */
static int norm_block_rows(int n, int b)
{
    return n - b * NORM_ROWS < NORM_ROWS ? n - b * NORM_ROWS : NORM_ROWS;
}

static void rmsnorm_rows(float *o, const float *x, const float *weight, int rows, int size,
                         float eps)
{
    for (int r0 = 0; r0 < rows; r0 += NORM_ROWS) {
        int nr = rows - r0 < NORM_ROWS ? rows - r0 : NORM_ROWS;
        const float *xr = x + (size_t)r0 * size;
        float *orow = o + (size_t)r0 * size;
        if (nr < NORM_ROWS) {
            for (int r = 0; r < nr; r++)
                forward_rmsnorm(orow + (size_t)r * size, xr + (size_t)r * size, weight, size,
                                eps);
            continue;
        }
        const float *x0 = xr, *x1 = x0 + size, *x2 = x1 + size, *x3 = x2 + size,
                    *x4 = x3 + size, *x5 = x4 + size, *x6 = x5 + size, *x7 = x6 + size;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f,
              s7 = 0.0f;
        for (int j = 0; j < size; j++) {
            s0 += x0[j] * x0[j];
            s1 += x1[j] * x1[j];
            s2 += x2[j] * x2[j];
            s3 += x3[j] * x3[j];
            s4 += x4[j] * x4[j];
            s5 += x5[j] * x5[j];
            s6 += x6[j] * x6[j];
            s7 += x7[j] * x7[j];
        }
        const float ss[NORM_ROWS] = {s0, s1, s2, s3, s4, s5, s6, s7};
        for (int r = 0; r < NORM_ROWS; r++) {
            float s = ss[r];
            s /= size;
            s += eps;
            s = 1.0f / sqrtf(s);
            scale_row(orow + (size_t)r * size, xr + (size_t)r * size, weight, s, size);
        }
    }
}

/* x[i] *= s for i < n. */
static void scale_into(float *x, float s, int n)
{
    for (int i = 0; i < n; i++)
        x[i] *= s;
}

/* x[i] += y[i] for i < n: a residual. 8 sums at a time through a buffer, as scale_row,
 * so that the compiler may use vectors although y may be x. */
static void add_into(float *x, const float *y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        float t[8];
        for (int u = 0; u < 8; u++)
            t[u] = x[i + u] + y[i + u];
        for (int u = 0; u < 8; u++)
            x[i + u] = t[u];
    }
    for (; i < n; i++)
        x[i] += y[i];
}

/* gpt-oss's clamped SwiGLU (ggml's swiglu_oai with its alpha and limit): the gate x
 * clamped above at 7, the up value y to [-7, 7], x * sigmoid(1.702 x) * (y + 1). */
static void swiglu_oai(float *gate, const float *up, int n)
{
    const float alpha = 1.702f, limit = 7.0f;
    for (int i = 0; i < n; i++) {
        float x = fminf(gate[i], limit), y = fminf(fmaxf(up[i], -limit), limit);
        gate[i] = x / (1.0f + expf(alpha * -x)) * (y + 1.0f);
    }
}

/* gate[i] = act(gate[i]) * up[i], i < n: SwiGLU or GELU's tanh form (the kernels), or
 * the clamped SwiGLU. */
static void activate(model_activation act, float *gate, const float *up, int n)
{
    if (act == MODEL_ACT_SILU)
        kernels_swiglu(gate, up, n);
    else if (act == MODEL_ACT_GELU)
        kernels_geglu(gate, up, n);
    else
        swiglu_oai(gate, up, n);
}

/* cos and sin of every RoPE pair for positions pos..pos+n-1 into t->buf.rope, as run.c
 * computes them: freq = 1 / base^(2i / rope_dims), angle = pos * freq (base 10000 in
 * llama2.c); as llama.cpp scales them: the angle is divided by the pair's factor from
 * rope_freqs.weight (Llama 3.1+) or LongRoPE's (Phi-3: the long factors when the
 * context is longer than the original one, else the short), multiplied by the linear
 * scale (1 / rope.scaling.factor), and cos and sin by LongRoPE's attention factor. The
 * layers with a window get t->buf.rope_swa when the model sets arch.rope_base_swa (that
 * base, no factors, no scale, over arch.rope_dims_swa values). */
static void rope_table(float *table, int rot, float base, float scale, const float *factors,
                       float mag, int pos, int n)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++) {
        float *r = table + (size_t)i * rot;
        for (int hd = 0; hd < rot; hd += 2) {
            float freq = 1.0f / powf(base, hd / (float)rot);
            if (factors)
                freq /= factors[hd / 2];
            float val = (pos + i) * scale * freq;
            r[hd] = cosf(val) * mag;
            r[hd + 1] = sinf(val) * mag;
        }
    }
}

static void rope_angles(transformer *t, int pos, int n)
{
    const model_config *c = &t->m->config;
    float scale = c->rope_scale > 0.0f ? c->rope_scale : 1.0f;
    float mag = c->rope_attn_factor > 0.0f ? c->rope_attn_factor : 1.0f;
    const float *factors = c->rope_freqs_long && t->ctx > c->rope_long_after ? c->rope_freqs_long
                                                                             : c->rope_freqs;
    rope_table(t->buf.rope, c->arch.rope_dims, c->rope_base, scale, factors, mag, pos, n);
    if (t->buf.rope_swa)
        rope_table(t->buf.rope_swa, model_swa_rope_dims(&c->arch), c->arch.rope_base_swa, 1.0f,
                   NULL, 1.0f, pos, n);
}

/* Rotates the first rot values of one head v by the angles r (rot: cos, sin of each
 * pair): pairs (v[2i], v[2i+1]) for llama, (v[i], v[i + rot/2]) for NEOX. */
static void rope_head(float *v, const float *r, int rot, model_rope_layout layout)
{
    int half = rot / 2;
    if (layout == MODEL_ROPE_PAIRS) {
        for (int i = 0; i < rot; i += 2) {
            float fcr = r[i], fci = r[i + 1];
            float v0 = v[i], v1 = v[i + 1];
            v[i] = v0 * fcr - v1 * fci;
            v[i + 1] = v0 * fci + v1 * fcr;
        }
    } else {
        for (int i = 0; i < half; i++) {
            float fcr = r[2 * i], fci = r[2 * i + 1];
            float v0 = v[i], v1 = v[i + half];
            v[i] = v0 * fcr - v1 * fci;
            v[i + half] = v0 * fci + v1 * fcr;
        }
    }
}

/* ---- observers ---- */

/* Hands rows (n, width) at data, of positions pos..pos+n-1, to the observers of point
 * pt at layer l (head h at the per-head points, else -1). */
static void see_fire(const pass *p, hook_point pt, int l, int h, int pos, int n,
                     const float *data, int width, size_t stride)
{
    for (int i = 0; i < p->hooks->n; i++) {
        const hook *o = p->hooks->list[i];
        int row, rows;
        if (!hook_wants(o, pt, l, pos, n, &row, &rows))
            continue;
        hook_tensor x = {
            .point = pt,
            .layer = l,
            .head = h,
            .pos = pos + row,
            .n = rows,
            .width = h >= 0 && rows < n ? pos + row + 1 : width,
            .stride = stride,
            .data = data + (size_t)row * stride,
        };
        o->fn(o->user, &x);
    }
}

/* The position of row i of the call. */
static inline int row_pos(const pass *p, int i)
{
    return p->pos + (p->lasts ? i * p->seq + p->seq - 1 : i);
}

/* The call's rows of a step to the observers of pt at layer l: each sequence's last row
 * alone, at its position, after its last layer's mixer; else all at once. */
static void see_rows(const pass *p, hook_point pt, int l, const float *data, int width,
                     size_t stride)
{
    int run = p->lasts ? 1 : p->n;
    for (int i = 0; i < p->n; i += run)
        see_fire(p, pt, l, -1, row_pos(p, i), run, data + (size_t)i * stride, width, stride);
}

/* The step's rows (n, width) at data to the observers of pt at layer l. One token:
 * thread 0 hands them, and the caller makes sure no thread writes them before the
 * next barrier (which thread 0 reaches only after its observers return). */
static inline void see(const pass *p, hook_point pt, int l, const float *data, int width,
                       size_t stride)
{
    if ((p->watch & HOOK_BIT(pt)) && p->tid == 0)
        see_rows(p, pt, l, data, width, stride);
}

/* One head's rows at kq or kq_soft_max, from the thread that ran the head. */
static inline void see_head(const pass *p, hook_point pt, int l, int h, const float *data,
                            size_t stride)
{
    if (p->watch & HOOK_BIT(pt))
        see_fire(p, pt, l, h, p->pos, p->n, data, p->pos + p->n, stride);
}

/* The editors of point pt at layer l change the rows (n, width) at data before anyone
 * reads them on. One token, inside its parallel region (a lane): every thread hands
 * its share of the columns, then the barrier (only at a point an editor is registered
 * at); otherwise the calling thread, every column. */
static void pass_sync(const pass *p);
static void pass_share(const pass *p, int total, int *i0, int *i1);

/* The editors of pt at layer l change columns col..col+width-1 of the call's rows
 * i0..i0+n-1 (data: row i0's column 0, stride floats a row), on the calling thread,
 * with no barrier: what edit() shares out, and the points edited a head at a time by
 * the thread that runs the head (a Gated DeltaNet's beta and gate, a value head's column
 * of every row, before its state reads them; Qcur, Kcur, Vcur, a head's columns of one
 * row, before the scores and the cache read them). */
static void edit_span(const pass *p, hook_point pt, int l, int i0, int n, float *data,
                      size_t stride, int col, int width)
{
    if (!(p->edits & HOOK_BIT(pt)) || width <= 0)
        return;
    /* rows of consecutive positions at once; each sequence's last row alone */
    int run = p->lasts ? 1 : n;
    for (int r0 = 0; r0 < n; r0 += run)
        for (int i = 0; i < p->hooks->n_edit; i++) {
            const hook *e = p->hooks->edit[i];
            int row, rows;
            if (!hook_wants(e, pt, l, row_pos(p, i0 + r0), run, &row, &rows))
                continue;
            hook_slice x = {.point = pt, .layer = l, .pos = row_pos(p, i0 + r0) + row,
                            .n = rows, .col = col, .width = width, .stride = stride,
                            .data = data + (size_t)(r0 + row) * stride + col};
            e->edit(e->user, &x);
        }
}

static void edit(const pass *p, hook_point pt, int l, float *data, int width, size_t stride)
{
    if (!(p->edits & HOOK_BIT(pt)))
        return;
    bool in_lane = p->one && p->ln;
    int c0 = 0, c1 = width;
    if (in_lane)
        pass_share(p, width, &c0, &c1);
    edit_span(p, pt, l, 0, p->n, data, stride, c0, c1 - c0);
    if (in_lane)
        pass_sync(p);
}

/* ---- how threads share a step ---- */

/* One token: waits for the others (every write before it is seen after it). */
static void pass_sync(const pass *p)
{
    if (p->one)
        barrier_wait(&p->t->meet);
}

/* This thread's part i0..i1-1 of `total` items. */
static void pass_share(const pass *p, int total, int *i0, int *i1)
{
    *i0 = (int)((long)total * p->tid / p->nt);
    *i1 = (int)((long)total * (p->tid + 1) / p->nt);
}

/* ---- the steps ---- */

/* The RMSNorm with weight w of the rows of x (dim each). One token: every thread
 * writes the whole vector into its lane (no barrier); a batch: t->buf.xn, parallel over
 * rows. Returns the normed rows. */
static const float *pass_norm(const pass *p, const float *x, const float *w)
{
    int dim = p->c->dim;
    float eps = p->c->rms_eps;
    if (p->one) {
        forward_rmsnorm(p->ln->xn, x, w, dim, eps);
        return p->ln->xn;
    }
    float *out = p->t->buf.xn;
    int blocks = (p->n + NORM_ROWS - 1) / NORM_ROWS;
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int b = 0; b < blocks; b++) {
        size_t at = (size_t)b * NORM_ROWS * dim;
        rmsnorm_rows(out + at, x + at, w, norm_block_rows(p->n, b), dim, eps);
    }
    return out;
}

/* A matrix product of a step and what follows it row by row. */
typedef struct {
    const tensor *w;        /* out = x · wᵀ */
    const float *bias;      /* (w->rows) added to out, or NULL */
    float *out;             /* (n, w->rows) */
    const tensor *up;       /* or NULL; gated: out = act(out) * (x · upᵀ) */
    float *up_out;          /* gated: (n, w->rows) x · upᵀ */
    const float *up_bias;   /* gated: (w->rows) added to up_out before the activation, or
                               NULL */
    float *gate_keep;       /* gated: (n, w->rows) out before the activation, or NULL */
    const float *times;     /* or NULL: out = act(out) * times (row i at i * times_stride;
                               a per-layer input) */
    size_t times_stride;
    float *add_to;          /* (n, w->rows) or NULL: add_to += out (a residual) */
} proj_job;

/* True when something follows j's products (else a batch skips that loop). */
static bool job_follows(const proj_job *j)
{
    return j->bias || j->up || j->times || j->add_to;
}

/* What follows the products in row i (of n), values r0..r1-1. */
static void job_finish(const pass *p, const proj_job *j, int i, int r0, int r1)
{
    size_t at = (size_t)i * j->w->rows + r0;
    float *out = j->out + at;
    int len = r1 - r0;
    if (j->bias)
        add_into(out, j->bias + r0, len);
    if (j->up) {
        if (j->up_bias)
            add_into(j->up_out + at, j->up_bias + r0, len);
        if (j->gate_keep)
            memcpy(j->gate_keep + at, out, sizeof(float) * len);
        activate(p->c->arch.act, out, j->up_out + at, len);
    }
    if (j->times)
        activate(p->c->arch.act, out, j->times + (size_t)i * j->times_stride + r0, len);
    if (j->add_to)
        add_into(j->add_to + at, out, len);
}

/* out[j] (n, w[j]->rows) = x (n, cols) · w[j]ᵀ for `count` weights sharing the input x.
 * Q8_0 weights get x quantized once per distinct (cols, group). On the batch kernels,
 * neighbours that read the same quantized x go to the GEMM together (one pack, one
 * region); on the token kernels each is a matrix-vector product per vector. False when
 * a product ran out of memory. */
static bool matmul_shared(transformer *t, const float *x, int n, bool batch, int count,
                          const tensor *const *w, float *const *out)
{
    bool ok = true;
    qbatch *done[MAX_QBATCHES], *xq[2 * PROJ_JOBS_MAX];
    int n_done = 0;
    for (int j = 0; j < count; j++) {
        xq[j] = NULL;
        if (tensor_is_q8(w[j])) {
            xq[j] = qbatch_for(t, w[j]->cols, w[j]->group);
            bool fresh = true;
            for (int d = 0; d < n_done; d++)
                fresh = fresh && done[d] != xq[j];
            if (fresh) {
                qbatch_quantize(xq[j], x, n);
                done[n_done++] = xq[j];
            }
        }
    }
    for (int j = 0, run; j < count && ok; j += run) {
        run = 1;
        if (!batch) {
            ok = n == 1 ? kernels_matvec(t->ws, out[j], w[j], x, xq[j])
                        : kernels_matmul(t->ws, out[j], w[j], x, xq[j], n);
            continue;
        }
        while (xq[j] && j + run < count && xq[j + run] == xq[j] && run < KERNELS_GEMM_SHARED_MAX)
            run++;
        ok = kernels_gemm_shared(t->ws, run, out + j, w + j, x, xq[j], n);
    }
    return ok;
}

/* One token, this thread's rows of the jobs (their input already in its lane): one
 * contiguous range of each matrix, starting at a multiple of the kernels' row block
 * (so results do not depend on the split): one long stream per matrix and thread,
 * which the memory system serves fastest (docs/performance.md). No barrier. */
static void project_rows(const pass *p, const float *x, const proj_job *jobs, int count)
{
    const transformer *t = p->t;
    kernels_scratch *s = kernels_workspace_scratch(t->ws, p->tid);
    for (int k = 0; k < count; k++) {
        const proj_job *j = &jobs[k];
        int block = kernels_row_block_of(j->w); /* a panel's rows where w has panels */
        int rows = j->w->rows, blocks = (rows + block - 1) / block;
        int r0 = (int)((long)blocks * p->tid / p->nt) * block;
        int r1 = (int)((long)blocks * (p->tid + 1) / p->nt) * block;
        if (r1 > rows)
            r1 = rows;
        if (r0 >= r1)
            continue;
        bool ok = kernels_matmul_rows(s, j->out, j->w, x, lane_input(t, p->ln, j->w), 1, r0, r1);
        if (ok && j->up)
            ok = kernels_matmul_rows(s, j->up_out, j->up, x, lane_input(t, p->ln, j->up), 1, r0,
                                     r1);
        if (!ok)
            pass_fail(p);
        job_finish(p, j, 0, r0, r1);
    }
}

/* The jobs (at most PROJ_JOBS_MAX), all reading x (n, len). One token: each thread
 * quantizes x into its lane and runs its rows, then the barrier; a batch:
 * matrix-matrix products, then what follows them, parallel over rows. */
static void pass_project(const pass *p, const float *x, int len, const proj_job *jobs,
                         int count)
{
    if (p->one) {
        lane_quantize(p->t, p->ln, x, len);
        project_rows(p, x, jobs, count);
        pass_sync(p);
        return;
    }
    const tensor *w[2 * PROJ_JOBS_MAX];
    float *out[2 * PROJ_JOBS_MAX];
    int k = 0;
    bool finish = false;
    for (int j = 0; j < count; j++) {
        w[k] = jobs[j].w;
        out[k++] = jobs[j].out;
        if (jobs[j].up) {
            w[k] = jobs[j].up;
            out[k++] = jobs[j].up_out;
        }
        finish = finish || job_follows(&jobs[j]);
    }
    if (!matmul_shared(p->t, x, p->n, p->batch, k, w, out))
        pass_fail(p);
    if (!finish)
        return;
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < count; j++)
            job_finish(p, &jobs[j], i, 0, jobs[j].w->rows);
}

/* One token: x += RMSNorm(y) with weight w (a post-norm's residual), each thread its
 * share of x after normalising all of y into its lane; then the barrier. */
static void token_norm_add(const pass *p, const float *y, const float *w)
{
    int i0, i1;
    forward_rmsnorm(p->ln->xn, y, w, p->c->dim, p->c->rms_eps);
    pass_share(p, p->c->dim, &i0, &i1);
    add_into(p->t->buf.x + i0, p->ln->xn + i0, i1 - i0);
    pass_sync(p);
}

/* x += post_norm(w · in + bias): wo after attention (its bias, where the model has
 * one), w2 after the feed-forward. The product, before the norm, is observed at `point`
 * (kqv_out, ffn_out). When next_norm
 * is not NULL, returns the RMSNorm of the new x with that weight, as pass_norm does (a
 * batch does both in one loop over rows); else NULL. */
static const float *pass_out_block(const pass *p, int l, const tensor *w, const float *bias,
                                   const float *in, int len, const float *post_norm,
                                   hook_point point, const float *next_norm)
{
    transformer *t = p->t;
    int dim = p->c->dim;
    float eps = p->c->rms_eps;
    /* without a post-norm the residual is added in the products' job, row by row */
    proj_job j = {.w = w, .bias = bias, .out = t->buf.proj,
                  .add_to = post_norm ? NULL : t->buf.x};
    pass_project(p, in, len, &j, 1);
    see(p, point, l, t->buf.proj, dim, dim);
    if (p->one) {
        if (post_norm)
            token_norm_add(p, t->buf.proj, post_norm);
        return next_norm ? pass_norm(p, t->buf.x, next_norm) : NULL;
    }
    if (!post_norm && !next_norm)
        return NULL;
    int blocks = (p->n + NORM_ROWS - 1) / NORM_ROWS;
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int b = 0; b < blocks; b++) {
        size_t at = (size_t)b * NORM_ROWS * dim;
        int rows = norm_block_rows(p->n, b);
        float *x = t->buf.x + at, *xn = t->buf.xn + at;
        if (post_norm) {
            rmsnorm_rows(xn, t->buf.proj + at, post_norm, rows, dim, eps);
            add_into(x, xn, rows * dim);
        }
        if (next_norm)
            rmsnorm_rows(xn, x, next_norm, rows, dim, eps);
    }
    return next_norm ? t->buf.xn : NULL;
}

/* ---- attention ---- */

/* The RMSNorm of each token's whole query and key vectors (arch.qk_norm_whole: OLMoE),
 * before attention splits them into heads. One token: thread 0, then the barrier. */
static void pass_qk_norm_whole(const pass *p, const model_layer *L)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    if (p->one && p->tid != 0) {
        pass_sync(p);
        return;
    }
#pragma omp parallel for schedule(static) if (!p->one && p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++) {
        float *q = t->buf.q + (size_t)i * L->q_dim, *k = t->k_new + (size_t)i * L->kv_dim;
        forward_rmsnorm(q, q, L->q_norm, L->q_dim, c->rms_eps);
        forward_rmsnorm(k, k, L->k_norm, L->kv_dim, c->rms_eps);
    }
    pass_sync(p);
}

/* The first key query i (position pos + i) sees at a layer with this window. */
static int first_key(const pass *p, int window, int i)
{
    int q = p->pos + i;
    return window > 0 && q >= window ? q - window + 1 : 0;
}

/* The RMSNorm of x (size values) without a weight, in place (arch.value_norm). */
static void rmsnorm_plain(float *x, int size, float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / size + eps);
    for (int j = 0; j < size; j++)
        x[j] *= ss;
}

/* Token i's KV head kh at layer l and the query heads that read it: QK-norm and RoPE
 * of the key and the queries, the key and the value into the cache; a layer sharing
 * another's cache (kv_layer) has only the queries. */
static void head_prepare(const pass *p, int l, int i, int kh)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    int hs = L->head_size, kv_mul = c->n_heads / L->n_kv_heads;
    model_rope_layout layout = c->arch.rope_layout;
    bool swa = L->window > 0 && t->buf.rope_swa;
    const float *table = swa ? t->buf.rope_swa : t->buf.rope;
    int rot = swa ? model_swa_rope_dims(&c->arch) : c->arch.rope_dims;
    const float *r = table + (size_t)i * rot;
    if (L->kind == MODEL_LAYER_GATED_ATTENTION) /* wq's rows: each head's query, then gate */
        for (int h = kh * kv_mul; h < (kh + 1) * kv_mul; h++) {
            const float *qg = t->buf.qg + (size_t)i * 2 * L->q_dim + (size_t)h * 2 * hs;
            memcpy(t->buf.q + (size_t)i * L->q_dim + (size_t)h * hs, qg, sizeof(float) * hs);
            memcpy(t->buf.gate + (size_t)i * L->q_dim + (size_t)h * hs, qg + hs,
                   sizeof(float) * hs);
        }
    if (L->kv_layer == l) {
        float *k = t->k_new + (size_t)i * L->kv_dim + (size_t)kh * hs;
        float *v = t->v_new + (size_t)i * L->kv_dim + (size_t)kh * hs;
        if (!L->wv.rows) /* no wv (arch.value_norm): the keys as they came are the values */
            memcpy(v, k, sizeof(float) * hs);
        if (c->arch.value_norm)
            rmsnorm_plain(v, hs, c->rms_eps);
        if (L->k_norm && !c->arch.qk_norm_whole)
            forward_rmsnorm(k, k, L->k_norm, hs, c->rms_eps);
        rope_head(k, r, rot, layout);
        edit_span(p, HOOK_KCUR, l, i, 1, k - (size_t)kh * hs, L->kv_dim, kh * hs, hs);
        edit_span(p, HOOK_VCUR, l, i, 1, v - (size_t)kh * hs, L->kv_dim, kh * hs, hs);
        cache_store(t, l, p->pos + i, kh, k, v);
    }
    for (int h = kh * kv_mul; h < (kh + 1) * kv_mul; h++) {
        float *q = t->buf.q + (size_t)i * L->q_dim + (size_t)h * hs;
        if (L->q_norm && !c->arch.qk_norm_whole)
            forward_rmsnorm(q, q, L->q_norm, hs, c->rms_eps);
        rope_head(q, r, rot, layout);
        edit_span(p, HOOK_QCUR, l, i, 1, q - (size_t)h * hs, L->q_dim, h * hs, hs);
    }
}

/* KV head kh's keys and values at layer l as fp32 rows, keys first..last: *k, *v
 * (row j at + j * *stride). The F32 cache in place; Q8_0 made fp32 in slot's kv_f32. */
static void head_rows(const pass *p, int l, int kh, int first, int last, int slot,
                      const float **k, const float **v, size_t *stride)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    size_t hs = (size_t)L->head_size;
    if (t->kv == TRANSFORMER_KV_F32) {
        size_t off = cache_f32_at(t, l, kh, 0);
        *k = t->key_cache + off;
        *v = t->value_cache + off;
        *stride = (size_t)L->kv_dim;
        return;
    }
    float *kf = t->kv_f32 + (size_t)slot * 2 * t->ctx * p->c->head_size;
    float *vf = kf + (size_t)t->ctx * hs;
    size_t r = q8_row(t, l, kh, first), at = q8_at(t, l, kh, first);
    quant_dequantize_rows(kf + first * hs, t->kq + at, t->ks + r, last - first + 1, (int)hs);
    quant_dequantize_rows(vf + first * hs, t->vq + at, t->vs + r, last - first + 1, (int)hs);
    *k = kf;
    *v = vf;
    *stride = hs;
}

/* Clears row a (width values) outside first..last to `fill`. */
static void mask_outside(float *a, int first, int last, int width, float fill)
{
    for (int j = 0; j < first; j++)
        a[j] = fill;
    for (int j = last + 1; j < width; j++)
        a[j] = fill;
}

/* Head h's scores for the n queries into att (n, pos + n): query_scale · q·k over
 * the keys each sees, soft-capped where the model caps them, -INFINITY elsewhere. */
static void head_scores(const pass *p, const model_layer *L, int h, const float *k,
                        size_t stride, float *att)
{
    const model_config *c = p->c;
    int width = p->pos + p->n, hs = L->head_size, window = L->window;
    float scale = c->arch.query_scale, cap = c->arch.attn_softcap;
    for (int i = 0; i < p->n; i++) {
        float *a = att + (size_t)i * width;
        int first = first_key(p, window, i), last = p->pos + i;
        kernels_rows_dot(a + first, k + (size_t)first * stride, stride, last - first + 1,
                         p->t->buf.q + (size_t)(p->row0 + i) * L->q_dim + (size_t)h * hs, hs);
        for (int j = first; j <= last; j++)
            a[j] *= scale;
        if (cap != 0.0f)
            pass_softcap(a + first, last - first + 1, cap);
        mask_outside(a, first, last, width, -INFINITY);
    }
}

/* The softmax of a (n values) with one more logit, the sink, in its denominator
 * alone (ggml's soft_max with sinks): the weights sum to less than 1 by the sink's
 * share. */
static void softmax_sink(float *a, int n, float sink)
{
    float max = sink, sum = 0.0f;
    for (int j = 0; j < n; j++)
        max = fmaxf(max, a[j]);
    for (int j = 0; j < n; j++) {
        a[j] = expf(a[j] - max);
        sum += a[j];
    }
    sum += expf(sink - max);
    for (int j = 0; j < n; j++)
        a[j] /= sum;
}

/* The rest of attention from head h's scores in att (head_scores): the softmax (with
 * the head's sink where the layer has sinks), and the weighted values into its slice
 * of kqv. For soft-capped models and sinks, which the kernels do not compute. */
static void head_mix(const pass *p, const model_layer *L, int h, const float *v,
                     size_t stride, float *att)
{
    int width = p->pos + p->n, hs = L->head_size, window = L->window;
    const float *sinks = L->sinks;
    for (int i = 0; i < p->n; i++) {
        float *a = att + (size_t)i * width;
        float *out = p->t->buf.kqv + (size_t)(p->row0 + i) * L->q_dim + (size_t)h * hs;
        int first = first_key(p, window, i), last = p->pos + i;
        if (sinks)
            softmax_sink(a + first, last - first + 1, sinks[h]);
        else
            kernels_softmax(a + first, last - first + 1);
        mask_outside(a, first, last, width, 0.0f);
        memset(out, 0, sizeof(float) * hs);
        kernels_rows_axpy(out, v + (size_t)first * stride, stride, last - first + 1, a + first,
                          hs);
    }
}

/* Head h's attention by the kernels (no soft-cap): the weights into att (n, pos + n),
 * the weighted values into its slice of kqv. On the token kernels an int8 cache is read
 * as it is, one query at a time; otherwise fp32 rows (k, v), a block of queries at once
 * when no window cuts their keys (the fp32 kernel's sums for a query do not depend on
 * its block), in the kernels' scratch s. */
static void head_kernel(const pass *p, int l, int h, const float *k, const float *v,
                        size_t stride, float *att, kernels_scratch *s)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    int hs = L->head_size, width = p->pos + p->n, kh = h / (c->n_heads / L->n_kv_heads);
    int window = L->window, qd = L->q_dim;
    float scale = c->arch.query_scale;
    const float *q = t->buf.q + (size_t)p->row0 * qd + (size_t)h * hs;
    float *out = t->buf.kqv + (size_t)p->row0 * qd + (size_t)h * hs;
    if (!p->batch && t->kv == TRANSFORMER_KV_Q8_0) {
        for (int i = 0; i < p->n; i++) {
            int first = first_key(p, window, i);
            size_t r = q8_row(t, l, kh, first), at = q8_at(t, l, kh, first);
            float *a = att + (size_t)i * width;
            kernels_attention_q8(out + (size_t)i * qd, a + first, q + (size_t)i * qd,
                                 t->kq + at, t->ks + r, t->vq + at, t->vs + r,
                                 p->pos + i + 1 - first, hs, scale);
            mask_outside(a, first, p->pos + i, width, 0.0f);
        }
        return;
    }
    if (first_key(p, window, p->n - 1) == 0) {
        if (!kernels_attention_f32(s, out, qd, att, width, q, qd, k, v, stride, p->n, p->pos,
                                   hs, scale))
            pass_fail(p);
        return;
    }
    for (int i = 0; i < p->n; i++) {
        int first = first_key(p, window, i);
        float *a = att + (size_t)i * width;
        if (!kernels_attention_f32(s, out + (size_t)i * qd, qd, a + first,
                                   width - first, q + (size_t)i * qd, qd,
                                   k + (size_t)first * stride, v + (size_t)first * stride,
                                   stride, 1, p->pos + i - first, hs, scale))
            pass_fail(p);
        mask_outside(a, first, p->pos + i, width, 0.0f);
    }
}

/* A sequence's keys and values (the view of one sequence of a pass of several): its
 * positions first..pos-1 from the cache places they share, then its own rows (at
 * places pos + row0 ..) as positions pos..pos+n-1, fp32 in slot's seq_kv, so that they
 * read as one sequence's cache: *k, *v (row j at + j * *stride). */
static void head_rows_seq(const pass *p, int l, int kh, int first, int slot, const float **k,
                          const float **v, size_t *stride)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    size_t hs = (size_t)L->head_size;
    float *kf = t->seq_kv + (size_t)slot * 2 * t->ctx * p->c->head_size;
    float *vf = kf + (size_t)t->ctx * hs;
    int own = p->pos + p->row0, end = p->pos + p->n;
    if (t->kv == TRANSFORMER_KV_F32) {
        size_t off = cache_f32_at(t, l, kh, 0);
        for (int j = first; j < end; j++) {
            size_t at = off + (size_t)(j < p->pos ? j : own + j - p->pos) * L->kv_dim;
            memcpy(kf + j * hs, t->key_cache + at, sizeof(float) * hs);
            memcpy(vf + j * hs, t->value_cache + at, sizeof(float) * hs);
        }
    } else {
        if (first < p->pos) {
            size_t r = q8_row(t, l, kh, first), at = q8_at(t, l, kh, first);
            quant_dequantize_rows(kf + first * hs, t->kq + at, t->ks + r, p->pos - first, (int)hs);
            quant_dequantize_rows(vf + first * hs, t->vq + at, t->vs + r, p->pos - first, (int)hs);
        }
        size_t r = q8_row(t, l, kh, own), at = q8_at(t, l, kh, own);
        quant_dequantize_rows(kf + (size_t)p->pos * hs, t->kq + at, t->ks + r, p->n, (int)hs);
        quant_dequantize_rows(vf + (size_t)p->pos * hs, t->vq + at, t->vs + r, p->n, (int)hs);
    }
    *k = kf;
    *v = vf;
    *stride = hs;
}

/* Query head h's attention for the n queries of one sequence (rows row0..row0+n-1), on
 * the thread owning scratch `slot` (its row of t->att, its scratch of t->ws): kq,
 * kq_soft_max observed (not in a pass of several sequences). */
static void head_attend_seq(const pass *p, int l, int h, int slot)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    int window = L->window, hs = L->head_size;
    int kh = h / (c->n_heads / L->n_kv_heads), width = p->pos + p->n;
    float *att = t->att + (size_t)slot * t->chunk * t->ctx; /* (n, width) */
    bool open = c->arch.attn_softcap != 0.0f || L->sinks, several = p->seq < p->n || p->row0;
    const float *k = NULL, *v = NULL;
    size_t stride = 0;
    if (several)
        head_rows_seq(p, l, kh, first_key(p, window, 0), slot, &k, &v, &stride);
    else if (open || p->batch || t->kv == TRANSFORMER_KV_F32 || (p->watch & HOOK_BIT(HOOK_KQ)))
        head_rows(p, l, kh, first_key(p, window, 0), p->pos + p->n - 1, slot, &k, &v, &stride);
    if (open || (p->watch & HOOK_BIT(HOOK_KQ))) {
        head_scores(p, L, h, k, stride, att);
        see_head(p, HOOK_KQ, l, h, att, width);
    }
    if (open)
        head_mix(p, L, h, v, stride, att);
    else
        head_kernel(p, l, h, k, v, stride, att, kernels_workspace_scratch(t->ws, slot));
    see_head(p, HOOK_KQ_SOFT_MAX, l, h, att, width);
    if (L->kind == MODEL_LAYER_GATED_ATTENTION)
        for (int i = p->row0; i < p->row0 + p->n; i++) { /* attn_gated: times sigmoid(gate) */
            float *out = t->buf.kqv + (size_t)i * L->q_dim + (size_t)h * hs;
            const float *g = t->buf.gate + (size_t)i * L->q_dim + (size_t)h * hs;
            for (int j = 0; j < hs; j++)
                out[j] *= 1.0f / (1.0f + expf(-g[j]));
        }
}

/* Query head h's attention for the pass's queries: each sequence's over its own keys. */
static void head_attend(const pass *p, int l, int h, int slot)
{
    if (p->seq >= p->n) {
        head_attend_seq(p, l, h, slot);
        return;
    }
    for (int s = 0; s < p->n / p->seq; s++) {
        pass view = *p;
        view.n = p->seq;
        view.row0 = s * p->seq;
        head_attend_seq(&view, l, h, slot);
    }
}

/* Layer l's attention: each token's keys and values into the cache, then every head
 * over it. One token: this thread's KV heads and their query heads, then the barrier
 * (with fewer KV heads than threads: the KV heads, a barrier, a share of the query
 * heads, so that every thread attends);
 * a batch: parallel over tokens, then over heads (each head a block of queries, so
 * each key and value row it loads serves them all). */
static void pass_attend(const pass *p, int l)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    int kv_heads = L->n_kv_heads, kv_mul = c->n_heads / kv_heads;
    if (p->one) {
        int kh0, kh1;
        bool by_query = kv_heads < p->nt; /* too few KV heads to share: then the queries */
        pass_share(p, kv_heads, &kh0, &kh1);
        for (int kh = kh0; kh < kh1; kh++) {
            head_prepare(p, l, 0, kh);
            for (int h = kh * kv_mul; !by_query && h < (kh + 1) * kv_mul; h++)
                head_attend(p, l, h, p->tid);
        }
        if (by_query) {
            int h0, h1;
            pass_sync(p);
            pass_share(p, c->n_heads, &h0, &h1);
            for (int h = h0; h < h1; h++)
                head_attend(p, l, h, p->tid);
        }
        pass_sync(p);
        return;
    }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++)
        for (int kh = 0; kh < kv_heads; kh++)
            head_prepare(p, l, i, kh);
    /* Threads only pay off with enough work: a parallel region costs microseconds. */
    long work = (long)p->n * c->n_heads * (p->pos + p->n) * L->head_size;
    int threads = work >= 65536 ? attention_threads(t) : 1;
    (void)threads; /* unused without OpenMP */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int h = 0; h < c->n_heads; h++) {
        int slot = 0;
#ifdef _OPENMP
        slot = omp_get_thread_num();
#endif
        head_attend(p, l, h, slot);
    }
}

/* ---- a mixture of experts ---- */

/* Token i's routing from its router logits (row i of buf.moe_logits): the softmax into
 * moe_probs (0 for a knocked-out expert's -INFINITY), the n_experts_used most probable
 * experts into moe_sel and, as floats, moe_topk (of equal probabilities the larger
 * logit first: a forced expert, one ulp above the top, or one not knocked out; of equal
 * logits the first), and their weights into moe_weights: the
 * probabilities, renormalised to sum 1 where the model does (the sum kept from 0, as
 * llama.cpp clamps it). */
static void route(const pass *p, int i)
{
    const model_config *c = p->c;
    batch_buffers *b = &p->t->buf;
    int E = c->n_experts, K = c->n_experts_used;
    float *pr = b->moe_probs + (size_t)i * E;
    const float *lg = b->moe_logits + (size_t)i * E;
    int *sel = b->moe_sel + (size_t)i * K;
    float *w = b->moe_weights + (size_t)i * K, *top = b->moe_topk + (size_t)i * K;
    memcpy(pr, lg, sizeof(float) * E);
    kernels_softmax(pr, E);
    float sum = 0.0f;
    for (int s = 0; s < K; s++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int r = 0; r < s && !taken; r++)
                taken = sel[r] == e;
            /* a tie of probabilities goes to the larger logit: a knocked-out expert
             * (-INFINITY) loses even at probability 0, a forced one (expert_force.c)
             * wins where its one ulp above the top is lost in the softmax's rounding */
            if (!taken && (best < 0 || pr[e] > pr[best] ||
                           (pr[e] == pr[best] && lg[e] > lg[best])))
                best = e;
        }
        sel[s] = best;
        top[s] = (float)best;
        w[s] = pr[best];
        sum += w[s];
    }
    if (c->arch.expert_norm_weights) {
        if (sum < 6.103515625e-5f)
            sum = 6.103515625e-5f;
        for (int s = 0; s < K; s++)
            w[s] /= sum;
    }
}

/* Row i's share r0..r1-1 of the experts' weighted sum into buf.proj: for each chosen
 * expert in order, its weight times its down projection's row `rows[s]` of moe_down. */
static void combine(const pass *p, int i, const int *rows, int r0, int r1)
{
    const model_config *c = p->c;
    batch_buffers *b = &p->t->buf;
    int K = c->n_experts_used, dim = c->dim;
    float *out = b->proj + (size_t)i * dim;
    const float *w = b->moe_weights + (size_t)i * K;
    for (int r = r0; r < r1; r++)
        out[r] = 0.0f;
    for (int s = 0; s < K; s++) {
        const float *d = b->moe_down + (size_t)rows[s] * dim;
        for (int r = r0; r < r1; r++)
            out[r] += w[s] * d[r];
    }
}

/* Expert e's row of a table of per-expert biases (width values each), or NULL. */
static const float *expert_row(const float *table, int e, int width)
{
    return table ? table + (size_t)e * width : NULL;
}

/* One token: the chosen experts' gate and up products, then their down products, each
 * thread its rows of every expert's matrices (the lane quantizes each expert's input
 * itself), then each its share of the weighted sum and the residual. */
/* Whether the experts' weighted sum goes into the stream as each token's sum is made:
 * where nothing follows it (no post-norm, no shared expert) and no editor waits for it
 * at ffn_moe_out (then pass_experts adds it after the edit). */
static bool moe_adds_now(const pass *p, const model_layer *L)
{
    return !L->post_ffn_norm && p->c->shexp_hidden == 0 &&
           !(p->edits & HOOK_BIT(HOOK_FFN_MOE_OUT));
}

static void token_experts(const pass *p, int l, const model_layer *L, const float *xn)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    batch_buffers *b = &t->buf;
    int K = c->n_experts_used, eh = c->expert_hidden_dim, dim = c->dim;
    const int *sel = b->moe_sel;
    lane_quantize(t, p->ln, xn, dim);
    for (int s = 0; s < K; s++) {
        proj_job j = {.w = &L->expert_gate[sel[s]], .out = b->moe_gate + (size_t)s * eh,
                      .up = &L->expert_up[sel[s]], .up_out = b->moe_up + (size_t)s * eh,
                      .bias = expert_row(L->expert_gate_bias, sel[s], eh),
                      .up_bias = expert_row(L->expert_up_bias, sel[s], eh)};
        project_rows(p, xn, &j, 1);
    }
    pass_sync(p);
    for (int s = 0; s < K; s++) {
        const float *h = b->moe_gate + (size_t)s * eh;
        proj_job j = {.w = &L->expert_down[sel[s]], .out = b->moe_down + (size_t)s * dim,
                      .bias = expert_row(L->expert_down_bias, sel[s], dim)};
        lane_quantize(t, p->ln, h, eh);
        project_rows(p, h, &j, 1);
    }
    pass_sync(p);
    int i0, i1;
    pass_share(p, dim, &i0, &i1);
    if (L->expert_scale) {
        for (int s = 0; s < K; s++)
            scale_into(b->moe_down + (size_t)s * dim + i0, L->expert_scale[sel[s]], i1 - i0);
        pass_sync(p);
    }
    see(p, HOOK_FFN_MOE_DOWN, l, b->moe_down, K * dim, (size_t)K * dim);
    combine(p, 0, b->moe_row, i0, i1);
    if (moe_adds_now(p, L))
        add_into(t->buf.x + i0, b->proj + i0, i1 - i0);
    pass_sync(p);
}

/* A batch: the tokens grouped by expert (each expert's rows of moe_x in token order),
 * each expert's products run once over its group, then (when watched) each token's
 * experts' outputs in its order at ffn_moe_down, each token's weighted sum and the
 * residual. */
static void batch_experts(const pass *p, int l, const model_layer *L, const float *xn)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    batch_buffers *b = &t->buf;
    int E = c->n_experts, K = c->n_experts_used, eh = c->expert_hidden_dim, dim = c->dim;
    int n = p->n;
    int *start = b->moe_start; /* (E + 1) */
    memset(start, 0, sizeof(int) * (size_t)(E + 1));
    for (int i = 0; i < n * K; i++)
        start[b->moe_sel[i] + 1]++;
    for (int e = 0; e < E; e++)
        start[e + 1] += start[e];
    int *fill = b->moe_fill; /* (E) */
    memset(fill, 0, sizeof(int) * (size_t)E);
    for (int i = 0; i < n * K; i++) {
        int e = b->moe_sel[i], r = start[e] + fill[e]++;
        b->moe_row[i] = r;
        memcpy(b->moe_x + (size_t)r * dim, xn + (size_t)(i / K) * dim, sizeof(float) * dim);
    }
    for (int e = 0; e < E; e++) {
        int m = start[e + 1] - start[e];
        if (m == 0)
            continue;
        size_t r = (size_t)start[e];
        const tensor *gu[2] = {&L->expert_gate[e], &L->expert_up[e]};
        float *gu_out[2] = {b->moe_gate + r * eh, b->moe_up + r * eh};
        if (!matmul_shared(t, b->moe_x + r * dim, m, p->batch, 2, gu, gu_out))
            pass_fail(p);
        const float *gate_bias = expert_row(L->expert_gate_bias, e, eh);
        const float *up_bias = expert_row(L->expert_up_bias, e, eh);
#pragma omp parallel for schedule(static) if (m >= PARALLEL_TOKENS)
        for (int i = 0; i < m; i++) {
            float *g = gu_out[0] + (size_t)i * eh, *u = gu_out[1] + (size_t)i * eh;
            if (gate_bias)
                add_into(g, gate_bias, eh);
            if (up_bias)
                add_into(u, up_bias, eh);
            activate(c->arch.act, g, u, eh);
        }
        const tensor *down = &L->expert_down[e];
        float *down_out = b->moe_down + r * dim;
        if (!matmul_shared(t, gu_out[0], m, p->batch, 1, &down, &down_out))
            pass_fail(p);
        for (int i = 0; L->expert_scale && i < m; i++)
            scale_into(down_out + (size_t)i * dim, L->expert_scale[e], dim);
        const float *down_bias = expert_row(L->expert_down_bias, e, dim);
        for (int i = 0; down_bias && i < m; i++)
            add_into(down_out + (size_t)i * dim, down_bias, dim);
    }
    if (p->watch & HOOK_BIT(HOOK_FFN_MOE_DOWN)) { /* each token's experts in order, in
                                                    moe_x (read: free again) */
        for (int i = 0; i < n * K; i++)
            memcpy(b->moe_x + (size_t)i * dim, b->moe_down + (size_t)b->moe_row[i] * dim,
                   sizeof(float) * dim);
        see(p, HOOK_FFN_MOE_DOWN, l, b->moe_x, K * dim, (size_t)K * dim);
    }
    bool add = moe_adds_now(p, L);
#pragma omp parallel for schedule(static) if (n >= PARALLEL_TOKENS)
    for (int i = 0; i < n; i++) {
        combine(p, i, b->moe_row + (size_t)i * K, 0, dim);
        if (add)
            add_into(t->buf.x + (size_t)i * dim, b->proj + (size_t)i * dim, dim);
    }
}

/* Layer l's shared expert (config.shexp_hidden > 0) on the normed rows xn, after the
 * routed ones: its gate and up products and their gated product into buf.hb, its down
 * projection into moe_x (free once the routed experts are summed). */
static void shared_expert(const pass *p, const model_layer *L, const float *xn)
{
    batch_buffers *b = &p->t->buf;
    proj_job gu = {.w = &L->shexp_gate, .out = b->hb, .up = &L->shexp_up, .up_out = b->hb2};
    pass_project(p, xn, p->c->dim, &gu, 1);
    proj_job down = {.w = &L->shexp_down, .out = b->moe_x};
    pass_project(p, b->hb, p->c->shexp_hidden, &down, 1);
}

/* Row i's values r0..r1-1 of proj (the routed experts' sum) += sigmoid(shexp_gate_inp ·
 * xn_i) times the shared expert's output, as llama.cpp's qwen35moe adds them; into the
 * stream too unless a post-norm follows. */
static void shared_add(const pass *p, const model_layer *L, const float *xn, int i, int r0,
                       int r1)
{
    batch_buffers *b = &p->t->buf;
    int dim = p->c->dim;
    const float *x = xn + (size_t)i * dim, *so = b->moe_x + (size_t)i * dim;
    float g = 0.0f, *out = b->proj + (size_t)i * dim;
    for (int j = 0; j < dim; j++)
        g += L->shexp_gate_inp[j] * x[j];
    g = 1.0f / (1.0f + expf(-g));
    for (int r = r0; r < r1; r++)
        out[r] += g * so[r];
    if (!L->post_ffn_norm)
        add_into(b->x + (size_t)i * dim + r0, out + r0, r1 - r0);
}

/* fn on each row of the call: one token, on thread 0, then the barrier; a batch, the
 * rows in parallel. */
static void pass_each_row(const pass *p, const model_layer *L,
                          void (*fn)(const pass *, const model_layer *, int))
{
    if (p->one) {
        if (p->tid == 0)
            fn(p, L, 0);
        pass_sync(p);
        return;
    }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++)
        fn(p, L, i);
}

/* Row i of the experts' weighted sum in proj, normed by post_experts_norm, plus the
 * dense feed-forward's normed output (buf.ffn_dense): the feed-forward's output. */
static void beside_add(const pass *p, const model_layer *L, int i)
{
    batch_buffers *b = &p->t->buf;
    int dim = p->c->dim;
    float *out = b->proj + (size_t)i * dim;
    forward_rmsnorm(out, out, L->post_experts_norm, dim, p->c->rms_eps);
    add_into(out, b->ffn_dense + (size_t)i * dim, dim);
}

/* Layer l's mixture of experts on the normed rows xn, routed by the rows rin (xn, or
 * the router's own input): the router's logits (edited there: a knocked-out expert),
 * the routing, the chosen experts, their weighted sum (ffn_moe_out) and a shared
 * expert's gated output where the model has one, or the dense feed-forward's output
 * beside them (together: ffn_out), added to the stream (after the post-norm where the
 * model has one). */
static void pass_experts(const pass *p, int l, const float *xn, const float *rin)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    batch_buffers *b = &t->buf;
    int E = c->n_experts, K = c->n_experts_used, dim = c->dim;
    proj_job router = {.w = &L->router, .bias = L->router_bias, .out = b->moe_logits};
    pass_project(p, rin, dim, &router, 1);
    edit(p, HOOK_FFN_MOE_LOGITS, l, b->moe_logits, E, E);
    see(p, HOOK_FFN_MOE_LOGITS, l, b->moe_logits, E, E);
    if (p->one) {
        if (p->tid == 0) {
            route(p, 0);
            see(p, HOOK_FFN_MOE_PROBS, l, b->moe_probs, E, E);
            see(p, HOOK_FFN_MOE_TOPK, l, b->moe_topk, K, K);
            see(p, HOOK_FFN_MOE_WEIGHTS, l, b->moe_weights, K, K);
            for (int s = 0; s < K; s++)
                b->moe_row[s] = s;
        }
        pass_sync(p);
        token_experts(p, l, L, xn);
    } else {
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
        for (int i = 0; i < p->n; i++)
            route(p, i);
        see(p, HOOK_FFN_MOE_PROBS, l, b->moe_probs, E, E);
        see(p, HOOK_FFN_MOE_TOPK, l, b->moe_topk, K, K);
        see(p, HOOK_FFN_MOE_WEIGHTS, l, b->moe_weights, K, K);
        batch_experts(p, l, L, xn);
    }
    if (p->edits & HOOK_BIT(HOOK_FFN_MOE_OUT)) {
        edit(p, HOOK_FFN_MOE_OUT, l, b->proj, dim, dim);
        if (!L->post_ffn_norm && c->shexp_hidden == 0) { /* the add moe_adds_now put off */
            if (p->one) {
                int i0, i1;
                pass_share(p, dim, &i0, &i1);
                add_into(t->buf.x + i0, b->proj + i0, i1 - i0);
                pass_sync(p);
            } else
                for (int i = 0; i < p->n; i++)
                    add_into(t->buf.x + (size_t)i * dim, b->proj + (size_t)i * dim, dim);
        }
    }
    see(p, HOOK_FFN_MOE_OUT, l, b->proj, dim, dim);
    if (c->shexp_hidden > 0) { /* proj is read at ffn_moe_out until shared_expert's barrier */
        shared_expert(p, L, xn);
        if (p->one) {
            int i0, i1;
            pass_share(p, dim, &i0, &i1);
            shared_add(p, L, xn, 0, i0, i1);
            pass_sync(p);
        } else {
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
            for (int i = 0; i < p->n; i++)
                shared_add(p, L, xn, i, 0, dim);
        }
    }
    if (L->post_experts_norm) /* the dense feed-forward beside them */
        pass_each_row(p, L, beside_add);
    see(p, HOOK_FFN_OUT, l, b->proj, dim, dim);
    if (L->post_ffn_norm) {
        if (p->one) {
            token_norm_add(p, b->proj, L->post_ffn_norm);
            return;
        }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
        for (int i = 0; i < p->n; i++) {
            float *xn_i = t->buf.xn + (size_t)i * dim;
            forward_rmsnorm(xn_i, b->proj + (size_t)i * dim, L->post_ffn_norm, dim, c->rms_eps);
            add_into(t->buf.x + (size_t)i * dim, xn_i, dim);
        }
    }
}

/* Layer l's attention on the normed rows xn (plain or gated): the projections, the KV
 * cache, every head, into kqv. */
static void pass_attention(const pass *p, int l, const float *xn)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    int dim = p->c->dim, q_dim = L->q_dim, kv_dim = L->kv_dim;
    bool gated = L->kind == MODEL_LAYER_GATED_ATTENTION, writes = L->kv_layer == l;
    proj_job qkv[3] = {
        {.w = &L->wq, .bias = L->bq, .out = gated ? t->buf.qg : t->buf.q},
        {.w = &L->wk, .bias = L->bk, .out = t->k_new},
        {.w = &L->wv, .bias = L->bv, .out = t->v_new},
    };
    /* a layer sharing another's cache projects the queries alone; one without wv
     * takes its keys as values (head_prepare) */
    pass_project(p, xn, dim, qkv, !writes ? 1 : L->wv.rows ? 3 : 2);
    if (p->c->arch.qk_norm_whole)
        pass_qk_norm_whole(p, L);
    pass_attend(p, l);
    see(p, HOOK_QCUR, l, t->buf.q, q_dim, q_dim);
    if (writes) {
        see(p, HOOK_KCUR, l, t->k_new, kv_dim, kv_dim);
        see(p, HOOK_VCUR, l, t->v_new, kv_dim, kv_dim);
    }
}

/* ---- a Gated DeltaNet ---- */

/* The convolution (width W) of rows i0..i1-1 of the batch, channels c0..c1-1: each
 * channel's kernel over its last W inputs in dn_ext (oldest first, as ggml's ssm_conv
 * adds them), then SiLU, into dn_conv. */
static void dn_convolve(const pass *p, const model_layer *L, int i0, int i1, int c0, int c1)
{
    const model_config *c = p->c;
    batch_buffers *b = &p->t->buf;
    int W = c->dn_conv_width, cd = c->dn_conv_dim;
    for (int i = i0; i < i1; i++) {
        float *out = b->dn_conv + (size_t)i * cd;
        for (int ch = c0; ch < c1; ch++) {
            const float *w = L->dn_conv + (size_t)ch * W;
            float sum = 0.0f;
            for (int j = 0; j < W; j++)
                sum += b->dn_ext[(size_t)(i + j) * cd + ch] * w[j];
            out[ch] = sum / (1.0f + expf(-sum));
        }
    }
}

/* Where the checkpoint of the state after position `after` keeps layer l's part (or the
 * kept states', transformer_keep_states, between checkpoints), or NULL when none is
 * taken there. */
static float *dn_mark(const pass *p, int l, int after)
{
    const transformer *t = p->t;
    size_t at = (size_t)after + 1, layer = (size_t)t->dn_index[l];
    if (!t->dn_marking)
        return NULL;
    if (at % DN_MARK_EVERY == 0)
        return t->dn_marks + (at / DN_MARK_EVERY * p->c->dn_layers + layer) * t->dn_floats;
    if (t->dn_kept && (int)at >= t->dn_kept_from && (int)at <= t->dn_kept_to)
        return t->dn_kept + ((at - t->dn_kept_from) * p->c->dn_layers + layer) * t->dn_floats;
    return NULL;
}

/* After a pass that wrote the checkpoints it passed: the kept states among them are
 * written. */
static void dn_kept_written(const pass *p)
{
    transformer *t = p->t;
    for (int i = 0; t->dn_kept && t->dn_marking && i < p->n; i++) {
        int at = p->pos + i + 1;
        if (at >= t->dn_kept_from && at <= t->dn_kept_to)
            t->dn_kept_ok[at - t->dn_kept_from] = 1;
    }
}

/* Channels c0..c1-1 of layer l's convolution state (its last W - 1 inputs, in `state`)
 * after the call, and at each checkpoint the call passes, from dn_ext: after row i - 1
 * of the call they are rows i .. i + W - 2 of dn_ext. */
static void dn_keep_inputs(const pass *p, int l, float *state, int c0, int c1)
{
    const model_config *c = p->c;
    const float *ext = p->t->buf.dn_ext;
    int W = c->dn_conv_width, cd = c->dn_conv_dim;
    for (int i = 1; i <= p->n; i++) {
        float *to[2] = {dn_mark(p, l, p->pos + i - 1), i == p->n ? state : NULL};
        for (int k = 0; k < 2; k++)
            for (int r = 0; to[k] && r < W - 1; r++)
                memcpy(to[k] + (size_t)r * cd + c0, ext + (size_t)(i + r) * cd + c0,
                       sizeof(float) * (size_t)(c1 - c0));
    }
}

/* x / sqrt(sum x^2), the root at least eps (ggml's l2_norm), n values into o. */
static void l2_normed(float *o, const float *x, int n, float eps)
{
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float s = 1.0f / fmaxf(sqrtf(ss), eps);
    for (int i = 0; i < n; i++)
        o[i] = x[i] * s;
}

/* Layer l's history of position t (transformer.dn_hist): its keys, then each value
 * head's log-decay, then its beta. */
static float *dn_history(const pass *p, int l, int t)
{
    const transformer *tf = p->t;
    return tf->dn_hist + ((size_t)t * p->c->dn_layers + tf->dn_index[l]) * tf->dn_hist_floats;
}

/* The L2-normed keys of rows i0..i1-1, q/k heads h0..h1-1, into layer l's history. */
static void dn_keys(const pass *p, int l, int i0, int i1, int h0, int h1)
{
    const model_config *c = p->c;
    int dk = c->dn_head_k;
    for (int i = i0; i < i1; i++) {
        const float *row = p->t->buf.dn_conv + (size_t)i * c->dn_conv_dim + c->dn_key_dim;
        float *k = dn_history(p, l, p->pos + i);
        for (int h = h0; h < h1; h++)
            l2_normed(k + (size_t)h * dk, row + (size_t)h * dk, dk, c->rms_eps);
    }
}

/* Value head h of layer l over the call's rows i0..i1-1, from its state matrix S
 * (updated in place): beta = sigmoid and the log-decay softplus(alpha + dt_bias) times
 * a of every row, handed to their editors (kept in the history as they leave them),
 * then row by row its q/k head's query L2-normed (its key is in the history, dn_keys),
 * the delta rule's step, then the head's output RMSNormed and times silu(z), into its
 * slice of kqv. A checkpoint of the head's state at each one the call passes (none in
 * a pass of sequences). When kq_soft_max is observed, each row's effective attention
 * (delta_net_effective: the weight of every earlier position's value in the head's
 * output, before the norm) into att (the call's rows, pos + n wide), handed to the
 * observers as the head's rows. */
static void dn_head(const pass *p, int l, int h, float *S, int i0, int i1, float *att)
{
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    batch_buffers *b = &p->t->buf;
    int dk = c->dn_head_k, dv = c->dn_head_v, nv = c->dn_v_heads, kh = h % c->dn_k_heads;
    int cd = c->dn_conv_dim, vd = c->dn_value_dim, width = p->pos + p->n;
    size_t head_floats = (size_t)dk * dv;
    size_t conv_floats = (size_t)(c->dn_conv_width - 1) * cd;
    size_t hist = (size_t)c->dn_layers * p->t->dn_hist_floats; /* a position's */
    bool watched = p->watch & HOOK_BIT(HOOK_KQ_SOFT_MAX);
    float q[MODEL_DN_HEAD_MAX], m[MODEL_DN_HEAD_MAX]; /* the loader's bound on dn_head_k */
    const float *h0 = dn_history(p, l, 0);
    /* the history as a run: position s's key, log-decay and beta */
    delta_net_run past = {.k = h0 + (size_t)kh * dk, .g = h0 + c->dn_key_dim + h,
                          .beta = h0 + c->dn_key_dim + nv + h, .qk_stride = hist,
                          .gb_stride = hist, .dk = dk, .dv = dv,
                          .scale = 1.0f / sqrtf((float)dk)};
    for (int i = i0; i < i1; i++) {
        float *beta = &b->dn_beta[(size_t)i * nv + h], *g = &b->dn_g[(size_t)i * nv + h];
        *beta = 1.0f / (1.0f + expf(-*beta));
        float a = *g + L->dn_dt_bias[h];
        *g = (a > 20.0f ? a : log1pf(expf(a))) * L->dn_a[h];
    }
    edit_span(p, HOOK_DN_BETA, l, i0, i1 - i0, b->dn_beta + (size_t)i0 * nv, (size_t)nv, h, 1);
    edit_span(p, HOOK_DN_GATE, l, i0, i1 - i0, b->dn_g + (size_t)i0 * nv, (size_t)nv, h, 1);
    for (int i = i0; i < i1; i++) {
        int t = p->pos + i;
        const float *row = b->dn_conv + (size_t)i * cd;
        float *at = dn_history(p, l, t);
        l2_normed(q, row + (size_t)kh * dk, dk, c->rms_eps);
        float *beta = &b->dn_beta[(size_t)i * nv + h], *g = &b->dn_g[(size_t)i * nv + h];
        at[c->dn_key_dim + h] = *g;
        at[c->dn_key_dim + nv + h] = *beta;
        delta_net_run r = {.q = q, .k = at + (size_t)kh * dk,
                           .v = row + 2 * c->dn_key_dim + (size_t)h * dv, .g = g, .beta = beta,
                           .dk = dk, .dv = dv, .scale = past.scale};
        float *out = b->kqv + (size_t)i * vd + (size_t)h * dv;
        delta_net_step(&r, 0, S, out);
        float *mark = p->sequences ? NULL : dn_mark(p, l, t);
        if (mark)
            memcpy(mark + conv_floats + (size_t)h * head_floats, S, sizeof(float) * head_floats);
        const float *z = b->dn_z + (size_t)i * vd + (size_t)h * dv;
        forward_rmsnorm(out, out, L->dn_norm, dv, c->rms_eps);
        for (int j = 0; j < dv; j++)
            out[j] *= z[j] / (1.0f + expf(-z[j]));
        if (p->watch & HOOK_BIT(HOOK_DN_STATE)) {
            double ss = 0.0;
            for (size_t e = 0; e < head_floats; e++)
                ss += (double)S[e] * S[e];
            b->dn_snorm[(size_t)i * nv + h] = (float)sqrt(ss);
        }
        if (watched) {
            float *w = att + (size_t)i * width;
            delta_net_effective_of(&past, t, q, w, m);
            mask_outside(w, 0, t, width, 0.0f);
        }
    }
    if (watched)
        see_head(p, HOOK_KQ_SOFT_MAX, l, h, att, width);
}

/* The convolved queries, keys and values to their observers (q_conv, k_conv, v_conv). */
static void dn_see_conv(const pass *p, int l)
{
    const model_config *c = p->c;
    const float *conv = p->t->buf.dn_conv;
    size_t cd = (size_t)c->dn_conv_dim;
    see(p, HOOK_Q_CONV, l, conv, c->dn_key_dim, cd);
    see(p, HOOK_K_CONV, l, conv + c->dn_key_dim, c->dn_key_dim, cd);
    see(p, HOOK_V_CONV, l, conv + 2 * c->dn_key_dim, c->dn_value_dim, cd);
}

/* What the value heads made of each row to its observers (beta, gate, state_norm). */
static void dn_see_heads(const pass *p, int l)
{
    const batch_buffers *b = &p->t->buf;
    int nv = p->c->dn_v_heads;
    see(p, HOOK_DN_BETA, l, b->dn_beta, nv, (size_t)nv);
    see(p, HOOK_DN_GATE, l, b->dn_g, nv, (size_t)nv);
    see(p, HOOK_DN_STATE, l, b->dn_snorm, nv, (size_t)nv);
}

/* Value head h's state matrix in a layer's recurrent state. */
static float *head_state(const pass *p, float *state, int h)
{
    const model_config *c = p->c;
    return state + (size_t)(c->dn_conv_width - 1) * c->dn_conv_dim +
           (size_t)h * c->dn_head_k * c->dn_head_v;
}

/* A pass of sequences' rows of layer l after the projections: each sequence from the
 * layer's state after pos - 1 (`state`, which stays as it is), as a run of it alone
 * would: its convolution over the state's last W - 1 inputs and then its own (written
 * before its first row in dn_ext, over rows of the sequences before it, convolved
 * already: the sequences in order), the keys' norms, then each (sequence, value head)
 * through a copy of the head's state (t->seq_dn, a slot a thread). */
static void dn_sequences(const pass *p, int l, float *state)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    batch_buffers *b = &t->buf;
    int W = c->dn_conv_width, cd = c->dn_conv_dim, nv = c->dn_v_heads, m = p->seq;
    int seqs = p->n / m;
    size_t head_floats = (size_t)c->dn_head_k * c->dn_head_v;
    for (int s = 0; s < seqs; s++) {
        memcpy(b->dn_ext + (size_t)s * m * cd, state, sizeof(float) * (size_t)(W - 1) * cd);
        dn_convolve(p, L, s * m, s * m + m, 0, cd);
    }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++)
        dn_keys(p, l, i, i + 1, 0, c->dn_k_heads);
    long work = (long)p->n * nv * c->dn_head_k * c->dn_head_v;
    int threads = work >= 65536 ? t->seq_dn_slots : 1;
    (void)threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int k = 0; k < seqs * nv; k++) {
        int slot = 0, s = k / nv, h = k % nv;
#ifdef _OPENMP
        slot = omp_get_thread_num();
#endif
        float *S = t->seq_dn + (size_t)slot * head_floats;
        memcpy(S, head_state(p, state, h), sizeof(float) * head_floats);
        dn_head(p, l, h, S, s * m, s * m + m, NULL);
    }
}

/* Layer l's Gated DeltaNet on the normed rows xn, into kqv (dn_value_dim a row): the
 * projections (attn_qkv into the convolution's inputs after the layer's last W - 1, the
 * gate z, beta, alpha), the convolution and the keys' norms, then every value head
 * through its state. One token: each thread its channels, its q/k heads, then its value
 * heads, a barrier after each; a batch: parallel over rows, then over heads (each head on
 * the thread of an attention slot: its effective rows go in that slot's t->att). */
static void pass_delta_net(const pass *p, int l, const float *xn)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    const model_layer *L = &p->m->layers[l];
    batch_buffers *b = &t->buf;
    int W = c->dn_conv_width, cd = c->dn_conv_dim, nv = c->dn_v_heads;
    float *state = t->dn_live + (size_t)t->dn_index[l] * t->dn_floats;
    int c0 = 0, c1 = cd;
    if (p->one)
        pass_share(p, cd, &c0, &c1);
    for (int r = 0; r < W - 1; r++) /* read after pass_project's barrier */
        memcpy(b->dn_ext + (size_t)r * cd + c0, state + (size_t)r * cd + c0,
               sizeof(float) * (size_t)(c1 - c0));
    proj_job jobs[4] = {
        {.w = &L->dn_qkv, .out = b->dn_ext + (size_t)(W - 1) * cd},
        {.w = &L->dn_z, .out = b->dn_z},
        {.w = &L->dn_beta, .out = b->dn_beta},
        {.w = &L->dn_alpha, .out = b->dn_g},
    };
    pass_project(p, xn, c->dim, jobs, 4);
    see(p, HOOK_DN_Z, l, b->dn_z, c->dn_value_dim, (size_t)c->dn_value_dim);
    if (p->one) {
        dn_convolve(p, L, 0, 1, c0, c1);
        dn_keep_inputs(p, l, state, c0, c1);
        pass_sync(p);
        dn_see_conv(p, l);
        int h0, h1;
        pass_share(p, c->dn_k_heads, &h0, &h1);
        dn_keys(p, l, 0, 1, h0, h1);
        pass_sync(p);
        pass_share(p, nv, &h0, &h1);
        for (int h = h0; h < h1; h++)
            dn_head(p, l, h, head_state(p, state, h), 0, 1,
                    t->att + (size_t)p->tid * t->chunk * t->ctx);
        pass_sync(p);
        dn_see_heads(p, l);
        return;
    }
    if (p->sequences) {
        dn_sequences(p, l, state);
        dn_see_conv(p, l);
        dn_see_heads(p, l);
        return;
    }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++) {
        dn_convolve(p, L, i, i + 1, 0, cd);
        dn_keys(p, l, i, i + 1, 0, c->dn_k_heads);
    }
    dn_keep_inputs(p, l, state, 0, cd);
    long work = (long)p->n * nv * c->dn_head_k * c->dn_head_v;
    int threads = work >= 65536 ? attention_threads(t) : 1; /* a row of t->att each */
    (void)threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (int h = 0; h < nv; h++) {
        int slot = 0;
#ifdef _OPENMP
        slot = omp_get_thread_num();
#endif
        dn_head(p, l, h, head_state(p, state, h), 0, p->n,
                t->att + (size_t)slot * t->chunk * t->ctx);
    }
    dn_see_conv(p, l);
    dn_see_heads(p, l);
}

/* ---- the pass ---- */

static void pass_ffn(const pass *p, int l, const float *xn);
static void pass_dense_and_experts(const pass *p, int l, const float *xn);

/* A step whose result no hook point names (what pass_out_block observes nothing at):
 * no observer's watch has this bit. */
#define NO_POINT HOOK_COUNT
_Static_assert(HOOK_COUNT < 64, "NO_POINT is a bit of the 64 of a watch");

/* Token i's per-layer inputs of layers l0..l1-1 from its projections (buf.ple_proj). */
static void layer_inputs_of(const pass *p, int i, int l0, int l1)
{
    const model_config *c = p->c;
    int ple = c->ple_dim, width = c->n_layers * ple;
    float down = 1.0f / sqrtf((float)c->dim), up = sqrtf((float)ple), half = 1.0f / sqrtf(2.0f);
    float *in = p->t->buf.ple_in + (size_t)i * width, *pr = p->t->buf.ple_proj + (size_t)i * width;
    for (int l = l0; l < l1; l++) {
        float *s = pr + (size_t)l * ple, *e = in + (size_t)l * ple;
        dequant_range(p->m->ple_embd_type, p->m->ple_embd,
                      (uint64_t)p->tokens[i] * width + (uint64_t)l * ple, e, (size_t)ple);
        for (int j = 0; j < ple; j++)
            s[j] *= down;
        forward_rmsnorm(s, s, p->m->ple_proj_norm, ple, c->rms_eps);
        for (int j = 0; j < ple; j++)
            e[j] = (s[j] + e[j] * up) * half;
    }
}

/* The per-layer inputs of the call's tokens (config.ple_dim > 0), into buf.ple_in (n,
 * n_layers, ple_dim), as llama.cpp's Gemma 4 makes them: for layer l, (RMSNorm(slice l
 * of ple_model_proj · x / sqrt(dim)) with ple_proj_norm + sqrt(ple_dim) · slice l of
 * the token's row of ple_embd) / sqrt(2), x the token's scaled embedding as inp_embd's
 * editors left it. Before the layers; one token: each thread its rows of the
 * projection, then its share of the layers, then the barrier. */
static void pass_layer_inputs(const pass *p)
{
    proj_job j = {.w = &p->m->ple_model_proj, .out = p->t->buf.ple_proj};
    pass_project(p, p->t->buf.x, p->c->dim, &j, 1);
    if (p->one) {
        int l0, l1;
        pass_share(p, p->c->n_layers, &l0, &l1);
        layer_inputs_of(p, 0, l0, l1);
        pass_sync(p);
        return;
    }
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++)
        layer_inputs_of(p, i, 0, p->c->n_layers);
}

/* Layer l's per-layer input gated into the stream: x += RMSNorm(ple_proj (act(ple_gate
 * x) * the input)) with ple_norm, observed at per_layer_embd_out as it is added (the
 * normed rows pass_out_block leaves: one token, thread 0's own; a batch, buf.xn). */
static void pass_layer_input(const pass *p, int l)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    int ple = p->c->ple_dim, dim = p->c->dim;
    proj_job gate = {.w = &L->ple_gate, .out = t->buf.ple_g,
                     .times = t->buf.ple_in + (size_t)l * ple,
                     .times_stride = (size_t)p->c->n_layers * ple};
    pass_project(p, t->buf.x, dim, &gate, 1);
    pass_out_block(p, l, &L->ple_proj, NULL, t->buf.ple_g, ple, L->ple_norm, NO_POINT, NULL);
    const float *added = !L->ple_norm ? t->buf.proj : p->one ? p->ln->xn : t->buf.xn;
    see(p, HOOK_PER_LAYER_EMBD_OUT, l, added, dim, dim);
}

/* The stream times s (a layer's output scale). One token: each thread its share, then
 * the barrier. */
static void pass_scale(const pass *p, float s)
{
    int dim = p->c->dim, i0 = 0, i1 = p->n * dim;
    if (p->one)
        pass_share(p, dim, &i0, &i1);
#pragma omp parallel for schedule(static) if (!p->one && p->n >= PARALLEL_TOKENS)
    for (int i = i0; i < i1; i++)
        p->t->buf.x[i] *= s;
    pass_sync(p);
}

/* The width of layer l's mixer output (kqv): its kind's (attention, gated attention, a
 * Gated DeltaNet). */
static int mixer_width(const pass *p, int l)
{
    const model_layer *L = &p->m->layers[l];
    return L->kind == MODEL_LAYER_DELTA_NET ? p->c->dn_value_dim : L->q_dim;
}

/* Layer l's steps up to its mixer's output (kqv, edited and observed): the norm, then
 * attention or a Gated DeltaNet, which write the layer's KV cache or recurrent state. */
static void layer_mixer(const pass *p, int l)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    int dim = p->c->dim, mix = mixer_width(p, l);

    const float *xn = pass_norm(p, t->buf.x, L->rms_att);
    see(p, HOOK_ATTN_NORM, l, xn, dim, dim);
    if (L->kind == MODEL_LAYER_DELTA_NET)
        pass_delta_net(p, l, xn);
    else
        pass_attention(p, l, xn);
    edit(p, HOOK_KQV, l, t->buf.kqv, mix, mix);
    see(p, HOOK_KQV, l, t->buf.kqv, mix, mix);
}

/* Layer l's steps after its mixer: the output projection, the feed-forward or the
 * experts, the per-layer input, the output scale, l_out. */
static void layer_rest(const pass *p, int l)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    int dim = p->c->dim, mix = mixer_width(p, l);

    const float *xn = pass_out_block(p, l, &L->wo, L->bo, t->buf.kqv, mix, L->post_attn_norm,
                                     HOOK_KQV_OUT, L->rms_ffn);
    see(p, HOOK_FFN_INP, l, t->buf.x, dim, dim);
    see(p, HOOK_FFN_NORM, l, xn, dim, dim);
    if (p->c->arch.dense_beside_experts)
        pass_dense_and_experts(p, l, xn);
    else if (p->c->n_experts > 0)
        pass_experts(p, l, xn, xn);
    else
        pass_ffn(p, l, xn);
    if (p->c->ple_dim > 0)
        pass_layer_input(p, l);
    if (L->out_scale)
        pass_scale(p, *L->out_scale);
    edit(p, HOOK_L_OUT, l, t->buf.x, dim, dim);
    see(p, HOOK_L_OUT, l, t->buf.x, dim, dim);
}

/* Layer l, for one token or a batch: the steps in order, observed at their points. */
static void layer_pass(const pass *p, int l)
{
    layer_mixer(p, l);
    layer_rest(p, l);
}

/* Layer l's dense gate and up products on the normed rows xn and their gated product
 * into buf.hb (what w2 reads), observed at ffn_gate, ffn_up and ffn_gate_par. */
static void pass_gate_up(const pass *p, int l, const float *xn)
{
    transformer *t = p->t;
    const model_layer *L = &p->m->layers[l];
    int hidden = L->hidden_dim;
    bool keep = p->watch & HOOK_BIT(HOOK_FFN_GATE);
    proj_job ffn = {.w = &L->w1, .out = t->buf.hb, .up = &L->w3, .up_out = t->buf.hb2,
                    .gate_keep = keep ? t->gate_keep : NULL};
    pass_project(p, xn, p->c->dim, &ffn, 1);
    see(p, HOOK_FFN_GATE, l, t->gate_keep, hidden, hidden);
    see(p, HOOK_FFN_UP, l, t->buf.hb2, hidden, hidden);
    see(p, HOOK_FFN_GATE_PAR, l, t->buf.hb, hidden, hidden);
}

/* Layer l's dense feed-forward on the normed rows xn, added to the stream. */
static void pass_ffn(const pass *p, int l, const float *xn)
{
    const model_layer *L = &p->m->layers[l];
    pass_gate_up(p, l, xn);
    pass_out_block(p, l, &L->w2, NULL, p->t->buf.hb, L->hidden_dim, L->post_ffn_norm,
                   HOOK_FFN_OUT, NULL);
}

/* Row i's inputs of the parts beside each other (buf.x holds the stream after the
 * attention): the dense output in ffn_dense normed by post_dense_norm (in place), the
 * experts' input pre_experts_norm(x) into moe_in, the router's RMSNorm(x) / sqrt(dim)
 * times router_scale into moe_rin (in llama.cpp's order of the products). */
static void beside_inputs(const pass *p, const model_layer *L, int i)
{
    batch_buffers *b = &p->t->buf;
    int dim = p->c->dim;
    size_t o = (size_t)i * dim;
    const float *x = b->x + o;
    forward_rmsnorm(b->ffn_dense + o, b->ffn_dense + o, L->post_dense_norm, dim, p->c->rms_eps);
    forward_rmsnorm(b->moe_in + o, x, L->pre_experts_norm, dim, p->c->rms_eps);
    float ss = 0.0f, down = 1.0f / sqrtf((float)dim), *r = b->moe_rin + o;
    for (int j = 0; j < dim; j++)
        ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / dim + p->c->rms_eps);
    for (int j = 0; j < dim; j++)
        r[j] = (x[j] * ss) * down * L->router_scale[j];
}

/* Layer l's feed-forward where experts sit beside the dense one
 * (arch.dense_beside_experts, Gemma 4 26B-A4B): the dense feed-forward on xn (the
 * stream normed by ffn_norm; observed at ffn_gate, ffn_up, ffn_gate_par) into
 * buf.ffn_dense, each part's input (beside_inputs), then the experts (pass_experts),
 * which add their normed sum to the dense output and the post-norm of that to the
 * stream. */
static void pass_dense_and_experts(const pass *p, int l, const float *xn)
{
    const model_layer *L = &p->m->layers[l];
    batch_buffers *b = &p->t->buf;
    pass_gate_up(p, l, xn);
    proj_job down = {.w = &L->w2, .out = b->ffn_dense};
    pass_project(p, b->hb, L->hidden_dim, &down, 1);
    pass_each_row(p, L, beside_inputs);
    pass_experts(p, l, b->moe_in, b->moe_rin);
}

/* The token embeddings (scaled) into the stream. */
static void pass_embed(const pass *p)
{
    transformer *t = p->t;
    int dim = p->c->dim;
    float scale = p->c->arch.embed_scale;
#pragma omp parallel for schedule(static) if (p->n >= PARALLEL_TOKENS)
    for (int i = 0; i < p->n; i++) {
        float *x = t->buf.x + (size_t)i * dim;
        quant_dequantize_row(x, &p->m->token_embedding, p->tokens[i]);
        if (scale != 1.0f)
            for (int j = 0; j < dim; j++)
                x[j] *= scale;
    }
    edit(p, HOOK_INP_EMBD, -1, t->buf.x, dim, dim);
    see(p, HOOK_INP_EMBD, -1, t->buf.x, dim, dim);
}

/* The final RMSNorm, kept as the classifier's input (the logits are computed from the
 * kept inputs: classifier_logits) at the rows' places (a pass of sequences: sequence
 * s's last row's at place pos + s). One token: thread 0 keeps it. */
static void pass_final(const pass *p)
{
    transformer *t = p->t;
    int dim = p->c->dim;
    const float *xn = pass_norm(p, t->buf.x, p->m->rms_final);
    see(p, HOOK_RESULT_NORM, -1, xn, dim, dim);
    if (p->tid == 0)
        classifier_keep(t, p->pos, p->n, xn);
}

/* The logits observed at result_output: computed from the kept inputs,
 * OBSERVED_LOGIT_ROWS at a time, for the rows an observer wants (after the pass, on
 * the calling thread). */
static void pass_logits_seen(const pass *p)
{
    transformer *t = p->t;
    int vocab = p->c->vocab_size;
    if (!(p->watch & HOOK_BIT(HOOK_RESULT_OUTPUT)))
        return;
    /* the kept inputs are at places pos.. (each sequence's last row: one at a time, its
     * position not its place's) */
    int most = p->lasts ? 1 : OBSERVED_LOGIT_ROWS;
    for (int done = 0; done < p->n && t->logit_rows;) {
        int k = p->n - done < most ? p->n - done : most;
        bool wanted = false;
        int row, rows;
        for (int i = 0; i < p->hooks->n; i++)
            wanted = wanted || hook_wants(p->hooks->list[i], HOOK_RESULT_OUTPUT, -1,
                                          row_pos(p, done), k, &row, &rows);
        if (wanted) {
            if (!classifier_logits(t, p->pos + done, k, t->logit_rows)) {
                pass_fail(p);
                return;
            }
            see_fire(p, HOOK_RESULT_OUTPUT, -1, -1, row_pos(p, done), k, t->logit_rows, vocab,
                     vocab);
        }
        done += k;
    }
}

/* One token: the layers and the classifier in one parallel region whose threads share
 * every step and meet at barriers (five a layer). The barrier spins for a bounded
 * time, then sleeps (barrier.h); between tokens the threads wait in OpenMP's pool. The
 * team has one thread fewer after a token whose threads waited long for a CPU (other
 * programs ran on them), one more after a run of tokens that did not (team.h). */
static void token_region(const pass *p)
{
    transformer *t = p->t;
    const model_config *c = p->c;
    int threads = lanes_reserve(t);
    int slots = attention_threads(t);
    if (slots < threads)
        threads = slots;
    int ffn = c->n_experts > 0 ? c->expert_hidden_dim * c->n_experts_used : c->hidden_dim;
    if ((double)c->dim * ffn * 3 * c->n_layers < ONE_TOKEN_PARALLEL_MIN_BYTES)
        threads = 1;
    /* The OpenMP team always has `most` threads (a team whose size changes makes
     * libgomp end and start threads); `act` of them work this token. */
    int most = threads, act = team_threads(&t->team, most), used = 1;
    unsigned long long spin_ns = barrier_spin_for(act, cpus_usable());
    long long waited = 0, started = (long long)clock_ns();

#pragma omp parallel num_threads(most) if (act > 1)
    {
        int tid = 0, nt = 1;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int workers = nt < act ? nt : act;
#pragma omp single
        barrier_init(&t->meet, (unsigned)workers, spin_ns); /* (OpenMP's barrier ends the single) */
        if (tid == 0)
            used = workers;
        if (tid < workers) { /* the others wait at the region's end */
            long long wait_at = team_cpu_wait_ns();
            pass mine = *p;
            mine.tid = tid;
            mine.nt = workers;
            mine.ln = &t->lanes[tid];
            if (c->ple_dim > 0)
                pass_layer_inputs(&mine);
            for (int l = 0; l < c->n_layers; l++)
                layer_pass(&mine, l);
            pass_final(&mine);
            long long spent = team_cpu_wait_ns() - wait_at;
#pragma omp atomic
            waited += spent;
        }
    }
    if (most > 1)
        team_update(&t->team, used, most, waited, (long long)clock_ns() - started);
}

/* The RoPE angles of a pass of sequences of m rows: each sequence's positions
 * pos..pos+m-1, the first sequence's rows copied to the others. */
static void rope_angles_seq(transformer *t, int pos, int n, int m)
{
    const model_config *c = &t->m->config;
    rope_angles(t, pos, m);
    int rot = c->arch.rope_dims, rot_swa = model_swa_rope_dims(&c->arch);
    for (int r = m; r < n; r += m) {
        memcpy(t->buf.rope + (size_t)r * rot, t->buf.rope, sizeof(float) * (size_t)m * rot);
        if (t->buf.rope_swa)
            memcpy(t->buf.rope_swa + (size_t)r * rot_swa, t->buf.rope_swa,
                   sizeof(float) * (size_t)m * rot_swa);
    }
}

/* The rows of the sequences that have begun by layer l (enter: all). */
static int rows_begun(const pass *p, int l)
{
    if (!p->enter)
        return p->n;
    int s = 0;
    while (s < p->n / p->seq && p->enter[s] <= l)
        s++;
    return s * p->seq;
}

/* Moves each sequence's last row (row s * seq + seq - 1) of sequences from..to-1 to row
 * s: of the stream, and, before layer l's steps after its mixer (l < n_layers), of its
 * mixer's output and the per-layer inputs those steps read. A row's place is at or
 * before its own row and after every earlier sequence's, so in order nothing is
 * overwritten before it is read. */
static void keep_lasts(const pass *p, int l, int from, int to)
{
    batch_buffers *b = &p->t->buf;
    int m = p->seq, dim = p->c->dim, ple = p->c->n_layers * p->c->ple_dim;
    int mix = l < p->c->n_layers ? mixer_width(p, l) : 0;
    for (int s = from; s < to && m > 1; s++) {
        size_t last = (size_t)s * m + m - 1;
        memmove(b->x + (size_t)s * dim, b->x + last * dim, sizeof(float) * (size_t)dim);
        if (mix > 0)
            memmove(b->kqv + (size_t)s * mix, b->kqv + last * mix, sizeof(float) * (size_t)mix);
        if (mix > 0 && ple > 0)
            memmove(b->ple_in + (size_t)s * ple, b->ple_in + last * ple,
                    sizeof(float) * (size_t)ple);
    }
}

/* The layers of a pass of sequences, each on the rows of the sequences begun by it
 * (p->enter; NULL: all at layer 0), a sequence's rows handed to the editors at the
 * point before its first layer (l_out of the one before it, or after the last layer:
 * the final norm's input) to be written whole. The last layer's mixer runs every row
 * (their keys and values); only each sequence's last row runs on from there (the
 * logits read nothing else), moved to the front: on return the stream's row s is
 * sequence s's last. */
static void pass_layers(const pass *p)
{
    int dim = p->c->dim, layers = p->c->n_layers, m = p->seq;
    int begun = rows_begun(p, 0);
    for (int l = 0; l < layers; l++) {
        int now = rows_begun(p, l);
        if (now > begun) /* sequences beginning at l: their stream, from the editors */
            edit_span(p, HOOK_L_OUT, l - 1, begun, now - begun,
                      p->t->buf.x + (size_t)begun * dim, dim, 0, dim);
        begun = now;
        if (now == 0)
            continue;
        pass view = *p;
        view.n = now;
        if (l < layers - 1) {
            layer_pass(&view, l);
            continue;
        }
        layer_mixer(&view, l);
        keep_lasts(p, l, 0, now / m);
        view.n = now / m;
        view.lasts = true;
        layer_rest(&view, l);
    }
    if (p->n > begun) { /* sequences beginning after the last layer */
        edit_span(p, HOOK_L_OUT, layers - 1, begun, p->n - begun,
                  p->t->buf.x + (size_t)begun * dim, dim, 0, dim);
        keep_lasts(p, layers, begun / m, p->n / m);
    }
}

/* The pass of n rows at pos; sequences: in sequences of m rows, each beginning at its
 * layer of enter (NULL: all at 0), ending with each one's last row (pass_layers). */
static bool pass_run(transformer *t, const int *tokens, int n, int pos, int m, bool batch,
                     bool sequences, const int *enter, const pass_hooks *hooks)
{
    bool failed = false;
    bool several = m < n;
    hook_set unseen = several || sequences ? HOOK_BIT(HOOK_KQ) | HOOK_BIT(HOOK_KQ_SOFT_MAX) : 0;
    pass p = {
        .t = t,
        .m = t->m,
        .c = &t->m->config,
        .tokens = tokens,
        .pos = pos,
        .n = n,
        .seq = m,
        .enter = enter,
        .sequences = sequences,
        .one = n == 1 && !batch,
        .batch = batch,
        .tid = 0,
        .nt = 1,
        .ln = NULL,
        .hooks = hooks,
        .watch = hooks->watch & ~unseen,
        .edits = hooks->edits,
        .failed = &failed,
    };
    pass_embed(&p);
    if (several)
        rope_angles_seq(t, pos, n, m);
    else
        rope_angles(t, pos, n);
    if (p.one) {
        token_region(&p);
    } else {
        if (p.c->ple_dim > 0)
            pass_layer_inputs(&p);
        if (sequences) {
            pass_layers(&p);
            p.n = n / m;
            p.lasts = true;
        } else {
            for (int l = 0; l < p.c->n_layers; l++)
                layer_pass(&p, l);
        }
        pass_final(&p);
    }
    pass_logits_seen(&p);
    if (p.c->dn_layers > 0 && !sequences)
        dn_kept_written(&p);
    return !failed;
}

bool forward_pass(transformer *t, const int *tokens, int n, int pos, bool batch,
                  const pass_hooks *hooks)
{
    return pass_run(t, tokens, n, pos, n, batch, false, NULL, hooks);
}

bool forward_pass_sequences(transformer *t, const int *tokens, int n, int pos, int m,
                            const int *enter, const pass_hooks *hooks)
{
    return pass_run(t, tokens, n, pos, m, true, true, enter, hooks);
}
