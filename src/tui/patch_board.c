/* patch_board.c — the TUI's patching grid: run a cell at a time on a transformer of
 * its own, or read from a trace (see patch_board.h). */
#include "patch_board.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest prompt a grid is run for here: a grid has layers x tokens cells and
 * keeps two runs' streams. */
enum { PATCH_BOARD_TOKENS_MAX = 1024 };

struct patch_board {
    const model *m;         /* a live grid's */
    transformer_kv kv;
    transformer *t;         /* owned: n positions */
    int n;
    int *clean, *corrupt;   /* (n) each, owned */
    patching *p;            /* the live grid */
    const trace_patch *tp;  /* or a trace's (borrowed) */
    patch_spec spec;
    bool stopped;
    float *cell_logits;     /* (vocab) patch_board_cell_logits' */
    char kl_instead[512];   /* why the grid measures the KL divergence though the logit
                               difference was asked for ("" when it was not) */
};

patch_board *patch_board_new(void)
{
    return calloc(1, sizeof(patch_board));
}

/* Drops the grid, its prompts and its transformer. */
static void clear(patch_board *b)
{
    patching_free(b->p);
    transformer_free(b->t);
    free(b->clean);
    free(b->cell_logits);
    b->p = NULL;
    b->t = NULL;
    b->clean = b->corrupt = NULL;
    b->cell_logits = NULL;
    b->m = NULL;
    b->tp = NULL;
    b->n = 0;
    b->kl_instead[0] = '\0';
    b->stopped = false;
}

void patch_board_free(patch_board *b)
{
    if (!b)
        return;
    clear(b);
    free(b);
}

/* Begins the patching of the board's prompts with spec; where the logit difference has
 * no two tokens to measure (the runs' top tokens agree) it measures the KL divergence
 * instead and says so in note. The grid before stays when this fails. */
static llm_status begin(patch_board *b, patch_spec spec, char *note, size_t note_size,
                        llm_err *err)
{
    if (note_size)
        note[0] = '\0';
    patching *p = NULL;
    llm_status st = patching_begin(b->t, b->clean, b->corrupt, b->n, &spec, &p, err);
    if (st == LLM_ERR_ARG && spec.metric == PATCH_LOGIT_DIFF) {
        llm_err why = *err;
        spec.metric = PATCH_KL;
        st = patching_begin(b->t, b->clean, b->corrupt, b->n, &spec, &p, err);
        char *colon = strchr(why.text, ':'); /* the reason, without its advice */
        if (colon)
            *colon = '\0';
        if (st == LLM_OK && note_size)
            snprintf(note, note_size, "%s: the grid measures the KL divergence instead",
                     why.text);
        if (st == LLM_OK)
            snprintf(b->kl_instead, sizeof b->kl_instead, "%s", why.text);
    } else if (st == LLM_OK && spec.metric == PATCH_LOGIT_DIFF) {
        b->kl_instead[0] = '\0'; /* (a KL grid of the same prompts keeps the reason) */
    }
    if (st == LLM_OK) {
        patching_free(b->p);
        b->p = p;
        b->spec = spec;
        b->stopped = false;
    }
    return st;
}

llm_status patch_board_start(patch_board *b, const model *m, transformer_kv kv, const int *clean,
                             int n_clean, const int *corrupt, int n_corrupt, patch_site site,
                             patch_metric metric, char *note, size_t note_size, llm_err *err)
{
    clear(b);
    if (n_clean != n_corrupt)
        return llm_fail(err, LLM_ERR_ARG, "the clean prompt is %d tokens and the corrupted %d: "
                        "patching needs them the same length", n_clean, n_corrupt);
    if (n_clean < 1)
        return llm_fail(err, LLM_ERR_ARG, "an empty prompt");
    if (n_clean > PATCH_BOARD_TOKENS_MAX)
        return llm_fail(err, LLM_ERR_ARG, "the prompt is %d tokens: the patching view takes at "
                        "most %d (/reset for a shorter context, or llmchat -m patch)", n_clean,
                        PATCH_BOARD_TOKENS_MAX);
    b->clean = malloc(sizeof(int) * 2 * (size_t)n_clean);
    b->cell_logits = malloc(sizeof(float) * (size_t)m->config.vocab_size);
    if (!b->clean || !b->cell_logits) {
        clear(b);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the patching grid");
    }
    b->corrupt = b->clean + n_clean;
    memcpy(b->clean, clean, sizeof(int) * (size_t)n_clean);
    memcpy(b->corrupt, corrupt, sizeof(int) * (size_t)n_clean);
    b->n = n_clean;
    b->m = m;
    b->kv = kv;
    patch_spec spec = {.site = site, .metric = metric, .answer = -1, .wrong = -1,
                       .layer_first = 0,
                       .layer_last = m->config.n_layers - (site == PATCH_RESID_PRE ? 0 : 1)};
    llm_status st = transformer_new_kv(m, patching_ctx(m, n_clean), kv, &b->t, err);
    if (st == LLM_OK)
        st = begin(b, spec, note, note_size, err);
    if (st != LLM_OK)
        clear(b);
    return st;
}

llm_status patch_board_restart(patch_board *b, patch_site site, patch_metric metric, char *note,
                               size_t note_size, llm_err *err)
{
    if (!b->t)
        return llm_fail(err, LLM_ERR_ARG, "a trace's grid cannot run again: it needs the model");
    if (metric == PATCH_LOGIT_DIFF && b->spec.metric == PATCH_KL && b->kl_instead[0])
        return llm_fail(err, LLM_ERR_ARG, "the grid stays KL: the logit difference has "
                        "nothing to measure with these prompts (%s)", b->kl_instead);
    patch_spec spec = b->spec;
    spec.site = site;
    spec.metric = metric;
    spec.layer_last = b->m->config.n_layers - (site == PATCH_RESID_PRE ? 0 : 1);
    return begin(b, spec, note, note_size, err);
}

void patch_board_show_trace(patch_board *b, const trace_patch *tp)
{
    clear(b);
    b->tp = tp;
}

bool patch_board_has_grid(const patch_board *b)
{
    return b->p || b->tp;
}

bool patch_board_running(const patch_board *b)
{
    return b->p && !b->stopped && !patching_finished(b->p);
}

llm_status patch_board_step(patch_board *b, llm_err *err)
{
    if (!patch_board_running(b))
        return LLM_OK;
    llm_status st = patching_step(b->p, err);
    if (st != LLM_OK)
        b->stopped = true;
    return st;
}

void patch_board_stop(patch_board *b)
{
    b->stopped = true;
}

bool patch_board_grid(const patch_board *b, patch_grid *out)
{
    memset(out, 0, sizeof *out);
    const trace_patch *tp = b->tp;
    if (tp) {
        *out = (patch_grid){.site = (patch_site)tp->site, .metric = (patch_metric)tp->metric,
                            .layer_first = tp->layer_first, .rows = tp->rows, .cols = tp->cols,
                            .grid = tp->grid, .n = tp->n, .clean = tp->ids,
                            .corrupt = tp->corrupt_ids, .answer = tp->answer, .wrong = tp->wrong,
                            .clean_value = tp->clean, .corrupt_value = tp->corrupt,
                            .done = tp->rows * tp->cols, .total = tp->rows * tp->cols};
        return true;
    }
    if (!b->p)
        return false;
    const patch_result *r = patching_result(b->p);
    const patch_spec *s = patching_spec(b->p);
    *out = (patch_grid){.site = s->site, .metric = s->metric, .layer_first = s->layer_first,
                        .rows = r->rows, .cols = r->cols, .grid = r->grid, .n = b->n,
                        .clean = b->clean, .corrupt = b->corrupt, .answer = r->answer,
                        .wrong = r->wrong, .clean_value = r->clean, .corrupt_value = r->corrupt,
                        .clean_logits = r->clean_logits, .corrupt_logits = r->corrupt_logits,
                        .done = patching_cells_done(b->p), .total = patching_cell_count(b->p),
                        .running = patch_board_running(b), .live = true};
    return true;
}

bool patch_board_cell_ran(const patch_board *b, int row, int col)
{
    return b->p && patching_cell_ran(b->p, row, col);
}

llm_status patch_board_cell_logits(patch_board *b, int row, int col, const float **logits,
                                   llm_err *err)
{
    *logits = NULL;
    if (b->tp)
        return llm_fail(err, LLM_ERR_ARG, "a trace keeps no cell's tokens (llmchat MODEL "
                        "--replay FILE runs the cells again)");
    if (!b->p)
        return llm_fail(err, LLM_ERR_ARG, "no grid");
    llm_status st = patching_cell_logits(b->p, row, col, b->cell_logits, err);
    if (st == LLM_OK)
        *logits = b->cell_logits;
    return st;
}
