/* model.h — loading and validating a model file.
 *
 * Reads llama2.c checkpoints (legacy v0 fp32, v1 fp32 "ak42", v2 int8 Q8_0 "ak42") and
 * GGUF files (v2, v3) of the llama, qwen2, qwen3, phi3, gemma, gemma2 and gemma3
 * architectures (model_family.h) in F32, F16, BF16, Q8_0, Q4_0, Q4_1,
 * Q5_0, Q5_1, MXFP4 and the K types Q2_K..Q6_K (see docs/formats.md). The file is
 * mmap'd and validated before any weight is touched: magic, version, a sane shape, and
 * that every tensor the shape implies is there, whole, with the right size. Weights
 * are then exposed as tensors of the type asked for:
 *   - TENSOR_BLOCKS (native, the default): GGUF Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
 *     Q6_K, MXFP4 and Q8_0 tensors whose rows are whole blocks are used in place from the
 *     mapping; everything else as for TENSOR_Q8_0.
 *   - TENSOR_Q8_0: fp32 weights are quantized at load into owned buffers;
 *     llama2.c int8 files are used in place when their groups align with rows,
 *     repacked into row-aligned groups otherwise (stories260K_q80: rows of 172, groups
 *     of 32); GGUF Q8_0 is repacked into the same row layout; every other GGUF type is
 *     decoded and quantized to Q8_0 at load, in parallel.
 *   - TENSOR_F32: fp32 weights are used in place; everything else is decoded to fp32.
 * RMSNorm weights are always fp32. The model owns the mapping, the parsed GGUF
 * metadata and every buffer; all pointers stay valid until model_close. */
#ifndef LLMCHAT_MODEL_H
#define LLMCHAT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "status.h"

/* How RoPE pairs the values of a head: llama rotates (x[2i], x[2i+1]); the NEOX layout
 * (Qwen, Gemma, Phi-3) rotates (x[i], x[i + rope_dims / 2]). */
typedef enum {
    MODEL_ROPE_PAIRS = 0,
    MODEL_ROPE_HALVES,
} model_rope_layout;

/* The gate's activation in the feed-forward act(w1 x) * (w3 x): SiLU (llama, Qwen, Phi),
 * GELU with the tanh approximation (Gemma), or gpt-oss's clamped SwiGLU: with the gate
 * g clamped above at 7 and the up value u to [-7, 7], g * sigmoid(1.702 g) * (u + 1). */
typedef enum {
    MODEL_ACT_SILU = 0,
    MODEL_ACT_GELU,
    MODEL_ACT_SWIGLU_OAI,
} model_activation;

/* What a model family changes in the forward pass (llama.cpp's llm_arch and hparams):
 * the one pass reads these fields and nothing else about the family, so a family is
 * these values plus the tensors its loader fills (model_layer's optional ones). Every
 * loader starts from model_arch_llama's values (model_set_shape) and changes what its
 * family changes. */
/* The most values of a Gated DeltaNet head's key or value (model_config.dn_head_k). */
enum { MODEL_DN_HEAD_MAX = 1024 };

/* What a layer mixes its tokens with, before its feed-forward: attention over the KV
 * cache; gated attention (Qwen 3.5's: wq gives each head's query, then as many values
 * of an output gate, sigmoid(gate) times the head's attention output); or a Gated
 * DeltaNet (Qwen 3.5's linear attention: a short causal convolution, then a recurrent
 * state per head written by the gated delta rule; delta_net.h), which has no KV cache
 * and no attention matrix. */
typedef enum {
    MODEL_LAYER_ATTENTION = 0,
    MODEL_LAYER_GATED_ATTENTION,
    MODEL_LAYER_DELTA_NET,
} model_layer_kind;

typedef struct {
    const char *name;       /* general.architecture: "llama" */
    model_rope_layout rope_layout;
    int rope_dims;          /* values of each head RoPE rotates, from the first (even,
                               <= head_size; partial rotary when less): head_size */
    float rope_base_swa;    /* RoPE base of the layers with a window, which are not
                               scaled (Gemma 3: 10000); 0: the same angles as the others */
    model_activation act;   /* the gate's activation: SiLU */
    float embed_scale;      /* token embeddings are multiplied by this: 1 (Gemma: sqrt(dim)) */
    float query_scale;      /* attention scores are q·k times this: 1 / sqrt(head_size)
                               (Gemma: 1 / sqrt(query_pre_attn_scalar)) */
    float attn_softcap;     /* 0, or scores s become cap·tanh(s / cap) before the softmax
                               (Gemma 2: 50) */
    float final_softcap;    /* 0, or the logits become cap·tanh(logit / cap) (Gemma 2: 30) */
    bool attn_bias;         /* layers have bq, bk, bv (Qwen2) */
    bool qk_norm;           /* layers have q_norm, k_norm: RMSNorm of each head of q and k
                               before RoPE (Qwen3, Gemma 3) */
    bool post_norms;        /* layers have post_attn_norm, post_ffn_norm: RMSNorm of each
                               block's output before its residual add (Gemma 2, 3) */
    bool fused_qkv;         /* the file holds one attn_qkv tensor, (q_dim + 2 kv_dim, dim):
                               the loader makes wq, wk, wv views of its rows (Phi-3) */
    bool fused_gate_up;     /* the file's ffn_up holds the gate's rows, then the up
                               projection's: the loader makes w1, w3 views (Phi-3) */
    int sliding_window;     /* keys a layer with a window sees, its own included; which
                               layers have one is model_layer.window: 0, none */
    bool qk_norm_whole;     /* with qk_norm: q_norm (q_dim) and k_norm (kv_dim) normalise
                               the whole query and key vectors, not each head (OLMoE) */
    bool expert_norm_weights; /* a mixture of experts renormalises the chosen experts'
                               router probabilities to sum 1 (Qwen3 MoE, Mixtral, gpt-oss:
                               its softmax over the chosen logits is the same); else they
                               weigh the experts as they are (OLMoE) */
    bool attn_out_bias;     /* layers have bo, added to the attention's output (gpt-oss) */
    bool attn_sinks;        /* layers have sinks: each head's softmax has one more logit,
                               in its denominator only, which takes a share of the weight
                               and gives no value (gpt-oss) */
    bool expert_biases;     /* a mixture of experts' router and experts have biases:
                               router_bias, expert_*_bias (gpt-oss) */
    bool gated_attention;   /* the attention layers are MODEL_LAYER_GATED_ATTENTION
                               (Qwen 3.5), the others Gated DeltaNets (model_config.dn_*) */
    int rope_dims_swa;      /* with rope_base_swa: values of each head RoPE turns in a layer
                               with a window, whose heads may be narrower (Gemma 4); 0 or
                               rope_dims: the same (model_swa_rope_dims) */
    bool dense_beside_experts; /* a layer of experts keeps its dense feed-forward (w1, w2,
                               w3) beside them, each part normed on its own
                               (model_layer.router_scale .. post_experts_norm; Gemma 4
                               26B-A4B) */
    bool value_norm;        /* each value head is RMS-normed (no weight) before the cache;
                               a layer without wv takes its keys, before their norm and
                               RoPE, as values (Gemma 4) */
} model_arch;

typedef struct {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int head_size;          /* values per head: dim / n_heads for llama; a family may set
                               it apart from dim (Gemma, Qwen3) */
    int q_dim;              /* n_heads * head_size: queries, and the attention output wo reads */
    int kv_dim;             /* n_kv_heads * head_size */
    model_arch arch;        /* what the family changes in the pass */
    bool shared_classifier; /* wcls is the token embedding */
    float rope_base;        /* RoPE frequency base (llama2.c files: 10000) */
    float rope_scale;       /* linear RoPE scaling: positions times this (1 / factor; 1: none) */
    const float *rope_freqs; /* (arch.rope_dims / 2) per-pair frequency divisors (GGUF
                              * rope_freqs.weight, Llama 3.1+; Phi-3's LongRoPE short
                              * factors), or NULL; borrowed from the mapping or owned by
                              * the model */
    const float *rope_freqs_long; /* (arch.rope_dims / 2) LongRoPE's long factors (Phi-3
                              * rope_factors_long), used instead of rope_freqs when the
                              * context is longer than rope_long_after; or NULL */
    int rope_long_after;    /* rope.scaling.original_context_length (with rope_freqs_long) */
    float rope_attn_factor; /* cos and sin of every RoPE angle times this (LongRoPE's
                               rope.scaling.attn_factor; YaRN's 1 + 0.1 ln(factor)); 0 or
                               1: none */
    bool rope_yarn;         /* rope_freqs are YaRN's (rope.scaling.type "yarn"): each pair's
                               mix of the interpolated and the original frequency */
    float rms_eps;          /* RMSNorm epsilon (llama2.c files: 1e-5) */
    /* A mixture of experts (0: a dense feed-forward): the router's softmax over
     * n_experts chooses the n_experts_used most probable per token, each a gated
     * feed-forward of expert_hidden_dim values (model_layer.router, expert_*). */
    int n_experts, n_experts_used, expert_hidden_dim;
    /* A shared expert beside them (0: none): a gated feed-forward of shexp_hidden values
     * every token runs, its output times sigmoid(shexp_gate_inp · x) added to theirs. */
    int shexp_hidden;
    /* Gated DeltaNet layers (model_layer.kind; dn_layers 0: none): dn_k_heads heads of
     * queries and keys of dn_head_k values, dn_v_heads heads of values of dn_head_v (v
     * head h reads q/k head h % dn_k_heads, as llama.cpp tiles them), each convolved over
     * the last dn_conv_width tokens. dn_key_dim = dn_k_heads dn_head_k, dn_value_dim =
     * dn_v_heads dn_head_v, dn_conv_dim = 2 dn_key_dim + dn_value_dim: the convolved
     * channels (q, k, v). */
    int dn_layers, dn_conv_width, dn_k_heads, dn_v_heads, dn_head_k, dn_head_v;
    int dn_key_dim, dn_value_dim, dn_conv_dim;
    int mtp_layers;         /* the file's multi-token-prediction blocks after the
                               n_layers run (Qwen 3.5), left unread */
    /* Layers of their own shapes (Gemma 4: a global layer's heads are wider and fewer
     * KV heads read them; the layers that share another's KV cache have a feed-forward
     * twice as wide): model_layer's head_size .. hidden_dim say each layer's, and
     * head_size, q_dim, kv_dim, n_kv_heads and hidden_dim above are the largest. */
    bool layers_vary;
    /* Per-layer inputs (Gemma 4's per-layer embeddings; ple_dim 0: none): each token
     * has, for each layer, ple_dim values made of its row of model.ple_embd and a
     * projection of its embedding (model.ple_model_proj), which the layer gates in
     * after its feed-forward (model_layer.ple_gate, ple_proj, ple_norm). */
    int ple_dim;
} model_config;

/* One layer's weights. The pointers marked "or NULL" are there when the family's
 * model_arch says so (NULL for llama). */
typedef struct {
    model_layer_kind kind;  /* attention unless the family says (model_family.delta_net) */
    /* Its shape: the config's unless config.layers_vary. */
    int head_size, n_kv_heads, q_dim, kv_dim; /* as model_config's, for this layer */
    int hidden_dim;         /* its dense feed-forward's */
    int kv_layer;           /* the layer whose KV cache it attends over: itself, or an
                               earlier one whose keys and values it shares (Gemma 4's last
                               layers: wk, wv, k_norm empty), when it writes none */
    const float *out_scale; /* (1) or NULL: its output (the stream after it) times this
                               (Gemma 4's layer_output_scale) */
    const float *rms_att;   /* (dim) */
    const float *rms_ffn;   /* (dim) */
    tensor wq;              /* (q_dim, dim); gated attention: (2 q_dim, dim), each head's
                               query rows then its gate's */
    tensor wk;              /* (kv_dim, dim) */
    tensor wv;              /* (kv_dim, dim) */
    tensor wo;              /* (dim, q_dim); a Gated DeltaNet's ssm_out: (dim, dn_value_dim) */
    tensor w1;              /* (hidden_dim, dim) the gate */
    tensor w2;              /* (dim, hidden_dim) down */
    tensor w3;              /* (hidden_dim, dim) up */
    const float *bq;        /* (q_dim) or NULL: added to the queries (arch.attn_bias) */
    const float *bk;        /* (kv_dim) or NULL */
    const float *bv;        /* (kv_dim) or NULL */
    const float *q_norm;    /* (head_size) or NULL: each query head's RMSNorm (arch.qk_norm) */
    const float *k_norm;    /* (head_size) or NULL */
    const float *post_attn_norm; /* (dim) or NULL (arch.post_norms) */
    const float *post_ffn_norm;  /* (dim) or NULL */
    const float *bo;        /* (dim) or NULL: added to the attention's output (arch.attn_out_bias) */
    const float *sinks;     /* (n_heads) or NULL: each head's sink logit (arch.attn_sinks) */
    int window;             /* 0: attends to every earlier position; else to the last
                               `window` (arch.sliding_window), itself included */
    /* A mixture of experts' layer (config.n_experts > 0) has these instead of w1, w2,
     * w3 (which are then empty: rows 0, no data; beside them with
     * arch.dense_beside_experts): */
    tensor router;          /* (n_experts, dim) F32: the router's logits (ffn_gate_inp) */
    tensor *expert_gate;    /* (n_experts) each (expert_hidden_dim, dim): views of the
                               file's ffn_gate_exps; NULL for a dense layer */
    tensor *expert_up;      /* (n_experts) each (expert_hidden_dim, dim) */
    tensor *expert_down;    /* (n_experts) each (dim, expert_hidden_dim) */
    const float *router_bias;      /* (n_experts) or NULL: added to the router's logits
                                      (arch.expert_biases) */
    const float *expert_gate_bias; /* (n_experts, expert_hidden_dim) or NULL: expert e's
                                      row added to its gate's products */
    const float *expert_up_bias;   /* (n_experts, expert_hidden_dim) or NULL */
    const float *expert_down_bias; /* (n_experts, dim) or NULL */
    const float *expert_scale;     /* (n_experts) or NULL: expert e's down products times
                                      its value (ffn_down_exps.scale) */
    bool gate_up_stack;     /* the file holds expert_gate and expert_up as one stack
                               (ffn_gate_up_exps: each expert's gate rows, then its up
                               rows) */
    /* With arch.dense_beside_experts (else NULL): the router reads RMSNorm(x) times
     * router_scale / sqrt(dim), the experts RMSNorm(x) with pre_experts_norm; the dense
     * output is normed with post_dense_norm, the experts' sum with post_experts_norm,
     * and their sum is the feed-forward's output (then post_ffn_norm). */
    const float *router_scale;      /* (dim) ffn_gate_inp.scale */
    const float *pre_experts_norm;  /* (dim) pre_ffw_norm_2 */
    const float *post_dense_norm;   /* (dim) post_ffw_norm_1 */
    const float *post_experts_norm; /* (dim) post_ffw_norm_2 */
    tensor shexp_gate;      /* (shexp_hidden, dim) the shared expert's (config.shexp_hidden
                               > 0; else empty) */
    tensor shexp_up;        /* (shexp_hidden, dim) */
    tensor shexp_down;      /* (dim, shexp_hidden) */
    const float *shexp_gate_inp; /* (dim) its output's gate: sigmoid of this · x */
    /* A Gated DeltaNet layer (kind MODEL_LAYER_DELTA_NET) has these instead of wq, wk,
     * wv, q_norm and k_norm (empty or NULL): */
    tensor dn_qkv;          /* (dn_conv_dim, dim) attn_qkv: the channels convolved */
    tensor dn_z;            /* (dn_value_dim, dim) attn_gate: the output gate z */
    tensor dn_beta;         /* (dn_v_heads, dim) ssm_beta: each head's write strength
                               before its sigmoid */
    tensor dn_alpha;        /* (dn_v_heads, dim) ssm_alpha: its decay before softplus */
    const float *dn_conv;   /* (dn_conv_dim, dn_conv_width) ssm_conv1d: each channel's
                               kernel, oldest token first */
    const float *dn_dt_bias; /* (dn_v_heads) ssm_dt.bias, added to alpha */
    const float *dn_a;      /* (dn_v_heads) ssm_a: -exp(A_log); the log-decay is
                               softplus(alpha + dt_bias) times it */
    const float *dn_norm;   /* (dn_head_v) ssm_norm: the RMSNorm of each head's output,
                               then times silu(z) */
    /* Per-layer inputs (config.ple_dim > 0; else empty): after the feed-forward the
     * stream x gains ple_norm(ple_proj (act(ple_gate x) * the token's input of this
     * layer)). */
    tensor ple_gate;        /* (ple_dim, dim) inp_gate */
    tensor ple_proj;        /* (dim, ple_dim) proj */
    const float *ple_norm;  /* (dim) post_norm */
} model_layer;

typedef enum {
    MODEL_FORMAT_LLAMA2C_V0 = 0, /* legacy fp32, 28-byte header */
    MODEL_FORMAT_LLAMA2C_V1,     /* fp32, 256-byte "ak42" header */
    MODEL_FORMAT_LLAMA2C_V2,     /* int8 Q8_0, 256-byte "ak42" header */
    MODEL_FORMAT_GGUF,           /* GGUF v2 or v3 (model_family.h) */
} model_format;

/* Files at least this big report their progress while weights are converted. */
#define MODEL_PROGRESS_MIN_BYTES ((uint64_t)200 * 1000 * 1000)

/* Called on the loading thread while weights are converted at load: bytes of the
 * file's weights processed so far of total (done == total at the end). */
typedef void (*model_progress_fn)(void *user, uint64_t done, uint64_t total);

/* Whether the weights live in memory of 2 MiB pages (base/huge_pages.h): the file read
 * into such memory instead of mapped, and what loading makes asked for them too. */
typedef enum {
    MODEL_HUGE_PAGES_AUTO = 0, /* where the kernel offers them and the file takes at most
                                  half the memory available (model_huge_pages_choose) */
    MODEL_HUGE_PAGES_ON,
    MODEL_HUGE_PAGES_OFF,      /* the file mapped, in the page cache's 4 KiB pages */
} model_huge_pages;

typedef struct {
    tensor_type weights;  /* type to compute with: TENSOR_BLOCKS (native: the file's block
                             types in place, Q8_0 for the others), TENSOR_Q8_0 or TENSOR_F32
                             (default TENSOR_BLOCKS) */
    int group;            /* group size when quantizing at load (0 = QUANT_GROUP_DEFAULT) */
    model_progress_fn progress;  /* NULL: no reports */
    void *progress_user;
    uint64_t progress_min_bytes; /* report only for files at least this big
                                    (default MODEL_PROGRESS_MIN_BYTES) */
    bool no_panels;       /* true: GGUF Q8_0 matrices are read from the file's blocks
                             alone (--panels off); false (default): where the kernels read
                             panels of one (kernels_panels_read), it is also packed into
                             panels for decode, its bytes twice in memory */
    bool k4_panels;       /* true: where the kernels read panels of a Q4_K matrix, its
                             whole groups of 8 rows are held as panels instead of blocks
                             (--panels on, and by default where the kernels read them:
                             kernels_k4_panels_by_default); their products have the
                             table's row dot's bits (kernels/table.h, k4p_dot) */
    model_huge_pages huge_pages; /* --huge-pages (default auto) */
} model_options;

typedef struct {
    model_config config;
    model_format format;
    const char *format_name;   /* "llama2.c v0 (fp32)", ... */
    tensor_type weights;       /* type of the tensors below: F32, Q8_0, or BLOCKS when some are
                                  the file's blocks in place (--weights native) */
    int n_native;              /* matrices used in place as ggml blocks (TENSOR_BLOCKS) */
    int group;                 /* Q8_0 group of the tensors below (0 for F32) */
    int file_group;            /* group size stored in a v2 file (0 otherwise) */
    char *path;                /* as given to model_open (owned) */
    const char *name;          /* basename of path, without directory (points into path) */
    long long n_params;        /* parameters, counting a shared classifier once */
    size_t file_bytes;
    size_t owned_bytes;        /* bytes allocated for converted weights */
    size_t mapped_bytes;       /* bytes of the file used as weights in place */
    size_t panel_bytes;        /* bytes of the GGUF Q8_0 decode panels (0: none;
                                  model_options), which give decode the GEMM's bits */
    size_t k4_panel_bytes;     /* bytes of the Q4_K decode panels (0: none), which give
                                  the row dots' bits and take the place of the rows they
                                  hold: no memory more (packed over them when file_read) */
    bool huge_pages;           /* the weights asked for 2 MiB pages (model_options.huge_pages) */
    bool file_read;            /* the file read into memory of its own rather than mapped:
                                  with huge_pages, where the weights are used in place */
    char weights_label[32];    /* what the weights were and are: "Q8_0", "F32", "Q4_K→Q8_0" */
    char load_summary[224];    /* what loading did: "Q4_K, Q6_K → Q8_0 at load: 7.2 GB resident" */
    char weights_size[32];     /* memory the weights take, converted and mapped: "7.2 GB" */
    const struct gguf *meta;   /* GGUF files: the parsed metadata (tokenizer, chat template);
                                  NULL for llama2.c files. Owned; valid until model_close */

    const float *rms_final;    /* (dim) */
    tensor token_embedding;    /* (vocab_size, dim) */
    tensor wcls;               /* (vocab_size, dim); a copy of token_embedding's view when shared */
    model_layer *layers;       /* (n_layers) */
    /* Per-layer inputs (config.ple_dim > 0; else NULL / empty): */
    const void *ple_embd;      /* (vocab_size, n_layers * ple_dim) per_layer_token_embd in
                                  the file's type (ple_embd_type, a ggml type), in place: a
                                  token's row is decoded when it runs */
    unsigned ple_embd_type;
    tensor ple_model_proj;     /* (n_layers * ple_dim, dim) per_layer_model_proj */
    const float *ple_proj_norm; /* (ple_dim) per_layer_proj_norm */

    /* private to model*.c */
    void *map;                 /* the whole file, read-only: mapped, or read in (file_read) */
    size_t map_bytes;
    void **owned;              /* buffers to free at close */
    int n_owned, cap_owned;
    struct model_load_state *load; /* while loading: progress and the conversion tally */
} model;

/* The values of a head RoPE turns in a layer with a window and its own RoPE base. */
static inline int model_swa_rope_dims(const model_arch *a)
{
    return a->rope_dims_swa > 0 ? a->rope_dims_swa : a->rope_dims;
}

/* Sets each layer's shape (model_layer.head_size .. out_scale) to the config's, its
 * KV cache its own: what a loader, or code that builds a model by hand, does before
 * a family changes some layers'. */
void model_layers_default(model *m);

/* Llama's values of the description for a head of head_size values: pairs, every
 * value rotated, SiLU, no scales but 1 / sqrt(head_size), no caps, biases, extra norms,
 * fused tensors or windows. */
model_arch model_arch_llama(int head_size);

/* The widest output of a layer's mixer before wo (kqv's width): q_dim, or a Gated
 * DeltaNet's dn_value_dim when that is wider. */
int model_mixer_width(const model_config *c);

/* The widest hidden layer of a feed-forward (the buffers of its gate and up products):
 * hidden_dim, or a shared expert's shexp_hidden when that is wider. */
int model_ffn_width(const model_config *c);

/* The heads of layer l: n_heads, or a Gated DeltaNet's dn_v_heads (its value heads). */
int model_layer_heads(const model *m, int l);

/* The most heads a layer has: n_heads, or a Gated DeltaNet's dn_v_heads when that is
 * more (the debugger's views of a layer's heads are this wide). */
int model_heads_max(const model_config *c);

/* Whether c's description is llama's (model_arch_llama for its head size) and its
 * feed-forward dense, whatever its family's name: the models a llama2.c file, or a GGUF
 * file of the llama architecture without experts, can hold. */
bool model_arch_is_llama(const model_config *c);

/* Rows r0..r1-1 of w as a tensor of their own (a view: no copy), as a loader makes wq,
 * wk, wv of a fused attn_qkv and w1, w3 of a fused gate-up tensor. */
tensor model_tensor_rows(const tensor *w, int r0, int r1);

/* Fills opt with defaults (native, group 32, no progress reports). */
void model_options_default(model_options *opt);

/* Opens, validates and maps path. On failure *out is NULL and err says what is
 * wrong, e.g. "m.bin: 1,048,576 bytes, but its header implies 1,056,540 (truncated?)". */
llm_status model_open(const char *path, const model_options *opt, model **out, llm_err *err);
void model_close(model *m); /* NULL does nothing */

/* Parses a --huge-pages value (auto, on, off); false for anything else, *out left alone. */
bool model_huge_pages_parse(const char *name, model_huge_pages *out);
const char *model_huge_pages_name(model_huge_pages h);
/* Whether a file of file_bytes gets huge pages: on, yes; off, no; auto, when the kernel
 * offers them (offered) and the file is at most half the memory available (available
 * bytes; 0, unknown: no), so that a model that only fits mapped is still mapped. */
bool model_huge_pages_choose(model_huge_pages want, bool offered, uint64_t file_bytes,
                             uint64_t available);

/* True when some matrix is a GGUF Q8_0 tensor used in place (TENSOR_Q8_0_BLOCKS): the
 * ones decode panels are packed from. */
bool model_has_q8_blocks(const model *m);
/* Whether any of m's matrices is Q4_K used in place (the ones Q4_K panels are made of). */
bool model_has_k4_blocks(const model *m);

/* The type the weights are computed in: "native" (the file's block types, in place,
 * with Q8_0 for the types converted at load), "Q8_0" or "F32". */
const char *model_weights_name(const model *m);
/* The same as --weights names it: "native", "q8_0" or "f32" (traces record it). */
const char *model_weights_option(const model *m);
/* Parses a --weights value: native, q8_0 (or int8), f32 (or fp32). False for anything
 * else, leaving *out alone. */
bool model_weights_parse(const char *name, tensor_type *out);

#endif
