/* trace_order.c — the record in force at each position of a trace (trace_order.h).
 *
 * First reads the entries as llmchat writes them (the rewind rule), noting the first
 * entry the writer could not have written there: a position more than one past the
 * one before it (unless unreadable lines between could have held the ones skipped), or
 * a position other than 0 written again with another token. Such a trace is read by
 * position instead, where a position may hold one record (and copies of it) only. */
#include "trace_order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trace_order_free(trace_order *o)
{
    if (!o)
        return;
    free(o->at);
    o->at = NULL;
}

/* The rewind rule over e in file order, into o->at (all -1 on entry). Returns false,
 * with o->disorder, at the first entry out of the writer's order. */
static bool by_rewinds(const trace_order_entry *e, int count, trace_order *o)
{
    int len = 0;
    for (int i = 0; i < count; i++) {
        int p = e[i].pos;
        int reach = (i > 0 ? e[i - 1].pos + 1 : 0) + e[i].skipped_before;
        if (p > reach) {
            if (i > 0)
                snprintf(o->disorder, sizeof o->disorder, "line %d: position %d follows position %d",
                         e[i].line, p, e[i - 1].pos);
            else
                snprintf(o->disorder, sizeof o->disorder, "line %d: the first record is of position %d",
                         e[i].line, p);
            return false;
        }
        int cur = p < len ? o->at[p] : -1;
        if (cur >= 0 && e[cur].hash == e[i].hash) {
            o->copies++; /* the same line again: changes nothing */
            continue;
        }
        if (cur >= 0 && p > 0 && e[cur].token != e[i].token && e[i].skipped_before == 0) {
            snprintf(o->disorder, sizeof o->disorder,
                     "line %d: position %d is written again with token %d where line %d has %d, "
                     "which a rewind never does", e[i].line, p, e[i].token, e[cur].line, e[cur].token);
            return false;
        }
        for (int q = p; q < len; q++)
            if (o->at[q] >= 0) {
                o->replaced++;
                o->at[q] = -1;
            }
        o->at[p] = i;
        len = p + 1;
    }
    o->n = len;
    return true;
}

/* Every position to its one record (copies of it ignored), whatever the file order. */
static llm_status by_position(const trace_order_entry *e, int count, int n, trace_order *o,
                              llm_err *err)
{
    for (int p = 0; p < n; p++)
        o->at[p] = -1;
    o->copies = o->replaced = 0;
    for (int i = 0; i < count; i++) {
        int k = o->at[e[i].pos];
        if (k < 0)
            o->at[e[i].pos] = i;
        else if (e[k].hash == e[i].hash)
            o->copies++;
        else
            return llm_fail(err, LLM_ERR_FORMAT,
                            "lines %d and %d both hold position %d, with different records, and "
                            "the records are not in the order llmchat writes them (%s): which "
                            "one to replay cannot be told", e[k].line, e[i].line, e[i].pos,
                            o->disorder);
    }
    o->n = n;
    /* records in ascending order with positions missing read the same either way */
    for (int i = 1; i < count && !o->by_position; i++)
        o->by_position = e[i].pos < e[i - 1].pos;
    if (!o->by_position)
        o->disorder[0] = '\0';
    return LLM_OK;
}

llm_status trace_order_build(const trace_order_entry *e, int count, trace_order *out,
                             llm_err *err)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    for (int i = 0; i < count; i++)
        if (e[i].pos + 1 > n)
            n = e[i].pos + 1;
    out->at = malloc(sizeof *out->at * (size_t)(n > 0 ? n : 1));
    if (!out->at)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory ordering the trace");
    for (int p = 0; p < n; p++)
        out->at[p] = -1;
    if (!by_rewinds(e, count, out)) {
        llm_status st = by_position(e, count, n, out, err);
        if (st != LLM_OK) {
            trace_order_free(out);
            return st;
        }
    }
    for (int p = 0; p < out->n; p++)
        out->held += out->at[p] >= 0;
    return LLM_OK;
}
