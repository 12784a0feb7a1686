/* bench/served.c — the served model's time to first token and decode speed (see
 * served.h). */
#include "served.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"
#include "stats.h"
#include "json.h"

typedef struct {
    int n;
} counted;

static bool count(void *user, const remote_token *t)
{
    (void)t;
    ((counted *)user)->n++;
    return true;
}

int served_run(const bench_options *o)
{
    remote_options ro = {.url = o->server, .model = o->server_model};
    http_options_default(&ro.http);
    if (o->api_key_env) {
        ro.api_key = getenv(o->api_key_env);
        if (!ro.api_key || !*ro.api_key) {
            fprintf(stderr, "llmchat-bench: the environment variable %s (--api-key-env) is not "
                            "set\n", o->api_key_env);
            return 1;
        }
    }
    remote *r;
    llm_err err;
    if (remote_open(&ro, &r, &err) != LLM_OK) {
        fprintf(stderr, "llmchat-bench: %s\n", err.text);
        return 1;
    }
    const remote_info *in = remote_describe(r);
    int n_prompt = o->prompt, gen = o->gen, rounds = o->rounds;
    if (in->n_ctx > 0 && n_prompt + gen > in->n_ctx) {
        n_prompt = in->n_ctx / 2;
        gen = in->n_ctx - n_prompt;
    }
    int vocab = in->n_vocab > 16 ? in->n_vocab : 256;
    int *ids = malloc((size_t)n_prompt * sizeof *ids);
    char *text = malloc((size_t)n_prompt * 8 + 16);
    double ttft[ROUNDS_MAX], rate[ROUNDS_MAX], lo, hi;
    int rc = 0;
    if (!ids || !text) {
        fprintf(stderr, "llmchat-bench: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int k = 0; k < rounds; k++) {
        /* a prompt of its own: ids through the vocabulary's middle, or words */
        remote_request q = {.max_tokens = gen, .top_n = 1, .ignore_eos = true};
        sampler_config_default(&q.sampler);
        q.sampler.temperature = 0;
        if (in->ids) {
            for (int i = 0; i < n_prompt; i++)
                ids[i] = 3 + (k * 7919 + i * 31) % (vocab - 3);
            q.prompt = ids;
            q.n_prompt = n_prompt;
        } else {
            size_t at = (size_t)sprintf(text, "%d", k);
            for (int i = 1; i < n_prompt; i++)
                at += (size_t)sprintf(text + at, " w%d", (k + i) % 97);
            q.text = text;
        }
        counted c = {0};
        remote_result res;
        if (remote_complete(r, &q, count, &c, &res, &err) != LLM_OK) {
            fprintf(stderr, "llmchat-bench: round %d: %s\n", k + 1, err.text);
            rc = 1;
            goto out;
        }
        ttft[k] = res.first_token_ms;
        double decode_s = (res.total_ms - res.first_token_ms) / 1e3;
        rate[k] = c.n > 1 && decode_s > 0 ? (c.n - 1) / decode_s : 0;
    }
    double ttft_med = stats_median(ttft, rounds, &lo, &hi), ttft_lo = lo, ttft_hi = hi;
    double rate_med = stats_median(rate, rounds, &lo, &hi);
    if (o->json) { /* the names as JSON strings: a server's model name may hold anything */
        printf("{\"server\": ");
        json_write_string(stdout, in->base_url);
        printf(", \"api\": \"%s\", \"model\": ", remote_api_name(in->api));
        json_write_string(stdout, in->model);
        printf(", \"prompt\": %d, \"gen\": %d, "
               "\"rounds\": %d, \"first_token_ms\": %.2f, \"first_token_ms_min\": %.2f, "
               "\"first_token_ms_max\": %.2f, \"decode_tok_s\": %.2f, \"decode_tok_s_min\": %.2f, "
               "\"decode_tok_s_max\": %.2f}\n",
               n_prompt, gen, rounds, ttft_med, ttft_lo, ttft_hi, rate_med, lo, hi);
    } else
        printf("%s at %s, model %s: prompt %d tokens, %d generated, %d rounds\n"
               "first token %.1f ms (%.1f-%.1f); decode %.1f tok/s (%.1f-%.1f): medians "
               "(ranges)\n",
               remote_api_name(in->api), in->base_url, in->model, n_prompt, gen, rounds, ttft_med,
               ttft_lo, ttft_hi, rate_med, lo, hi);
out:
    free(ids);
    free(text);
    remote_close(r);
    return rc;
}
