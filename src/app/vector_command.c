/* vector_command.c — /vector's words, parsed and run on an engine (vector_command.h).
 *
 * Owns nothing beyond a call: the argument is split into words (double quotes group
 * blanks, a backslash escapes the next character), the engine's steering does the
 * rest. */
#define _POSIX_C_SOURCE 200809L
#include "vector_command.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_vector.h"
#include "steering.h"

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

static bool parse_scale(const char *s, float *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(d))
        return false;
    *out = (float)d;
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

/* NAME.gguf, or NAME itself when it ends in .gguf, into path; the vector's name
 * (the base name without .gguf) into name. */
static void make_paths(const char *arg, char *path, size_t psize, char *name, size_t nsize)
{
    size_t n = strlen(arg);
    bool has_ext = n > 5 && !strcmp(arg + n - 5, ".gguf");
    snprintf(path, psize, "%s%s", arg, has_ext ? "" : ".gguf");
    const char *base = strrchr(arg, '/');
    base = base ? base + 1 : arg;
    size_t bn = strlen(base) - (has_ext ? 5 : 0);
    snprintf(name, nsize, "%.*s", (int)bn, base);
}

static llm_status make(engine *e, const char *target, const char *text_a, const char *text_b,
                       llm_err *err)
{
    const tokenizer *tok = engine_tokenizer(e);
    const model *m = engine_model(e);
    if (!tok)
        return llm_fail(err, LLM_ERR_ARG, "/vector make needs a tokenizer");
    char path[4096], name[80];
    make_paths(target, path, sizeof path, name, sizeof name);
    int na = 0, nb = 0;
    int *a = encode(tok, text_a, &na, err);
    int *b = a ? encode(tok, text_b, &nb, err) : NULL;
    control_vector *cv = NULL;
    llm_status st = a && b ? LLM_OK : LLM_ERR_ARG;
    if (st == LLM_OK)
        st = control_vector_make(m, tokenizer_bos(tok), a, na, b, nb, &cv, err);
    free(a);
    free(b);
    if (st == LLM_OK)
        st = control_vector_write(cv, path, "llama", err);
    if (st == LLM_OK) /* what a trace records of the file, to tell a later one apart */
        st = control_vector_hash_file(path, &cv->fnv1a, err);
    if (st != LLM_OK) {
        control_vector_free(cv);
        return st;
    }
    return steering_add(engine_steering(e), name, path, cv, 1.0f, err);
}

static llm_status layers(steering *s, const char *v, llm_err *err)
{
    if (!strcmp(v, "all"))
        return steering_layers(s, -1, -1, err);
    int first, last;
    char tail;
    if (sscanf(v, "%d-%d%c", &first, &last, &tail) != 2)
        return llm_fail(err, LLM_ERR_ARG, "/vector layers takes FIRST-LAST or all, got '%s'", v);
    return steering_layers(s, first, last, err);
}

static llm_status run_words(engine *e, const char **w, int n, llm_err *err)
{
    steering *s = engine_steering(e);
    float scale = 1.0f;
    if (n == 0)
        return LLM_OK;
    if (!strcmp(w[0], "load") && (n == 2 || n == 3)) {
        if (n == 3 && !parse_scale(w[2], &scale))
            return llm_fail(err, LLM_ERR_ARG, "/vector load FILE SCALE: '%s' is not a number", w[2]);
        return steering_load(s, w[1], NULL, scale, err);
    }
    if (!strcmp(w[0], "drop") && n == 2)
        return steering_drop(s, w[1], err);
    if (!strcmp(w[0], "layers") && n == 2)
        return layers(s, w[1], err);
    if (!strcmp(w[0], "make") && n == 4)
        return make(e, w[1], w[2], w[3], err);
    if (n == 2 && parse_scale(w[1], &scale))
        return steering_rescale(s, w[0], scale, err);
    return llm_fail(err, LLM_ERR_ARG,
                    "/vector takes: load FILE [SCALE], NAME SCALE, drop NAME, layers FIRST-LAST|all, "
                    "make NAME \"TEXT A\" \"TEXT B\"");
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
    if (!split_words(arg, buf, w, &n))
        st = llm_fail(err, LLM_ERR_ARG, "/vector: an unclosed quote, or too many words");
    else
        st = run_words(e, w, n, err);
    free(buf);
    if (st != LLM_OK)
        return st;
    /* a vector with layers the model lacks: say so first, then the state */
    const char *notice = steering_notice(engine_steering(e));
    size_t o = *notice && size ? (size_t)snprintf(msg, size, "%s. ", notice) : 0;
    if (o < size)
        vector_describe(e, msg + o, size - o);
    return st;
}
