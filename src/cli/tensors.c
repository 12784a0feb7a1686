/* tensors.c — `-m tensors`: runs the input through the model (with BOS where the
 * vocabulary adds one, as generate does) and writes every step of the forward pass at
 * the last position (--position P; FIRST-LAST or all: each position in turn, from one
 * prefill), one JSON object a line, in the pass's order:
 *
 *   {"name": "Qcur", "layer": 0, "pos": 14, "shape": [8, 8], "values": [...]}
 *
 * "layer" is -1 outside the layers (inp_embd, result_norm, result_output); values are
 * row-major with 9 significant digits (a float's exact value), null where not finite
 * (the scores of keys a query does not see). --layers A-B keeps those layers' steps.
 * The position is run again as decoding runs one token (engine_tensors), with the
 * control vectors and knocked-out heads of the command line. Layers are captured a few
 * at a time, each capture at most TENSORS_BUDGET bytes. tests/ref/forward.py --tensors
 * writes the same records from the reference pass. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cli.h"
#include "engine.h"
#include "session.h"
#include "signals.h"

#define TENSORS_BUDGET ((size_t)64 << 20)

/* One value: "%.9g", or null when not finite. */
static void put_value(FILE *f, float v)
{
    if (v != v || v > 3.4e38f || v < -3.4e38f)
        fputs("null", f);
    else
        fprintf(f, "%.9g", (double)v);
}

static void put_step(FILE *f, const captured_step *s, int pos)
{
    fprintf(f, "{\"name\": \"%s\", \"layer\": %d, \"pos\": %d, \"shape\": [%d", hook_name(s->point),
            s->layer, pos, s->shape[0]);
    if (s->n_dims == 2)
        fprintf(f, ", %d", s->shape[1]);
    fputs("], \"values\": [", f);
    for (int i = 0; i < s->n; i++) {
        if (i)
            fputs(", ", f);
        put_value(f, s->values[i]);
    }
    fputs("]}\n", f);
}

/* Writes the steps of cap: its layers', and those outside the layers that come before
 * them (first chunk) or after them (last chunk). */
static void put_chunk(FILE *f, const tensor_capture *cap, bool first, bool last)
{
    bool before = true;
    for (int i = 0; i < cap->n_steps; i++) {
        const captured_step *s = &cap->steps[i];
        if (s->layer >= 0)
            before = false;
        if (s->layer >= 0 || (before && first) || (!before && last))
            put_step(f, s, cap->pos);
    }
}

/* The positions and layers asked for, checked against the input and the model; 0 or 2
 * with a message. */
static int settle_range(const app_options *o, const model_config *c, int n, int *pos,
                        int *pos_last, int *first, int *last)
{
    *pos = o->position < 0 ? n - 1 : o->position;
    *pos_last = o->position < 0 || o->position_last < 0 ? n - 1 : o->position_last;
    if (*pos_last >= n) {
        fprintf(stderr, "llmchat: --position %d: the input has %d position%s (0-%d, BOS included)\n",
                *pos_last, n, n == 1 ? "" : "s", n - 1);
        return 2;
    }
    *first = o->layer_first < 0 ? 0 : o->layer_first;
    *last = o->layer_first < 0 ? c->n_layers - 1 : o->layer_last;
    if (*last >= c->n_layers) {
        fprintf(stderr, "llmchat: --layers %d-%d: the model has layers 0-%d\n", *first, *last,
                c->n_layers - 1);
        return 2;
    }
    return 0;
}

/* The steps of layers first..last at pos, written a few layers a capture. */
static int write_steps(engine *e, int pos, int first, int last)
{
    const model_config *c = &engine_model(e)->config;
    size_t outside = capture_bytes(c, pos, 1, 0);
    size_t per_layer = capture_bytes(c, pos, 0, 0) - outside;
    int chunk = per_layer > 0 && TENSORS_BUDGET > outside ? (int)((TENSORS_BUDGET - outside) / per_layer) : 1;
    chunk = chunk < 1 ? 1 : chunk;
    llm_err err;
    for (int a = first; a <= last && !signals_interrupted; a += chunk) {
        int b = a + chunk - 1 > last ? last : a + chunk - 1;
        const tensor_capture *cap = engine_tensors(e, pos, a, b, &err);
        if (!cap) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            return 1;
        }
        put_chunk(stdout, cap, a == first, b == last);
    }
    if (signals_interrupted) {
        fprintf(stderr, "llmchat: interrupted\n");
        return 1;
    }
    return 0;
}

int cli_tensors(session *s)
{
    const app_options *o = s->o;
    const tokenizer *tok = s->tok;
    engine *e = s->e;
    llm_err err;
    int n;
    int *ids = session_encode_prompt(o, tok, &n, NULL);
    if (!ids)
        return 1;
    int pos, pos_last, first, last;
    int rc = settle_range(o, &s->m->config, n, &pos, &pos_last, &first, &last);
    if (rc == 0 && n > engine_ctx(e)) {
        fprintf(stderr, "llmchat: the input is %d tokens (with BOS), but the context holds %d "
                        "(see -c)\n", n, engine_ctx(e));
        rc = 1;
    }
    if (rc == 0 && engine_prefill(e, ids, n, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        rc = 1;
    }
    free(ids);
    /* engine_tensors leaves the KV cache as it was: each position sees the prefill's */
    for (int p = pos; rc == 0 && p <= pos_last; p++)
        rc = write_steps(e, p, first, last);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "llmchat: writing the steps failed: %s\n", strerror(errno ? errno : EIO));
        rc = 1;
    }
    return rc;
}
