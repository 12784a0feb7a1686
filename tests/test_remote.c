/* test_remote.c — what the served-model client computes without a network: the event
 * stream split at every possible piece boundary (server-sent events with comments,
 * several data lines, CRLF, event names; JSON Lines), an event above the limit
 * refused, and the comparison of a local distribution with a server's top k (equal
 * distributions give KL 0, a hand-computed KL, the top-1 disagreement, the largest
 * difference, duplicates and ids outside the vocabulary left out), and the step record
 * a served token makes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_stream.h"
#include "remote_compare.h"
#include "testutil.h"

typedef struct {
    char events[16][256];
    char names[16][64];
    int n;
    int stop_after; /* 0: never */
} seen;

static bool on_event(void *user, const char *event, const char *data, size_t n)
{
    seen *s = user;
    ck_assert_uint_eq(strlen(data), n);
    ck_assert_int_lt(s->n, 16);
    snprintf(s->events[s->n], sizeof s->events[0], "%s", data);
    snprintf(s->names[s->n], sizeof s->names[0], "%s", event);
    s->n++;
    return s->stop_after == 0 || s->n < s->stop_after;
}

/* Feeds text in pieces of every size from 1 to its length: the events never depend on
 * where the network cut the bytes. */
static void split_every_way(event_stream_kind kind, const char *text, const char *const *want,
                            const char *const *names, int n_want)
{
    size_t len = strlen(text);
    for (size_t piece = 1; piece <= len; piece++) {
        seen s = {0};
        event_stream es;
        event_stream_init(&es, kind, on_event, &s);
        for (size_t at = 0; at < len; at += piece)
            ck_assert(event_stream_feed(&es, text + at, at + piece <= len ? piece : len - at));
        ck_assert(event_stream_end(&es));
        event_stream_free(&es);
        ck_assert_msg(s.n == n_want, "pieces of %zu: %d events, want %d", piece, s.n, n_want);
        for (int i = 0; i < n_want; i++) {
            ck_assert_str_eq(s.events[i], want[i]);
            if (names)
                ck_assert_str_eq(s.names[i], names[i]);
        }
    }
}

START_TEST(test_sse)
{
    const char *text = ": keep-alive\n"
                       "data: {\"a\":1}\n\n"
                       "data:{\"b\":2}\r\n\r\n"
                       "event: error\n"
                       "data: line one\n"
                       "data: line two\n"
                       "\n"
                       "id: 7\n\n" /* an event with no data is no event */
                       "data: [DONE]";  /* the body ends without the blank line */
    const char *want[] = {"{\"a\":1}", "{\"b\":2}", "line one\nline two", "[DONE]"};
    const char *names[] = {"", "", "error", ""};
    split_every_way(EVENT_STREAM_SSE, text, want, names, 4);
}
END_TEST

START_TEST(test_lines)
{
    const char *text = "{\"response\":\"a\"}\n\n  \n{\"response\":\"b\"}\r\n{\"done\":true}";
    const char *want[] = {"{\"response\":\"a\"}", "{\"response\":\"b\"}", "{\"done\":true}"};
    split_every_way(EVENT_STREAM_LINES, text, want, NULL, 3);
}
END_TEST

START_TEST(test_stop_and_limit)
{
    seen s = {.stop_after = 1};
    event_stream es;
    event_stream_init(&es, EVENT_STREAM_SSE, on_event, &s);
    ck_assert(!event_stream_feed(&es, "data: 1\n\ndata: 2\n\n", 18));
    ck_assert_int_eq(s.n, 1);
    ck_assert(!event_stream_feed(&es, "data: 3\n\n", 9)); /* stopped streams stay stopped */
    event_stream_free(&es);

    /* an event that never ends is refused once it passes the limit */
    seen s2 = {0};
    event_stream_init(&es, EVENT_STREAM_LINES, on_event, &s2);
    char *chunk = malloc(1 << 20);
    memset(chunk, 'x', 1 << 20);
    bool ok = true;
    for (int i = 0; i < 20 && ok; i++)
        ok = event_stream_feed(&es, chunk, 1 << 20);
    ck_assert(!ok);
    ck_assert(es.too_long);
    ck_assert_int_eq(s2.n, 0);
    free(chunk);
    event_stream_free(&es);
}
END_TEST

/* A server token whose top k are the k most probable of the softmax of logits. */
static void token_from(const float *logits, int n, int k, int chosen, remote_token *t)
{
    memset(t, 0, sizeof *t);
    /* the maximum as remote_compare.c finds it: gcc 12's AArch64 vectorizer fails on
       an fmax reduction here (an internal compiler error) */
    double m = logits[0], z = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > m)
            m = logits[i];
    for (int i = 0; i < n; i++)
        z += exp((double)logits[i] - m);
    bool used[64] = {0};
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!used[i] && (best < 0 || logits[i] > logits[best]))
                best = i;
        used[best] = true;
        t->top[j].id = best;
        t->top[j].logprob = (float)(logits[best] - m - log(z));
    }
    t->n_top = k;
    t->id = chosen;
    t->logprob = (float)(logits[chosen] - m - log(z));
}

START_TEST(test_compare_equal)
{
    float logits[8] = {1.0f, 3.0f, -2.0f, 0.5f, 2.5f, -1.0f, 0.0f, 1.5f};
    remote_token t;
    token_from(logits, 8, 4, 1, &t);
    remote_comparison c;
    ck_assert(remote_compare(logits, 8, &t, 5, &c));
    ck_assert_int_eq(c.pos, 5);
    ck_assert_int_eq(c.token, 1);
    ck_assert_float_lt(c.kl, 1e-6f);
    ck_assert(c.top1_agree);
    ck_assert_int_eq(c.local_top1, 1);
    ck_assert_float_lt(fabsf(c.p_server - c.p_local), 1e-6f);
    ck_assert_float_lt(fabsf(c.diff_server - c.diff_local), 1e-6f);
}
END_TEST

START_TEST(test_compare_differs)
{
    /* local: uniform over 4 tokens; server: top 2 say 0.5 and 0.3 for ids 2 and 0 */
    float logits[4] = {0, 0, 0, 0};
    remote_token t = {.id = 2, .logprob = logf(0.5f), .n_top = 2};
    t.top[0].id = 2;
    t.top[0].logprob = logf(0.5f);
    t.top[1].id = 0;
    t.top[1].logprob = logf(0.3f);
    remote_comparison c;
    ck_assert(remote_compare(logits, 4, &t, 0, &c));
    /* KL = .5 ln(.5/.25) + .3 ln(.3/.25) + .2 ln(.2/.5) */
    double want = 0.5 * log(2.0) + 0.3 * log(1.2) + 0.2 * log(0.4);
    ck_assert_double_lt(fabs(c.kl - want), 1e-5);
    ck_assert_int_eq(c.server_top1, 2);
    ck_assert_int_eq(c.local_top1, 0); /* ties: the first */
    ck_assert(!c.top1_agree);
    ck_assert_int_eq(c.diff_id, 2);
    ck_assert_float_lt(fabsf(c.diff_server - 0.5f), 1e-6f);
    ck_assert_float_lt(fabsf(c.diff_local - 0.25f), 1e-6f);

    /* a duplicate alternative and one outside the vocabulary change nothing */
    t.top[2] = t.top[1];
    t.top[3].id = 99;
    t.top[3].logprob = logf(0.1f);
    t.n_top = 4;
    remote_comparison c2;
    ck_assert(remote_compare(logits, 4, &t, 0, &c2));
    ck_assert_float_eq(c2.kl, c.kl);

    /* a token without an id cannot be compared */
    t.id = -1;
    ck_assert(!remote_compare(logits, 4, &t, 0, &c2));
}
END_TEST

START_TEST(test_record)
{
    remote_token t = {.id = 7, .logprob = logf(0.25f), .n_top = 3};
    int ids[3] = {3, 7, 9};
    float p[3] = {0.5f, 0.25f, 0.125f};
    for (int i = 0; i < 3; i++) {
        t.top[i].id = ids[i];
        t.top[i].logprob = logf(p[i]);
    }
    step_record r;
    remote_record(&t, 11, 42, STEP_GEN, &r);
    ck_assert_int_eq(r.pos, 11);
    ck_assert_int_eq(r.token, 42);
    ck_assert_int_eq(r.phase, STEP_GEN);
    ck_assert_int_eq(r.next, 7);
    ck_assert_int_eq(r.next_rank, 2);
    ck_assert_float_lt(fabsf(r.next_prob - 0.25f), 1e-6f);
    ck_assert_int_eq(r.n_top, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(r.top[i].id, ids[i]);
        ck_assert_float_lt(fabsf(r.top[i].prob - p[i]), 1e-6f);
    }
    ck_assert(isnan(r.entropy));
    ck_assert(!r.sampled);

    t.id = 5; /* not among the alternatives: rank unknown */
    remote_record(&t, 0, 1, STEP_GEN, &r);
    ck_assert_int_eq(r.next_rank, 0);
}
END_TEST

static Suite *remote_suite(void)
{
    Suite *s = suite_create("remote");
    TCase *stream = tcase_create("event_stream");
    tcase_add_test(stream, test_sse);
    tcase_add_test(stream, test_lines);
    tcase_add_test(stream, test_stop_and_limit);
    suite_add_tcase(s, stream);
    TCase *cmp = tcase_create("compare");
    tcase_add_test(cmp, test_compare_equal);
    tcase_add_test(cmp, test_compare_differs);
    tcase_add_test(cmp, test_record);
    suite_add_tcase(s, cmp);
    return s;
}

TEST_MAIN(remote_suite)
