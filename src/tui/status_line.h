/* status_line.h — the status line, its fields always in one order: run state (while a
 * long prompt is read: how far, "prompt 256/2048 tokens"), the
 * interventions in force (control vectors, heads out), model,
 * size, weights (what they were converted from), KV cache, chat template, threads,
 * position in the context, prefill and decode speed, speculative decoding (its guesses
 * accepted, tokens per call of the model, the speed-up over plain steps), sampler
 * settings, slow motion,
 * seed, the last reply's speed; the least important go first when it is narrow. Or
 * the quit question, a one-off message, or (llmchat --view) what the trace is.
 *
 * It keeps no state: it draws the run state tui.c gives it (status_view) and the
 * engine's figures. */
#ifndef LLMCHAT_TUI_STATUS_LINE_H
#define LLMCHAT_TUI_STATUS_LINE_H

#include <stdbool.h>

#include "engine.h"
#include "draw.h"
#include "token_shade.h"

typedef enum { RUN_IDLE = 0, RUN_GENERATING, RUN_STOPPED } tui_run_state;

typedef struct {
    tui_run_state state;
    bool paused;       /* replies wait (n, a digit, p): said while idle too */
    bool confirm_quit; /* "Quit anyway? (y/n)" is asked instead */
    double reply_rate; /* wall-clock tok/s of the last reply (0: unknown) */
    int slow_motion_ms; /* slow motion (0: off) */
    token_shade_mode shading; /* Conversation's tokens coloured: the legend is shown */
    const char *guesser; /* speculative decoding's guesser ("lookup", "draft"), or NULL */
    const char *template_name; /* the chat template ("llama2", "chatml"); NULL: not shown */
    int prompt_done, prompt_total; /* a long prompt being read: its tokens run so far
                                      of prompt_total (0: none is) */
    const char *message;  /* said instead of the rest until the next key, or NULL */
    const char *viewing;  /* llmchat --view: what the trace is, shown instead of the
                             engine's figures (e is NULL then) */
} status_view;

/* e may be NULL when v->viewing is set. */
void status_draw(WINDOW *w, const tui_screen *scr, const engine *e, const status_view *v);

#endif
