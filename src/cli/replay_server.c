/* replay_server.c — `llmchat [MODEL] --replay TRACE --server URL`: the trace's token
 * sequence scored by a served model and run again by the local one (the trace's
 * model, or MODEL), each position compared as --compare-server compares
 * (remote_compare.h: KL(server || local) over the server's top 10 and the rest, the
 * top-1 agreement, the token whose probability differs most), printed by
 * compare_report.c. The server scores each token of the sequence after the ones before
 * it (remote_score.h: one request a position on llama-server); the local model runs
 * the sequence as --replay does (replay.h: each position on the kernels its record
 * ran on). A trace whose run had control vectors or knocked-out heads or experts is
 * refused: the server runs none. Exit 0 when the comparison ran, whatever it found; 1
 * when it could not run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare_report.h"
#include "remote_compare.h"
#include "remote_connect.h"
#include "remote_score.h"
#include "replay.h"
#include "signals.h"
#include "trace_read.h"

enum { REPLAY_SERVER_TOP = 10 };

/* What the comparison reads of the server's token at a position (a remote_token
 * holds pieces too: 17 KB a position). */
typedef struct {
    int id;
    float logprob;
    int n_top;
    struct {
        int id;
        float logprob;
    } top[REPLAY_SERVER_TOP];
} score;

typedef struct {
    score *at;  /* at[p]: the server's score of the token at p (p >= 1) */
    int n;      /* positions of the sequence */
} scores;

static bool keep_score(void *user, int pos, const remote_token *t)
{
    score *s = &((scores *)user)->at[pos];
    s->id = t->id;
    s->logprob = t->logprob;
    s->n_top = t->n_top < REPLAY_SERVER_TOP ? t->n_top : REPLAY_SERVER_TOP;
    for (int k = 0; k < s->n_top; k++) {
        s->top[k].id = t->top[k].id;
        s->top[k].logprob = t->top[k].logprob;
    }
    return true;
}

typedef struct {
    engine *e;
    const scores *sc;
    int vocab;
    float *logits;
    remote_token tok;   /* the score being compared, as remote_compare takes it */
    remote_comparison *cmp;
    int n_cmp;
    bool failed;
} comparer;

/* After position pos ran: its logits against the server's token at pos + 1. */
static void compare_after(void *user, const replay_position *p)
{
    comparer *c = user;
    if (c->failed || p->pos + 1 >= c->sc->n)
        return;
    const float *l = engine_logits(c->e);
    if (p->pos < engine_pos(c->e) - 1)
        l = engine_logits_of(c->e, p->pos, c->logits);
    if (!l) {
        c->failed = true;
        return;
    }
    const score *s = &c->sc->at[p->pos + 1];
    c->tok.id = s->id;
    c->tok.logprob = s->logprob;
    c->tok.n_top = s->n_top;
    for (int k = 0; k < s->n_top; k++) {
        c->tok.top[k].id = s->top[k].id;
        c->tok.top[k].logprob = s->top[k].logprob;
    }
    if (remote_compare(l, c->vocab, &c->tok, p->pos, &c->cmp[c->n_cmp]))
        c->n_cmp++;
}

static bool intervened(const intervention *iv)
{
    return iv && (iv->n_vectors > 0 || iv->n_heads_out > 0 || iv->n_experts_out > 0 ||
                  iv->n_experts_forced > 0);
}

/* The sequence's ids (a position without a record: the one before's choice), one more
 * when the last record chose a token; NULL with a message printed when a token is not
 * known or the run changed the model. */
static int *sequence_ids(const app_options *o, const step_record *const *seq, int n, int *out_n,
                         int *prompt_tokens)
{
    int *ids = malloc(sizeof(int) * ((size_t)n + 1));
    if (!ids) {
        fprintf(stderr, "llmchat: out of memory\n");
        return NULL;
    }
    *prompt_tokens = 0;
    for (int p = 0; p < n; p++) {
        if (seq[p]) {
            ids[p] = seq[p]->token;
            *prompt_tokens += seq[p]->phase == STEP_PROMPT;
            if (intervened(seq[p]->intervention)) {
                fprintf(stderr, "llmchat: %s: position %d ran with control vectors or knocked-out "
                                "heads or experts, which the server does not apply: replay it "
                                "without --server\n", o->replay_path, p);
                free(ids);
                return NULL;
            }
        } else if (p > 0 && seq[p - 1] && seq[p - 1]->next >= 0) {
            ids[p] = seq[p - 1]->next;
        } else {
            fprintf(stderr, "llmchat: %s: the trace does not say what position %d holds\n",
                    o->replay_path, p);
            free(ids);
            return NULL;
        }
    }
    *out_n = n;
    if (seq[n - 1] && seq[n - 1]->next >= 0)
        ids[(*out_n)++] = seq[n - 1]->next;
    return ids;
}

int cli_replay_server(session *sess)
{
    const app_options *o = sess->o;
    trace_reader *tr = sess->replay;
    engine *e = sess->e;
    const model_config *cfg = &engine_model(e)->config;
    signals_install_sigint(); /* Ctrl-C cancels the server's requests */
    if (trace_reader_patch(tr)) {
        fprintf(stderr, "llmchat: %s is a patching run's trace (a grid, not a token sequence): "
                        "--server does not replay it\n", o->replay_path);
        return 1;
    }
    const step_record **seq = NULL;
    trace_sequence_info info;
    llm_err err;
    if (trace_reader_sequence(tr, &seq, &info, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, err.text);
        return 1;
    }
    int rc = 1, n = 0, prompt_tokens = 0, *ids = NULL;
    scores sc = {0};
    comparer c = {0};
    remote *r = NULL;
    if (info.n == 0) {
        fprintf(stderr, "llmchat: %s holds no positions to replay\n", o->replay_path);
        goto out;
    }
    ids = sequence_ids(o, seq, info.n, &n, &prompt_tokens);
    if (!ids)
        goto out;
    if (n < 2) {
        fprintf(stderr, "llmchat: %s holds one token: nothing for the server to score\n",
                o->replay_path);
        goto out;
    }
    for (int p = 0; p < n; p++)
        if (ids[p] < 0 || ids[p] >= cfg->vocab_size) {
            fprintf(stderr, "llmchat: %s: position %d holds token %d, outside the model's "
                            "vocabulary of %d\n", o->replay_path, p, ids[p], cfg->vocab_size);
            goto out;
        }
    if (info.n > engine_ctx(e)) {
        fprintf(stderr, "llmchat: %s holds %d positions, more than the context (%d; see -c)\n",
                o->replay_path, info.n, engine_ctx(e));
        goto out;
    }
    r = remote_connect(o, o->server_url);
    if (!r)
        goto out;
    const remote_info *in = remote_describe(r);
    char where[512];
    remote_connect_describe(r, where, sizeof where);
    if (!remote_score_supported(r, &err)) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        goto out;
    }
    if (in->n_vocab > 0 && in->n_vocab != cfg->vocab_size) {
        fprintf(stderr, "llmchat: the server's vocabulary has %d tokens and the model's %d: they "
                        "are not the same model (%s)\n", in->n_vocab, cfg->vocab_size, where);
        goto out;
    }
    if (in->n_ctx > 0 && n + (in->api == REMOTE_OPENAI) > in->n_ctx) {
        fprintf(stderr, "llmchat: %s holds %d tokens, more than the server's context of %d\n",
                o->replay_path, n, in->n_ctx);
        goto out;
    }
    sc.at = calloc((size_t)n, sizeof *sc.at);
    sc.n = n;
    c = (comparer){.e = e, .sc = &sc, .vocab = cfg->vocab_size};
    c.logits = malloc((size_t)cfg->vocab_size * sizeof *c.logits);
    c.cmp = calloc((size_t)n, sizeof *c.cmp);
    if (!sc.at || !c.logits || !c.cmp) {
        fprintf(stderr, "llmchat: out of memory\n");
        goto out;
    }
    llm_status st = remote_score(r, ids, n, 1, REPLAY_SERVER_TOP, keep_score, &sc, &err);
    if (st != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", st == LLM_ERR_STOPPED && signals_interrupted
                                             ? "interrupted" : err.text);
        goto out;
    }
    replay_summary rs;
    const trace_header *h = trace_reader_header(tr);
    st = replay_run(e, seq, info.n, h->has_batch, compare_after, &c, &rs, &err);
    if (rs.steer_notice[0])
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path, rs.steer_notice);
    if (st != LLM_OK || c.failed || rs.gap >= 0) {
        fprintf(stderr, "llmchat: %s: %s\n", o->replay_path,
                st != LLM_OK ? err.text
                : c.failed   ? "out of memory for a position's logits"
                             : "the replay ended before the sequence did");
        goto out;
    }
    if (c.n_cmp == 0) {
        fprintf(stderr, "llmchat: %s: no position could be compared\n", o->replay_path);
        goto out;
    }
    compare_report report = {.server = where, .info = in, .model = engine_model(e)->path,
                             .trace = o->replay_path, .prompt_tokens = prompt_tokens,
                             .top = REPLAY_SERVER_TOP, .tok = sess->tok, .json = o->json};
    compare_report_print(&report, c.cmp, c.n_cmp);
    rc = 0;
out:
    free(c.cmp);
    free(c.logits);
    free(sc.at);
    free(ids);
    free(seq);
    remote_close(r);
    return rc;
}
