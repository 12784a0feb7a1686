/* vector_command.c — /vector's words, parsed and run on an engine (vector_command.h).
 *
 * Owns nothing beyond a call: the argument is split into words (double quotes group
 * blanks, a backslash escapes the next character), the engine's steering does the
 * rest. */
#define _POSIX_C_SOURCE 200809L
#include "vector_command.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_vector.h"
#include "output_file.h"
#include "parse_number.h"
#include "steering.h"
#include "vector_files.h"

enum { MAX_WORDS = 5, TEXT_MAX_TOKENS = 4096 };

/* Splits s into at most MAX_WORDS words in buf (NUL-separated); *n their count.
 * Returns false on an unclosed quote or too many words. */
static bool split_words(const char *s, char *buf, const char **w, int *n)
{
    *n = 0;
    char *o = buf;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        if (*n == MAX_WORDS)
            return false;
        w[(*n)++] = o;
        bool quoted = false;
        for (; *s && (quoted || (*s != ' ' && *s != '\t')); s++) {
            if (*s == '"')
                quoted = !quoted;
            else if (*s == '\\' && s[1])
                *o++ = *++s;
            else
                *o++ = *s;
        }
        *o++ = '\0';
        if (quoted)
            return false;
    }
    return true;
}

void vector_describe(const engine *e, char *msg, size_t size)
{
    const intervention *in = engine_intervention(e);
    if (!in || in->n_vectors == 0) {
        snprintf(msg, size, "no control vectors (/vector load FILE [SCALE] reads one)");
        return;
    }
    size_t o = (size_t)snprintf(msg, size, "control vectors:");
    for (int i = 0; i < in->n_vectors && o < size; i++)
        o += (size_t)snprintf(msg + o, size - o, "%s %s %.2f (%s)", i ? "," : "",
                              in->vectors[i].name, in->vectors[i].scale, in->vectors[i].path);
    if (o >= size)
        return;
    if (in->first_layer < 0)
        snprintf(msg + o, size - o, "; after every layer");
    else
        snprintf(msg + o, size - o, "; after layers %d-%d", in->first_layer, in->last_layer);
}

/* Tokens of text (no BOS) into a malloc'd array; NULL with err. */
static int *encode(const tokenizer *tok, const char *text, int *n, llm_err *err)
{
    int need = tokenizer_encode(tok, text, NULL, 0);
    if (need < 1) {
        llm_fail(err, LLM_ERR_ARG, "/vector make: each text needs at least one token");
        return NULL;
    }
    if (need > TEXT_MAX_TOKENS) {
        llm_fail(err, LLM_ERR_ARG, "/vector make: a text of %d tokens is too long (at most %d)",
                 need, TEXT_MAX_TOKENS);
        return NULL;
    }
    int *ids = malloc(sizeof(int) * (size_t)need);
    if (!ids) {
        llm_fail(err, LLM_ERR_NOMEM, "out of memory for /vector make");
        return NULL;
    }
    *n = tokenizer_encode(tok, text, ids, need);
    return ids;
}

/* The scale /vector make applies a vector d with: the one that makes it, on average over
 * the layers it has (1..), VECTOR_MAKE_FRACTION of the mean norm of the residual stream
 * there (resid_norm, over the two texts), rounded to two significant digits. A vector
 * as large as that difference itself (scale 1) swamps a small model's residual stream
 * layer after layer until it writes one letter over and over (docs/debugging.md). 1
 * when the texts' streams do not differ. */
static float default_scale(const control_vector *cv, const float *resid_norm)
{
    double ratio = 0.0;
    int n = 0;
    for (int l = 1; l < cv->n_layers; l++) {
        const float *row = cv->data + (size_t)l * cv->n_embd;
        double sq = 0.0;
        for (int i = 0; i < cv->n_embd; i++)
            sq += (double)row[i] * row[i];
        if (resid_norm[l] > 0.0f) {
            ratio += sqrt(sq) / resid_norm[l];
            n++;
        }
    }
    if (n == 0 || ratio <= 0.0)
        return 1.0f;
    double s = VECTOR_MAKE_FRACTION * n / ratio;
    double unit = pow(10.0, floor(log10(s)) - 1.0); /* two significant digits */
    return (float)(round(s / unit) * unit);
}

/* Whether make may write path for vector `name`, before anything is computed: a name a
 * vector can have and none loaded has; a place that is no file this run reads (nor a
 * directory); and, for a bare name, no vector made before unless `replace` says so. */
static llm_status make_allowed(const steering *s, const char *target, const char *path,
                               const char *name, bool replace, llm_err *err)
{
    llm_err why;
    llm_status st = steering_name_check(name, &why);
    if (st != LLM_OK)
        return llm_fail(err, st, "/vector make: %s", why.text);
    if (steering_has(s, name))
        return llm_fail(err, LLM_ERR_ARG, "/vector make: a control vector called '%s' is loaded "
                        "already (/vector drop %s first)", name, name);
    if (!strchr(target, '/') && !replace && access(path, F_OK) == 0)
        return llm_fail(err, LLM_ERR_ARG, "/vector make: %s exists (a vector made before): "
                        "/vector make --replace %s ... writes over it", path, target);
    if ((st = output_file_check(path, "the control vector", &why)) != LLM_OK)
        return llm_fail(err, st, "/vector make: %s", why.text);
    return LLM_OK;
}

static llm_status make(engine *e, const char *target, bool replace, const char *text_a,
                       const char *text_b, char *said, size_t size, llm_err *err)
{
    const tokenizer *tok = engine_tokenizer(e);
    const model *m = engine_model(e);
    if (!tok)
        return llm_fail(err, LLM_ERR_ARG, "/vector make needs a tokenizer");
    char path[4096 + 256], name[80];
    llm_status st = vector_files_make_path(target, path, sizeof path, name, sizeof name, err);
    if (st == LLM_OK)
        st = make_allowed(engine_steering(e), target, path, name, replace, err);
    if (st != LLM_OK)
        return st;
    float *norms = calloc((size_t)m->config.n_layers, sizeof *norms);
    int na = 0, nb = 0;
    int *a = norms ? encode(tok, text_a, &na, err) : NULL;
    int *b = a ? encode(tok, text_b, &nb, err) : NULL;
    control_vector *cv = NULL;
    st = a && b ? LLM_OK : norms ? LLM_ERR_ARG : llm_fail(err, LLM_ERR_NOMEM, "out of memory for /vector make");
    if (st == LLM_OK)
        st = control_vector_make(m, tokenizer_bos(tok), a, na, b, nb, &cv, norms, err);
    free(a);
    free(b);
    float scale = st == LLM_OK ? default_scale(cv, norms) : 1.0f;
    free(norms);
    if (st == LLM_OK) {
        cv->suggested_scale = scale; /* /vector load and --control-vector apply it so again */
        st = control_vector_write(cv, path, "llama", err);
        if (st == LLM_OK) /* what a trace records of the file, to tell a later one apart */
            st = control_vector_hash_file(path, &cv->fnv1a, err);
    }
    if (st != LLM_OK) {
        control_vector_free(cv);
        return st;
    }
    snprintf(said, size, ". %s was made from the two texts and written there; scale %.2g makes "
             "it %.0f%% of the residual stream's norm after each layer (/vector %s SCALE changes it)",
             name, scale, 100.0 * VECTOR_MAKE_FRACTION, name);
    return steering_add(engine_steering(e), name, path, cv, scale, err);
}

/* /vector load's file: as given, or a bare name from the vectors directory. */
static llm_status load(steering *s, const char *arg, float scale, llm_err *err)
{
    char path[4096 + 256];
    vector_files_find(arg, path, sizeof path);
    llm_status st = steering_load(s, path, NULL, scale, err);
    if (st == LLM_ERR_IO && !strcmp(path, arg) && !strchr(arg, '/')) {
        char dir[4096];
        size_t n = strlen(err->text);
        if (vector_files_dir(dir, sizeof dir))
            snprintf(err->text + n, sizeof err->text - n, " (nor is there one in %s)", dir);
    }
    return st;
}

static llm_status layers(steering *s, const char *v, llm_err *err)
{
    if (!strcmp(v, "all"))
        return steering_layers(s, -1, -1, err);
    int first, last;
    if (!parse_index_range(v, INT_MAX, &first, &last))
        return llm_fail(err, LLM_ERR_ARG, "/vector layers takes FIRST-LAST (from 0, FIRST <= "
                        "LAST) or all, got '%s'", v);
    return steering_layers(s, first, last, err);
}

/* Runs the words; what make wrote goes to said (size bytes), else "". */
static llm_status run_words(engine *e, const char **w, int n, char *said, size_t size, llm_err *err)
{
    steering *s = engine_steering(e);
    float scale = NAN; /* load: the file's suggested scale, else 1 */
    if (n == 0)
        return LLM_OK;
    if (!strcmp(w[0], "load") && (n == 2 || n == 3)) {
        if (n == 3 && !parse_float(w[2], &scale))
            return llm_fail(err, LLM_ERR_ARG, "/vector load FILE SCALE: '%s' is not a number", w[2]);
        return load(s, w[1], scale, err);
    }
    if (!strcmp(w[0], "drop") && n == 2)
        return steering_drop(s, w[1], err);
    if (!strcmp(w[0], "layers") && n == 2)
        return layers(s, w[1], err);
    if (!strcmp(w[0], "make") && n == 4)
        return make(e, w[1], false, w[2], w[3], said, size, err);
    if (!strcmp(w[0], "make") && n == 5 && !strcmp(w[1], "--replace"))
        return make(e, w[2], true, w[3], w[4], said, size, err);
    if (n == 2 && parse_float(w[1], &scale))
        return steering_rescale(s, w[0], scale, err);
    return llm_fail(err, LLM_ERR_ARG,
                    "/vector takes: load FILE [SCALE], NAME SCALE, drop NAME, layers FIRST-LAST|all, "
                    "make [--replace] NAME \"TEXT A\" \"TEXT B\"");
}

llm_status vector_command(engine *e, const char *arg, char *msg, size_t size, llm_err *err)
{
    size_t len = strlen(arg);
    char *buf = malloc(len + MAX_WORDS + 1);
    if (!buf)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory for /vector");
    const char *w[MAX_WORDS];
    int n;
    llm_status st;
    char said[400] = "";
    if (!split_words(arg, buf, w, &n))
        st = llm_fail(err, LLM_ERR_ARG, "/vector: an unclosed quote, or too many words");
    else
        st = run_words(e, w, n, said, sizeof said, err);
    free(buf);
    if (st == LLM_OK) {
        /* a vector with layers the model lacks: say so first, then the state, then what
         * make has to say */
        const char *notice = steering_notice(engine_steering(e));
        size_t o = *notice && size ? (size_t)snprintf(msg, size, "%s. ", notice) : 0;
        if (o < size)
            vector_describe(e, msg + o, size - o);
        size_t shown = strnlen(msg, size);
        snprintf(msg + shown, size - shown, "%s", said);
    }
    return st;
}
