/* test_remote_score.c — the readers of the answers that score a given token sequence
 * (remote_score.h), without a network: llama-server's recorded answer to a forced token
 * (tests/data/remote/llama-server-score: the logprob and alternatives of the unforced
 * distribution, the id checked against the one forced, an answer without
 * completion_probabilities refused), and vLLM's prompt_logprobs (the hand-written
 * tests/data/remote/vllm/v1_completions_prompt_logprobs: each position's token and top
 * k in order; a prompt token ranked below the top k gives its logprob but stays out of
 * the alternatives; a missing entry, a short list and a stop are reported). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote_score.h"
#include "testutil.h"

START_TEST(test_llama_forced)
{
    size_t len;
    char *body = (char *)read_whole_file(data_path("remote/llama-server-score/completion.2"), &len);
    remote_token t;
    llm_err err;
    ck_assert_int_eq(remote_score_read_llama(body, len, 407, &t, &err), LLM_OK);
    ck_assert_int_eq(t.id, 407);
    ck_assert_str_eq(t.piece, " upon");
    ck_assert_float_lt(fabsf(t.logprob - -0.017519459f), 1e-7f);
    ck_assert_int_eq(t.n_top, 1);
    ck_assert_int_eq(t.top[0].id, 407);
    /* another token than the one forced: refused, naming both */
    ck_assert_int_eq(remote_score_read_llama(body, len, 300, &t, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.text, "generated token 407 where token 300 was forced"));
    free(body);

    const char *none = "{\"content\":\" upon\",\"stop\":true}";
    ck_assert_int_eq(remote_score_read_llama(none, strlen(none), 407, &t, &err), LLM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.text, "completion_probabilities"));
    const char *bad = "{\"completion_probabilities\":[";
    ck_assert_int_eq(remote_score_read_llama(bad, strlen(bad), 407, &t, &err), LLM_ERR_FORMAT);
}
END_TEST

typedef struct {
    int pos[8];
    remote_token t[8];
    int n, stop_after; /* 0: never */
} got;

static bool keep(void *user, int pos, const remote_token *t)
{
    got *g = user;
    ck_assert_int_lt(g->n, 8);
    g->pos[g->n] = pos;
    g->t[g->n++] = *t;
    return g->stop_after == 0 || g->n < g->stop_after;
}

static const int story[] = {1, 403, 407, 261, 378};

START_TEST(test_vllm_prompt_logprobs)
{
    size_t len;
    char *body = (char *)read_whole_file(data_path("remote/vllm/v1_completions_prompt_logprobs"), &len);
    got g = {0};
    llm_err err;
    ck_assert_int_eq(remote_score_read_vllm(body, len, story, 5, 1, 3, keep, &g, &err), LLM_OK);
    ck_assert_int_eq(g.n, 4);
    const float want[] = {-0.243787944f, -0.017519459f, -0.012075562f, -0.000719269f};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(g.pos[i], i + 1);
        ck_assert_int_eq(g.t[i].id, story[i + 1]);
        ck_assert_float_lt(fabsf(g.t[i].logprob - want[i]), 1e-7f);
        ck_assert_int_eq(g.t[i].n_top, 3);
        for (int k = 1; k < 3; k++)
            ck_assert_float_le(g.t[i].top[k].logprob, g.t[i].top[k - 1].logprob);
    }
    ck_assert_int_eq(g.t[0].top[1].id, 385);
    ck_assert_str_eq(g.t[0].top[1].piece, " One");
    ck_assert_int_eq(g.t[3].top[2].id, 328);

    /* from position 3, two alternatives */
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(remote_score_read_vllm(body, len, story, 5, 3, 2, keep, &g, &err), LLM_OK);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.pos[0], 3);
    ck_assert_int_eq(g.t[0].n_top, 2);

    /* a stop from the callback */
    memset(&g, 0, sizeof g);
    g.stop_after = 1;
    ck_assert_int_eq(remote_score_read_vllm(body, len, story, 5, 1, 3, keep, &g, &err),
                     LLM_ERR_STOPPED);
    ck_assert_int_eq(g.n, 1);

    /* a sequence that is not the one scored: position 2's token is not in its entry */
    const int other[] = {1, 403, 300, 261, 378};
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(remote_score_read_vllm(body, len, other, 5, 1, 3, keep, &g, &err),
                     LLM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.text, "position 2"));
    ck_assert_int_eq(g.n, 1);

    /* more positions than the answer covers */
    const int longer[] = {1, 403, 407, 261, 378, 432};
    ck_assert_int_eq(remote_score_read_vllm(body, len, longer, 6, 1, 3, keep, &g, &err),
                     LLM_ERR_FORMAT);
    free(body);
}
END_TEST

START_TEST(test_vllm_rank_below_top)
{
    /* the prompt's token 7 ranks 5th: listed first, beside the top 2 */
    const char *body =
        "{\"choices\":[{\"index\":0,\"text\":\"x\",\"prompt_logprobs\":[null,"
        "{\"7\":{\"logprob\":-6.5,\"rank\":5,\"decoded_token\":\"q\"},"
        "\"9\":{\"logprob\":-0.1,\"rank\":1,\"decoded_token\":\"a\"},"
        "\"4\":{\"logprob\":-2.5,\"rank\":2,\"decoded_token\":\"b\"}}]}]}";
    const int ids[] = {1, 7};
    got g = {0};
    llm_err err;
    ck_assert_int_eq(remote_score_read_vllm(body, strlen(body), ids, 2, 1, 2, keep, &g, &err), LLM_OK);
    ck_assert_int_eq(g.n, 1);
    ck_assert_int_eq(g.t[0].id, 7);
    ck_assert_str_eq(g.t[0].piece, "q");
    ck_assert_float_eq(g.t[0].logprob, -6.5f);
    ck_assert_int_eq(g.t[0].n_top, 2);
    ck_assert_int_eq(g.t[0].top[0].id, 9);
    ck_assert_int_eq(g.t[0].top[1].id, 4);

    const char *none = "{\"choices\":[{\"index\":0,\"text\":\"x\"}]}";
    ck_assert_int_eq(remote_score_read_vllm(none, strlen(none), ids, 2, 1, 2, keep, &g, &err),
                     LLM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.text, "prompt_logprobs"));
}
END_TEST

static Suite *remote_score_suite(void)
{
    Suite *s = suite_create("remote_score");
    TCase *tc = tcase_create("answers");
    tcase_add_test(tc, test_llama_forced);
    tcase_add_test(tc, test_vllm_prompt_logprobs);
    tcase_add_test(tc, test_vllm_rank_below_top);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(remote_score_suite)
