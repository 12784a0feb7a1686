/* compare_strip.c — the line under a reply checked against a served model (see
 * compare_strip.h). */
#include "compare_strip.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int compare_strip_level(double kl)
{
    static const double edges[] = {1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1};
    int level = 0;
    while (level < 7 && !(kl < edges[level]))
        level++;
    return level;
}

bool compare_strip_text(const server_check *c, int from, int to, const char *piece, bool utf8,
                        char *out, size_t size)
{
    static const char *const blocks[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static const char ascii[8] = {'.', ':', '-', '=', '+', '*', '#', '@'};
    if (size)
        out[0] = '\0';
    server_check_summary sum;
    server_check_summarize(c, from, to, &sum);
    if (sum.checked == 0 || size < 64)
        return false;
    int n = to - from, cells = n < COMPARE_STRIP_CELLS ? n : COMPARE_STRIP_CELLS;
    size_t o = (size_t)snprintf(out, size, "[vs server: ");
    for (int k = 0; k < cells && o + 8 < size; k++) {
        /* the tokens of cell k: the largest KL among those checked */
        int a = from + (int)((long long)k * n / cells), b = from + (int)((long long)(k + 1) * n / cells);
        double worst = -1;
        for (int p = a; p < b; p++) {
            const remote_comparison *x = server_check_at(c, p);
            if (x && x->kl > worst)
                worst = x->kl;
        }
        if (worst < 0)
            out[o++] = ' ';
        else if (utf8)
            o += (size_t)snprintf(out + o, size - o, "%s", blocks[compare_strip_level(worst)]);
        else
            out[o++] = ascii[compare_strip_level(worst)];
    }
    out[o] = '\0';
    snprintf(out + o, size - o, "  top-1 %d/%d %s KL mean %.1e %s max %.1e at \"%s\"]",
             sum.top1_agree, sum.checked, utf8 ? "·" : "|", sum.kl_mean, utf8 ? "·" : "|",
             sum.kl_max, piece ? piece : "");
    return true;
}
