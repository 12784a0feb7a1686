/* replay_report.c — `--replay TRACE [--compare]`: runs a model over a trace's tokens.
 *
 * Plain replay checks that the model makes the trace's choices again (each sampled
 * token decided with the trace's settings and draw) and says where it does not.
 * --compare prints, per position, the trace's and the new model's top-1 and the KL
 * divergence between their distributions, then the top-1 agreement and the mean and
 * largest KL. The work is replay.c's; this file reads the trace and prints. Without
 * MODEL it runs the trace's model, with the trace's weight and KV cache types unless
 * the command line names them; a MODEL given runs with that file's own defaults. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "kernels.h"
#include "replay.h"
#include "textfmt.h"
#include "trace.h"
#include "trace_read.h"

int cli_replay_open(app_options *o, trace_reader **out)
{
    llm_err err;
    if (trace_read_file(o->replay_path, out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        return 1;
    }
    const trace_reader *r = *out;
    for (int i = 0; i < trace_reader_problems_kept(r); i++)
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, trace_reader_problem(r, i));
    if (trace_reader_problem_count(r) > trace_reader_problems_kept(r))
        fprintf(stderr, "llmchat: %s: %d more problems\n", o->replay_path,
                trace_reader_problem_count(r) - trace_reader_problems_kept(r));
    const trace_header *h = trace_reader_header(r);
    if (o->model_path && o->model_source == MODEL_FROM_ARGUMENT)
        return 0; /* another model: its own defaults */
    if (!h->model_path || !*h->model_path) {
        fprintf(stderr, "llmchat: %s does not name its model: give MODEL\n", o->replay_path);
        return 2;
    }
    /* The trace's model: what the command line leaves open is as the trace says. */
    o->model_path = h->model_path;
    o->model_source = MODEL_FROM_ARGUMENT;
    if (!o->weights_given && h->weights && !model_weights_parse(h->weights, &o->weights))
        o->weights = TENSOR_Q8_0;
    if (o->kv_cache == TRANSFORMER_KV_AUTO && h->kv_cache)
        o->kv_cache = strcmp(h->kv_cache, "f32") == 0 ? TRANSFORMER_KV_F32 : TRANSFORMER_KV_Q8_0;
    return 0;
}

typedef struct {
    const app_options *o;
    const trace_reader *r;
    const tokenizer *tok;
} printer;

/* A token's piece, quoted and escaped for one table cell; a control token by its
 * name alone (<s>, not the newlines around it in the vocabulary), as the TUI shows it. */
static const char *piece_text(const printer *pr, int id, char *buf, size_t size)
{
    const char *p = trace_reader_piece(pr->r, id);
    bool known = id >= 0 && id < tokenizer_vocab_size(pr->tok);
    if (!p && known)
        p = tokenizer_piece(pr->tok, id);
    if (!p)
        p = "?";
    char esc[64];
    textfmt_token_piece(p, known && tokenizer_is_control(pr->tok, id), false, esc, sizeof esc);
    snprintf(buf, size, "'%s'", esc);
    return buf;
}

static void print_position(void *user, const replay_position *p)
{
    const printer *pr = user;
    if (!pr->o->compare)
        return;
    char tok[80], a[80], b[80];
    piece_text(pr, p->token, tok, sizeof tok);
    if (!p->compared) {
        printf("%5d  %-6s  %-14s  (the trace has no candidates here)\n", p->pos,
               step_phase_name(p->phase), tok);
        return;
    }
    printf("%5d  %-6s  %-14s  %-14s %5.3f   %-14s %5.3f  %s %9.6f\n", p->pos,
           step_phase_name(p->phase), tok, piece_text(pr, p->trace_top1, a, sizeof a),
           p->trace_top1_prob, piece_text(pr, p->new_top1, b, sizeof b), p->new_top1_prob,
           p->trace_top1 == p->new_top1 ? " " : "*", p->kl);
}

/* The summary after the per-position rows; returns the exit status (1 when a plain
 * replay made another choice than the trace). */
static int print_summary(const printer *pr, const replay_summary *s)
{
    const app_options *o = pr->o;
    char a[80], b[80];
    if (s->filled > 0)
        printf("positions without a record, run from the one before: %d\n", s->filled);
    if (s->gap >= 0)
        printf("the trace does not say what position %d holds: replayed the %d before it\n",
               s->gap, s->gap);
    if (o->compare) {
        printf("\n");
        if (s->first_top1_diff >= 0)
            printf("first top-1 difference: position %d (after %s)\n", s->first_top1_diff,
                   piece_text(pr, s->first_top1_diff_token, a, sizeof a));
        else if (s->compared > 0)
            printf("first top-1 difference: none\n");
        if (s->compared > 0) {
            printf("top-1 agreement: %.2f%% (%d of %d positions)\n",
                   100.0 * s->top1_same / s->compared, s->top1_same, s->compared);
            printf("KL divergence (nats, trace || new, over the trace's candidates and the "
                   "rest): mean %.6f, max %.6f at position %d\n", s->kl_mean, s->kl_max,
                   s->kl_max_pos);
        } else {
            printf("the trace records no candidates to compare (written with -n but no top?)\n");
        }
    }
    if (s->sampled > 0)
        printf("sampled tokens chosen again with the trace's draws: %d of %d\n",
               s->sampled_same, s->sampled);
    if (s->first_choice_diff < 0) {
        if (!o->compare)
            printf("reproduced: every position ran, every sampled token was chosen again\n");
        return 0;
    }
    piece_text(pr, s->first_choice_diff_token, b, sizeof b);
    if (o->compare) {
        printf("first different choice: position %d (the trace has %s)\n",
               s->first_choice_diff, b);
        return 0;
    }
    fflush(stdout);
    fprintf(stderr, "llmchat: the replay differs from the trace at position %d: the trace "
                    "has %s\n", s->first_choice_diff, b);
    return 1;
}

/* The trace's final sequence, checked against the model: NULL (a message printed) when
 * it cannot be replayed. */
static const step_record **replayable(const app_options *o, const model *m,
                                      const trace_reader *r, int *n)
{
    const trace_header *h = trace_reader_header(r);
    const step_record **seq;
    *n = trace_reader_final(r, &seq);
    if (*n < 0) {
        fprintf(stderr, "llmchat: out of memory reading %s\n", o->replay_path);
        return NULL;
    }
    if (*n == 0) {
        fprintf(stderr, "llmchat: %s holds no positions to replay\n", o->replay_path);
        free(seq);
        return NULL;
    }
    if (h->n_vocab > 0 && h->n_vocab != m->config.vocab_size)
        fprintf(stderr, "llmchat: warning: the trace's vocabulary has %d tokens, %s has %d\n",
                h->n_vocab, m->name, m->config.vocab_size);
    if (o->ctx == 0 && *n > m->config.seq_len) {
        fprintf(stderr, "llmchat: the trace holds %d positions, more than %s's context (%d)\n",
                *n, m->name, m->config.seq_len);
        free(seq);
        return NULL;
    }
    return seq;
}

int cli_replay(const app_options *o, const model *m, const tokenizer *tok, trace_reader *r)
{
    const trace_header *h = trace_reader_header(r);
    int n;
    const step_record **seq = replayable(o, m, r, &n);
    if (!seq)
        return 1;
    engine_options eo;
    session_engine_options(o, &eo);
    eo.capture_attention = o->trace_attn;
    engine *e;
    llm_err err;
    if (engine_new(m, tok, &eo, &e, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        free(seq);
        return 1;
    }
    trace_writer *tw = NULL;
    int rc = session_open_trace(o, m, tok, e, &tw);
    if (rc != 0)
        goto out;
    printf("%s %s: %d positions, traced with %s (%s weights)\n",
           o->compare ? "comparing" : "replaying", o->replay_path, n,
           h->model_name ? h->model_name : "an unnamed model", h->weights ? h->weights : "?");
    printf("now: %s (%s weights, %s KV cache, %s kernels)\n", m->name,
           model_weights_option(m), engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0",
           kernels_isa_name(kernels_init(o->isa)));
    if (o->compare)
        printf("\n  pos  phase   token           trace top-1            new top-1              KL\n");
    printer pr = {o, r, tok};
    replay_summary s;
    llm_status st = replay_run(e, seq, n, print_position, &pr, &s, &err);
    engine_finish(e);
    if (st != LLM_OK) {
        fflush(stdout);
        fprintf(stderr, "llmchat: replay stopped after %d positions: %s\n", s.positions,
                err.text);
        rc = 1;
    } else {
        rc = print_summary(&pr, &s);
    }
out:
    if (session_close_trace(tw) != 0)
        rc = 1;
    engine_free(e);
    free(seq);
    return rc;
}
