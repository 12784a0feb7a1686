/* intervention_json.c — an intervention as JSON, both ways (see intervention_json.h).
 *
 * A read or copied intervention is one malloc'd block: the record, then its vectors,
 * experts knocked out, experts forced, heads out, heads reset, then the vectors' name
 * and path strings. No printing but to the FILE it is given. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "intervention_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { UNKNOWN_SHAPE = 4096 };

void intervention_write_json(FILE *f, const intervention *in)
{
    fputs("{\"vectors\":[", f);
    for (int i = 0; i < in->n_vectors; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_write_string(f, in->vectors[i].name);
        fputs(",\"path\":", f);
        json_write_string(f, in->vectors[i].path);
        if (isfinite(in->vectors[i].scale))
            fprintf(f, ",\"scale\":%.9g", (double)in->vectors[i].scale);
        else
            fputs(",\"scale\":null", f);
        if (in->vectors[i].fnv1a)
            fprintf(f, ",\"fnv1a64\":\"%016llx\"", (unsigned long long)in->vectors[i].fnv1a);
        putc('}', f);
    }
    if (in->first_layer < 0)
        fputs("],\"layers\":null", f);
    else
        fprintf(f, "],\"layers\":[%d,%d]", in->first_layer, in->last_layer);
    fputs(",\"heads_out\":[", f);
    for (int i = 0; i < in->n_heads_out && in->n_heads > 0; i++)
        fprintf(f, "%s[%d,%d]", i ? "," : "", in->heads_out[i] / in->n_heads,
                in->heads_out[i] % in->n_heads);
    putc(']', f);
    for (int i = 0; i < in->n_heads_reset && in->n_heads > 0; i++)
        fprintf(f, "%s[%d,%d]", i ? "," : ",\"heads_reset\":[", in->heads_reset[i] / in->n_heads,
                in->heads_reset[i] % in->n_heads);
    if (in->n_heads_reset && in->n_heads > 0)
        putc(']', f);
    for (int i = 0; i < in->n_experts_out; i++)
        fprintf(f, "%s[%d,%d]", i ? "," : ",\"experts_out\":[", in->experts_out[i].layer,
                in->experts_out[i].expert);
    if (in->n_experts_out)
        putc(']', f);
    for (int i = 0; i < in->n_experts_forced; i++)
        fprintf(f, "%s[%d,%d]", i ? "," : ",\"experts_forced\":[", in->experts_forced[i].layer,
                in->experts_forced[i].expert);
    fputs(in->n_experts_forced ? "]}" : "}", f);
}

/* ---- reading ---- */

static int length(const json_value *v)
{
    return v && v->type == JSON_ARRAY && v->count <= (size_t)INT32_MAX ? (int)v->count : 0;
}

static bool int_in(const json_value *v, long min, long max, long *out)
{
    int x;
    if (!json_as_int(v, &x) || x < min || x > max)
        return false;
    *out = x;
    return true;
}

static const char *get_string(const json_value *obj, const char *key)
{
    const char *s;
    return json_as_string(json_get(obj, key), &s) ? s : NULL;
}

/* A vector's "fnv1a64" (16 hex digits) into *out; 0 when it has none (traces before it).
 * False when it is there but not a checksum. */
static bool checksum_of(const json_value *vector, uint64_t *out)
{
    *out = 0;
    const json_value *v = json_get(vector, "fnv1a64");
    if (!v)
        return true;
    const char *hex;
    if (!json_as_string(v, &hex) || strlen(hex) != 16)
        return false;
    for (const char *c = hex; *c; c++) {
        int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        *out = *out << 4 | (uint64_t)d;
    }
    return true;
}

/* Each item of list is [a, b] with a in [0, max_a) and b in [0, max_b]. */
static bool pairs_ok(const json_value *list, long max_a, long max_b)
{
    for (int i = 0; i < length(list); i++) {
        const json_value *p = &list->items[i];
        long a, b;
        if (length(p) != 2 || !int_in(&p->items[0], 0, max_a - 1, &a) ||
            !int_in(&p->items[1], 0, max_b, &b))
            return false;
    }
    return true;
}

static void pair_at(const json_value *list, int i, int *a, int *b)
{
    long x = 0, y = 0;
    int_in(&list->items[i].items[0], 0, 1L << 30, &x);
    int_in(&list->items[i].items[1], 0, 1L << 30, &y);
    *a = (int)x;
    *b = (int)y;
}

/* Room for the block of an intervention of these counts and string bytes. */
static size_t block_bytes(int n_vectors, int n_experts, int n_heads, size_t strings)
{
    return sizeof(intervention) + sizeof(intervention_vector) * (size_t)n_vectors +
           sizeof(intervention_expert) * (size_t)n_experts + sizeof(int) * (size_t)n_heads +
           strings;
}

/* Lays out a block's arrays after its record; the strings' space is after the heads. */
static char *lay_out(intervention *in, int nv, int ne, int nf, int nh, int nr)
{
    in->n_vectors = nv;
    in->vectors = (intervention_vector *)(in + 1);
    in->n_experts_out = ne;
    in->experts_out = (intervention_expert *)(in->vectors + nv);
    in->n_experts_forced = nf;
    in->experts_forced = in->experts_out + ne;
    in->n_heads_out = nh;
    in->heads_out = (int *)(in->experts_forced + nf);
    in->n_heads_reset = nr;
    in->heads_reset = in->heads_out + nh;
    return (char *)(in->heads_reset + nr);
}

static char *put_string(char **s, const char *text)
{
    size_t len = strlen(text) + 1;
    char *at = *s;
    memcpy(at, text, len);
    *s += len;
    return at;
}

intervention *intervention_read_json(const json_value *v, int n_layers, int n_heads, bool *nomem)
{
    *nomem = false;
    const json_value *list = json_get(v, "vectors"), *layers = json_get(v, "layers");
    const json_value *heads = json_get(v, "heads_out"), *reset = json_get(v, "heads_reset");
    const json_value *experts = json_get(v, "experts_out"), *forced = json_get(v, "experts_forced");
    long L = n_layers > 0 ? n_layers : UNKNOWN_SHAPE, H = n_heads > 0 ? n_heads : UNKNOWN_SHAPE;
    long first = -1, last = -1;
    if (!v || v->type != JSON_OBJECT || !list || list->type != JSON_ARRAY || !heads ||
        heads->type != JSON_ARRAY || !layers)
        return NULL;
    if (layers->type != JSON_NULL &&
        !(length(layers) == 2 && int_in(&layers->items[0], 0, L - 1, &first) &&
          int_in(&layers->items[1], first, L - 1, &last)))
        return NULL;
    if ((experts && experts->type != JSON_ARRAY) || (forced && forced->type != JSON_ARRAY) ||
        (reset && reset->type != JSON_ARRAY))
        return NULL;
    /* a reset head is out whether heads_out lists it or not */
    if (!pairs_ok(heads, L, H - 1) || !pairs_ok(reset, L, H - 1) ||
        !pairs_ok(experts, L, 1L << 20) || !pairs_ok(forced, L, 1L << 20))
        return NULL;
    int nv = length(list), nh = length(heads), nr = length(reset), ne = length(experts);
    int nf = length(forced);
    size_t strings = 0;
    for (int i = 0; i < nv; i++) {
        const json_value *e = &list->items[i];
        const char *name = get_string(e, "name"), *path = get_string(e, "path");
        double scale;
        uint64_t sum;
        if (!name || !path || !json_as_double(json_get(e, "scale"), &scale) || !isfinite(scale) ||
            fabs(scale) > 1e6 || !checksum_of(e, &sum))
            return NULL;
        strings += strlen(name) + strlen(path) + 2;
    }
    intervention *in = malloc(block_bytes(nv, ne + nf, nh + nr, strings));
    if (!in) {
        *nomem = true;
        return NULL;
    }
    char *s = lay_out(in, nv, ne, nf, nh, nr);
    in->first_layer = (int)first;
    in->last_layer = (int)last;
    in->n_heads = (int)H;
    for (int i = 0; i < ne; i++)
        pair_at(experts, i, &in->experts_out[i].layer, &in->experts_out[i].expert);
    for (int i = 0; i < nf; i++)
        pair_at(forced, i, &in->experts_forced[i].layer, &in->experts_forced[i].expert);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? nr : nh); i++) {
            int l, h;
            pair_at(k ? reset : heads, i, &l, &h);
            (k ? in->heads_reset : in->heads_out)[i] = (int)(l * H + h);
        }
    for (int i = 0; i < nv; i++) {
        const json_value *e = &list->items[i];
        double scale = 0;
        json_as_double(json_get(e, "scale"), &scale);
        in->vectors[i].scale = (float)scale;
        checksum_of(e, &in->vectors[i].fnv1a);
        in->vectors[i].name = put_string(&s, get_string(e, "name"));
        in->vectors[i].path = put_string(&s, get_string(e, "path"));
    }
    return in;
}

/* in as the JSON above, malloc'd; NULL on no memory. */
static char *json_text(const intervention *in)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return NULL;
    intervention_write_json(f, in);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

bool intervention_same(const intervention *a, const intervention *b)
{
    if (a == b)
        return true;
    if (intervention_is_empty(a) || intervention_is_empty(b))
        return intervention_is_empty(a) && intervention_is_empty(b);
    char *ta = json_text(a), *tb = json_text(b);
    bool same = ta && tb && !strcmp(ta, tb);
    free(ta);
    free(tb);
    return same;
}

bool intervention_is_empty(const intervention *in)
{
    return !in || (in->n_vectors == 0 && in->n_heads_out == 0 && in->n_heads_reset == 0 &&
                   in->n_experts_out == 0 && in->n_experts_forced == 0);
}

intervention *intervention_copy(const intervention *in, const char *const *paths)
{
    size_t strings = 0;
    for (int i = 0; i < in->n_vectors; i++)
        strings += strlen(in->vectors[i].name) + strlen(paths ? paths[i] : in->vectors[i].path) + 2;
    intervention *out = malloc(block_bytes(in->n_vectors, in->n_experts_out + in->n_experts_forced,
                                           in->n_heads_out + in->n_heads_reset, strings));
    if (!out)
        return NULL;
    char *s = lay_out(out, in->n_vectors, in->n_experts_out, in->n_experts_forced,
                      in->n_heads_out, in->n_heads_reset);
    out->first_layer = in->first_layer;
    out->last_layer = in->last_layer;
    out->n_heads = in->n_heads;
    for (int i = 0; i < in->n_experts_out; i++)
        out->experts_out[i] = in->experts_out[i];
    for (int i = 0; i < in->n_experts_forced; i++)
        out->experts_forced[i] = in->experts_forced[i];
    for (int i = 0; i < in->n_heads_out; i++)
        out->heads_out[i] = in->heads_out[i];
    for (int i = 0; i < in->n_heads_reset; i++)
        out->heads_reset[i] = in->heads_reset[i];
    for (int i = 0; i < in->n_vectors; i++) {
        out->vectors[i] = in->vectors[i];
        out->vectors[i].name = put_string(&s, in->vectors[i].name);
        out->vectors[i].path = put_string(&s, paths ? paths[i] : in->vectors[i].path);
    }
    return out;
}
