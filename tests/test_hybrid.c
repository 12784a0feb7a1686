/* test_hybrid.c — the forward pass on a hybrid model (Qwen 3.5's qwen35: Gated DeltaNet
 * layers beside gated attention, family_gguf.h's tiny random files): the recurrent state
 * keeps the pass's promises the KV cache keeps; so do Gemma 4's layers of their own
 * shapes, which read other layers' caches (the first two promises).
 *
 *   - the kernels decide a position's numbers, never the batch it runs in: a batch on
 *     the token kernels gives one token's bits, one token on the batch kernels the
 *     batch's (fp32 weights: all the same), on one thread and on three;
 *   - rewinding (running a position again) and branching (another token there) give
 *     the bits of a fresh run of the same tokens on the same kernels, before, at and
 *     after a checkpoint of the state (every 32 positions), from positions that ran
 *     one at a time and from ones a batch ran;
 *   - a what-if (transformer_forward_again, the logit lens) at an earlier position gives
 *     a fresh run's logits there and leaves the state as it was, also when it runs the
 *     positions from the checkpoint again under other interventions;
 *   - a position after ones not run yet is refused, not run on a stale state;
 *   - a DeltaNet head knocked out with its state reset starts from nothing when it is
 *     let back in (kept: it speaks with its whole history).
 * What the pass computes is checked against llama.cpp in e2e_hybrid.sh. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "family_gguf.h"
#include "knock_out.h"
#include "model.h"
#include "steering.h"
#include "testutil.h"
#include "transformer.h"

enum { N = 80 }; /* positions: past the checkpoints at 32 and 64 */

static model *open_shape(const char *shape, tensor_type type)
{
    const char *path = temp_path("hybrid.gguf");
    ck_assert(family_gguf_write(path, shape, NULL, NULL));
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s", err.text);
    remove(path);
    ck_assert(m->config.dn_layers > 0 || m->config.layers_vary);
    return m;
}

static transformer *new_transformer(const model *m)
{
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(transformer_new_kv(m, 128, TRANSFORMER_KV_F32, &t, &err) == LLM_OK, "%s",
                  err.text);
    return t;
}

static void make_ids(int *ids, int n, int vocab, int salt)
{
    for (int i = 0; i < n; i++)
        ids[i] = i == 0 ? 1 : (i * 37 + 11 + salt * 13) % vocab;
}

static void set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

static int procs(void)
{
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

/* Runs ids[p] at p for p = from..to-1 on `kernels`, one call each (n 1) or one call for
 * all (n 0), the logits into logits + p * vocab. */
static void run_range(transformer *t, const int *ids, int from, int to, transformer_kernels k,
                      bool one_call, float *logits)
{
    int vocab = transformer_model(t)->config.vocab_size;
    if (one_call) {
        ck_assert_ptr_nonnull(transformer_run(t, ids + from, to - from, from, k,
                                              logits + (size_t)from * vocab, NULL));
        return;
    }
    for (int p = from; p < to; p++)
        ck_assert_msg(transformer_run(t, ids + p, 1, p, k, logits + (size_t)p * vocab, NULL),
                      "position %d", p);
}

static bool same(const float *a, const float *b, int from, int to, int vocab)
{
    return memcmp(a + (size_t)from * vocab, b + (size_t)from * vocab,
                  sizeof(float) * (size_t)(to - from) * vocab) == 0;
}

/* ---- batch against one token ---- */

START_TEST(test_hybrid_paths)
{
    const char *shapes[] = {"qwen35", "qwen35-mtp", "gemma4", "qwen35moe", "gemma4-moe"};
    enum { S = sizeof shapes / sizeof shapes[0] };
    for (int k = 0; k < 4 * S; k++) {
        model *m = open_shape(shapes[k % S], k / S % 2 ? TENSOR_BLOCKS : TENSOR_F32);
        set_threads(k < 2 * S ? 1 : 3);
        int vocab = m->config.vocab_size, ids[N];
        make_ids(ids, N, vocab, 0);
        size_t bytes = sizeof(float) * N * vocab;
        float *run[4];
        for (int i = 0; i < 4; i++)
            run[i] = malloc(bytes);
        transformer *t = new_transformer(m);
        run_range(t, ids, 0, N, TRANSFORMER_KERNELS_TOKEN, false, run[0]);
        run_range(t, ids, 0, N, TRANSFORMER_KERNELS_TOKEN, true, run[1]);
        run_range(t, ids, 0, N, TRANSFORMER_KERNELS_BATCH, true, run[2]);
        run_range(t, ids, 0, N, TRANSFORMER_KERNELS_BATCH, false, run[3]);
        const char *what = k / S % 2 ? "Q8_0" : "F32";
        ck_assert_msg(same(run[0], run[1], 0, N, vocab), "%s %s: a batch on the token kernels "
                      "is not one token's bits", shapes[k % S], what);
        ck_assert_msg(same(run[2], run[3], 0, N, vocab), "%s %s: one token on the batch "
                      "kernels is not the batch's bits", shapes[k % S], what);
        if (k / S % 2 == 0)
            ck_assert_msg(same(run[0], run[2], 0, N, vocab), "%s: fp32, yet the kernels differ",
                          shapes[k % S]);
        for (size_t i = 0; i < (size_t)N * vocab; i++)
            check_each(isfinite(run[2][i]), "logit %zu is not finite", i);
        transformer_free(t);
        for (int i = 0; i < 4; i++)
            free(run[i]);
        model_close(m);
    }
    set_threads(procs());
}
END_TEST

/* ---- rewind and branch ---- */

/* The run of ids where positions 0..split-1 ran as one batch on the batch kernels and
 * the rest one token at a time on the token kernels, fresh. */
static void fresh_run(const model *m, const int *ids, int split, int n, float *logits)
{
    transformer *t = new_transformer(m);
    if (split > 0)
        run_range(t, ids, 0, split, TRANSFORMER_KERNELS_BATCH, true, logits);
    run_range(t, ids, split, n, TRANSFORMER_KERNELS_TOKEN, false, logits);
    transformer_free(t);
}

START_TEST(test_hybrid_rewind_and_branch)
{
    const int at[] = {3, 31, 32, 33, 45, 64, 70}; /* around the checkpoints */
    for (int w = 0; w < 4; w++) {
        model *m = open_shape(w / 2 ? "gemma4" : "qwen35", w % 2 ? TENSOR_BLOCKS : TENSOR_F32);
        int vocab = m->config.vocab_size, ids[N], alt[N];
        make_ids(ids, N, vocab, 0);
        make_ids(alt, N, vocab, 5);
        size_t bytes = sizeof(float) * N * vocab;
        float *got = malloc(bytes), *want = malloc(bytes), *plain = malloc(bytes);
        for (int split = 0; split <= 50; split += 50) {
            fresh_run(m, ids, split, N, plain); /* the first run's tokens, from a fresh start */
            for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
                int p = at[a];
                /* ran to N, then back to p: the same tokens again, then others */
                transformer *t = new_transformer(m);
                if (split > 0)
                    run_range(t, ids, 0, split, TRANSFORMER_KERNELS_BATCH, true, got);
                run_range(t, ids, split, N, TRANSFORMER_KERNELS_TOKEN, false, got);
                int kernels_at_p = p < split ? TRANSFORMER_KERNELS_BATCH : TRANSFORMER_KERNELS_TOKEN;
                run_range(t, ids, p, p + 1, kernels_at_p, false, got);
                ck_assert_msg(same(got, plain, p, p + 1, vocab), "split %d: position %d run "
                              "again differs from the fresh run", split, p);
                /* a branch: other tokens from p on, one at a time */
                int branch[N];
                memcpy(branch, ids, sizeof branch);
                memcpy(branch + p, alt + p, sizeof(int) * (size_t)(N - p));
                run_range(t, branch, p, N, TRANSFORMER_KERNELS_TOKEN, false, got);
                fresh_run(m, branch, split < p ? split : p, N, want);
                ck_assert_msg(same(got, want, p, N, vocab), "split %d: the branch at %d "
                              "differs from a fresh run of its tokens", split, p);
                /* the kept logits of the positions before p are the first run's */
                float *kept = malloc(sizeof(float) * (size_t)p * vocab);
                ck_assert(transformer_logits(t, 0, p, kept));
                ck_assert(memcmp(kept, plain, sizeof(float) * (size_t)p * vocab) == 0);
                free(kept);
                transformer_free(t);
            }
        }
        free(got);
        free(want);
        free(plain);
        model_close(m);
    }
}
END_TEST

/* ---- what-ifs ---- */

START_TEST(test_hybrid_what_if)
{
    model *m = open_shape("qwen35", TENSOR_F32);
    const model_config *c = &m->config;
    int vocab = c->vocab_size, ids[N];
    make_ids(ids, N, vocab, 0);
    size_t bytes = sizeof(float) * N * vocab;
    float *plain = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes);
    float *again = malloc(sizeof(float) * vocab), *lens = malloc(sizeof(float) * c->n_layers * vocab);
    fresh_run(m, ids, 0, N, plain);
    transformer *t = new_transformer(m);
    run_range(t, ids, 0, 70, TRANSFORMER_KERNELS_TOKEN, false, got);
    llm_err err;
    int other = (ids[50] + 7) % vocab;
    ck_assert_msg(transformer_forward_again(t, other, 50, again, &err) == LLM_OK, "%s", err.text);
    int branch[N];
    memcpy(branch, ids, sizeof branch);
    branch[50] = other;
    fresh_run(m, branch, 0, 51, want);
    ck_assert_msg(memcmp(again, want + (size_t)50 * vocab, sizeof(float) * vocab) == 0,
                  "a what-if at 50 is not a fresh run's logits there");
    ck_assert_msg(transformer_logit_lens(t, ids[40], 40, lens, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(memcmp(lens + (size_t)(c->n_layers - 1) * vocab, plain + (size_t)40 * vocab,
                         sizeof(float) * vocab) == 0, "the lens' last layer at 40 is not its logits");
    /* the state was left as it was: the run goes on as if nothing happened */
    run_range(t, ids, 70, N, TRANSFORMER_KERNELS_TOKEN, false, got);
    ck_assert_msg(same(got, plain, 70, N, vocab), "after the what-ifs the run differs");
    /* a position after ones not run is refused */
    transformer *u = new_transformer(m);
    run_range(u, ids, 0, 10, TRANSFORMER_KERNELS_TOKEN, false, got);
    ck_assert_ptr_null(transformer_forward(u, ids[12], 12, NULL));
    ck_assert_int_eq(transformer_error(u, &err), LLM_ERR_ARG);
    ck_assert_int_ne(transformer_forward_again(u, ids[12], 12, again, &err), LLM_OK);
    ck_assert_ptr_nonnull(transformer_forward(u, ids[10], 10, NULL));
    transformer_free(u);
    transformer_free(t);
    free(plain);
    free(got);
    free(want);
    free(again);
    free(lens);
    model_close(m);
}
END_TEST

/* ---- the DeltaNet's points, its attention rows, a knocked-out head ---- */

enum { PT_N = 24 };
typedef struct {
    float rows[5][PT_N][256]; /* q_conv, v_conv, beta, state_norm, kqv of layer 0 */
} seen_points;

static void see_points(void *user, const hook_tensor *x)
{
    seen_points *s = user;
    const hook_point pts[5] = {HOOK_Q_CONV, HOOK_V_CONV, HOOK_DN_BETA, HOOK_DN_STATE, HOOK_KQV};
    for (int k = 0; k < 5; k++)
        if (x->point == pts[k] && x->layer == 0)
            for (int i = 0; i < x->n; i++)
                memcpy(s->rows[k][x->pos + i], x->data + (size_t)i * x->stride,
                       sizeof(float) * (size_t)x->width);
}

/* q_conv .. state_norm and kqv of a DeltaNet layer and its effective attention rows
 * are the same bits for a batch on the token kernels and one token at a time (on one
 * thread and on three); a knocked-out value head's kqv slice is 0 (the others' are
 * the run's without it) and the logits change. */
START_TEST(test_hybrid_points_and_knock_out)
{
    model *m = open_shape("qwen35-mtp", TENSOR_F32);
    const model_config *c = &m->config;
    int vocab = c->vocab_size, ids[PT_N], heads = model_heads_max(c);
    make_ids(ids, PT_N, vocab, 0);
    static seen_points s[2];
    size_t row_floats = (size_t)c->n_layers * heads * PT_N;
    float *attn[2][PT_N], *logits[2];
    for (int r = 0; r < 2; r++) {
        memset(&s[r], 0, sizeof s[r]);
        logits[r] = malloc(sizeof(float) * PT_N * vocab);
        for (int i = 0; i < PT_N; i++)
            attn[r][i] = malloc(sizeof(float) * row_floats);
        set_threads(r ? 3 : 1);
        transformer *t = new_transformer(m);
        hook h = {.fn = see_points, .user = &s[r],
                  .points = HOOK_BIT(HOOK_Q_CONV) | HOOK_BIT(HOOK_V_CONV) | HOOK_BIT(HOOK_DN_BETA) |
                            HOOK_BIT(HOOK_DN_STATE) | HOOK_BIT(HOOK_KQV),
                  .layer_first = 0, .layer_last = 0, .pos = -1};
        int id;
        llm_err err;
        ck_assert(transformer_hook_add(t, &h, &id, &err) == LLM_OK);
        if (r == 0) {
            ck_assert_ptr_nonnull(transformer_run(t, ids, PT_N, 0, TRANSFORMER_KERNELS_TOKEN,
                                                  logits[r], attn[r]));
        } else {
            for (int p = 0; p < PT_N; p++)
                ck_assert_ptr_nonnull(transformer_run(t, ids + p, 1, p, TRANSFORMER_KERNELS_TOKEN,
                                                      logits[r] + (size_t)p * vocab, &attn[r][p]));
        }
        transformer_free(t);
    }
    set_threads(procs());
    ck_assert(memcmp(&s[0].rows, &s[1].rows, sizeof s[0].rows) == 0);
    for (int p = 0; p < PT_N; p++)
        ck_assert_msg(memcmp(attn[0][p], attn[1][p],
                             sizeof(float) * (size_t)c->n_layers * heads * (size_t)(p + 1)) == 0,
                      "position %d's attention rows differ between a batch and one token", p);
    /* beta holds sigmoids; a state has a norm after the first token */
    for (int h = 0; h < c->dn_v_heads; h++) {
        ck_assert(s[0].rows[2][5][h] > 0.0f && s[0].rows[2][5][h] < 1.0f);
        ck_assert(s[0].rows[3][5][h] > 0.0f);
    }
    /* value head 1 of layer 0 out */
    unsigned char *mask = calloc((size_t)c->n_layers * heads, 1);
    mask[1] = 1;
    const unsigned char *in_force = mask;
    bool on = true;
    knock_out ko = {.mask = &in_force, .enabled = &on, .n_heads = heads, .attn_heads = c->n_heads,
                    .head_size = c->head_size, .dn_heads = c->dn_v_heads,
                    .dn_head_size = c->dn_head_v, .layers = m->layers};
    transformer *t = new_transformer(m);
    hook edit = {.edit = knock_out_edit, .user = &ko, .points = HOOK_BIT(HOOK_KQV),
                 .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    static seen_points k;
    memset(&k, 0, sizeof k);
    hook see = {.fn = see_points, .user = &k, .points = HOOK_BIT(HOOK_KQV), .layer_first = 0,
                .layer_last = 0, .pos = -1};
    int id;
    llm_err err;
    ck_assert(transformer_hook_add(t, &edit, &id, &err) == LLM_OK);
    ck_assert(transformer_hook_add(t, &see, &id, &err) == LLM_OK);
    float *out = malloc(sizeof(float) * PT_N * vocab);
    ck_assert_ptr_nonnull(transformer_run(t, ids, PT_N, 0, TRANSFORMER_KERNELS_TOKEN, out, NULL));
    int dv = c->dn_head_v;
    for (int p = 0; p < PT_N; p++) {
        for (int j = dv; j < 2 * dv; j++)
            ck_assert_msg(k.rows[4][p][j] == 0.0f, "position %d value %d", p, j);
        /* layer 0 is the first: nothing before it changed, the other heads are the same */
        ck_assert(memcmp(k.rows[4][p], s[0].rows[4][p], sizeof(float) * dv) == 0);
        ck_assert(memcmp(k.rows[4][p] + 2 * dv, s[0].rows[4][p] + 2 * dv,
                         sizeof(float) * (size_t)(c->dn_value_dim - 2 * dv)) == 0);
    }
    ck_assert(memcmp(out + (size_t)(PT_N - 1) * vocab, logits[0] + (size_t)(PT_N - 1) * vocab,
                     sizeof(float) * vocab) != 0);
    transformer_free(t);
    free(out);
    free(mask);
    for (int r = 0; r < 2; r++) {
        free(logits[r]);
        for (int i = 0; i < PT_N; i++)
            free(attn[r][i]);
    }
    model_close(m);
}
END_TEST

/* A what-if at an earlier position runs the positions from the state's checkpoint
 * again with the interventions set now (here: a knock-out switched off for it); it
 * puts back what they wrote, so the run goes on as if it had not happened. */
START_TEST(test_hybrid_what_if_leaves_no_trace)
{
    model *m = open_shape("qwen35", TENSOR_F32);
    const model_config *c = &m->config;
    int vocab = c->vocab_size, ids[N], heads = model_heads_max(c);
    make_ids(ids, N, vocab, 0);
    unsigned char *mask = calloc((size_t)c->n_layers * heads, 1);
    mask[0] = mask[(size_t)1 * heads + 1] = 1; /* a DeltaNet head and an attention head */
    const unsigned char *in_force = mask;
    bool on = true;
    knock_out ko = {.mask = &in_force, .enabled = &on, .n_heads = heads, .attn_heads = c->n_heads,
                    .head_size = c->head_size, .dn_heads = c->dn_v_heads,
                    .dn_head_size = c->dn_head_v, .layers = m->layers};
    hook edit = {.edit = knock_out_edit, .user = &ko, .points = HOOK_BIT(HOOK_KQV),
                 .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1};
    size_t bytes = sizeof(float) * N * vocab;
    float *plain = malloc(bytes), *got = malloc(bytes), *again = malloc(sizeof(float) * vocab);
    int id;
    llm_err err;
    transformer *t = new_transformer(m), *u = new_transformer(m);
    ck_assert(transformer_hook_add(t, &edit, &id, &err) == LLM_OK);
    ck_assert(transformer_hook_add(u, &edit, &id, &err) == LLM_OK);
    run_range(u, ids, 0, N, TRANSFORMER_KERNELS_TOKEN, false, plain);
    run_range(t, ids, 0, 70, TRANSFORMER_KERNELS_TOKEN, false, got);
    on = false;
    ck_assert_msg(transformer_forward_again(t, ids[50], 50, again, &err) == LLM_OK, "%s", err.text);
    on = true;
    ck_assert(memcmp(again, plain + (size_t)50 * vocab, sizeof(float) * vocab) != 0);
    run_range(t, ids, 70, N, TRANSFORMER_KERNELS_TOKEN, false, got);
    ck_assert_msg(same(got, plain, 70, N, vocab), "a what-if without the knock-out changed "
                  "what followed");
    float *kept = malloc(sizeof(float) * 70 * (size_t)vocab);
    ck_assert(transformer_logits(t, 0, 70, kept));
    ck_assert(memcmp(kept, plain, sizeof(float) * 70 * (size_t)vocab) == 0);
    free(kept);
    transformer_free(t);
    transformer_free(u);
    free(plain);
    free(got);
    free(again);
    free(mask);
    model_close(m);
}
END_TEST

/* ---- a DeltaNet head knocked out with its state kept or reset ---- */

enum { KR_N = 24, KR_OUT = 8, KR_BACK = 16, KR_HEAD = 1 };
typedef struct {
    float v[KR_N][256], beta[KR_N][64], state[KR_N][64];
    float eff[KR_N][KR_N]; /* head KR_HEAD's effective attention row at each position */
} seen_head;

static void see_head(void *user, const hook_tensor *x)
{
    seen_head *s = user;
    if (x->layer != 0)
        return;
    for (int i = 0; i < x->n; i++) {
        const float *row = x->data + (size_t)i * x->stride;
        int p = x->pos + i;
        float *to = x->point == HOOK_V_CONV ? s->v[p] : x->point == HOOK_DN_BETA ? s->beta[p]
                  : x->point == HOOK_DN_STATE ? s->state[p] : NULL;
        if (x->point == HOOK_KQ_SOFT_MAX && x->head == KR_HEAD)
            memcpy(s->eff[p], row, sizeof(float) * (size_t)(p + 1));
        else if (to)
            memcpy(to, row, sizeof(float) * (size_t)x->width);
    }
}

/* Runs the KR_N positions one at a time with value head KR_HEAD of layer 0 out for
 * positions KR_OUT..KR_BACK-1 (how: 0 never, 1 state kept, 2 state reset), through the
 * steering a session uses; the logits and layer 0's points into *logits and *s. */
static void run_knocked(const model *m, const int *ids, int how, float *logits, seen_head *s)
{
    const model_config *c = &m->config;
    transformer *t = new_transformer(m);
    steering *st;
    llm_err err;
    ck_assert(steering_new(c->n_layers, model_heads_max(c), c->dim, &st, &err) == LLM_OK);
    ck_assert_msg(steering_attach(st, t, &err) == LLM_OK, "%s", err.text);
    hook h = {.fn = see_head, .user = s,
              .points = HOOK_BIT(HOOK_V_CONV) | HOOK_BIT(HOOK_DN_BETA) | HOOK_BIT(HOOK_DN_STATE) |
                        HOOK_BIT(HOOK_KQ_SOFT_MAX),
              .layer_first = 0, .layer_last = 0, .pos = -1};
    int id;
    ck_assert(transformer_hook_add(t, &h, &id, &err) == LLM_OK);
    for (int p = 0; p < KR_N; p++) {
        if (p == KR_OUT && how == 1)
            ck_assert(steering_knock_out(st, 0, KR_HEAD, true, &err) == LLM_OK);
        if (p == KR_OUT && how == 2)
            ck_assert_msg(steering_knock_out_reset(st, 0, KR_HEAD, &err) == LLM_OK, "%s", err.text);
        if (p == KR_BACK && how)
            ck_assert(steering_knock_out(st, 0, KR_HEAD, false, &err) == LLM_OK);
        ck_assert(transformer_run(t, ids + p, 1, p, TRANSFORMER_KERNELS_TOKEN,
                                  logits + (size_t)p * c->vocab_size, NULL));
    }
    steering_free(st);
    transformer_free(t);
}

/* Kept and reset zero the head's output alike while it is out (the same logits, both
 * not the plain run's); reset empties its state (norm 0) where kept goes on filling it;
 * let back in, the reset head starts from nothing: its state after the first position
 * back is that position's write alone (norm beta |v|, the key being unit length), its
 * effective attention gives the positions before it 0, and the logits differ from kept's.
 * A reset head cannot be asked of an attention layer; a batch runs it as one token does. */
START_TEST(test_hybrid_knock_out_reset)
{
    model *m = open_shape("qwen35-mtp", TENSOR_F32);
    const model_config *c = &m->config;
    ck_assert(m->layers[0].kind == MODEL_LAYER_DELTA_NET && c->dn_v_heads <= 64 &&
              c->dn_value_dim <= 256);
    int vocab = c->vocab_size, ids[KR_N], dv = c->dn_head_v;
    make_ids(ids, KR_N, vocab, 3);
    static seen_head s[3];
    float *logits[3];
    for (int how = 0; how < 3; how++) {
        memset(&s[how], 0, sizeof s[how]);
        logits[how] = malloc(sizeof(float) * KR_N * vocab);
        run_knocked(m, ids, how, logits[how], &s[how]);
    }
    ck_assert(same(logits[0], logits[1], 0, KR_OUT, vocab));
    ck_assert(same(logits[0], logits[2], 0, KR_OUT, vocab));
    ck_assert_msg(same(logits[1], logits[2], KR_OUT, KR_BACK, vocab),
                  "a head out changes nothing else whether its state is kept or reset");
    ck_assert(!same(logits[0], logits[1], KR_BACK - 1, KR_BACK, vocab));
    for (int p = KR_OUT; p < KR_BACK; p++) {
        ck_assert_msg(s[2].state[p][KR_HEAD] == 0.0f, "position %d: the reset state's norm is %g",
                      p, s[2].state[p][KR_HEAD]);
        ck_assert(s[1].state[p][KR_HEAD] > 0.0f);
        ck_assert(s[2].state[p][KR_HEAD - 1] == s[1].state[p][KR_HEAD - 1]); /* another head */
    }
    double vv = 0.0;
    for (int j = 0; j < dv; j++)
        vv += (double)s[2].v[KR_BACK][KR_HEAD * dv + j] * s[2].v[KR_BACK][KR_HEAD * dv + j];
    double want = s[2].beta[KR_BACK][KR_HEAD] * sqrt(vv), got = s[2].state[KR_BACK][KR_HEAD];
    ck_assert_msg(fabs(got - want) <= 1e-5 * want, "the state after coming back: %g, want %g",
                  got, want);
    for (int p = KR_BACK; p < KR_N; p++) {
        bool kept_reaches = false;
        for (int q = 0; q < KR_BACK; q++) {
            ck_assert_msg(s[2].eff[p][q] == 0.0f, "position %d gives %d weight %g", p, q,
                          s[2].eff[p][q]);
            kept_reaches |= s[1].eff[p][q] != 0.0f;
        }
        ck_assert(kept_reaches);
        ck_assert(s[2].eff[p][p] != 0.0f);
    }
    ck_assert(!same(logits[1], logits[2], KR_N - 1, KR_N, vocab));
    /* an attention layer has no state; a batch with a head reset is one token's bits */
    transformer *t = new_transformer(m), *u = new_transformer(m);
    steering *st, *su;
    llm_err err;
    ck_assert(steering_new(c->n_layers, model_heads_max(c), c->dim, &st, &err) == LLM_OK);
    ck_assert(steering_new(c->n_layers, model_heads_max(c), c->dim, &su, &err) == LLM_OK);
    ck_assert(steering_knock_out_reset(st, 0, KR_HEAD, &err) == LLM_ERR_ARG); /* not attached */
    ck_assert(steering_attach(st, t, &err) == LLM_OK && steering_attach(su, u, &err) == LLM_OK);
    int attn = 0;
    while (m->layers[attn].kind == MODEL_LAYER_DELTA_NET)
        attn++;
    ck_assert_int_eq(steering_knock_out_reset(st, attn, 0, &err), LLM_ERR_ARG);
    ck_assert(strstr(err.text, "no state") && !steering_is_out(st, attn, 0));
    ck_assert(steering_knock_out_reset(st, 0, KR_HEAD, &err) == LLM_OK &&
              steering_knock_out_reset(su, 0, KR_HEAD, &err) == LLM_OK);
    ck_assert(steering_is_reset(st, 0, KR_HEAD) && steering_is_out(st, 0, KR_HEAD));
    const intervention *in = steering_state(st);
    ck_assert(in->n_heads_out == 1 && in->n_heads_reset == 1 &&
              in->heads_reset[0] == in->heads_out[0]);
    run_range(t, ids, 0, KR_N, TRANSFORMER_KERNELS_TOKEN, true, logits[0]);
    run_range(u, ids, 0, KR_N, TRANSFORMER_KERNELS_TOKEN, false, logits[1]);
    ck_assert_msg(same(logits[0], logits[1], 0, KR_N, vocab), "a batch with a reset head is not "
                  "one token's bits");
    for (int k = 0; k < 2; k++)
        ck_assert(isfinite(logits[k][(size_t)KR_N * vocab - 1]));
    steering_free(st);
    steering_free(su);
    transformer_free(t);
    transformer_free(u);
    for (int how = 0; how < 3; how++)
        free(logits[how]);
    model_close(m);
}
END_TEST

static Suite *hybrid_suite(void)
{
    Suite *s = suite_create("hybrid");
    TCase *tc = tcase_create("state");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_hybrid_paths);
    tcase_add_test(tc, test_hybrid_rewind_and_branch);
    tcase_add_test(tc, test_hybrid_what_if);
    tcase_add_test(tc, test_hybrid_points_and_knock_out);
    tcase_add_test(tc, test_hybrid_what_if_leaves_no_trace);
    tcase_add_test(tc, test_hybrid_knock_out_reset);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(hybrid_suite)
