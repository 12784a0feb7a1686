/* compare_report.c — a local model compared with a served one, printed (see
 * compare_report.h). */
#include "compare_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "textfmt.h"

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

static void print_json(const compare_report *r, const remote_comparison *cmp, int n, int agree,
                       double kl_mean, int worst_kl, int worst_dp)
{
    const tokenizer *tok = r->tok;
    printf("{\"server\":");
    json_write_string(stdout, r->server);
    printf(",\"api\":");
    json_write_string(stdout, remote_api_name(r->info->api));
    printf(",\"server_model\":");
    json_write_string(stdout, r->info->model);
    printf(",\"model\":");
    json_write_string(stdout, r->model);
    if (r->trace) {
        printf(",\"trace\":");
        json_write_string(stdout, r->trace);
    }
    printf(",\"prompt_tokens\":%d,\"top\":%d,\"positions\":[", r->prompt_tokens, r->top);
    for (int i = 0; i < n; i++) {
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
    printf("],\"summary\":{\"positions\":%d,\"top1_agree\":%d", n, agree);
    json_num("kl_mean", kl_mean);
    json_num("kl_max", cmp[worst_kl].kl);
    printf(",\"kl_max_pos\":%d", cmp[worst_kl].pos);
    json_num("max_dp", fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local));
    printf(",\"max_dp_pos\":%d}}\n", cmp[worst_dp].pos);
}

static void print_table(const compare_report *r, const remote_comparison *cmp, int n, int agree,
                        double kl_mean, int worst_kl, int worst_dp)
{
    const tokenizer *tok = r->tok;
    printf("server: %s\nlocal:  %s\n", r->server, r->model);
    if (r->trace)
        printf("trace:  %s\n", r->trace);
    printf("%5s  %-24s %8s %8s %10s  %-5s %s\n", "pos", "server's token", "server", "local",
           "KL", "top-1", "largest |dp| (server vs local)");
    for (int i = 0; i < n; i++) {
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
           n, agree, n, 100.0 * agree / n, kl_mean, (double)cmp[worst_kl].kl, cmp[worst_kl].pos,
           worst, (double)fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local),
           cmp[worst_dp].pos);
    printf("KL(server || local) over the server's top %d tokens and the rest of the vocabulary "
           "as one: a lower bound of the full KL\n", r->top);
}

void compare_report_print(const compare_report *r, const remote_comparison *cmp, int n)
{
    int agree = 0, worst_kl = 0, worst_dp = 0;
    double kl_sum = 0;
    for (int i = 0; i < n; i++) {
        agree += cmp[i].top1_agree;
        kl_sum += cmp[i].kl;
        if (cmp[i].kl > cmp[worst_kl].kl)
            worst_kl = i;
        if (fabsf(cmp[i].diff_server - cmp[i].diff_local) >
            fabsf(cmp[worst_dp].diff_server - cmp[worst_dp].diff_local))
            worst_dp = i;
    }
    double kl_mean = kl_sum / n;
    if (r->json)
        print_json(r, cmp, n, agree, kl_mean, worst_kl, worst_dp);
    else
        print_table(r, cmp, n, agree, kl_mean, worst_kl, worst_dp);
    fflush(stdout);
}
