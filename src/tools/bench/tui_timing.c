/* bench/tui_timing.c — the TUI column of llmchat-bench (see tui_timing.h): runs the
 * llmchat-bench-tui script (generate mode, then the TUI in a private tmux server, on the
 * same model and prompt) and reads its one line of figures back. */
#include "tui_timing.h"

#include <stdio.h>
#include <string.h>

#include "shell_quote.h"
#include "stats.h"

enum { TUI_PAIRS = 3 };

/* A first message of about `tokens` tokens (a sentence of 13 tokens, repeated). */
static void tui_prompt(char *buf, size_t size, int tokens)
{
    static const char sentence[] = "Once upon a time there was a little girl named Lily. ";
    buf[0] = '\0';
    for (int t = 0; t + 13 <= tokens && strlen(buf) + sizeof sentence < size; t += 13)
        strcat(buf, sentence);
    if (!buf[0])
        snprintf(buf, size, "Once upon a time");
}

/* One pair, its figures into r (r->fraction < 0: it failed, r->why says why). */
static void measure_once(const bench_options *o, const char *model_path, int prompt_tokens,
                         tui_result *r)
{
    static char prompt[16384], cmd[20000];
    tui_prompt(prompt, sizeof prompt, prompt_tokens);
    cmd[0] = '\0';
    shell_quote(cmd, sizeof cmd, o->tui_script);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, o->llmchat);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, model_path);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, o->tokenizer);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " %d %d ", o->steps, o->threads);
    shell_quote(cmd, sizeof cmd, prompt);
    strcat(cmd, " 2>&1");
    r->fraction = -1.0;
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    char line[1024] = "";
    for (char buf[1024]; p && fgets(buf, sizeof buf, p);)
        snprintf(line, sizeof line, "%s", buf);
    int status = p ? pclose(p) : -1;
    line[strcspn(line, "\n")] = '\0';
    double gen_ms, tui_ms;
    if (status != 0 ||
        sscanf(line, "generate_prefill_ms=%lf generate_tok_s=%lf tui_prefill_ms=%lf "
                     "tui_tok_s=%lf ui_fraction=%lf",
               &gen_ms, &r->gen_tok_s, &tui_ms, &r->tui_tok_s, &r->ui_fraction) != 5 ||
        r->gen_tok_s <= 0 || r->tui_tok_s <= 0) {
        snprintf(r->why, sizeof r->why, "%.200s", line[0] ? line : "llmchat-bench-tui failed");
        return;
    }
    r->gen_ttft_s = gen_ms / 1e3 + 1.0 / r->gen_tok_s;
    r->tui_ttft_s = tui_ms / 1e3 + 1.0 / r->tui_tok_s;
    r->fraction = r->tui_tok_s / r->gen_tok_s;
}

void tui_timing_measure(const bench_options *o, const shape *s, const char *model_path, tui_result *r)
{
    double fraction[TUI_PAIRS], gen[TUI_PAIRS], tui[TUI_PAIRS], ui[TUI_PAIRS];
    double gen_ttft[TUI_PAIRS], tui_ttft[TUI_PAIRS];
    /* the prompt of the prefill figures, leaving room for the reply */
    int tokens = o->prompt < s->seq_len - o->steps - 64 ? o->prompt : s->seq_len - o->steps - 64;
    for (int i = 0; i < TUI_PAIRS; i++) {
        measure_once(o, model_path, tokens, r);
        if (r->fraction < 0)
            return; /* r->why says why */
        fraction[i] = r->fraction;
        gen[i] = r->gen_tok_s;
        tui[i] = r->tui_tok_s;
        ui[i] = r->ui_fraction;
        gen_ttft[i] = r->gen_ttft_s;
        tui_ttft[i] = r->tui_ttft_s;
    }
    r->fraction = stats_median(fraction, TUI_PAIRS, NULL, NULL);
    r->gen_tok_s = stats_median(gen, TUI_PAIRS, NULL, NULL);
    r->tui_tok_s = stats_median(tui, TUI_PAIRS, NULL, NULL);
    r->ui_fraction = stats_median(ui, TUI_PAIRS, NULL, NULL);
    r->gen_ttft_s = stats_median(gen_ttft, TUI_PAIRS, NULL, NULL);
    r->tui_ttft_s = stats_median(tui_ttft, TUI_PAIRS, NULL, NULL);
    r->pairs = TUI_PAIRS;
}
