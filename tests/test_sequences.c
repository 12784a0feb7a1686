/* test_sequences.c — several sequences in one pass (transformer_run_sequences): each
 * sequence's logits equal, bit for bit, a transformer_run of its tokens alone over the
 * same shared prefix on the batch kernels — on stories260K (an fp32 and an int8 KV
 * cache) and on the tiny family fixtures whose attention differs: grouped queries and
 * QK-norm (qwen3), a soft-cap and sliding windows (gemma2), sinks, windows and experts
 * (gpt-oss), layers sharing another's cache and per-layer inputs (gemma4), Gated
 * DeltaNet layers (qwen35, qwen35moe: each sequence from the recurrent state after the
 * shared prefix, which stays). Sequences that begin at later layers, given their
 * stream there, give their runs' logits too (stories260K, qwen35). After the last
 * layer's mixer only each sequence's last row runs on, and the hooks there are handed
 * it alone, with its run alone's values. Refused: more rows than a batch chunk, places
 * past the context, a hybrid's position past the positions run. */
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

/* The shared prefix (BOS first) and the sequences' tokens of every check. */
static void test_tokens(int vocab, int prefix[P], int rows[S * M])
{
    for (int i = 0; i < P; i++)
        prefix[i] = i == 0 ? 1 : (i * 37 + 11) % vocab;
    for (int s = 0; s < S; s++)
        for (int i = 0; i < M; i++)
            rows[s * M + i] = (s * 101 + i * 53 + 7) % vocab;
}

static void check_model(model *m, transformer_kv kv, const char *what)
{
    const model_config *c = &m->config;
    int vocab = c->vocab_size;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, P + S * M, kv, &t, &err) == LLM_OK, "%s", err.text);
    int prefix[P], rows[S * M];
    test_tokens(vocab, prefix, rows);
    float *together = malloc(sizeof(float) * (size_t)S * vocab);
    ck_assert_ptr_nonnull(together);
    ck_assert_ptr_nonnull(transformer_run(t, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    ck_assert_msg(transformer_run_sequences(t, rows, M, S, P, NULL, together), "%s: %s", what,
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
    ck_assert(!transformer_run_sequences(t, rows, M, S, P + 1, NULL, together));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    int chunk = transformer_batch_chunk(t);
    int *many = calloc((size_t)chunk + 1, sizeof(int));
    ck_assert_ptr_nonnull(many);
    ck_assert(!transformer_run_sequences(t, many, chunk + 1, 1, 0, NULL, together));
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
    static const char *const families[] = {"qwen3", "gemma2", "gpt-oss", "gemma4", "qwen35",
                                           "qwen35moe"};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        model *m = open_model(families[i], TENSOR_F32);
        check_model(m, TRANSFORMER_KV_F32, families[i]);
        check_model(m, TRANSFORMER_KV_Q8_0, families[i]);
        model_close(m);
    }
}
END_TEST

/* Each sequence's stream after every layer (at l_out of layer l: stream[l + 1]), from a
 * run of it alone, for the entering rows of the run together. */
typedef struct {
    int dim, layers, pos, seq; /* the run alone: its sequence */
    float *stream;             /* (S, layers + 1, M, dim) */
    const int *enter;          /* the run together: each sequence's first layer */
} streams;

static float *stream_at(const streams *st, int s, int l, int i)
{
    return st->stream + (((size_t)s * (st->layers + 1) + l) * M + i) * st->dim;
}

static void keep_stream(void *user, const hook_tensor *x)
{
    streams *st = user;
    for (int i = 0; i < x->n; i++)
        memcpy(stream_at(st, st->seq, x->layer + 1, x->pos + i - P),
               x->data + (size_t)i * x->stride, sizeof(float) * st->dim);
}

/* Writes a sequence's rows at the layer it begins at with its stream from the run
 * alone (the pass hands them once, at l_out of the layer before). */
static void put_stream(void *user, hook_slice *x)
{
    const streams *st = user;
    for (int i = 0; i < x->n; i++) {
        int r = x->pos + i - P, s = r / M;
        if (s < S && st->enter[s] == x->layer + 1)
            memcpy(x->data + (size_t)i * x->stride, stream_at(st, s, x->layer + 1, r % M) + x->col,
                   sizeof(float) * x->width);
    }
}

/* Sequences that begin at later layers (enter): given each one's stream where it
 * begins (from its run alone), the logits are its run alone's, bit for bit; the one
 * beginning after the last layer is its stream's final norm. Out of order, refused. */
static void check_enter(model *m)
{
    const model_config *c = &m->config;
    int vocab = c->vocab_size;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, P + S * M, TRANSFORMER_KV_F32, &t, &err) == LLM_OK, "%s",
                  err.text);
    int prefix[P], rows[S * M], enter[S] = {0, 2, c->n_layers};
    test_tokens(vocab, prefix, rows);
    streams st = {.dim = c->dim, .layers = c->n_layers, .enter = enter};
    st.stream = malloc(sizeof(float) * (size_t)S * (c->n_layers + 1) * M * c->dim);
    float *alone = malloc(sizeof(float) * (size_t)S * vocab);
    float *together = malloc(sizeof(float) * (size_t)S * vocab);
    ck_assert(st.stream && alone && together);
    ck_assert_ptr_nonnull(transformer_run(t, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    hook keep = {.fn = keep_stream, .user = &st, .points = HOOK_BIT(HOOK_L_OUT),
                 .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    ck_assert(transformer_hook_add(t, &keep, &id, &err) == LLM_OK);
    for (int s = 0; s < S; s++) {
        st.seq = s;
        const float *lg = transformer_run(t, rows + s * M, M, P, TRANSFORMER_KERNELS_BATCH,
                                          NULL, NULL);
        ck_assert_ptr_nonnull(lg);
        memcpy(alone + (size_t)s * vocab, lg, sizeof(float) * vocab);
    }
    transformer_hook_remove(t, id);
    hook put = {.edit = put_stream, .user = &st, .points = HOOK_BIT(HOOK_L_OUT),
                .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    ck_assert(transformer_hook_add(t, &put, &id, &err) == LLM_OK);
    ck_assert_msg(transformer_run_sequences(t, rows, M, S, P, enter, together), "%s",
                  transformer_error(t, &err) != LLM_OK ? err.text : "");
    for (int s = 0; s < S; s++)
        for (int v = 0; v < vocab; v++)
            ck_assert_msg(alone[(size_t)s * vocab + v] == together[(size_t)s * vocab + v],
                          "sequence %d (from layer %d), logit %d: %.9g alone, %.9g together", s,
                          enter[s], v, alone[(size_t)s * vocab + v],
                          together[(size_t)s * vocab + v]);
    int backwards[S] = {2, 1, 0};
    ck_assert(!transformer_run_sequences(t, rows, M, S, P, backwards, together));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    transformer_hook_remove(t, id);
    free(st.stream);
    free(alone);
    free(together);
    transformer_free(t);
}

START_TEST(test_enter)
{
    model *m = open_model(NULL, TENSOR_F32);
    check_enter(m);
    model_close(m);
    m = open_model("qwen35", TENSOR_F32); /* Gated DeltaNet layers among attention ones */
    check_enter(m);
    model_close(m);
}
END_TEST

/* What an observer of the last layer's l_out and of result_norm was handed: the rows
 * of each call, by position. */
typedef struct {
    int dim, layers, calls[2], rows[2];
    float *seen[2]; /* (P + S * M, dim) each: the row handed at each position */
} last_rows;

static void see_last(void *user, const hook_tensor *x)
{
    last_rows *lr = user;
    int k = x->point == HOOK_RESULT_NORM;
    lr->calls[k]++;
    lr->rows[k] += x->n;
    for (int i = 0; i < x->n; i++)
        memcpy(lr->seen[k] + (size_t)(x->pos + i) * lr->dim, x->data + (size_t)i * x->stride,
               sizeof(float) * lr->dim);
}

/* After the last layer's mixer only each sequence's last row runs on: an observer of
 * the last layer's l_out and of result_norm is handed those rows alone, one call each,
 * at their positions, with the values of each sequence's run alone at its last
 * position; the layer before hands every row. */
START_TEST(test_last_rows)
{
    model *m = open_model(NULL, TENSOR_Q8_0);
    const model_config *c = &m->config;
    int vocab = c->vocab_size, places = P + S * M;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, places, TRANSFORMER_KV_Q8_0, &t, &err) == LLM_OK, "%s",
                  err.text);
    int prefix[P], rows[S * M];
    test_tokens(vocab, prefix, rows);
    last_rows alone = {.dim = c->dim, .layers = c->n_layers}, together = alone;
    for (int k = 0; k < 2; k++) {
        alone.seen[k] = calloc((size_t)places * c->dim, sizeof(float));
        together.seen[k] = calloc((size_t)places * c->dim, sizeof(float));
        ck_assert(alone.seen[k] && together.seen[k]);
    }
    float *logits = malloc(sizeof(float) * (size_t)S * vocab);
    ck_assert_ptr_nonnull(logits);
    ck_assert_ptr_nonnull(transformer_run(t, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    hook h = {.fn = see_last, .user = &alone,
              .points = HOOK_BIT(HOOK_L_OUT) | HOOK_BIT(HOOK_RESULT_NORM),
              .layer_first = c->n_layers - 1, .layer_last = c->n_layers - 1, .pos = -1};
    int id;
    /* alone: sequence s's rows at P, its rows handed as positions P + s * M + i */
    float *kept = malloc(sizeof(float) * (size_t)2 * S * c->dim);
    ck_assert_ptr_nonnull(kept);
    ck_assert(transformer_hook_add(t, &h, &id, &err) == LLM_OK);
    for (int s = 0; s < S; s++) {
        ck_assert_ptr_nonnull(transformer_run(t, rows + s * M, M, P, TRANSFORMER_KERNELS_BATCH,
                                              NULL, NULL));
        for (int k = 0; k < 2; k++)
            memcpy(kept + ((size_t)k * S + s) * c->dim,
                   alone.seen[k] + (size_t)(P + M - 1) * c->dim, sizeof(float) * c->dim);
    }
    ck_assert_int_eq(alone.rows[0], S * M); /* a run alone hands every row */
    transformer_hook_remove(t, id);
    h.user = &together;
    ck_assert(transformer_hook_add(t, &h, &id, &err) == LLM_OK);
    ck_assert(transformer_run_sequences(t, rows, M, S, P, NULL, logits));
    transformer_hook_remove(t, id);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(together.calls[k], S);
        ck_assert_int_eq(together.rows[k], S);
        for (int s = 0; s < S; s++)
            ck_assert_mem_eq(together.seen[k] + (size_t)(P + s * M + M - 1) * c->dim,
                             kept + ((size_t)k * S + s) * c->dim, sizeof(float) * c->dim);
    }
    /* the layer before: every row, in one call */
    last_rows before = {.dim = c->dim, .layers = c->n_layers};
    before.seen[0] = together.seen[0];
    before.seen[1] = together.seen[1];
    h.user = &before;
    h.points = HOOK_BIT(HOOK_L_OUT);
    h.layer_first = h.layer_last = c->n_layers - 2;
    ck_assert(transformer_hook_add(t, &h, &id, &err) == LLM_OK);
    ck_assert(transformer_run_sequences(t, rows, M, S, P, NULL, logits));
    transformer_hook_remove(t, id);
    ck_assert_int_eq(before.calls[0], 1);
    ck_assert_int_eq(before.rows[0], S * M);
    for (int k = 0; k < 2; k++) {
        free(alone.seen[k]);
        free(together.seen[k]);
    }
    free(kept);
    free(logits);
    transformer_free(t);
    model_close(m);
}
END_TEST

/* A model with recurrent layers: the sequences begin from the state after pos - 1, so
 * pos must follow positions run in order (refused past them); the state is left as it
 * was, so a run at pos afterwards needs nothing run again. States kept at every
 * position spare a run from one of them the checkpoint's rerun, with the same numbers. */
START_TEST(test_recurrent)
{
    model *m = open_model("qwen35", TENSOR_F32);
    int vocab = m->config.vocab_size;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, P + S * M, TRANSFORMER_KV_F32, &t, &err) == LLM_OK, "%s",
                  err.text);
    int prefix[P], rows[S * M];
    test_tokens(vocab, prefix, rows);
    float *logits = malloc(sizeof(float) * (size_t)S * vocab);
    ck_assert_ptr_nonnull(logits);
    ck_assert(!transformer_run_sequences(t, rows, M, S, 1, NULL, logits)); /* nothing run */
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    ck_assert_ptr_nonnull(transformer_run(t, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL));
    ck_assert(!transformer_run_sequences(t, rows, M, S, P + 1, NULL, logits));
    ck_assert_int_eq(transformer_error(t, &err), LLM_ERR_ARG);
    ck_assert(transformer_run_sequences(t, rows, M, S, P, NULL, logits));
    ck_assert_int_eq(transformer_rerun_cost(t, P), 0);
    ck_assert(transformer_run_sequences(t, rows, M, S, P, NULL, logits)); /* again */
    /* states kept (transformer_keep_states, as patching keeps them): running from a kept
     * position needs nothing run first, and gives the numbers of a state made from its
     * checkpoint */
    transformer *u = NULL;
    ck_assert(transformer_new_kv(m, P + S * M, TRANSFORMER_KV_F32, &u, &err) == LLM_OK);
    ck_assert(transformer_keep_states(t, 1, P));
    float *kept = malloc(sizeof(float) * (size_t)vocab);
    ck_assert_ptr_nonnull(kept);
    for (int k = 0; k < 2; k++) {
        transformer *x = k == 0 ? t : u;
        ck_assert_ptr_nonnull(transformer_run(x, prefix, P, 0, TRANSFORMER_KERNELS_BATCH, NULL,
                                              NULL));
        ck_assert_int_eq(transformer_rerun_cost(x, 3), k == 0 ? 0 : 3);
        const float *lg = transformer_run(x, rows, M, 3, TRANSFORMER_KERNELS_BATCH, NULL, NULL);
        ck_assert_ptr_nonnull(lg);
        if (k == 0)
            memcpy(kept, lg, sizeof(float) * (size_t)vocab);
        else
            ck_assert_mem_eq(kept, lg, sizeof(float) * (size_t)vocab);
    }
    ck_assert(transformer_keep_states(t, 1, 0)); /* none kept now */
    ck_assert_int_eq(transformer_rerun_cost(t, 3), 3);
    free(kept);
    transformer_free(u);
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
    tcase_add_test(tc, test_enter);
    tcase_add_test(tc, test_last_rows);
    tcase_add_test(tc, test_recurrent);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(sequences_suite)
