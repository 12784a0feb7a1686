/* steering.c — the loaded control vectors, their sum, the heads and experts knocked
 * out, the experts forced, the record of every state, and the editors that apply them
 * (steering.h). */
#define _POSIX_C_SOURCE 200809L
#include "steering.h"

#include "control_vectors.h"
#include "expert_force.h"
#include "expert_knock_out.h"
#include "knock_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    char *path;
    float scale;
    control_vector *cv;   /* its fnv1a: of the file, when known */
} loaded;

struct steering {
    int n_layers, n_heads, dim;
    loaded *v;              /* (n) */
    int n;
    int first, last;        /* -1 -1: every layer */
    float *sum;             /* (n_layers, dim) */
    bool active;            /* sum holds something (n > 0) */
    unsigned char *mask;    /* (n_layers, n_heads) KNOCK_IN, KNOCK_OUT, KNOCK_OUT_RESET */
    int n_out;              /* heads knocked out */
    int n_reset;            /* of them, with the state reset */
    const model_layer *layers; /* the attached model's (their kinds), or NULL before */
    int n_experts, n_used;  /* the experts a layer and how many a token is routed to
                               (0 0: dense layers) */
    unsigned char *experts_mask; /* (n_layers, n_experts) 1 = knocked out, or NULL */
    int n_experts_out;      /* experts knocked out */
    int *forced;            /* (n_layers) the expert forced at each layer, -1 for none;
                               NULL on dense layers */
    int n_forced;           /* layers with an expert forced */
    intervention **states;  /* (n_states) every state there has been, newest last */
    int n_states;
    char notice[320];       /* what the last steering_add has to say (layers of the vector
                               the model lacks), or "" */
    /* what the editors read at every pass (steering_attach) */
    const float *sum_in_force;          /* sum, or NULL when no vector is loaded */
    const unsigned char *mask_in_force; /* mask, or NULL when no head is out */
    const unsigned char *experts_in_force; /* experts_mask, or NULL when none is out */
    const int *forced_in_force;         /* forced, or NULL when none is forced */
    bool heads_enabled;                 /* false: the knock-outs left out (a what-if) */
    /* an earlier state the editors apply for a while (steering_as_ran), made here */
    float *was_sum;
    unsigned char *was_mask, *was_experts;
    int *was_forced;
    control_vectors vectors_editor;
    knock_out heads_editor;
    expert_knock_out experts_editor;
    expert_force force_editor;
};

llm_status steering_new(int n_layers, int n_heads, int dim, steering **out, llm_err *err)
{
    *out = NULL;
    steering *s = calloc(1, sizeof *s);
    if (s) {
        s->sum = calloc((size_t)n_layers * dim, sizeof(float));
        s->mask = calloc((size_t)n_layers * n_heads, 1);
    }
    if (!s || !s->sum || !s->mask) {
        if (s) {
            free(s->sum);
            free(s->mask);
        }
        free(s);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for control vectors");
    }
    s->n_layers = n_layers;
    s->n_heads = n_heads;
    s->dim = dim;
    s->first = s->last = -1;
    s->heads_enabled = true;
    s->vectors_editor = (control_vectors){.sum = &s->sum_in_force, .dim = dim};
    *out = s;
    return LLM_OK;
}

llm_status steering_attach(steering *s, transformer *t, llm_err *err)
{
    const model_config *c = &transformer_model(t)->config;
    if (c->n_layers != s->n_layers || model_heads_max(c) != s->n_heads || c->dim != s->dim)
        return llm_fail(err, LLM_ERR_ARG, "the steering state is for another model's shape");
    llm_status st = steering_experts(s, c->n_experts, c->n_experts_used, err);
    if (st != LLM_OK)
        return st;
    s->heads_editor = (knock_out){.mask = &s->mask_in_force, .enabled = &s->heads_enabled,
                                  .n_heads = s->n_heads, .attn_heads = c->n_heads,
                                  .head_size = c->head_size, .dn_heads = c->dn_v_heads,
                                  .dn_head_size = c->dn_head_v,
                                  .layers = transformer_model(t)->layers};
    s->layers = transformer_model(t)->layers;
    s->experts_editor = (expert_knock_out){.mask = &s->experts_in_force,
                                           .n_experts = s->n_experts};
    s->force_editor = (expert_force){.forced = &s->forced_in_force,
                                     .out = &s->experts_in_force, .n_experts = s->n_experts};
    const hook editors[] = {
        {.edit = expert_knock_out_edit, .user = &s->experts_editor,
         .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS), .layer_first = 0,
         .layer_last = c->n_layers - 1, .pos = -1},
        {.edit = expert_force_edit, .user = &s->force_editor,
         .points = HOOK_BIT(HOOK_FFN_MOE_LOGITS), .layer_first = 0,
         .layer_last = c->n_layers - 1, .pos = -1},
        {.edit = knock_out_edit, .user = &s->heads_editor,
         .points = HOOK_BIT(HOOK_KQV) | (c->dn_layers > 0 ? HOOK_BIT(HOOK_DN_BETA) |
                                                                HOOK_BIT(HOOK_DN_GATE) : 0),
         .layer_first = 0, .layer_last = c->n_layers - 1, .pos = -1},
        {.edit = control_vectors_edit, .user = &s->vectors_editor,
         .points = HOOK_BIT(HOOK_L_OUT), .layer_first = 0, .layer_last = c->n_layers - 1,
         .pos = -1},
    };
    /* the experts' editors (the first two) only where the layers have experts: a dense
     * model's pass never hands ffn_moe_logits, and hooks are few (MAX_HOOKS) */
    for (size_t i = s->n_experts > 0 ? 0 : 2; i < sizeof editors / sizeof editors[0]; i++) {
        int id;
        st = transformer_hook_add(t, &editors[i], &id, err);
        if (st != LLM_OK)
            return st;
    }
    return LLM_OK;
}

llm_status steering_experts(steering *s, int n_experts, int n_used, llm_err *err)
{
    if (n_experts < 0 || n_used < 0 || n_used > n_experts || (n_experts > 0 && n_used < 1))
        return llm_fail(err, LLM_ERR_ARG, "%d experts of which %d are used is no mixture of "
                        "experts", n_experts, n_used);
    unsigned char *m = n_experts ? calloc((size_t)s->n_layers * n_experts, 1) : NULL;
    int *f = n_experts ? malloc(sizeof(int) * (size_t)s->n_layers) : NULL;
    if (n_experts && (!m || !f)) {
        free(m);
        free(f);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the experts' knock-outs");
    }
    for (int l = 0; f && l < s->n_layers; l++)
        f[l] = -1;
    free(s->experts_mask);
    free(s->forced);
    s->experts_mask = m;
    s->forced = f;
    s->n_experts = n_experts;
    s->n_used = n_used;
    s->n_experts_out = 0;
    s->n_forced = 0;
    s->experts_in_force = NULL;
    s->forced_in_force = NULL;
    return LLM_OK;
}

void steering_heads_enabled(steering *s, bool on)
{
    s->heads_enabled = on;
}

static void state_free(intervention *in)
{
    if (!in)
        return;
    for (int i = 0; i < in->n_vectors; i++) {
        free(in->vectors[i].name);
        free(in->vectors[i].path);
    }
    free(in->vectors);
    free(in->heads_out);
    free(in->heads_reset);
    free(in->experts_out);
    free(in->experts_forced);
    free(in);
}

static void loaded_free(loaded *l)
{
    free(l->name);
    free(l->path);
    control_vector_free(l->cv);
}

void steering_free(steering *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        loaded_free(&s->v[i]);
    free(s->v);
    for (int i = 0; i < s->n_states; i++)
        state_free(s->states[i]);
    free(s->states);
    free(s->sum);
    free(s->mask);
    free(s->experts_mask);
    free(s->forced);
    free(s->was_sum);
    free(s->was_mask);
    free(s->was_experts);
    free(s->was_forced);
    free(s);
}

/* sum (n_layers, dim) made the vectors' scaled sum after layers first..last (-1 -1:
 * every one; layer 0's row stays 0): scale_of(s, i, user) is loaded vector i's scale,
 * NAN for one left out. */
static void sum_vectors(const steering *s, float *sum, int first, int last,
                        float (*scale_of)(const steering *s, int i, const void *user),
                        const void *user)
{
    memset(sum, 0, sizeof(float) * (size_t)s->n_layers * s->dim);
    int lo = first < 1 ? 1 : first;
    int hi = last < 0 || last >= s->n_layers ? s->n_layers - 1 : last;
    for (int i = 0; i < s->n; i++) {
        const control_vector *cv = s->v[i].cv;
        float scale = scale_of(s, i, user);
        for (int l = lo; l <= hi && l < cv->n_layers && !isnan(scale); l++) {
            const float *src = cv->data + (size_t)l * cv->n_embd;
            float *dst = sum + (size_t)l * s->dim;
            for (int j = 0; j < s->dim; j++)
                dst[j] += src[j] * scale;
        }
    }
}

static float own_scale(const steering *s, int i, const void *user)
{
    (void)user;
    return s->v[i].scale;
}

/* Whether loaded vector v is the one a state's w names: the same name, file and
 * checksum (a state read from a trace before checksums matches by name and file). */
static bool is_named(const loaded *v, const intervention_vector *w)
{
    return !strcmp(w->name, v->name) && !strcmp(w->path, v->path) &&
           (!w->fnv1a || w->fnv1a == v->cv->fnv1a);
}

/* The loaded vector that in's vector w names, or -1. */
static int loaded_as(const steering *s, const intervention_vector *w)
{
    for (int i = 0; i < s->n; i++)
        if (is_named(&s->v[i], w))
            return i;
    return -1;
}

/* Loaded vector i's scale in the state `user` (an intervention), NAN when it has none. */
static float scale_in(const steering *s, int i, const void *user)
{
    const intervention *in = user;
    for (int j = 0; in && j < in->n_vectors; j++)
        if (is_named(&s->v[i], &in->vectors[j]))
            return in->vectors[j].scale;
    return NAN;
}

bool steering_as_ran(steering *s, const intervention *in)
{
    size_t heads = (size_t)s->n_layers * s->n_heads, experts = (size_t)s->n_layers * s->n_experts;
    for (int j = 0; in && j < in->n_vectors; j++)
        if (loaded_as(s, &in->vectors[j]) < 0)
            return false; /* its numbers are gone with the file's */
    if (!s->was_sum)
        s->was_sum = malloc(sizeof(float) * (size_t)s->n_layers * s->dim);
    if (!s->was_mask)
        s->was_mask = malloc(heads);
    if (experts && !s->was_experts)
        s->was_experts = malloc(experts);
    if (experts && !s->was_forced)
        s->was_forced = malloc(sizeof(int) * (size_t)s->n_layers);
    if (!s->was_sum || !s->was_mask || (experts && (!s->was_experts || !s->was_forced)))
        return false;
    /* as resum and changed make the state's own */
    sum_vectors(s, s->was_sum, in ? in->first_layer : -1, in ? in->last_layer : -1, scale_in, in);
    memset(s->was_mask, KNOCK_IN, heads);
    for (int i = 0; in && i < in->n_heads_out; i++)
        if (in->heads_out[i] >= 0 && (size_t)in->heads_out[i] < heads)
            s->was_mask[in->heads_out[i]] = KNOCK_OUT;
    for (int i = 0; in && i < in->n_heads_reset; i++)
        if (in->heads_reset[i] >= 0 && (size_t)in->heads_reset[i] < heads)
            s->was_mask[in->heads_reset[i]] = KNOCK_OUT_RESET;
    if (experts) {
        memset(s->was_experts, 0, experts);
        for (int l = 0; l < s->n_layers; l++)
            s->was_forced[l] = -1;
        for (int i = 0; in && i < in->n_experts_out; i++)
            s->was_experts[(size_t)in->experts_out[i].layer * s->n_experts + in->experts_out[i].expert] = 1;
        for (int i = 0; in && i < in->n_experts_forced; i++)
            s->was_forced[in->experts_forced[i].layer] = in->experts_forced[i].expert;
    }
    s->sum_in_force = in && in->n_vectors ? s->was_sum : NULL;
    s->mask_in_force = in && in->n_heads_out ? s->was_mask : NULL;
    s->experts_in_force = in && in->n_experts_out ? s->was_experts : NULL;
    s->forced_in_force = in && in->n_experts_forced ? s->was_forced : NULL;
    return true;
}

void steering_as_now(steering *s)
{
    s->sum_in_force = s->active ? s->sum : NULL;
    s->mask_in_force = s->n_out ? s->mask : NULL;
    s->experts_in_force = s->n_experts_out ? s->experts_mask : NULL;
    s->forced_in_force = s->n_forced ? s->forced : NULL;
}

const intervention *steering_state(const steering *s)
{
    return s->n_states ? s->states[s->n_states - 1] : NULL;
}

const float *steering_sum(const steering *s)
{
    return s->active ? s->sum : NULL;
}

const unsigned char *steering_mask(const steering *s)
{
    return s->n_out ? s->mask : NULL;
}

static int find(const steering *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].name, name))
            return i;
    return -1;
}

/* Recomputes the sum as llama.cpp applies vectors: row l (1 <= l < n_layers, within
 * first..last) is the sum of each vector's direction.l times its scale. */
static void resum(steering *s)
{
    sum_vectors(s, s->sum, s->first, s->last, own_scale, NULL);
    s->active = s->n > 0;
}

/* Records the state now as a new intervention and recomputes the sum. */
static llm_status changed(steering *s, llm_err *err)
{
    s->notice[0] = '\0';
    resum(s);
    steering_as_now(s);
    intervention *in = calloc(1, sizeof *in);
    intervention **grown = realloc(s->states, sizeof *grown * (size_t)(s->n_states + 1));
    if (grown)
        s->states = grown;
    if (in && s->n)
        in->vectors = calloc((size_t)s->n, sizeof *in->vectors);
    bool ok = in && grown && (!s->n || in->vectors);
    for (int i = 0; ok && i < s->n; i++) {
        in->vectors[i].name = strdup(s->v[i].name);
        in->vectors[i].path = strdup(s->v[i].path);
        in->vectors[i].scale = s->v[i].scale;
        in->vectors[i].fnv1a = s->v[i].cv->fnv1a;
        in->n_vectors = i + 1;
        ok = in->vectors[i].name && in->vectors[i].path;
    }
    if (ok && s->n_out)
        ok = (in->heads_out = malloc(sizeof(int) * (size_t)s->n_out)) != NULL;
    for (int i = 0; ok && i < s->n_layers * s->n_heads; i++)
        if (s->mask[i])
            in->heads_out[in->n_heads_out++] = i;
    if (ok && s->n_reset)
        ok = (in->heads_reset = malloc(sizeof(int) * (size_t)s->n_reset)) != NULL;
    for (int i = 0; ok && s->n_reset && i < s->n_layers * s->n_heads; i++)
        if (s->mask[i] == KNOCK_OUT_RESET)
            in->heads_reset[in->n_heads_reset++] = i;
    if (ok && s->n_experts_out)
        ok = (in->experts_out = malloc(sizeof *in->experts_out * (size_t)s->n_experts_out)) != NULL;
    for (int i = 0; ok && s->n_experts_out && i < s->n_layers * s->n_experts; i++)
        if (s->experts_mask[i])
            in->experts_out[in->n_experts_out++] =
                (intervention_expert){i / s->n_experts, i % s->n_experts};
    if (ok && s->n_forced)
        ok = (in->experts_forced = malloc(sizeof *in->experts_forced * (size_t)s->n_forced)) != NULL;
    for (int l = 0; ok && s->n_forced && l < s->n_layers; l++)
        if (s->forced[l] >= 0)
            in->experts_forced[in->n_experts_forced++] = (intervention_expert){l, s->forced[l]};
    if (!ok) {
        state_free(in);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for control vectors");
    }
    in->n_heads = s->n_heads;
    in->first_layer = s->first;
    in->last_layer = s->last;
    s->states[s->n_states++] = in;
    return LLM_OK;
}

static bool scale_ok(float scale, llm_err *err)
{
    if (isfinite(scale) && fabsf(scale) <= 1e6f)
        return true;
    llm_fail(err, LLM_ERR_ARG, "a control vector's scale must be a number from -1e6 to 1e6");
    return false;
}

/* A name from a path: its base name without ".gguf", in buf. */
static const char *name_of(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf"))
        n -= 5;
    snprintf(buf, size, "%.*s", (int)n, base);
    return buf;
}

static bool name_ok(const char *name, llm_err *err)
{
    return steering_name_check(name, err) == LLM_OK;
}

llm_status steering_name_check(const char *name, llm_err *err)
{
    bool ok = *name && strlen(name) <= 64 && strcmp(name, ".") && strcmp(name, "..");
    for (const char *c = name; ok && *c; c++)
        ok = (unsigned char)*c > ' ' && *c != '"' && *c != '\\' && *c != '/' && *c != 0x7f;
    if (!ok)
        return llm_fail(err, LLM_ERR_ARG, "'%s' is not a control vector's name: 1 to 64 "
                        "characters without blanks, quotes, slashes or backslashes, not . or ..",
                        name);
    return LLM_OK;
}

bool steering_has(const steering *s, const char *name)
{
    return find(s, name) >= 0;
}

/* The layers l of cv with lo <= l < hi, as "2, 5-7", into buf; how many there are. */
static int layer_list(const control_vector *cv, int lo, int hi, char *buf, size_t size)
{
    int count = 0;
    size_t o = 0;
    buf[0] = '\0';
    for (int l = lo; l < hi; l++) {
        if (!control_vector_has(cv, l))
            continue;
        int end = l;
        while (end + 1 < hi && control_vector_has(cv, end + 1))
            end++;
        count += end - l + 1;
        if (o < size)
            o += (size_t)(end > l ? snprintf(buf + o, size - o, "%s%d-%d", o ? ", " : "", l, end)
                                  : snprintf(buf + o, size - o, "%s%d", o ? ", " : "", l));
        l = end;
    }
    return count;
}

/* A vector against the model: refuses one of another width, or one that applies after
 * no layer of the model; notes the layers it has that the model lacks (into notice). */
static llm_status check_vector(const steering *s, const char *path, const control_vector *cv,
                               char *notice, size_t size, llm_err *err)
{
    if (cv->n_embd != s->dim)
        return llm_fail(err, LLM_ERR_MISMATCH,
                        "%s: the vector has %d values per layer but the model %d: it was made "
                        "for another model", path, cv->n_embd, s->dim);
    char applies[96], ignored[96];
    int n_apply = layer_list(cv, 1, s->n_layers, applies, sizeof applies);
    int n_ignored = layer_list(cv, s->n_layers, cv->n_layers, ignored, sizeof ignored);
    notice[0] = '\0';
    if (n_apply == 0 && n_ignored > 0) {
        char after[40] = "no layer of it";
        if (s->n_layers > 2)
            snprintf(after, sizeof after, "layers 1-%d", s->n_layers - 1);
        else if (s->n_layers == 2)
            snprintf(after, sizeof after, "layer 1");
        return llm_fail(err, LLM_ERR_MISMATCH,
                        "%s: its directions are for layer%s %s, but the model has %d layer%s "
                        "(0-%d; a vector applies after %s): it was made for another model",
                        path, n_ignored > 1 ? "s" : "", ignored, s->n_layers,
                        s->n_layers == 1 ? "" : "s", s->n_layers - 1, after);
    }
    if (n_ignored > 0)
        snprintf(notice, size, "%s: direction.%s ignored: the model has %d layer%s (0-%d); "
                 "the vector applies after layer%s %s", path, ignored, s->n_layers,
                 s->n_layers == 1 ? "" : "s", s->n_layers - 1, n_apply > 1 ? "s" : "", applies);
    return LLM_OK;
}

const char *steering_notice(const steering *s)
{
    return s->notice;
}

llm_status steering_add(steering *s, const char *name, const char *path, control_vector *cv,
                        float scale, llm_err *err)
{
    llm_status st = LLM_OK;
    char notice[sizeof s->notice];
    if (!name_ok(name, err) || !scale_ok(scale, err))
        st = LLM_ERR_ARG;
    else if (find(s, name) >= 0)
        st = llm_fail(err, LLM_ERR_ARG,
                      "a control vector called '%s' is loaded already (drop it first)", name);
    else
        st = check_vector(s, path, cv, notice, sizeof notice, err);
    loaded *grown = st == LLM_OK ? realloc(s->v, sizeof *grown * (size_t)(s->n + 1)) : NULL;
    if (st == LLM_OK && !grown)
        st = llm_fail(err, LLM_ERR_NOMEM, "out of memory for control vectors");
    if (st != LLM_OK) {
        control_vector_free(cv);
        return st;
    }
    s->v = grown;
    loaded *l = &s->v[s->n];
    *l = (loaded){strdup(name), strdup(path), scale, cv};
    if (!l->name || !l->path) {
        loaded_free(l);
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for control vectors");
    }
    s->n++;
    st = changed(s, err);
    if (st == LLM_OK)
        snprintf(s->notice, sizeof s->notice, "%s", notice);
    return st;
}

llm_status steering_load(steering *s, const char *path, const char *name, float scale,
                         llm_err *err)
{
    char buf[80];
    if (!name)
        name = name_of(path, buf, sizeof buf);
    if (!name_ok(name, err) || (!isnan(scale) && !scale_ok(scale, err)))
        return LLM_ERR_ARG;
    if (find(s, name) >= 0)
        return llm_fail(err, LLM_ERR_ARG,
                        "a control vector called '%s' is loaded already (drop it first)", name);
    control_vector *cv;
    llm_status st = control_vector_load(path, &cv, err);
    if (st != LLM_OK)
        return st;
    if (isnan(scale))
        scale = cv->suggested_scale != 0.0f ? cv->suggested_scale : 1.0f;
    return steering_add(s, name, path, cv, scale, err);
}

llm_status steering_rescale(steering *s, const char *name, float scale, llm_err *err)
{
    int i = find(s, name);
    if (i < 0)
        return llm_fail(err, LLM_ERR_ARG, "no control vector called '%s' is loaded", name);
    if (!scale_ok(scale, err))
        return LLM_ERR_ARG;
    s->v[i].scale = scale;
    return changed(s, err);
}

llm_status steering_drop(steering *s, const char *name, llm_err *err)
{
    int i = find(s, name);
    if (i < 0)
        return llm_fail(err, LLM_ERR_ARG, "no control vector called '%s' is loaded", name);
    loaded_free(&s->v[i]);
    memmove(&s->v[i], &s->v[i + 1], sizeof *s->v * (size_t)(s->n - i - 1));
    s->n--;
    return changed(s, err);
}

llm_status steering_layers(steering *s, int first, int last, llm_err *err)
{
    bool all = first == -1 && last == -1;
    if (!all && (first < 0 || last < first || last >= s->n_layers))
        return llm_fail(err, LLM_ERR_ARG,
                        "control vector layers must be FIRST-LAST with 0 <= FIRST <= LAST <= %d "
                        "(layers numbered from 0, as llama.cpp does)", s->n_layers - 1);
    s->first = first;
    s->last = last;
    return changed(s, err);
}

llm_status steering_knock_out(steering *s, int layer, int head, bool out, llm_err *err)
{
    if (layer < 0 || layer >= s->n_layers || head < 0 || head >= s->n_heads)
        return llm_fail(err, LLM_ERR_ARG, "no head %d in layer %d (the model has %d layer%s of %d "
                        "head%s)", head + 1, layer + 1, s->n_layers, s->n_layers == 1 ? "" : "s",
                        s->n_heads, s->n_heads == 1 ? "" : "s");
    unsigned char *m = &s->mask[layer * s->n_heads + head];
    s->n_out += (out && !*m) - (!out && *m);
    s->n_reset -= *m == KNOCK_OUT_RESET;
    *m = out ? KNOCK_OUT : KNOCK_IN;
    return changed(s, err);
}

/* Whether layer `layer`'s heads have a state to reset: a Gated DeltaNet's. */
static bool has_state(const steering *s, int layer)
{
    return s->layers && s->layers[layer].kind == MODEL_LAYER_DELTA_NET;
}

llm_status steering_knock_out_reset(steering *s, int layer, int head, llm_err *err)
{
    if (layer < 0 || layer >= s->n_layers || head < 0 || head >= s->n_heads)
        return steering_knock_out(s, layer, head, true, err); /* its message */
    if (!has_state(s, layer))
        return llm_fail(err, LLM_ERR_ARG, "that head has no state to reset: its layer is "
                        "attention (a KV cache, not a recurrent state); knock it out without "
                        "reset");
    unsigned char *m = &s->mask[layer * s->n_heads + head];
    s->n_out += !*m;
    s->n_reset += *m != KNOCK_OUT_RESET;
    *m = KNOCK_OUT_RESET;
    return changed(s, err);
}

bool steering_is_out(const steering *s, int layer, int head)
{
    return layer >= 0 && layer < s->n_layers && head >= 0 && head < s->n_heads &&
           s->mask[layer * s->n_heads + head];
}

bool steering_is_reset(const steering *s, int layer, int head)
{
    return layer >= 0 && layer < s->n_layers && head >= 0 && head < s->n_heads &&
           s->mask[layer * s->n_heads + head] == KNOCK_OUT_RESET;
}

/* Whether expert `expert` of layer `layer` may be knocked out (or back in: out false) in
 * mask (the steering's experts_mask or a copy) with the experts forced (n_layers; -1
 * none; NULL: none is): LLM_OK, else err says why (kind: the status to fail with). */
static llm_status expert_ok(const steering *s, const unsigned char *mask, const int *forced,
                            int layer, int expert, bool out, llm_status kind, llm_err *err)
{
    if (s->n_experts == 0)
        return llm_fail(err, kind, "the model has no experts (its feed-forward layers are "
                        "dense): no expert to knock out");
    if (layer < 0 || layer >= s->n_layers)
        return llm_fail(err, kind, "no layer %d: the model has layers 0-%d (numbered from 0)",
                        layer, s->n_layers - 1);
    if (expert < 0 || expert >= s->n_experts)
        return llm_fail(err, kind, "no expert %d in layer %d: the model has experts 0-%d a "
                        "layer (numbered from 0)", expert, layer, s->n_experts - 1);
    const unsigned char *row = mask + (size_t)layer * s->n_experts;
    int left = 0;
    for (int e = 0; e < s->n_experts; e++)
        left += !row[e];
    if (out && forced && forced[layer] == expert)
        return llm_fail(err, kind, "cannot knock expert %d of layer %d out: it is the layer's "
                        "forced expert (an expert is forced or knocked out, not both)", expert,
                        layer);
    if (out && !row[expert] && left - 1 < s->n_used)
        return llm_fail(err, kind, "cannot knock expert %d of layer %d out: %d of the layer's "
                        "%d experts would be left, but the router chooses %d for each token",
                        expert, layer, left - 1, s->n_experts, s->n_used);
    return LLM_OK;
}

llm_status steering_knock_out_expert(steering *s, int layer, int expert, bool out,
                                     llm_err *err)
{
    llm_status st = expert_ok(s, s->experts_mask, s->forced, layer, expert, out, LLM_ERR_ARG,
                              err);
    if (st != LLM_OK)
        return st;
    unsigned char *m = &s->experts_mask[(size_t)layer * s->n_experts + expert];
    s->n_experts_out += (out && !*m) - (!out && *m);
    *m = out;
    return changed(s, err);
}

bool steering_expert_is_out(const steering *s, int layer, int expert)
{
    return s->n_experts > 0 && layer >= 0 && layer < s->n_layers && expert >= 0 &&
           expert < s->n_experts && s->experts_mask[(size_t)layer * s->n_experts + expert];
}

llm_status steering_force_expert(steering *s, int layer, int expert, llm_err *err)
{
    if (s->n_experts == 0)
        return llm_fail(err, LLM_ERR_ARG, "the model has no experts (its feed-forward layers are "
                        "dense): no expert to force");
    if (layer < 0 || layer >= s->n_layers)
        return llm_fail(err, LLM_ERR_ARG, "no layer %d: the model has layers 0-%d (numbered "
                        "from 0)", layer, s->n_layers - 1);
    if (expert < -1 || expert >= s->n_experts)
        return llm_fail(err, LLM_ERR_ARG, "no expert %d in layer %d: the model has experts 0-%d "
                        "a layer (numbered from 0)", expert, layer, s->n_experts - 1);
    if (expert >= 0 && s->experts_mask[(size_t)layer * s->n_experts + expert])
        return llm_fail(err, LLM_ERR_ARG, "cannot force expert %d of layer %d: it is knocked out "
                        "(an expert is forced or knocked out, not both)", expert, layer);
    int was = s->forced[layer];
    s->n_forced += (expert >= 0) - (was >= 0);
    s->forced[layer] = expert;
    llm_status st = changed(s, err);
    if (st == LLM_OK && was >= 0 && expert >= 0 && was != expert)
        snprintf(s->notice, sizeof s->notice, "expert %d of layer %d is forced instead of expert "
                 "%d (one expert a layer)", expert, layer, was);
    return st;
}

int steering_expert_forced(const steering *s, int layer)
{
    return s->forced && layer >= 0 && layer < s->n_layers ? s->forced[layer] : -1;
}

/* The experts want forces, as the expert of each layer (n_layers; -1 none) in *out
 * (owned; NULL when want forces none), knocked (want's knock-outs as experts_of makes
 * them, or NULL) beside them; LLM_ERR_MISMATCH naming the first the model lacks, one
 * knocked out too, or a second at the same layer. */
static llm_status forced_of(const steering *s, const intervention *want,
                            const unsigned char *knocked, int **out, llm_err *err)
{
    *out = NULL;
    if (!want || want->n_experts_forced == 0)
        return LLM_OK;
    if (s->n_experts == 0)
        return llm_fail(err, LLM_ERR_MISMATCH, "expert [%d, %d] is forced ([layer, expert], from "
                        "0), but the model has no experts", want->experts_forced[0].layer,
                        want->experts_forced[0].expert);
    int *f = malloc(sizeof(int) * (size_t)s->n_layers);
    if (!f)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the experts forced");
    for (int l = 0; l < s->n_layers; l++)
        f[l] = -1;
    for (int i = 0; i < want->n_experts_forced; i++) {
        int l = want->experts_forced[i].layer, e = want->experts_forced[i].expert;
        llm_status st = LLM_OK;
        if (l < 0 || l >= s->n_layers || e < 0 || e >= s->n_experts)
            st = llm_fail(err, LLM_ERR_MISMATCH, "expert [%d, %d] is forced ([layer, expert], from "
                          "0), but the model has layers 0-%d of %d experts (0-%d)", l, e,
                          s->n_layers - 1, s->n_experts, s->n_experts - 1);
        else if (f[l] >= 0)
            st = llm_fail(err, LLM_ERR_MISMATCH, "experts %d and %d are both forced at layer %d "
                          "(one expert a layer)", f[l], e, l);
        else if (knocked && knocked[(size_t)l * s->n_experts + e])
            st = llm_fail(err, LLM_ERR_MISMATCH, "expert [%d, %d] is both forced and knocked out "
                          "([layer, expert], from 0)", l, e);
        if (st != LLM_OK) {
            free(f);
            return st;
        }
        f[l] = e;
    }
    *out = f;
    return LLM_OK;
}

/* The experts of want as a mask (n_layers, n_experts) in *out (owned; NULL when the
 * model has no experts and want knocks none out); LLM_ERR_MISMATCH naming the first
 * one the model lacks or that leaves too few of its layer's in. */
static llm_status experts_of(const steering *s, const intervention *want, unsigned char **out,
                             llm_err *err)
{
    *out = NULL;
    if (!want || want->n_experts_out == 0)
        return LLM_OK;
    unsigned char *m = s->n_experts ? calloc((size_t)s->n_layers * s->n_experts, 1) : NULL;
    if (s->n_experts && !m)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for the experts' knock-outs");
    for (int i = 0; i < want->n_experts_out; i++) {
        const intervention_expert *x = &want->experts_out[i];
        llm_status st = m ? expert_ok(s, m, NULL, x->layer, x->expert, true, LLM_ERR_MISMATCH,
                                      err)
                          : llm_fail(err, LLM_ERR_MISMATCH, "expert [%d, %d] is knocked out "
                                     "([layer, expert], from 0), but the model has no experts",
                                     x->layer, x->expert);
        if (st != LLM_OK) {
            free(m);
            return st;
        }
        m[(size_t)x->layer * s->n_experts + x->expert] = 1;
    }
    *out = m;
    return LLM_OK;
}

/* Head i of want's heads_out (reset false) or heads_reset (true) as [layer, head] of this
 * model: false (err naming it, numbered from 0 as a trace writes it) when the model has
 * no such layer or head, or a reset head no state. */
static bool head_of(const steering *s, const intervention *want, int i, bool reset, int *flat,
                    llm_err *err)
{
    int row = want->n_heads > 0 ? want->n_heads : s->n_heads;
    int at = reset ? want->heads_reset[i] : want->heads_out[i];
    int layer = at / row, head = at % row;
    if (at < 0 || layer >= s->n_layers || head >= s->n_heads) {
        llm_fail(err, LLM_ERR_MISMATCH,
                 "head [%d, %d] is knocked out ([layer, head], from 0), but the model has %d "
                 "layer%s (0-%d) of %d head%s (0-%d)", layer, head, s->n_layers,
                 s->n_layers == 1 ? "" : "s", s->n_layers - 1, s->n_heads,
                 s->n_heads == 1 ? "" : "s", s->n_heads - 1);
        return false;
    }
    if (reset && !has_state(s, layer)) {
        llm_fail(err, LLM_ERR_MISMATCH, "head [%d, %d] is knocked out with its state reset "
                 "([layer, head], from 0), but layer %d of this model is attention, with no "
                 "state", layer, head, layer);
        return false;
    }
    *flat = layer * s->n_heads + head;
    return true;
}

/* Whether every head of want is one of the model's (a reset one with a state). */
static bool heads_ok(const steering *s, const intervention *want, llm_err *err)
{
    int flat;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? want->n_heads_reset : want->n_heads_out); i++)
            if (!head_of(s, want, i, k, &flat, err))
                return false;
    return true;
}

/* Knocks out exactly the heads of want (trace-given: a head the model lacks is refused). */
static llm_status set_heads(steering *s, const intervention *want, llm_err *err)
{
    int flat;
    if (!heads_ok(s, want, err))
        return LLM_ERR_MISMATCH;
    memset(s->mask, 0, (size_t)s->n_layers * s->n_heads);
    s->n_out = s->n_reset = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? want->n_heads_reset : want->n_heads_out); i++) {
            head_of(s, want, i, k, &flat, err);
            s->n_out += !s->mask[flat];
            s->n_reset += k && s->mask[flat] != KNOCK_OUT_RESET;
            s->mask[flat] = k ? KNOCK_OUT_RESET : KNOCK_OUT;
        }
    return LLM_OK;
}

/* The file of a vector a trace or a saved chat names has changed since (its checksum
 * differs)? */
static llm_status same_file(const intervention_vector *w, uint64_t now, llm_err *err)
{
    if (!w->fnv1a || w->fnv1a == now)
        return LLM_OK;
    return llm_fail(err, LLM_ERR_MISMATCH,
                    "the control vector %s has changed since it was recorded (FNV-1a "
                    "%016llx then, %016llx now): it would not steer as it did",
                    w->path, (unsigned long long)w->fnv1a, (unsigned long long)now);
}

llm_status steering_check(const steering *s, const intervention *want, char *notice,
                          size_t size, llm_err *err)
{
    if (size)
        notice[0] = '\0';
    if (want && !heads_ok(s, want, err))
        return LLM_ERR_MISMATCH;
    unsigned char *experts;
    int *forced = NULL;
    llm_status es = experts_of(s, want, &experts, err);
    if (es == LLM_OK)
        es = forced_of(s, want, experts, &forced, err);
    free(experts);
    free(forced);
    if (es != LLM_OK)
        return es;
    for (int j = 0; want && j < want->n_vectors; j++) {
        const intervention_vector *w = &want->vectors[j];
        int i = find(s, w->name);
        if (i >= 0 && !strcmp(s->v[i].path, w->path) &&
            (!w->fnv1a || w->fnv1a == s->v[i].cv->fnv1a))
            continue; /* loaded already */
        control_vector *cv;
        llm_status st = control_vector_load(w->path, &cv, err);
        if (st != LLM_OK)
            return st;
        char said[sizeof s->notice];
        if ((st = check_vector(s, w->path, cv, said, sizeof said, err)) == LLM_OK)
            st = same_file(w, cv->fnv1a, err);
        if (st == LLM_OK && *said && size && !*notice)
            snprintf(notice, size, "%s", said);
        control_vector_free(cv);
        if (st != LLM_OK)
            return st;
    }
    return LLM_OK;
}

llm_status steering_check_reload(const steering *s, const intervention *want, llm_err *err)
{
    for (int i = 0; i < s->n; i++) {
        bool kept = false; /* steering_set(want) keeps it loaded */
        for (int j = 0; want && j < want->n_vectors && !kept; j++)
            kept = is_named(&s->v[i], &want->vectors[j]);
        if (kept)
            continue;
        control_vector *cv;
        llm_status st = control_vector_load(s->v[i].path, &cv, err);
        if (st != LLM_OK)
            return st;
        uint64_t now = cv->fnv1a;
        control_vector_free(cv);
        if (now != s->v[i].cv->fnv1a)
            return llm_fail(err, LLM_ERR_MISMATCH,
                            "the control vector %s has changed since it was loaded",
                            s->v[i].path);
    }
    return LLM_OK;
}

llm_status steering_set(steering *s, const intervention *want, llm_err *err)
{
    static const intervention none = {.first_layer = -1, .last_layer = -1};
    if (!want)
        want = &none;
    unsigned char *experts;
    int *forced = NULL;
    llm_status hs = experts_of(s, want, &experts, err);
    if (hs == LLM_OK)
        hs = forced_of(s, want, experts, &forced, err);
    if (hs == LLM_OK)
        hs = set_heads(s, want, err);
    if (hs != LLM_OK) {
        free(experts);
        free(forced);
        return hs;
    }
    if (s->n_experts) {
        s->n_experts_out = 0;
        for (int i = 0; i < s->n_layers * s->n_experts; i++) {
            s->experts_mask[i] = experts && experts[i];
            s->n_experts_out += s->experts_mask[i];
        }
        s->n_forced = 0;
        for (int l = 0; l < s->n_layers; l++) {
            s->forced[l] = forced ? forced[l] : -1;
            s->n_forced += s->forced[l] >= 0;
        }
    }
    free(experts);
    free(forced);
    /* drop what want does not hold from the same file, as it was */
    for (int i = s->n - 1; i >= 0; i--) {
        bool keep = false;
        for (int j = 0; j < want->n_vectors && !keep; j++)
            keep = is_named(&s->v[i], &want->vectors[j]);
        if (!keep) {
            loaded_free(&s->v[i]);
            memmove(&s->v[i], &s->v[i + 1], sizeof *s->v * (size_t)(s->n - i - 1));
            s->n--;
        }
    }
    for (int j = 0; j < want->n_vectors; j++) {
        const intervention_vector *w = &want->vectors[j];
        int i = find(s, w->name);
        llm_status st = i >= 0 ? (scale_ok(w->scale, err) ? LLM_OK : LLM_ERR_ARG)
                               : steering_load(s, w->path, w->name, w->scale, err);
        if (st == LLM_OK && i < 0 && (st = same_file(w, s->v[s->n - 1].cv->fnv1a, err)) != LLM_OK)
            steering_drop(s, w->name, NULL);
        if (st != LLM_OK)
            return st;
        if (i >= 0)
            s->v[i].scale = w->scale;
    }
    bool all = want->first_layer < 0 && want->last_layer < 0;
    return all ? steering_layers(s, -1, -1, err)
               : steering_layers(s, want->first_layer, want->last_layer, err);
}

bool steering_head_reset(const intervention *in, int flat)
{
    for (int i = 0; in && i < in->n_heads_reset; i++)
        if (in->heads_reset[i] == flat)
            return true;
    return false;
}

int steering_format(const intervention *in, char *buf, size_t size)
{
    size_t o = 0;
    if (size)
        buf[0] = '\0';
    for (int i = 0; in && i < in->n_vectors && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s %.2f", i ? ", " : "vectors ",
                              in->vectors[i].name, in->vectors[i].scale);
    if (in && in->n_vectors && in->first_layer >= 0 && o < size)
        o += (size_t)snprintf(buf + o, size - o, ", layers %d-%d", in->first_layer,
                              in->last_layer);
    for (int i = 0; in && i < in->n_heads_out && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%sL%dH%d%s",
                              i ? " " : o ? " | heads out " : "heads out ",
                              in->heads_out[i] / in->n_heads + 1,
                              in->heads_out[i] % in->n_heads + 1,
                              steering_head_reset(in, in->heads_out[i]) ? "(reset)" : "");
    for (int i = 0; in && i < in->n_experts_out && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%sL%dE%d",
                              i ? " " : o ? " | experts out " : "experts out ",
                              in->experts_out[i].layer + 1, in->experts_out[i].expert + 1);
    for (int i = 0; in && i < in->n_experts_forced && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%sL%dE%d",
                              i ? " " : o ? " | experts forced " : "experts forced ",
                              in->experts_forced[i].layer + 1, in->experts_forced[i].expert + 1);
    return (int)o;
}
