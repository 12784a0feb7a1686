/* format.c — the TUI's text and number formatting, as plain functions.
 *
 * Owns nothing: every function writes into the caller's buffer. Escaping and
 * character widths come from textfmt (core); this file adds what the panes need on
 * top of them: fitting, wrapping, percentages, bars, shade buckets and windows.
 * No curses, no terminal output (tests/test_tui_format.c links it alone). */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "textfmt.h"
#include "tokenizer.h"

size_t tuifmt_piece(const char *piece, bool control, char *out, size_t size)
{
    return textfmt_token_piece(piece, control, true, out, size); /* "\n<s>\n" -> "<s>" */
}

size_t tuifmt_token(const tokenizer *tok, int id, char *out, size_t size)
{
    return tuifmt_piece(tokenizer_piece(tok, id), tokenizer_is_control(tok, id), out, size);
}

int tuifmt_char_width(const char *s, size_t len, int *bytes)
{
    int n = textfmt_utf8_len((const unsigned char *)s, len);
    if (n <= 0) {
        *bytes = len > 0 ? 1 : 0;
        return len > 0 ? 1 : 0;
    }
    char one[5];
    memcpy(one, s, (size_t)n);
    one[n] = '\0';
    *bytes = n;
    return textfmt_width(one);
}

int tuifmt_line_char_width(const char *s, size_t len, int *bytes, bool *symbol)
{
    int cw = tuifmt_char_width(s, len, bytes);
    unsigned char c = (unsigned char)s[0];
    bool sym = len > 0 && (c < 0x20 || c == 0x7f || textfmt_utf8_len((const unsigned char *)s, len) == 0);
    if (symbol)
        *symbol = sym;
    return sym ? 1 : cw;
}

/* Columns of s[from..to) as the editor draws them. */
static int line_columns(const char *s, size_t from, size_t to)
{
    int cols = 0;
    for (size_t i = from; i < to;) {
        int b;
        cols += tuifmt_line_char_width(s + i, to - i, &b, NULL);
        i += (size_t)b;
    }
    return cols;
}

size_t tuifmt_line_scroll(const char *s, size_t len, size_t point, int avail, int *skip)
{
    if (point > len)
        point = len;
    if (avail < 1)
        avail = 1;
    /* Every byte that is not a continuation byte starts a character (an invalid
     * byte is one of its own), and so does a continuation byte after three others:
     * from such a byte the characters are those of a scan from the line's start.
     * Back off from the point until the text to it fills the view. */
    size_t back = 4 * (size_t)avail + 4;
    for (;;) {
        size_t q = point > back ? point - back : 0;
        for (int k = 0; q > 0 && q < point && k < 3 && ((unsigned char)s[q] & 0xC0) == 0x80; k++)
            q++;
        int cols = line_columns(s, q, point);
        if (cols >= avail || q == 0) {
            *skip = cols >= avail ? cols - avail + 1 : 0;
            return q;
        }
        back = back > len ? len : 2 * back;
    }
}

int tuifmt_fit(const char *s, int width, bool utf8, char *out, size_t size)
{
    if (size == 0)
        return 0;
    out[0] = '\0';
    if (!s || width <= 0)
        return 0;
    size_t len = strlen(s), i = 0, o = 0;
    int cols = 0;
    /* columns and bytes used at the last point where an ellipsis would still fit */
    size_t o_keep = 0;
    int cols_keep = 0;
    while (i < len) {
        int b, w = tuifmt_char_width(s + i, len - i, &b);
        if (cols + w > width || o + (size_t)b + 1 > size)
            break;
        if (cols + w <= width - 1) {
            o_keep = o + (size_t)b;
            cols_keep = cols + w;
        }
        memcpy(out + o, s + i, (size_t)b);
        o += (size_t)b;
        cols += w;
        i += (size_t)b;
    }
    if (i < len) {
        /* truncated: replace the tail with an ellipsis */
        const char *ell = utf8 ? "\xe2\x80\xa6" : "~";
        size_t el = strlen(ell);
        if (o_keep + el + 1 <= size) {
            o = o_keep;
            memcpy(out + o, ell, el);
            o += el;
            cols = cols_keep + 1;
        }
    }
    out[o] = '\0';
    return cols;
}

size_t tuifmt_wrap(const char *s, size_t len, int width, size_t *next)
{
    if (width < 1)
        width = 1;
    if (len == 0) {
        *next = 0;
        return 0;
    }
    size_t i = 0, last_space = (size_t)-1;
    int cols = 0;
    while (i < len) {
        if (s[i] == '\n') {
            *next = i + 1;
            return i;
        }
        int b, w = tuifmt_char_width(s + i, len - i, &b);
        if (s[i] == '\t')
            w = 1;
        if (cols + w > width) {
            if (s[i] == ' ') { /* the break falls on a space: drop it */
                *next = i + 1;
                return i;
            }
            if (last_space != (size_t)-1 && last_space > 0) {
                *next = last_space + 1;
                return last_space;
            }
            if (i == 0) { /* a character wider than the line: take it anyway */
                *next = (size_t)b;
                return (size_t)b;
            }
            *next = i;
            return i;
        }
        if (s[i] == ' ')
            last_space = i;
        cols += w;
        i += (size_t)b;
    }
    *next = len;
    return len;
}

int tuifmt_wrap_count(const char *s, size_t len, int width)
{
    int lines = 0;
    size_t off = 0;
    while (off < len) {
        size_t next;
        tuifmt_wrap(s + off, len - off, width, &next);
        off += next;
        lines++;
        if (next == 0)
            break;
    }
    /* text ending in '\n' opens one more (empty) line */
    if (len > 0 && s[len - 1] == '\n')
        lines++;
    return lines > 0 ? lines : 1;
}

void tuifmt_prob(float p, char *buf, size_t size)
{
    if (!(p > 0.0f))
        snprintf(buf, size, "0%%");
    else if (p >= 0.9995f)
        snprintf(buf, size, "100%%");
    else if (p >= 0.0995f)
        snprintf(buf, size, "%.1f%%", p * 100.0f);
    else if (p >= 0.000095f)
        snprintf(buf, size, "%.2f%%", p * 100.0f);
    else
        snprintf(buf, size, "<0.01%%");
}

int tuifmt_bar_eighths(float p, int width)
{
    if (width <= 0 || !(p > 0.0f))
        return 0;
    if (p > 1.0f)
        p = 1.0f;
    int n = (int)lroundf(p * (float)width * 8.0f);
    return n > width * 8 ? width * 8 : n;
}

int tuifmt_bar(float p, int width, bool utf8, char *out, size_t size)
{
    static const char *part[8] = {"", "\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
                                  "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a", "\xe2\x96\x89"};
    static const char *full = "\xe2\x96\x88";
    if (size == 0)
        return 0;
    int e = tuifmt_bar_eighths(p, width);
    size_t o = 0;
    int cols = 0;
    for (int i = 0; i < e / 8; i++) {
        const char *c = utf8 ? full : "#";
        size_t l = strlen(c);
        if (o + l + 1 > size)
            break;
        memcpy(out + o, c, l);
        o += l;
        cols++;
    }
    if (utf8 && e % 8 != 0 && cols < width) {
        size_t l = strlen(part[e % 8]);
        if (o + l + 1 <= size) {
            memcpy(out + o, part[e % 8], l);
            o += l;
            cols++;
        }
    }
    out[o] = '\0';
    return cols;
}

int tuifmt_shade(float w, float ref, int n_buckets, bool log_scale)
{
    if (n_buckets <= 1 || !(w > 0.0f) || !(ref > 0.0f))
        return 0;
    float x = w / ref;
    if (x > 1.0f)
        x = 1.0f;
    float t;
    if (log_scale) {
        if (x < 1e-3f)
            return 0;
        t = 1.0f + log10f(x) / 3.0f; /* 1e-3 -> 0, 1 -> 1 */
    } else {
        t = x;
    }
    int b = (int)lroundf(t * (float)(n_buckets - 1));
    if (b < 0)
        b = 0;
    if (b > n_buckets - 1)
        b = n_buckets - 1;
    return b;
}

/* v with decimals decimals ("%+.2f" when sign), or without the 0 before the point when
 * that is what makes it fit ("+.12"); its length when it fits width, else -1. */
static int fixed_in(float v, int decimals, bool sign, int width, char *out, size_t size)
{
    int n = snprintf(out, size, sign ? "%+.*f" : "%.*f", decimals, v);
    if (n < 0 || (size_t)n >= size)
        return -1;
    if (n <= width)
        return n;
    char *zero = out + (out[0] == '+' || out[0] == '-');
    if (zero[0] == '0' && zero[1] == '.' && n - 1 <= width) {
        memmove(zero, zero + 1, strlen(zero + 1) + 1);
        return n - 1;
    }
    return -1;
}

int tuifmt_fixed(float v, int width, int decimals, bool sign, char *out, size_t size)
{
    if (size > 0)
        out[0] = '\0';
    if (width < 1 || size < 2)
        return 0;
    for (int d = decimals; d >= 0; d--) {
        int n = fixed_in(v, d, sign, width, out, size);
        if (n >= 0)
            return n;
    }
    if (!sign) /* a number too large for the room */
        return snprintf(out, size, "*") > 0 ? 1 : 0;
    return snprintf(out, size, "%s", v > 0.0f ? "+" : v < 0.0f ? "-" : "0") > 0 ? 1 : 0;
}

int tuifmt_signed(float v, int width, char *out, size_t size)
{
    return tuifmt_fixed(v, width, 2, true, out, size);
}

int tuifmt_pick(const char *const *texts, int n, int width)
{
    for (int i = 0; i < n; i++)
        if (textfmt_width(texts[i]) <= width)
            return i;
    return n - 1;
}

void tuifmt_span_compute(int n_items, int focus, int avail, tuifmt_span *s)
{
    memset(s, 0, sizeof *s);
    if (n_items <= 0 || avail <= 0)
        return;
    focus = focus < 0 ? 0 : focus >= n_items ? n_items - 1 : focus;
    s->count = avail < n_items ? avail : n_items;
    s->first = focus >= s->count ? focus - s->count + 1 : 0;
    s->before = s->first > 0;
    s->after = s->first + s->count < n_items;
}

void tuifmt_grid_columns(const tuifmt_grid_want *want, int width, int n, int focus, tuifmt_grid *g)
{
    memset(g, 0, sizeof *g);
    if (n <= 0)
        return;
    /* every column, the widest cells (up to cell_max) first, then the roomier label */
    for (int lw = want->label_pref; lw >= want->label_min; lw--) {
        int cw = (width - lw - want->reserve) / n;
        cw = cw > want->cell_max ? want->cell_max : cw;
        if (cw >= want->cell_min && cw > g->cell_w) {
            g->label_w = lw;
            g->cell_w = cw;
        }
    }
    if (g->cell_w > 0) {
        tuifmt_span_compute(n, focus, n, &g->cols);
        return;
    }
    /* not all fit: as many cells of cell_min as do, around the focus */
    g->label_w = want->label_min;
    g->cell_w = want->cell_min;
    tuifmt_span_compute(n, focus, (width - g->label_w - want->reserve) / g->cell_w, &g->cols);
}

void tuifmt_attribution_part(const attribution_part *p, char *out, size_t size)
{
    switch (p->kind) {
    case ATTRIBUTION_HEAD:
        snprintf(out, size, "L%d H%d %+.2f", p->layer + 1, p->head + 1, p->value);
        break;
    case ATTRIBUTION_MLP: snprintf(out, size, "L%d MLP %+.2f", p->layer + 1, p->value); break;
    case ATTRIBUTION_VECTORS: snprintf(out, size, "vectors %+.2f", p->value); break;
    case ATTRIBUTION_EXPERT: /* from 1, as heads and the status line's "experts out L1E5" */
        snprintf(out, size, "L%d E%d %+.2f", p->layer + 1, p->head + 1, p->value);
        break;
    case ATTRIBUTION_BIASES: snprintf(out, size, "biases %+.2f", p->value); break;
    case ATTRIBUTION_LAYER_INPUT:
        snprintf(out, size, "L%d PLE %+.2f", p->layer + 1, p->value);
        break;
    default: snprintf(out, size, "embedding %+.2f", p->value); break;
    }
}

int tuifmt_window_start(int n_items, int focus, int avail)
{
    if (n_items <= 0 || avail <= 0)
        return 0;
    if (focus < 0)
        focus = 0;
    if (focus >= n_items)
        focus = n_items - 1;
    int start = n_items - avail; /* end at the last item when the focus allows */
    if (start > focus)
        start = focus - avail + 1;
    if (start < 0)
        start = 0;
    return start;
}

void tuifmt_heat_window_compute(int n_pos, int focus, int rows_avail, int cols_avail,
                                tuifmt_heat_window *w)
{
    memset(w, 0, sizeof *w);
    if (n_pos <= 0 || rows_avail <= 0 || cols_avail <= 0)
        return;
    if (focus < 0 || focus >= n_pos)
        focus = n_pos - 1;
    /* the focus query is the last row shown; its keys run 0..focus */
    w->n_rows = focus + 1 < rows_avail ? focus + 1 : rows_avail;
    w->row0 = focus - w->n_rows + 1;
    w->n_cols = focus + 1 < cols_avail ? focus + 1 : cols_avail;
    w->col0 = focus - w->n_cols + 1;
}

void tuifmt_rate(double tokens, double ms, char *buf, size_t size)
{
    if (!(tokens > 0) || !(ms > 0)) {
        snprintf(buf, size, "-");
        return;
    }
    double r = tokens * 1000.0 / ms;
    snprintf(buf, size, r >= 100.0 ? "%.0f" : "%.1f", r);
}
