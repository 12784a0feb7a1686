/* force_expert_command.c — /force_expert's words, parsed and run on an engine
 * (force_expert_command.h).
 *
 * Owns nothing beyond a call: the argument is at most two blank-separated words, the
 * engine's steering does the rest (and refuses what the model cannot take). */
#include "force_expert_command.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "parse_number.h"
#include "steering.h"

enum { MAX_WORDS = 2 };

static const char USAGE[] = "/force_expert takes: LAYER:EXPERT, off [LAYER] (numbered from 0)";

void force_expert_describe(const engine *e, char *msg, size_t size)
{
    const intervention *in = engine_intervention(e);
    if (!in || in->n_experts_forced == 0) {
        snprintf(msg, size, "no expert is forced (/force_expert LAYER:EXPERT)");
        return;
    }
    size_t o = (size_t)snprintf(msg, size, "forced (LAYER:EXPERT, from 0):");
    for (int i = 0; i < in->n_experts_forced && o < size; i++)
        o += (size_t)snprintf(msg + o, size - o, " %d:%d", in->experts_forced[i].layer,
                              in->experts_forced[i].expert);
}

/* "LAYER:EXPERT" (expert not NULL) or "LAYER", the whole word, from 0 (a number
 * too large is refused, never wrapped). */
static bool numbers(const char *word, int *layer, int *expert)
{
    const char *end;
    if (!parse_index_prefix(word, INT_MAX, layer, &end))
        return false;
    if (!expert)
        return !*end;
    return *end == ':' && parse_index_prefix(end + 1, INT_MAX, expert, &end) && !*end;
}

/* Every layer's forced expert let go. */
static llm_status all_off(steering *s, int n_layers, llm_err *err)
{
    for (int l = 0; l < n_layers; l++)
        if (steering_expert_forced(s, l) >= 0) {
            llm_status st = steering_force_expert(s, l, -1, err);
            if (st != LLM_OK)
                return st;
        }
    return LLM_OK;
}

llm_status force_expert_command(engine *e, const char *arg, char *msg, size_t size,
                                llm_err *err)
{
    char w[MAX_WORDS][COMMAND_WORD_MAX];
    int n, layer = -1, expert = -1;
    steering *s = engine_steering(e);
    llm_err why;
    llm_status st = LLM_OK;
    bool words = command_words(arg, w, MAX_WORDS, &n);
    bool off = words && n > 0 && !strcmp(w[0], "off");
    if (!words || (off ? n == 2 && !numbers(w[1], &layer, NULL)
                       : n > 1 || (n == 1 && !numbers(w[0], &layer, &expert))))
        return llm_fail(err, LLM_ERR_ARG, "%s", USAGE);
    if (off && n == 1)
        st = all_off(s, engine_model(e)->config.n_layers, &why);
    else if (n > 0)
        st = steering_force_expert(s, layer, expert, &why);
    if (st != LLM_OK)
        return llm_fail(err, st, "/force_expert: %s", why.text);
    char notice[320];
    snprintf(notice, sizeof notice, "%s", n > 0 ? steering_notice(s) : "");
    force_expert_describe(e, msg, size);
    size_t o = strlen(msg);
    if (*notice && o < size)
        snprintf(msg + o, size - o, " (%s)", notice);
    return LLM_OK;
}
