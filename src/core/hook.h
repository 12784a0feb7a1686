/* hook.h — the named points of the forward pass (hook points), what an observer
 * registered at them is handed, and what an editor may change there.
 *
 * The forward pass (forward.c) is one sequence of steps for one token and for a batch;
 * each step's result has a name, the one llama.cpp gives that tensor of its graph. An
 * observer reads it there; an editor changes it before anyone reads it (both with
 * transformer_hook_add). The debugger's captures are observers (the attention rows at
 * kq_soft_max, the logit lens at l_out, attribution at kqv, ffn_out and
 * per_layer_embd_out); its
 * interventions are editors (knock_out.c zeroes a head's kqv, and empties a Gated
 * DeltaNet head's state through its beta and gate, expert_knock_out.c sets a
 * knocked-out expert's ffn_moe_logits to -INFINITY, expert_force.c raises a forced
 * expert's just above the others', control_vectors.c adds to l_out; steering.c
 * registers them). Owns nothing; no state. */
#ifndef LLMCHAT_HOOK_H
#define LLMCHAT_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* In the order of the steps that make them; an observer is handed a layer's Qcur,
 * Kcur and Vcur after its kq and kq_soft_max (attention prepares and reads them head
 * by head, and hands them whole when it is done). The width of a row is in
 * parentheses. */
typedef enum {
    HOOK_INP_EMBD = 0,  /* (dim) the token's embedding, times embed_scale: the stream
                           layer 0 reads */
    HOOK_ATTN_NORM,     /* (dim) attention's input: the stream RMS-normed */
    HOOK_QCUR,          /* (q_dim) the queries, heads side by side, after the bias, the
                           QK-norm and RoPE */
    HOOK_KCUR,          /* (kv_dim) the keys, the same (what the KV cache stores) */
    HOOK_VCUR,          /* (kv_dim) the values */
    HOOK_KQ,            /* one head (keys): the scores the softmax reads, q·k times
                           query_scale, soft-capped; -INFINITY for keys the query does
                           not see (later positions, outside its window) */
    HOOK_KQ_SOFT_MAX,   /* one head (keys): the attention weights; 0 for keys not seen; a
                           Gated DeltaNet's value head: its effective attention (the
                           weight of each earlier position's value in its output) */
    /* a Gated DeltaNet layer (model_layer.kind) instead of Qcur .. kq: */
    HOOK_Q_CONV,        /* (dn_key_dim) the convolved queries after SiLU, before their norm */
    HOOK_K_CONV,        /* (dn_key_dim) the convolved keys, the same */
    HOOK_V_CONV,        /* (dn_value_dim) the convolved values */
    HOOK_DN_Z,          /* (dn_value_dim) the output gate z, before its SiLU */
    HOOK_DN_BETA,       /* (dn_v_heads) each value head's write strength, after its sigmoid */
    HOOK_DN_GATE,       /* (dn_v_heads) each value head's log-decay (llama.cpp's gate) */
    HOOK_DN_STATE,      /* (dn_v_heads) the Frobenius norm of each value head's state after
                           the position */
    HOOK_KQV,           /* (q_dim) each head's weighted values side by side, before wo; a
                           knocked-out head's are 0; a Gated DeltaNet's: (dn_value_dim) each
                           value head's output RMS-normed and times silu(z) (attn_gated) */
    HOOK_KQV_OUT,       /* (dim) wo's output, before any post-attention norm */
    HOOK_FFN_INP,       /* (dim) the stream after the attention block */
    HOOK_FFN_NORM,      /* (dim) the feed-forward's input: the stream RMS-normed */
    /* a layer of experts (config.n_experts > 0) instead of ffn_gate .. ffn_gate_par: */
    HOOK_FFN_MOE_LOGITS,  /* (n_experts) the router's logits; -INFINITY for an expert
                             knocked out, one ulp above the others' for one forced */
    HOOK_FFN_MOE_PROBS,   /* (n_experts) their softmax */
    HOOK_FFN_MOE_TOPK,    /* (n_experts_used) the chosen experts' numbers (as floats),
                             the most probable first */
    HOOK_FFN_MOE_WEIGHTS, /* (n_experts_used) the weight of each chosen expert's output:
                             its probability, renormalised where the model does */
    HOOK_FFN_MOE_DOWN,    /* (n_experts_used, dim) each chosen expert's output (its down
                             projection, with its bias), in ffn_moe_topk's order, before
                             its weight */
    HOOK_FFN_MOE_OUT,     /* (dim) the weighted sum of the chosen experts' outputs */
    /* a dense layer (and the dense feed-forward beside a layer's experts): */
    HOOK_FFN_GATE,      /* (hidden_dim) w1 x, before the activation */
    HOOK_FFN_UP,        /* (hidden_dim) w3 x */
    HOOK_FFN_GATE_PAR,  /* (hidden_dim) act(w1 x) * w3 x: what w2 reads */
    HOOK_FFN_OUT,       /* (dim) w2's output (a layer of experts: ffn_moe_out; with a dense
                           feed-forward beside them: the two parts' normed outputs added),
                           before any post-feed-forward norm */
    HOOK_PER_LAYER_EMBD_OUT, /* (dim) a layer's per-layer input block (Gemma 4's E2B, E4B:
                           config.ple_dim > 0) as the stream gets it: per_layer_proj of
                           gelu(per_layer_inp_gate x) times the layer's own embedding of
                           the token, after its norm */
    HOOK_L_OUT,         /* (dim) the stream after the layer, control vectors added */
    HOOK_RESULT_NORM,   /* (dim) the final RMSNorm's output: the classifier's input */
    HOOK_RESULT_OUTPUT, /* (vocab_size) the logits (soft-capped where the model caps them) */
    HOOK_COUNT
} hook_point;

/* A set of points, a bit each (HOOK_BIT). */
typedef uint64_t hook_set;
#define HOOK_BIT(p) ((hook_set)1 << (p))
#define HOOK_ALL ((hook_set)((HOOK_BIT(HOOK_COUNT)) - 1))

/* What an observer is handed: the rows of positions pos..pos+n-1 of one point. At
 * kq and kq_soft_max a call is one head's: row i holds query pos+i's values over the
 * keys 0..pos+n-1 (width pos + n), the keys it does not see marked as the point says. */
typedef struct {
    hook_point point;
    int layer;          /* 0..n_layers-1; -1 for inp_embd, result_norm, result_output */
    int head;           /* kq, kq_soft_max: the query head; -1 at the other points */
    int pos;            /* the position of row 0 */
    int n;              /* rows */
    int width;          /* values a row */
    size_t stride;      /* floats from one row to the next */
    const float *data;  /* borrowed for the call */
} hook_tensor;

/* An observer. It runs on one of the pass's threads (not always the caller's), while
 * the pass waits for it: it must not call into the transformer. At kq and kq_soft_max
 * it is called once per head, from several threads at once for different heads: it
 * may only write what belongs to the head it is handed. */
typedef void (*hook_fn)(void *user, const hook_tensor *x);

/* What an editor is handed: columns col..col+width-1 of the rows of positions
 * pos..pos+n-1 of one point (data points at column col of the first row; stride floats
 * from a row to the next), which it may change in place, and nothing else. One token
 * is edited by all the pass's threads at once, each handed its own columns; a batch by
 * one thread, all the columns; a Gated DeltaNet's beta and gate are edited a value head
 * at a time (one column, the call's rows) by the thread that runs the head, before its
 * state reads them, and Qcur, Kcur and Vcur a head's columns of one row at a time (after
 * RoPE; before the scores and the KV cache read them) by the thread that prepares the
 * head: from several threads at once for different heads. It may read the
 * rest of its rows where no editor
 * writes them: every value the pass made there is ready (expert_force.c reads the
 * other experts' logits, skipping those expert_knock_out.c writes). */
typedef struct {
    hook_point point;
    int layer;          /* as in hook_tensor */
    int pos, n;         /* the rows' positions */
    int col, width;     /* the columns handed */
    size_t stride;
    float *data;
} hook_slice;

/* An editor: changes the values it is handed, before any observer of the point sees
 * them and before the pass reads them on. The same rules as an observer's otherwise;
 * it must give the same values whichever columns it is handed at once. */
typedef void (*hook_edit_fn)(void *user, hook_slice *x);

typedef struct {
    hook_fn fn;         /* an observer; or */
    hook_edit_fn edit;  /* an editor (exactly one of the two), at points hook_editable */
    void *user;
    hook_set points;    /* HOOK_BIT of each point observed */
    int layer_first;    /* the layers observed, first..last (the points outside the */
    int layer_last;     /* layers are observed whatever these are) */
    int pos;            /* -1: every position; else that position's row only (n 1) */
} hook;

/* "inp_embd", "Qcur", ... (llama.cpp's names); NULL outside the enum. */
const char *hook_name(hook_point p);
/* The point named name; false for any other name. */
bool hook_parse(const char *name, hook_point *out);
/* True for the points of a layer (attn_norm .. l_out). */
bool hook_in_layer(hook_point p);
/* True when the pass hands point p for a model of config c: the experts' points on a
 * mixture of experts' layers, ffn_gate, ffn_up and ffn_gate_par on dense ones and on
 * those with a dense feed-forward beside the experts (arch.dense_beside_experts), a Gated
 * DeltaNet's on a hybrid, per_layer_embd_out with per-layer inputs, every other point
 * on all. */
bool hook_fires(const model_config *c, hook_point p);
/* True for the points handed one head at a time (kq, kq_soft_max). */
bool hook_per_head(hook_point p);
/* True for the points an editor may change: inp_embd, Qcur, Kcur, Vcur, beta, gate, kqv,
 * ffn_moe_logits, ffn_moe_out, l_out (each a row per position that the pass reads on
 * after the point). */
bool hook_editable(hook_point p);
/* The values a row has at point p for config c; for the per-head points, the keys of
 * a query at position pos (pos + 1). */
int hook_width(const model_config *c, hook_point p, int pos);
/* The shape a step of point p has at position pos for config c, as -m tensors and the
 * compute view show it: [n_heads, head_size] for the queries and the attention output
 * (kqv), [n_kv_heads, head_size] for the keys and values, [n_heads, pos + 1] for the
 * scores and weights (every head of the per-head points), else [width]. Writes dims
 * (2) and returns how many it has (1 or 2); dims[0] is then the number of heads of a
 * point that has heads. */
int hook_shape(const model_config *c, hook_point p, int pos, int dims[2]);
/* True when h observes point p of layer l (-1 outside the layers) at some position of
 * pos..pos+n-1; *row is then the first row it reads, *rows how many (1 or n). */
bool hook_wants(const hook *h, hook_point p, int l, int pos, int n, int *row, int *rows);

#endif
