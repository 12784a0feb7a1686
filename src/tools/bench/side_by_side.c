/* bench/side_by_side.c — llmchat's rounds alternated with llama-bench's on one GGUF
 * file (see side_by_side.h). */
#include "side_by_side.h"

#include <stdio.h>

#include "anchor.h"
#include "cpus.h"
#include "measure.h"
#include "stats.h"

void side_by_side_run(const bench_options *o, const shape *s, const char *gguf_path,
                      const char *llama_bench, side_result *sr)
{
    int reps = o->anchor_reps > 0 ? o->anchor_reps : 5; /* llama-bench's default */
    sr->n_prompt = o->prompt < s->seq_len ? o->prompt : s->seq_len;
    sr->n_gen = o->gen < s->seq_len - 1 ? o->gen : s->seq_len - 1;
    sr->reps = reps;
    int threads = cpus_threads(o->threads, cpus_usable(), NULL);
    double pr[ROUNDS_MAX], dr[ROUNDS_MAX];
    for (int i = 0; i < o->rounds; i++) {
        round_result ours;
        if (measure_round(o, gguf_path, sr->n_prompt, sr->n_gen, reps, &ours) != 0 || !ours.ok) {
            snprintf(sr->why, sizeof sr->why, "llmchat's round failed: %s",
                     ours.ok ? "the process died" : ours.error);
            break;
        }
        int k = sr->rounds;
        sr->ours_prefill[k] = ours.prefill_tok_s;
        sr->ours_decode[k] = ours.decode_tok_s;
        sr->ours_rounds = k + 1;
        anchor_result theirs = {1.0, 1.0};
        if (llama_bench && anchor_run(llama_bench, gguf_path, sr->n_prompt, sr->n_gen, threads,
                                      o->anchor_reps, &theirs, sr->why, sizeof sr->why) != 0)
            break;
        sr->rounds++;
        if (!llama_bench) {
            if (!o->json)
                fprintf(stderr, "llmchat-bench: %s round %d: llmchat %.1f / %.1f tok/s "
                                "(prefill / decode)\n", s->name, k + 1, ours.prefill_tok_s,
                        ours.decode_tok_s);
            continue;
        }
        sr->theirs_prefill[k] = theirs.prefill_tok_s;
        sr->theirs_decode[k] = theirs.decode_tok_s;
        pr[k] = ours.prefill_tok_s / theirs.prefill_tok_s;
        dr[k] = ours.decode_tok_s / theirs.decode_tok_s;
        if (!o->json)
            fprintf(stderr, "llmchat-bench: %s round %d: llmchat %.1f / %.1f tok/s, "
                            "llama.cpp %.1f / %.1f tok/s (prefill / decode)\n",
                    s->name, k + 1, ours.prefill_tok_s, ours.decode_tok_s,
                    theirs.prefill_tok_s, theirs.decode_tok_s);
    }
    if (sr->rounds > 0 && llama_bench) {
        sr->prefill_ratio = stats_median(pr, sr->rounds, &sr->prefill_ratio_min, &sr->prefill_ratio_max);
        sr->decode_ratio = stats_median(dr, sr->rounds, &sr->decode_ratio_min, &sr->decode_ratio_max);
    }
}
