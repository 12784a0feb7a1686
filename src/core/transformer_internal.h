/* transformer_internal.h — the transformer's state, shared by transformer.c (buffers,
 * KV cache, classifier, the public calls) and forward.c (the one forward pass).
 * Private to those two files. */
#ifndef LLMCHAT_TRANSFORMER_INTERNAL_H
#define LLMCHAT_TRANSFORMER_INTERNAL_H

#include "barrier.h"
#include "hook.h"
#include "kernels.h"
#include "team.h"
#include "transformer.h"

/* A batch is processed in chunks of positions: the most whose buffers (activations,
 * new keys and values, one thread's attention rows) fit in CHUNK_BUDGET, a multiple
 * of CHUNK_MIN, at most CHUNK_MAX. Bigger chunks mean fewer passes over the weights
 * and fewer parallel regions; the budget keeps 7B (dim 4096, 4096 positions) at 128.
 * PARALLEL_TOKENS: a batch's per-token steps go parallel from this many tokens on
 * (below, a parallel region costs more than it saves). MAX_HOOKS: observers
 * registered at once (transformer_hook_add); a call adds at most CALL_HOOKS of its
 * own (the attention rows, the lens, attribution). */
enum {
    CHUNK_MIN = 64,
    CHUNK_MAX = 256,
    MAX_QBATCHES = 8,
    PARALLEL_TOKENS = 8,
    MAX_HOOKS = 8,
    CALL_HOOKS = 4,
    OBSERVED_LOGIT_ROWS = 16,
    DN_MARK_EVERY = 32,     /* positions between checkpoints of the recurrent state: at
                               most 2 states' memory per 64 positions, at most 31
                               positions run again to rewind */
};
#define CHUNK_BUDGET ((size_t)32 << 20)

/* The activations of up to cap positions (transformer.cap). */
typedef struct {
    float *x;               /* (cap, dim) residual stream */
    float *xn;              /* (cap, dim) a batch's normed block input (one token's: lanes) */
    float *q;               /* (cap, q_dim) queries */
    float *kqv;             /* (cap, model_mixer_width) attention output, the heads side by side (a
                               Gated DeltaNet's: dn_value_dim, each head normed and gated) */
    float *proj;            /* (cap, dim) wo's or w2's output */
    float *hb;              /* (cap, model_ffn_width) w1 x, then the gated product (a
                               shared expert's too) */
    float *hb2;             /* (cap, model_ffn_width) w3 x */
    float *rope;            /* (cap, rope_dims) cos, sin of each pair at each position */
    float *rope_swa;        /* (cap, rope_dims) the same for the layers with a window, when
                               arch.rope_base_swa is set; else NULL */
    /* A mixture of experts (config.n_experts > 0; else NULL), E experts, K used, each
     * of expert_hidden_dim (H) values: */
    float *moe_logits;      /* (cap, E) the router's logits */
    float *moe_probs;       /* (cap, E) their softmax */
    float *moe_topk;        /* (cap, K) the chosen experts, as floats (ffn_moe_topk) */
    float *moe_weights;     /* (cap, K) their weights */
    int *moe_sel;           /* (cap, K) the chosen experts */
    int *moe_row;           /* (cap, K) the row of moe_x .. moe_down of each choice */
    int *moe_start;         /* (E + 1) a batch's first row of each expert's group */
    int *moe_fill;          /* (E) rows given to each expert so far */
    float *moe_x;           /* (cap K, dim) a batch's inputs grouped by expert */
    float *moe_gate;        /* (cap K, H) the gate products, then the gated ones */
    float *moe_up;          /* (cap K, H) the up products */
    float *moe_down;        /* (cap K, dim) the down products */
    /* The dense feed-forward beside them (arch.dense_beside_experts; else NULL): */
    float *ffn_dense;       /* (cap, dim) its output, then normed (post_dense_norm) */
    float *moe_in;          /* (cap, dim) the experts' input (pre_experts_norm) */
    float *moe_rin;         /* (cap, dim) the router's input */
    /* Gated attention (arch.gated_attention; else NULL): */
    float *qg;              /* (cap, 2 q_dim) wq's products: each head's query, then its gate */
    float *gate;            /* (cap, q_dim) the gates */
    /* Gated DeltaNet layers (config.dn_layers > 0; else NULL), W the convolution's width: */
    float *dn_ext;          /* (W - 1 + cap, dn_conv_dim) the convolution's inputs: the
                               layer's last W - 1 from before the call, then attn_qkv's
                               products */
    float *dn_conv;         /* (cap, dn_conv_dim) convolved, then SiLU: q, k, v */
    float *dn_z;            /* (cap, dn_value_dim) the output gate z */
    float *dn_beta;         /* (cap, dn_v_heads) ssm_beta's products, then their sigmoid */
    float *dn_g;            /* (cap, dn_v_heads) ssm_alpha's, then the log-decay */
    float *dn_snorm;        /* (cap, dn_v_heads) each head's state's norm after the row,
                               while state_norm is observed */
    /* Per-layer inputs (config.ple_dim > 0; else NULL): */
    float *ple_in;          /* (cap, n_layers, ple_dim) each position's input of each layer */
    float *ple_proj;        /* (cap, n_layers x ple_dim) ple_model_proj's products */
    float *ple_g;           /* (cap, ple_dim) a layer's gate, times its input */
    /* Quantized activations, one per distinct (len, group) among the Q8_0 weights
     * (transformer.n_qb of them): each holds cap vectors. */
    qbatch *qb[MAX_QBATCHES];
} batch_buffers;

/* One thread's own buffers on the one-token path: each thread normalises and
 * quantizes the shared input itself (no barrier for it) into its lane. */
struct lane {
    float *xn;                  /* (max(dim, q_dim, hidden_dim)) normed input, scratch */
    qbatch *qb[MAX_QBATCHES];   /* one vector each, like transformer.buf.qb */
};

struct transformer {
    const model *m;         /* borrowed; must outlive the transformer */
    int ctx;                /* positions the KV cache holds */
    transformer_kv kv;      /* F32: key_cache / value_cache; Q8_0: kq, ks, vq, vs */
    /* Each attention layer that writes its own cache (model_layer.kv_layer) has ctx
     * positions of its kv_dim values at kv_base[l] (a Gated DeltaNet layer and a layer
     * sharing another's, none: cache_bytes_of): */
    float *key_cache;       /* (layer, ctx, its kv_dim) */
    float *value_cache;     /* (layer, ctx, its kv_dim) */
    int8_t *kq, *vq;        /* (layer, its kv_head, ctx, its head_size) int8 rows */
    float *ks, *vs;         /* (layer, its kv_head, ctx) their scales, from kv_rows[l] */
    size_t *kv_base, *kv_rows; /* (n_layers) */
    float *kv_f32;          /* (att_slots, 2, ctx, head_size) one head's keys and values
                               made fp32 again, for batched attention over a Q8_0 cache */
    float *seq_kv;          /* (seq_kv_slots, 2, ctx, head_size) one sequence's keys and
                               values gathered, for a pass of several sequences
                               (transformer_run_sequences); NULL until one runs */
    int seq_kv_slots;
    float *seq_dn;          /* (seq_dn_slots, dn_head_k x dn_head_v) one value head's state
                               for one sequence of such a pass (hybrid models) */
    int seq_dn_slots;
    float *logits;          /* (vocab) of the last position run */
    unsigned char *batch_of; /* (ctx) 1 where the position last ran on the batch kernels */
    /* The classifier's input of every position run (its final normed state), kept
     * like the KV cache so that transformer_logits can compute any position's logits
     * later; pages are touched only for positions run. */
    qbatch *cls_q;          /* Q8_0 classifier: (ctx) vectors quantized for it */
    float *cls_f;           /* F32 classifier: (ctx, dim) */
    int chunk;              /* positions per batch chunk (chunk_positions) */
    float *att;             /* (att_slots, chunk, ctx) attention weights, one slot per thread */
    int att_slots;

    int cap;                /* positions buf holds (1..chunk) */
    batch_buffers buf;
    float *k_new;           /* (chunk, kv_dim) new keys, before the cache */
    float *v_new;           /* (chunk, kv_dim) new values */
    int n_qb;               /* buf.qb used: the distinct (len, group) of the Q8_0 weights */
    float *gate_keep;       /* (chunk, hidden_dim) w1 x before the activation, kept while
                               ffn_gate is observed; else NULL */
    float *logit_rows;      /* (OBSERVED_LOGIT_ROWS, vocab) a batch's logits while
                               result_output is observed; else NULL */

    /* The recurrent state of the Gated DeltaNet layers (config.dn_layers > 0; else NULL
     * and 0): for each such layer (dn_index), its convolution's last W - 1 inputs
     * (dn_conv_dim each), then each value head's state matrix (dn_head_k x dn_head_v):
     * dn_floats floats a layer. A forward call at pos needs the state after pos - 1:
     * recurrent_seek (recurrent_state.h) makes it from the nearest checkpoint. */
    float *dn_live;         /* (dn_layers, dn_floats) the state after position dn_at - 1 */
    float *dn_marks;        /* (ctx / DN_MARK_EVERY + 1, dn_layers, dn_floats) checkpoint s:
                               the state after position s DN_MARK_EVERY - 1 (0: zeros) */
    int *dn_index;          /* (n_layers) a layer's index among the DeltaNets, or -1 */
    size_t dn_floats;
    int dn_at;              /* positions the live state has taken in */
    int dn_known;           /* positions 0..dn_known - 1 ran in order since the state was
                               last reset: their tokens (tokens_at) and the checkpoints up
                               to it hold */
    int *tokens_at;         /* (ctx) the token each position last ran (hybrid models) */
    float *dn_hist;         /* (ctx, dn_layers, dn_hist_floats) what the DeltaNets' effective
                               attention reads of each position: its L2-normed keys (each
                               q/k head's dn_head_k), then each value head's log-decay, then
                               its beta */
    size_t dn_hist_floats;
    bool dn_marking;        /* the pass writes the checkpoints it passes (not a what-if's) */
    float *dn_kept;         /* (dn_kept_to - dn_kept_from + 1, dn_layers, dn_floats) the state
                               after positions dn_kept_from - 1 .. dn_kept_to - 1, written as
                               checkpoints are where no checkpoint is
                               (transformer_keep_states); NULL: none */
    unsigned char *dn_kept_ok; /* (the same count) 1 once a pass that writes checkpoints wrote
                               that state */
    int dn_kept_from, dn_kept_to;

    struct lane *lanes;     /* (n_lanes) */
    int n_lanes;
    /* The kernels' scratch (kernels/scratch.h): scratch i for the pass's thread i (a
     * lane, an attention slot, a thread of a parallel product); it has a scratch for
     * every lane and attention slot. */
    kernels_workspace *ws;
    /* Why the last forward call failed (transformer_error); LLM_OK after one that did
     * not. */
    llm_status failure;
    llm_err failure_text;
    barrier meet;           /* the one-token path's barrier */
    team team;              /* its thread count beside busy programs (team.h) */

    hook hooks[MAX_HOOKS];          /* observers and editors registered
                                       (transformer_hook_add) */
    bool hook_used[MAX_HOOKS];
};

/* The hooks of one forward call: the observers (the registered ones and the call's
 * own) and the editors. */
typedef struct {
    const hook *list[MAX_HOOKS + CALL_HOOKS];
    int n;
    hook_set watch;         /* the points any of them observes */
    const hook *edit[MAX_HOOKS];
    int n_edit;
    hook_set edits;         /* the points any of them edits */
} pass_hooks;

#endif
