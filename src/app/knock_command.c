/* knock_command.c — /knock's words, parsed and run on an engine (knock_command.h).
 *
 * Owns nothing beyond a call: the argument is at most three blank-separated words, the
 * engine's steering does the rest (and refuses what the model cannot take). */
#include "knock_command.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "parse_number.h"
#include "steering.h"

enum { MAX_WORDS = 3 };

static const char USAGE[] = "/knock takes: head LAYER:HEAD [reset], expert LAYER:EXPERT, "
                            "restore head|expert LAYER:N (numbered from 0)";

void knock_describe(const engine *e, char *msg, size_t size)
{
    const intervention *in = engine_intervention(e);
    if (!in || (in->n_heads_out == 0 && in->n_experts_out == 0)) {
        snprintf(msg, size, "nothing is knocked out (/knock head LAYER:HEAD, /knock expert "
                 "LAYER:EXPERT)");
        return;
    }
    size_t o = (size_t)snprintf(msg, size, "knocked out (LAYER:N, from 0):");
    for (int i = 0; i < in->n_heads_out && o < size; i++)
        o += (size_t)snprintf(msg + o, size - o, "%s%d:%d%s", i ? " " : " heads ",
                              in->heads_out[i] / in->n_heads, in->heads_out[i] % in->n_heads,
                              steering_head_reset(in, in->heads_out[i]) ? " (state reset)" : "");
    for (int i = 0; i < in->n_experts_out && o < size; i++)
        o += (size_t)snprintf(msg + o, size - o, "%s%d:%d",
                              i ? " " : in->n_heads_out ? "; experts " : " experts ",
                              in->experts_out[i].layer, in->experts_out[i].expert);
}

/* "LAYER:N", the whole word, from 0 (a number too large is refused, never wrapped). */
static bool pair(const char *word, int *layer, int *n)
{
    const char *end;
    return parse_index_prefix(word, INT_MAX, layer, &end) && *end == ':' &&
           parse_index_prefix(end + 1, INT_MAX, n, &end) && !*end;
}

/* head|expert LAYER:N out (out true; reset: a head's state emptied too) or back in;
 * *idle true when it changed nothing (restoring one that was in). */
static llm_status knock(engine *e, const char *what, const char *where, bool out, bool reset,
                        bool *idle, llm_err *err)
{
    int layer, n;
    bool head = !strcmp(what, "head"), expert = !strcmp(what, "expert");
    if ((!head && !expert) || !pair(where, &layer, &n))
        return llm_fail(err, LLM_ERR_ARG, "%s", USAGE);
    const model_config *c = &engine_model(e)->config;
    const model *m = engine_model(e);
    int heads = head && layer < c->n_layers ? model_layer_heads(m, layer) : c->n_heads;
    if (head && layer >= c->n_layers) /* steering's words count from 1 */
        return llm_fail(err, LLM_ERR_ARG, "/knock: no layer %d: the model has layers 0-%d "
                        "(numbered from 0)", layer, c->n_layers - 1);
    if (head && n >= heads)
        return llm_fail(err, LLM_ERR_ARG, "/knock: no head %d in layer %d: it has heads 0-%d "
                        "(numbered from 0)", n, layer, heads - 1);
    steering *s = engine_steering(e);
    llm_err why;
    if (reset && !head)
        return llm_fail(err, LLM_ERR_ARG, "%s", USAGE);
    *idle = !out && (head ? !steering_is_out(s, layer, n) : !steering_expert_is_out(s, layer, n));
    llm_status st = reset  ? steering_knock_out_reset(s, layer, n, &why)
                    : head ? steering_knock_out(s, layer, n, out, &why)
                           : steering_knock_out_expert(s, layer, n, out, &why);
    if (st != LLM_OK)
        return llm_fail(err, st, "/knock: %s", why.text);
    return LLM_OK;
}

llm_status knock_command(engine *e, const char *arg, char *msg, size_t size, llm_err *err)
{
    char w[MAX_WORDS][COMMAND_WORD_MAX];
    int n;
    llm_status st = LLM_OK;
    bool idle = false;
    if (!command_words(arg, w, MAX_WORDS, &n))
        st = llm_fail(err, LLM_ERR_ARG, "%s", USAGE);
    else if (n == 2)
        st = knock(e, w[0], w[1], true, false, &idle, err);
    else if (n == 3 && !strcmp(w[0], "restore"))
        st = knock(e, w[1], w[2], false, false, &idle, err);
    else if (n == 3 && !strcmp(w[2], "reset"))
        st = knock(e, w[0], w[1], true, true, &idle, err);
    else if (n != 0)
        st = llm_fail(err, LLM_ERR_ARG, "%s", USAGE);
    if (st != LLM_OK)
        return st;
    size_t o = 0;
    if (idle && size)
        o = (size_t)snprintf(msg, size, "%s %s was not knocked out; ", w[1], w[2]);
    knock_describe(e, msg + (o < size ? o : size), o < size ? size - o : 0);
    return st;
}
