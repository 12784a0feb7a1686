/* test_model_family.c — the GGUF families (model_family.c, model_gguf.c,
 * model_gguf_weights.c) on tiny models written here (family_gguf.h): each family opens
 * from F32, F16, BF16 and Q8_0 files, as each weight type, and runs (the K-quants, fused
 * tensors included, in e2e_families.sh); its description is what llama.cpp's hyperparameters
 * for it say (RoPE layout and partial rotary, biases, QK-norm, post-norms, soft-caps,
 * the windows of each layer and their RoPE base, embedding and query scales, tied
 * output, fused tensors viewed row for row, LongRoPE's factors chosen by the context);
 * hostile files of each family are refused with one line naming what is wrong; and an
 * architecture llmchat does not run is refused by name with what it lacks; written as
 * Q8_0, Q4_0 or Q4_K, no tensor's rows end inside a block (llama.cpp reads them). The numbers
 * each family computes are checked against the references in e2e_families.sh. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_gguf.h"
#include "gguf.h"
#include "model.h"
#include "testutil.h"
#include "transformer.h"

/* ---- helpers ---- */

static const char *write_family(const char *name, const family_edit *e)
{
    const char *path = temp_path("family.gguf");
    ck_assert_msg(family_gguf_write(path, name, e, NULL), "cannot write the %s model", name);
    return path;
}

/* The family's model with its matrices stored as file_type, opened as type. */
static model *open_family_as(const char *name, uint32_t file_type, tensor_type type)
{
    family_edit e = {.type = file_type};
    const char *path = write_family(name, &e);
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, &opt, &m, &err) == LLM_OK, "%s: %s", name, err.text);
    remove(path);
    return m;
}

static model *open_family(const char *name, tensor_type type)
{
    return open_family_as(name, GGML_TYPE_F32, type);
}

/* The logits after running the first n of a few tokens through a context of ctx. */
static float *run_tokens(const model *m, int ctx, int n)
{
    transformer *t;
    llm_err err;
    ck_assert_msg(transformer_new(m, ctx, &t, &err) == LLM_OK, "%s", err.text);
    const float *logits = NULL;
    for (int i = 0; i < n; i++)
        logits = transformer_forward(t, (7 * i + 3) % m->config.vocab_size, i, NULL);
    ck_assert_ptr_nonnull(logits);
    float *out = malloc(sizeof(float) * m->config.vocab_size);
    memcpy(out, logits, sizeof(float) * m->config.vocab_size);
    transformer_free(t);
    for (int i = 0; i < m->config.vocab_size; i++)
        check_each(isfinite(out[i]), "logit %d is not finite", i);
    return out;
}

/* ---- the typed fixtures are files llama.cpp reads ---- */

/* Every family written with its matrices as Q8_0, Q4_0 or Q4_K: no quantized tensor has
 * rows that end inside a block (gemma4's per_layer_token_embd, 5 layers of 8 values, is
 * kept F32), which llama.cpp refuses ("not a multiple of block size") though llmchat
 * reads such a file (stories260K-q8_0.gguf). */
START_TEST(test_typed_fixtures_have_whole_block_rows)
{
    const uint32_t file_types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K};
    for (size_t i = 0; i < sizeof family_shapes / sizeof family_shapes[0]; i++)
        for (size_t k = 0; k < sizeof file_types / sizeof file_types[0]; k++) {
            family_edit e = {.type = file_types[k]};
            const char *path = write_family(family_shapes[i].name, &e);
            FILE *f = fopen(path, "rb");
            ck_assert_ptr_nonnull(f);
            fseek(f, 0, SEEK_END);
            long size = ftell(f);
            rewind(f);
            char *buf = malloc((size_t)size);
            ck_assert(buf && fread(buf, 1, (size_t)size, f) == (size_t)size);
            fclose(f);
            remove(path);
            gguf *g = NULL;
            llm_err err;
            ck_assert_msg(gguf_parse(buf, (size_t)size, path, &g, &err) == LLM_OK, "%s", err.text);
            int typed = 0;
            for (uint64_t t = 0; t < gguf_tensor_count(g); t++) {
                const gguf_tensor *x = gguf_tensor_at(g, t);
                typed += x->type == file_types[k];
                ck_assert_msg(x->dims[0] % ggml_type_get(x->type)->block == 0,
                              "%s as %s: '%s' has rows of %llu values", family_shapes[i].name,
                              ggml_type_get(file_types[k])->name, x->name,
                              (unsigned long long)x->dims[0]);
            }
            if (ggml_type_get(file_types[k])->block == 32) /* K-quants: only 256-wide rows */
                ck_assert_msg(typed > 0, "%s: no tensor written as the type", family_shapes[i].name);
            gguf_free(g);
            free(buf);
        }
}
END_TEST

/* ---- every family opens and runs ---- */

START_TEST(test_each_family_opens_and_runs)
{
    const tensor_type types[] = {TENSOR_F32, TENSOR_Q8_0, TENSOR_BLOCKS};
    const uint32_t file_types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0};
    for (size_t i = 0; i < sizeof family_shapes / sizeof family_shapes[0]; i++)
        for (size_t k = 0; k < 3 * 4; k++) {
            const family_shape *s = &family_shapes[i];
            model *m = open_family_as(s->name, file_types[k / 3], types[k % 3]);
            ck_assert_str_eq(m->config.arch.name, s->arch);
            ck_assert_int_eq(m->config.head_size, s->head);
            ck_assert_int_eq(m->config.q_dim, s->heads * s->head);
            if (!s->pattern) /* per-layer shapes: test_gemma4_description */
                ck_assert_int_eq(m->config.kv_dim, s->kv * s->head);
            ck_assert(m->config.shared_classifier == s->tied);
            /* every value of the file is a parameter, the tied classifier counted once,
             * but those of multi-token-prediction blocks (not run) */
            family_tensors l = {0};
            family_list(&l, s, model_family_find(s->arch), 96);
            long long want = 0;
            for (int t = 0, b; t < l.n; t++)
                if (sscanf(l.t[t].name, "blk.%d.", &b) != 1 || b < s->layers)
                    want += (long long)l.t[t].ne0 * (long long)(l.t[t].ne1 ? l.t[t].ne1 : 1) *
                        (long long)(l.t[t].ne2 ? l.t[t].ne2 : 1);
            free(l.t);
            ck_assert_msg(m->n_params == want, "%s: %lld parameters, %lld in the file",
                          s->name, m->n_params, want);
            free(run_tokens(m, 64, 12));
            model_close(m);
        }
}
END_TEST

/* ---- the descriptions ---- */

START_TEST(test_descriptions)
{
    const struct {
        const char *name;
        model_rope_layout rope;
        int rope_dims;
        model_activation act;
        bool bias, qk_norm, post_norms, fused, llama; /* llama: llama's description */
        float embed_scale, attn_cap, final_cap, base_swa;
        int windows[8]; /* each layer's */
    } want[] = {
        {.name = "llama", .rope = MODEL_ROPE_PAIRS, .rope_dims = 16, .act = MODEL_ACT_SILU,
         .embed_scale = 1.0f, .llama = true},
        {.name = "qwen2", .rope = MODEL_ROPE_HALVES, .rope_dims = 16, .bias = true,
         .embed_scale = 1.0f},
        {.name = "qwen3", .rope = MODEL_ROPE_HALVES, .rope_dims = 32, .qk_norm = true,
         .embed_scale = 1.0f},
        {.name = "phi3", .rope = MODEL_ROPE_HALVES, .rope_dims = 16, .fused = true,
         .embed_scale = 1.0f, .windows = {16, 16}},
        {.name = "phi3-partial", .rope = MODEL_ROPE_HALVES, .rope_dims = 12, .fused = true,
         .embed_scale = 1.0f},
        {.name = "gemma", .rope = MODEL_ROPE_HALVES, .rope_dims = 32, .act = MODEL_ACT_GELU,
         .embed_scale = 8.0f},
        {.name = "gemma2", .rope = MODEL_ROPE_HALVES, .rope_dims = 32, .act = MODEL_ACT_GELU,
         .post_norms = true, .embed_scale = 8.0f, .attn_cap = 50.0f, .final_cap = 30.0f,
         .windows = {4, 0, 4, 0}},
        {.name = "gemma3", .rope = MODEL_ROPE_HALVES, .rope_dims = 32, .act = MODEL_ACT_GELU,
         .qk_norm = true, .post_norms = true, .embed_scale = 8.0f, .base_swa = 10000.0f,
         .windows = {4, 4, 4, 4, 4, 0, 4}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        model *m = open_family(want[i].name, TENSOR_F32);
        const model_arch *a = &m->config.arch;
        const char *n = want[i].name;
        ck_assert_msg(a->rope_layout == want[i].rope, "%s: RoPE layout", n);
        ck_assert_msg(a->rope_dims == want[i].rope_dims, "%s: rope_dims %d", n, a->rope_dims);
        ck_assert_msg(a->act == want[i].act, "%s: activation", n);
        ck_assert_msg(a->attn_bias == want[i].bias && a->qk_norm == want[i].qk_norm &&
                          a->post_norms == want[i].post_norms, "%s: biases or norms", n);
        ck_assert_msg(a->fused_qkv == want[i].fused && a->fused_gate_up == want[i].fused,
                      "%s: fused tensors", n);
        ck_assert_msg(fabsf(a->embed_scale - want[i].embed_scale) < 1e-6f, "%s: embed_scale %g", n,
                      a->embed_scale);
        ck_assert_msg(a->attn_softcap == want[i].attn_cap && a->final_softcap == want[i].final_cap,
                      "%s: soft-caps", n);
        ck_assert_msg(a->rope_base_swa == want[i].base_swa, "%s: rope_base_swa %g", n,
                      a->rope_base_swa);
        ck_assert_msg(model_arch_is_llama(&m->config) == want[i].llama, "%s: llama's or not", n);
        /* 1 / sqrt(head size) for all of these: the 27B Gemmas' own scale is by layers */
        ck_assert_msg(fabsf(a->query_scale - 1.0f / sqrtf((float)m->config.head_size)) < 1e-7f,
                      "%s: query_scale", n);
        for (int l = 0; l < m->config.n_layers; l++) {
            ck_assert_msg(m->layers[l].window == want[i].windows[l], "%s: layer %d's window %d", n,
                          l, m->layers[l].window);
            ck_assert_msg((m->layers[l].bq != NULL) == want[i].bias, "%s: bq", n);
            ck_assert_msg((m->layers[l].q_norm != NULL) == want[i].qk_norm, "%s: q_norm", n);
            ck_assert_msg((m->layers[l].post_ffn_norm != NULL) == want[i].post_norms, "%s: post", n);
        }
        model_close(m);
    }
}
END_TEST

/* Gemma 4: each layer's heads, KV heads, feed-forward and cache as the family_gguf.h
 * shape has them (SSGSG, the last two sharing the caches of layers 1 and 2; sliding heads
 * of 16, global of 32 with one KV head and no attn_v); the KV cache holds only the layers
 * that write one; the proportional RoPE's divisors. */
START_TEST(test_gemma4_description)
{
    model *m = open_family("gemma4", TENSOR_F32);
    const model_config *c = &m->config;
    const int head[] = {16, 16, 32, 16, 32}, kv[] = {2, 2, 1, 2, 1}, from[] = {0, 1, 2, 1, 2};
    const int ff[] = {96, 96, 96, 192, 192}, window[] = {4, 4, 0, 4, 0};
    ck_assert(c->layers_vary && c->arch.value_norm);
    ck_assert_int_eq(c->ple_dim, 8);
    ck_assert(c->arch.query_scale == 1.0f);
    ck_assert_int_eq(c->arch.rope_dims, 32);
    ck_assert_int_eq(c->arch.rope_dims_swa, 16);
    ck_assert(c->arch.rope_base_swa == 10000.0f && c->rope_base == 1e6f);
    ck_assert(c->arch.final_softcap == 30.0f);
    ck_assert_int_eq(c->kv_dim, 32);
    ck_assert_int_eq(c->hidden_dim, 192);
    for (int l = 0; l < 5; l++) {
        const model_layer *L = &m->layers[l];
        ck_assert_msg(L->head_size == head[l] && L->n_kv_heads == kv[l] &&
                          L->kv_layer == from[l] && L->hidden_dim == ff[l] &&
                          L->window == window[l] && L->q_dim == 4 * head[l] &&
                          L->kv_dim == kv[l] * head[l], "layer %d's shape", l);
        ck_assert_msg((L->wk.rows > 0) == (l < 3) && (L->wv.rows > 0) == (l < 2) &&
                          (L->k_norm != NULL) == (l < 3), "layer %d's keys and values", l);
        ck_assert_msg(L->out_scale && *L->out_scale > 0.4f && L->ple_gate.rows == 8 &&
                          L->ple_proj.cols == 8 && L->ple_norm, "layer %d's output", l);
    }
    for (int i = 0; i < 16; i++)
        ck_assert_msg(c->rope_freqs[i] == (i < 4 ? 1.0f : 1e30f), "pair %d", i);
    transformer *t = NULL;
    llm_err err;
    ck_assert_int_eq(transformer_new_kv(m, 16, TRANSFORMER_KV_F32, &t, &err), LLM_OK);
    /* per position: layers 0 and 1 (2 KV heads of 16), 2 (1 of 32); keys and values */
    ck_assert_uint_eq(transformer_kv_bytes(t), (size_t)16 * (32 + 32 + 32) * 2 * sizeof(float));
    transformer_free(t);
    model_close(m);
}
END_TEST

/* Gemma 4 with experts (the 26B-A4B's layout, family_gguf.h's gemma4-moe): every layer
 * keeps its dense feed-forward beside 8 experts, with the parts' norms and the router's
 * scale; the experts' gate and up matrices are views of the one stack's rows (expert
 * e's gate rows, then its up rows), its down matrices of their stack. */
START_TEST(test_gemma4_moe_description)
{
    model *m = open_family("gemma4-moe", TENSOR_F32);
    const model_config *c = &m->config;
    ck_assert(c->arch.dense_beside_experts);
    ck_assert_int_eq(c->n_experts, 8);
    ck_assert_int_eq(c->n_experts_used, 2);
    ck_assert_int_eq(c->expert_hidden_dim, 64);
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        ck_assert_msg(L->w1.rows == 96 && L->w3.rows == 96 && L->w2.cols == 96,
                      "layer %d's dense feed-forward", l);
        ck_assert_msg(L->router.rows == 8 && L->router_scale && L->pre_experts_norm &&
                          L->post_dense_norm && L->post_experts_norm && L->post_ffn_norm &&
                          L->expert_scale && L->gate_up_stack,
                      "layer %d's parts", l);
        const float *stack = L->expert_gate[0].f;
        for (int e = 0; e < 8; e++) {
            ck_assert(L->expert_gate[e].rows == 64 && L->expert_up[e].rows == 64 &&
                      L->expert_down[e].rows == 256 && L->expert_down[e].cols == 64);
            ck_assert_msg(L->expert_gate[e].f == stack + (size_t)e * 128 * 256 &&
                              L->expert_up[e].f == stack + ((size_t)e * 128 + 64) * 256,
                          "layer %d expert %d: not the stack's rows", l, e);
            ck_assert(L->expert_scale[e] >= 0.5f && L->expert_scale[e] <= 1.0f);
        }
    }
    model_close(m);
}
END_TEST

/* gpt-oss: the layers slide in turns, each has its sinks, output bias and experts'
 * biases, and YaRN's frequencies are ggml's (ggml_rope_yarn_corr_dims, rope_yarn: here
 * from the published formula in double precision): head 16, base 150000, original
 * context 64, factor 32, betas 32 and 1. */
START_TEST(test_gpt_oss_description)
{
    model *m = open_family("gpt-oss", TENSOR_F32);
    const model_config *c = &m->config;
    ck_assert_int_eq(c->arch.act, MODEL_ACT_SWIGLU_OAI);
    ck_assert(c->arch.attn_sinks && c->arch.attn_out_bias && c->arch.expert_biases);
    ck_assert(c->arch.expert_norm_weights);
    ck_assert_int_eq(m->layers[0].window, 8);
    ck_assert_int_eq(m->layers[1].window, 0);
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *L = &m->layers[l];
        ck_assert(L->sinks && L->bo && L->router_bias && L->expert_gate_bias &&
                  L->expert_up_bias && L->expert_down_bias && L->bq);
    }
    ck_assert(c->rope_yarn && c->rope_freqs);
    ck_assert(c->rope_scale == 1.0f);
    int rot = c->arch.rope_dims;
    double dim_of = rot / (2 * log(150000.0));
    double lo = fmax(0.0, floor(dim_of * log(64 / (32 * 2 * M_PI))));
    double hi = fmin(rot - 1, ceil(dim_of * log(64 / (1 * 2 * M_PI))));
    for (int i = 0; i < rot / 2; i++) {
        double ramp = 1.0 - fmin(1.0, fmax(0.0, (i - lo) / fmax(0.001, hi - lo)));
        double mix = (1.0 / 32) * (1.0 - ramp) + ramp;
        ck_assert_msg(fabs(c->rope_freqs[i] * mix - 1.0) < 1e-6, "pair %d: divisor %g, mix %g", i,
                      c->rope_freqs[i], mix);
    }
    /* the first pairs turn as before (extrapolated), the last are interpolated */
    ck_assert(fabsf(c->rope_freqs[0] - 1.0f) < 1e-6f);
    ck_assert(fabsf(c->rope_freqs[rot / 2 - 1] - 32.0f) < 1e-4f);
    ck_assert(fabsf(c->rope_attn_factor - (float)(1.0 + 0.1 * log(32.0))) < 1e-5f);
    model_close(m);
}
END_TEST

/* Gemma 2's 27B (46 layers) scales queries by 1 / sqrt(dim / n_heads), as llama.cpp;
 * its other sizes by 1 / sqrt(head size). */
START_TEST(test_big_gemma_query_scale)
{
    family_edit e = {.layers = 46};
    const char *path = write_family("gemma2", &e);
    model *m = NULL;
    llm_err err;
    ck_assert_msg(model_open(path, NULL, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_int_eq(m->config.n_layers, 46);
    ck_assert(fabsf(m->config.arch.query_scale - 1.0f / sqrtf(64.0f / 4.0f)) < 1e-7f);
    ck_assert_int_eq(m->layers[44].window, 4);
    ck_assert_int_eq(m->layers[45].window, 0);
    model_close(m);
    remove(path);
}
END_TEST

/* Phi-3's fused tensors: wq, wk, wv are attn_qkv's rows, w1 and w3 ffn_up's halves. */
START_TEST(test_fused_views_are_the_file_rows)
{
    const tensor_type types[] = {TENSOR_F32, TENSOR_Q8_0};
    for (size_t k = 0; k < 2; k++) {
        model *m = open_family("phi3", types[k]);
        const model_config *c = &m->config;
        const gguf *g = m->meta;
        const gguf_tensor *qkv = gguf_find_tensor(g, "blk.1.attn_qkv.weight");
        const gguf_tensor *up = gguf_find_tensor(g, "blk.1.ffn_up.weight");
        const model_layer *y = &m->layers[1];
        const struct {
            const tensor *view;
            const gguf_tensor *file;
            int first;
        } views[] = {
            {&y->wq, qkv, 0}, {&y->wk, qkv, c->q_dim}, {&y->wv, qkv, c->q_dim + c->kv_dim},
            {&y->w1, up, 0}, {&y->w3, up, c->hidden_dim},
        };
        float row[64], file_row[64];
        for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
            ck_assert_int_eq(views[v].view->cols, c->dim);
            for (int r = 0; r < views[v].view->rows; r += 7) {
                quant_dequantize_row(row, views[v].view, r);
                memcpy(file_row, (const float *)views[v].file->data + (size_t)(views[v].first + r) * c->dim,
                       sizeof file_row);
                for (int j = 0; j < c->dim; j++)
                    ck_assert_msg(fabsf(row[j] - file_row[j]) <= (types[k] == TENSOR_F32 ? 0.0f : 0.02f),
                                  "view %zu row %d value %d: %g, the file's %g", v, r, j, row[j],
                                  file_row[j]);
            }
        }
        model_close(m);
    }
}
END_TEST

/* LongRoPE: the short factors up to the original context (64), the long ones past it. */
START_TEST(test_longrope_by_context)
{
    model *m = open_family("phi3", TENSOR_F32);
    ck_assert_ptr_nonnull(m->config.rope_freqs);
    ck_assert_ptr_nonnull(m->config.rope_freqs_long);
    ck_assert_int_eq(m->config.rope_long_after, 64);
    ck_assert(fabsf(m->config.rope_attn_factor - 1.19f) < 1e-6f);
    float *at64 = run_tokens(m, 64, 20), *at65 = run_tokens(m, 65, 20), *at200 = run_tokens(m, 200, 20);
    double short_long = 0.0, long_long = 0.0;
    for (int i = 0; i < m->config.vocab_size; i++) {
        short_long += fabs((double)at64[i] - at65[i]);
        long_long += fabs((double)at65[i] - at200[i]);
    }
    ck_assert_msg(short_long > 1e-3 && long_long == 0.0, "contexts 64 / 65 differ by %g, 65 / 200 by %g",
                  short_long, long_long);
    free(at64);
    free(at65);
    free(at200);
    model_close(m);
}
END_TEST

/* ---- hostile files ---- */

/* Each family's broken files and the line each gets. */
static const struct {
    const char *family;
    family_edit e;
    llm_status status;
    const char *says;
} hostile[] = {
    /* qwen2: its biases */
    {"qwen2", {.drop_tensor = "blk.1.attn_k.bias"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.attn_k.bias is missing (the qwen2 architecture has it)"},
    {"qwen2", {.resize_tensor = "blk.0.attn_v.bias", .ne0 = 64}, LLM_ERR_FORMAT,
     "blk.0.attn_v.bias has dims [64], expected [32]"},
    {"qwen2", {.value_tensor = "blk.1.attn_q.bias", .value_index = 3, .value = NAN},
     LLM_ERR_NUMERIC, "blk.1.attn_q.bias holds a NaN"},
    {"qwen2", {.uint_key = "qwen2.attention.head_count", .uint_value = 5}, LLM_ERR_FORMAT,
     "dim 64 is not a multiple of n_heads 5"},
    {"qwen2", {.drop_key = "qwen2.attention.layer_norm_rms_epsilon"}, LLM_ERR_FORMAT,
     "qwen2.attention.layer_norm_rms_epsilon is missing"},
    {"qwen2", {.extra_tensor = "blk.0.ffn_gate_exps.weight"}, LLM_ERR_FORMAT,
     "blk.0.ffn_gate_exps.weight is not part of the qwen2 architecture llmchat runs "
     "(expert tensors, but the file's keys say no experts)"},
    {"qwen2", {.uint_key = "qwen2.expert_count", .uint_value = 8}, LLM_ERR_FORMAT,
     "qwen2.expert_count is 8, but the qwen2 architecture has no mixture of experts"},
    /* mixtures of experts: counts against shapes, the router, the experts */
    {"qwen3moe", {.uint_key = "qwen3moe.expert_count", .uint_value = 16}, LLM_ERR_FORMAT,
     "blk.0.ffn_gate_inp.weight has dims [64, 8], expected [64, 16]"},
    {"qwen3moe", {.uint_key = "qwen3moe.expert_used_count", .uint_value = 9}, LLM_ERR_FORMAT,
     "qwen3moe.expert_used_count is 9, more than the 8 experts of qwen3moe.expert_count"},
    {"qwen3moe", {.uint_key = "qwen3moe.expert_used_count", .uint_value = 0}, LLM_ERR_FORMAT,
     "qwen3moe.expert_used_count is 0: a mixture of experts must say how many experts a "
     "token uses"},
    {"qwen3moe", {.drop_key = "qwen3moe.expert_count"}, LLM_ERR_FORMAT,
     "qwen3moe.expert_count is missing (the qwen3moe architecture is a mixture of experts)"},
    {"qwen3moe", {.uint_key = "qwen3moe.expert_count", .uint_value = 4096}, LLM_ERR_FORMAT,
     "qwen3moe.expert_count is 4096, more than the 512 experts this program accepts"},
    {"qwen3moe", {.uint_key = "qwen3moe.expert_feed_forward_length", .uint_value = 0},
     LLM_ERR_FORMAT, "an expert's hidden size is 0 (qwen3moe.expert_feed_forward_length)"},
    {"qwen3moe", {.resize_tensor = "blk.1.ffn_gate_inp.weight", .ne0 = 32, .ne1 = 8},
     LLM_ERR_FORMAT, "blk.1.ffn_gate_inp.weight has dims [32, 8], expected [64, 8]"},
    {"qwen3moe", {.resize_tensor = "blk.0.ffn_up_exps.weight", .ne0 = 64, .ne1 = 32, .ne2 = 4},
     LLM_ERR_FORMAT, "blk.0.ffn_up_exps.weight has dims [64, 32, 4], expected [64, 32, 8] "
                     "(from the qwen3moe.* keys: 8 experts)"},
    {"qwen3moe", {.resize_tensor = "blk.0.ffn_down_exps.weight", .ne0 = 32, .ne1 = 64},
     LLM_ERR_FORMAT, "blk.0.ffn_down_exps.weight has dims [32, 64], expected [32, 64, 8]"},
    {"qwen3moe", {.drop_tensor = "blk.1.ffn_gate_exps.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.ffn_gate_exps.weight is missing"},
    {"qwen3moe", {.extra_tensor = "blk.0.ffn_up_shexp.weight"}, LLM_ERR_FORMAT,
     "blk.0.ffn_up_shexp.weight is not part of the qwen3moe architecture llmchat runs (a "
     "shared expert, which the family does not have)"},
    /* a shared expert beside the routed ones: its size, its tensors */
    {"qwen2moe", {.uint_key = "qwen2moe.expert_shared_feed_forward_length", .uint_value = 0},
     LLM_ERR_FORMAT, "the shared expert's hidden size is 0 "
                     "(qwen2moe.expert_shared_feed_forward_length)"},
    {"qwen2moe", {.uint_key = "qwen2moe.expert_shared_feed_forward_length", .uint_value = 64},
     LLM_ERR_FORMAT, "blk.0.ffn_gate_shexp.weight has dims [64, 96], expected [64, 64]"},
    {"qwen2moe", {.drop_tensor = "blk.1.ffn_gate_inp_shexp.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.ffn_gate_inp_shexp.weight is missing"},
    {"qwen35moe", {.resize_tensor = "blk.2.ffn_down_shexp.weight", .ne0 = 64, .ne1 = 256},
     LLM_ERR_FORMAT, "blk.2.ffn_down_shexp.weight has dims [64, 256], expected [96, 256]"},
    {"qwen3moe", {.value_tensor = "blk.0.ffn_gate_inp.weight", .value_index = 70, .value = NAN},
     LLM_ERR_NUMERIC, "blk.0.ffn_gate_inp.weight holds NaN or infinite values (row 1)"},
    {"mixtral", {.extra_tensor = "blk.0.ffn_gate.0.weight"}, LLM_ERR_FORMAT,
     "blk.0.ffn_gate.0.weight is not part of the llama architecture llmchat runs (a dense "
     "feed-forward in a layer of experts"},
    {"olmoe", {.resize_tensor = "blk.0.attn_q_norm.weight", .ne0 = 16}, LLM_ERR_FORMAT,
     "blk.0.attn_q_norm.weight has dims [16], expected [64]"},
    {"qwen2", {.extra_tensor = "blk.0.attn_output.bias"}, LLM_ERR_FORMAT,
     "blk.0.attn_output.bias is not part of the qwen2 architecture"},
    /* qwen3: its norms and head size */
    {"qwen3", {.resize_tensor = "blk.0.attn_k_norm.weight", .ne0 = 16}, LLM_ERR_FORMAT,
     "blk.0.attn_k_norm.weight has dims [16], expected [32]"},
    {"qwen3", {.drop_tensor = "blk.1.attn_q_norm.weight"}, LLM_ERR_FORMAT,
     "blk.1.attn_q_norm.weight is missing"},
    {"qwen3", {.uint_key = "qwen3.attention.key_length", .uint_value = 33}, LLM_ERR_FORMAT,
     "head size 33 (key_length) is odd"},
    {"qwen3", {.uint_key = "qwen3.attention.value_length", .uint_value = 16}, LLM_ERR_FORMAT,
     "qwen3.attention.value_length is 16, but the keys' heads hold 32 values"},
    {"qwen3", {.uint_key = "qwen3.attention.head_count_kv", .uint_value = 3}, LLM_ERR_FORMAT,
     "n_kv_heads 3 does not divide n_heads 4"},
    /* phi3: fused tensors, window, LongRoPE, partial rotary */
    {"phi3", {.resize_tensor = "blk.0.attn_qkv.weight", .ne0 = 64, .ne1 = 96}, LLM_ERR_FORMAT,
     "blk.0.attn_qkv.weight has dims [64, 96], expected [64, 128]"},
    {"phi3", {.resize_tensor = "blk.1.ffn_up.weight", .ne0 = 64, .ne1 = 96}, LLM_ERR_FORMAT,
     "blk.1.ffn_up.weight has dims [64, 96], expected [64, 192]"},
    {"phi3", {.drop_key = "phi3.attention.sliding_window"}, LLM_ERR_FORMAT,
     "phi3.attention.sliding_window is missing"},
    {"phi3", {.drop_tensor = "rope_factors_short.weight"}, LLM_ERR_FORMAT,
     "rope_factors_short.weight is missing"},
    {"phi3", {.value_tensor = "rope_factors_long.weight", .value_index = 2, .value = 0.0f},
     LLM_ERR_FORMAT, "rope_factors_long.weight[2] is 0, not a plausible RoPE frequency factor"},
    {"phi3", {.uint_key = "phi3.rope.dimension_count", .uint_value = 13}, LLM_ERR_FORMAT,
     "phi3.rope.dimension_count is 13, but RoPE turns an even number of a head's 16 values"},
    {"phi3", {.uint_key = "phi3.rope.dimension_count", .uint_value = 18}, LLM_ERR_FORMAT,
     "phi3.rope.dimension_count is 18"},
    {"phi3", {.float_key = "phi3.rope.scaling.attn_factor", .float_value = 1e5f}, LLM_ERR_FORMAT,
     "not a plausible RoPE attention factor"},
    {"phi3", {.value_tensor = "blk.0.attn_qkv.weight", .value_index = 64 * 100 + 5, .value = NAN},
     LLM_ERR_NUMERIC, "blk.0.attn_qkv.weight holds NaN or infinite values (row 100)"},
    {"phi3", {.value_tensor = "blk.1.ffn_up.weight", .value_index = 64 * 150, .value = NAN},
     LLM_ERR_NUMERIC, "blk.1.ffn_up.weight holds NaN or infinite values (row 150)"},
    /* gemma: tied, head size from key_length */
    {"gemma", {.extra_tensor = "output.weight"}, LLM_ERR_FORMAT,
     "output.weight is not part of the gemma architecture"},
    {"gemma", {.resize_tensor = "blk.0.attn_output.weight", .ne0 = 64, .ne1 = 64},
     LLM_ERR_FORMAT, "blk.0.attn_output.weight has dims [64, 64], expected [128, 64]"},
    {"gemma", {.drop_key = "gemma.attention.key_length"}, LLM_ERR_FORMAT,
     "gemma.attention.value_length is 32, but the keys' heads hold 16 values"},
    {"gemma", {.drop_key = "gemma.attention.value_length", .uint_key =
               "gemma.attention.key_length", .uint_value = 16}, LLM_ERR_FORMAT,
     "blk.0.attn_q.weight has dims [64, 128], expected [64, 64]"},
    /* gemma2: window, post-norms, soft-caps */
    {"gemma2", {.uint_key = "gemma2.attention.sliding_window", .uint_value = 0}, LLM_ERR_FORMAT,
     "gemma2.attention.sliding_window is 0, but the gemma2 architecture's local layers attend "
     "over a window of at least one key"},
    {"gemma2", {.drop_tensor = "blk.3.post_ffw_norm.weight"}, LLM_ERR_FORMAT,
     "blk.3.post_ffw_norm.weight is missing"},
    {"gemma2", {.resize_tensor = "blk.2.post_attention_norm.weight", .ne0 = 32}, LLM_ERR_FORMAT,
     "blk.2.post_attention_norm.weight has dims [32], expected [64]"},
    {"gemma2", {.float_key = "gemma2.attn_logit_softcapping", .float_value = -50.0f},
     LLM_ERR_FORMAT, "gemma2.attn_logit_softcapping is not a positive number"},
    {"gemma2", {.value_tensor = "blk.1.post_attention_norm.weight", .value_index = 9,
                .value = INFINITY}, LLM_ERR_NUMERIC,
     "blk.1.post_attention_norm.weight holds a NaN or infinite value (index 9)"},
    /* gemma3: its window is required, its q/k norms */
    {"gemma3", {.drop_key = "gemma3.attention.sliding_window"}, LLM_ERR_FORMAT,
     "gemma3.attention.sliding_window is missing"},
    {"gemma3", {.drop_tensor = "blk.5.attn_k_norm.weight"}, LLM_ERR_FORMAT,
     "blk.5.attn_k_norm.weight is missing"},
    {"gemma3", {.string_key = "gemma3.rope.scaling.type", .string_value = "dynamic"},
     LLM_ERR_FORMAT, "RoPE scaling 'dynamic' (factor 8) is not supported"},
    /* YaRN: DeepSeek's log multiplier is not run; a factor below 1 shrinks nothing */
    {"gpt-oss", {.float_key = "gpt-oss.rope.scaling.yarn_log_multiplier", .float_value = 0.1f},
     LLM_ERR_FORMAT, "gpt-oss.rope.scaling.yarn_log_multiplier is not supported"},
    {"gpt-oss", {.float_key = "gpt-oss.rope.scaling.factor", .float_value = 0.5f},
     LLM_ERR_FORMAT, "gpt-oss.rope.scaling.factor is 0.5: YaRN extends a context"},
    /* gpt-oss: sinks, the output bias, the experts' biases, its norm's name, its pattern */
    {"gpt-oss", {.drop_tensor = "blk.1.attn_sinks.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.attn_sinks.weight is missing (the gpt-oss architecture has it)"},
    {"gpt-oss", {.resize_tensor = "blk.0.attn_sinks.weight", .ne0 = 2}, LLM_ERR_FORMAT,
     "blk.0.attn_sinks.weight has dims [2], expected [4]"},
    {"gpt-oss", {.drop_tensor = "blk.0.attn_output.bias"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.0.attn_output.bias is missing"},
    {"gpt-oss", {.resize_tensor = "blk.0.ffn_up_exps.bias", .ne0 = 64, .ne1 = 4},
     LLM_ERR_FORMAT, "blk.0.ffn_up_exps.bias has dims [64, 4], expected [64, 8]"},
    {"gpt-oss", {.drop_tensor = "blk.1.ffn_gate_inp.bias"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.ffn_gate_inp.bias is missing"},
    {"gpt-oss", {.drop_tensor = "blk.0.post_attention_norm.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.0.post_attention_norm.weight is missing"},
    {"gpt-oss", {.extra_tensor = "blk.0.ffn_norm.weight"}, LLM_ERR_FORMAT,
     "blk.0.ffn_norm.weight is not part of the gpt-oss architecture"},
    {"gpt-oss", {.uint_key = "gpt-oss.attention.sliding_window_pattern", .uint_value = 3},
     LLM_ERR_FORMAT, "gpt-oss.attention.sliding_window_pattern says another pattern of "
                     "sliding layers than the gpt-oss architecture's (layer l slides when l % 2 "
                     "< 1)"},
    {"gpt-oss", {.drop_key = "gpt-oss.attention.sliding_window"}, LLM_ERR_FORMAT,
     "GGUF key gpt-oss.attention.sliding_window is missing"},
    /* a name with a NUL inside is not the name before it */
    {"gemma2", {.string_key = "general.architecture", .string_value = "gemma2\0x",
                .string_len = 8}, LLM_ERR_FORMAT, "general.architecture holds a NUL byte"},
    {"gemma2", {.string_key = "general.architecture", .string_value = "gemma2\0",
                .string_len = 7}, LLM_ERR_FORMAT, "general.architecture holds a NUL byte"},
    {"gemma3", {.string_key = "gemma3.rope.scaling.type", .string_value = "linear\0yarn",
                .string_len = 11}, LLM_ERR_FORMAT,
     "gemma3.rope.scaling.type holds a NUL byte"},
    /* qwen35: the Gated DeltaNets' sizes against each other and the tensors, the layer
     * kinds, the convolution, RoPE's sections, the blocks */
    {"qwen35", {.recurrent_layers = 3}, LLM_ERR_FORMAT,
     "qwen35.attention.recurrent_layers holds 3 flags, but the file has 4 blocks"},
    {"qwen35", {.uint_key = "qwen35.ssm.conv_kernel", .uint_value = 0}, LLM_ERR_FORMAT,
     "GGUF key qwen35.ssm.conv_kernel is 0, not 1 to 64"},
    {"qwen35", {.uint_key = "qwen35.ssm.inner_size", .uint_value = 48}, LLM_ERR_FORMAT,
     "qwen35.ssm.inner_size is 48, but 4 value heads of qwen35.ssm.state_size 16 make 64"},
    {"qwen35", {.uint_key = "qwen35.ssm.state_size", .uint_value = 8}, LLM_ERR_FORMAT,
     "qwen35.ssm.inner_size is 64, but 4 value heads of qwen35.ssm.state_size 8 make 32"},
    {"qwen35", {.uint_key = "qwen35.ssm.time_step_rank", .uint_value = 3}, LLM_ERR_FORMAT,
     "qwen35.ssm.time_step_rank is 3, not a multiple of qwen35.ssm.group_count (2)"},
    {"qwen35", {.drop_key = "qwen35.ssm.group_count"}, LLM_ERR_FORMAT,
     "GGUF key qwen35.ssm.group_count is missing (the qwen35 architecture needs it)"},
    {"qwen35", {.uint_key = "qwen35.ssm.conv_kernel", .uint_value = 3}, LLM_ERR_FORMAT,
     "blk.0.ssm_conv1d.weight has dims [4, 128], expected [3, 128]"},
    {"qwen35", {.resize_tensor = "blk.2.ssm_a", .ne0 = 2}, LLM_ERR_FORMAT,
     "blk.2.ssm_a has dims [2], expected [4]"},
    {"qwen35", {.drop_tensor = "blk.0.ssm_dt.bias"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.0.ssm_dt.bias is missing (the qwen35 architecture has it)"},
    {"qwen35", {.resize_tensor = "blk.1.attn_q.weight", .ne0 = 64, .ne1 = 64}, LLM_ERR_FORMAT,
     "blk.1.attn_q.weight has dims [64, 64], expected [64, 128]"},
    {"qwen35", {.extra_tensor = "blk.0.attn_q_norm.weight"}, LLM_ERR_FORMAT,
     "blk.0.attn_q_norm.weight is not part of the qwen35 architecture"},
    {"qwen35", {.drop_key = "qwen35.rope.dimension_sections"}, LLM_ERR_FORMAT,
     "qwen35.rope.dimension_sections is missing or not 3 or 4 counts"},
    {"qwen35", {.uint_key = "qwen35.full_attention_interval", .uint_value = 0}, LLM_ERR_FORMAT,
     "GGUF key qwen35.full_attention_interval is 0"},
    {"qwen35", {.uint_key = "qwen35.nextn_predict_layers", .uint_value = 4}, LLM_ERR_FORMAT,
     "qwen35.nextn_predict_layers is 4, but the file has 4 blocks in all"},
    {"qwen35-mtp", {.extra_tensor = "blk.5.attn_norm.weight"}, LLM_ERR_FORMAT,
     "blk.5.attn_norm.weight is not part of the qwen35 architecture"},
    /* gemma4: the layers' flags, the shared caches, a sliding head, the proportional
     * RoPE, the per-layer inputs, the tensors of a sharing layer */
    {"gemma4", {.drop_key = "gemma4.attention.sliding_window_pattern"}, LLM_ERR_FORMAT,
     "gemma4.attention.sliding_window_pattern is missing or not an array"},
    {"gemma4", {.uint_key = "gemma4.attention.shared_kv_layers", .uint_value = 3},
     LLM_ERR_FORMAT, "gemma4.attention.shared_kv_layers is 3 of 5 blocks: the layers that "
                     "share a KV cache read the last sliding and the last global layer before "
                     "them, which must be blocks 0 and 1"},
    {"gemma4", {.uint_key = "gemma4.attention.key_length_swa", .uint_value = 15},
     LLM_ERR_FORMAT, "gemma4.attention.key_length_swa is 15 and value_length_swa 16"},
    {"gemma4", {.uint_key = "gemma4.rope.dimension_count_swa", .uint_value = 18},
     LLM_ERR_FORMAT, "gemma4.rope.dimension_count_swa is 18, but RoPE turns an even number "
                     "of a sliding head's 16 values"},
    {"gemma4", {.value_tensor = "rope_freqs.weight", .value_index = 5, .value = 1e10f},
     LLM_ERR_FORMAT, "rope_freqs.weight[5] is 1e+10, not a plausible RoPE frequency factor"},
    {"gemma4", {.drop_tensor = "per_layer_token_embd.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor per_layer_token_embd.weight is missing (the gemma4 architecture has it)"},
    {"gemma4", {.resize_tensor = "blk.2.attn_q.weight", .ne0 = 64, .ne1 = 64}, LLM_ERR_FORMAT,
     "blk.2.attn_q.weight has dims [64, 64], expected [64, 128]"},
    {"gemma4", {.extra_tensor = "blk.3.attn_k_norm.weight"}, LLM_ERR_FORMAT,
     "blk.3.attn_k_norm.weight is not part of the gemma4 architecture"},
    {"gemma4", {.uint_key = "gemma4.embedding_length_per_layer_input", .uint_value = 4},
     LLM_ERR_FORMAT, "per_layer_token_embd.weight has dims [40, 96], expected [20, 96]"},
    /* a sliding layer's q norm is as wide as its heads (16), not the widest (32): a NaN
     * in the k norm after it in the file is the k norm's */
    {"gemma4", {.value_tensor = "blk.1.attn_k_norm.weight", .value_index = 0, .value = NAN},
     LLM_ERR_NUMERIC, "blk.1.attn_k_norm.weight holds a NaN or infinite value (index 0)"},
    /* gemma4 with experts: a part's norm, the counts, the stack's shape, a separate gate
     * stack beside the joined one */
    {"gemma4-moe", {.drop_tensor = "blk.1.pre_ffw_norm_2.weight"}, LLM_ERR_FORMAT,
     "GGUF tensor blk.1.pre_ffw_norm_2.weight is missing (the gemma4 architecture has it)"},
    {"gemma4-moe", {.drop_key = "gemma4.expert_used_count"}, LLM_ERR_FORMAT,
     "GGUF key gemma4.expert_used_count is missing: a mixture of experts must say how many"},
    {"gemma4-moe", {.uint_key = "gemma4.expert_feed_forward_length", .uint_value = 32},
     LLM_ERR_FORMAT, "blk.0.ffn_gate_up_exps.weight has dims [256, 128, 8], expected [256, 64, "
                     "8]"},
    {"gemma4-moe", {.extra_tensor = "blk.2.ffn_gate_exps.weight"}, LLM_ERR_FORMAT,
     "blk.2.ffn_gate_exps.weight is not part of the gemma4 architecture llmchat runs (an "
     "expert tensor the family does not have)"},
    {"gemma4-moe", {.resize_tensor = "blk.3.ffn_down_exps.scale", .ne0 = 4}, LLM_ERR_FORMAT,
     "blk.3.ffn_down_exps.scale has dims [4], expected [8]"},
    /* llama: no partial rotary */
    {"llama", {.uint_key = "llama.rope.dimension_count", .uint_value = 8}, LLM_ERR_FORMAT,
     "partial rotary embeddings are not supported by the llama architecture"},
    {"llama", {.extra_tensor = "blk.0.post_attention_norm.weight"}, LLM_ERR_FORMAT,
     "blk.0.post_attention_norm.weight is not part of the llama architecture"},
};

START_TEST(test_hostile_files)
{
    for (size_t k = 0; k < sizeof hostile / sizeof hostile[0]; k++) {
        const char *path = write_family(hostile[k].family, &hostile[k].e);
        model *m = (model *)1;
        llm_err err = {""};
        llm_status s = model_open(path, NULL, &m, &err);
        ck_assert_msg(s == hostile[k].status, "case %zu (%s): status %s, wanted %s (%s)", k,
                      hostile[k].family, llm_status_name(s), llm_status_name(hostile[k].status),
                      err.text);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.text, path) && strstr(err.text, hostile[k].says),
                      "case %zu (%s): message lacks \"%s\": %s", k, hostile[k].family,
                      hostile[k].says, err.text);
        ck_assert_msg(!strchr(err.text, '\n'), "case %zu: more than one line: %s", k, err.text);
        remove(path);
    }
}
END_TEST

/* Phi-3 files converted before the window had a key get llama.cpp's default for their
 * shape (2047 for Phi-3-mini-4k: 32 layers, a context of 4096; 131072 for
 * Phi-3-medium-128k: 40 layers, 131072), other shapes a refusal. */
START_TEST(test_phi3_window_default)
{
    const struct {
        int layers;
        uint32_t ctx;
        int window; /* 0: refused */
    } cases[] = {{0, 0, 0}, {32, 4096, 2047}, {40, 4096, 2047}, {40, 131072, 131072},
                 {32, 8192, 0}, {32, 131072, 0}};
    ck_assert_int_eq(family_shape_find("phi3")->layers, 2);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        family_edit e = {.drop_key = "phi3.attention.sliding_window", .layers = cases[k].layers,
                         .uint_key = cases[k].ctx ? "phi3.context_length" : NULL,
                         .uint_value = cases[k].ctx};
        const char *path = write_family("phi3", &e);
        model *m = (model *)1;
        llm_err err;
        llm_status st = model_open(path, NULL, &m, &err);
        if (!cases[k].window) {
            ck_assert_msg(st == LLM_ERR_FORMAT && strstr(err.text, "needs its sliding window"),
                          "case %zu: %s", k, st == LLM_OK ? "opened" : err.text);
        } else {
            ck_assert_msg(st == LLM_OK, "case %zu: %s", k, err.text);
            ck_assert_int_eq(m->config.arch.sliding_window, cases[k].window);
            for (int l = 0; l < m->config.n_layers; l++)
                ck_assert_int_eq(m->layers[l].window, cases[k].window);
            model_close(m);
        }
        remove(path);
    }
}
END_TEST

/* Qwen 3.5: the layer kinds from full_attention_interval or recurrent_layers (the same
 * here), the Gated DeltaNets' sizes, the multi-token-prediction block left unread, and
 * interleaved multimodal RoPE's sections: qwen35-mtp's (3, 1, 2) over 8 pairs leave pair 4
 * (sector 4: 4 % 3 = 1, not below 3 x 1) unturned, as ggml's rope_multi does on text. */
START_TEST(test_qwen35_description)
{
    const char *names[] = {"qwen35", "qwen35-mtp"};
    for (int k = 0; k < 3; k++) {
        family_edit e = {.recurrent_layers = k == 2 ? 4 : 0};
        const char *path = write_family(names[k % 2], &e);
        model *m = NULL;
        llm_err err;
        ck_assert_msg(model_open(path, NULL, &m, &err) == LLM_OK, "%s", err.text);
        remove(path);
        const model_config *c = &m->config;
        const family_shape *s = family_shape_find(names[k % 2]);
        ck_assert_int_eq(c->n_layers, s->layers);
        ck_assert_int_eq(c->mtp_layers, s->mtp);
        ck_assert(c->arch.gated_attention && c->arch.qk_norm);
        ck_assert_int_eq(c->dn_conv_width, 4);
        ck_assert_int_eq(c->dn_k_heads, 2);
        ck_assert_int_eq(c->dn_v_heads, 4);
        ck_assert_int_eq(c->dn_head_k, s->head);
        ck_assert_int_eq(c->dn_conv_dim, 2 * 2 * s->head + 4 * s->head);
        ck_assert_int_eq(model_mixer_width(c), 4 * s->head > c->q_dim ? 4 * s->head : c->q_dim);
        ck_assert_int_eq(c->arch.rope_dims, s->rot);
        int dn = 0;
        for (int l = 0; l < c->n_layers; l++) {
            const model_layer *L = &m->layers[l];
            bool recurrent = (l + 1) % s->attn_every != 0;
            dn += recurrent;
            ck_assert_int_eq(L->kind, recurrent ? MODEL_LAYER_DELTA_NET
                                                : MODEL_LAYER_GATED_ATTENTION);
            ck_assert((L->dn_conv != NULL) == recurrent && (L->q_norm != NULL) == !recurrent);
            ck_assert_int_eq(L->wo.cols, recurrent ? c->dn_value_dim : c->q_dim);
            ck_assert_int_eq(L->wq.rows, recurrent ? 0 : 2 * c->q_dim);
        }
        ck_assert_int_eq(c->dn_layers, dn);
        if (k % 2 == 0) {
            ck_assert_ptr_null(c->rope_freqs); /* (2, 1, 1) turns all 4 pairs */
        } else {
            ck_assert_ptr_nonnull(c->rope_freqs);
            for (int i = 0; i < c->arch.rope_dims / 2; i++)
                ck_assert_msg(i == 4 ? isinf(c->rope_freqs[i]) : c->rope_freqs[i] == 1.0f,
                              "pair %d: %g", i, c->rope_freqs[i]);
        }
        model_close(m);
    }
}
END_TEST

START_TEST(test_refused_architectures)
{
    const struct {
        const char *arch, *says;
    } cases[] = {
        {"deepseek", "architecture 'deepseek' is not supported: shared experts beside the "
                     "routed ones (ffn_*_shexp) and dense leading layers (llmchat runs llama, "
                     "qwen2, qwen3, qwen3moe, qwen35, qwen2moe, qwen35moe, olmoe, gpt-oss, phi3, "
                     "gemma, gemma2, gemma3, gemma4)"},
        {"deepseek2", "multi-head latent attention (MLA), shared experts and expert groups"},
        {"mamba", "architecture 'mamba' is not supported: a state-space model: no attention"},
        {"bert", "architecture 'bert' is not supported: an encoder"},
        {"gpt2", "learned position embeddings (position_embd)"},
        {"frobnicator", "architecture 'frobnicator' is not supported: llmchat runs llama, qwen2, "
                        "qwen3, qwen3moe, qwen35, qwen2moe, qwen35moe, olmoe, gpt-oss, phi3, "
                        "gemma, gemma2, gemma3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        family_edit e = {.string_key = "general.architecture", .string_value = cases[k].arch};
        const char *path = write_family("qwen2", &e);
        model *m = (model *)1;
        llm_err err = {""};
        ck_assert_int_eq(model_open(path, NULL, &m, &err), LLM_ERR_FORMAT);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.text, cases[k].says), "message lacks \"%s\": %s", cases[k].says,
                      err.text);
        remove(path);
    }
}
END_TEST

static Suite *model_family_suite(void)
{
    Suite *s = suite_create("model_family");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_each_family_opens_and_runs);
    tcase_add_test(core, test_typed_fixtures_have_whole_block_rows);
    tcase_add_test(core, test_descriptions);
    tcase_add_test(core, test_fused_views_are_the_file_rows);
    tcase_add_test(core, test_longrope_by_context);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 120);
    tcase_add_test(limits, test_hostile_files);
    tcase_add_test(limits, test_big_gemma_query_scale);
    tcase_add_test(limits, test_gpt_oss_description);
    tcase_add_test(limits, test_gemma4_description);
    tcase_add_test(limits, test_gemma4_moe_description);
    tcase_add_test(limits, test_qwen35_description);
    tcase_add_test(limits, test_phi3_window_default);
    tcase_add_test(limits, test_refused_architectures);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(model_family_suite)
