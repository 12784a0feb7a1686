/* replay_patch.c — `--replay TRACE` of a patching run (a trace of -m patch --trace: its
 * patch line, trace_read.h): runs patching_run again with the trace's site, metric,
 * layers, answer and wrong tokens and prompts, on a transformer of its own (as
 * -m patch does), and checks every cell of the grid and both baselines against the
 * trace's. Prints the baselines then and now, the largest difference and where, and
 * "reproduced" when all agree within PATCH_REPLAY_TOLERANCE (exit 0); else names the
 * cells that do not (exit 1). A model the trace's run cannot have run on (another
 * vocabulary size, layer count or number of heads) is refused in one line (exit 2).
 * Owns nothing past the call; the model and engine are the session's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "engine.h"
#include "patching.h"
#include "session.h"
#include "signals.h"
#include "trace_read.h"

/* How far a cell or a baseline may be from the trace's: |now - then| <= tolerance x
 * max(1, |then|). The same weights on other kernels (--kernels scalar against AVX-512,
 * stories260K f32, resid_pre, where a normalised cell reaches 10) differ by up to about
 * 2e-5 in a cell; a real change of the model or the run moves cells by far more. */
#define PATCH_REPLAY_TOLERANCE 1e-3

enum { CELLS_NAMED = 10 }; /* disagreeing cells listed one a line, then a count */

static bool agrees(double then, double now)
{
    if (isnan(then) || isnan(now))
        return isnan(then) && isnan(now);
    return fabs(now - then) <= PATCH_REPLAY_TOLERANCE * fmax(1.0, fabs(then));
}


/* "layer 2, position 7" (or "head 3") for cell (row, col) of p's grid. */
static void cell_name(const trace_patch *p, int row, int col, char *buf, size_t size)
{
    snprintf(buf, size, "layer %d, %s %d", p->layer_first + row,
             patch_site_column((patch_site)p->site), col);
}

/* What of the trace's run the model cannot run (one line printed): 2; else 0. */
static int check_model(const app_options *o, const trace_reader *r, const model *m,
                       const trace_patch *p)
{
    const trace_header *h = trace_reader_header(r);
    const model_config *c = &m->config;
    int vocab = h->n_vocab > 0 ? h->n_vocab : h->config.vocab_size;
    int layers = h->has_config ? h->config.n_layers : 0;
    if ((vocab > 0 && vocab != c->vocab_size) || (layers > 0 && layers != c->n_layers)) {
        fprintf(stderr, "llmchat: %s: the patching run is of a model of %d tokens and %d layers; "
                        "%s has %d tokens and %d layers\n", o->replay_path, vocab, layers, m->name,
                c->vocab_size, c->n_layers);
        return 2;
    }
    int top = p->site == PATCH_RESID_PRE ? c->n_layers : c->n_layers - 1;
    int cols = patch_site_cols((patch_site)p->site, c, p->n);
    bool ids_fit = p->answer < c->vocab_size && p->wrong < c->vocab_size;
    for (int i = 0; i < p->n; i++)
        ids_fit = ids_fit && p->ids[i] < c->vocab_size && p->corrupt_ids[i] < c->vocab_size;
    if (p->layer_last > top || p->cols != cols || !ids_fit) {
        fprintf(stderr, "llmchat: %s: the patching run's grid (layers %d-%d, %d %ss) or tokens "
                        "do not fit %s\n", o->replay_path, p->layer_first, p->layer_last, p->cols,
                patch_site_column((patch_site)p->site), m->name);
        return 2;
    }
    if (o->compare) {
        fprintf(stderr, "llmchat: %s is a patching run: --replay checks its grid; --compare is "
                        "for traces of step records\n", o->replay_path);
        return 2;
    }
    return 0;
}

/* Compares the grids and prints the report; returns the exit status. */
static int report(const app_options *o, const trace_patch *p, const patch_result *now)
{
    int cells = p->rows * p->cols, differ = 0, worst = -1;
    double largest = 0;
    for (int i = 0; i < cells; i++) {
        double then = p->grid[i], v = now->grid[i];
        double d = isnan(then) != isnan(v) ? INFINITY : isnan(then) ? 0 : fabs(v - then);
        if (worst < 0 || d > largest) {
            largest = d;
            worst = i;
        }
        differ += !agrees(then, v);
    }
    char where[64];
    cell_name(p, worst / p->cols, worst % p->cols, where, sizeof where);
    printf("baselines: clean %.9g then, %.9g now; corrupted %.9g then, %.9g now\n", p->clean,
           now->clean, p->corrupt, now->corrupt);
    printf("cells compared: %d; largest difference %.3g (%s)\n", cells, largest, where);
    bool clean_ok = agrees(p->clean, now->clean), corrupt_ok = agrees(p->corrupt, now->corrupt);
    if (differ == 0 && clean_ok && corrupt_ok) {
        printf("reproduced: every cell and both baselines within %g of the trace's (relative "
               "above 1)\n", PATCH_REPLAY_TOLERANCE);
        return 0;
    }
    fflush(stdout);
    for (int i = 0, named = 0; i < cells && named < CELLS_NAMED; i++) {
        if (agrees(p->grid[i], now->grid[i]))
            continue;
        cell_name(p, i / p->cols, i % p->cols, where, sizeof where);
        fprintf(stderr, "llmchat: %s: cell (%s): the trace has %.9g, the replay %.9g\n",
                o->replay_path, where, p->grid[i], now->grid[i]);
        named++;
    }
    if (differ > CELLS_NAMED)
        fprintf(stderr, "llmchat: %s: %d more cells differ\n", o->replay_path,
                differ - CELLS_NAMED);
    fprintf(stderr, "llmchat: the replay differs from the trace: %d of %d cells%s%s differ by "
                    "more than %g\n", differ, cells, clean_ok ? "" : ", the clean baseline",
            corrupt_ok ? "" : ", the corrupted baseline", PATCH_REPLAY_TOLERANCE);
    return 1;
}

int cli_replay_patch(session *s)
{
    const app_options *o = s->o;
    const trace_reader *r = s->replay;
    const trace_header *h = trace_reader_header(r);
    const trace_patch *p = trace_reader_patch(r);
    int rc = check_model(o, r, s->m, p);
    if (rc != 0)
        return rc;
    printf("replaying %s: patching %s, layers %d-%d, %s, %d tokens, traced with %s (%s "
           "weights)\n", o->replay_path, patch_site_name((patch_site)p->site), p->layer_first,
           p->layer_last, p->metric == PATCH_KL ? "KL divergence" : "logit difference", p->n,
           h->model_name ? h->model_name : "an unnamed model", h->weights ? h->weights : "?");
    printf("now: %s (%s weights, %s KV cache, %s kernels)\n", s->m->name,
           model_weights_option(s->m),
           engine_kv_cache(s->e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0", s->kernels);
    patch_spec sp = {.site = (patch_site)p->site, .metric = (patch_metric)p->metric,
                     .answer = p->answer, .wrong = p->wrong,
                     .layer_first = p->layer_first, .layer_last = p->layer_last,
                     .stop = &signals_interrupted};
    transformer *t = NULL;
    patch_result now = {0};
    llm_err err;
    if (transformer_new_kv(s->m, patching_ctx(s->m, p->n), engine_kv_cache(s->e), &t, &err) != LLM_OK ||
        patching_run(t, p->ids, p->corrupt_ids, p->n, &sp, &now, &err) != LLM_OK) {
        fflush(stdout);
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, err.text);
        rc = 1;
    } else if (now.rows != p->rows || now.cols != p->cols) { /* check_model's guard held */
        fprintf(stderr, "llmchat: %s: the replay's grid is %d x %d, the trace's %d x %d\n",
                o->replay_path, now.rows, now.cols, p->rows, p->cols);
        rc = 1;
    } else {
        rc = report(o, p, &now);
    }
    patch_result_free(&now);
    transformer_free(t);
    return rc;
}
