/* bench/tui_timing.h — the TUI column of llmchat-bench: the TUI's decode speed as a
 * fraction of generate mode's, and both modes' time to first token, through the real
 * program on the same model and prompt. The llmchat-bench-tui script runs one pair
 * (generate mode, then the TUI in a private tmux server); three pairs alternate and
 * the medians are reported (of the per-pair ratios, and of each figure). Part of the
 * benchmark. */
#ifndef LLMCHAT_BENCH_TUI_TIMING_H
#define LLMCHAT_BENCH_TUI_TIMING_H

#include "bench_options.h"
#include "shapes.h"

typedef struct {
    double fraction;    /* < 0: not measured (why says why) */
    double gen_tok_s, tui_tok_s, ui_fraction, gen_ttft_s, tui_ttft_s;
    int pairs;          /* pairs measured */
    char why[256];
} tui_result;

/* The pairs on the model file at model_path (a shape s), with o->llmchat,
 * o->tokenizer and o->tui_script; r->fraction < 0 when they failed, r->why says why. */
void tui_timing_measure(const bench_options *o, const shape *s, const char *model_path, tui_result *r);

#endif
