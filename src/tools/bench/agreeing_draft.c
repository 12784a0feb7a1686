/* bench/agreeing_draft.c — llmchat's and llama.cpp's speculative decoding with one real
 * draft model (see bench/agreeing_draft.h). The speed-ups are per round (speculative
 * over plain of the same engine in the same round), the comparison the median over
 * rounds of llmchat's speculative tok/s over llama.cpp's. */
#include "agreeing_draft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchor_server.h"
#include "cpus.h"
#include "measure.h"
#include "stats.h"

/* How many of the first n tokens a and b share before they part. */
static int same_prefix(const int *a, const int *b, int n)
{
    int i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

int agreeing_draft_shape(const bench_options *o, const char *name, int layers,
                         const char *model, const char *draft, const char *server)
{
    const int rounds = o->rounds, k = o->speculate;
    const int threads = cpus_threads(o->threads, cpus_usable(), NULL);
    double lp[ROUNDS_MAX], ls[ROUNDS_MAX], lx[ROUNDS_MAX], la[ROUNDS_MAX];
    double cp[ROUNDS_MAX], cs[ROUNDS_MAX], cx[ROUNDS_MAX], ca[ROUNDS_MAX];
    double vs[ROUNDS_MAX], vp[ROUNDS_MAX];
    int agree = -1, gen = 0, same = 1, n_ca = 0;
    static draft_round r;
    static anchor_server_result plain, spec;
    char kernel[32] = "";
    for (int i = 0; i < rounds; i++) {
        if (measure_draft_round(o, model, draft, k, &r) != 0 || !r.ok) {
            const char *why = r.ok ? "the measuring process died (out of memory?)" : r.error;
            printf(o->json ? "{\"shape\": \"%s\", \"error\": \"%s\"}\n" : "%-12s failed: %s\n",
                   name, why);
            return 1;
        }
        snprintf(kernel, sizeof kernel, "%s", r.kernel);
        gen = r.gen;
        same &= r.same;
        lp[i] = r.plain_tok_s;
        ls[i] = r.spec_tok_s;
        lx[i] = r.spec_tok_s / r.plain_tok_s;
        la[i] = r.accepted;
        fprintf(stderr, "llmchat-bench: %s round %d: llmchat plain %.1f, speculative %.1f tok/s "
                "(accepted %.0f%%)", name, i + 1, lp[i], ls[i], 100 * la[i]);
        if (server) {
            char why[512];
            if (anchor_server_run(server, model, NULL, k, threads, r.prompt_tokens, r.prompt,
                                  r.gen, &plain, why, sizeof why) != 0 ||
                anchor_server_run(server, model, draft, k, threads, r.prompt_tokens, r.prompt,
                                  r.gen, &spec, why, sizeof why) != 0) {
                fprintf(stderr, "\n");
                printf(o->json ? "{\"shape\": \"%s\", \"error\": \"llama.cpp: %s\"}\n"
                               : "%-12s llama.cpp failed: %s\n", name, why);
                return 1;
            }
            cp[i] = plain.tok_s;
            cs[i] = spec.tok_s;
            cx[i] = spec.tok_s / plain.tok_s;
            if (spec.drafted > 0) /* else not said (a reply without timings) */
                ca[n_ca++] = (double)spec.accepted / spec.drafted;
            vs[i] = ls[i] / cs[i];
            vp[i] = lp[i] / cp[i];
            int n = plain.generated < r.gen ? plain.generated : r.gen;
            agree = same_prefix(r.tokens, plain.tokens, n);
            char acc[32] = "not said";
            if (spec.drafted > 0)
                snprintf(acc, sizeof acc, "%.0f%%", 100 * ca[n_ca - 1]);
            fprintf(stderr, "; llama.cpp plain %.1f, speculative %.1f tok/s (accepted %s)%s",
                    cp[i], cs[i], acc,
                    plain.client_timed || spec.client_timed
                        ? " (a reply without timings: timed as its tokens arrived)" : "");
        }
        fprintf(stderr, "\n");
    }
    double lo, hi, lo2, hi2, x_lo, x_hi;
    double m_lp = stats_median(lp, rounds, &lo, &hi), m_ls = stats_median(ls, rounds, &lo, &hi);
    double m_lx = stats_median(lx, rounds, &x_lo, &x_hi), m_la = stats_median(la, rounds, &lo, &hi);
    double m_cp = 0, m_cs = 0, m_cx = 0, m_ca = 0, m_vs = 0, m_vp = 0;
    double c_lo = 0, c_hi = 0, vs_lo = 0, vs_hi = 0, vp_lo = 0, vp_hi = 0;
    if (server) {
        m_cp = stats_median(cp, rounds, &lo, &hi);
        m_cs = stats_median(cs, rounds, &lo, &hi);
        m_cx = stats_median(cx, rounds, &c_lo, &c_hi);
        m_ca = n_ca ? stats_median(ca, n_ca, &lo2, &hi2) : -1;
        m_vs = stats_median(vs, rounds, &vs_lo, &vs_hi);
        m_vp = stats_median(vp, rounds, &vp_lo, &vp_hi);
    }
    if (o->json) {
        printf("{\"shape\": \"%s\", \"draft_layers\": %d, \"guesses\": %d, \"prompt\": %d, "
               "\"gen\": %d, \"threads\": %d, \"kernel\": \"%s\", \"rounds\": %d, \"same\": %s, "
               "\"plain_tok_s\": %.2f, \"speculative_tok_s\": %.2f, \"speedup\": %.3f, "
               "\"speedup_min\": %.3f, \"speedup_max\": %.3f, \"accepted\": %.3f",
               name, layers, k, r.prompt, gen, threads, kernel, rounds, same ? "true" : "false",
               m_lp, m_ls, m_lx, x_lo, x_hi, m_la);
        if (server)
            printf(", \"llama_cpp\": {\"plain_tok_s\": %.2f, \"speculative_tok_s\": %.2f, "
                   "\"speedup\": %.3f, \"speedup_min\": %.3f, \"speedup_max\": %.3f, "
                   "\"accepted\": %.3f}, \"speculative_ratio\": %.3f, \"speculative_ratio_min\": "
                   "%.3f, \"speculative_ratio_max\": %.3f, \"plain_ratio\": %.3f, "
                   "\"tokens_agree\": %d",
                   m_cp, m_cs, m_cx, c_lo, c_hi, m_ca, m_vs, vs_lo, vs_hi, m_vp, agree);
        printf("}\n");
        fflush(stdout);
        return same ? 0 : 1;
    }
    printf("%s: model %s, draft its first %d layers, %d guesses a step, -p %d, %d tokens, %d "
           "threads, %s\n",
           name, model, layers, k, r.prompt, gen, threads, kernel);
    printf("  llmchat    plain %7.1f tok/s, speculative %7.1f tok/s: %.2fx (%.2f-%.2f), "
           "accepted %.0f%%%s\n",
           m_lp, m_ls, m_lx, x_lo, x_hi, 100 * m_la,
           same ? "" : "  THE SPECULATIVE TOKENS DIFFER FROM PLAIN DECODING");
    if (server) {
        char acc[32] = "not said";
        if (m_ca >= 0)
            snprintf(acc, sizeof acc, "%.0f%%", 100 * m_ca);
        printf("  llama.cpp  plain %7.1f tok/s, speculative %7.1f tok/s: %.2fx (%.2f-%.2f), "
               "accepted %s\n",
               m_cp, m_cs, m_cx, c_lo, c_hi, acc);
        printf("  llmchat / llama.cpp: speculative %.2fx (%.2f-%.2f), plain %.2fx (%.2f-%.2f); "
               "greedy tokens the same for the first %d of %d\n",
               m_vs, vs_lo, vs_hi, m_vp, vp_lo, vp_hi, agree, gen);
    }
    fflush(stdout);
    return same ? 0 : 1;
}
