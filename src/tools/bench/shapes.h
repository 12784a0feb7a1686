/* bench/shapes.h — the model shapes llmchat-bench times, and the random-weight files it
 * writes for them: a llama2.c v2 file (int8 Q8_0, what llmchat opens) and a GGUF file
 * with Q8_0 tensors holding the same weights (what llama.cpp opens). The shapes of the
 * other families (Qwen2.5-0.5B, Qwen3-0.6B, Phi-3-mini, Gemma 2B, Gemma-2-2B,
 * Gemma-3-1B) have the GGUF file only, with the keys and tensors their family's row
 * (model_family.h) says its files hold (biases, QK-norms, post-norms, fused tensors:
 * ones for norms, zeros for biases).
 *
 * Weights: int8 values uniform in [-127, 127] from a seeded stream per tensor, every
 * group scaled by SHAPE_WEIGHT_SCALE (a standard deviation of about 0.02); norms are
 * ones. The files are written once into a cache directory and reused while their size
 * matches. Part of the benchmark, a front end: failures are returned as messages. */
#ifndef LLMCHAT_BENCH_SHAPES_H
#define LLMCHAT_BENCH_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *name;
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared; /* classifier shared with the token embedding */
    const char *arch;  /* general.architecture: the family (model_family.h) whose keys and
                          tensors shape_gguf.c writes */
    bool llama2c;      /* a Llama 2 size, with a llama2.c file too (and its GGUF file as
                          the first benchmarks wrote it: the layers' tensors first) */
    int head_size;     /* values per head; 0: dim / n_heads */
    float rms_eps;     /* attention.layer_norm_rms_epsilon */
    float rope_base;   /* rope.freq_base */
    int window;        /* attention.sliding_window, for a family whose layers slide */
    int experts, used, expert_ff; /* a mixture of experts (0: dense): expert_count,
                          expert_used_count and an expert's hidden size; the router and the
                          experts' stacks are Q8_0 like the other matrices */
    float yarn;        /* YaRN's rope.scaling.factor (rope.scaling.type "yarn", the
                          original context yarn_orig); 0: no scaling */
    int yarn_orig;
    int rot;           /* rope.dimension_count (0: the head size) */
    /* a hybrid (model_family.delta_net): every attn_every-th layer gated attention, the
     * others Gated DeltaNets of dn_k q/k heads and dn_v value heads of dn_head values */
    int attn_every, dn_k, dn_v, dn_head;
    /* a family of per-layer shapes (model_family.layer_shapes; the family's rule says
     * which layers slide): head_size is a global layer's head, swa_head a sliding
     * layer's (RoPE turns all of it), the global layers' KV heads kv_full, the last
     * shared_kv layers read earlier layers' caches (their feed-forward twice as wide),
     * per-layer inputs of ple values */
    int swa_head, kv_full, shared_kv, ple;
    /* layers from quiet_from on add nothing to the residual stream: their output
     * projections (attn_output, ffn_down, the experts' down, ssm_out) are zeros, so the
     * model's tokens are those of its first quiet_from layers while a token still reads
     * every layer (0: every layer writes; shape_agreeing_model) */
    int quiet_from;
    /* the classifier's rows of the control and byte tokens (ids below SHAPE_TEXT_FIRST)
     * zero: their logits 0 lose to the largest of the others', so greedy decoding writes
     * only text pieces (llama-server, which parses what it writes as text, fails a reply
     * with a lone byte of UTF-8 in it) */
    bool text_only;
} shape;

/* The first id of a text piece in a shape's vocabulary (<unk>, <s>, </s>, then the 256
 * byte tokens). */
enum { SHAPE_TEXT_FIRST = 3 + 256 };

extern const shape bench_shapes[];
extern const int bench_n_shapes;

/* 0.02 / 73.3: the standard deviation of uniform [-127, 127] is 73.3. */
#define SHAPE_WEIGHT_SCALE (0.02f / 73.3f)

/* The random stream of one tensor. */
typedef struct {
    uint64_t state;
} shape_rng;

/* The stream of tensor `kind` (0 embedding, 1-7 wq wk wv wo w1 w2 w3, 8 classifier;
 * 9 the router, 10-12 the experts' gate, up and down stacks; 13-17 a Gated DeltaNet's
 * attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_out; 18-21 per-layer inputs'
 * per_layer_token_embd, per_layer_model_proj, inp_gate, proj) of layer `layer` of
 * shape s. */
shape_rng shape_rng_for(const shape *s, int kind, int layer);
uint64_t shape_rng_next(shape_rng *r);
/* The next n int8 weights of the stream. */
void shape_rng_int8(shape_rng *r, int8_t *out, size_t n);

/* The model of --agreeing-draft: s with its layers from `layers` on quiet
 * (quiet_from) and text_only, under a name of its own (for its cache files) in the
 * buffer given. Its first `layers` layers, cut from its file (bench/gguf_cut.h), are a
 * draft with its vocabulary that agrees with it on every greedy token. */
void shape_agreeing_model(const shape *s, int layers, shape *model, char *name,
                          size_t name_size);

/* The llama2.c file's Q8_0 group: 64, halved until it divides both row lengths. */
int shape_group(const shape *s);
uint64_t shape_llama2c_bytes(const shape *s);
/* Whether shape s has a llama2.c file (s->llama2c). */
bool shape_has_llama2c(const shape *s);
/* Values per head of shape s. */
int shape_head_size(const shape *s);

/* Writes the file to path unless a file of the right size is there; a file is written
 * under a temporary name and renamed when complete. Returns 0, or -1 with a message in
 * err. */
int shape_write_llama2c(const shape *s, const char *path, char *err, size_t err_size);
int shape_write_gguf(const shape *s, const char *path, char *err, size_t err_size);
uint64_t shape_gguf_bytes(const shape *s);
/* Writes path with fn (which writes the whole file to f, 0 on success) unless a file of
 * `bytes` is there: the common part of the two writers. */
int shape_write_file(const shape *s, const char *path, uint64_t bytes,
                     int (*fn)(FILE *f, const shape *s), char *err, size_t err_size);

#endif
