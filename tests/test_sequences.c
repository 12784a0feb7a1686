/* test_sequences.c — several sequences in one pass (transformer_run_sequences): each
 * sequence's logits equal, bit for bit, a transformer_run of its tokens alone over the
 * same shared prefix on the batch kernels — on stories260K (an fp32 and an int8 KV
 * cache) and on the tiny family fixtures whose attention differs: grouped queries and
 * QK-norm (qwen3), a soft-cap and sliding windows (gemma2), sinks, windows and experts
 * (gpt-oss), layers sharing another's cache and per-layer inputs (gemma4). Refused:
 * a model with recurrent layers (qwen35), more rows than a batch chunk, places past the
 * context. */
#include <stdlib.h>
#include <string.h>

#include "family_gguf.h"
#include "testutil.h"
#include "transformer.h"

enum { N = 14, P = 5, S = 3, M = N - P }; /* prompt, shared prefix, sequences, their rows */

static model *open_model(const char *family, tensor_type weights)
{
    model_options mo;
    model_options_default(&mo);
    mo.weights = weights;
    model *m = NULL;
    llm_err err;
    const char *path = data_path("stories260K.gguf");
    if (family) {
        path = temp_path("sequences.gguf");
        ck_assert(family_gguf_write(path, family, NULL, NULL));
    }
    ck_assert_msg(model_open(path, &mo, &m, &err) == LLM_OK, "%s", err.text);
    if (family)
        remove(path);
    return m;
}

static void check_model(model *m, transformer_kv kv, const char *what)
{
    const model_config *c = &m->config;
    int vocab = c->vocab_size;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, P + S * M, kv, &t, &err) == LLM_OK, "%s", err.text);
    int prefix[P], rows[S * M];
    for (int i = 0; i < P; i++)
        prefix[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
    for (int s = 0; s < S; s++)
        for (int i = 0; i < M; i++)
            rows[s * M + i] = (s * 101 + i * 53 + 7) % vocab;
    float *together = malloc(sizeof(float) * (size_t)S * vocab);
    ck_assert_ptr_nonnull(together);
    ck_assert_ptr_nonnull(transformer_run(t, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    ck_assert_msg(transformer_run_sequences(t, rows, M, S, P, together), "%s: %s", what,
                  transformer_error(t, &err) != LLM_OK ? err.text : "");
    for (int s = 0; s < S; s++) {
        const float *alone = transformer_run(t, rows + s * M, M, P, TRANSFORMER_KERNELS_BATCH,
                                             NULL, NULL);
        ck_assert_ptr_nonnull(alone);
        for (int v = 0; v < vocab; v++)
            ck_assert_msg(alone[v] == together[(size_t)s * vocab + v],
                          "%s: sequence %d, logit %d: %.9g alone, %.9g together", what, s, v,
                          alone[v], together[(size_t)s * vocab + v]);
    }
    /* refused: places past the context, more rows than a chunk */
    ck_assert(!transformer_run_sequences(t, rows, M, S, P + 1, together));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    int chunk = transformer_batch_chunk(t);
    int *many = calloc((size_t)chunk + 1, sizeof(int));
    ck_assert_ptr_nonnull(many);
    ck_assert(!transformer_run_sequences(t, many, chunk + 1, 1, 0, together));
    free(many);
    free(together);
    transformer_free(t);
}

START_TEST(test_stories)
{
    model *m = open_model(NULL, TENSOR_F32);
    check_model(m, TRANSFORMER_KV_F32, "stories260K f32 cache");
    check_model(m, TRANSFORMER_KV_Q8_0, "stories260K q8_0 cache");
    model_close(m);
    m = open_model(NULL, TENSOR_Q8_0);
    check_model(m, TRANSFORMER_KV_Q8_0, "stories260K q8_0 weights");
    model_close(m);
}
END_TEST

START_TEST(test_families)
{
    static const char *const families[] = {"qwen3", "gemma2", "gpt-oss", "gemma4"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        model *m = open_model(families[i], TENSOR_F32);
        check_model(m, TRANSFORMER_KV_F32, families[i]);
        check_model(m, TRANSFORMER_KV_Q8_0, families[i]);
        model_close(m);
    }
}
END_TEST

START_TEST(test_recurrent_refused)
{
    model *m = open_model("qwen35", TENSOR_F32);
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, P + S * M, TRANSFORMER_KV_F32, &t, &err) == LLM_OK, "%s",
                  err.text);
    int rows[S * M] = {0};
    float *logits = malloc(sizeof(float) * (size_t)S * m->config.vocab_size);
    ck_assert(!transformer_run_sequences(t, rows, M, S, 0, logits));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    free(logits);
    transformer_free(t);
    model_close(m);
}
END_TEST

static Suite *sequences_suite(void)
{
    Suite *s = suite_create("sequences");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_stories);
    tcase_add_test(tc, test_families);
    tcase_add_test(tc, test_recurrent_refused);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(sequences_suite)
