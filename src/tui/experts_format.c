/* experts_format.c — the experts view's text (see experts_format.h). */
#include "experts_format.h"

#include <stdio.h>
#include <string.h>

static int digits(int n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

int experts_route_width(int k, int n_experts)
{
    int one = 1 + digits(n_experts > 0 ? n_experts : 0) + 5; /* "#128 0.41" */
    return k > 0 ? k * one + 2 * (k - 1) : 0;
}

int experts_route_text(const int *experts, const float *weights, int k, int width, char *out,
                       size_t size)
{
    size_t o = 0;
    int cols = 0;
    if (size == 0)
        return 0;
    out[0] = '\0';
    for (int i = 0; i < k; i++) {
        char item[48];
        int n = weights ? snprintf(item, sizeof item, "%s#%d %.2f", i ? "  " : "", experts[i] + 1,
                                   (double)weights[i])
                        : snprintf(item, sizeof item, "%s#%d", i ? "  " : "", experts[i] + 1);
        char more[16];
        int m = i + 1 < k ? snprintf(more, sizeof more, " +%d", k - i - 1) : 0;
        if (cols + n + m > width || o + (size_t)n + 1 > size) {
            /* this one does not fit with the count of the rest: say how many are left */
            m = snprintf(more, sizeof more, " +%d", k - i);
            if (cols + m <= width && o + (size_t)m + 1 <= size) {
                memcpy(out + o, more, (size_t)m + 1);
                cols += m;
            }
            return cols;
        }
        memcpy(out + o, item, (size_t)n + 1);
        o += (size_t)n;
        cols += n;
    }
    return cols;
}

void experts_fold_compute(int n_experts, int width, experts_fold *f)
{
    memset(f, 0, sizeof *f);
    if (width < 1 || n_experts < 1)
        return;
    if (n_experts <= width) {
        f->per = 1;
        f->cells = n_experts;
        f->cell_w = width / n_experts > 3 ? 3 : width / n_experts;
        return;
    }
    f->per = (n_experts + width - 1) / width;
    f->cells = (n_experts + f->per - 1) / f->per;
    f->cell_w = 1;
}

int experts_fold_cell(const experts_fold *f, int e)
{
    return f->per > 0 ? e / f->per : 0;
}

int experts_fold_counts(const int *counts, int n_experts, const experts_fold *f, int *cells)
{
    int largest = 0;
    for (int c = 0; c < f->cells; c++)
        cells[c] = 0;
    for (int e = 0; e < n_experts; e++) {
        int c = experts_fold_cell(f, e);
        if (c < f->cells)
            cells[c] += counts[e];
    }
    for (int c = 0; c < f->cells; c++)
        largest = cells[c] > largest ? cells[c] : largest;
    return largest;
}

int experts_shade(int count, int largest)
{
    if (count <= 0 || largest <= 0)
        return 0;
    int s = (int)(((long long)count * (EXPERTS_SHADES - 1) + largest - 1) / largest);
    return s < 1 ? 1 : s > EXPERTS_SHADES - 1 ? EXPERTS_SHADES - 1 : s;
}

const char *experts_shade_char(int shade, bool utf8)
{
    static const char *const wide[EXPERTS_SHADES] = {"\xc2\xb7", "\xe2\x96\x91", "\xe2\x96\x92",
                                                     "\xe2\x96\x93", "\xe2\x96\x88"};
    static const char *const plain[EXPERTS_SHADES] = {".", ":", "+", "*", "#"};
    shade = shade < 0 ? 0 : shade >= EXPERTS_SHADES ? EXPERTS_SHADES - 1 : shade;
    return utf8 ? wide[shade] : plain[shade];
}

int experts_strip(const int *cells, const experts_fold *f, int largest, bool utf8, char *out,
                  size_t size)
{
    size_t o = 0;
    int cols = 0;
    if (size == 0)
        return 0;
    for (int c = 0; c < f->cells; c++) {
        const char *ch = experts_shade_char(experts_shade(cells[c], largest), utf8);
        size_t l = strlen(ch);
        int reps = f->cell_w > 1 ? f->cell_w - 1 : 1;
        if (o + l * (size_t)reps + 2 > size)
            break;
        for (int r = 0; r < reps; r++) {
            memcpy(out + o, ch, l);
            o += l;
        }
        if (f->cell_w > 1)
            out[o++] = ' ';
        cols += f->cell_w;
    }
    out[o] = '\0';
    return cols;
}

int experts_scale(const experts_fold *f, int n_experts, char *out, size_t size)
{
    int width = f->cells * f->cell_w;
    if (size == 0)
        return 0;
    if ((size_t)width + 1 > size)
        width = (int)size - 1;
    memset(out, ' ', (size_t)width);
    out[width] = '\0';
    /* a number at each cell where it fits after the last one written, with a blank
     * between; the last expert's number ends under the last cell */
    char last[16];
    int ln = snprintf(last, sizeof last, "%d", n_experts);
    int last_at = (f->cells - 1) * f->cell_w;
    if (f->cell_w == 1)
        last_at = width - ln;
    int free_from = 0;
    int step = f->cell_w >= 3 ? 1 : 8 / (f->cell_w > 0 ? f->cell_w : 1);
    for (int c = 0; c < f->cells; c += step) {
        char num[16];
        int n = snprintf(num, sizeof num, "%d", c * f->per + 1);
        int at = c * f->cell_w;
        if (at < free_from || at + n + 1 > last_at)
            continue;
        memcpy(out + at, num, (size_t)n);
        free_from = at + n + 1;
    }
    if (last_at >= free_from && last_at + ln <= width)
        memcpy(out + last_at, last, (size_t)ln);
    int end = width;
    while (end > 0 && out[end - 1] == ' ')
        end--;
    out[end] = '\0';
    return end;
}

int experts_rank(const float *probs, int n_experts, int *order, int max)
{
    int n = 0;
    for (int e = 0; e < n_experts; e++) {
        /* insertion into the best max so far */
        int at = n;
        while (at > 0 && (probs[e] > probs[order[at - 1]]))
            at--;
        if (at >= max)
            continue;
        int end = n < max ? n : max - 1;
        memmove(order + at + 1, order + at, sizeof(int) * (size_t)(end - at));
        order[at] = e;
        if (n < max)
            n++;
    }
    return n;
}

bool experts_range(const bool *prompt, int n, int pos, bool all, int *first, int *last)
{
    if (n <= 0) {
        *first = 0;
        *last = -1;
        return false;
    }
    pos = pos < 0 ? 0 : pos >= n ? n - 1 : pos;
    if (all) {
        *first = 0;
        *last = n - 1;
        return false;
    }
    bool kind = prompt[pos];
    int a = pos, b = pos;
    while (a > 0 && prompt[a - 1] == kind)
        a--;
    while (b < n - 1 && prompt[b + 1] == kind)
        b++;
    *first = a;
    *last = b;
    return !kind;
}
