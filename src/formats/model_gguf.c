/* model_gguf.c — the loader of GGUF models: the family from general.architecture
 * (model_family.h: llama, qwen2, qwen3, qwen3moe, olmoe, gpt-oss, qwen35, phi3, gemma,
 * gemma2, gemma3;
 * any other is refused by name, with what it lacks), the shape and the hyperparameters
 * from the family's keys ({arch}.embedding_length, ..., the experts' counts), checked
 * for sane values before anything is allocated, and the model's description
 * (model_arch: RoPE layout, partial rotary, biases, norms, soft-caps, windows, scales,
 * experts, a hybrid's Gated DeltaNet layers) set from them. The weights are
 * model_gguf_weights.c's.
 *
 * Owns nothing itself: the parsed metadata and the buffers belong to the model. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "model_family.h"
#include "model_internal.h"

/* ---- the keys ---- */

/* The keys of a family: "{arch}.{suffix}" made in buf. */
typedef struct {
    const model *m;
    const gguf *g;
    const model_family *f;
    char buf[160];
} family_keys;

static const char *key(family_keys *k, const char *suffix)
{
    snprintf(k->buf, sizeof k->buf, "%s.%s", k->f->name, suffix);
    return k->buf;
}

/* An unsigned integer key; *found says whether it was there. Fails when it is there
 * but not a non-negative integer. */
static llm_status get_count(family_keys *k, const char *suffix, int64_t *out, bool *found,
                            llm_err *err)
{
    uint64_t v;
    const char *name = key(k, suffix);
    *found = gguf_find_key(k->g, name) >= 0;
    if (!*found)
        return LLM_OK;
    if (!gguf_get_uint(k->g, name, &v))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is a %s, not a count", k->m->path,
                        name,
                        gguf_type_name(gguf_kv_type(k->g, (uint64_t)gguf_find_key(k->g, name))));
    *out = v > (uint64_t)INT32_MAX ? INT64_MAX : (int64_t)v;
    return LLM_OK;
}

static llm_status require_count(family_keys *k, const char *suffix, int64_t *out, llm_err *err)
{
    bool found;
    llm_status st = get_count(k, suffix, out, &found, err);
    if (st == LLM_OK && !found)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is missing (the %s architecture "
                        "needs it)", k->m->path, key(k, suffix), k->f->name);
    return st;
}

/* A real hyperparameter, and the range a model's value can take: outside it the forward
 * pass computes nonsense (an infinite RoPE scale, a uniform attention) without a word. */
typedef struct {
    const char *suffix;
    double fallback;   /* when the file does not have the key */
    double lo, hi;     /* the sane range, both ends in it */
    const char *what;  /* what it is, for the message */
} real_key;

static llm_status get_real(family_keys *k, const real_key *r, bool required, double *out,
                           llm_err *err)
{
    const char *name = key(k, r->suffix);
    const char *path = k->m->path;
    *out = r->fallback;
    if (gguf_find_key(k->g, name) < 0)
        return required ? llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is missing (the %s "
                                   "architecture needs it)", path, name, k->f->name)
                        : LLM_OK;
    if (!gguf_get_float(k->g, name, out) || !isfinite(*out) || *out <= 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is not a positive number", path,
                        name);
    if (*out < r->lo || *out > r->hi)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is %g, not a plausible %s (%g to "
                        "%g): the file is damaged or not a model llmchat can run", path, name,
                        *out, r->what, r->lo, r->hi);
    return LLM_OK;
}

static const real_key rope_base_key = {.suffix = "rope.freq_base", .fallback = 10000.0,
                                       .lo = 2.0, .hi = 1e12, .what = "RoPE base"};
static const real_key eps_key = {.suffix = "attention.layer_norm_rms_epsilon", .fallback = 1e-5,
                                 .lo = 1e-12, .hi = 1.0, .what = "RMSNorm epsilon"};
static const real_key factor_key = {.suffix = "rope.scaling.factor", .fallback = 1.0,
                                    .lo = 1e-3, .hi = 1e3, .what = "RoPE scaling factor"};
static const real_key attn_factor_key = {.suffix = "rope.scaling.attn_factor", .fallback = 1.0,
                                         .lo = 1e-2, .hi = 1e2, .what = "RoPE attention factor"};
static const real_key beta_fast_key = {.suffix = "rope.scaling.yarn_beta_fast", .fallback = 32.0,
                                       .lo = 1e-3, .hi = 1e4, .what = "YaRN beta"};
static const real_key beta_slow_key = {.suffix = "rope.scaling.yarn_beta_slow", .fallback = 1.0,
                                       .lo = 1e-3, .hi = 1e4, .what = "YaRN beta"};
/* the soft-caps' fallbacks are the family's (model_family.attn_softcap, final_softcap) */
static const real_key attn_cap_key = {.suffix = "attn_logit_softcapping", .lo = 1e-2,
                                      .hi = 1e6, .what = "attention soft-cap"};
static const real_key final_cap_key = {.suffix = "final_logit_softcapping", .lo = 1e-2,
                                       .hi = 1e6, .what = "logit soft-cap"};

/* ---- the family ---- */

/* The family of general.architecture, or a refusal naming what llmchat lacks. */
static llm_status read_family(const model *m, const gguf *g, const model_family **out,
                              llm_err *err)
{
    const char *arch = gguf_get_string(g, "general.architecture", NULL);
    if (!arch && gguf_string_has_nul(g, "general.architecture"))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: general.architecture holds a NUL byte: a "
                        "corrupt file", m->path);
    if (!arch)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF file has no general.architecture: not a model (a vocabulary "
                        "only?)", m->path);
    if ((*out = model_family_find(arch)))
        return LLM_OK;
    const char *missing = model_family_missing(arch);
    if (missing)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: architecture '%.40s' is not supported: %s "
                        "(llmchat runs %s)", m->path, arch, missing, model_family_names());
    return llm_fail(err, LLM_ERR_FORMAT, "%s: architecture '%.40s' is not supported: llmchat "
                    "runs %s", m->path, arch, model_family_names());
}

/* ---- the shape and the hyperparameters ---- */

/* What the keys say beside the shape. */
typedef struct {
    int64_t rope_dims;       /* values of a head RoPE turns */
    int64_t value_length;    /* values of a value head, when the file says; 0: not said */
    int64_t window;          /* keys a sliding layer sees; 0: no layer slides */
    int64_t long_after;      /* LongRoPE's original context */
    double base, eps, factor, attn_factor, attn_cap, final_cap;
    bool linear;             /* the RoPE factor scales positions linearly */
    bool yarn;               /* YaRN: the factor mixes each pair's frequency (rope_yarn) */
    int64_t yarn_orig;       /* YaRN's original context (0: the training context) */
    double beta_fast, beta_slow; /* YaRN's correction range, in rotations */
    int64_t experts, experts_used, expert_hidden; /* a mixture of experts; 0: dense */
    int64_t shexp_hidden;   /* its shared expert's; 0: none */
    /* a hybrid family's Gated DeltaNets (model_family.delta_net): */
    int64_t dn_conv, dn_head, dn_k_heads, dn_v_heads, dn_inner;
    int64_t attn_every;      /* full_attention_interval, without recurrent_layers */
    bool has_recurrent;      /* recurrent_layers (one flag per block) is in the file */
    gguf_array recurrent;
    int64_t sections[4];     /* rope.dimension_sections */
    int64_t mtp;             /* multi-token-prediction blocks after the others */
    /* a family of per-layer shapes (model_family.layer_shapes): */
    int64_t swa_head, swa_rot;   /* a sliding layer's head size and values RoPE turns */
    double base_swa;             /* its RoPE base */
    int64_t shared_kv;           /* the last layers that share an earlier one's KV cache */
    int64_t ple;                 /* per-layer inputs' width (model_family.per_layer_inputs) */
    bool has_kv_arr, has_ff_arr; /* head_count_kv, feed_forward_length: one per layer */
    gguf_array kv_arr, ff_arr, pattern;
} hyper;

/* A count a family of per-layer shapes may give one per layer (an array): *has_arr
 * says whether it did, *max is then the largest (each must be 1 to INT32_MAX; their
 * number is checked once the layers are known). */
static llm_status per_layer_count(family_keys *k, const char *suffix, gguf_array *arr,
                                  bool *has_arr, int64_t *max, llm_err *err)
{
    *has_arr = gguf_get_array(k->g, key(k, suffix), arr);
    if (!*has_arr)
        return LLM_OK;
    *max = 0;
    for (uint64_t i = 0; i < arr->n; i++) {
        int64_t v = gguf_array_int(arr, i);
        if (v < 1 || v > INT32_MAX)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s[%" PRIu64 "] is %" PRId64 ", not a "
                            "positive count", k->m->path, key(k, suffix), i, v);
        if (v > *max)
            *max = v;
    }
    if (arr->n == 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is an empty array", k->m->path,
                        key(k, suffix));
    return LLM_OK;
}

/* The shape's counts, from the family's keys (vocab_size from token_embd). */
static llm_status read_counts(family_keys *k, model_shape *s, hyper *h, llm_err *err)
{
    llm_status st;
    int64_t experts = 0, value_length = 0;
    bool has_kv = false, has_rot, has_experts, has_key, has_value;
    h->has_kv_arr = h->has_ff_arr = false;
    if (k->f->layer_shapes &&
        ((st = per_layer_count(k, "feed_forward_length", &h->ff_arr, &h->has_ff_arr,
                               &s->hidden_dim, err)) != LLM_OK ||
         (st = per_layer_count(k, "attention.head_count_kv", &h->kv_arr, &h->has_kv_arr,
                               &s->n_kv_heads, err)) != LLM_OK))
        return st;
    if ((st = require_count(k, "embedding_length", &s->dim, err)) != LLM_OK ||
        (!h->has_ff_arr &&
         (st = require_count(k, "feed_forward_length", &s->hidden_dim, err)) != LLM_OK) ||
        (st = require_count(k, "block_count", &s->n_layers, err)) != LLM_OK ||
        (st = require_count(k, "attention.head_count", &s->n_heads, err)) != LLM_OK ||
        (st = require_count(k, "context_length", &s->seq_len, err)) != LLM_OK ||
        (!h->has_kv_arr &&
         (st = get_count(k, "attention.head_count_kv", &s->n_kv_heads, &has_kv, err)) != LLM_OK) ||
        (st = get_count(k, "rope.dimension_count", &h->rope_dims, &has_rot, err)) != LLM_OK ||
        (st = get_count(k, "attention.key_length", &s->head_size, &has_key, err)) != LLM_OK ||
        (st = get_count(k, "attention.value_length", &value_length, &has_value, err)) != LLM_OK ||
        (st = get_count(k, "expert_count", &experts, &has_experts, err)) != LLM_OK)
        return st;
    if (!has_kv && !h->has_kv_arr)
        s->n_kv_heads = s->n_heads;
    if (!has_key)
        s->head_size = 0;
    else if (s->head_size <= 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is 0: a head needs values",
                        k->m->path, key(k, "attention.key_length"));
    h->value_length = has_value ? value_length : 0;
    if (!has_rot)
        h->rope_dims = 0;
    h->experts = has_experts ? experts : 0;
    const gguf_tensor *emb = gguf_find_tensor(k->g, "token_embd.weight");
    if (!emb)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor token_embd.weight is missing",
                        k->m->path);
    s->vocab_size = emb->n_dims == 2 && emb->dims[1] <= (uint64_t)INT32_MAX
                        ? (int64_t)emb->dims[1] : INT64_MAX;
    return LLM_OK;
}

/* The real hyperparameters: RoPE base and scaling, epsilon, LongRoPE, soft-caps. */
static llm_status read_reals(family_keys *k, hyper *h, llm_err *err)
{
    const model_family *f = k->f;
    llm_status st;
    if ((st = get_real(k, &rope_base_key, false, &h->base, err)) != LLM_OK ||
        (st = get_real(k, &eps_key, f->eps_required, &h->eps, err)) != LLM_OK ||
        (st = get_real(k, &factor_key, false, &h->factor, err)) != LLM_OK ||
        (st = get_real(k, &attn_factor_key, false, &h->attn_factor, err)) != LLM_OK)
        return st;
    h->attn_cap = h->final_cap = 0.0;
    real_key attn_cap = attn_cap_key, final_cap = final_cap_key;
    attn_cap.fallback = f->attn_softcap;
    final_cap.fallback = f->final_softcap;
    if ((f->attn_softcap > 0.0f &&
         (st = get_real(k, &attn_cap, false, &h->attn_cap, err)) != LLM_OK) ||
        ((f->final_softcap > 0.0f || f->final_softcap_key) &&
         (st = get_real(k, &final_cap, false, &h->final_cap, err)) != LLM_OK))
        return st;
    /* linear scaling divides positions by the factor (llama.cpp's freq_scale); a
     * factor without a type is linear, as llama.cpp reads it; LongRoPE's own scaling is
     * its factor tensors */
    const char *scaling = gguf_get_string(k->g, key(k, "rope.scaling.type"), NULL);
    if (!scaling && gguf_string_has_nul(k->g, key(k, "rope.scaling.type")))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s holds a NUL byte: a corrupt file",
                        k->m->path, key(k, "rope.scaling.type"));
    h->linear = !scaling || !strcmp(scaling, "linear") ||
                (f->longrope && !strcmp(scaling, "longrope"));
    h->yarn = scaling && !strcmp(scaling, "yarn");
    if (!h->linear && !h->yarn && strcmp(scaling, "none") != 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: RoPE scaling '%.40s' (factor %g) is not supported: llmchat applies "
                        "linear scaling, YaRN, rope_freqs.weight and Phi-3's LongRoPE",
                        k->m->path, scaling, h->factor);
    bool found;
    h->yarn_orig = 0;
    if (h->yarn) {
        double log_mul = 0.0;
        const char *mul_key = key(k, "rope.scaling.yarn_log_multiplier");
        if (gguf_find_key(k->g, mul_key) >= 0 &&
            (!gguf_get_float(k->g, mul_key, &log_mul) || log_mul != 0.0))
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is not supported: llmchat applies "
                            "YaRN's magnitude 1 + 0.1 ln(factor) alone (DeepSeek's variant "
                            "is not run)", k->m->path, mul_key);
        if ((st = get_real(k, &beta_fast_key, false, &h->beta_fast, err)) != LLM_OK ||
            (st = get_real(k, &beta_slow_key, false, &h->beta_slow, err)) != LLM_OK ||
            (st = get_count(k, "rope.scaling.original_context_length", &h->yarn_orig, &found,
                            err)) != LLM_OK)
            return st;
        if (h->factor < 1.0)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %g: YaRN extends a context, its "
                            "factor is at least 1", k->m->path, key(k, "rope.scaling.factor"),
                            h->factor);
    }
    h->long_after = 0;
    if (f->longrope &&
        (st = get_count(k, "rope.scaling.original_context_length", &h->long_after, &found, err)) !=
            LLM_OK)
        return st;
    return LLM_OK;
}

/* Whether {arch}.attention.sliding_window_pattern, where the file has it, says the
 * family's pattern: its period (a count), or each layer's flag (an array, one per layer). */
static bool pattern_is_family(family_keys *k, const model_shape *s)
{
    const model_family *f = k->f;
    const char *name = key(k, "attention.sliding_window_pattern");
    uint64_t period;
    gguf_array a;
    if (gguf_find_key(k->g, name) < 0)
        return true;
    if (gguf_get_uint(k->g, name, &period))
        return period == (uint64_t)f->swa_period;
    if (!gguf_get_array(k->g, name, &a) || a.n != (uint64_t)s->n_layers)
        return false;
    for (int l = 0; l < s->n_layers; l++)
        if ((gguf_array_int(&a, (uint64_t)l) != 0) != model_family_slides(f, l))
            return false;
    return true;
}

/* The sliding window of the family's local layers (0: none); without the key, the
 * family's default for the shape. */
static llm_status read_window(family_keys *k, const model_shape *s, hyper *h, llm_err *err)
{
    const model_family *f = k->f;
    bool found;
    h->window = 0;
    if (!model_family_has_windows(f))
        return LLM_OK;
    llm_status st = get_count(k, "attention.sliding_window", &h->window, &found, err);
    if (st != LLM_OK)
        return st;
    if (!f->layer_shapes && !pattern_is_family(k, s))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s says another pattern of sliding layers "
                        "than the %s architecture's (layer l slides when l %% %d < %d), which "
                        "llmchat runs alone", k->m->path,
                        key(k, "attention.sliding_window_pattern"), f->name, f->swa_period,
                        f->swa_local);
    if (!found) {
        h->window = model_family_default_window(f, s->n_layers, s->n_kv_heads, s->seq_len);
        if (h->window == 0)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is missing (the %s "
                            "architecture needs its sliding window)", k->m->path,
                            key(k, "attention.sliding_window"), f->name);
    }
    if (h->window == 0 && !f->swa_zero_none)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is 0, but the %s architecture's "
                        "local layers attend over a window of at least one key", k->m->path,
                        key(k, "attention.sliding_window"), f->name);
    if (h->window > MODEL_MAX_SEQ)
        h->window = MODEL_MAX_SEQ; /* wider than any context: the same as none at all */
    return LLM_OK;
}

/* A mixture of experts' keys: how many experts, how many a token uses, and an
 * expert's hidden size, checked against each other and the family (h->experts was
 * read with the counts). */
static llm_status read_experts(family_keys *k, const model_shape *s, hyper *h, llm_err *err)
{
    const model_family *f = k->f;
    const char *path = k->m->path;
    bool found;
    llm_status st;
    h->experts_used = h->expert_hidden = h->shexp_hidden = 0;
    if (h->experts == 0 && f->experts == FAMILY_EXPERTS_REQUIRED)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is %s (the %s architecture is a "
                        "mixture of experts)", path, key(k, "expert_count"),
                        gguf_find_key(k->g, key(k, "expert_count")) < 0 ? "missing" : "0",
                        f->name);
    if (h->experts == 0)
        return LLM_OK;
    if (f->experts == FAMILY_EXPERTS_NONE)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", but the %s architecture "
                        "has no mixture of experts", path, key(k, "expert_count"), h->experts,
                        f->name);
    if (h->experts > MODEL_MAX_EXPERTS)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", more than the %d experts "
                        "this program accepts", path, key(k, "expert_count"), h->experts,
                        (int)MODEL_MAX_EXPERTS);
    if ((st = get_count(k, "expert_used_count", &h->experts_used, &found, err)) != LLM_OK)
        return st;
    if (!found || h->experts_used == 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is %s: a mixture of experts "
                        "must say how many experts a token uses", path,
                        key(k, "expert_used_count"), found ? "0" : "missing");
    if (h->experts_used > h->experts)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s.expert_used_count is %" PRId64 ", more "
                        "than the %" PRId64 " experts of %s.expert_count", path, f->name,
                        h->experts_used, h->experts, f->name);
    h->expert_hidden = s->hidden_dim;
    if (f->expert_ff_key) {
        if ((st = get_count(k, "expert_feed_forward_length", &h->expert_hidden, &found, err)) !=
            LLM_OK)
            return st;
        if (!found)
            h->expert_hidden = s->hidden_dim / h->experts_used;
    }
    if (h->expert_hidden <= 0 || h->expert_hidden > MODEL_MAX_HIDDEN)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: an expert's hidden size is %" PRId64 " (%s): "
                        "not 1 to %d", path, h->expert_hidden,
                        f->expert_ff_key ? key(k, "expert_feed_forward_length")
                                         : key(k, "feed_forward_length"),
                        (int)MODEL_MAX_HIDDEN);
    if (!f->shared_expert)
        return LLM_OK;
    if ((st = get_count(k, "expert_shared_feed_forward_length", &h->shexp_hidden, &found,
                        err)) != LLM_OK)
        return st;
    if (!found) /* llama.cpp's default */
        h->shexp_hidden = s->hidden_dim;
    if (h->shexp_hidden <= 0 || h->shexp_hidden > MODEL_MAX_HIDDEN)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: the shared expert's hidden size is %" PRId64
                        " (%s): not 1 to %d", path, h->shexp_hidden,
                        found ? key(k, "expert_shared_feed_forward_length")
                              : key(k, "feed_forward_length"),
                        (int)MODEL_MAX_HIDDEN);
    return LLM_OK;
}

/* A count that must be there, 1 to max. */
static llm_status require_range(family_keys *k, const char *suffix, int64_t max, int64_t *out,
                                llm_err *err)
{
    llm_status st = require_count(k, suffix, out, err);
    if (st == LLM_OK && (*out < 1 || *out > max))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is %" PRId64 ", not 1 to %"
                        PRId64, k->m->path, key(k, suffix), *out, max);
    return st;
}

/* A hybrid family's keys (model_family.delta_net): the multi-token-prediction blocks
 * (taken off s->n_layers: they are not run), the Gated DeltaNets' sizes (ssm.*), which
 * layers they are, and RoPE's sections. */
static llm_status read_delta_net(family_keys *k, model_shape *s, hyper *h, llm_err *err)
{
    const char *path = k->m->path;
    int64_t nextn = 0;
    bool found;
    llm_status st;
    if ((st = get_count(k, "nextn_predict_layers", &nextn, &found, err)) != LLM_OK)
        return st;
    if (nextn >= s->n_layers)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", but the file has %" PRId64
                        " blocks in all: none would be left to run", path,
                        key(k, "nextn_predict_layers"), nextn, s->n_layers);
    if ((st = require_range(k, "ssm.conv_kernel", 64, &h->dn_conv, err)) != LLM_OK ||
        (st = require_range(k, "ssm.state_size", MODEL_DN_HEAD_MAX, &h->dn_head, err)) != LLM_OK ||
        (st = require_range(k, "ssm.group_count", MODEL_MAX_DIM, &h->dn_k_heads, err)) != LLM_OK ||
        (st = require_range(k, "ssm.time_step_rank", MODEL_MAX_DIM, &h->dn_v_heads, err)) !=
            LLM_OK ||
        (st = require_range(k, "ssm.inner_size", MODEL_MAX_HIDDEN, &h->dn_inner, err)) != LLM_OK)
        return st;
    const char *a = k->f->name; /* (key() keeps one name at a time) */
    if (h->dn_v_heads % h->dn_k_heads != 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s.ssm.time_step_rank is %" PRId64 ", not a "
                        "multiple of %s.ssm.group_count (%" PRId64 "): each value head reads "
                        "one query and key head", path, a, h->dn_v_heads, a, h->dn_k_heads);
    if (h->dn_inner != h->dn_v_heads * h->dn_head)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s.ssm.inner_size is %" PRId64 ", but %" PRId64
                        " value heads of %s.ssm.state_size %" PRId64 " make %" PRId64 ": a state "
                        "of another size is not supported", path, a, h->dn_inner, h->dn_v_heads,
                        a, h->dn_head, h->dn_v_heads * h->dn_head);
    h->has_recurrent = gguf_get_array(k->g, key(k, "attention.recurrent_layers"), &h->recurrent);
    if (h->has_recurrent && h->recurrent.n != (uint64_t)s->n_layers)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s holds %" PRIu64 " flags, but the file has %"
                        PRId64 " blocks", path, key(k, "attention.recurrent_layers"),
                        h->recurrent.n, s->n_layers);
    h->attn_every = 4;
    if ((st = get_count(k, "full_attention_interval", &h->attn_every, &found, err)) != LLM_OK)
        return st;
    if (h->attn_every < 1)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is 0", path,
                        key(k, "full_attention_interval"));
    gguf_array sec;
    if (!gguf_get_array(k->g, key(k, "rope.dimension_sections"), &sec) || sec.n < 3 ||
        sec.n > 4)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is missing or not 3 or 4 counts "
                        "(the %s architecture needs it)", path, key(k, "rope.dimension_sections"),
                        k->f->name);
    for (uint64_t i = 0; i < 4; i++) {
        h->sections[i] = i < sec.n ? gguf_array_int(&sec, i) : 0;
        if (h->sections[i] < 0 || h->sections[i] > MODEL_MAX_HEAD)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s[%d] is %" PRId64 ", not 0 to %d", path,
                            key(k, "rope.dimension_sections"), (int)i, h->sections[i],
                            (int)MODEL_MAX_HEAD);
    }
    s->n_layers -= nextn;
    h->mtp = nextn;
    return LLM_OK;
}

/* One per layer: an array key of a family of per-layer shapes must hold n_layers. */
static llm_status check_per_layer(family_keys *k, const char *suffix, const gguf_array *a,
                                  int64_t n_layers, llm_err *err)
{
    if (a->n == (uint64_t)n_layers)
        return LLM_OK;
    return llm_fail(err, LLM_ERR_FORMAT, "%s: %s holds %" PRIu64 " values, but the file has %"
                    PRId64 " blocks", k->m->path, key(k, suffix), a->n, n_layers);
}

/* A family of per-layer shapes' keys (model_family.layer_shapes): which layers slide,
 * a sliding layer's head and RoPE, the layers sharing a KV cache, the per-layer
 * inputs; the per-layer arrays' lengths. */
static llm_status read_layer_shapes(family_keys *k, const model_shape *s, hyper *h,
                                    llm_err *err)
{
    const char *path = k->m->path;
    bool found;
    llm_status st;
    if ((h->has_kv_arr &&
         (st = check_per_layer(k, "attention.head_count_kv", &h->kv_arr, s->n_layers, err)) !=
             LLM_OK) ||
        (h->has_ff_arr &&
         (st = check_per_layer(k, "feed_forward_length", &h->ff_arr, s->n_layers, err)) != LLM_OK))
        return st;
    for (uint64_t l = 0; h->has_kv_arr && l < h->kv_arr.n; l++) {
        int64_t kv = gguf_array_int(&h->kv_arr, l);
        if (s->n_heads % kv != 0)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s[%" PRIu64 "] is %" PRId64 ", which does "
                            "not divide the %" PRId64 " heads", path,
                            key(k, "attention.head_count_kv"), l, kv, s->n_heads);
    }
    if (!gguf_get_array(k->g, key(k, "attention.sliding_window_pattern"), &h->pattern))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key %s is missing or not an array (the "
                        "%s architecture needs its layers' flags)", path,
                        key(k, "attention.sliding_window_pattern"), k->f->name);
    if ((st = check_per_layer(k, "attention.sliding_window_pattern", &h->pattern, s->n_layers,
                              err)) != LLM_OK)
        return st;
    int64_t head = s->head_size > 0 ? s->head_size : s->dim / s->n_heads;
    h->swa_head = head;
    if ((st = get_count(k, "attention.key_length_swa", &h->swa_head, &found, err)) != LLM_OK)
        return st;
    int64_t value_swa = h->swa_head;
    if ((st = get_count(k, "attention.value_length_swa", &value_swa, &found, err)) != LLM_OK)
        return st;
    if (h->swa_head < 2 || h->swa_head % 2 != 0 || h->swa_head > MODEL_MAX_HEAD ||
        value_swa != h->swa_head || s->n_heads * h->swa_head > MODEL_MAX_DIM)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s.attention.key_length_swa is %" PRId64
                        " and value_length_swa %" PRId64 ": a sliding layer's heads need an even "
                        "size up to %d, the same for keys and values", path, k->f->name,
                        h->swa_head, value_swa, (int)MODEL_MAX_HEAD);
    h->swa_rot = h->swa_head;
    if ((st = get_count(k, "rope.dimension_count_swa", &h->swa_rot, &found, err)) != LLM_OK)
        return st;
    if (h->swa_rot > h->swa_head || h->swa_rot % 2 != 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", but RoPE turns an even "
                        "number of a sliding head's %" PRId64 " values", path,
                        key(k, "rope.dimension_count_swa"), h->swa_rot, h->swa_head);
    real_key base_swa = {.suffix = "rope.freq_base_swa", .fallback = k->f->rope_base_swa,
                         .lo = 2.0, .hi = 1e12, .what = "RoPE base"};
    if ((st = get_real(k, &base_swa, false, &h->base_swa, err)) != LLM_OK)
        return st;
    h->shared_kv = 0;
    if ((st = get_count(k, "attention.shared_kv_layers", &h->shared_kv, &found, err)) != LLM_OK)
        return st;
    if (h->shared_kv > 0) {
        int64_t own = s->n_layers - h->shared_kv; /* layers 0..own-1 write their caches */
        bool last_slides = own >= 2 && gguf_array_int(&h->pattern, (uint64_t)(own - 2)) != 0;
        bool last_full = own >= 2 && gguf_array_int(&h->pattern, (uint64_t)(own - 1)) == 0;
        if (own < 2 || !last_slides || !last_full)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 " of %" PRId64 " blocks: "
                            "the layers that share a KV cache read the last sliding and the "
                            "last global layer before them, which must be blocks %" PRId64
                            " and %" PRId64, path, key(k, "attention.shared_kv_layers"),
                            h->shared_kv, s->n_layers, own - 2, own - 1);
    }
    h->ple = 0;
    if (k->f->per_layer_inputs &&
        (st = get_count(k, "embedding_length_per_layer_input", &h->ple, &found, err)) != LLM_OK)
        return st;
    if (h->ple > MODEL_MAX_DIM || h->ple * s->n_layers > MODEL_MAX_HIDDEN)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ": more per-layer inputs than "
                        "this program accepts", path, key(k, "embedding_length_per_layer_input"),
                        h->ple);
    return LLM_OK;
}

/* Reads the family's keys into shape and h, and checks the shape. */
static llm_status read_shape(family_keys *k, model_shape *s, hyper *h, llm_err *err)
{
    llm_status st;
    if ((st = read_counts(k, s, h, err)) != LLM_OK || (st = read_reals(k, h, err)) != LLM_OK)
        return st;
    if (k->f->delta_net && s->n_layers > 0 && (st = read_delta_net(k, s, h, err)) != LLM_OK)
        return st;
    char why[160];
    if (!model_shape_ok(s, why, sizeof why))
        return llm_fail(err, LLM_ERR_FORMAT, "%s: bad shape in the %s.* keys: %s", k->m->path,
                        k->f->name, why);
    if ((st = read_window(k, s, h, err)) != LLM_OK || (st = read_experts(k, s, h, err)) != LLM_OK)
        return st;
    if (k->f->layer_shapes && (st = read_layer_shapes(k, s, h, err)) != LLM_OK)
        return st;
    int64_t head = s->head_size > 0 ? s->head_size : s->dim / s->n_heads;
    if (h->value_length > 0 && h->value_length != head)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", but the keys' heads hold %"
                        PRId64 " values: value heads of another size are not supported",
                        k->m->path, key(k, "attention.value_length"), h->value_length, head);
    const char *rot_key = key(k, "rope.dimension_count");
    if (h->rope_dims == 0)
        h->rope_dims = head;
    if (k->f->full_rotary_only && h->rope_dims != head)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: %s is %" PRId64 ", but the head size is %" PRId64 " (dim %" PRId64
                        " / %" PRId64 " heads): partial rotary embeddings are not supported by "
                        "the %s architecture", k->m->path, rot_key, h->rope_dims, head, s->dim,
                        s->n_heads, k->f->name);
    if (h->rope_dims > head || h->rope_dims % 2 != 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s is %" PRId64 ", but RoPE turns an even "
                        "number of a head's %" PRId64 " values", k->m->path, rot_key, h->rope_dims,
                        head);
    if (k->f->longrope && h->long_after == 0)
        h->long_after = s->seq_len; /* llama.cpp's n_ctx_orig_yarn: the training context */
    if (h->yarn && h->yarn_orig == 0)
        h->yarn_orig = s->seq_len;
    return LLM_OK;
}

/* ---- the description ---- */

/* A family of per-layer shapes (model_family.layer_shapes): each layer's heads, KV
 * heads, RoPE and feed-forward, the cache it reads, its per-layer inputs; the config's
 * sizes become the largest. */
static void describe_layer_shapes(model *m, const model_family *f, const hyper *h)
{
    model_config *c = &m->config;
    model_arch *a = &c->arch;
    int full_head = c->head_size, own = c->n_layers - (int)h->shared_kv;
    a->rope_dims_swa = (int)h->swa_rot;
    a->rope_base_swa = (float)h->base_swa;
    a->query_scale = 1.0f;
    a->value_norm = f->value_norm;
    c->layers_vary = true;
    c->ple_dim = (int)h->ple;
    c->head_size = c->q_dim = c->kv_dim = c->n_kv_heads = c->hidden_dim = 0;
    for (int l = 0; l < c->n_layers; l++) {
        model_layer *L = &m->layers[l];
        bool slides = gguf_array_int(&h->pattern, (uint64_t)l) != 0;
        L->head_size = slides ? (int)h->swa_head : full_head;
        L->n_kv_heads = h->has_kv_arr ? (int)gguf_array_int(&h->kv_arr, (uint64_t)l)
                                      : L->n_kv_heads;
        L->hidden_dim = h->has_ff_arr ? (int)gguf_array_int(&h->ff_arr, (uint64_t)l)
                                      : L->hidden_dim;
        L->q_dim = c->n_heads * L->head_size;
        L->kv_dim = L->n_kv_heads * L->head_size;
        L->kv_layer = l < own ? l : own - (slides ? 2 : 1);
#define WIDEST(field) c->field = L->field > c->field ? L->field : c->field
        WIDEST(head_size);
        WIDEST(q_dim);
        WIDEST(kv_dim);
        WIDEST(n_kv_heads);
        WIDEST(hidden_dim);
#undef WIDEST
    }
}

/* m->config's description and RoPE settings from the family and the keys; each
 * layer's window. */
static void describe(model *m, const model_family *f, const hyper *h)
{
    model_config *c = &m->config;
    model_arch *a = &c->arch;
    c->rope_base = (float)h->base;
    c->rope_scale = h->linear ? (float)(1.0 / h->factor) : 1.0f;
    c->rope_attn_factor = (float)h->attn_factor;
    c->rope_long_after = (int)(h->long_after < INT32_MAX ? h->long_after : INT32_MAX);
    c->rms_eps = (float)h->eps;
    a->name = f->name;
    a->rope_layout = f->rope_layout;
    a->rope_dims = (int)h->rope_dims;
    a->act = f->act;
    a->embed_scale = f->embed_scale_sqrt ? sqrtf((float)c->dim) : 1.0f;
    bool big = f->big_query_layers && c->n_layers == f->big_query_layers;
    a->query_scale = 1.0f / sqrtf((float)(big ? c->dim / c->n_heads : c->head_size));
    a->attn_softcap = (float)h->attn_cap;
    a->final_softcap = (float)h->final_cap;
    a->attn_bias = f->attn_bias;
    a->attn_out_bias = f->attn_out_bias;
    a->attn_sinks = f->attn_sinks;
    a->expert_biases = f->expert_biases;
    a->qk_norm = f->qk_norm;
    a->qk_norm_whole = f->qk_norm_whole;
    a->expert_norm_weights = f->expert_norm_weights;
    c->n_experts = (int)h->experts;
    c->n_experts_used = (int)h->experts_used;
    c->expert_hidden_dim = (int)h->expert_hidden;
    c->shexp_hidden = (int)h->shexp_hidden;
    a->dense_beside_experts = f->dense_beside_experts && c->n_experts > 0;
    a->post_norms = f->post_norms;
    a->sliding_window = (int)h->window;
    a->rope_base_swa = h->window > 0 ? f->rope_base_swa : 0.0f;
    model_layers_default(m);
    for (int l = 0; l < c->n_layers; l++) {
        bool slides = f->layer_shapes ? gguf_array_int(&h->pattern, (uint64_t)l) != 0
                                      : model_family_slides(f, l);
        m->layers[l].window = h->window > 0 && slides ? (int)h->window : 0;
    }
    if (f->layer_shapes)
        describe_layer_shapes(m, f, h);
    if (!f->delta_net)
        return;
    a->gated_attention = true;
    c->mtp_layers = (int)h->mtp;
    c->dn_conv_width = (int)h->dn_conv;
    c->dn_k_heads = (int)h->dn_k_heads;
    c->dn_v_heads = (int)h->dn_v_heads;
    c->dn_head_k = c->dn_head_v = (int)h->dn_head;
    c->dn_key_dim = c->dn_k_heads * c->dn_head_k;
    c->dn_value_dim = c->dn_v_heads * c->dn_head_v;
    c->dn_conv_dim = 2 * c->dn_key_dim + c->dn_value_dim;
    c->dn_layers = 0;
    for (int l = 0; l < c->n_layers; l++) {
        bool recurrent = h->has_recurrent ? gguf_array_int(&h->recurrent, (uint64_t)l) != 0
                                          : (l + 1) % h->attn_every != 0;
        m->layers[l].kind = recurrent ? MODEL_LAYER_DELTA_NET : MODEL_LAYER_GATED_ATTENTION;
        c->dn_layers += recurrent;
    }
}

/* Interleaved multimodal RoPE (llama.cpp's IMROPE, Qwen 3.5) on text: a pair turns with
 * the position when its sector (pair % the sections' sum) falls in the first three
 * sections' interleaving (sector % 3 == i, sector < 3 sections[i]); else with position 0,
 * which text gives the fourth: it does not turn. Kept as a frequency divisor of infinity
 * for those pairs (rope_freqs), none when every pair turns. */
static llm_status apply_sections(model *m, const hyper *h, llm_err *err)
{
    model_config *c = &m->config;
    int pairs = c->arch.rope_dims / 2;
    int64_t sum = h->sections[0] + h->sections[1] + h->sections[2] + h->sections[3];
    if (sum == 0 || sum > c->head_size)
        return llm_fail(err, LLM_ERR_FORMAT, "%s: %s.rope.dimension_sections add up to %" PRId64
                        ", not 1 to the head size %d", m->path, c->arch.name, sum, c->head_size);
    bool all = true;
    for (int i = 0; i < pairs && all; i++) {
        int64_t sector = i % sum, part = sector % 3;
        all = sector < 3 * h->sections[part];
    }
    if (all)
        return LLM_OK;
    float *div = model_own(m, sizeof(float) * (size_t)pairs);
    if (!div)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int i = 0; i < pairs; i++) {
        int64_t sector = i % sum, part = sector % 3;
        div[i] = sector < 3 * h->sections[part] ? 1.0f : INFINITY;
    }
    c->rope_freqs = div;
    return LLM_OK;
}

/* YaRN (rope.scaling.type "yarn"), as ggml's rope computes it: pair i's angle is the
 * original one times a mix of 1 / factor (interpolation) and 1 (extrapolation), all
 * interpolated below the correction range (pairs turning fewer than beta_slow times
 * over the original context), all original above it (beta_fast), linear between; cos
 * and sin times 1 + 0.1 ln(factor). Kept as each pair's frequency divisor (rope_freqs,
 * times the file's where it has rope_freqs.weight) and the attention factor. */
static llm_status apply_yarn(model *m, const hyper *h, llm_err *err)
{
    model_config *c = &m->config;
    int rot = c->arch.rope_dims, pairs = rot / 2;
    float *div = model_own(m, sizeof(float) * (size_t)pairs);
    if (!div)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    float base = c->rope_base, orig = (float)h->yarn_orig;
    float corr_fast = rot * logf(orig / ((float)h->beta_fast * 2 * (float)M_PI)) / (2 * logf(base));
    float corr_slow = rot * logf(orig / ((float)h->beta_slow * 2 * (float)M_PI)) / (2 * logf(base));
    float lo = fmaxf(0.0f, floorf(corr_fast)), hi = fminf((float)(rot - 1), ceilf(corr_slow));
    float freq_scale = (float)(1.0 / h->factor);
    for (int i = 0; i < pairs; i++) {
        float y = (i - lo) / fmaxf(0.001f, hi - lo);
        float ramp = 1.0f - fminf(1.0f, fmaxf(0.0f, y));
        float mix = freq_scale * (1.0f - ramp) + ramp;
        div[i] = (c->rope_freqs ? c->rope_freqs[i] : 1.0f) / mix;
    }
    c->rope_freqs = div;
    c->rope_yarn = true;
    /* llama.cpp's yarn_attn_factor (1 for these files, in float) times ggml's magnitude */
    float ln = logf((float)h->factor);
    float attn = (0.1f * ln + 1.0f) * (1.0f / (1.0f + 0.1f * ln)) * (float)h->attn_factor;
    c->rope_attn_factor = attn * (1.0f + 0.1f * logf(1.0f / freq_scale));
    return LLM_OK;
}

llm_status model_load_gguf(model *m, const model_options *opt, llm_err *err)
{
    gguf *g;
    llm_status st = gguf_parse(m->map, m->map_bytes, m->path, &g, err);
    if (st != LLM_OK)
        return st;
    m->meta = g;
    m->format = MODEL_FORMAT_GGUF;
    m->format_name = gguf_version(g) == 2 ? "GGUF v2" : "GGUF v3";

    family_keys k = {.m = m, .g = g};
    model_shape shape = {0};
    hyper h;
    if ((st = read_family(m, g, &k.f, err)) != LLM_OK ||
        (st = read_shape(&k, &shape, &h, err)) != LLM_OK)
        return st;
    bool tied = k.f->tied || !gguf_find_tensor(g, "output.weight");
    model_set_shape(m, &shape, tied);
    m->layers = calloc((size_t)shape.n_layers, sizeof *m->layers);
    if (!m->layers)
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory", m->path);
    describe(m, k.f, &h);
    if ((st = model_gguf_weights(m, g, k.f, opt, err)) != LLM_OK)
        return st;
    if (k.f->delta_net && (st = apply_sections(m, &h, err)) != LLM_OK)
        return st;
    return h.yarn ? apply_yarn(m, &h, err) : LLM_OK;
}
