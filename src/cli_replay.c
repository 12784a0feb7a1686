/* replay_report.c — `--replay TRACE [--compare]`: runs a model over a trace's tokens.
 *
 * Plain replay checks that the model makes the trace's choices again (each sampled
 * token decided with the trace's settings and draw) and says where it does not.
 * --compare prints, per position, the trace's and the new model's top-1 and the KL
 * divergence between their distributions, then the top-1 agreement and the mean and
 * largest KL. The work is replay.c's; this file reads the trace and prints. Without
 * MODEL it runs the trace's model, with the trace's weight and KV cache types unless
 * the command line names them; a MODEL given runs with that file's own defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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
    if (!o->weights_given && h->weights)
        o->weights = strcmp(h->weights, "f32") == 0 ? TENSOR_F32 : TENSOR_Q8_0;
    if (o->kv_cache == TRANSFORMER_KV_AUTO && h->kv_cache)
        o->kv_cache = strcmp(h->kv_cache, "f32") == 0 ? TRANSFORMER_KV_F32 : TRANSFORMER_KV_Q8_0;
    return 0;
}

typedef struct {
    const app_options *o;
    const trace_reader *r;
    const tokenizer *tok;
} printer;

/* A token's piece, quoted and escaped for one table cell. */
static const char *piece_text(const printer *pr, int id, char *buf, size_t size)
{
    const char *p = trace_reader_piece(pr->r, id);
    if (!p && id >= 0 && id < tokenizer_vocab_size(pr->tok))
        p = tokenizer_piece(pr->tok, id);
    char esc[64];
    textfmt_escape_piece(p ? p : "?", strlen(p ? p : "?"), false, esc, sizeof esc);
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

int cli_replay(const app_options *o, const model *m, const tokenizer *tok, trace_reader *r)
{
    const trace_header *h = trace_reader_header(r);
    const step_record **seq;
    int n = trace_reader_final(r, &seq);
    if (n < 0) {
        fprintf(stderr, "llmchat: out of memory reading %s\n", o->replay_path);
        return 1;
    }
    if (n == 0) {
        fprintf(stderr, "llmchat: %s holds no positions to replay\n", o->replay_path);
        free(seq);
        return 1;
    }
    if (h->n_vocab > 0 && h->n_vocab != m->config.vocab_size)
        fprintf(stderr, "llmchat: warning: the trace's vocabulary has %d tokens, %s has %d\n",
                h->n_vocab, m->name, m->config.vocab_size);
    engine_options eo;
    session_engine_options(o, &eo);
    eo.capture_attention = o->trace_attn;
    if (eo.ctx_len == 0 && n > m->config.seq_len) {
        fprintf(stderr, "llmchat: the trace holds %d positions, more than %s's context (%d)\n",
                n, m->name, m->config.seq_len);
        free(seq);
        return 1;
    }
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
           m->weights == TENSOR_F32 ? "f32" : "q8_0",
           engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0",
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
        goto out;
    }
    char a[80], b[80];
    if (s.filled > 0)
        printf("positions without a record, run from the one before: %d\n", s.filled);
    if (s.gap >= 0)
        printf("the trace does not say what position %d holds: replayed the %d before it\n",
               s.gap, s.gap);
    if (o->compare) {
        printf("\n");
        if (s.first_top1_diff >= 0) {
            const step_record *d = seq[s.first_top1_diff];
            printf("first top-1 difference: position %d (after %s)\n", s.first_top1_diff,
                   piece_text(&pr, d->token, a, sizeof a));
        } else if (s.compared > 0) {
            printf("first top-1 difference: none\n");
        }
        if (s.compared > 0) {
            printf("top-1 agreement: %.2f%% (%d of %d positions)\n",
                   100.0 * s.top1_same / s.compared, s.top1_same, s.compared);
            printf("KL divergence (nats, trace || new, over the trace's candidates and the "
                   "rest): mean %.6f, max %.6f at position %d\n", s.kl_mean, s.kl_max,
                   s.kl_max_pos);
        } else {
            printf("the trace records no candidates to compare (written with -n but no top?)\n");
        }
    }
    if (s.sampled > 0)
        printf("sampled tokens chosen again with the trace's draws: %d of %d\n", s.sampled_same,
               s.sampled);
    if (s.first_choice_diff >= 0) {
        int p = s.first_choice_diff;
        if (!o->compare) {
            fflush(stdout);
            fprintf(stderr, "llmchat: the replay differs from the trace at position %d: the "
                            "trace has %s\n", p, piece_text(&pr, seq[p]->token, b, sizeof b));
            rc = 1;
        } else {
            printf("first different choice: position %d (the trace has %s)\n", p,
                   piece_text(&pr, seq[p]->token, b, sizeof b));
        }
    } else if (!o->compare) {
        printf("reproduced: every position ran, every sampled token was chosen again\n");
    }
out:
    if (session_close_trace(tw) != 0)
        rc = 1;
    engine_free(e);
    free(seq);
    return rc;
}
