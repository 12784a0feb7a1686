/* compare_report.h — the printing of a local model compared with a served one
 * (remote_compare.h), shared by --compare-server (compare_server.c) and --replay TRACE
 * --server (replay_server.c): one row a position and a summary, or with --json one
 * object. */
#ifndef LLMCHAT_COMPARE_REPORT_H
#define LLMCHAT_COMPARE_REPORT_H

#include <stdbool.h>

#include "remote.h"
#include "remote_compare.h"
#include "tokenizer.h"

typedef struct {
    const char *server;      /* the server in one line (remote_connect_describe) */
    const remote_info *info;
    const char *model;       /* the local model's path */
    const char *trace;       /* the trace replayed, or NULL */
    int prompt_tokens;       /* the prompt's tokens (the trace's prompt records) */
    int top;                 /* the server's alternatives asked for a position */
    const tokenizer *tok;    /* the local model's: the pieces shown */
    bool json;
} compare_report;

/* Prints cmp[0..n) (n >= 1) and the summary: top-1 agreement, the mean and largest
 * KL, the largest |dp|, on stdout. */
void compare_report_print(const compare_report *r, const remote_comparison *cmp, int n);

#endif
