/* compute_format.c — the compute view's text without curses (see compute_format.h).
 * Owns nothing. */
#include "compute_format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ggml_type.h"
#include "hook.h"

/* ---- numbers, shapes, sparklines ---- */

/* "1.2e+05" -> "1.2e5", "1.2e-05" -> "1.2e-5" in place. */
static void short_exponent(char *s)
{
    char *e = strchr(s, 'e');
    if (!e)
        return;
    char *d = e + 1;
    if (*d == '+')
        memmove(d, d + 1, strlen(d));
    else if (*d == '-')
        d++;
    while (d[0] == '0' && d[1])
        memmove(d, d + 1, strlen(d));
}

int cfmt_number(float v, int width, char *out, size_t size)
{
    char buf[48];
    if (size == 0)
        return 0;
    out[0] = '\0';
    if (width < 1)
        return 0;
    if (isnan(v))
        snprintf(buf, sizeof buf, "nan");
    else if (isinf(v))
        snprintf(buf, sizeof buf, v < 0 ? "-inf" : "inf");
    /* as precise as fits: %g from 6 digits down, then the exponent form (%g keeps
     * 0.000123 fixed, which the exponent form writes shorter) */
    bool fits = false;
    for (int k = 0; !isnan(v) && !isinf(v) && !fits && k < 11; k++) {
        if (k < 6)
            snprintf(buf, sizeof buf, "%.*g", 6 - k, (double)v);
        else
            snprintf(buf, sizeof buf, "%.*e", 10 - k, (double)v);
        short_exponent(buf);
        fits = (int)strlen(buf) <= width;
    }
    if ((int)strlen(buf) > width) /* not even one digit fits: its sign, or '*' */
        snprintf(buf, sizeof buf, "%s", v < 0 ? "-" : "*");
    snprintf(out, size, "%.*s", width, buf);
    return (int)strlen(out);
}

int cfmt_shape(const step_tensor *t, char *out, size_t size)
{
    if (t->n_dims == 2)
        return snprintf(out, size, "[%d,%d]", t->shape[0], t->shape[1]);
    return snprintf(out, size, "[%d]", t->shape[0]);
}

int cfmt_sparkline(const unsigned hist[STEP_TENSOR_BINS], int width, bool utf8, char *out,
                   size_t size)
{
    static const char *const bars[8] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
                                        "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
                                        "\xe2\x96\x87", "\xe2\x96\x88"};
    static const char ascii[] = ".:-=+*#@";
    unsigned merged[STEP_TENSOR_BINS] = {0}, top = 0;
    if (width > STEP_TENSOR_BINS)
        width = STEP_TENSOR_BINS;
    for (int b = 0; width > 0 && b < STEP_TENSOR_BINS; b++) {
        int c = b * width / STEP_TENSOR_BINS;
        merged[c] += hist[b];
        top = merged[c] > top ? merged[c] : top;
    }
    size_t o = 0;
    if (size)
        out[0] = '\0';
    for (int c = 0; c < width; c++) {
        int level = top ? (int)((merged[c] * 8ull + top - 1) / top) : 0; /* 0..8, 1+ if any */
        const char *s = level == 0 ? " " : utf8 ? bars[level - 1] : (char[2]){ascii[level - 1], 0};
        size_t len = strlen(s);
        if (o + len + 1 > size)
            break;
        memcpy(out + o, s, len + 1);
        o += len;
    }
    return (int)o;
}

/* ---- the list's columns ---- */

enum { HIST_W = 8, GAP = 1 };

/* How many columns fit with numbers num_w wide; fills c. */
static int try_columns(int width, int name_w, int shape_w, int num_w, compute_columns *c)
{
    memset(c, 0, sizeof *c);
    c->name_w = name_w;
    c->shape_w = shape_w;
    c->num_w = num_w;
    int used = name_w + GAP + shape_w, shown = 0;
    bool *stat[] = {&c->l2, &c->min, &c->max};
    for (int k = 0; k < 3; k++)
        if (used + GAP + num_w <= width) {
            *stat[k] = true;
            used += GAP + num_w;
            shown++;
        }
    if (shown == 3 && used + GAP + HIST_W <= width) {
        c->hist_w = HIST_W;
        used += GAP + HIST_W;
        shown++;
    }
    if (c->hist_w && used + GAP + num_w <= width) {
        c->mean = true;
        used += GAP + num_w;
        shown++;
    }
    while (c->mean && c->n_first < STEP_TENSOR_FIRST && used + GAP + num_w <= width) {
        c->n_first++;
        used += GAP + num_w;
        shown++;
    }
    c->width = used;
    return shown;
}

void compute_columns_for(int width, int name_w, int shape_w, compute_columns *c)
{
    compute_columns narrow;
    int wide = try_columns(width, name_w, shape_w, 8, c);
    if (try_columns(width, name_w, shape_w, 6, &narrow) > wide)
        *c = narrow;
    else
        try_columns(width, name_w, shape_w, 8, c);
    const char *names[] = {"L2", "min", "max", "histogram", "mean", "first values"};
    bool shown[] = {c->l2, c->min, c->max, c->hist_w > 0, c->mean, c->n_first > 0};
    size_t o = 0;
    c->hidden[0] = '\0';
    for (int k = 0; k < 6; k++)
        if (!shown[k])
            o += (size_t)snprintf(c->hidden + o, o < sizeof c->hidden ? sizeof c->hidden - o : 0,
                                  "%s%s", o ? ", " : "", names[k]);
}

/* Appends text right-aligned (left when left) in w columns and a gap before it. */
static size_t put_cell(char *out, size_t o, size_t size, const char *text, int w, bool left)
{
    if (o + (size_t)w + 2 > size)
        return o;
    return o + (size_t)snprintf(out + o, size - o, left ? " %-*s" : " %*s", w, text);
}

void compute_header(const compute_columns *c, char *out, size_t size)
{
    size_t o = (size_t)snprintf(out, size, "%-*s %-*s", c->name_w, "step", c->shape_w, "shape");
    if (c->l2)
        o = put_cell(out, o, size, "L2", c->num_w, false);
    if (c->min)
        o = put_cell(out, o, size, "min", c->num_w, false);
    if (c->max)
        o = put_cell(out, o, size, "max", c->num_w, false);
    if (c->hist_w)
        o = put_cell(out, o, size, "histo", c->hist_w, true);
    if (c->mean)
        o = put_cell(out, o, size, "mean", c->num_w, false);
    if (c->n_first)
        o = put_cell(out, o, size, "first values", c->n_first * (c->num_w + 1) - 1, true);
}

void compute_row(const step_tensor *t, const compute_columns *c, bool utf8, char *out,
                 size_t size)
{
    char shape[32], num[32], spark[STEP_TENSOR_BINS * 4 + 1];
    cfmt_shape(t, shape, sizeof shape);
    size_t o = (size_t)snprintf(out, size, "%-*s %-*s", c->name_w, t->name, c->shape_w, shape);
    const float stats[] = {t->l2, t->min, t->max};
    const bool on[] = {c->l2, c->min, c->max};
    for (int k = 0; k < 3; k++)
        if (on[k]) {
            cfmt_number(stats[k], c->num_w, num, sizeof num);
            o = put_cell(out, o, size, num, c->num_w, false);
        }
    if (c->hist_w && o + 1 + sizeof spark < size) {
        out[o++] = ' ';
        o += (size_t)cfmt_sparkline(t->hist, c->hist_w, utf8, out + o, size - o);
    }
    if (c->mean) {
        cfmt_number(t->mean, c->num_w, num, sizeof num);
        o = put_cell(out, o, size, num, c->num_w, false);
    }
    for (int i = 0; i < c->n_first && i < t->n_first; i++) {
        cfmt_number(t->first[i], c->num_w, num, sizeof num);
        o = put_cell(out, o, size, num, c->num_w, false);
    }
}

const char *compute_step_about(const char *name)
{
    static const struct {
        const char *name, *about;
    } about[] = {
        {"inp_embd", "the token's embedding: the stream layer 0 reads"},
        {"attn_norm", "the stream RMS-normed: attention's input"},
        {"Qcur", "the queries, a row a head, after RoPE"},
        {"Kcur", "the keys, after RoPE: what the KV cache stores"},
        {"Vcur", "the values: what the KV cache stores"},
        {"kq", "each head's scores over the keys: q.k times the query scale"},
        {"kq_soft_max", "each head's attention weights over the keys (softmax)"},
        {"kqv", "each head's weighted values, before the output projection"},
        {"kqv_out", "attention's output: attn_output times kqv"},
        {"ffn_inp", "the stream after attention (its input plus kqv_out)"},
        {"ffn_norm", "the stream RMS-normed: the feed-forward's input"},
        {"ffn_moe_logits", "the router's logits, one an expert (its bias added, if any)"},
        {"ffn_moe_probs", "the router's softmax: each expert's probability"},
        {"ffn_moe_topk", "the chosen experts, the most probable first"},
        {"ffn_moe_weights", "each chosen expert's weight in the sum"},
        {"ffn_moe_down", "each chosen expert's output, before its weight"},
        {"ffn_moe_out", "the weighted sum of the chosen experts' outputs"},
        {"ffn_gate", "the gate projection, before the activation"},
        {"ffn_up", "the up projection"},
        {"ffn_gate_par", "act(gate) times up: what ffn_down reads"},
        {"ffn_out", "the feed-forward's output: ffn_down times ffn_gate_par"},
        {"per_layer_embd_out", "the layer's own embedding of the token, gated and normed"},
        {"l_out", "the stream after the layer (control vectors added)"},
        {"result_norm", "the stream RMS-normed: the classifier's input"},
        {"result_output", "the logits, one a token of the vocabulary"},
    };
    for (size_t i = 0; i < sizeof about / sizeof about[0]; i++)
        if (!strcmp(name, about[i].name))
            return about[i].about;
    return "";
}

/* ---- the weight view's text ---- */

typedef struct {
    compute_text *t;
    int width;
    char cur[COMPUTE_LINE_MAX];
    int len;     /* of cur */
    int indent;  /* of the lines a wrapped line goes on with */
    bool empty;  /* no word on cur yet (only its indent) */
} text_builder;

static void tb_end(text_builder *b)
{
    if (b->len == 0 || b->empty)
        return;
    compute_text *t = b->t;
    if (t->n < COMPUTE_TEXT_LINES - 1) {
        snprintf(t->line[t->n++], COMPUTE_LINE_MAX, "%s", b->cur);
    } else if (!t->cut) {
        snprintf(t->line[t->n++], COMPUTE_LINE_MAX, "%.*s", b->width, "(more lines than shown)");
        t->cut = true;
    }
    b->len = 0;
    b->cur[0] = '\0';
}

/* One word, on this line when it fits, else on the next (indented); a word longer than
 * a line is split. */
/* Ends the line and starts the next, indented. */
static void tb_next(text_builder *b)
{
    tb_end(b);
    b->len = snprintf(b->cur, sizeof b->cur, "%*s", b->indent, "");
    b->empty = true;
}

static void tb_word(text_builder *b, const char *w)
{
    int n = (int)strlen(w);
    while (n > 0) {
        int room = b->width - b->len - (b->empty ? 0 : 1);
        if (n > room && !b->empty) {
            tb_next(b);
            continue;
        }
        if (!b->empty)
            b->cur[b->len++] = ' ';
        int take = n < room ? n : room > 0 ? room : 1;
        memcpy(b->cur + b->len, w, (size_t)take);
        b->len += take;
        b->cur[b->len] = '\0';
        b->empty = false;
        w += take;
        n -= take;
        if (n > 0)
            tb_next(b);
    }
}

/* A line of words (split at spaces), its continuations indented by indent. */
static void tb_line(text_builder *b, int indent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void tb_line(text_builder *b, int indent, const char *fmt, ...)
{
    char text[COMPUTE_LINE_MAX * 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tb_end(b);
    int lead = 0;
    while (text[lead] == ' ')
        lead++;
    b->len = snprintf(b->cur, sizeof b->cur, "%*s", lead < b->width / 2 ? lead : 0, "");
    b->empty = true;
    b->indent = indent < b->width / 2 ? indent : 0;
    for (char *w = strtok(text + lead, " "); w; w = strtok(NULL, " "))
        tb_word(b, w);
    tb_end(b);
}

/* A labelled list of n numbers (ints when ints, else floats), wrapped. */
static void tb_numbers(text_builder *b, const char *label, const int *ints, const float *floats,
                       int n)
{
    char text[COMPUTE_LINE_MAX * 4];
    size_t o = (size_t)snprintf(text, sizeof text, "  %s", label);
    for (int i = 0; i < n && o + 24 < sizeof text; i++) {
        char num[32];
        if (ints)
            snprintf(num, sizeof num, "%d", ints[i]);
        else
            cfmt_number(floats[i], 9, num, sizeof num);
        o += (size_t)snprintf(text + o, sizeof text - o, " %s", num);
    }
    tb_line(b, 4, "%s", text);
}

/* The fields of block b: its scales, the sub-block that holds values v0..v0+len-1, its
 * quants, high bits and dequantized values. */
static void tb_block(text_builder *b, const block_decoded *k, int v0, int len)
{
    char d[32], m[32];
    if (k->has_d) {
        cfmt_number(k->d, 10, d, sizeof d);
        if (k->type == BLOCK_Q8_ROWS)
            tb_line(b, 4, "  d (scale, fp32) = %s", d);
        else if (k->has_min) {
            cfmt_number(k->dmin, 10, m, sizeof m);
            tb_line(b, 4, "  d = %s (half 0x%04x)   %s = %s (half 0x%04x)", d, k->d_bits,
                    k->n > 32 ? "dmin" : "m", m, k->min_bits);
        } else if (k->d_e8m0) {
            tb_line(b, 4, "  d = %s (E8M0 e = 0x%02x: 2^(e - 128))", d, k->d_bits);
        } else {
            tb_line(b, 4, "  d = %s (half 0x%04x)", d, k->d_bits);
        }
    }
    if (k->sub_scales) {
        tb_line(b, 4, "  %d sub-blocks of %d values; value %d is in sub-block %d", k->n_sub,
                k->sub_len, v0, v0 / k->sub_len);
        char label[48];
        snprintf(label, sizeof label, "scales (%d-bit):", k->scale_bits);
        tb_numbers(b, label, k->scale, NULL, k->n_sub);
        if (k->sub_mins) {
            snprintf(label, sizeof label, "mins (%d-bit):", k->scale_bits);
            tb_numbers(b, label, k->min, NULL, k->n_sub);
        }
    }
    if (len > k->n - v0)
        len = k->n - v0;
    if (k->low_bits) {
        char label[64];
        snprintf(label, sizeof label, "quants q%s of values %d..%d:",
                 k->high_bits ? " (low | high bits)" : "", v0, v0 + len - 1);
        tb_numbers(b, label, k->quant + v0, NULL, len);
        if (k->high_bits) {
            snprintf(label, sizeof label, "their high bits (%d a value):", k->high_bits);
            tb_numbers(b, label, k->high + v0, NULL, len);
        }
    } else if (k->type != GGML_TYPE_F32) { /* F16, BF16: the halves as stored */
        char text[COMPUTE_LINE_MAX * 4];
        size_t o = (size_t)snprintf(text, sizeof text, "  stored (hex):");
        for (int i = 0; i < len && o + 8 < sizeof text; i++)
            o += (size_t)snprintf(text + o, sizeof text - o, " %04x", (unsigned)k->raw[v0 + i]);
        tb_line(b, 4, "%s", text);
    }
    tb_line(b, 4, "  value = %s", k->formula);
    tb_numbers(b, "dequantized:", NULL, k->value + v0, len);
    tb_line(b, 4, "  packing: %s", k->packing);
}

/* The partial dot product as the kernels compute it, in words and numbers. */
static void tb_partial(text_builder *b, const step_weight *w)
{
    const block_decoded *k = &w->block;
    char part[32], xs[32], xsum[32], d[32], total[32];
    cfmt_number(w->partial, 12, part, sizeof part);
    cfmt_number(w->xs, 12, xs, sizeof xs);
    cfmt_number(w->xsum, 12, xsum, sizeof xsum);
    cfmt_number(k->d, 12, d, sizeof d);
    if (!w->quantized) {
        tb_line(b, 4, "part of the row's dot product: sum of weight * x over the group = %s",
                part);
    } else if (w->n_sums == 2) {
        int s0 = w->value0 / k->sub_len;
        tb_line(b, 4, "part: d * xs * (sc%d * S1 + sc%d * S2) with S1 = %d, S2 = %d (the integer "
                      "sums of (q - %d) * xq over each 16), sc = %d, %d: %s * %s * %d = %s",
                s0, s0 + 1, w->sums[0], w->sums[1], k->offset, k->scale[s0], k->scale[s0 + 1], d,
                xs, k->scale[s0] * w->sums[0] + k->scale[s0 + 1] * w->sums[1], part);
    } else if (k->sub_mins) {
        int s0 = w->value0 / k->sub_len;
        char dm[32];
        cfmt_number(k->dmin, 12, dm, sizeof dm);
        tb_line(b, 4, "part: d * sc * xs * S - dmin * m * xsum, S = %d (sum of q * xq), sc = %d, "
                      "m = %d, xsum = xs * sum(xq) = %s: %s * %d * %s * %d - %s * %d * %s = %s",
                w->sums[0], k->scale[s0], k->min[s0], xsum, d, k->scale[s0], xs, w->sums[0], dm,
                k->min[s0], xsum, part);
    } else if (k->has_min) {
        char m[32];
        cfmt_number(k->dmin, 12, m, sizeof m);
        tb_line(b, 4, "part: d * xs * S + m * xsum, S = %d (sum of q * xq), xsum = xs * "
                      "sum(xq) = %s: %s * %s * %d + %s * %s = %s",
                w->sums[0], xsum, d, xs, w->sums[0], m, xsum, part);
    } else if (k->levels) {
        tb_line(b, 4, "part: d * xs * S, S = %d (sum of kvalue[q] * xq, in int32): %s * %s * %d "
                      "= %s",
                w->sums[0], d, xs, w->sums[0], part);
    } else {
        tb_line(b, 4, "part: S * d * xs, S = %d (sum of (q - %d) * xq, in int32): %d * %s * %s "
                      "= %s",
                w->sums[0], k->offset, w->sums[0], d, xs, part);
    }
    cfmt_number(w->row_total, 12, total, sizeof total);
    char step[32];
    cfmt_number(w->step_value, 12, step, sizeof step);
    tb_line(b, 4, "row %d: the %d groups' parts added in order (the plain-C kernel) = %s; the "
                  "pass computed %s%s%s",
            w->row, w->groups, total, step, w->note ? " -- " : "", w->note ? w->note : "");
}

void compute_weight_text(const step_weight *w, int width, compute_text *out)
{
    text_builder b = {.t = out, .width = width < 20 ? 20 : width};
    out->n = 0;
    out->cut = false;
    b.width = b.width > COMPUTE_LINE_MAX - 1 ? COMPUTE_LINE_MAX - 1 : b.width;
    const char *step = hook_name(w->step), *input = hook_name(w->input);
    tb_line(&b, 4, "%s element %d = row %d of %s . %s", step, w->row, w->row, w->tensor, input);
    tb_line(&b, 4, "%s: %d rows x %d columns; in the file %s; computed %s", w->tensor, w->rows,
            w->cols, w->file_type, w->computed);
    int first = w->group * w->group_len;
    int last = first + w->group_len - 1 < w->cols - 1 ? first + w->group_len - 1 : w->cols - 1;
    tb_line(&b, 4, "input group %d of %d: %s[%d..%d] (Left, Right: the others)", w->group,
            w->groups, input, first, last);
    int len = last - first + 1;
    if (w->file_block_ok) {
        tb_line(&b, 4, "in the file: a %s block holding the group from its value %d",
                w->file_block.name, w->file_value0);
        tb_block(&b, &w->file_block, w->file_value0, len);
        tb_line(&b, 4, "the loader made it %s:", w->computed);
    }
    tb_line(&b, 4, "weight: %s block %d of the row, the group from its value %d", w->block.name,
            w->block_no, w->value0);
    tb_block(&b, &w->block, w->value0, len);
    if (w->quantized) {
        char xs[32];
        cfmt_number(w->xs, 12, xs, sizeof xs);
        tb_line(&b, 4, "activation: %s[%d..%d] quantized as llmchat quantizes activations (Q8_0: "
                       "xs = max|x| / 127 = %s, xq = round(x / xs))",
                input, first, last, xs);
        tb_numbers(&b, "x:", NULL, w->x, len);
        int xq[BLOCK_VALUES_MAX];
        for (int i = 0; i < len; i++)
            xq[i] = w->xq[i];
        tb_numbers(&b, "xq:", xq, NULL, len);
    } else {
        tb_line(&b, 4, "activation: %s[%d..%d] as it is (fp32 weights take fp32 input)", input,
                first, last);
        tb_numbers(&b, "x:", NULL, w->x, len);
    }
    tb_partial(&b, w);
}
