/* remote_generate.c — `--server URL -m generate`: the prompt continued by a served
 * model, streamed as it arrives: the prompt, then the continuation, then a newline, as
 * -m generate prints a local model's; with --json one JSON line per token (its id, its
 * bytes, its log-probability and the server's alternatives) and a last line with how
 * the reply ended and its timings. The server, the model and the speed are said on
 * stderr. Ctrl-C cancels the request. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "remote_connect.h"
#include "signals.h"
#include "textfmt.h"
#include "std_streams.h"

typedef struct {
    bool json;
    textfmt_stream ts;
    int n;
} printer;

static void put_number(float x)
{
    if (isnan(x))
        fputs("null", stdout);
    else
        printf("%.9g", (double)x); /* round-trips a float */
}

/* The piece as a JSON string (json_write_string keeps bytes that are not UTF-8). */
static void put_piece(const char *piece, size_t n)
{
    json_write_bytes(stdout, piece, n); /* a NUL byte in a piece too */
}

static bool on_token(void *user, const remote_token *t)
{
    printer *p = user;
    if (p->json) {
        printf("{\"i\":%d,\"id\":%d,\"piece\":", p->n, t->id);
        put_piece(t->piece, t->piece_len);
        fputs(",\"logprob\":", stdout);
        put_number(t->logprob);
        fputs(",\"top\":[", stdout);
        for (int k = 0; k < t->n_top; k++) {
            printf("%s[%d,", k ? "," : "", t->top[k].id);
            put_piece(t->top[k].piece, t->top[k].piece_len);
            fputc(',', stdout);
            put_number(t->top[k].logprob);
            fputc(']', stdout);
        }
        fputs("]}\n", stdout);
    } else {
        char safe[4 * REMOTE_PIECE_MAX + 16];
        size_t m = textfmt_stream_put(&p->ts, t->piece, t->piece_len, safe, sizeof safe);
        fwrite(safe, 1, m, stdout);
    }
    p->n++;
    return std_streams_flush(); /* false: nowhere to write to, the request stops */
}

int cli_remote_generate(const app_options *o)
{
    signals_install_sigint();
    char *text = session_read_input(o);
    if (!text)
        return 1;
    remote *r = remote_connect(o, o->server_url);
    if (!r) {
        free(text);
        return 1;
    }
    const remote_info *in = remote_describe(r);
    char where[512];
    remote_connect_describe(r, where, sizeof where);
    fprintf(stderr, "server: %s\n", where);

    int rc = 0, *ids = NULL, n = 0;
    llm_err err;
    remote_request q = {.text = text, .top_n = 10, .sampler = o->sampler};
    q.max_tokens = o->steps < 0 ? GENERATE_STEPS_DEFAULT : o->steps;
    if (in->tokenizes && in->api != REMOTE_OLLAMA) { /* the prompt goes as the server's ids */
        if (remote_tokenize(r, text, true, &ids, &n, &err) != LLM_OK) {
            fprintf(stderr, "llmchat: %s\n", err.text);
            rc = 1;
            goto out;
        }
        q.prompt = ids;
        q.n_prompt = n;
    }
    printer p = {.json = o->json};
    if (!p.json) {
        char safe[4096];
        size_t len = strlen(text);
        for (size_t at = 0; at < len; at += 1024) {
            size_t part = len - at < 1024 ? len - at : 1024;
            size_t m = textfmt_stream_put(&p.ts, text + at, part, safe, sizeof safe);
            fwrite(safe, 1, m, stdout);
        }
        fflush(stdout);
    }
    remote_result res;
    llm_status st = remote_complete(r, &q, on_token, &p, &res, &err);
    bool interrupted = st == LLM_ERR_STOPPED && signals_interrupted;
    if (!p.json)
        putchar('\n');
    if (p.json && (st == LLM_OK || interrupted)) {
        printf("{\"stop\":");
        json_write_string(stdout, interrupted ? "interrupted" : res.stop);
        printf(",\"prompt_tokens\":%d,\"generated\":%d,\"first_token_ms\":%.1f,\"total_ms\":%.1f}\n",
               res.prompt_tokens ? res.prompt_tokens : n, res.generated, res.first_token_ms,
               res.total_ms);
    }
    fflush(stdout);
    if (st != LLM_OK && !interrupted) {
        if (!ferror(stdout)) /* else main says why */
            fprintf(stderr, "llmchat: %s\n", err.text);
        rc = 1;
    }
    double gen_s = (res.total_ms - res.first_token_ms) / 1e3;
    if (rc == 0 || res.generated > 0)
        fprintf(stderr, "prompt: %d tok; generated: %d tok, first after %.0f ms, %.1f tok/s%s%s%s\n",
            res.prompt_tokens ? res.prompt_tokens : n, res.generated, res.first_token_ms,
            res.generated > 1 && gen_s > 0 ? (res.generated - 1) / gen_s : 0.0,
            interrupted ? " (interrupted)" : "", res.stop[0] && !interrupted ? "; stop: " : "",
            interrupted ? "" : res.stop);
out:
    free(ids);
    free(text);
    remote_close(r);
    return rc;
}
