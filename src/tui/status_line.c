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
#include "steering.h"
#include "textfmt.h"
#include "format.h"

/* The fields in their fixed order, and how soon each goes when the line is too narrow
 * (the highest drop first): the F1 hint, the last reply's rate, prefill speed, threads,
 * the KV cache, the size, the seed, the template, the weights, decode speed, slow
 * motion, the sampler, the model, the interventions (vectors, heads out); the state and
 * the position always stay. */
enum { F_STATE, F_STEER, F_MODEL, F_PARAMS, F_WEIGHTS, F_KV, F_TEMPLATE, F_THREADS, F_POS,
       F_PREFILL, F_DECODE, F_GUESS, F_SAMPLER, F_SLOW, F_SEED, F_REPLY, F_HELP, F_COUNT };
static const int drop_rank[F_COUNT] = {
    [F_STATE] = 0, [F_POS] = 1, [F_STEER] = 2, [F_MODEL] = 3, [F_SAMPLER] = 4, [F_SLOW] = 5,
    [F_GUESS] = 6, [F_DECODE] = 7, [F_WEIGHTS] = 8, [F_TEMPLATE] = 9, [F_SEED] = 10,
    [F_PARAMS] = 11, [F_KV] = 12, [F_THREADS] = 13, [F_PREFILL] = 14, [F_REPLY] = 15,
    [F_HELP] = 16,
};

typedef struct {
    char text[F_COUNT][128]; /* "" when a field has nothing to say */
    char brief[F_COUNT][64]; /* a shorter text tried before the field is dropped; "" none */
} status_fields;

static const char *state_name(tui_run_state s)
{
    switch (s) {
    case RUN_GENERATING: return "generating";
    case RUN_STOPPED: return "stopped";
    case RUN_IDLE: break;
    }
    return "idle";
}

/* The time a token took in plain steps over the time one took in steps with guesses,
 * into *x; false until tokens were made both ways. */
static bool speed_up(const engine_stats *st, double *x)
{
    if (st->single_tokens <= 0 || st->spec_tokens <= 0 || st->spec_ms <= 0)
        return false;
    *x = (st->single_ms / (double)st->single_tokens) / (st->spec_ms / (double)st->spec_tokens);
    return true;
}

/* Speculative decoding so far: "lookup 64% of 210 accepted, 2.4 tok/call, 1.80x plain,
 * asked 3": the guesses the sampler accepted, the tokens each call of the model added,
 * the speed-up (the time a token took in plain steps, one at a time, over the time one
 * took in steps with guesses), when tokens were made both ways, and the guesses the
 * newest step asked for (engine_guess_length: as many as pay, within --draft-min and
 * --draft-max). */
static void format_guesses(const engine *e, const char *name, char *out, size_t size)
{
    const engine_stats *st = engine_get_stats(e);
    int o = snprintf(out, size, "%s", name);
    if (st->guessed > 0)
        o += snprintf(out + o, size - (size_t)o, " %.0f%% of %lld accepted",
                      100.0 * st->accepted / st->guessed, st->guessed);
    if (st->spec_calls > 0 && (size_t)o < size)
        o += snprintf(out + o, size - (size_t)o, "%s %.1f tok/call", st->guessed > 0 ? "," : "",
                      (double)st->spec_tokens / (double)st->spec_calls);
    double x;
    if (speed_up(st, &x) && (size_t)o < size)
        o += snprintf(out + o, size - (size_t)o, ", %.2fx plain", x);
    if (st->spec_calls > 0 && (size_t)o < size)
        snprintf(out + o, size - (size_t)o, ", asked %d", engine_guess_length(e, NULL));
}

/* The same, for a narrow line: "lookup 64% accepted, 1.80x plain" (what is known). */
static void format_guesses_brief(const engine *e, const char *name, char *out, size_t size)
{
    const engine_stats *st = engine_get_stats(e);
    int o = snprintf(out, size, "%s", name);
    if (st->guessed > 0)
        o += snprintf(out + o, size - (size_t)o, " %.0f%% accepted",
                      100.0 * st->accepted / st->guessed);
    double x;
    if (speed_up(st, &x) && (size_t)o < size)
        snprintf(out + o, size - (size_t)o, "%s %.2fx plain", st->guessed > 0 ? "," : "", x);
}

static void status_compose(const engine *e, const status_view *v, status_fields *f)
{
    memset(f, 0, sizeof *f);
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
    /* pausing outlasts a reply only when asked for while idle: say so then too */
    if (v->prompt_total > 0)
        snprintf(f->text[F_STATE], sizeof f->text[0], "prompt %d/%d tokens (Esc stops)",
                 v->prompt_done, v->prompt_total);
    else if (v->paused && v->state == RUN_GENERATING)
        snprintf(f->text[F_STATE], sizeof f->text[0], "paused");
    else
        snprintf(f->text[F_STATE], sizeof f->text[0], "%s%s", state_name(v->state), v->paused ? " (paused)" : "");
    /* the control vectors and knocked-out heads in force: "vectors happy 0.60 | heads out L2H3" */
    steering_format(engine_intervention(e), f->text[F_STEER], sizeof f->text[0]);
    char name[64];
    snprintf(name, sizeof name, "%s", m->name);
    size_t nl = strlen(name);
    if (nl > 4 && strcmp(name + nl - 4, ".bin") == 0)
        name[nl - 4] = '\0';
    snprintf(f->text[F_MODEL], sizeof f->text[0], "%s", name);
    snprintf(f->text[F_PARAMS], sizeof f->text[0], "%s params", params);
    snprintf(f->text[F_WEIGHTS], sizeof f->text[0], "%s (%s)", m->weights_label, m->weights_size);
    const char *kv = engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "F32" : "Q8_0";
    if (m->config.dn_layers > 0 && engine_pos(e) > 0) /* a hybrid: what a step back costs */
        snprintf(f->text[F_KV], sizeof f->text[0], "KV %s + state (rewind 1: %d rerun)", kv,
                 engine_rewind_cost(e, engine_pos(e) - 1));
    else
        snprintf(f->text[F_KV], sizeof f->text[0], "KV %s", kv);
    if (v->template_name)
        snprintf(f->text[F_TEMPLATE], sizeof f->text[0], "%s", v->template_name);
    snprintf(f->text[F_THREADS], sizeof f->text[0], "%d thread%s", threads, threads == 1 ? "" : "s");
    snprintf(f->text[F_POS], sizeof f->text[0], "pos %d/%d", engine_pos(e), engine_ctx(e));
    snprintf(f->text[F_PREFILL], sizeof f->text[0], "prefill %s tok/s", pre);
    snprintf(f->text[F_DECODE], sizeof f->text[0], "decode %s tok/s", dec);
    if (v->guesser) {
        format_guesses(e, v->guesser, f->text[F_GUESS], sizeof f->text[0]);
        format_guesses_brief(e, v->guesser, f->brief[F_GUESS], sizeof f->brief[0]);
    }
    /* the sampler settings the next token gets (/set changes them) */
    settings_format_short(engine_sampler_config(e), f->text[F_SAMPLER], sizeof f->text[0]);
    if (v->slow_motion_ms > 0)
        snprintf(f->text[F_SLOW], sizeof f->text[0], "slow %d ms", v->slow_motion_ms);
    snprintf(f->text[F_SEED], sizeof f->text[0], "seed %llu", (unsigned long long)engine_sampler_config(e)->seed);
    if (v->reply_rate > 0)
        snprintf(f->text[F_REPLY], sizeof f->text[0], "reply %.0f tok/s", v->reply_rate);
    snprintf(f->text[F_HELP], sizeof f->text[0], "F1 help");
}

/* The fields that fit width, in their order, joined by " | ": the ones with the
 * highest drop rank go first, one at a time, a field with a brief text shortened to it
 * before it goes. */
static void status_fit(status_fields *f, int width, char *line, size_t size)
{
    for (int rank = F_COUNT - 1;; rank--) {
        size_t o = 0;
        line[0] = '\0';
        for (int i = 0; i < F_COUNT && o < size; i++)
            if (f->text[i][0])
                o += (size_t)snprintf(line + o, size - o, "%s%s", o ? " | " : " ", f->text[i]);
        if (textfmt_width(line) <= width || rank <= 1)
            return;
        for (int i = 0; i < F_COUNT; i++) {
            if (drop_rank[i] != rank)
                continue;
            if (f->text[i][0] && f->brief[i][0] && strcmp(f->text[i], f->brief[i]) != 0) {
                snprintf(f->text[i], sizeof f->text[i], "%s", f->brief[i]);
                rank++; /* this rank again, shortened */
            } else {
                f->text[i][0] = '\0';
            }
            f->brief[i][0] = '\0';
        }
    }
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
    /* the colour legend of Conversation's tokens, at the right end when there is room */
    int legend = token_shade_legend_width(v->shading);
    if (legend > 0 && width - legend >= 30)
        width -= legend;
    else
        legend = 0;
    if (v->viewing) {
        snprintf(line, sizeof line, " %s | F1 help", v->viewing);
        draw_text(scr, w, 0, 0, width, line, base);
    } else {
        status_fields f;
        status_compose(e, v, &f);
        status_fit(&f, width, line, sizeof line);
        draw_text(scr, w, 0, 0, width, line, base);
    }
    if (legend > 0)
        token_shade_legend_draw(scr, w, 0, width, v->shading, base);
}
