/* test_tui_source.c — the panes' source over a trace read back (llmchat --view): the
 * final sequence after a rewind, records and lenses by position, out-of-range
 * positions, pieces from the trace's vocabulary (control tokens without their
 * padding, unknown ids as nothing), no live engine (and so no attribution); the
 * attribution view's targets of a record. Linked without curses. */
#include <string.h>

#include "testutil.h"
#include "trace_read.h"
#include "tui/source.h"

#define HEADER \
    "{\"llmchat_trace\":1,\"model\":{\"n_layers\":2,\"n_heads\":1,\"dim\":8,\"vocab_size\":6}," \
    "\"vocab\":[\"<unk>\",\"\\n<s>\\n\",\"\\n</s>\\n\",\"<0x0A>\",\" the\",\"cat\"]}\n"
#define LENS "\"lens\":[{\"top\":[[4,0.6],[5,0.3]],\"next_rank\":2,\"next_prob\":0.3}," \
             "{\"top\":[[5,0.9]],\"next_rank\":1,\"next_prob\":0.9}]"

static const char *trace_text =
    HEADER
    "{\"pos\":0,\"token\":1,\"phase\":\"prompt\",\"next\":4,\"top\":[[4,2,0.6]]}\n"
    "{\"pos\":1,\"token\":4,\"phase\":\"prompt\",\"next\":4,\"top\":[[4,2,0.6]]}\n"
    "{\"pos\":2,\"token\":4,\"phase\":\"gen\",\"next\":2,\"top\":[[2,2,0.6]]}\n"
    /* a rewind to pos 1: it is written again with another next, pos 2 is forgotten */
    "{\"pos\":1,\"token\":4,\"phase\":\"prompt\",\"next\":5,\"top\":[[4,2,0.6]]," LENS "}\n"
    "{\"pos\":2,\"token\":5,\"pha"; /* cut short */

START_TEST(test_source_over_trace)
{
    trace_reader *r;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(trace_text, strlen(trace_text), &r, &err), LLM_OK);
    const step_record **seq;
    int n = trace_reader_final(r, &seq);
    ck_assert_int_eq(n, 2);
    int tokens[2] = {seq[0]->token, seq[1]->token};
    tui_source s = {.seq = seq, .n = n, .tokens = tokens, .cfg = &trace_reader_header(r)->config, .trace = r};

    ck_assert(!source_live(&s));
    ck_assert_ptr_null(source_sampler(&s));
    ck_assert_int_eq(source_count(&s), 2);
    ck_assert_int_eq(source_record(&s, 1)->next, 5); /* the rewritten record */
    ck_assert_ptr_null(source_record(&s, 2));
    ck_assert_ptr_null(source_record(&s, -1));
    ck_assert_int_eq(source_tokens(&s)[1], 4);
    ck_assert_ptr_null(source_lens(&s, 0));
    const step_lens_layer *L = source_lens(&s, 1);
    ck_assert_ptr_nonnull(L);
    ck_assert_int_eq(L[0].id[0], 4);
    ck_assert_int_eq(L[1].id[0], 5);
    ck_assert_int_eq(L[0].next_rank, 2);
    ck_assert_ptr_null(source_lens(&s, 7));

    char buf[64];
    source_token(&s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "<s>");
    source_token(&s, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "</s>");
    source_token(&s, 4, buf, sizeof buf);
    ck_assert_str_eq(buf, "\xe2\x90\xa3the"); /* "␣the" */
    source_token(&s, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "<0x0A>");
    source_token(&s, 99, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    source_token(&s, -1, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    free(seq);
    trace_reader_free(r);
}
END_TEST

START_TEST(test_control_pieces)
{
    ck_assert(source_piece_is_control("\n<s>\n"));
    ck_assert(source_piece_is_control("<|im_start|>"));
    ck_assert(!source_piece_is_control(" <"));
    ck_assert(!source_piece_is_control("<>"));
    ck_assert(!source_piece_is_control(" the"));
    ck_assert(!source_piece_is_control(""));
}
END_TEST

/* The attribution's targets: the token that came next first (the top one while none
 * has), then the other candidates by rank, round and round both ways; a trace computes
 * no attribution. */
START_TEST(test_attribution_targets)
{
    step_record r = {.next = 7, .n_top = 3};
    r.top[0].id = 3;
    r.top[1].id = 7;
    r.top[2].id = 9;
    int id, rank;
    ck_assert_int_eq(source_attribution_target(&r, 0, &id, &rank), 3);
    ck_assert_int_eq(id, 7);
    ck_assert_int_eq(rank, 2);
    source_attribution_target(&r, 1, &id, &rank);
    ck_assert_int_eq(id, 3);
    ck_assert_int_eq(rank, 1);
    source_attribution_target(&r, 2, &id, &rank);
    ck_assert_int_eq(id, 9);
    ck_assert_int_eq(rank, 3);
    source_attribution_target(&r, 3, &id, &rank); /* round again */
    ck_assert_int_eq(id, 7);
    source_attribution_target(&r, -1, &id, &rank); /* T from the first: the last */
    ck_assert_int_eq(id, 9);
    r.next = 42; /* not among the candidates */
    ck_assert_int_eq(source_attribution_target(&r, 0, &id, &rank), 4);
    ck_assert_int_eq(id, 42);
    ck_assert_int_eq(rank, 0);
    r.next = -1; /* the newest position: the top candidate first */
    ck_assert_int_eq(source_attribution_target(&r, 0, &id, &rank), 3);
    ck_assert_int_eq(id, 3);
    ck_assert_int_eq(rank, 1);
    r.n_top = 0;
    ck_assert_int_eq(source_attribution_target(&r, 0, &id, &rank), 0);
    ck_assert_int_eq(id, -1);
    tui_source trace = {.n = 0};
    ck_assert_ptr_null(source_attribution(&trace, 0, 3));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tui_source");
    TCase *tc = tcase_create("trace");
    tcase_add_test(tc, test_source_over_trace);
    tcase_add_test(tc, test_control_pieces);
    tcase_add_test(tc, test_attribution_targets);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
