/* status_line.c — the status line (see status_line.h).
 *
 * Reads the model, the engine's stats and the run state it is given; owns nothing. */
#include "status_line.h"

#include <stdio.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "settings.h"
#include "textfmt.h"
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

void status_draw(WINDOW *w, const tui_screen *scr, const engine *e, const status_view *v)
{
    int width = getmaxx(w);
    attr_t base = draw_attr(scr, PAIR_STATUS, A_REVERSE);
    wbkgdset(w, ' ' | base);
    werase(w);
    char line[512];
    if (v->confirm_quit) {
        draw_text(scr, w, 0, 0, width, " A reply is running. Quit anyway? (y/n)", base | A_BOLD);
        return;
    }
    if (v->message) {
        snprintf(line, sizeof line, " %s", v->message);
        draw_text(scr, w, 0, 0, width, line, base | A_BOLD);
        return;
    }
    if (v->viewing) {
        snprintf(line, sizeof line, " %s | F1 help", v->viewing);
        draw_text(scr, w, 0, 0, width, line, base);
        return;
    }
    const model *m = engine_model(e);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const engine_stats *st = engine_get_stats(e);
    char params[32], pre[32], dec[32];
    textfmt_count(m->n_params, params, sizeof params);
    tuifmt_rate(st->prefill_tokens, st->prefill_ms, pre, sizeof pre);
    tuifmt_rate((double)st->decode_tokens, st->decode_ms, dec, sizeof dec);
    /* pausing outlasts a reply: the next one starts paused, so say so while idle too */
    char state[32];
    if (v->paused && v->state == RUN_GENERATING)
        snprintf(state, sizeof state, "paused");
    else
        snprintf(state, sizeof state, "%s%s", state_name(v->state), v->paused ? " (paused)" : "");
    unsigned long long seed = (unsigned long long)engine_sampler_config(e)->seed;
    char samp[96]; /* the sampler settings the next token gets (/set changes them) */
    settings_format_short(engine_sampler_config(e), samp, sizeof samp);
    int pos = engine_pos(e), ctx = engine_ctx(e);
    /* the longest form that fits: everything, then compact, then the essentials */
    char tmpl[40] = "";
    if (v->template_name)
        snprintf(tmpl, sizeof tmpl, " | %s", v->template_name);
    int n = snprintf(line, sizeof line,
                     " %s | %s params | %s (%s), KV %s%s | %d threads | pos %d/%d | prefill %s tok/s | decode %s tok/s | %s | %s | seed %llu",
                     m->name, params, m->weights_label, m->weights_size,
                     engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "F32" : "Q8_0", tmpl, threads, pos,
                     ctx, pre, dec, state, samp, seed);
    if (n <= width) {
        char extra[128];
        int o = 0;
        if (v->reply_rate > 0)
            o += snprintf(extra + o, sizeof extra - (size_t)o, " | reply %.0f tok/s", v->reply_rate);
        snprintf(extra + o, sizeof extra - (size_t)o, " | F1 help");
        if (n + (int)strlen(extra) <= width)
            strcat(line, extra);
    } else {
        char name[64];
        snprintf(name, sizeof name, "%s", m->name);
        size_t nl = strlen(name);
        if (nl > 4 && strcmp(name + nl - 4, ".bin") == 0)
            name[nl - 4] = '\0';
        n = snprintf(line, sizeof line, " %s | %s %s %s (%s)%s %dT | %d/%d | pre %s dec %s t/s | %s | seed %llu",
                     state, name, params, m->weights_label, m->weights_size, tmpl, threads, pos, ctx, pre,
                     dec, samp, seed);
        if (n > width)
            snprintf(line, sizeof line, " %s | %d/%d | dec %s tok/s | %s | seed %llu | %s %s", state, pos, ctx, dec,
                     samp, seed, m->name, m->weights_label);
    }
    draw_text(scr, w, 0, 0, width, line, base);
}
