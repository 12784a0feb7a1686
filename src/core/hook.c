/* hook.c — the hook points' names and shapes, and which rows an observer wants (see
 * hook.h). One row per point; the forward pass and the front ends read this table. */
#include "hook.h"

#include <string.h>

/* What the pass hands at a point: its name and the values a row has. */
typedef enum {
    WIDTH_DIM, WIDTH_Q, WIDTH_KV, WIDTH_HIDDEN, WIDTH_VOCAB, WIDTH_KEYS, WIDTH_EXPERTS,
    WIDTH_USED, WIDTH_USED_DIM, WIDTH_MIX, WIDTH_DN_KEYS, WIDTH_DN_VALUES, WIDTH_DN_HEADS
} width_of;

/* Which layers the pass hands a point at. */
typedef enum {
    LAYERS_ALL = 0, LAYERS_DENSE, LAYERS_EXPERTS, LAYERS_DELTA_NET, LAYERS_PER_LAYER_INPUT
} layer_kind;

static const struct {
    const char *name;
    bool in_layer;
    width_of width;
    layer_kind only;
} points[HOOK_COUNT] = {
    [HOOK_INP_EMBD] = {.name = "inp_embd", .in_layer = false, .width = WIDTH_DIM},
    [HOOK_ATTN_NORM] = {.name = "attn_norm", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_QCUR] = {.name = "Qcur", .in_layer = true, .width = WIDTH_Q},
    [HOOK_KCUR] = {.name = "Kcur", .in_layer = true, .width = WIDTH_KV},
    [HOOK_VCUR] = {.name = "Vcur", .in_layer = true, .width = WIDTH_KV},
    [HOOK_KQ] = {.name = "kq", .in_layer = true, .width = WIDTH_KEYS},
    [HOOK_KQ_SOFT_MAX] = {.name = "kq_soft_max", .in_layer = true, .width = WIDTH_KEYS},
    [HOOK_Q_CONV] = {.name = "q_conv", .in_layer = true, .width = WIDTH_DN_KEYS,
                     .only = LAYERS_DELTA_NET},
    [HOOK_K_CONV] = {.name = "k_conv", .in_layer = true, .width = WIDTH_DN_KEYS,
                     .only = LAYERS_DELTA_NET},
    [HOOK_V_CONV] = {.name = "v_conv", .in_layer = true, .width = WIDTH_DN_VALUES,
                     .only = LAYERS_DELTA_NET},
    [HOOK_DN_Z] = {.name = "z", .in_layer = true, .width = WIDTH_DN_VALUES,
                   .only = LAYERS_DELTA_NET},
    [HOOK_DN_BETA] = {.name = "beta", .in_layer = true, .width = WIDTH_DN_HEADS,
                      .only = LAYERS_DELTA_NET},
    [HOOK_DN_GATE] = {.name = "gate", .in_layer = true, .width = WIDTH_DN_HEADS,
                      .only = LAYERS_DELTA_NET},
    [HOOK_DN_STATE] = {.name = "state_norm", .in_layer = true, .width = WIDTH_DN_HEADS,
                       .only = LAYERS_DELTA_NET},
    [HOOK_KQV] = {.name = "kqv", .in_layer = true, .width = WIDTH_MIX},
    [HOOK_KQV_OUT] = {.name = "kqv_out", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_FFN_INP] = {.name = "ffn_inp", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_FFN_NORM] = {.name = "ffn_norm", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_FFN_MOE_LOGITS] = {.name = "ffn_moe_logits", .in_layer = true,
                             .width = WIDTH_EXPERTS, .only = LAYERS_EXPERTS},
    [HOOK_FFN_MOE_PROBS] = {.name = "ffn_moe_probs", .in_layer = true, .width = WIDTH_EXPERTS,
                            .only = LAYERS_EXPERTS},
    [HOOK_FFN_MOE_TOPK] = {.name = "ffn_moe_topk", .in_layer = true, .width = WIDTH_USED,
                           .only = LAYERS_EXPERTS},
    [HOOK_FFN_MOE_WEIGHTS] = {.name = "ffn_moe_weights", .in_layer = true,
                              .width = WIDTH_USED, .only = LAYERS_EXPERTS},
    [HOOK_FFN_MOE_DOWN] = {.name = "ffn_moe_down", .in_layer = true, .width = WIDTH_USED_DIM,
                           .only = LAYERS_EXPERTS},
    [HOOK_FFN_MOE_OUT] = {.name = "ffn_moe_out", .in_layer = true, .width = WIDTH_DIM,
                          .only = LAYERS_EXPERTS},
    [HOOK_FFN_GATE] = {.name = "ffn_gate", .in_layer = true, .width = WIDTH_HIDDEN,
                       .only = LAYERS_DENSE},
    [HOOK_FFN_UP] = {.name = "ffn_up", .in_layer = true, .width = WIDTH_HIDDEN,
                     .only = LAYERS_DENSE},
    [HOOK_FFN_GATE_PAR] = {.name = "ffn_gate_par", .in_layer = true, .width = WIDTH_HIDDEN,
                           .only = LAYERS_DENSE},
    [HOOK_FFN_OUT] = {.name = "ffn_out", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_PER_LAYER_EMBD_OUT] = {.name = "per_layer_embd_out", .in_layer = true,
                                 .width = WIDTH_DIM, .only = LAYERS_PER_LAYER_INPUT},
    [HOOK_L_OUT] = {.name = "l_out", .in_layer = true, .width = WIDTH_DIM},
    [HOOK_RESULT_NORM] = {.name = "result_norm", .in_layer = false, .width = WIDTH_DIM},
    [HOOK_RESULT_OUTPUT] = {.name = "result_output", .in_layer = false, .width = WIDTH_VOCAB},
};

const char *hook_name(hook_point p)
{
    return (unsigned)p < HOOK_COUNT ? points[p].name : NULL;
}

bool hook_parse(const char *name, hook_point *out)
{
    for (int p = 0; p < HOOK_COUNT; p++)
        if (!strcmp(name, points[p].name)) {
            *out = (hook_point)p;
            return true;
        }
    return false;
}

bool hook_in_layer(hook_point p)
{
    return (unsigned)p < HOOK_COUNT && points[p].in_layer;
}

bool hook_fires(const model_config *c, hook_point p)
{
    if ((unsigned)p >= HOOK_COUNT)
        return false;
    switch (points[p].only) {
    case LAYERS_DENSE: return c->n_experts == 0 || c->arch.dense_beside_experts;
    case LAYERS_EXPERTS: return c->n_experts > 0;
    case LAYERS_DELTA_NET: return c->dn_layers > 0;
    case LAYERS_PER_LAYER_INPUT: return c->ple_dim > 0;
    case LAYERS_ALL: break;
    }
    return true;
}

bool hook_per_head(hook_point p)
{
    return (unsigned)p < HOOK_COUNT && points[p].width == WIDTH_KEYS;
}

int hook_width(const model_config *c, hook_point p, int pos)
{
    switch ((unsigned)p < HOOK_COUNT ? points[p].width : WIDTH_DIM) {
    case WIDTH_Q:
        return c->q_dim;
    case WIDTH_KV:
        return c->kv_dim;
    case WIDTH_HIDDEN:
        return c->hidden_dim;
    case WIDTH_VOCAB:
        return c->vocab_size;
    case WIDTH_KEYS:
        return pos + 1;
    case WIDTH_EXPERTS:
        return c->n_experts;
    case WIDTH_USED:
        return c->n_experts_used;
    case WIDTH_USED_DIM:
        return c->n_experts_used * c->dim;
    case WIDTH_MIX:
        return model_mixer_width(c);
    case WIDTH_DN_KEYS:
        return c->dn_key_dim;
    case WIDTH_DN_VALUES:
        return c->dn_value_dim;
    case WIDTH_DN_HEADS:
        return c->dn_v_heads;
    case WIDTH_DIM:
        break;
    }
    return c->dim;
}

int hook_shape(const model_config *c, hook_point p, int pos, int dims[2])
{
    switch ((unsigned)p < HOOK_COUNT ? points[p].width : WIDTH_DIM) {
    case WIDTH_Q:
        if (c->layers_vary)
            break;
        dims[0] = c->n_heads;
        dims[1] = c->head_size;
        return 2;
    case WIDTH_MIX: /* a hybrid's layers differ: the widest, flat */
        if (c->dn_layers > 0 || c->layers_vary) {
            dims[0] = model_mixer_width(c);
            dims[1] = 1;
            return 1;
        }
        dims[0] = c->n_heads;
        dims[1] = c->head_size;
        return 2;
    case WIDTH_DN_KEYS:
        dims[0] = c->dn_k_heads;
        dims[1] = c->dn_head_k;
        return 2;
    case WIDTH_DN_VALUES:
        dims[0] = c->dn_v_heads;
        dims[1] = c->dn_head_v;
        return 2;
    case WIDTH_KV:
        if (c->layers_vary)
            break;
        dims[0] = c->n_kv_heads;
        dims[1] = c->head_size;
        return 2;
    case WIDTH_KEYS:
        dims[0] = model_heads_max(c);
        dims[1] = pos + 1;
        return 2;
    case WIDTH_USED_DIM:
        dims[0] = c->n_experts_used;
        dims[1] = c->dim;
        return 2;
    default: /* flat; also the points whose widths differ by layer (layers_vary) */
        break;
    }
    dims[0] = hook_width(c, p, pos);
    dims[1] = 1;
    return 1;
}

bool hook_editable(hook_point p)
{
    return p == HOOK_INP_EMBD || p == HOOK_QCUR || p == HOOK_KCUR || p == HOOK_VCUR ||
           p == HOOK_DN_BETA || p == HOOK_DN_GATE || p == HOOK_KQV || p == HOOK_FFN_MOE_LOGITS ||
           p == HOOK_FFN_MOE_OUT || p == HOOK_L_OUT;
}

bool hook_wants(const hook *h, hook_point p, int l, int pos, int n, int *row, int *rows)
{
    if (!(h->points & HOOK_BIT(p)))
        return false;
    if (l >= 0 && (l < h->layer_first || l > h->layer_last))
        return false;
    if (h->pos < 0) {
        *row = 0;
        *rows = n;
        return true;
    }
    if (h->pos < pos || h->pos >= pos + n)
        return false;
    *row = h->pos - pos;
    *rows = 1;
    return true;
}
