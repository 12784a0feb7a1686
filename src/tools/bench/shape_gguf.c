/* bench/shape_gguf.c — writes a bench shape as a GGUF file with Q8_0 tensors (through
 * the core's GGUF writer, gguf.h), for llmchat --format gguf and for other engines
 * (llama.cpp's llama-bench) to time the same model (see bench/shapes.h).
 *
 * Metadata: the shape's architecture, with the keys and tensors its family's row
 * (model_family.h) says its files hold (biases, QK-norms, post-norms, fused attn_qkv and
 * gate-up, windows, soft-caps, the keys its converter writes), the shape's values
 * (head size, epsilon, RoPE base, window), and a Llama-style vocabulary of
 * placeholder pieces (<unk>, <s>, </s>, the 256 byte tokens, then "▁t<id>"). The int8
 * values of each Q8_0 block are the ones the llama2.c file of the same shape holds (the
 * same random stream), with the half-precision of that file's group scale, so both
 * files hold the same weights up to the scale's rounding. Owns nothing once it
 * returns. */
#define _GNU_SOURCE
#include "shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf.h"
#include "model_family.h"

/* Piece of token id in the placeholder vocabulary; its GGUF token type (1 normal,
 * 2 unknown, 3 control, 6 byte). */
static int vocab_piece(int id, char *buf, size_t size)
{
    if (id == 0)
        return snprintf(buf, size, "<unk>"), 2;
    if (id == 1)
        return snprintf(buf, size, "<s>"), 3;
    if (id == 2)
        return snprintf(buf, size, "</s>"), 3;
    if (id < 3 + 256)
        return snprintf(buf, size, "<0x%02X>", id - 3), 6;
    return snprintf(buf, size, "\xe2\x96\x81t%d", id), 1;
}

static bool add_vocab(gguf_writer *w, int vocab)
{
    enum { PIECE = 16 };
    char *pieces = malloc((size_t)vocab * PIECE);
    const char **v = malloc(sizeof *v * (size_t)vocab);
    size_t *lens = malloc(sizeof *lens * (size_t)vocab);
    float *scores = malloc(sizeof *scores * (size_t)vocab);
    int32_t *types = malloc(sizeof *types * (size_t)vocab);
    bool ok = pieces && v && lens && scores && types;
    for (int i = 0; ok && i < vocab; i++) {
        v[i] = pieces + (size_t)i * PIECE;
        types[i] = vocab_piece(i, pieces + (size_t)i * PIECE, PIECE);
        lens[i] = strlen(v[i]);
        scores[i] = i < 3 + 256 ? 0.0f : -(float)i;
    }
    if (ok) {
        gguf_writer_add_string(w, "tokenizer.ggml.model", "llama");
        gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", v, lens, (uint64_t)vocab);
        gguf_writer_add_float32_array(w, "tokenizer.ggml.scores", scores, (uint64_t)vocab);
        gguf_writer_add_int32_array(w, "tokenizer.ggml.token_type", types, (uint64_t)vocab);
        gguf_writer_add_uint32(w, "tokenizer.ggml.bos_token_id", 1);
        gguf_writer_add_uint32(w, "tokenizer.ggml.eos_token_id", 2);
    }
    free(pieces);
    free(v);
    free(lens);
    free(scores);
    free(types);
    return ok;
}

/* One tensor of the file: its name, ggml shape (ne0 = the row length) and type, and
 * the random streams of its rows (kind and layer as shape_rng_for takes them): a
 * matrix's rows come from one stream, a fused one's (Phi-3's attn_qkv, ffn_up) from
 * two or three one after the other; a vector is ones (a norm) or zeros (a bias). */
enum { KIND_ONES = -1, KIND_ZEROS = -2, PARTS_MAX = 3 };
typedef struct {
    char name[48];
    uint64_t ne0, ne1; /* ne1 = 0: a vector */
    uint64_t ne2;      /* 0; or the experts of a stack (ne1 the rows of one) */
    bool table;        /* ne1 rows of zeros in F32 (the experts' biases), not a matrix */
    int layer;
    int n_parts;
    int kind[PARTS_MAX];
    uint64_t rows[PARTS_MAX];
} shape_tensor;

/* Room for the tensors of shape s. */
static size_t tensors_max(const shape *s)
{
    return 8 + 32 * (size_t)s->n_layers;
}

static shape_tensor *put(shape_tensor *t, int *n, const char *name, int layer, uint64_t ne0)
{
    shape_tensor *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    if (layer >= 0)
        snprintf(x->name, sizeof x->name, "blk.%d.%s", layer, name);
    else
        snprintf(x->name, sizeof x->name, "%s", name);
    x->ne0 = ne0;
    x->layer = layer < 0 ? 0 : layer;
    return x;
}

/* A vector of ne0 ones or zeros. */
static void vec(shape_tensor *t, int *n, const char *name, int layer, uint64_t ne0, int kind)
{
    shape_tensor *x = put(t, n, name, layer, ne0);
    x->n_parts = 1;
    x->kind[0] = kind;
}

/* ne1 rows of ne0 zeros in F32 (one bias per expert). */
static void zeros_table(shape_tensor *t, int *n, const char *name, int layer, uint64_t ne0,
                        uint64_t ne1)
{
    vec(t, n, name, layer, ne0, KIND_ZEROS);
    t[*n - 1].ne1 = ne1;
    t[*n - 1].table = true;
}

/* A matrix of rows from up to three streams (kinds), rows[i] from kind[i]. */
static void mat(shape_tensor *t, int *n, const char *name, int layer, uint64_t ne0, int parts,
                const int *kind, const uint64_t *rows)
{
    shape_tensor *x = put(t, n, name, layer, ne0);
    x->n_parts = parts;
    for (int i = 0; i < parts; i++) {
        x->kind[i] = kind[i];
        x->rows[i] = rows[i];
        x->ne1 += rows[i];
    }
}

/* Layer l's tensors, those family f's files hold (in the order of the llama files
 * before the families: their bytes are the same). Kinds of shape_rng_for: 1-7 wq wk wv
 * wo w1 w2 w3. */
/* A hybrid's layer l before its feed-forward (kinds 13-17 for a Gated DeltaNet's
 * matrices): a Gated DeltaNet, its convolution's kernel ones (each channel the sum of its
 * last inputs) and a = 0 (no decay: the state stays bounded, the delta rule writes over
 * it), or gated attention, attn_q twice as tall. */
static void hybrid_mixer(const shape *s, int l, shape_tensor *t, int *n)
{
    uint64_t d = s->dim, hs = shape_head_size(s);
    uint64_t q = (uint64_t)s->n_heads * hs, kv = (uint64_t)s->n_kv_heads * hs;
    uint64_t kd = (uint64_t)s->dn_k * s->dn_head, vd = (uint64_t)s->dn_v * s->dn_head;
    uint64_t nv = (uint64_t)s->dn_v, conv = 2 * kd + vd, q2 = 2 * q;
    if ((l + 1) % s->attn_every != 0) {
        mat(t, n, "attn_qkv.weight", l, d, 1, (const int[]){13}, &conv);
        mat(t, n, "attn_gate.weight", l, d, 1, (const int[]){14}, &vd);
        vec(t, n, "ssm_conv1d.weight", l, 4, KIND_ONES);
        t[*n - 1].ne1 = conv;
        t[*n - 1].table = true;
        vec(t, n, "ssm_dt.bias", l, nv, KIND_ZEROS);
        vec(t, n, "ssm_a", l, nv, KIND_ZEROS);
        mat(t, n, "ssm_beta.weight", l, d, 1, (const int[]){15}, &nv);
        mat(t, n, "ssm_alpha.weight", l, d, 1, (const int[]){16}, &nv);
        vec(t, n, "ssm_norm.weight", l, (uint64_t)s->dn_head, KIND_ONES);
        mat(t, n, "ssm_out.weight", l, vd, 1, (const int[]){17}, &d);
        return;
    }
    mat(t, n, "attn_q.weight", l, d, 1, (const int[]){1}, &q2);
    mat(t, n, "attn_k.weight", l, d, 1, (const int[]){2}, &kv);
    mat(t, n, "attn_v.weight", l, d, 1, (const int[]){3}, &kv);
    mat(t, n, "attn_output.weight", l, q, 1, (const int[]){4}, &d);
    vec(t, n, "attn_q_norm.weight", l, hs, KIND_ONES);
    vec(t, n, "attn_k_norm.weight", l, hs, KIND_ONES);
}

/* A layer of a family of per-layer shapes (Gemma 4): its head size and KV heads by
 * whether it slides, no keys or values where it reads an earlier layer's cache, its
 * feed-forward twice as wide there, experts beside it (the 26B-A4B: their gate and up
 * one stack, the parts' norms and scales ones), per-layer inputs, its output scale (1). */
static void layer_shapes_tensors(const shape *s, const model_family *f, int l, shape_tensor *t,
                                 int *n)
{
    bool slides = model_family_slides(f, l), own = l < s->n_layers - s->shared_kv;
    uint64_t d = s->dim, hs = (uint64_t)(slides ? s->swa_head : s->head_size);
    uint64_t q = (uint64_t)s->n_heads * hs;
    uint64_t kv = (uint64_t)(slides ? s->n_kv_heads : s->kv_full) * hs;
    uint64_t h = (uint64_t)s->hidden_dim * (own ? 1 : 2), ple = (uint64_t)s->ple;
    vec(t, n, "attn_norm.weight", l, d, KIND_ONES);
    mat(t, n, "attn_q.weight", l, d, 1, (const int[]){1}, &q);
    if (own) {
        mat(t, n, "attn_k.weight", l, d, 1, (const int[]){2}, &kv);
        mat(t, n, "attn_v.weight", l, d, 1, (const int[]){3}, &kv);
    }
    mat(t, n, "attn_output.weight", l, q, 1, (const int[]){4}, &d);
    vec(t, n, "attn_q_norm.weight", l, hs, KIND_ONES);
    if (own)
        vec(t, n, "attn_k_norm.weight", l, hs, KIND_ONES);
    vec(t, n, "post_attention_norm.weight", l, d, KIND_ONES);
    vec(t, n, "ffn_norm.weight", l, d, KIND_ONES);
    mat(t, n, "ffn_gate.weight", l, d, 1, (const int[]){5}, &h);
    mat(t, n, "ffn_down.weight", l, h, 1, (const int[]){6}, &d);
    mat(t, n, "ffn_up.weight", l, d, 1, (const int[]){7}, &h);
    vec(t, n, "post_ffw_norm.weight", l, d, KIND_ONES);
    if (s->experts > 0) {
        uint64_t E = (uint64_t)s->experts, ef = (uint64_t)s->expert_ff;
        uint64_t gate_up_rows = E * 2 * ef, down_rows = E * d;
        mat(t, n, "ffn_gate_inp.weight", l, d, 1, (const int[]){9}, &E);
        vec(t, n, "ffn_gate_inp.scale", l, d, KIND_ONES);
        vec(t, n, "pre_ffw_norm_2.weight", l, d, KIND_ONES);
        vec(t, n, "post_ffw_norm_1.weight", l, d, KIND_ONES);
        vec(t, n, "post_ffw_norm_2.weight", l, d, KIND_ONES);
        mat(t, n, "ffn_gate_up_exps.weight", l, d, 1, (const int[]){10}, &gate_up_rows);
        t[*n - 1].ne1 = 2 * ef;
        t[*n - 1].ne2 = E;
        mat(t, n, "ffn_down_exps.weight", l, ef, 1, (const int[]){12}, &down_rows);
        t[*n - 1].ne1 = d;
        t[*n - 1].ne2 = E;
        vec(t, n, "ffn_down_exps.scale", l, E, KIND_ONES);
    }
    if (ple > 0) {
        mat(t, n, "inp_gate.weight", l, d, 1, (const int[]){20}, &ple);
        mat(t, n, "proj.weight", l, ple, 1, (const int[]){21}, &d);
        vec(t, n, "post_norm.weight", l, d, KIND_ONES);
    }
    vec(t, n, "layer_output_scale.weight", l, 1, KIND_ONES);
}

static void layer_tensors(const shape *s, const model_family *f, int l, shape_tensor *t, int *n)
{
    if (f->layer_shapes) {
        layer_shapes_tensors(s, f, l, t, n);
        return;
    }
    uint64_t d = s->dim, h = s->hidden_dim, hs = shape_head_size(s);
    uint64_t q = (uint64_t)s->n_heads * hs, kv = (uint64_t)s->n_kv_heads * hs;
    bool fused = f->fused, bias = f->attn_bias, qk_norm = f->qk_norm, post = f->post_norms;
    vec(t, n, "attn_norm.weight", l, d, KIND_ONES);
    if (f->delta_net) {
        hybrid_mixer(s, l, t, n);
        qk_norm = false;
    } else if (fused) {
        mat(t, n, "attn_qkv.weight", l, d, 3, (const int[]){1, 2, 3}, (const uint64_t[]){q, kv, kv});
    } else {
        mat(t, n, "attn_q.weight", l, d, 1, (const int[]){1}, &q);
        mat(t, n, "attn_k.weight", l, d, 1, (const int[]){2}, &kv);
        mat(t, n, "attn_v.weight", l, d, 1, (const int[]){3}, &kv);
    }
    if (bias) {
        vec(t, n, "attn_q.bias", l, q, KIND_ZEROS);
        vec(t, n, "attn_k.bias", l, kv, KIND_ZEROS);
        vec(t, n, "attn_v.bias", l, kv, KIND_ZEROS);
    }
    if (!f->delta_net)
        mat(t, n, "attn_output.weight", l, q, 1, (const int[]){4}, &d);
    if (f->attn_out_bias)
        vec(t, n, "attn_output.bias", l, d, KIND_ZEROS);
    if (f->attn_sinks)
        vec(t, n, "attn_sinks.weight", l, (uint64_t)s->n_heads, KIND_ZEROS);
    if (qk_norm) {
        vec(t, n, "attn_q_norm.weight", l, hs, KIND_ONES);
        vec(t, n, "attn_k_norm.weight", l, hs, KIND_ONES);
    }
    if (post)
        vec(t, n, "post_attention_norm.weight", l, d, KIND_ONES);
    if (f->ffn_norm_name) {
        char norm[48];
        snprintf(norm, sizeof norm, "%s.weight", f->ffn_norm_name);
        vec(t, n, norm, l, d, KIND_ONES);
    } else {
        vec(t, n, "ffn_norm.weight", l, d, KIND_ONES);
    }
    if (s->experts > 0) { /* each stack's rows one stream, then viewed as ne2 matrices */
        uint64_t E = (uint64_t)s->experts, ef = (uint64_t)s->expert_ff;
        uint64_t gate_rows = E * ef, down_rows = E * d;
        mat(t, n, "ffn_gate_inp.weight", l, d, 1, (const int[]){9}, &E);
        if (f->expert_biases) {
            vec(t, n, "ffn_gate_inp.bias", l, E, KIND_ZEROS);
            zeros_table(t, n, "ffn_gate_exps.bias", l, ef, E);
            zeros_table(t, n, "ffn_up_exps.bias", l, ef, E);
            zeros_table(t, n, "ffn_down_exps.bias", l, d, E);
        }
        mat(t, n, "ffn_gate_exps.weight", l, d, 1, (const int[]){10}, &gate_rows);
        t[*n - 1].ne1 = ef;
        t[*n - 1].ne2 = E;
        mat(t, n, "ffn_up_exps.weight", l, d, 1, (const int[]){11}, &gate_rows);
        t[*n - 1].ne1 = ef;
        t[*n - 1].ne2 = E;
        mat(t, n, "ffn_down_exps.weight", l, ef, 1, (const int[]){12}, &down_rows);
        t[*n - 1].ne1 = d;
        t[*n - 1].ne2 = E;
    } else {
        if (fused)
            mat(t, n, "ffn_up.weight", l, d, 2, (const int[]){5, 7}, (const uint64_t[]){h, h});
        else
            mat(t, n, "ffn_gate.weight", l, d, 1, (const int[]){5}, &h);
        mat(t, n, "ffn_down.weight", l, h, 1, (const int[]){6}, &d);
        if (!fused)
            mat(t, n, "ffn_up.weight", l, d, 1, (const int[]){7}, &h);
    }
    if (post)
        vec(t, n, "post_ffw_norm.weight", l, d, KIND_ONES);
}

/* The tensors of shape s of family f in file order, into t (tensors_max(s) of them);
 * returns the count. */
static int shape_tensors(const shape *s, const model_family *f, shape_tensor *t)
{
    uint64_t d = s->dim, V = s->vocab_size;
    int n = 0;
    mat(t, &n, "token_embd.weight", -1, d, 1, (const int[]){0}, &V);
    if (s->llama2c) { /* as the first benchmarks wrote them: the layers first */
        for (int l = 0; l < s->n_layers; l++)
            layer_tensors(s, f, l, t, &n);
        vec(t, &n, "output_norm.weight", -1, d, KIND_ONES);
        if (!s->shared)
            mat(t, &n, "output.weight", -1, d, 1, (const int[]){8}, &V);
        return n;
    }
    vec(t, &n, "output_norm.weight", -1, d, KIND_ONES);
    if (!s->shared)
        mat(t, &n, "output.weight", -1, d, 1, (const int[]){8}, &V);
    if (f->layer_shapes) { /* RoPE factors of ones (every pair turns), per-layer inputs */
        vec(t, &n, "rope_freqs.weight", -1, (uint64_t)s->head_size / 2, KIND_ONES);
        if (s->ple > 0) {
            uint64_t all = (uint64_t)s->ple * s->n_layers;
            mat(t, &n, "per_layer_token_embd.weight", -1, all, 1, (const int[]){18}, &V);
            mat(t, &n, "per_layer_model_proj.weight", -1, d, 1, (const int[]){19}, &all);
            vec(t, &n, "per_layer_proj_norm.weight", -1, (uint64_t)s->ple, KIND_ONES);
        }
    }
    for (int l = 0; l < s->n_layers; l++)
        layer_tensors(s, f, l, t, &n);
    return n;
}

/* The keys of family f beside every family's: head sizes, windows, soft-caps, as the
 * published models of each family have them. */
static void family_keys(gguf_writer *w, const shape *s, const model_family *f)
{
    char k[96];
    const char *a = f->name;
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", a, suffix), k)
    if (s->head_size > 0) {
        gguf_writer_add_uint32(w, KEY("attention.key_length"), (uint32_t)s->head_size);
        gguf_writer_add_uint32(w, KEY("attention.value_length"), (uint32_t)s->head_size);
    }
    if (model_family_has_windows(f))
        gguf_writer_add_uint32(w, KEY("attention.sliding_window"), (uint32_t)s->window);
    if (f->attn_softcap > 0.0f)
        gguf_writer_add_float32(w, KEY("attn_logit_softcapping"), f->attn_softcap);
    if (f->final_softcap > 0.0f)
        gguf_writer_add_float32(w, KEY("final_logit_softcapping"), f->final_softcap);
    if (s->yarn > 0.0f) {
        gguf_writer_add_string(w, KEY("rope.scaling.type"), "yarn");
        gguf_writer_add_float32(w, KEY("rope.scaling.factor"), s->yarn);
        gguf_writer_add_uint32(w, KEY("rope.scaling.original_context_length"),
                               (uint32_t)s->yarn_orig);
    }
    if (f->delta_net) {
        gguf_writer_add_uint32(w, KEY("ssm.conv_kernel"), 4);
        gguf_writer_add_uint32(w, KEY("ssm.state_size"), (uint32_t)s->dn_head);
        gguf_writer_add_uint32(w, KEY("ssm.group_count"), (uint32_t)s->dn_k);
        gguf_writer_add_uint32(w, KEY("ssm.time_step_rank"), (uint32_t)s->dn_v);
        gguf_writer_add_uint32(w, KEY("ssm.inner_size"), (uint32_t)(s->dn_v * s->dn_head));
        gguf_writer_add_uint32(w, KEY("full_attention_interval"), (uint32_t)s->attn_every);
        int rot = s->rot ? s->rot : shape_head_size(s); /* Qwen 3.5's sections for 32 pairs */
        const int32_t sections[4] = {rot / 2 * 11 / 32, rot / 2 * 11 / 32,
                                     rot / 2 - 2 * (rot / 2 * 11 / 32), 0};
        gguf_writer_add_int32_array(w, KEY("rope.dimension_sections"), sections, 4);
    }
    if (f->layer_shapes) {
        int32_t kv[1024], ff[1024], slides[1024];
        int L = s->n_layers < 1024 ? s->n_layers : 1024;
        for (int l = 0; l < L; l++) {
            slides[l] = model_family_slides(f, l);
            kv[l] = slides[l] ? s->n_kv_heads : s->kv_full;
            ff[l] = s->hidden_dim * (l < s->n_layers - s->shared_kv ? 1 : 2);
        }
        gguf_writer_add_int32_array(w, KEY("attention.head_count_kv"), kv, (uint64_t)L);
        gguf_writer_add_int32_array(w, KEY("feed_forward_length"), ff, (uint64_t)L);
        gguf_writer_add_int32_array(w, KEY("attention.sliding_window_pattern"), slides,
                                    (uint64_t)L);
        gguf_writer_add_uint32(w, KEY("attention.key_length_swa"), (uint32_t)s->swa_head);
        gguf_writer_add_uint32(w, KEY("attention.value_length_swa"), (uint32_t)s->swa_head);
        gguf_writer_add_uint32(w, KEY("rope.dimension_count_swa"), (uint32_t)s->swa_head);
        gguf_writer_add_float32(w, KEY("rope.freq_base_swa"), f->rope_base_swa);
        gguf_writer_add_uint32(w, KEY("attention.shared_kv_layers"), (uint32_t)s->shared_kv);
        gguf_writer_add_uint32(w, KEY("embedding_length_per_layer_input"), (uint32_t)s->ple);
        gguf_writer_add_float32(w, KEY("final_logit_softcapping"), 30.0f);
    }
    if (s->experts > 0) {
        gguf_writer_add_uint32(w, KEY("expert_count"), (uint32_t)s->experts);
        gguf_writer_add_uint32(w, KEY("expert_used_count"), (uint32_t)s->used);
        if (f->expert_ff_key)
            gguf_writer_add_uint32(w, KEY("expert_feed_forward_length"), (uint32_t)s->expert_ff);
    }
#undef KEY
}

/* A writer holding the metadata and tensor descriptions of shape s; *n and t get the
 * tensors. NULL when out of memory or when llmchat has no family s->arch. */
static gguf_writer *shape_writer(const shape *s, shape_tensor *t, int *n)
{
    const model_family *f = model_family_find(s->arch);
    gguf_writer *w = f ? gguf_writer_new(0) : NULL;
    if (!w)
        return NULL;
    char name[64], k[96];
    const char *a = f->name;
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", a, suffix), k)
    /* llama.cpp's vocabulary loader looks for Phi-3's special tokens in a model whose
     * name says phi3: the names of the shapes after the Llama 2 sizes are left out */
    snprintf(name, sizeof name, "llmchat-bench %s (random weights)",
             s->llama2c ? s->name : "shape of another family");
    gguf_writer_add_string(w, "general.architecture", a);
    gguf_writer_add_string(w, "general.name", name);
    gguf_writer_add_uint32(w, "general.file_type", 7); /* mostly Q8_0 */
    gguf_writer_add_uint32(w, "general.quantization_version", 2);
    gguf_writer_add_uint32(w, KEY("context_length"), (uint32_t)s->seq_len);
    gguf_writer_add_uint32(w, KEY("embedding_length"), (uint32_t)s->dim);
    gguf_writer_add_uint32(w, KEY("block_count"), (uint32_t)s->n_layers);
    if (!f->layer_shapes) /* else one per layer (family_keys) */
        gguf_writer_add_uint32(w, KEY("feed_forward_length"), (uint32_t)s->hidden_dim);
    if (f->rope_dims_key)
        gguf_writer_add_uint32(w, KEY("rope.dimension_count"),
                               (uint32_t)(s->rot ? s->rot : shape_head_size(s)));
    gguf_writer_add_uint32(w, KEY("attention.head_count"), (uint32_t)s->n_heads);
    if (!f->layer_shapes)
        gguf_writer_add_uint32(w, KEY("attention.head_count_kv"), (uint32_t)s->n_kv_heads);
    gguf_writer_add_float32(w, KEY("attention.layer_norm_rms_epsilon"), s->rms_eps);
    gguf_writer_add_float32(w, KEY("rope.freq_base"), s->rope_base);
    if (f->vocab_size_key)
        gguf_writer_add_uint32(w, KEY("vocab_size"), (uint32_t)s->vocab_size);
#undef KEY
    family_keys(w, s, f);
    if (!add_vocab(w, s->vocab_size)) {
        gguf_writer_free(w);
        return NULL;
    }
    *n = shape_tensors(s, f, t);
    for (int i = 0; i < *n; i++) {
        uint64_t dims[3] = {t[i].ne0, t[i].ne1, t[i].ne2};
        bool q8 = t[i].ne1 && !t[i].table;
        gguf_writer_add_tensor(w, t[i].name, q8 ? GGML_TYPE_Q8_0 : GGML_TYPE_F32,
                               t[i].ne2 ? 3 : t[i].ne1 ? 2 : 1, dims);
    }
    return w;
}

/* Writes one Q8_0 tensor of n values: the shape's int8 stream in blocks of 32, each
 * with the scale the llama2.c file gives every group; zeros when rng is NULL, and the
 * first `zeros` values zeros (the stream still drawn for them). */
static int put_q8_tensor(FILE *f, uint64_t n, shape_rng *rng, uint64_t zeros)
{
    enum { BLOCKS = 4096 };
    static ggml_block_q8_0 buf[BLOCKS];
    uint16_t d = ggml_f32_to_fp16(SHAPE_WEIGHT_SCALE);
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < (uint64_t)BLOCKS * 32 ? n - done : (uint64_t)BLOCKS * 32;
        for (uint64_t b = 0; b < k / 32; b++) {
            if (rng) {
                buf[b].d = done + 32 * b < zeros ? 0 : d;
                shape_rng_int8(rng, buf[b].qs, 32);
                if (!buf[b].d)
                    memset(buf[b].qs, 0, 32);
            } else {
                memset(&buf[b], 0, sizeof buf[b]);
            }
        }
        if (fwrite(buf, sizeof *buf, (size_t)(k / 32), f) != k / 32)
            return -1;
        done += k;
    }
    return 0;
}

/* Tensor x's data: a vector's ones or zeros, a matrix's rows from its streams. */
static int put_tensor(FILE *f, const shape *s, const shape_tensor *x, uint64_t *bytes)
{
    if (!x->ne1 || x->table) {
        const float v = x->kind[0] == KIND_ONES ? 1.0f : 0.0f;
        uint64_t count = x->ne0 * (x->table ? x->ne1 : 1);
        for (uint64_t j = 0; j < count; j++)
            if (fwrite(&v, 4, 1, f) != 1)
                return -1;
        *bytes = 4 * count;
        return 0;
    }
    for (int p = 0; p < x->n_parts; p++) {
        shape_rng r = shape_rng_for(s, x->kind[p], x->layer);
        int k = x->kind[p];
        bool quiet = s->quiet_from > 0 && x->layer >= s->quiet_from &&
                     (k == 4 || k == 6 || k == 12 || k == 17); /* a layer's outputs */
        bool classifier = k == 8 || (k == 0 && s->shared);
        uint64_t zeros = s->text_only && classifier ? x->ne0 * SHAPE_TEXT_FIRST : 0;
        if (put_q8_tensor(f, x->ne0 * x->rows[p], quiet ? NULL : &r, zeros) != 0)
            return -1;
    }
    *bytes = x->ne0 * x->ne1 * (x->ne2 ? x->ne2 : 1) / 32 * sizeof(ggml_block_q8_0);
    return 0;
}

static int write_gguf(FILE *f, const shape *s)
{
    shape_tensor *t = malloc(sizeof *t * tensors_max(s));
    int n = 0;
    gguf_writer *w = t ? shape_writer(s, t, &n) : NULL;
    int bad = !w || gguf_writer_write_header(w, f, "the model file", NULL) != LLM_OK;
    for (int i = 0; i < n && !bad; i++) {
        uint64_t bytes = 0;
        bad = put_tensor(f, s, &t[i], &bytes) != 0 ||
              gguf_writer_pad(w, f, bytes, "the model file", NULL) != LLM_OK;
    }
    gguf_writer_free(w);
    free(t);
    return bad ? -1 : 0;
}

uint64_t shape_gguf_bytes(const shape *s)
{
    shape_tensor *t = malloc(sizeof *t * tensors_max(s));
    int n = 0;
    gguf_writer *w = t ? shape_writer(s, t, &n) : NULL;
    char *mem = NULL;
    size_t head = 0;
    FILE *f = w ? open_memstream(&mem, &head) : NULL;
    bool ok = f && gguf_writer_write_header(w, f, "memory", NULL) == LLM_OK;
    if (f)
        fclose(f); /* sets head */
    uint64_t bytes = 0;
    if (ok) {
        bytes = head;
        for (int i = 0; i < n; i++) {
            uint64_t b = t[i].table ? 4 * t[i].ne0 * t[i].ne1
                         : t[i].ne1 ? t[i].ne0 * t[i].ne1 * (t[i].ne2 ? t[i].ne2 : 1) / 32 *
                                          sizeof(ggml_block_q8_0)
                                    : 4 * t[i].ne0;
            bytes += (b + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
        }
    }
    free(mem);
    gguf_writer_free(w);
    free(t);
    return bytes;
}

int shape_write_gguf(const shape *s, const char *path, char *err, size_t err_size)
{
    return shape_write_file(s, path, shape_gguf_bytes(s), write_gguf, err, err_size);
}
