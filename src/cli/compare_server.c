/* compare_server.c — `llmchat MODEL --compare-server URL -i TEXT`: is the local model
 * the model the server runs? The prompt, tokenized by MODEL's tokenizer, goes to the
 * server as ids; the server continues it greedily (-n tokens, default 32) with its top
 * 10 alternatives per token; MODEL then runs the prompt and the server's tokens as one
 * batch, and each generated position's distributions are compared
 * (remote_compare.h): the KL divergence over the server's top 10 and the rest, the
 * top-1 agreement, the token whose probability differs most. Printed as a table and a
 * summary, or with --json as one object. Exit 0 when the comparison ran, whatever it
 * found; 1 when it could not run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "remote_compare.h"
#include "remote_connect.h"
#include "signals.h"
#include "textfmt.h"

enum { COMPARE_TOP = 10, COMPARE_STEPS_DEFAULT = 32 };

typedef struct {
    remote_token *toks;
    int n, cap;
} collected;

static bool collect(void *user, const remote_token *t)
{
    collected *c = user;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        remote_token *grown = realloc(c->toks, (size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        c->toks = grown;
        c->cap = cap;
    }
    c->toks[c->n++] = *t;
    return true;
}

/* A token's piece, quoted and made terminal-safe, at most ~24 columns. */
static void shown_piece(const tokenizer *tok, int id, char *out, size_t size)
{
    char piece[TOKENIZER_PIECE_MAX + 1], safe[4 * TOKENIZER_PIECE_MAX + 16];
    size_t n = id >= 0 ? tokenizer_decode(tok, -1, id, piece, sizeof piece) : 0;
    textfmt_stream ts = {0};
    size_t m = textfmt_stream_put(&ts, piece, n, safe, sizeof safe);
    safe[m] = '\0';
    snprintf(out, size, "\"%.22s\"", safe);
}

static void json_piece(const tokenizer *tok, int id)
{
    char piece[TOKENIZER_PIECE_MAX + 1];
    size_t n = id >= 0 ? tokenizer_decode(tok, -1, id, piece, sizeof piece) : 0;
    piece[n] = '\0';
    json_write_string(stdout, piece);
}

/* ,"key":x (null for NaN): a member after the first. */
static void json_num(const char *key, double x)
{
    if (isnan(x))
        printf(",\"%s\":null", key);
    else
        printf(",\"%s\":%.6g", key, x);
}

int cli_compare_server(session *s)
{
    const app_options *o = s->o;
    const tokenizer *tok = s->tok;
    engine *e = s->e;
    const model_config *cfg = &engine_model(e)->config;
    int n_prompt;
    bool bos;
    int *ids = session_encode_prompt(o, tok, &n_prompt, &bos);
    if (!ids)
        return 1;
    int rc = 1, *seq = NULL;
    float *logits = NULL;
    remote_comparison *cmp = NULL;
    collected got = {0};
    llm_err err;
    remote *r = remote_connect(o, o->compare_server);
    if (!r)
        goto out;
    const remote_info *in = remote_describe(r);
    char where[512];
    remote_connect_describe(r, where, sizeof where);
    if (!in->ids) {
        fprintf(stderr, "llmchat: --compare-server needs a server that answers with token ids "
                        "(llama-server, vLLM); %s names tokens by their text\n", where);
        goto out;
    }
    if (in->n_vocab > 0 && in->n_vocab != cfg->vocab_size) {
        fprintf(stderr, "llmchat: the server's vocabulary has %d tokens and the model's %d: they "
                        "are not the same model (%s)\n", in->n_vocab, cfg->vocab_size, where);
        goto out;
    }
    int steps = o->steps < 0 ? COMPARE_STEPS_DEFAULT : o->steps;
    if (steps == 0 || n_prompt + steps > engine_ctx(e))
        steps = engine_ctx(e) - n_prompt;
    if (steps <= 0) {
        fprintf(stderr, "llmchat: the prompt is %d tokens and the context holds %d: no room to "
                        "compare (see -c)\n", n_prompt, engine_ctx(e));
        goto out;
    }
    remote_request q = {.prompt = ids, .n_prompt = n_prompt, .max_tokens = steps,
                        .top_n = COMPARE_TOP, .sampler = o->sampler};
    q.sampler.temperature = 0; /* greedy: the server's choices are its top-1 */
    q.uncached = true;         /* the numbers of one pass, whatever the server ran before */
    remote_result res;
    llm_status st = remote_complete(r, &q, collect, &got, &res, &err);
    if (st != LLM_OK && !(st == LLM_ERR_STOPPED && signals_interrupted && got.n > 0)) {
        fprintf(stderr, "llmchat: %s\n", st == LLM_ERR_STOPPED && !signals_interrupted
                                             ? "out of memory for the server's tokens"
                                             : err.text);
        goto out;
    }
    if (got.n == 0) {
        fprintf(stderr, "llmchat: the server generated no token (stop: %s)\n", res.stop);
        goto out;
    }
    /* MODEL runs the prompt and the server's tokens (all but the last) as one batch */
    seq = malloc((size_t)(n_prompt + got.n) * sizeof *seq);
    logits = malloc((size_t)cfg->vocab_size * sizeof *logits);
    cmp = calloc((size_t)got.n, sizeof *cmp);
    if (!seq || !logits || !cmp) {
        fprintf(stderr, "llmchat: out of memory\n");
        goto out;
    }
    memcpy(seq, ids, (size_t)n_prompt * sizeof *seq);
    for (int i = 0; i < got.n; i++) {
        if (got.toks[i].id < 0 || got.toks[i].id >= cfg->vocab_size) {
            fprintf(stderr, "llmchat: the server's token %d (id %d) is outside the model's "
                            "vocabulary of %d\n", i, got.toks[i].id, cfg->vocab_size);
            goto out;
        }
        seq[n_prompt + i] = got.toks[i].id;
    }
    if (engine_prefill(e, seq, n_prompt + got.n - 1, &err) != LLM_OK) {
        fprintf(stderr, "llmchat: %s\n", err.text);
        goto out;
    }
    int agree = 0, worst_kl = 0, worst_dp = 0;
    double kl_sum = 0;
    for (int i = 0; i < got.n; i++) {
        int pos = n_prompt - 1 + i;
        if (!engine_logits_of(e, pos, logits)) {
            fprintf(stderr, "llmchat: out of memory for position %d's logits\n", pos);
            goto out;
        }
        remote_compare(logits, cfg->vocab_size, &got.toks[i], pos, &cmp[i]);
        agree += cmp[i].top1_agree;
        kl_sum += cmp[i].kl;
        if (cmp[i].kl > cmp[worst_kl].kl)
            worst_kl = i;
        if (fabsf(cmp[i].diff_server - cmp[i].diff_local) >
            fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local))
            worst_dp = i;
    }
    double kl_mean = kl_sum / got.n;
    if (o->json) {
        printf("{\"server\":");
        json_write_string(stdout, where);
        printf(",\"api\":");
        json_write_string(stdout, remote_api_name(in->api));
        printf(",\"server_model\":");
        json_write_string(stdout, in->model);
        printf(",\"model\":");
        json_write_string(stdout, engine_model(e)->path);
        printf(",\"prompt_tokens\":%d,\"top\":%d,\"positions\":[", n_prompt, COMPARE_TOP);
        for (int i = 0; i < got.n; i++) {
            const remote_comparison *c = &cmp[i];
            printf("%s{\"pos\":%d,\"token\":%d,\"piece\":", i ? "," : "", c->pos, c->token);
            json_piece(tok, c->token);
            json_num("p_server", c->p_server);
            json_num("p_local", c->p_local);
            json_num("kl", c->kl);
            printf(",\"top1_agree\":%s,\"server_top1\":%d,\"local_top1\":%d,\"max_dp\":",
                   c->top1_agree ? "true" : "false", c->server_top1, c->local_top1);
            if (c->diff_id < 0) {
                fputs("null", stdout);
            } else {
                printf("{\"id\":%d,\"piece\":", c->diff_id);
                json_piece(tok, c->diff_id);
                json_num("server", c->diff_server);
                json_num("local", c->diff_local);
                putchar('}');
            }
            putchar('}');
        }
        printf("],\"summary\":{\"positions\":%d,\"top1_agree\":%d", got.n, agree);
        json_num("kl_mean", kl_mean);
        json_num("kl_max", cmp[worst_kl].kl);
        printf(",\"kl_max_pos\":%d", cmp[worst_kl].pos);
        json_num("max_dp", fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local));
        printf(",\"max_dp_pos\":%d}}\n", cmp[worst_dp].pos);
    } else {
        printf("server: %s\nlocal:  %s\n", where, engine_model(e)->path);
        printf("%5s  %-24s %8s %8s %10s  %-5s %s\n", "pos", "server's token", "server", "local",
               "KL", "top-1", "largest |dp| (server vs local)");
        for (int i = 0; i < got.n; i++) {
            const remote_comparison *c = &cmp[i];
            char piece[64], other[64], local_top[64];
            shown_piece(tok, c->token, piece, sizeof piece);
            shown_piece(tok, c->diff_id, other, sizeof other);
            shown_piece(tok, c->local_top1, local_top, sizeof local_top);
            printf("%5d  %-24s %8.4f %8.4f %10.3g  %-5s", c->pos, piece, (double)c->p_server,
                   (double)c->p_local, (double)c->kl, c->top1_agree ? "same" : local_top);
            if (c->diff_id >= 0)
                printf(" %s %.4f vs %.4f", other, (double)c->diff_server, (double)c->diff_local);
            putchar('\n');
        }
        char worst[64];
        shown_piece(tok, cmp[worst_kl].token, worst, sizeof worst);
        printf("summary: %d positions; top-1 agreement %d/%d (%.1f%%); KL mean %.3g, max %.3g at "
               "%d (%s); largest |dp| %.4f at %d\n",
               got.n, agree, got.n, 100.0 * agree / got.n, kl_mean, (double)cmp[worst_kl].kl,
               cmp[worst_kl].pos, worst,
               (double)fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local),
               cmp[worst_dp].pos);
        printf("KL(server || local) over the server's top %d tokens and the rest of the vocabulary "
               "as one: a lower bound of the full KL\n", COMPARE_TOP);
    }
    fflush(stdout);
    rc = 0;
out:
    free(cmp);
    free(logits);
    free(seq);
    free(got.toks);
    free(ids);
    remote_close(r);
    return rc;
}
