/* test_family_row.c — a new family on features that exist is one row. This program builds
 * the family table (src/formats/model_family.c, included below: the library's own copy
 * is then not linked) with rows added as a developer adds a family, each a copy of an
 * existing family's row under another name: "llama-twin", "qwen2-twin", "qwen3moe-twin",
 * "olmoe-twin", "phi3-twin", "gemma2-twin" and "gemma3-twin" (between them every field a
 * row has). Nothing else
 * changes: each twin's file is written from its row (family_gguf.h: its tensors, and
 * its keys named "phi3-twin.*"), loads with the description of the family it copies,
 * layer for layer, and computes the same logits bit for bit from the same weights; the
 * families a refusal lists name it. */
#include <math.h>
#include <string.h>

#define MODEL_FAMILY_EXTRA_ROWS                                                               \
    {.name = "llama-twin", .rope_layout = MODEL_ROPE_PAIRS, .act = MODEL_ACT_SILU,             \
     .rope_freqs = true, .full_rotary_only = true, .rope_dims_key = true,                      \
     .vocab_size_key = true, .experts = FAMILY_EXPERTS_OPTIONAL,                               \
     .expert_norm_weights = true},                                                             \
    {.name = "qwen3moe-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,         \
     .qk_norm = true, .eps_required = true, .experts = FAMILY_EXPERTS_REQUIRED,                \
     .expert_norm_weights = true, .expert_ff_key = true},                                      \
    {.name = "olmoe-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,            \
     .qk_norm = true, .qk_norm_whole = true, .eps_required = true,                             \
     .experts = FAMILY_EXPERTS_REQUIRED},                                                      \
    {.name = "qwen2-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,            \
     .attn_bias = true, .eps_required = true},                                                 \
    {.name = "phi3-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_SILU,             \
     .fused = true, .longrope = true, .eps_required = true, .swa_period = 1, .swa_local = 1,   \
     .swa_defaults = phi3_windows, .swa_zero_none = true, .rope_dims_key = true},              \
    {.name = "gemma2-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,           \
     .embed_scale_sqrt = true, .big_query_layers = 46, .post_norms = true, .tied = true,       \
     .eps_required = true, .attn_softcap = 50.0f, .final_softcap = 30.0f, .swa_period = 2,     \
     .swa_local = 1, .swa_defaults = gemma2_windows},                                          \
    {.name = "gemma3-twin", .rope_layout = MODEL_ROPE_HALVES, .act = MODEL_ACT_GELU,           \
     .embed_scale_sqrt = true, .big_query_layers = 62, .qk_norm = true, .post_norms = true,    \
     .tied = true, .eps_required = true, .swa_period = 6, .swa_local = 5,                      \
     .rope_base_swa = 10000.0f},
#include "model_family.c"

#include "family_gguf.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* The shapes written under each twin: every shape of the family it copies. */
static const struct {
    const char *twin, *shape;
} twins[] = {
    {"llama-twin", "llama"}, {"llama-twin", "llama256"}, {"llama-twin", "mixtral"},
    {"qwen2-twin", "qwen2"}, {"qwen3moe-twin", "qwen3moe"}, {"olmoe-twin", "olmoe"},
    {"phi3-twin", "phi3"},   {"phi3-twin", "phi3-partial"}, {"gemma2-twin", "gemma2"},
    {"gemma3-twin", "gemma3"},
};

/* Shape `name` written as family (NULL: its own) and opened with fp32 weights. */
static model *open_as(const char *name, const char *family)
{
    family_edit e = {.family = family};
    const char *path = temp_path(family ? "twin.gguf" : "family.gguf");
    ck_assert_msg(family_gguf_write(path, name, &e, NULL), "cannot write %s as %s", name,
                  family ? family : "itself");
    model_options opt;
    model_options_default(&opt);
    opt.weights = TENSOR_F32;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s as %s: %s", name,
                  family ? family : "itself", err.text);
    remove(path);
    return m;
}

/* The logits after a few tokens through a context of ctx (vocab_size of them, owned). */
static float *logits_of(const model *m, int ctx)
{
    transformer *t;
    llm_err err;
    ck_assert_msg(transformer_new(m, ctx, &t, &err) == LLM_OK, "%s", err.text);
    const float *logits = NULL;
    for (int i = 0; i < 12; i++)
        logits = transformer_forward(t, (7 * i + 3) % m->config.vocab_size, i, NULL);
    float *out = malloc(sizeof(float) * (size_t)m->config.vocab_size);
    memcpy(out, logits, sizeof(float) * (size_t)m->config.vocab_size);
    transformer_free(t);
    return out;
}

/* Each twin row is its family's row but for the name: what a developer copies. */
START_TEST(test_twin_rows_copy_their_family)
{
    for (size_t k = 0; k < sizeof twins / sizeof twins[0]; k++) {
        const model_family *twin = model_family_find(twins[k].twin);
        const model_family *base = model_family_find(family_shape_find(twins[k].shape)->arch);
        ck_assert_ptr_nonnull(twin);
        ck_assert_ptr_nonnull(base);
        ck_assert_ptr_ne(twin, base);
        model_family a, b;
        memcpy(&a, twin, sizeof a);
        memcpy(&b, base, sizeof b);
        a.name = b.name = NULL;
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0,
                      "the row of %s is not %s's row under another name: copy that row", twin->name,
                      base->name);
    }
    /* a refusal lists the families llmchat runs: the twins too */
    family_edit e = {.string_key = "general.architecture", .string_value = "frobnicator"};
    const char *path = temp_path("twin.gguf");
    ck_assert(family_gguf_write(path, "qwen2", &e, NULL));
    model *m = (model *)1;
    llm_err err;
    ck_assert_int_eq(model_open(path, NULL, &m, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "llmchat runs llama, qwen2, qwen3, qwen3moe, qwen35, "
                                   "qwen2moe, qwen35moe, olmoe, "
                                   "gpt-oss, phi3, "
                                   "gemma, gemma2, gemma3, gemma4, llama-twin, qwen3moe-twin, "
                                   "olmoe-twin, qwen2-twin, phi3-twin, gemma2-twin, "
                                   "gemma3-twin"), "%s", err.text);
    remove(path);
}
END_TEST

/* A twin's file loads as its family's does and computes the same numbers. */
START_TEST(test_twin_files_run_as_their_family)
{
    for (size_t k = 0; k < sizeof twins / sizeof twins[0]; k++) {
        const char *n = twins[k].shape;
        model *a = open_as(n, NULL), *b = open_as(n, twins[k].twin);
        const model_config *x = &a->config, *y = &b->config;
        ck_assert_str_eq(y->arch.name, twins[k].twin);
        ck_assert_msg(gguf_find_key(b->meta, "general.architecture") >= 0 &&
                          !strcmp(gguf_get_string(b->meta, "general.architecture", NULL),
                                  twins[k].twin), "%s: the file's architecture", n);
        model_arch xa = x->arch, ya = y->arch;
        ck_assert(xa.rope_layout == ya.rope_layout && xa.rope_dims == ya.rope_dims &&
                  xa.rope_base_swa == ya.rope_base_swa && xa.act == ya.act);
        ck_assert(xa.embed_scale == ya.embed_scale && xa.query_scale == ya.query_scale);
        ck_assert(xa.attn_softcap == ya.attn_softcap && xa.final_softcap == ya.final_softcap);
        ck_assert(xa.attn_bias == ya.attn_bias && xa.qk_norm == ya.qk_norm &&
                  xa.post_norms == ya.post_norms);
        ck_assert(xa.fused_qkv == ya.fused_qkv && xa.fused_gate_up == ya.fused_gate_up);
        ck_assert_int_eq(xa.sliding_window, ya.sliding_window);
        ck_assert(model_arch_is_llama(x) == model_arch_is_llama(y));
        ck_assert(x->dim == y->dim && x->n_layers == y->n_layers && x->head_size == y->head_size &&
                  x->q_dim == y->q_dim && x->kv_dim == y->kv_dim && x->vocab_size == y->vocab_size);
        ck_assert(x->shared_classifier == y->shared_classifier);
        ck_assert(x->rope_base == y->rope_base && x->rope_scale == y->rope_scale &&
                  x->rms_eps == y->rms_eps && x->rope_attn_factor == y->rope_attn_factor &&
                  x->rope_long_after == y->rope_long_after);
        ck_assert((x->rope_freqs != NULL) == (y->rope_freqs != NULL) &&
                  (x->rope_freqs_long != NULL) == (y->rope_freqs_long != NULL));
        ck_assert(a->n_params == b->n_params);
        for (int l = 0; l < x->n_layers; l++) {
            const model_layer *p = &a->layers[l], *q = &b->layers[l];
            ck_assert_int_eq(p->window, q->window);
            ck_assert((p->bq != NULL) == (q->bq != NULL) &&
                      (p->q_norm != NULL) == (q->q_norm != NULL) &&
                      (p->post_attn_norm != NULL) == (q->post_attn_norm != NULL));
        }
        /* 65 past phi3's LongRoPE original context (64): the long factors */
        for (int ctx = 64; ctx <= 65; ctx++) {
            float *la = logits_of(a, ctx), *lb = logits_of(b, ctx);
            for (int i = 0; i < x->vocab_size; i++)
                ck_assert_msg(isfinite(la[i]) && memcmp(&la[i], &lb[i], sizeof la[i]) == 0,
                              "%s as %s, context %d: logit %d is %g, the family's %g", n,
                              twins[k].twin, ctx, i, lb[i], la[i]);
            free(la);
            free(lb);
        }
        model_close(a);
        model_close(b);
    }
}
END_TEST

/* Where a twin's keys are named: its own prefix, not its family's. */
START_TEST(test_twin_keys_are_its_own)
{
    family_edit e = {.family = "gemma2-twin", .drop_key = "gemma2-twin.attention.sliding_window"};
    const char *path = temp_path("twin.gguf");
    ck_assert(family_gguf_write(path, "gemma2", &e, NULL));
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, NULL, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(m->layers[0].window, 4096); /* the row's default window */
    ck_assert_int_eq(m->layers[1].window, 0);
    model_close(m);
    e = (family_edit){.family = "qwen2-twin", .drop_key = "qwen2-twin.attention.layer_norm_rms_epsilon"};
    ck_assert(family_gguf_write(path, "qwen2", &e, NULL));
    m = (model *)1;
    ck_assert_int_eq(model_open(path, NULL, &m, &err), LLM_ERR_FORMAT);
    ck_assert_msg(strstr(err.text, "GGUF key qwen2-twin.attention.layer_norm_rms_epsilon is "
                                   "missing (the qwen2-twin architecture needs it)"), "%s", err.text);
    remove(path);
}
END_TEST

static Suite *family_row_suite(void)
{
    Suite *s = suite_create("family_row");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_twin_rows_copy_their_family);
    tcase_add_test(core, test_twin_files_run_as_their_family);
    tcase_add_test(core, test_twin_keys_are_its_own);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(family_row_suite)
