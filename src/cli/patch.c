/* patch.c — `-m patch`: activation patching from the command line (patching.h). The
 * clean and corrupted prompts (--clean, --corrupt: raw text, with BOS where the
 * vocabulary adds one, as generate reads its input) must be as many tokens; the answer
 * and wrong tokens (--answer, --wrong: a word as one token after a space, or #ID)
 * default to the two runs' top tokens. Prints the grid with its baselines, positions
 * (or heads) across and layers down, or with --json one object:
 *
 *   {"site", "metric", "tokens", "corrupt_tokens", "ids", "corrupt_ids", "layers",
 *    "answer", "wrong", "clean", "corrupt", "grid", "runs", "passes", "positions_run"}
 *
 * grid[layer][position] (or [layer][head], null where the layer has no such head: a
 * Gated DeltaNet layer has no Qcur, Kcur, Vcur);
 * clean and corrupt are the two runs' logit differences (KL: 0 and the corrupted run's
 * divergence from the clean). The runs are on a transformer of their own, without
 * interventions (a control vector or a knock-out on the command line is refused).
 * With --trace FILE the run is also written as a trace: the header (mode "patch") and
 * the patch line (trace.h), which --replay checks (replay_patch.c); a run that fails
 * leaves no file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "json.h"
#include "parse_number.h"
#include "patching.h"
#include "session.h"
#include "signals.h"
#include "textfmt.h"
#include "trace.h"

enum { CELL = 7 }; /* the text grid's columns */

/* The token --answer or --wrong names: "#ID", or a word whose piece (after a space, or
 * as it is) is one token of the vocabulary. -1 after a message. */
static int word_token(const tokenizer *tok, const char *option, const char *word)
{
    int vocab = tokenizer_vocab_size(tok), id;
    if (word[0] == '#') {
        if (parse_int(word + 1, 0, vocab - 1, &id))
            return id;
        fprintf(stderr, "llmchat: --%s %s: not a token id of the vocabulary (0-%d)\n", option,
                word, vocab - 1);
        return -1;
    }
    if (!*word) {
        fprintf(stderr, "llmchat: --%s: an empty word\n", option);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++) /* " word" first, then "word" */
        for (int i = 0; i < vocab; i++) {
            const char *p = tokenizer_piece(tok, i);
            if (pass == 0 ? p[0] == ' ' && !strcmp(p + 1, word) : !strcmp(p, word))
                return i;
        }
    char spaced[512];
    snprintf(spaced, sizeof spaced, " %s", word);
    int n = tokenizer_encode(tok, spaced, NULL, 0);
    fprintf(stderr, "llmchat: --%s '%s' is not one token of the vocabulary (after a space it is "
                    "%d tokens); give one that is, or #ID\n", option, word, n);
    return -1;
}

/* Writes token id's piece as every front end shows it (textfmt_token_piece: a control
 * token without the newlines around it, control bytes escaped), spaces as '_' so that
 * the grid's columns stay apart, as at most `cells` characters, padded to them when
 * pad. */
static void put_piece(FILE *f, const tokenizer *tok, int id, int cells, bool pad)
{
    char shown[256];
    textfmt_token_piece(tokenizer_piece(tok, id), tokenizer_is_control(tok, id), false, shown,
                        sizeof shown);
    int used = 0;
    size_t at = 0, len = strlen(shown);
    while (at < len && used < cells) {
        int k = textfmt_utf8_len((const unsigned char *)shown + at, len - at);
        k = k > 0 ? k : 1;
        if (shown[at] == ' ')
            putc('_', f);
        else
            fwrite(shown + at, 1, (size_t)k, f);
        at += (size_t)k;
        used++;
    }
    for (; pad && used < cells; used++)
        putc(' ', f);
}

static void put_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void put_tokens(FILE *f, const tokenizer *tok, const int *ids, int n)
{
    putc('[', f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        json_write_string(f, tokenizer_piece(tok, ids[i]));
    }
    putc(']', f);
}

static void print_json(FILE *f, const tokenizer *tok, const patch_spec *sp, const patch_result *r,
                       const int *clean, const int *corrupt, int n)
{
    fprintf(f, "{\"site\": \"%s\", \"metric\": \"%s\", \"tokens\": ", patch_site_name(sp->site),
            sp->metric == PATCH_KL ? "kl" : "logit_diff");
    put_tokens(f, tok, clean, n);
    fputs(", \"corrupt_tokens\": ", f);
    put_tokens(f, tok, corrupt, n);
    for (int k = 0; k < 2; k++) {
        fputs(k ? ", \"corrupt_ids\": [" : ", \"ids\": [", f);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? ", " : "", (k ? corrupt : clean)[i]);
        putc(']', f);
    }
    fprintf(f, ", \"layers\": [%d, %d]", sp->layer_first, sp->layer_last);
    if (sp->metric == PATCH_LOGIT_DIFF) {
        fprintf(f, ", \"answer\": {\"id\": %d, \"piece\": ", r->answer);
        json_write_string(f, tokenizer_piece(tok, r->answer));
        fprintf(f, "}, \"wrong\": {\"id\": %d, \"piece\": ", r->wrong);
        json_write_string(f, tokenizer_piece(tok, r->wrong));
        putc('}', f);
    }
    fputs(", \"clean\": ", f);
    put_number(f, r->clean);
    fputs(", \"corrupt\": ", f);
    put_number(f, r->corrupt);
    fputs(", \"grid\": [", f);
    for (int l = 0; l < r->rows; l++) {
        fputs(l ? ", [" : "[", f);
        for (int c = 0; c < r->cols; c++) {
            if (c)
                fputs(", ", f);
            put_number(f, r->grid[(size_t)l * r->cols + c]);
        }
        putc(']', f);
    }
    fprintf(f, "], \"runs\": %d, \"passes\": %d, \"positions_run\": %ld}\n", r->runs,
            r->passes, r->positions_run);
}

static void print_text(FILE *f, const tokenizer *tok, const patch_spec *sp, const patch_result *r,
                       const int *clean, const int *corrupt, int n)
{
    bool heads = !patch_site_positions(sp->site);
    fprintf(f, "patching %s, layers %d-%d: ", patch_site_name(sp->site), sp->layer_first,
            sp->layer_last);
    if (sp->metric == PATCH_KL) {
        fprintf(f, "KL divergence from the clean run's next token (nats; 0 = the clean run)\n");
        fprintf(f, "clean 0, corrupted %.4f\n", r->corrupt);
    } else {
        fputs("normalised logit difference of '", f);
        put_piece(f, tok, r->answer, 24, false);
        fprintf(f, "' (#%d) over '", r->answer);
        put_piece(f, tok, r->wrong, 24, false);
        fprintf(f, "' (#%d)\nclean %.4f, corrupted %.4f (1 = the clean run, 0 = the corrupted)\n",
                r->wrong, r->clean, r->corrupt);
    }
    fprintf(f, "%-5s", heads ? (sp->site == PATCH_EXPERT ? "exp" : "head") : "pos");
    for (int c = 0; c < r->cols; c++)
        fprintf(f, " %*d", CELL, c);
    putc('\n', f);
    for (int row = 0; row < (heads ? 0 : 2); row++) { /* the two prompts' tokens */
        fprintf(f, "%-5s", row ? "corr" : "clean");
        for (int c = 0; c < n; c++) {
            putc(' ', f);
            put_piece(f, tok, (row ? corrupt : clean)[c], CELL, true);
        }
        putc('\n', f);
    }
    for (int l = 0; l < r->rows; l++) {
        fprintf(f, "L%-4d", sp->layer_first + l);
        for (int c = 0; c < r->cols; c++) {
            float v = r->grid[(size_t)l * r->cols + c];
            if (isfinite(v))
                fprintf(f, " %*.3f", CELL, v);
            else
                fprintf(f, " %*s", CELL, "-");
        }
        putc('\n', f);
    }
    fprintf(f, "%d patched runs in %d passes, %ld positions run\n", r->runs, r->passes,
            r->positions_run);
}

/* --trace FILE: the session opened the trace as it does for every mode, but no engine
 * runs here, so the trace is taken from the session (closed here, not by session_close),
 * described as a patching run and given the patch line; removed instead when the run
 * failed (rc != 0). Returns rc, or 1 when writing the trace failed (said in one line). */
static int write_trace(session *s, const patch_spec *sp, const patch_result *r,
                       const int *clean, const int *corrupt, int n, int rc)
{
    trace_writer *t = s->trace;
    s->trace = NULL;
    engine_set_observer(s->e, NULL, NULL);
    if (rc != 0) {
        trace_abandon(t);
        return rc;
    }
    trace_run run = {.mode = "patch",
                     .m = s->m,
                     .kernels = s->kernels,
                     .kv_cache = engine_kv_cache(s->e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0",
                     .ctx = n};
    trace_describe(t, &run);
    trace_write_patch(t, sp, r, clean, corrupt, n); /* an error is kept for trace_close */
    llm_err err;
    if (trace_close(t, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    return 0;
}

int cli_patch(session *s)
{
    const app_options *o = s->o;
    const model_config *c = &s->m->config;
    int n_clean = 0, n_corrupt = 0, rc = 0;
    bool bos = tokenizer_adds_bos(s->tok);
    int *clean = session_encode_text(s->tok, o->patch_clean, bos, &n_clean);
    int *corrupt = clean ? session_encode_text(s->tok, o->patch_corrupt, bos, &n_corrupt) : NULL;
    patch_spec sp = {.site = (patch_site)o->patch_site,
                     .metric = o->patch_kl ? PATCH_KL : PATCH_LOGIT_DIFF,
                     .answer = -1, .wrong = -1, /* the runs' top tokens */
                     .layer_first = o->layer_first < 0 ? 0 : o->layer_first,
                     .layer_last = o->layer_first < 0 ? c->n_layers - 1 : o->layer_last,
                     .stop = &signals_interrupted};
    int top = sp.site == PATCH_RESID_PRE ? c->n_layers : c->n_layers - 1;
    if (!clean || !corrupt)
        rc = 1;
    else if (o->n_vectors || o->n_knocks || o->n_expert_knocks || o->n_expert_forces) {
        fprintf(stderr, "llmchat: -m patch runs the model as it is: drop --control-vector, "
                        "--knock-out, --knock-out-expert and --force-expert (or their config "
                        "keys)\n");
        rc = 2;
    } else if (n_clean <= bos || n_corrupt <= bos) {
        fprintf(stderr, "llmchat: -m patch: the %s prompt is empty\n",
                n_clean <= bos ? "clean" : "corrupted");
        rc = 2;
    } else if (n_clean != n_corrupt) {
        fprintf(stderr, "llmchat: -m patch: the clean prompt is %d tokens and the corrupted %d "
                        "(BOS included): patching needs them the same length\n",
                n_clean, n_corrupt);
        rc = 2;
    } else if (sp.layer_last > top) {
        fprintf(stderr, "llmchat: --layers %d-%d: the model has layers 0-%d%s\n", sp.layer_first,
                sp.layer_last, c->n_layers - 1,
                sp.site == PATCH_RESID_PRE ? " (resid_pre: also the stream after the last, "
                                             "numbered as the layer count)" : "");
        rc = 2;
    } else if (n_clean > 4096) {
        fprintf(stderr, "llmchat: -m patch: the prompts are %d tokens; patching takes at most "
                        "4096\n", n_clean);
        rc = 2;
    }
    if (rc == 0 && !o->patch_kl) {
        if (o->patch_answer && (sp.answer = word_token(s->tok, "answer", o->patch_answer)) < 0)
            rc = 2;
        if (rc == 0 && o->patch_wrong && (sp.wrong = word_token(s->tok, "wrong", o->patch_wrong)) < 0)
            rc = 2;
    }
    transformer *t = NULL;
    llm_err err;
    if (rc == 0 && transformer_new_kv(s->m, patching_ctx(s->m, n_clean), engine_kv_cache(s->e), &t, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        rc = 1;
    }
    patch_result r = {0};
    llm_status st = rc == 0 ? patching_run(t, clean, corrupt, n_clean, &sp, &r, &err) : LLM_OK;
    if (st != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        rc = st == LLM_ERR_ARG ? 2 : 1;
    }
    if (rc == 0) {
        if (o->json)
            print_json(stdout, s->tok, &sp, &r, clean, corrupt, n_clean);
        else
            print_text(stdout, s->tok, &sp, &r, clean, corrupt, n_clean);
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "llmchat: writing the grid failed: %s\n", strerror(errno ? errno : EIO));
            rc = 1;
        }
    }
    if (s->trace)
        rc = write_trace(s, &sp, &r, clean, corrupt, n_clean, rc);
    patch_result_free(&r);
    transformer_free(t);
    free(clean);
    free(corrupt);
    return rc;
}
