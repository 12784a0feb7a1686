/* bench/report.c — llmchat-bench's output (see report.h): the table, the JSON objects,
 * the --sweep rows. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "kernels.h"
#include "model.h"
#include "stats.h"

#define CPU_OTHERS_WARN 0.1  /* the table warns above this share of other processes */

/* s as JSON string content (quotes and backslashes escaped, control characters left
 * out). */
/* s inside a JSON string's quotes (json_write_string's escapes, without its quotes). */
static void json_text(const char *s)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f) {
        json_write_string(f, s);
        if (fclose(f) == 0 && n >= 2)
            fwrite(text + 1, 1, n - 2, stdout);
    }
    free(text);
}

static void json_array(const char *key, const double *x, int n)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf("%s%.2f", i ? "," : "", x[i]);
    printf("]");
}

void report_json(const shape *s, const shape_result *r, const tui_result *tr, const side_result *sr,
                 bool against, double bw_start)
{
    if (!r->ok) {
        printf("{\"shape\":\"%s\",\"error\":\"", s->name);
        json_text(r->error);
        printf("\"}\n");
        return;
    }
    printf("{\"shape\":\"%s\",\"kernel\":\"%s\",\"threads\":%d,\"group\":%d,"
           "\"prefill_tokens\":%d,\"prefill_tok_s\":%.1f,\"decode_steps\":%d,\"decode_pos\":%d,"
           "\"decode_tok_s\":%.2f,\"bandwidth_gb_s\":%.2f,\"decode_bytes_per_token\":%.0f,"
           "\"decode_roofline\":%.3f,\"ttft_s\":%.4f,\"peak_rss_mb\":%.1f,\"file_mb\":%.1f,"
           "\"kv_cache\":\"%s\",\"kv_cache_mb\":%.1f,\"load_s\":%.3f,\"decode_peak_tok_s\":%.2f,"
           "\"decode_roofline_peak\":%.3f,\"decode_rounds\":%d,\"decode_window_tokens\":%d,"
           "\"decode_roofline_min\":%.3f,\"decode_roofline_max\":%.3f,"
           "\"bandwidth_min_gb_s\":%.2f,\"bandwidth_max_gb_s\":%.2f,\"bandwidth_start_gb_s\":%.2f,"
           "\"bandwidth_way\":\"%s\",\"probe_mib\":%d,\"prefetch\":\"%s\",\"panels\":%s,"
           "\"huge_pages\":%s,"
           "\"decode_streams\":%d,"
           "\"cpu_others\":%.3f,\"load_avg\":%.2f",
           s->name, r->kernel, r->threads, r->group, r->prefill_tokens, r->prefill_tok_s,
           r->decode_steps, r->decode_pos, r->decode_tok_s, r->bandwidth_gb_s,
           r->weight_bytes_per_token, r->decode_roofline, r->ttft_s, r->peak_rss_mb, r->file_mb,
           r->kv_cache, r->kv_mb, r->load_s, r->decode_peak_tok_s,
           r->weight_bytes_per_token * r->decode_peak_tok_s / (r->bandwidth_gb_s * 1e9),
           r->decode_rounds, r->decode_window, r->decode_roofline_min, r->decode_roofline_max,
           r->bandwidth_min_gb_s, r->bandwidth_max_gb_s, bw_start, r->probe_way, r->probe_mib,
           kernels_prefetch_name(kernels_get_prefetch()), r->panels ? "true" : "false",
           r->huge_pages ? "true" : "false", kernels_decode_streams(),
           r->cpu_others,
           r->load_avg);
    if (r->long_pairs > 0)
        printf(",\"decode_tok_s_pos%.0f\":%.2f,\"decode_tok_s_pos%.0f\":%.2f,\"long_ratio\":%.3f,"
               "\"long_pairs\":%d", r->long_pos_near, r->long_tok_s_near, r->long_pos_far,
               r->long_tok_s_far, r->long_ratio, r->long_pairs);
    if (r->scaling_pairs > 0)
        printf(",\"decode_tok_s_1t\":%.2f,\"decode_tok_s_%dt\":%.2f,\"thread_speedup\":%.3f,"
               "\"stream_gb_s_1t\":%.2f,\"stream_gb_s_%dt\":%.2f,\"stream_speedup\":%.3f,"
               "\"scaling_pairs\":%d", r->decode_tok_s_1t, r->threads, r->decode_tok_s_nt,
               r->thread_speedup, r->stream_gb_s_1t, r->threads, r->stream_gb_s_nt,
               r->stream_speedup, r->scaling_pairs);
    if (against && sr->rounds > 0) {
        printf(",\"anchor\":\"llama.cpp\",\"anchor_rounds\":%d,\"anchor_prompt\":%d,"
               "\"anchor_gen\":%d,\"anchor_reps\":%d,\"prefill_ratio\":%.3f,\"decode_ratio\":%.3f,"
               "\"prefill_ratio_min\":%.3f,\"prefill_ratio_max\":%.3f,"
               "\"decode_ratio_min\":%.3f,\"decode_ratio_max\":%.3f",
               sr->rounds, sr->n_prompt, sr->n_gen, sr->reps, sr->prefill_ratio,
               sr->decode_ratio, sr->prefill_ratio_min, sr->prefill_ratio_max,
               sr->decode_ratio_min, sr->decode_ratio_max);
        json_array("llmchat_prefill_tok_s", sr->ours_prefill, sr->rounds);
        json_array("llamacpp_prefill_tok_s", sr->theirs_prefill, sr->rounds);
        json_array("llmchat_decode_tok_s", sr->ours_decode, sr->rounds);
        json_array("llamacpp_decode_tok_s", sr->theirs_decode, sr->rounds);
    } else if (against) {
        printf(",\"anchor\":null,\"anchor_note\":\"");
        json_text(sr->why);
        printf("\"");
    }
    if (tr->fraction >= 0) {
        printf(",\"tui_decode_fraction\":%.3f,\"tui_tok_s\":%.1f,\"generate_tok_s\":%.1f,"
               "\"tui_ui_fraction\":%.4f,\"tui_ttft_s\":%.4f,\"generate_ttft_s\":%.4f,"
               "\"tui_pairs\":%d}\n", tr->fraction, tr->tui_tok_s, tr->gen_tok_s, tr->ui_fraction,
               tr->tui_ttft_s, tr->gen_ttft_s, tr->pairs);
    } else {
        printf(",\"tui_decode_fraction\":null,\"tui_note\":\"");
        json_text(tr->why);
        printf("\"}\n");
    }
}

/* "medians of N pairs", or "one pair" when there was one. */
static const char *medians_of(int pairs, char *buf, size_t size)
{
    if (pairs == 1)
        snprintf(buf, size, "one pair");
    else
        snprintf(buf, size, "medians of %d pairs", pairs);
    return buf;
}

void report_row(const shape *s, const shape_result *r, const tui_result *tr, const side_result *sr,
                bool against)
{
    if (!r->ok) {
        printf("%-6s  error: %s\n", s->name, r->error);
        return;
    }
    char tui[32] = "-", pairs[40];
    if (tr->fraction >= 0)
        snprintf(tui, sizeof tui, "%.1f%%", 100 * tr->fraction);
    printf("%-6s %9.1f %9.1f %8.1f%% %7.1f %8.3f %9.1f %8.1f %7.2f %8s\n", s->name,
           r->prefill_tok_s, r->decode_tok_s, 100 * r->decode_roofline, r->bandwidth_gb_s,
           r->ttft_s, r->peak_rss_mb, r->file_mb, r->load_s, tui);
    printf("       roofline %.1f%% .. %.1f%% over %d window%s of %d token%s, "
           "bandwidth %.1f .. %.1f GB/s, load average %.2f\n", 100 * r->decode_roofline_min,
           100 * r->decode_roofline_max, r->decode_rounds, r->decode_rounds == 1 ? "" : "s",
           r->decode_window, r->decode_window == 1 ? "" : "s", r->bandwidth_min_gb_s,
           r->bandwidth_max_gb_s, r->load_avg);
    if (s->experts > 0)
        printf("       a token reads %.1f MB of the %.1f MB of weights (the router and %d of %d "
               "experts a layer)\n", r->weight_bytes_per_token / 1e6, r->file_mb, s->used,
               s->experts);
    if (r->long_pairs > 0)
        printf("       decode at pos %.0f: %.2f tok/s, at pos %.0f: %.2f tok/s, far/near %.3f"
               " (%s)\n", r->long_pos_near, r->long_tok_s_near, r->long_pos_far,
               r->long_tok_s_far, r->long_ratio, medians_of(r->long_pairs, pairs, sizeof pairs));
    if (r->scaling_pairs > 0)
        printf("       decode on 1 thread: %.2f tok/s, on %d: %.2f tok/s, speedup %.3f;"
               " read bandwidth %.1f GB/s, %.1f GB/s, speedup %.3f (%s)\n",
               r->decode_tok_s_1t, r->threads, r->decode_tok_s_nt, r->thread_speedup,
               r->stream_gb_s_1t, r->stream_gb_s_nt, r->stream_speedup,
               medians_of(r->scaling_pairs, pairs, sizeof pairs));
    if (tr->fraction >= 0)
        printf("       TUI: decode %.1f tok/s against generate mode's %.1f, time to first token "
               "%.3f s against %.3f s (%s)\n", tr->tui_tok_s, tr->gen_tok_s,
               tr->tui_ttft_s, tr->gen_ttft_s, medians_of(tr->pairs, pairs, sizeof pairs));
    if (against && sr->rounds > 0)
        printf("       against llama.cpp (pp%d / tg%d, %d round%s): prefill %.2fx (%.2f .. %.2f), "
               "decode %.2fx (%.2f .. %.2f)\n", sr->n_prompt, sr->n_gen, sr->rounds,
               sr->rounds == 1 ? "" : "s",
               sr->prefill_ratio, sr->prefill_ratio_min, sr->prefill_ratio_max, sr->decode_ratio,
               sr->decode_ratio_min, sr->decode_ratio_max);
    else if (against)
        printf("       against llama.cpp: not measured: %s\n", sr->why);
    if (r->cpu_others > CPU_OTHERS_WARN)
        printf("       warning: other processes took %.0f%% of the CPUs meanwhile: the figures "
               "above are not this program's alone\n", 100 * r->cpu_others);
}

void report_table_header(const shape_result *r, double bw_start)
{
    printf("llmchat-bench: kernel %s, prefetch %s, %spanels, %s pages, %d thread%s, read "
           "bandwidth at start %.2f GB/s (bw: median of the passes paired with decode windows)\n",
           r->ok ? r->kernel : "?", kernels_prefetch_name(kernels_get_prefetch()),
           r->panels ? "" : "no ", r->huge_pages ? "2 MiB" : "4 KiB", r->threads,
           r->threads == 1 ? "" : "s", bw_start);
    printf("%-6s %9s %9s %9s %7s %8s %9s %8s %7s %8s\n", "shape", "prefill", "decode",
           "roofline", "bw", "ttft_s", "rss_MB", "file_MB", "load_s", "tui");
    printf("%-6s %9s %9s %9s %7s %8s %9s %8s %7s %8s\n", "", "tok/s", "tok/s", "median",
           "GB/s", "", "", "", "", "decode");
}

/* The median of llmchat's prefill and decode over a side-by-side's rounds. */
static void ours_medians(side_result *sr, double *prefill, double *decode)
{
    double lo, hi;
    *prefill = stats_median(sr->ours_prefill, sr->ours_rounds, &lo, &hi);
    *decode = stats_median(sr->ours_decode, sr->ours_rounds, &lo, &hi);
}

/* --panels as given: on, off, or auto (llmchat's defaults). */
static const char *panels_option(const bench_options *o)
{
    return !o->panels_given ? "auto" : o->no_panels ? "off" : "on";
}

void report_sweep_row(const bench_options *o, const shape *s, int threads, side_result *sr,
                      bool theirs)
{
    bool json = o->json;
    double pp, tg;
    bool anchor_failed = theirs && sr->rounds < sr->ours_rounds; /* why says how */
    if (sr->ours_rounds == 0) {
        if (json)
            printf("{\"shape\":\"%s\",\"sweep_threads\":%d,\"error\":\"", s->name, threads);
        else
            printf("%7d  error: ", threads);
        json_text(sr->why);
        printf(json ? "\"}\n" : "\n");
        return;
    }
    ours_medians(sr, &pp, &tg);
    if (anchor_failed && sr->rounds == 0)
        theirs = false; /* llmchat's figures alone, and why llama.cpp's are not there */
    double lo, hi, their_pp = 0, their_tg = 0;
    if (theirs) {
        their_pp = stats_median(sr->theirs_prefill, sr->rounds, &lo, &hi);
        their_tg = stats_median(sr->theirs_decode, sr->rounds, &lo, &hi);
    }
    if (!json) {
        printf("%7d %10.1f %10.2f", threads, pp, tg);
        if (theirs)
            printf(" %10.1f %10.2f %8.2fx %8.2fx", their_pp, their_tg, sr->prefill_ratio,
                   sr->decode_ratio);
        if (anchor_failed)
            printf("  llama.cpp: %s", sr->why);
        printf("\n");
        return;
    }
    printf("{\"shape\":\"%s\",\"sweep_threads\":%d,\"rounds\":%d,\"prompt\":%d,\"gen\":%d,"
           "\"huge_pages_option\":\"%s\",\"panels_option\":\"%s\",\"prefill_tok_s\":%.2f,"
           "\"decode_tok_s\":%.2f",
           s->name, threads, sr->ours_rounds, sr->n_prompt, sr->n_gen,
           model_huge_pages_name((model_huge_pages)o->huge_pages), panels_option(o), pp, tg);
    json_array("llmchat_prefill_tok_s", sr->ours_prefill, sr->ours_rounds);
    json_array("llmchat_decode_tok_s", sr->ours_decode, sr->ours_rounds);
    if (anchor_failed) {
        printf(",\"anchor_error\":\"");
        json_text(sr->why);
        printf("\"");
    }
    if (theirs) {
        printf(",\"llamacpp_prefill_tok_s_median\":%.2f,\"llamacpp_decode_tok_s_median\":%.2f,"
               "\"prefill_ratio\":%.3f,\"decode_ratio\":%.3f", their_pp, their_tg,
               sr->prefill_ratio, sr->decode_ratio);
        json_array("llamacpp_prefill_tok_s", sr->theirs_prefill, sr->rounds);
        json_array("llamacpp_decode_tok_s", sr->theirs_decode, sr->rounds);
    }
    printf("}\n");
}


void report_sweep_header(const bench_options *o, const shape *s, const char *path,
                         const char *llama_bench, const char *anchor_why)
{
    if (o->json)
        return;
    printf("llmchat-bench --sweep: %s, %s, --huge-pages %s, --panels %s, %d round%s a row "
           "(medians)%s%s\n",
           s->name, path, model_huge_pages_name((model_huge_pages)o->huge_pages),
           panels_option(o), o->rounds,
           o->rounds == 1 ? "" : "s",
           o->against && !llama_bench ? "; against llama.cpp: not measured: " : "",
           o->against && !llama_bench ? anchor_why : "");
    printf("%7s %10s %10s", "threads", "prefill", "decode");
    if (llama_bench)
        printf(" %10s %10s %9s %9s", "llama.cpp", "llama.cpp", "prefill", "decode");
    printf("\n%7s %10s %10s", "", "tok/s", "tok/s");
    if (llama_bench)
        printf(" %10s %10s %9s %9s", "prefill", "decode", "ratio", "ratio");
    printf("\n");
}
