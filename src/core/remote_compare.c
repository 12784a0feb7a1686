/* remote_compare.c — a local distribution against a served model's top k (see
 * remote_compare.h). */
#include "remote_compare.h"

#include <math.h>

bool remote_compare(const float *logits, int n_vocab, const remote_token *t, int pos,
                    remote_comparison *out)
{
    if (t->id < 0)
        return false;
    double max = -INFINITY;
    int top1 = 0;
    for (int i = 0; i < n_vocab; i++)
        if (logits[i] > max) {
            max = logits[i];
            top1 = i;
        }
    double sum = 0;
    for (int i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - max);
    double log_z = max + log(sum);
#define P_LOCAL(id) exp((double)logits[id] - log_z)

    *out = (remote_comparison){.pos = pos, .token = t->id, .local_top1 = top1, .diff_id = -1};
    out->p_server = isnan(t->logprob) ? NAN : expf(t->logprob);
    out->p_local = t->id < n_vocab ? (float)P_LOCAL(t->id) : 0.0f;
    out->server_top1 = t->n_top > 0 && t->top[0].id >= 0 ? t->top[0].id : t->id;
    out->top1_agree = out->server_top1 == top1;

    double kl = 0, q_sum = 0, p_sum = 0, worst = -1;
    for (int k = 0; k < t->n_top; k++) {
        int id = t->top[k].id;
        if (id < 0 || id >= n_vocab || isnan(t->top[k].logprob))
            continue;
        bool seen = false; /* a server may list a token twice: count it once */
        for (int j = 0; j < k && !seen; j++)
            seen = t->top[j].id == id;
        if (seen)
            continue;
        double q = exp((double)t->top[k].logprob), p = P_LOCAL(id);
        q_sum += q;
        p_sum += p;
        if (q > 0)
            kl += q * log(q / fmax(p, 1e-300));
        if (fabs(q - p) > worst) {
            worst = fabs(q - p);
            out->diff_id = id;
            out->diff_server = (float)q;
            out->diff_local = (float)p;
        }
    }
    double q_rest = fmax(0.0, 1.0 - q_sum), p_rest = fmax(1e-300, 1.0 - p_sum);
    if (q_rest > 1e-12)
        kl += q_rest * log(q_rest / p_rest);
    out->kl = (float)fmax(0.0, kl);
#undef P_LOCAL
    return true;
}
