/* trace.c — writes step records as JSON Lines (see trace.h), a patching run's grid as
 * one line, and names step phases.
 *
 * Owns the trace file and its 1 MiB stdio buffer; borrows the tokenizer (pieces) and
 * the model config (attention shape), which must outlive the trace. The file is
 * written under a temporary name beside the trace's (output_file.h) and renamed into
 * place by trace_close, so that naming a file the run reads (the model, the tokenizer)
 * is refused before anything is written and an existing trace stays whole until the
 * new one is. A write error is remembered (the first one, with its errno) and reported
 * by every later trace_write and by trace_close, which then removes the temporary
 * file; nothing is printed.
 *
 * JSON details: pieces are written as their raw stored bytes. Valid UTF-8 passes
 * through; quote, backslash and control characters (and DEL) are escaped; a byte that
 * is not part of a valid UTF-8 sequence is written as the lone surrogate \udcXX with the
 * byte's value, as the header's "raw_bytes" says (json.h: Python's surrogateescape).
 * Floats use %.9g for logits, probabilities and the draw (round-trips a float) and
 * six significant digits for settings, timings and attention weights; NaN and infinities, which
 * JSON cannot express, are written as null. */
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "intervention_json.h"
#include "json.h"
#include "output_file.h"
#include "settings.h"
#include "textfmt.h"

enum { TRACE_BUFFER = 1 << 20 };

struct trace_writer {
    output_file *out;         /* the file being written (a temporary name until closed) */
    FILE *f;                  /* its stream */
    char *path;               /* owned copy, for messages */
    char *buf;                /* (TRACE_BUFFER) stdio buffer of f */
    const tokenizer *tok;     /* borrowed; may be NULL (pieces then come from piece_fn,
                                 else are "") */
    trace_piece_fn piece_fn;  /* pieces without a tokenizer (a served model's) */
    void *piece_user;
    model_config cfg;         /* copy: n_layers, n_heads for the attention shape */
    bool has_cfg;
    bool with_attention;
    trace_run run;            /* copy; its pointers are borrowed */
    char *model_path;         /* owned copy of run.m->path (the model may close first) */
    sampler_config sampler;   /* copy of *run.sampler */
    bool has_sampler;
    bool header_written;
    const intervention *intervention; /* the last one written (records say it when it
                                          changes); borrowed from the engine */
    int write_errno;          /* first write error's errno; 0 while all is well */
    double flushed_ms;        /* when the buffer last went to the file */
};

/* The records buffered go to the file at least this often while they come, so that a
 * program following the temporary file (and what a crash leaves) is this close behind. */
enum { TRACE_FLUSH_MS = 1000 };

const char *step_phase_name(step_phase p)
{
    switch (p) {
    case STEP_PROMPT: return "prompt";
    case STEP_GEN: return "gen";
    case STEP_FORCED: return "forced";
    }
    return "?";
}

/* A number as JSON with `digits` significant digits, or null when not finite. */
static void put_float(FILE *f, double x, int digits)
{
    if (isfinite(x) && digits == 9)
        fprintf(f, "%.9g", x);
    else if (isfinite(x))
        fprintf(f, "%.6g", x);
    else
        fputs("null", f);
}

static void note_error(trace_writer *t)
{
    if (t->write_errno == 0 && ferror(t->f))
        t->write_errno = errno ? errno : EIO;
}

llm_status trace_open(const char *path, const tokenizer *tok, const model_config *cfg,
                      bool with_attention, trace_writer **out, llm_err *err)
{
    *out = NULL;
    trace_writer *t = calloc(1, sizeof *t);
    if (t) {
        t->path = strdup(path);
        t->buf = malloc(TRACE_BUFFER);
    }
    if (!t || !t->path || !t->buf) {
        if (t) {
            free(t->path);
            free(t->buf);
        }
        free(t);
        return llm_fail(err, LLM_ERR_NOMEM, "%s: out of memory for the trace buffer", path);
    }
    llm_status st = output_file_open(path, "the trace", OUTPUT_FILE_MODE, &t->out, err);
    if (st != LLM_OK) {
        free(t->path);
        free(t->buf);
        free(t);
        return st;
    }
    t->f = output_file_stream(t->out);
    setvbuf(t->f, t->buf, _IOFBF, TRACE_BUFFER);
    t->flushed_ms = clock_ms(); /* the first flush a second after the open */
    t->tok = tok;
    if (cfg) {
        t->cfg = *cfg;
        t->has_cfg = true;
    }
    t->with_attention = with_attention;
    *out = t;
    return LLM_OK;
}

void trace_set_pieces(trace_writer *t, trace_piece_fn fn, void *user)
{
    t->piece_fn = fn;
    t->piece_user = user;
}

/* id's piece: the tokenizer's, else piece_fn's, else "". */
static const char *piece_of(const trace_writer *t, int id)
{
    if (t->tok)
        return tokenizer_piece(t->tok, id);
    const char *p = t->piece_fn && id >= 0 ? t->piece_fn(t->piece_user, id) : NULL;
    return p ? p : "";
}

void trace_describe(trace_writer *t, const trace_run *run)
{
    t->run = *run;
    free(t->model_path);
    if (run->m && run->m->path) /* absolute, so that --replay finds it from anywhere */
        t->model_path = realpath(run->m->path, NULL);
    if (run->m && run->m->path && !t->model_path)
        t->model_path = strdup(run->m->path);
    t->has_sampler = run->sampler != NULL;
    if (run->sampler)
        t->sampler = *run->sampler;
    t->run.sampler = NULL;
}

/* Which of settings_table's rows a list of trace members holds. */
typedef enum {
    TRACE_RUN,      /* the header's options: every row with a trace key */
    TRACE_DECISION, /* a record's sampler object, before the decision: the sampler's rows
                       but the seed */
    TRACE_SEED,     /* ... and after it: the seed */
} trace_settings;

static bool in_list(const setting_info *row, trace_settings which, bool has_sampler)
{
    if (!row->trace_key)
        return false;
    switch (which) {
    case TRACE_RUN: return has_sampler || !settings_of_sampler(row);
    case TRACE_DECISION: return settings_of_sampler(row) && row->type != SETTING_SEED;
    case TRACE_SEED: return settings_of_sampler(row) && row->type == SETTING_SEED;
    }
    return false;
}

/* The settings of s that `which` holds as JSON members, each under its row's trace
 * key, in the table's order, the first after `sep`. Returns whether it wrote any. */
static bool write_settings(FILE *f, const live_settings *s, trace_settings which,
                           bool has_sampler, const char *sep)
{
    bool any = false;
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!in_list(row, which, has_sampler))
            continue;
        fprintf(f, "%s\"%s\":", any ? "," : sep, row->trace_key);
        char text[32];
        if (row->type == SETTING_NUMBER)
            put_float(f, settings_value(row, s), 6);
        else
            fputs(settings_value_text(row, s, text, sizeof text), f);
        any = true;
    }
    return any;
}

/* The model's architecture and, when any layer has one, each layer's sliding window. */
static void write_family(FILE *f, const model *m)
{
    const model_config *c = &m->config;
    fputs(",\"arch\":", f);
    json_write_string(f, c->arch.name ? c->arch.name : "llama");
    if (c->dn_layers > 0) { /* a hybrid: which layers are Gated DeltaNets, of how many heads */
        fprintf(f, ",\"dn_heads\":%d,\"recurrent\":[", c->dn_v_heads);
        for (int l = 0; l < c->n_layers; l++)
            fprintf(f, "%s%d", l ? "," : "", m->layers[l].kind == MODEL_LAYER_DELTA_NET);
        putc(']', f);
    }
    if (c->arch.sliding_window <= 0)
        return;
    fputs(",\"windows\":[", f);
    for (int l = 0; l < c->n_layers; l++)
        fprintf(f, "%s%d", l ? "," : "", m->layers[l].window);
    putc(']', f);
}

/* The first line: the format version and what the run was (see trace.h). */
static void write_header(trace_writer *t)
{
    FILE *f = t->f;
    const trace_run *r = &t->run;
    fprintf(f, "{\"llmchat_trace\":%d,\"program\":\"llmchat\",\"" JSON_RAW_BYTES_KEY
               "\":" JSON_RAW_BYTES_VALUE, TRACE_FORMAT_VERSION);
    if (r->mode) {
        fputs(",\"mode\":", f);
        json_write_string(f, r->mode);
    }
    if (t->has_cfg) {
        const model_config *c = &t->cfg;
        fputs(",\"model\":{", f);
        if (r->m) {
            fputs("\"path\":", f);
            json_write_string(f, t->model_path ? t->model_path : "");
            fputs(",\"name\":", f);
            json_write_string(f, r->m->name);
            fprintf(f, ",\"weights\":\"%s\",", model_weights_option(r->m));
            if (model_has_q8_blocks(r->m))
                fprintf(f, "\"panels\":\"%s\",", r->m->panel_bytes ? "on" : "off");
            if (model_has_k4_blocks(r->m))
                fprintf(f, "\"k4_panels\":\"%s\",", r->m->k4_panel_bytes ? "on" : "off");
        }
        fprintf(f, "\"dim\":%d,\"hidden_dim\":%d,\"n_layers\":%d,\"n_heads\":%d,"
                   "\"n_kv_heads\":%d,\"vocab_size\":%d,\"seq_len\":%d",
                c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
                c->seq_len);
        if (model_heads_max(c) != c->n_heads) /* a hybrid's: the records' heads a layer */
            fprintf(f, ",\"heads\":%d", model_heads_max(c));
        if (r->m)
            write_family(f, r->m);
        putc('}', f);
    }
    if (r->server) {
        fputs(",\"server\":{\"url\":", f);
        json_write_string(f, r->server);
        fputs(",\"api\":", f);
        json_write_string(f, r->server_api ? r->server_api : "");
        fputs(",\"model\":", f);
        json_write_string(f, r->server_model ? r->server_model : "");
        fprintf(f, ",\"ctx\":%d,\"n_vocab\":%d}", r->server_ctx, r->server_vocab);
    }
    if (r->kv_cache)
        fprintf(f, ",\"kv_cache\":\"%s\"", r->kv_cache);
    if (r->kernels)
        fprintf(f, ",\"kernels\":\"%s\"", r->kernels);
    if (r->template_name) {
        fputs(",\"template\":", f);
        json_write_string(f, r->template_name);
    }
    if (t->has_sampler || r->steps || r->ctx) {
        fputs(",\"options\":{", f);
        live_settings run = {.sampler = t->sampler, .steps = r->steps};
        bool any = write_settings(f, &run, TRACE_RUN, t->has_sampler, "");
        fprintf(f, "%s\"ctx\":%d}", any ? "," : "", r->ctx);
    }
    fprintf(f, ",\"attn\":%s,\"lens\":%s", t->with_attention ? "true" : "false",
            r->lens ? "true" : "false");
    if (r->tensors)
        fprintf(f, ",\"tensors\":[%d,%d]", r->tensor_first, r->tensor_last);
    else
        fputs(",\"tensors\":null", f);
    if (t->tok) {
        fputs(",\"vocab\":[", f);
        int n = tokenizer_vocab_size(t->tok);
        for (int i = 0; i < n; i++) {
            if (i)
                putc(',', f);
            json_write_string(f, tokenizer_piece(t->tok, i));
        }
        putc(']', f);
    }
    fputs("}\n", f);
    t->header_written = true;
}

static void write_sampler(FILE *f, const step_record *rec)
{
    const sampler_record *r = &rec->sampler;
    live_settings in_force = {.sampler = r->config};
    fputs(",\"sampler\":{", f);
    bool any = write_settings(f, &in_force, TRACE_DECISION, true, "");
    fprintf(f, "%s\"n_penalized\":%d,\"kept_top_k\":%d,\"kept_top_p\":%d,"
               "\"kept_min_p\":%d,\"greedy\":%s,\"draw\":",
            any ? "," : "", r->n_penalized, r->kept_top_k, r->kept_top_p, r->kept_min_p,
            r->greedy ? "true" : "false");
    put_float(f, r->draw, 9);
    fprintf(f, ",\"chosen\":%d,\"chosen_prob\":", r->chosen);
    put_float(f, r->chosen_prob, 9);
    fprintf(f, ",\"chosen_rank\":%d", r->chosen_rank);
    write_settings(f, &in_force, TRACE_SEED, true, ",");
    /* per candidate of "top": its final probability and the stage that removed it */
    int n_top = rec->n_top < 0 ? 0 : rec->n_top > STEP_TOP_MAX ? STEP_TOP_MAX : rec->n_top;
    fputs(",\"p_final\":[", f);
    for (int i = 0; i < n_top; i++) {
        if (i)
            putc(',', f);
        put_float(f, rec->top[i].p_final, 9);
    }
    fputs("],\"kept\":[", f);
    for (int i = 0; i < n_top; i++)
        fputs(i ? (rec->top[i].cut == SAMPLER_KEPT ? ",true" : ",false")
                : (rec->top[i].cut == SAMPLER_KEPT ? "true" : "false"), f);
    fputs("],\"cut\":[", f);
    for (int i = 0; i < n_top; i++) {
        if (i)
            putc(',', f);
        if (rec->top[i].cut == SAMPLER_KEPT)
            fputs("null", f);
        else
            fprintf(f, "\"%s\"", sampler_cut_name(rec->top[i].cut));
    }
    fputs("]}", f);
}

/* Writes x like printf's "%.6g" (6 significant digits, trailing zeros dropped,
 * exponent form below 1e-4 and from 1e6 on), or "null" when x is not finite, into
 * out (at least 16 bytes); returns the length. Attention rows hold up to
 * n_layers * n_heads * seq_len numbers per record, and printf costs several times
 * more than this. The last digit may differ from printf's in a rare tie. */
static int format_g6(char *out, float xf)
{
    double x = xf;
    if (!isfinite(x)) {
        memcpy(out, "null", 4);
        return 4;
    }
    if (x == 0.0) {
        out[0] = '0';
        return 1;
    }
    int o = 0;
    if (x < 0) {
        out[o++] = '-';
        x = -x;
    }
    int e = (int)floor(log10(x));
    long m = lrint(x * pow(10.0, 5 - e)); /* 6 digits: 100000..999999 */
    if (m >= 1000000) {
        e++;
        m = lrint(x * pow(10.0, 5 - e));
    } else if (m < 100000) {
        e--;
        m = lrint(x * pow(10.0, 5 - e));
    }
    char d[6];
    for (int i = 5; i >= 0; i--) {
        d[i] = (char)('0' + m % 10);
        m /= 10;
    }
    int nd = 6;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    if (e < -4 || e >= 6) {
        out[o++] = d[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = d[i];
        }
        out[o++] = 'e';
        out[o++] = e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae >= 100)
            out[o++] = (char)('0' + ae / 100);
        out[o++] = (char)('0' + ae / 10 % 10);
        out[o++] = (char)('0' + ae % 10);
    } else if (e >= 0) {
        for (int i = 0; i <= e; i++)
            out[o++] = d[i];
        if (nd > e + 1) {
            out[o++] = '.';
            for (int i = e + 1; i < nd; i++)
                out[o++] = d[i];
        }
    } else {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -e - 1; i++)
            out[o++] = '0';
        for (int i = 0; i < nd; i++)
            out[o++] = d[i];
    }
    return o;
}

/* "attn":[[[w...] per head] per layer] over key positions 0..pos, formatted in a
 * local buffer and written in blocks. */
static void write_attention(FILE *f, const float *attn, int n_layers, int n_heads, int n_keys)
{
    char buf[8192];
    int o = 0;
    fputs(",\"attn\":[", f);
    for (int l = 0; l < n_layers; l++) {
        buf[o++] = l ? ',' : '[';
        if (l)
            buf[o++] = '[';
        for (int h = 0; h < n_heads; h++) {
            if (o > (int)sizeof buf - 32) {
                fwrite(buf, 1, (size_t)o, f);
                o = 0;
            }
            buf[o++] = h ? ',' : '[';
            if (h)
                buf[o++] = '[';
            const float *row = attn + ((size_t)l * n_heads + h) * n_keys;
            for (int k = 0; k < n_keys; k++) {
                if (o > (int)sizeof buf - 32) {
                    fwrite(buf, 1, (size_t)o, f);
                    o = 0;
                }
                if (k)
                    buf[o++] = ',';
                o += format_g6(buf + o, row[k]);
            }
            buf[o++] = ']';
        }
        buf[o++] = ']';
    }
    buf[o++] = ']';
    fwrite(buf, 1, (size_t)o, f);
}

/* "lens":[{"top":[[id, prob], ...], "next_rank":int, "next_prob":float} per layer] */
static void write_lens(FILE *f, const step_lens_layer *lens, int n_layers)
{
    fputs(",\"lens\":[", f);
    for (int l = 0; l < n_layers; l++) {
        const step_lens_layer *L = &lens[l];
        fputs(l ? ",{\"top\":[" : "{\"top\":[", f);
        for (int j = 0, k = 0; j < STEP_LENS_TOP; j++) {
            if (L->id[j] < 0)
                continue;
            fprintf(f, k++ ? ",[%d," : "[%d,", L->id[j]);
            put_float(f, L->prob[j], 9);
            putc(']', f);
        }
        fprintf(f, "],\"next_rank\":%d,\"next_prob\":", L->next_rank);
        put_float(f, L->next_prob, 9);
        putc('}', f);
    }
    putc(']', f);
}

/* Writes n numbers of v, format_g6 each (null when not finite), as a JSON array. */
static void put_g6_array(FILE *f, const float *v, int n)
{
    char num[32];
    putc('[', f);
    for (int i = 0; i < n; i++) {
        if (i)
            putc(',', f);
        fwrite(num, 1, (size_t)format_g6(num, v[i]), f);
    }
    putc(']', f);
}

/* "tensors":[{"name","layer","shape","min","max","mean","l2","masked","first","hist"} per
 * step] */
static void write_tensors(FILE *f, const step_tensor *s, int n)
{
    fputs(",\"tensors\":[", f);
    for (int i = 0; i < n; i++) {
        const step_tensor *x = &s[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_write_string(f, x->name);
        fprintf(f, ",\"layer\":%d,\"shape\":[%d", x->layer, x->shape[0]);
        if (x->n_dims == 2)
            fprintf(f, ",%d", x->shape[1]);
        fputs("]", f);
        const char *names[] = {"min", "max", "mean", "l2"};
        const float vals[] = {x->min, x->max, x->mean, x->l2};
        for (int k = 0; k < 4; k++) {
            char num[32];
            fprintf(f, ",\"%s\":", names[k]);
            fwrite(num, 1, (size_t)format_g6(num, vals[k]), f);
        }
        fprintf(f, ",\"masked\":%d,\"first\":", x->n_masked);
        put_g6_array(f, x->first, x->n_first);
        fputs(",\"hist\":[", f);
        for (int b = 0; b < STEP_TENSOR_BINS; b++)
            fprintf(f, b ? ",%u" : "%u", x->hist[b]);
        fputs("]}", f);
    }
    putc(']', f);
}

/* What a record ran with (control vectors, knocked-out heads and experts, experts
 * forced; NULL: none ever set, an empty object), when it differs from the last record's:
 * ,"steer":{...} (intervention_json.h;
 * heads_reset, experts_out and experts_forced only when there are some, so a dense
 * model's traces are as they were). */
static void write_intervention(trace_writer *t, const intervention *in)
{
    static const intervention none = {.first_layer = -1, .last_layer = -1};
    t->intervention = in;
    fputs(",\"steer\":", t->f);
    intervention_write_json(t->f, in ? in : &none);
}

llm_status trace_write(trace_writer *t, const step_record *rec)
{
    if (t->write_errno)
        return LLM_ERR_IO;
    FILE *f = t->f;
    if (!t->header_written)
        write_header(t);
    fprintf(f, "{\"pos\":%d,\"token\":%d,\"piece\":", rec->pos, rec->token);
    json_write_string(f, piece_of(t, rec->token));
    fprintf(f, ",\"phase\":\"%s\",\"next\":%d,\"next_prob\":", step_phase_name(rec->phase),
            rec->next);
    put_float(f, rec->next_prob, 9);
    fprintf(f, ",\"next_rank\":%d,\"entropy\":", rec->next_rank);
    put_float(f, rec->entropy, 6);
    fprintf(f, ",\"top\":[");
    int n_top = rec->n_top < 0 ? 0 : rec->n_top > STEP_TOP_MAX ? STEP_TOP_MAX : rec->n_top;
    for (int i = 0; i < n_top; i++) {
        fprintf(f, i ? ",[%d," : "[%d,", rec->top[i].id);
        put_float(f, rec->top[i].logit, 9);
        putc(',', f);
        put_float(f, rec->top[i].prob, 9);
        putc(']', f);
    }
    putc(']', f);
    if (!t->tok && t->piece_fn) {
        fputs(",\"top_pieces\":[", f);
        for (int i = 0; i < n_top; i++) {
            if (i)
                putc(',', f);
            json_write_string(f, piece_of(t, rec->top[i].id));
        }
        putc(']', f);
    }
    if (rec->sampled)
        write_sampler(f, rec);
    else
        fputs(",\"sampler\":null", f);
    fputs(",\"ms\":", f);
    put_float(f, rec->forward_ms + rec->sample_ms, 6);
    fprintf(f, ",\"batch\":%s", rec->batch ? "true" : "false");
    if (rec->guessed)
        fprintf(f, ",\"guess\":%d", rec->guess);
    if (t->with_attention && rec->attn && t->has_cfg && rec->pos >= 0)
        write_attention(f, rec->attn, t->cfg.n_layers, model_heads_max(&t->cfg), rec->pos + 1);
    if (t->run.lens && rec->lens && t->has_cfg)
        write_lens(f, rec->lens, t->cfg.n_layers);
    if (t->run.tensors && rec->tensors && rec->n_tensors > 0)
        write_tensors(f, rec->tensors, rec->n_tensors);
    if (rec->intervention != t->intervention) /* NULL after a state: none, written empty */
        write_intervention(t, rec->intervention);
    fputs("}\n", f);
    double now = clock_ms();
    if (now - t->flushed_ms >= TRACE_FLUSH_MS) {
        fflush(f);
        t->flushed_ms = now;
    }
    note_error(t);
    return t->write_errno ? LLM_ERR_IO : LLM_OK;
}

void trace_flush(trace_writer *t)
{
    if (!t || t->write_errno)
        return;
    fflush(t->f);
    t->flushed_ms = clock_ms();
    note_error(t);
}

llm_status trace_write_patch(trace_writer *t, const patch_spec *s, const patch_result *r,
                             const int *clean, const int *corrupt, int n)
{
    if (t->write_errno)
        return LLM_ERR_IO;
    FILE *f = t->f;
    if (!t->header_written)
        write_header(t);
    const char *site = patch_site_name(s->site);
    fprintf(f, "{\"patch\":{\"site\":\"%s\",\"metric\":\"%s\",\"layers\":[%d,%d]",
            site ? site : "?", s->metric == PATCH_KL ? "kl" : "logit_diff", s->layer_first,
            s->layer_last);
    for (int k = 0; k < 2; k++) {
        const int *ids = k ? corrupt : clean;
        fputs(k ? ",\"corrupt_ids\":[" : ",\"ids\":[", f);
        for (int i = 0; i < n; i++)
            fprintf(f, i ? ",%d" : "%d", ids[i]);
        putc(']', f);
    }
    if (s->metric == PATCH_KL)
        fputs(",\"answer\":null,\"wrong\":null", f);
    else
        fprintf(f, ",\"answer\":%d,\"wrong\":%d", r->answer, r->wrong);
    fputs(",\"clean\":", f);
    put_float(f, r->clean, 9);
    fputs(",\"corrupt\":", f);
    put_float(f, r->corrupt, 9);
    fprintf(f, ",\"rows\":%d,\"cols\":%d,\"grid\":[", r->rows, r->cols);
    for (int row = 0; row < r->rows; row++) {
        fputs(row ? ",[" : "[", f);
        for (int c = 0; c < r->cols; c++) {
            if (c)
                putc(',', f);
            put_float(f, r->grid[(size_t)row * r->cols + c], 9);
        }
        putc(']', f);
    }
    fprintf(f, "],\"runs\":%d,\"positions_run\":%ld}}\n", r->runs, r->positions_run);
    note_error(t);
    return t->write_errno ? LLM_ERR_IO : LLM_OK;
}

void trace_observe(void *user, const step_record *rec)
{
    trace_write((trace_writer *)user, rec); /* an error is kept in the trace for trace_close */
}

static void free_writer(trace_writer *t)
{
    free(t->buf);
    free(t->path);
    free(t->model_path);
    free(t);
}

bool trace_has_records(const trace_writer *t)
{
    return t && t->header_written; /* the header goes out with the first record */
}

void trace_abandon(trace_writer *t)
{
    if (!t)
        return;
    output_file_abandon(t->out);
    free_writer(t);
}

llm_status trace_close(trace_writer *t, llm_err *err)
{
    if (!t)
        return LLM_OK;
    if (!t->header_written && !t->write_errno)
        write_header(t);
    errno = 0;
    if (fflush(t->f) != 0)
        note_error(t);
    llm_status st = LLM_OK;
    if (t->write_errno) {
        output_file_abandon(t->out);
        st = llm_fail(err, LLM_ERR_IO, "%s: writing the trace failed: %s (nothing was written)",
                      t->path, strerror(t->write_errno));
    } else {
        st = output_file_commit(t->out, err);
    }
    free_writer(t);
    return st;
}
