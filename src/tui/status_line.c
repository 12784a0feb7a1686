/* status_line.c — the status line: model, size, quantization, threads, position in
 * the context, prefill and decode speed, run state, seed; or the quit question.
 *
 * Reads the model, the engine's stats and the tui's run state; owns nothing. */
#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "draw.h"
#include "format.h"

static const char *state_name(tui_run_state s)
{
    switch (s) {
    case RUN_GENERATING: return "generating";
    case RUN_STOPPED: return "stopped";
    case RUN_IDLE: break;
    }
    return "idle";
}

void status_draw(tui *t)
{
    WINDOW *w = t->w_status;
    if (!w)
        return;
    int width = getmaxx(w);
    attr_t base = draw_attr(t, PAIR_STATUS, A_REVERSE);
    wbkgdset(w, ' ' | base);
    werase(w);
    char line[512];
    if (t->confirm_quit) {
        draw_text(t, w, 0, 0, width, " A reply is running. Quit anyway? (y/n)", base | A_BOLD);
        return;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const engine_stats *st = engine_get_stats(t->e);
    char params[32], pre[32], dec[32];
    tuifmt_count(t->m->n_params, params, sizeof params);
    tuifmt_rate(st->prefill_tokens, st->prefill_ms, pre, sizeof pre);
    tuifmt_rate((double)st->decode_tokens, st->decode_ms, dec, sizeof dec);
    /* pausing outlasts a reply: the next one starts paused, so say so while idle too */
    char state[32];
    if (t->paused && t->state == RUN_GENERATING)
        snprintf(state, sizeof state, "paused");
    else
        snprintf(state, sizeof state, "%s%s", state_name(t->state), t->paused ? " (paused)" : "");
    unsigned long long seed = (unsigned long long)engine_sampler_config(t->e)->seed;
    int pos = engine_pos(t->e), ctx = engine_ctx(t->e);
    /* the longest form that fits: everything, then compact, then the essentials */
    int n = snprintf(line, sizeof line,
                     " %s | %s params | %s, KV %s | %d threads | pos %d/%d | prefill %s tok/s | decode %s tok/s | %s | seed %llu",
                     t->m->name, params, model_weights_name(t->m),
                     engine_kv_cache(t->e) == TRANSFORMER_KV_F32 ? "F32" : "Q8_0", threads, pos, ctx,
                     pre, dec, state, seed);
    if (n <= width) {
        char extra[128];
        int e = 0;
        if (t->reply_rate > 0)
            e += snprintf(extra + e, sizeof extra - (size_t)e, " | reply %.0f tok/s", t->reply_rate);
        snprintf(extra + e, sizeof extra - (size_t)e, " | F1 help");
        if (n + (int)strlen(extra) <= width)
            strcat(line, extra);
    } else {
        char name[64];
        snprintf(name, sizeof name, "%s", t->m->name);
        size_t nl = strlen(name);
        if (nl > 4 && strcmp(name + nl - 4, ".bin") == 0)
            name[nl - 4] = '\0';
        n = snprintf(line, sizeof line, " %s | %s %s %s %dT | %d/%d | pre %s dec %s t/s | seed %llu", state, name,
                     params, model_weights_name(t->m), threads, pos, ctx, pre, dec, seed);
        if (n > width)
            snprintf(line, sizeof line, " %s | %d/%d | dec %s tok/s | seed %llu | %s %s", state, pos, ctx, dec,
                     seed, t->m->name, model_weights_name(t->m));
    }
    draw_text(t, w, 0, 0, width, line, base);
}
