/* trace_read.c — the trace reader of trace_read.h.
 *
 * Splits the buffer into lines, parses each with json.c and turns the header and the
 * records into a trace_header and step records. Owns the records, their attention
 * rows and lenses, the pieces and the problem messages. A record's numbers are
 * checked against what they can be (ids in the vocabulary, attention of the
 * header's shape); what does not fit is dropped with a problem noted, and a line
 * whose required fields are missing or wrong is skipped whole. A patching run's line
 * ("patch") is read whole or skipped whole. Once every line is
 * read, trace_order.c decides which record holds each position of the sequence. */
#include "trace_read.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv1a.h"
#include "input_file.h"
#include "intervention_json.h"
#include "json.h"
#include "patching.h"
#include "settings.h"
#include "trace.h"
#include "trace_order.h"

enum { PROBLEMS_KEPT = 100, POS_MAX = 1 << 24, SHAPE_MAX = 1 << 16 };

struct trace_reader {
    trace_header h;
    json_bytes bytes;         /* how this trace escapes raw bytes: its header says (json.h) */
    char *strings[8];         /* owned: mode, model path, name, weights, kv, kernels,
                                 template, architecture */
    int *windows;             /* (h.config.n_layers) owned: h.windows */
    int *recurrent;           /* (h.config.n_layers) owned: h.recurrent */
    char **vocab;             /* (h.n_vocab) owned pieces */
    char **learned;           /* (n_learned) pieces known from records, by id, or NULL */
    int n_learned;
    step_record *records;     /* (n) */
    int *record_line;         /* (n) */
    trace_order_entry *entry; /* (n) each record's position, token, line, line hash */
    const intervention **own_steer; /* (n) the "steer" on the record's own line, or NULL */
    int n, cap;
    void **owned;             /* attention rows and lenses the records point at */
    int n_owned, cap_owned;
    char *problems[PROBLEMS_KEPT];
    int n_problems;
    bool shape_from_records;  /* h.config was inferred from the first attention/lens */
    const intervention *intervention; /* the control vectors of the records read so far
                                         (the last "steer" seen), in owned */
    int lines_skipped;        /* lines that gave no record (not JSON, cut short, ...) */
    bool saved_chat;          /* a line names "llmchat_chat": a saved chat, not a trace */
    int skipped_since_record; /* of which since the last record read */
    int records_partial;      /* records whose "sampler" or "steer" was dropped */
    trace_patch patch;        /* the patching run; its arrays owned */
    bool has_patch;
    trace_order order;        /* the record in force at each position (order.at NULL:
                                 order_error says why there is none) */
    llm_status order_status;
    char order_error[LLM_ERR_TEXT_MAX];
};

static bool problem(trace_reader *r, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Notes a problem; returns false (for `return problem(...)` in the readers). */
static bool problem(trace_reader *r, int line, const char *fmt, ...)
{
    if (r->n_problems < PROBLEMS_KEPT) {
        char text[256];
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(text, sizeof text, "line %d: ", line);
        vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
        va_end(ap);
        r->problems[r->n_problems] = strdup(text);
    }
    r->n_problems++;
    return false;
}

static bool own(trace_reader *r, void *p)
{
    if (!p)
        return false;
    if (r->n_owned == r->cap_owned) {
        int cap = r->cap_owned ? r->cap_owned * 2 : 64;
        void **grown = realloc(r->owned, sizeof *grown * cap);
        if (!grown) {
            free(p);
            return false;
        }
        r->owned = grown;
        r->cap_owned = cap;
    }
    r->owned[r->n_owned++] = p;
    return true;
}

/* ---- reading values (json.h) ---- */

/* v is an integer in [min, max]: into *out. */
static bool int_in(const json_value *v, long min, long max, long *out)
{
    int x;
    if (!json_as_int(v, &x) || x < min || x > max)
        return false;
    *out = x;
    return true;
}

static bool get_int(const json_value *obj, const char *key, long min, long max, long *out)
{
    return int_in(json_get(obj, key), min, max, out);
}

static bool get_number(const json_value *obj, const char *key, double *out)
{
    return json_as_double(json_get(obj, key), out);
}

static const char *get_string(const json_value *obj, const char *key)
{
    const char *s;
    return json_as_string(json_get(obj, key), &s) ? s : NULL;
}

static const json_value *get_array(const json_value *obj, const char *key)
{
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_ARRAY ? v : NULL;
}

/* The array's length, 0 when v is not an array. */
static int length(const json_value *v)
{
    return v && v->type == JSON_ARRAY && v->count <= (size_t)INT32_MAX ? (int)v->count : 0;
}

/* A number, or NaN for null (the writer's non-finite numbers); false otherwise. */
static bool number_or_null(const json_value *v, float *out)
{
    double d;
    if (json_as_double(v, &d)) {
        *out = (float)d;
        return true;
    }
    if (v && v->type == JSON_NULL) {
        *out = NAN;
        return true;
    }
    return false;
}

/* ---- the header ---- */

static char *keep_string(trace_reader *r, int slot, const json_value *obj, const char *key)
{
    const char *s = get_string(obj, key);
    if (!s)
        return NULL;
    r->strings[slot] = strdup(s);
    return r->strings[slot];
}

static int int_field(const json_value *obj, const char *key, long min, long max, int fallback)
{
    long v;
    return get_int(obj, key, min, max, &v) ? (int)v : fallback;
}

/* The settings members of obj into s, which starts at the defaults: a header's
 * options (every row with a trace key) or a record's sampler object (only the
 * sampler's rows). Each is read under its trace key ("top_p"), else under its saved
 * chat's ("top-p"); what is missing keeps its default. Returns false when one of the
 * sampler's settings is there but not a value of it (wrong type, out of bounds); any
 * other that is keeps its default. */
static bool read_settings(const json_value *obj, bool sampler_only, live_settings *s)
{
    settings_default(s);
    bool ok = true;
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!row->trace_key || (sampler_only && !settings_of_sampler(row)))
            continue;
        const json_value *v = json_get(obj, row->trace_key);
        if (!v && row->chat_key)
            v = json_get(obj, row->chat_key);
        if (v && settings_from_json(row, s, v) && settings_of_sampler(row))
            ok = false;
    }
    return ok;
}

/* The model's "windows" (one per layer, 0: none) into h.windows; a list of another
 * length or with a value that is not a count is dropped with a problem. */
static void read_windows(trace_reader *r, const json_value *m, int line)
{
    const json_value *w = get_array(m, "windows");
    int n = r->h.config.n_layers;
    if (!w)
        return;
    if (length(w) != n || !(r->windows = calloc((size_t)n, sizeof *r->windows))) {
        problem(r, line, "the header's windows are not one per layer (%d)", n);
        return;
    }
    for (int l = 0; l < n; l++) {
        uint64_t v;
        if (!json_as_u64(&w->items[l], &v) || v > POS_MAX) {
            problem(r, line, "the header's window of layer %d is not a count", l);
            free(r->windows);
            r->windows = NULL;
            return;
        }
        r->windows[l] = (int)v;
    }
    r->h.windows = r->windows;
}

/* A hybrid's layers: "recurrent" (one 0 or 1 a layer) and "dn_heads". */
static void read_recurrent(trace_reader *r, const json_value *m, int line)
{
    const json_value *k = get_array(m, "recurrent");
    int n = r->h.config.n_layers;
    if (!k)
        return;
    r->h.dn_heads = int_field(m, "dn_heads", 1, SHAPE_MAX, r->h.config.n_heads);
    if (length(k) != n || !(r->recurrent = calloc((size_t)n, sizeof *r->recurrent))) {
        problem(r, line, "the header's recurrent layers are not one flag per layer (%d)", n);
        return;
    }
    for (int l = 0; l < n; l++) {
        uint64_t v;
        if (!json_as_u64(&k->items[l], &v) || v > 1) {
            problem(r, line, "the header's recurrent flag of layer %d is not 0 or 1", l);
            free(r->recurrent);
            r->recurrent = NULL;
            return;
        }
        r->recurrent[l] = (int)v;
    }
    r->h.recurrent = r->recurrent;
}

static llm_status read_header(trace_reader *r, const json_value *v, int line, llm_err *err)
{
    trace_header *h = &r->h;
    long version;
    if (!get_int(v, "llmchat_trace", 0, 1000000, &version))
        return llm_fail(err, LLM_ERR_FORMAT, "line %d: the trace version is not a number", line);
    if (version > TRACE_FORMAT_VERSION)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "the trace is format version %ld; this llmchat reads up to version %d",
                        version, TRACE_FORMAT_VERSION);
    h->version = (int)version;
    h->mode = keep_string(r, 0, v, "mode");
    h->kv_cache = keep_string(r, 4, v, "kv_cache");
    h->kernels = keep_string(r, 5, v, "kernels");
    h->template_name = keep_string(r, 6, v, "template");
    const json_value *m = json_get(v, "model");
    if (m && m->type == JSON_OBJECT) {
        h->model_path = keep_string(r, 1, m, "path");
        h->model_name = keep_string(r, 2, m, "name");
        h->weights = keep_string(r, 3, m, "weights");
        const char *panels = get_string(m, "panels");
        h->panels = !panels ? -1 : strcmp(panels, "on") == 0 ? 1 : strcmp(panels, "off") == 0 ? 0 : -1;
        const char *k4 = get_string(m, "k4_panels");
        h->k4_panels = !k4 ? -1 : strcmp(k4, "on") == 0 ? 1 : strcmp(k4, "off") == 0 ? 0 : -1;
        model_config *c = &h->config;
        c->dim = int_field(m, "dim", 1, 1 << 20, 0);
        c->hidden_dim = int_field(m, "hidden_dim", 1, 1 << 22, 0);
        c->n_layers = int_field(m, "n_layers", 1, SHAPE_MAX, 0);
        c->n_heads = int_field(m, "n_heads", 1, SHAPE_MAX, 0);
        c->n_kv_heads = int_field(m, "n_kv_heads", 1, SHAPE_MAX, c->n_heads);
        /* a hybrid's records carry more heads a layer than its attention has */
        h->attn_heads = c->n_heads;
        c->n_heads = int_field(m, "heads", 1, SHAPE_MAX, c->n_heads);
        c->vocab_size = int_field(m, "vocab_size", 1, 1 << 24, 0);
        c->seq_len = int_field(m, "seq_len", 1, POS_MAX, 0);
        if (c->n_layers > 0 && c->n_heads > 0) {
            h->has_config = true;
            c->head_size = c->dim / c->n_heads;
            c->kv_dim = c->n_kv_heads * c->head_size;
            h->arch = keep_string(r, 7, m, "arch");
            read_windows(r, m, line);
            read_recurrent(r, m, line);
        } else {
            problem(r, line, "the header's model has no usable shape (n_layers, n_heads)");
            memset(c, 0, sizeof *c);
        }
    }
    const json_value *o = json_get(v, "options");
    if (o && o->type == JSON_OBJECT) {
        live_settings run;
        h->has_sampler = read_settings(o, false, &run);
        if (!h->has_sampler)
            problem(r, line, "the header's sampler options are out of range");
        h->sampler = run.sampler;
        h->steps = run.steps;
        h->ctx = int_field(o, "ctx", 0, POS_MAX, 0);
    }
    const json_value *b = json_get(v, "attn");
    h->attn = b && b->type == JSON_BOOL && b->boolean;
    b = json_get(v, "lens");
    h->lens = b && b->type == JSON_BOOL && b->boolean;
    const json_value *tl = get_array(v, "tensors");
    long t0, t1;
    if (tl && length(tl) == 2 && int_in(&tl->items[0], 0, SHAPE_MAX, &t0) &&
        int_in(&tl->items[1], t0, SHAPE_MAX, &t1)) {
        h->tensors = true;
        h->tensor_first = (int)t0;
        h->tensor_last = (int)t1;
    }
    const json_value *vocab = get_array(v, "vocab");
    if (vocab && length(vocab) > 0) {
        r->vocab = calloc((size_t)length(vocab), sizeof *r->vocab);
        if (!r->vocab)
            return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace");
        h->n_vocab = length(vocab);
        for (int i = 0; i < length(vocab); i++) {
            const json_value *p = &vocab->items[i];
            r->vocab[i] = strdup(p->type == JSON_STRING ? p->text : "");
            if (!r->vocab[i])
                return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace");
        }
        if (h->has_config && h->config.vocab_size != length(vocab))
            problem(r, line, "the vocabulary has %d pieces but the model %d", length(vocab),
                    h->config.vocab_size);
    }
    return LLM_OK;
}

/* ---- records ---- */

static int vocab_limit(const trace_reader *r)
{
    if (r->h.n_vocab > 0)
        return r->h.n_vocab;
    if (r->h.has_config && r->h.config.vocab_size > 0)
        return r->h.config.vocab_size;
    return 1 << 24;
}

/* One past the highest position a record may name: the context of the run the header
 * describes (its options, else its model), else POS_MAX. */
static int pos_limit(const trace_reader *r)
{
    if (r->h.ctx > 0)
        return r->h.ctx;
    if (r->h.has_config && r->h.config.seq_len > 0)
        return r->h.config.seq_len;
    return POS_MAX;
}

static void learn_piece(trace_reader *r, int id, const char *piece)
{
    if (r->h.n_vocab > 0 || id < 0 || id >= vocab_limit(r))
        return;
    if (id >= r->n_learned) {
        int n = id + 1 > 2 * r->n_learned ? id + 1 : 2 * r->n_learned;
        char **grown = realloc(r->learned, sizeof *grown * n);
        if (!grown)
            return;
        memset(grown + r->n_learned, 0, sizeof *grown * (n - r->n_learned));
        r->learned = grown;
        r->n_learned = n;
    }
    if (!r->learned[id])
        r->learned[id] = strdup(piece);
}

static bool read_top(trace_reader *r, step_record *rec, const json_value *top, int line)
{
    int limit = vocab_limit(r);
    rec->n_top = 0;
    for (int i = 0; i < length(top) && rec->n_top < STEP_TOP_MAX; i++) {
        const json_value *c = &top->items[i];
        step_candidate *out = &rec->top[rec->n_top];
        long id;
        if (c->type != JSON_ARRAY || length(c) < 3 || !int_in(&c->items[0], 0, limit - 1, &id) ||
            !number_or_null(&c->items[1], &out->logit) ||
            !number_or_null(&c->items[2], &out->prob))
            return problem(r, line, "candidate %d of \"top\" is not [id, logit, prob]", i + 1);
        out->id = (int)id;
        out->p_final = 0.0f;
        out->cut = SAMPLER_KEPT;
        rec->n_top++;
    }
    return true;
}

static sampler_cut cut_named(const char *name)
{
    for (int c = SAMPLER_CUT_TOP_K; c <= SAMPLER_CUT_GREEDY; c++)
        if (strcmp(name, sampler_cut_name((sampler_cut)c)) == 0)
            return (sampler_cut)c;
    return SAMPLER_KEPT;
}

/* The "sampler" object; a bad one is dropped (the record stays, not sampled). */
static void read_sampler(trace_reader *r, step_record *rec, const json_value *s, int line)
{
    sampler_record *d = &rec->sampler;
    live_settings in_force;
    bool settings_ok = read_settings(s, true, &in_force);
    d->config = in_force.sampler;
    long chosen;
    const json_value *greedy = json_get(s, "greedy");
    if (!get_int(s, "chosen", 0, vocab_limit(r) - 1, &chosen) || !greedy ||
        greedy->type != JSON_BOOL || !settings_ok) {
        problem(r, line, "the sampler object is incomplete; read as not sampled");
        r->records_partial++;
        return;
    }
    d->chosen = (int)chosen;
    d->greedy = greedy->boolean;
    d->n_vocab = vocab_limit(r);
    d->n_penalized = int_field(s, "n_penalized", 0, 1 << 30, 0);
    d->kept_top_k = int_field(s, "kept_top_k", 0, 1 << 30, 0);
    d->kept_top_p = int_field(s, "kept_top_p", 0, 1 << 30, 0);
    d->kept_min_p = int_field(s, "kept_min_p", 0, 1 << 30, 0);
    float x;
    d->draw = number_or_null(json_get(s, "draw"), &x) ? x : -1.0f;
    d->chosen_prob = number_or_null(json_get(s, "chosen_prob"), &x) ? x : NAN;
    d->chosen_rank = int_field(s, "chosen_rank", 0, 1 << 30, 0);
    d->chosen_model_prob = rec->next_prob;
    rec->sampled = true;
    const json_value *pf = get_array(s, "p_final"), *cut = get_array(s, "cut");
    for (int i = 0; i < rec->n_top; i++) {
        if (pf && i < length(pf))
            number_or_null(&pf->items[i], &rec->top[i].p_final);
        if (cut && i < length(cut) && cut->items[i].type == JSON_STRING)
            rec->top[i].cut = cut_named(cut->items[i].text);
    }
}

/* Takes the model shape from the first record with attention or a lens when the
 * header gave none (version 0 traces). A lens gives the layers only, and once they are
 * known they stay (records already read hold lens arrays that long): a later lens or
 * attention of other layers is dropped by its reader, and an attention of as many
 * layers adds the heads. */
static void infer_shape(trace_reader *r, const json_value *attn, const json_value *lens)
{
    if (r->h.has_config)
        return;
    model_config *c = &r->h.config;
    bool layers_known = c->n_layers > 0;
    if (attn && length(attn) > 0 && length(attn) <= SHAPE_MAX && attn->items[0].type == JSON_ARRAY &&
        length(&attn->items[0]) > 0 && length(&attn->items[0]) <= SHAPE_MAX) {
        if (layers_known && length(attn) != c->n_layers)
            return;
        c->n_layers = length(attn);
        c->n_heads = length(&attn->items[0]);
    } else if (lens && !layers_known && length(lens) > 0 && length(lens) <= SHAPE_MAX) {
        c->n_layers = length(lens);
        c->n_heads = 0;
    } else {
        return;
    }
    c->n_kv_heads = c->n_heads;
    r->h.has_config = c->n_heads > 0;
    r->shape_from_records = true;
}

/* "attn": (n_layers, n_heads, pos + 1); dropped with a problem when the shape is wrong. */
static void read_attention(trace_reader *r, step_record *rec, const json_value *attn, int line)
{
    infer_shape(r, attn, NULL);
    const model_config *c = &r->h.config;
    int L = c->n_layers, H = c->n_heads, K = rec->pos + 1;
    bool ok = r->h.has_config && H > 0 && length(attn) == L;
    for (int l = 0; ok && l < L; l++) {
        const json_value *layer = &attn->items[l];
        ok = layer->type == JSON_ARRAY && length(layer) == H;
        for (int h = 0; ok && h < H; h++)
            ok = layer->items[h].type == JSON_ARRAY && length(&layer->items[h]) == K;
    }
    if (!ok) {
        problem(r, line, "\"attn\" is not %d layers x %d heads x %d keys; dropped", L, H, K);
        return;
    }
    float *rows = malloc(sizeof(float) * (size_t)L * H * K);
    if (!own(r, rows))
        return;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            const json_value *row = &attn->items[l].items[h];
            for (int k = 0; k < K; k++) {
                float *w = &rows[((size_t)l * H + h) * K + k];
                if (!number_or_null(&row->items[k], w)) {
                    problem(r, line, "\"attn\" holds a value that is not a number; dropped");
                    return;
                }
            }
        }
    rec->attn = rows;
}

static void read_lens(trace_reader *r, step_record *rec, const json_value *lens, int line)
{
    infer_shape(r, NULL, lens);
    int L = r->h.config.n_layers, limit = vocab_limit(r);
    if (length(lens) != L || L <= 0) {
        problem(r, line, "\"lens\" has %d layers, not %d; dropped", length(lens), L);
        return;
    }
    step_lens_layer *out = malloc(sizeof *out * L);
    if (!own(r, out))
        return;
    for (int l = 0; l < L; l++) {
        const json_value *layer = &lens->items[l];
        const json_value *top = get_array(layer, "top");
        step_lens_layer *o = &out[l];
        for (int j = 0; j < STEP_LENS_TOP; j++) {
            o->id[j] = -1;
            o->prob[j] = 0.0f;
        }
        if (!top) {
            problem(r, line, "layer %d of \"lens\" has no \"top\"; dropped", l + 1);
            return;
        }
        for (int j = 0; j < length(top) && j < STEP_LENS_TOP; j++) {
            const json_value *c = &top->items[j];
            long id;
            if (c->type != JSON_ARRAY || length(c) < 2 || !int_in(&c->items[0], 0, limit - 1, &id) ||
                !number_or_null(&c->items[1], &o->prob[j])) {
                problem(r, line, "layer %d of \"lens\" has a bad candidate; dropped", l + 1);
                return;
            }
            o->id[j] = (int)id;
        }
        o->next_rank = int_field(layer, "next_rank", 0, 1 << 30, 0);
        if (!number_or_null(json_get(layer, "next_prob"), &o->next_prob))
            o->next_prob = NAN;
    }
    rec->lens = out;
}

/* One step of "tensors" into o; false when it is malformed. */
static bool read_tensor(const json_value *v, step_tensor *o)
{
    memset(o, 0, sizeof *o);
    const char *name = get_string(v, "name");
    const json_value *shape = get_array(v, "shape"), *first = get_array(v, "first");
    const json_value *hist = get_array(v, "hist");
    long layer, d0, d1 = 1, masked;
    if (!name || !*name || strlen(name) >= STEP_TENSOR_NAME || !get_int(v, "layer", -1, SHAPE_MAX, &layer) ||
        length(shape) < 1 || length(shape) > 2 || !int_in(&shape->items[0], 1, 1 << 30, &d0) ||
        (length(shape) == 2 && !int_in(&shape->items[1], 1, 1 << 30, &d1)) || d0 * d1 > (1L << 30) ||
        !get_int(v, "masked", 0, d0 * d1, &masked) || length(first) > STEP_TENSOR_FIRST ||
        length(first) > d0 * d1 || length(hist) != STEP_TENSOR_BINS)
        return false;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->layer = (int)layer;
    o->n_dims = length(shape);
    o->shape[0] = (int)d0;
    o->shape[1] = (int)d1;
    o->n = (int)(d0 * d1);
    o->n_masked = (int)masked;
    float *stats[] = {&o->min, &o->max, &o->mean, &o->l2};
    const char *keys[] = {"min", "max", "mean", "l2"};
    for (int k = 0; k < 4; k++)
        if (!number_or_null(json_get(v, keys[k]), stats[k]))
            return false;
    o->n_first = length(first);
    for (int i = 0; i < o->n_first; i++)
        if (!number_or_null(&first->items[i], &o->first[i]))
            return false;
    for (int b = 0; b < STEP_TENSOR_BINS; b++) {
        long c;
        if (!int_in(&hist->items[b], 0, INT32_MAX, &c))
            return false;
        o->hist[b] = (unsigned)c;
    }
    return true;
}

static void read_tensors(trace_reader *r, step_record *rec, const json_value *tensors, int line)
{
    int n = length(tensors);
    if (n == 0 || n > SHAPE_MAX) {
        problem(r, line, "\"tensors\" has %d steps; dropped", n);
        return;
    }
    step_tensor *out = malloc(sizeof *out * (size_t)n);
    if (!own(r, out))
        return;
    for (int i = 0; i < n; i++)
        if (!read_tensor(&tensors->items[i], &out[i])) {
            problem(r, line, "step %d of \"tensors\" is malformed; dropped", i + 1);
            return;
        }
    rec->tensors = out;
    rec->n_tensors = n;
}

/* A record's "steer" (intervention_json.h): the control vectors, knocked-out heads and
 * experts and experts forced from this record on, as one owned block (a trace written
 * before experts_out or experts_forced has none). A knocked-out head is kept as
 * layer * H + head with H in the block (the header's heads a layer, else 4096), so
 * [layer, head] comes back whole whatever the model that replays it. Returns the block,
 * or NULL when the object was dropped. */
static const intervention *read_steer(trace_reader *r, const json_value *v, int line)
{
    bool nomem;
    intervention *in = intervention_read_json(v, r->h.has_config ? r->h.config.n_layers : 0,
                                              r->h.has_config ? r->h.config.n_heads : 0, &nomem);
    if (!in) {
        if (!nomem)
            problem(r, line, "\"steer\" needs \"vectors\" (name, path, scale, fnv1a64), \"layers\" "
                             "(null or [first, last]) and \"heads_out\" ([layer, head] of this model), "
                             "and may have \"heads_reset\", \"experts_out\" ([layer, expert]) and "
                             "\"experts_forced\" ([layer, expert]); dropped");
        return NULL;
    }
    if (!own(r, in))
        return NULL;
    r->intervention = in;
    return in;
}

static step_phase phase_named(const char *name, bool *ok)
{
    *ok = true;
    for (int p = STEP_PROMPT; p <= STEP_FORCED; p++)
        if (strcmp(name, step_phase_name((step_phase)p)) == 0)
            return (step_phase)p;
    *ok = false;
    return STEP_PROMPT;
}

/* Room for one more record; false (a problem noted) on no memory. */
static bool grow_records(trace_reader *r, int line)
{
    if (r->n < r->cap)
        return true;
    int cap = r->cap ? r->cap * 2 : 256;
    step_record *grown = realloc(r->records, sizeof *grown * cap);
    if (grown)
        r->records = grown;
    int *lines = grown ? realloc(r->record_line, sizeof *lines * cap) : NULL;
    if (lines)
        r->record_line = lines;
    trace_order_entry *entries = lines ? realloc(r->entry, sizeof *entries * cap) : NULL;
    if (entries)
        r->entry = entries;
    const intervention **steers = entries ? realloc(r->own_steer, sizeof *steers * cap) : NULL;
    if (!steers)
        return problem(r, line, "out of memory; skipped");
    r->own_steer = steers;
    r->cap = cap;
    return true;
}

/* One record line (hash: of its bytes); false when it was skipped (the problem is
 * noted). */
static bool read_record(trace_reader *r, const json_value *v, int line, uint64_t hash)
{
    step_record rec;
    memset(&rec, 0, sizeof rec);
    long pos, token, next;
    int limit = vocab_limit(r);
    int positions = pos_limit(r);
    if (!get_int(v, "pos", 0, POS_MAX - 1, &pos))
        return problem(r, line, "no \"pos\" (a position from 0); skipped");
    if (pos >= positions)
        return problem(r, line, "position %ld is past the context of %d positions; skipped", pos, positions);
    if (!get_int(v, "token", 0, limit - 1, &token))
        return problem(r, line, "no \"token\" in the vocabulary (0..%d); skipped", limit - 1);
    if (!get_int(v, "next", -1, limit - 1, &next))
        return problem(r, line, "no \"next\" (-1 or a token id); skipped");
    const char *phase = get_string(v, "phase");
    bool phase_ok = false;
    rec.phase = phase ? phase_named(phase, &phase_ok) : STEP_PROMPT;
    if (!phase_ok)
        return problem(r, line, "no \"phase\" (prompt, gen or forced); skipped");
    const json_value *top = get_array(v, "top");
    if (!top)
        return problem(r, line, "no \"top\" array; skipped");
    rec.pos = (int)pos;
    rec.token = (int)token;
    rec.next = (int)next;
    if (!read_top(r, &rec, top, line))
        return false;
    if (!number_or_null(json_get(v, "next_prob"), &rec.next_prob))
        rec.next_prob = NAN;
    rec.next_rank = int_field(v, "next_rank", 0, 1 << 30, 0);
    if (!number_or_null(json_get(v, "entropy"), &rec.entropy) || !(rec.entropy >= 0.0f && isfinite(rec.entropy)))
        rec.entropy = NAN; /* traces before it, or a damaged value */
    float ms;
    rec.forward_ms = number_or_null(json_get(v, "ms"), &ms) && isfinite(ms) ? ms : 0.0;
    if (json_as_bool(json_get(v, "batch"), &rec.batch))
        r->h.has_batch = true;
    const json_value *s = json_get(v, "sampler");
    if (s && s->type == JSON_OBJECT)
        read_sampler(r, &rec, s, line);
    else if (s && s->type != JSON_NULL) {
        problem(r, line, "\"sampler\" is not an object; read as not sampled");
        r->records_partial++;
    }
    const json_value *guess = json_get(v, "guess");
    if (guess && guess->type == JSON_NUMBER) {
        rec.guess = int_field(v, "guess", 0, 1 << 30, -1);
        rec.guessed = rec.guess >= 0;
    }
    const char *piece = get_string(v, "piece");
    if (piece)
        learn_piece(r, rec.token, piece);
    /* a served model's trace has no vocabulary: its records name the candidates' pieces */
    const json_value *top_pieces = get_array(v, "top_pieces");
    if (top_pieces && length(top_pieces) == rec.n_top && length(top) == rec.n_top)
        for (int i = 0; i < rec.n_top; i++)
            if (top_pieces->items[i].type == JSON_STRING)
                learn_piece(r, rec.top[i].id, top_pieces->items[i].text);
    const json_value *attn = get_array(v, "attn");
    if (attn)
        read_attention(r, &rec, attn, line);
    const json_value *lens = get_array(v, "lens");
    if (lens)
        read_lens(r, &rec, lens, line);
    const json_value *tensors = get_array(v, "tensors");
    if (tensors)
        read_tensors(r, &rec, tensors, line);
    const json_value *steer = json_get(v, "steer");
    const intervention *own_steer = NULL;
    if (steer && steer->type == JSON_OBJECT && !(own_steer = read_steer(r, steer, line)))
        r->records_partial++;
    else if (steer && steer->type != JSON_OBJECT && steer->type != JSON_NULL) {
        problem(r, line, "\"steer\" is not an object; the interventions read as before it");
        r->records_partial++;
    }
    rec.intervention = r->intervention;
    if (!grow_records(r, line))
        return false;
    r->record_line[r->n] = line;
    r->own_steer[r->n] = own_steer;
    r->entry[r->n] = (trace_order_entry){.pos = rec.pos, .token = rec.token, .line = line,
                                         .hash = hash,
                                         .skipped_before = r->skipped_since_record};
    r->skipped_since_record = 0;
    r->records[r->n++] = rec;
    return true;
}

/* ---- the patching run ---- */

/* n ids of the vocabulary from the array v into a new array; NULL when one is not. */
static int *read_ids(const trace_reader *r, const json_value *v, int n)
{
    int *ids = malloc(sizeof *ids * (size_t)n);
    for (int i = 0; ids && i < n; i++) {
        long id;
        if (!int_in(&v->items[i], 0, vocab_limit(r) - 1, &id)) {
            free(ids);
            return NULL;
        }
        ids[i] = (int)id;
    }
    return ids;
}

/* The grid's columns the site has on the header's model: n positions, or its heads;
 * 0 when the header does not say (any count is taken: the header gives no shape, or
 * the site is expert, whose count the header does not give). */
static int patch_cols(const trace_reader *r, patch_site site, int n)
{
    if (patch_site_positions(site))
        return n;
    if (!r->h.has_config || site == PATCH_EXPERT)
        return 0;
    return site == PATCH_HEAD_K || site == PATCH_HEAD_V ? r->h.config.n_kv_heads
                                                       : r->h.config.n_heads;
}

/* The patch line's object v into p (its arrays allocated); false with a problem noted
 * when a field is missing, of the wrong type or does not fit the header. */
static bool parse_patch(trace_reader *r, const json_value *v, int line, trace_patch *p)
{
    const char *site = get_string(v, "site"), *metric = get_string(v, "metric");
    patch_site ps;
    if (!site || !patch_site_parse(site, &ps))
        return problem(r, line, "the patch line's \"site\" is not a patching site; skipped");
    p->site = (int)ps;
    if (!metric || (strcmp(metric, "logit_diff") != 0 && strcmp(metric, "kl") != 0))
        return problem(r, line, "the patch line's \"metric\" is not logit_diff or kl; skipped");
    p->metric = strcmp(metric, "kl") == 0 ? PATCH_KL : PATCH_LOGIT_DIFF;
    const json_value *layers = get_array(v, "layers");
    int top = !r->h.has_config ? SHAPE_MAX
              : ps == PATCH_RESID_PRE ? r->h.config.n_layers : r->h.config.n_layers - 1;
    long first, last;
    if (length(layers) != 2 || !int_in(&layers->items[0], 0, top, &first) ||
        !int_in(&layers->items[1], first, top, &last))
        return problem(r, line, "the patch line's \"layers\" are not [first, last] of layers "
                                "0-%d; skipped", top);
    p->layer_first = (int)first;
    p->layer_last = (int)last;
    const json_value *ids = get_array(v, "ids"), *corrupt = get_array(v, "corrupt_ids");
    p->n = length(ids);
    if (p->n < 1 || p->n > pos_limit(r) || length(corrupt) != p->n)
        return problem(r, line, "the patch line's \"ids\" and \"corrupt_ids\" are not two "
                                "prompts of one length (1-%d); skipped", pos_limit(r));
    p->answer = p->wrong = -1;
    long answer, wrong;
    if (p->metric == PATCH_LOGIT_DIFF) {
        if (!get_int(v, "answer", 0, vocab_limit(r) - 1, &answer) ||
            !get_int(v, "wrong", 0, vocab_limit(r) - 1, &wrong) || answer == wrong)
            return problem(r, line, "the patch line's \"answer\" and \"wrong\" are not two "
                                    "token ids (0-%d); skipped", vocab_limit(r) - 1);
        p->answer = (int)answer;
        p->wrong = (int)wrong;
    }
    float clean, corrupted;
    if (!number_or_null(json_get(v, "clean"), &clean) ||
        !number_or_null(json_get(v, "corrupt"), &corrupted))
        return problem(r, line, "the patch line has no \"clean\" and \"corrupt\" baselines; "
                                "skipped");
    double d;
    p->clean = get_number(v, "clean", &d) ? d : NAN; /* as written, not rounded to a float */
    p->corrupt = get_number(v, "corrupt", &d) ? d : NAN;
    long rows, cols;
    int want = patch_cols(r, ps, p->n);
    if (!get_int(v, "rows", 1, SHAPE_MAX + 1, &rows) || rows != last - first + 1 ||
        !get_int(v, "cols", 1, SHAPE_MAX, &cols) || (want > 0 && cols != want))
        return problem(r, line, "the patch line's \"rows\" and \"cols\" are not %ld layers x "
                                "%d %s; skipped", last - first + 1, want,
                       want == p->n ? "positions" : "heads");
    p->rows = (int)rows;
    p->cols = (int)cols;
    const json_value *grid = get_array(v, "grid");
    bool shaped = length(grid) == p->rows;
    for (int l = 0; shaped && l < p->rows; l++)
        shaped = length(&grid->items[l]) == p->cols;
    if (!shaped)
        return problem(r, line, "the patch line's \"grid\" is not %d rows x %d columns; skipped",
                       p->rows, p->cols);
    p->runs = int_field(v, "runs", 0, 1 << 30, 0);
    long positions;
    p->positions_run = get_int(v, "positions_run", 0, 1L << 30, &positions) ? positions : 0;
    p->ids = read_ids(r, ids, p->n);
    p->corrupt_ids = p->ids ? read_ids(r, corrupt, p->n) : NULL;
    if (!p->corrupt_ids)
        return problem(r, line, "the patch line's prompts hold an id outside the vocabulary "
                                "(0-%d); skipped", vocab_limit(r) - 1);
    p->grid = malloc(sizeof *p->grid * (size_t)p->rows * (size_t)p->cols);
    if (!p->grid)
        return problem(r, line, "out of memory; skipped");
    for (int l = 0; l < p->rows; l++)
        for (int c = 0; c < p->cols; c++)
            if (!number_or_null(&grid->items[l].items[c], &p->grid[(size_t)l * p->cols + c]))
                return problem(r, line, "cell (%d, %d) of the patch line's \"grid\" is not a "
                                        "number; skipped", l, c);
    return true;
}

static void free_patch(trace_patch *p)
{
    free(p->ids);
    free(p->corrupt_ids);
    free(p->grid);
    memset(p, 0, sizeof *p);
}

/* The patch line; false when it was skipped (the problem is noted). */
static bool read_patch(trace_reader *r, const json_value *v, int line)
{
    if (r->has_patch)
        return problem(r, line, "a second patch line; skipped");
    if (v->type != JSON_OBJECT)
        return problem(r, line, "\"patch\" is not an object; skipped");
    trace_patch p;
    memset(&p, 0, sizeof p);
    if (!parse_patch(r, v, line, &p)) {
        free_patch(&p);
        return false;
    }
    r->patch = p;
    r->has_patch = true;
    return true;
}

/* ---- the whole buffer ---- */

void trace_reader_free(trace_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < sizeof r->strings / sizeof r->strings[0]; i++)
        free(r->strings[i]);
    for (int i = 0; r->vocab && i < r->h.n_vocab; i++)
        free(r->vocab[i]);
    free(r->vocab);
    free(r->windows);
    free(r->recurrent);
    for (int i = 0; i < r->n_learned; i++)
        free(r->learned[i]);
    free(r->learned);
    for (int i = 0; i < r->n_owned; i++)
        free(r->owned[i]);
    free(r->owned);
    for (int i = 0; i < r->n_problems && i < PROBLEMS_KEPT; i++)
        free(r->problems[i]);
    free(r->records);
    free(r->record_line);
    free(r->entry);
    free(r->own_steer);
    free_patch(&r->patch);
    trace_order_free(&r->order);
    free(r);
}

/* Notes that a line gave no record (its problem is noted already). */
static void skipped(trace_reader *r)
{
    r->lines_skipped++;
    r->skipped_since_record++;
}

/* Whether text[0..n) holds word. */
static bool holds(const char *text, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!memcmp(text + i, word, w))
            return true;
    return false;
}

/* One non-blank line; LLM_OK unless the whole read must stop (no memory, a newer
 * version). */
static llm_status read_line(trace_reader *r, const char *text, size_t n, bool last_cut, int line,
                            bool first, llm_err *err)
{
    json_value *v;
    llm_err why;
    llm_status st = json_parse_bytes(text, n, first ? JSON_SURROGATE_BYTES : r->bytes, &v, &why);
    if (first && st == LLM_OK && !json_has_raw_bytes_member(v)) {
        /* written before traces said how they escape raw bytes: \u00XX (trace.h) */
        r->bytes = JSON_LATIN1_BYTES;
        json_free(v);
        st = json_parse_bytes(text, n, r->bytes, &v, &why);
    } else if (first && st != LLM_OK && st != LLM_ERR_NOMEM &&
               !holds(text, n, "\"" JSON_RAW_BYTES_KEY "\"")) {
        r->bytes = JSON_LATIN1_BYTES; /* a broken first line of an older trace, likely */
    }
    if (st == LLM_ERR_NOMEM)
        return llm_fail(err, st, "out of memory reading the trace");
    if (st != LLM_OK) {
        if (holds(text, n, "\"llmchat_chat\""))
            r->saved_chat = true;
        if (last_cut)
            problem(r, line, "cut short (the file ends inside a record); skipped");
        else
            problem(r, line, "not JSON (%s); skipped", why.text);
        skipped(r);
        return LLM_OK;
    }
    st = LLM_OK;
    if (v->type != JSON_OBJECT) {
        problem(r, line, "not a JSON object; skipped");
        skipped(r);
    } else if (json_get(v, "llmchat_trace")) {
        if (!first) {
            problem(r, line, "a header after the first line; skipped");
            skipped(r);
        } else {
            st = read_header(r, v, line, err);
        }
    } else if (json_get(v, "patch")) {
        if (!read_patch(r, json_get(v, "patch"), line))
            skipped(r);
    } else if (!read_record(r, v, line, fnv1a64(FNV1A64_START, text, n))) {
        skipped(r);
    }
    json_free(v);
    return st;
}

/* The record in force at each position (trace_order.h); in a trace read by position,
 * each record's control vectors are those of the last "steer" before it by position. */
static llm_status order_records(trace_reader *r, llm_err *err)
{
    llm_err why;
    r->order_status = trace_order_build(r->entry, r->n, &r->order, &why);
    if (r->order_status == LLM_ERR_NOMEM)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace");
    if (r->order_status != LLM_OK) {
        snprintf(r->order_error, sizeof r->order_error, "%s", why.text);
        return LLM_OK;
    }
    const intervention *in = NULL;
    for (int p = 0; r->order.by_position && p < r->order.n; p++) {
        int i = r->order.at[p];
        if (i < 0)
            continue;
        if (r->own_steer[i])
            in = r->own_steer[i];
        r->records[i].intervention = in;
    }
    return LLM_OK;
}

llm_status trace_read_buffer(const char *buf, size_t len, trace_reader **out, llm_err *err)
{
    *out = NULL;
    trace_reader *r = calloc(1, sizeof *r);
    if (!r)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace");
    r->h.panels = -1;
    r->h.k4_panels = -1;
    size_t start = 0;
    int line = 0;
    bool first = true;
    llm_status st = LLM_OK;
    while (start < len && st == LLM_OK) {
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        line++;
        const char *text = buf + start;
        size_t n = end - start;
        start = end + 1;
        size_t blank = 0;
        while (blank < n && (text[blank] == ' ' || text[blank] == '\t' || text[blank] == '\r'))
            blank++;
        if (blank == n)
            continue;
        st = read_line(r, text, n, !nl, line, first, err);
        first = false;
    }
    if (st == LLM_OK && r->n == 0 && !r->has_patch && r->h.version == 0)
        problem(r, line > 0 ? line : 1, "no records: %s", line ? "nothing could be read"
                                                              : "the trace is empty");
    if (st == LLM_OK)
        st = order_records(r, err);
    if (st != LLM_OK) {
        trace_reader_free(r);
        return st;
    }
    *out = r;
    return LLM_OK;
}

llm_status trace_read_file(const char *path, trace_reader **out, llm_err *err)
{
    *out = NULL;
    const char *why;
    FILE *f = input_file_fopen(path, &why);
    if (!f)
        return llm_fail(err, LLM_ERR_IO, "cannot read the trace %s: %s", path, why);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *grown = realloc(buf, cap *= 2);
        if (!grown)
            free(buf);
        buf = grown;
    }
    int read_error = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace %s", path);
    if (read_error) {
        free(buf);
        return llm_fail(err, LLM_ERR_IO, "cannot read the trace %s: %s", path,
                        strerror(read_error));
    }
    llm_status st = trace_read_buffer(buf, n, out, err);
    free(buf);
    if (st != LLM_OK && st != LLM_ERR_NOMEM) {
        char msg[LLM_ERR_TEXT_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err->text : "");
        llm_fail(err, st, "%s: %s", path, msg);
    }
    return st;
}

const trace_header *trace_reader_header(const trace_reader *r) { return &r->h; }
const trace_patch *trace_reader_patch(const trace_reader *r) { return r->has_patch ? &r->patch : NULL; }
int trace_reader_count(const trace_reader *r) { return r->n; }
int trace_reader_problem_count(const trace_reader *r) { return r->n_problems; }

int trace_reader_problems_kept(const trace_reader *r)
{
    return r->n_problems < PROBLEMS_KEPT ? r->n_problems : PROBLEMS_KEPT;
}

const step_record *trace_reader_record(const trace_reader *r, int i)
{
    return i >= 0 && i < r->n ? &r->records[i] : NULL;
}

int trace_reader_line(const trace_reader *r, int i)
{
    return i >= 0 && i < r->n ? r->record_line[i] : 0;
}

const char *trace_reader_piece(const trace_reader *r, int id)
{
    if (id >= 0 && id < r->h.n_vocab)
        return r->vocab[id];
    if (id >= 0 && id < r->n_learned)
        return r->learned[id];
    return NULL;
}

const char *trace_reader_problem(const trace_reader *r, int i)
{
    return i >= 0 && i < trace_reader_problems_kept(r) && r->problems[i] ? r->problems[i]
                                                                           : "?";
}

int trace_reader_lines_skipped(const trace_reader *r) { return r->lines_skipped; }
int trace_reader_records_partial(const trace_reader *r) { return r->records_partial; }

/* The rewind rule over the records in file order, whatever their order: --view's
 * fallback for a trace that trace_order refuses. */
static int final_in_file_order(const trace_reader *r, const step_record **seq)
{
    int len = 0;
    for (int i = 0; i < r->n; i++) {
        int p = r->records[i].pos;
        for (int q = p + 1; q < len; q++)
            seq[q] = NULL; /* a rewind: what followed p is gone */
        seq[p] = &r->records[i];
        len = p + 1;
    }
    return len;
}

static int highest_position(const trace_reader *r)
{
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n = r->records[i].pos + 1 > n ? r->records[i].pos + 1 : n;
    return n;
}

int trace_reader_final(const trace_reader *r, const step_record ***out)
{
    int n = highest_position(r);
    const step_record **seq = calloc(n > 0 ? (size_t)n : 1, sizeof *seq);
    if (!seq)
        return -1;
    *out = seq;
    if (r->order_status != LLM_OK)
        return final_in_file_order(r, seq);
    for (int p = 0; p < r->order.n; p++)
        seq[p] = r->order.at[p] >= 0 ? &r->records[r->order.at[p]] : NULL;
    return r->order.n;
}

llm_status trace_reader_sequence(const trace_reader *r, const step_record ***out,
                                 trace_sequence_info *info, llm_err *err)
{
    *out = NULL;
    memset(info, 0, sizeof *info);
    if (r->order_status != LLM_OK)
        return llm_fail(err, r->order_status, "%s", r->order_error);
    int n = trace_reader_final(r, out);
    if (n < 0)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory reading the trace");
    info->n = n;
    info->held = r->order.held;
    info->replaced = r->order.replaced;
    info->copies = r->order.copies;
    info->by_position = r->order.by_position;
    snprintf(info->disorder, sizeof info->disorder, "%s", r->order.disorder);
    const step_record *last = n > 0 ? (*out)[n - 1] : NULL;
    info->cut_short = last && last->next >= 0 && pos_limit(r) < POS_MAX && n < pos_limit(r);
    return LLM_OK;
}

llm_status trace_reader_usable(const trace_reader *r, const char *path, llm_err *err)
{
    if (r->n > 0 || r->has_patch)
        return LLM_OK;
    if (r->h.version > 0 && r->lines_skipped > 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s holds no step records that could be read "
                        "(%s)", path, trace_reader_problem(r, 0));
    if (r->h.version > 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s holds no step records", path);
    if (r->lines_skipped == 0)
        return llm_fail(err, LLM_ERR_FORMAT, "%s is empty: not an llmchat trace", path);
    if (r->saved_chat)
        return llm_fail(err, LLM_ERR_FORMAT, "%s is a saved chat, not a trace: /load it in the "
                        "TUI or -m chat (--resume opens the newest)", path);
    return llm_fail(err, LLM_ERR_FORMAT, "%s is not an llmchat trace (%s)", path,
                    trace_reader_problem(r, 0));
}
