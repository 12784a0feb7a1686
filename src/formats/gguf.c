/* gguf.c — the GGUF reader (see gguf.h; the writer is gguf_write.c).
 *
 * Layout of a file (all little-endian): "GGUF", uint32 version, uint64 tensor count,
 * uint64 metadata count; the metadata as (string key, uint32 value type, value);
 * the tensor descriptions as (string name, uint32 n_dims, uint64 dims[n_dims],
 * uint32 ggml type, uint64 offset); zero padding to the alignment; the data section,
 * where each tensor starts at its offset (a multiple of the alignment). A string is a
 * uint64 length and that many bytes; an array a uint32 element type, a uint64 count
 * and the elements (arrays may hold arrays).
 *
 * Parsing reads the metadata and tensor descriptions twice: the first walk checks
 * everything and counts what the index needs, the second fills the index, so the
 * memory allocated is proportional to what the file really holds, never to a count it
 * claims. Owns the index; borrows the buffer. */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"

enum {
    GGUF_MAX_NESTING = 16,      /* arrays inside arrays, deeper is refused */
    MSG_NAME_MAX = 64,          /* bytes of a key or name quoted in a message */
    GGUF_MAX_ALIGNMENT = 1 << 20,
};

/* ---- little-endian reads ---- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Bytes of one value of a fixed-size type; 0 for strings and arrays. */
static size_t scalar_bytes(uint32_t type)
{
    switch (type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    }
    return 0;
}

const char *gguf_type_name(uint32_t type)
{
    static const char *const names[GGUF_TYPE_COUNT] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
        "string", "array", "uint64", "int64", "float64",
    };
    return type < GGUF_TYPE_COUNT ? names[type] : "unknown type";
}

/* ---- the parsed file ---- */

typedef struct {
    const char *key;               /* NUL-terminated, in blob */
    uint32_t type;
    const unsigned char *value;    /* the value's first byte in the buffer */
    const unsigned char *end;      /* one past its last byte */
    const char *str;               /* string values: NUL-terminated copy in blob */
    uint64_t str_len;
} kv_entry;

struct gguf {
    const unsigned char *buf;
    size_t size;
    uint32_t version, alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    kv_entry *kv;              /* (n_kv) in file order */
    uint64_t *kv_sorted;       /* (n_kv) indices of kv sorted by key */
    uint64_t n_tensors;
    gguf_tensor *tensors;      /* (n_tensors) in file order */
    uint64_t *tensor_sorted;   /* (n_tensors) indices sorted by name */
    char *blob;                /* keys, names and string values, each NUL-terminated */
};

/* A bounded cursor over the buffer; the first failure is written to err. */
typedef struct {
    const unsigned char *buf;
    size_t size, pos;
    const char *name;     /* the file, for messages */
    llm_err *err;
    char *blob;           /* second walk: where copies go (NULL in the first) */
    size_t blob_used;     /* bytes of copies (counted in the first walk too) */
} reader;

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* "N bytes remain" for messages. */
static llm_status fail_short(reader *r, const char *what, uint64_t need)
{
    char a[32], b[32], c[32];
    return llm_fail(r->err, LLM_ERR_FORMAT,
                    "%s: GGUF %s at byte %s needs %s byte%s, but only %s remain (truncated or "
                    "corrupt file)", r->name, what, llm_group_digits_u64(a, sizeof a, r->pos),
                    llm_group_digits_u64(b, sizeof b, need),
                    plural(need), llm_group_digits_u64(c, sizeof c, (r->size - r->pos)));
}

static bool has(const reader *r, uint64_t n)
{
    return n <= r->size - r->pos;
}

static llm_status take_u32(reader *r, const char *what, uint32_t *v)
{
    if (!has(r, 4))
        return fail_short(r, what, 4);
    *v = le32(r->buf + r->pos);
    r->pos += 4;
    return LLM_OK;
}

static llm_status take_u64(reader *r, const char *what, uint64_t *v)
{
    if (!has(r, 8))
        return fail_short(r, what, 8);
    *v = le64(r->buf + r->pos);
    r->pos += 8;
    return LLM_OK;
}

/* Reads a string; *s points into the buffer. */
static llm_status take_string(reader *r, const char *what, const char **s, uint64_t *len)
{
    llm_status st = take_u64(r, what, len);
    if (st != LLM_OK)
        return st;
    if (!has(r, *len)) {
        char a[32], b[32], c[32];
        r->pos -= 8;
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF %s at byte %s claims %s bytes, but only %s remain (corrupt "
                        "length or truncated file)", r->name, what,
                        llm_group_digits_u64(a, sizeof a, r->pos),
                        llm_group_digits_u64(b, sizeof b, *len),
                        llm_group_digits_u64(c, sizeof c, (r->size - r->pos - 8)));
    }
    *s = (const char *)r->buf + r->pos;
    r->pos += *len;
    return LLM_OK;
}

/* Copies s (len bytes) NUL-terminated into the blob (second walk) and counts it. */
static const char *blob_copy(reader *r, const char *s, uint64_t len)
{
    char *dst = NULL;
    if (r->blob) {
        dst = r->blob + r->blob_used;
        memcpy(dst, s, (size_t)len);
        dst[len] = '\0';
    }
    r->blob_used += (size_t)len + 1;
    return dst;
}

/* Skips one value of `type`, checking it (arrays recursively, up to a depth). */
static llm_status skip_value(reader *r, uint32_t type, const char *key, int depth)
{
    char what[160];
    if (type >= GGUF_TYPE_COUNT) {
        char a[32];
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF key '%s' has value type %u at byte %s, which is not a GGUF "
                        "type (corrupt file)", r->name, key, (unsigned)type,
                        llm_group_digits_u64(a, sizeof a, r->pos));
    }
    size_t fixed = scalar_bytes(type);
    if (fixed) {
        snprintf(what, sizeof what, "%s value of key '%s'", gguf_type_name(type), key);
        if (!has(r, fixed))
            return fail_short(r, what, fixed);
        if (type == GGUF_TYPE_BOOL && r->buf[r->pos] > 1)
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF key '%s' has a bool of %u, not 0 or 1 (corrupt file)",
                            r->name, key, (unsigned)r->buf[r->pos]);
        r->pos += fixed;
        return LLM_OK;
    }
    if (type == GGUF_TYPE_STRING) {
        const char *s;
        uint64_t len;
        snprintf(what, sizeof what, "string of key '%s'", key);
        return take_string(r, what, &s, &len);
    }
    /* an array: element type, count, elements */
    if (depth >= GGUF_MAX_NESTING)
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF key '%s' nests arrays more than %d deep (corrupt file?)",
                        r->name, key, GGUF_MAX_NESTING);
    uint32_t et;
    uint64_t n;
    llm_status st;
    snprintf(what, sizeof what, "array header of key '%s'", key);
    if ((st = take_u32(r, what, &et)) != LLM_OK || (st = take_u64(r, what, &n)) != LLM_OK)
        return st;
    if (et >= GGUF_TYPE_COUNT)
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF key '%s' is an array of type %u, which is not a GGUF type "
                        "(corrupt file)", r->name, key, (unsigned)et);
    /* the least each element takes: its fixed size, a string's length, an array's
     * type and count */
    uint64_t least = scalar_bytes(et) ? scalar_bytes(et) : et == GGUF_TYPE_STRING ? 8 : 12;
    if (n > (r->size - r->pos) / least) {
        char a[32], b[32], c[32];
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF key '%s' claims an array of %s %s values at byte %s, but "
                        "only %s bytes remain (corrupt length or truncated file)", r->name, key,
                        llm_group_digits_u64(a, sizeof a, n),
                        gguf_type_name(et), llm_group_digits_u64(b, sizeof b, (r->pos - 8)),
                        llm_group_digits_u64(c, sizeof c, (r->size - r->pos)));
    }
    if (scalar_bytes(et)) {
        if (et == GGUF_TYPE_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (r->buf[r->pos + i] > 1)
                    return llm_fail(r->err, LLM_ERR_FORMAT,
                                    "%s: GGUF key '%s' holds a bool of %u, not 0 or 1 (corrupt "
                                    "file)", r->name, key, (unsigned)r->buf[r->pos + i]);
        r->pos += (size_t)(n * least);
        return LLM_OK;
    }
    for (uint64_t i = 0; i < n; i++)
        if ((st = skip_value(r, et, key, depth + 1)) != LLM_OK)
            return st;
    return LLM_OK;
}

/* Key and name text for messages: at most MSG_NAME_MAX bytes, NUL-terminated. */
static void quote(char *out, size_t size, const char *s, uint64_t len)
{
    size_t n = len < size - 1 ? (size_t)len : size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 32 || (unsigned char)out[i] == 127)
            out[i] = '?';
}

/* Walks the metadata. With g == NULL it only checks; else it fills g->kv. */
static llm_status walk_metadata(reader *r, uint64_t n_kv, gguf *g)
{
    llm_status st;
    char what[160];
    for (uint64_t i = 0; i < n_kv; i++) {
        const char *key;
        uint64_t len;
        uint32_t type;
        snprintf(what, sizeof what, "key %llu", (unsigned long long)i);
        if ((st = take_string(r, what, &key, &len)) != LLM_OK)
            return st;
        char shown[MSG_NAME_MAX + 1];
        quote(shown, sizeof shown, key, len);
        if (len == 0 || memchr(key, '\0', (size_t)len))
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF key %llu ('%s') is empty or holds a NUL byte (corrupt file)",
                            r->name, (unsigned long long)i, shown);
        const char *key_copy = blob_copy(r, key, len);
        snprintf(what, sizeof what, "value type of key '%s'", shown);
        if ((st = take_u32(r, what, &type)) != LLM_OK)
            return st;
        size_t start = r->pos;
        if ((st = skip_value(r, type, shown, 0)) != LLM_OK)
            return st;
        const char *str = NULL;
        uint64_t str_len = 0;
        if (type == GGUF_TYPE_STRING) {
            str_len = le64(r->buf + start);
            str = blob_copy(r, (const char *)r->buf + start + 8, str_len);
        }
        if (g) {
            kv_entry *e = &g->kv[i];
            e->key = key_copy;
            e->type = type;
            e->value = r->buf + start;
            e->end = r->buf + r->pos;
            e->str = str;
            e->str_len = str_len;
        }
    }
    return LLM_OK;
}

/* Walks the tensor descriptions (offsets are checked later, against the alignment and
 * the data section).
 * With g == NULL it only checks; else it fills g->tensors. */
static llm_status walk_tensors(reader *r, uint64_t n_tensors, gguf *g)
{
    llm_status st;
    char what[160];
    for (uint64_t i = 0; i < n_tensors; i++) {
        const char *name;
        uint64_t len;
        snprintf(what, sizeof what, "name of tensor %llu", (unsigned long long)i);
        if ((st = take_string(r, what, &name, &len)) != LLM_OK)
            return st;
        char shown[MSG_NAME_MAX + 1];
        quote(shown, sizeof shown, name, len);
        if (len == 0 || memchr(name, '\0', (size_t)len))
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor %llu has an empty name or one with a NUL byte "
                            "(corrupt file)", r->name, (unsigned long long)i);
        const char *name_copy = blob_copy(r, name, len);
        uint32_t n_dims, type;
        snprintf(what, sizeof what, "description of tensor '%s'", shown);
        if ((st = take_u32(r, what, &n_dims)) != LLM_OK)
            return st;
        if (n_dims > GGUF_MAX_DIMS)
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor '%s' has %u dimensions; at most %d are allowed "
                            "(corrupt file)", r->name, shown, (unsigned)n_dims, GGUF_MAX_DIMS);
        uint64_t dims[GGUF_MAX_DIMS] = {1, 1, 1, 1};
        uint64_t n_values = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            if ((st = take_u64(r, what, &dims[d])) != LLM_OK)
                return st;
            if (dims[d] > (uint64_t)INT64_MAX ||
                (dims[d] != 0 && n_values > (uint64_t)INT64_MAX / dims[d]))
                return llm_fail(r->err, LLM_ERR_FORMAT,
                                "%s: GGUF tensor '%s' has dimension %u of %llu: the tensor "
                                "would hold more than 2^63 values (corrupt file)", r->name,
                                shown, (unsigned)d, (unsigned long long)dims[d]);
            n_values *= dims[d];
        }
        uint64_t offset;
        if ((st = take_u32(r, what, &type)) != LLM_OK || (st = take_u64(r, what, &offset)) != LLM_OK)
            return st;
        const ggml_type_info *info = ggml_type_get(type);
        if (!info)
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor '%s' has tensor type %u, which is not a ggml type "
                            "(corrupt file, or a type newer than this program)", r->name, shown,
                            (unsigned)type);
        if (n_values % info->block != 0)
            return llm_fail(r->err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor '%s' holds %llu values, not a whole number of %s "
                            "blocks of %u (corrupt file)", r->name, shown,
                            (unsigned long long)n_values, info->name, (unsigned)info->block);
        if (g) {
            gguf_tensor *t = &g->tensors[i];
            t->name = name_copy;
            t->n_dims = n_dims;
            memcpy(t->dims, dims, sizeof dims);
            t->type = type;
            t->n_values = n_values;
            t->offset = offset;
            /* n_values < 2^63 and bytes per value at most 8: no overflow */
            t->bytes = n_values / info->block * info->bytes;
        }
    }
    return LLM_OK;
}

static const gguf *sort_ctx; /* qsort has no context argument; parsing is not reentrant */

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(sort_ctx->kv[*(const uint64_t *)a].key, sort_ctx->kv[*(const uint64_t *)b].key);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(sort_ctx->tensors[*(const uint64_t *)a].name,
                  sort_ctx->tensors[*(const uint64_t *)b].name);
}

/* general.alignment, or the default when absent. */
static llm_status read_alignment(const gguf *g, const char *name, uint32_t *alignment, llm_err *err)
{
    *alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = gguf_find_key(g, "general.alignment");
    if (i < 0)
        return LLM_OK;
    uint64_t v;
    if (!gguf_get_uint(g, "general.alignment", &v))
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF general.alignment is a %s, not an unsigned integer (corrupt "
                        "file)", name, gguf_type_name(g->kv[i].type));
    if (v == 0 || (v & (v - 1)) != 0)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF general.alignment is %llu, not a power of two (corrupt file)",
                        name, (unsigned long long)v);
    if (v > GGUF_MAX_ALIGNMENT)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF general.alignment is %llu, more than the %d this program "
                        "accepts (corrupt file?)", name, (unsigned long long)v, GGUF_MAX_ALIGNMENT);
    *alignment = (uint32_t)v;
    return LLM_OK;
}

void gguf_free(gguf *g)
{
    if (!g)
        return;
    free(g->kv);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->tensor_sorted);
    free(g->blob);
    free(g);
}

/* The fixed header: magic, a version this reader knows, and counts the file can hold. */
static llm_status read_header(reader *r, uint32_t *version, uint64_t *n_tensors, uint64_t *n_kv)
{
    const char *name = r->name;
    uint32_t magic = 0;
    llm_status st;
    char a[32], b[32], c[32];
    if ((st = take_u32(r, "magic", &magic)) != LLM_OK)
        return st;
    if (magic != GGUF_MAGIC)
        return llm_fail(r->err, LLM_ERR_FORMAT, "%s: not a GGUF file (no \"GGUF\" magic)", name);
    if ((st = take_u32(r, "version", version)) != LLM_OK)
        return st;
    if (*version == 1)
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF version 1 is obsolete and not supported; convert the model "
                        "to a current GGUF or a llama2.c .bin", name);
    if (*version != 2 && *version != 3)
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF version %u is unknown (this program reads versions 2 and 3)",
                        name, (unsigned)*version);
    if ((st = take_u64(r, "tensor count", n_tensors)) != LLM_OK ||
        (st = take_u64(r, "metadata count", n_kv)) != LLM_OK)
        return st;
    /* a key takes at least 13 bytes (length, one byte, type, a 1-byte value), a tensor
     * description at least 25 (length, one byte, n_dims, type, offset) */
    if (*n_kv > (r->size - r->pos) / 13 || *n_tensors > (r->size - r->pos) / 25)
        return llm_fail(r->err, LLM_ERR_FORMAT,
                        "%s: GGUF header claims %s metadata keys and %s tensors, more than its "
                        "%s bytes can hold (corrupt file)", name,
                        llm_group_digits_u64(a, sizeof a, *n_kv),
                        llm_group_digits_u64(b, sizeof b, *n_tensors),
                        llm_group_digits_u64(c, sizeof c, r->size));
    return LLM_OK;
}

/* The index of the keys and tensor descriptions that start at r's position: the first
 * walk checks everything and counts the bytes of the copies, the second fills the
 * index. *tensors_end is where the descriptions end. */
static llm_status build_index(reader *r, uint32_t version, uint64_t n_tensors, uint64_t n_kv,
                              gguf **out, size_t *tensors_end)
{
    const char *name = r->name;
    llm_status st;
    size_t kv_start = r->pos;
    if ((st = walk_metadata(r, n_kv, NULL)) != LLM_OK)
        return st;
    size_t tensors_start = r->pos;
    if ((st = walk_tensors(r, n_tensors, NULL)) != LLM_OK)
        return st;
    *tensors_end = r->pos;

    /* the index: its size follows from what the file holds, not from its counts */
    gguf *g = calloc(1, sizeof *g);
    if (!g)
        return llm_fail(r->err, LLM_ERR_NOMEM, "%s: out of memory", name);
    g->buf = r->buf;
    g->size = r->size;
    g->version = version;
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->kv_sorted = calloc(n_kv ? n_kv : 1, sizeof *g->kv_sorted);
    g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
    g->tensor_sorted = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensor_sorted);
    g->blob = malloc(r->blob_used + 1);
    if (!g->kv || !g->kv_sorted || !g->tensors || !g->tensor_sorted || !g->blob) {
        char a[32], b[32];
        gguf_free(g);
        return llm_fail(r->err, LLM_ERR_NOMEM, "%s: out of memory for the index of %s keys "
                        "and %s tensors", name, llm_group_digits_u64(a, sizeof a, n_kv),
                        llm_group_digits_u64(b, sizeof b, n_tensors));
    }

    /* second walk: fill the index (it cannot fail: the first walk checked the same bytes) */
    r->pos = kv_start;
    r->blob = g->blob;
    r->blob_used = 0;
    walk_metadata(r, n_kv, g);
    r->pos = tensors_start;
    walk_tensors(r, n_tensors, g);
    g->n_kv = n_kv;
    g->n_tensors = n_tensors;
    *out = g;
    return LLM_OK;
}

/* The keys sorted for lookup; a key that appears twice is refused. */
static llm_status sort_keys(gguf *g, const char *name, llm_err *err)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        g->kv_sorted[i] = i;
    sort_ctx = g;
    qsort(g->kv_sorted, (size_t)g->n_kv, sizeof *g->kv_sorted, cmp_keys);
    sort_ctx = NULL;
    for (uint64_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv[g->kv_sorted[i - 1]].key, g->kv[g->kv_sorted[i]].key) == 0) {
            char shown[MSG_NAME_MAX + 1];
            const char *k = g->kv[g->kv_sorted[i]].key;
            quote(shown, sizeof shown, k, strlen(k));
            return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF key '%s' appears twice (corrupt file)",
                            name, shown);
        }
    return LLM_OK;
}

/* The data section after the descriptions: every tensor aligned and inside the file,
 * its data pointer set, the names sorted for lookup and none twice. */
static llm_status place_tensors(gguf *g, size_t tensors_end, const char *name, llm_err *err)
{
    char a[32], b[32], c[32];
    uint64_t data = (tensors_end + (uint64_t)g->alignment - 1) / g->alignment * g->alignment;
    g->data_offset = data;
    if (g->n_tensors > 0 && data > g->size)
        return llm_fail(err, LLM_ERR_FORMAT,
                        "%s: GGUF data section would start at byte %s, past the end of the "
                        "%s-byte file (truncated or corrupt file)", name,
                        llm_group_digits_u64(a, sizeof a, data),
                        llm_group_digits_u64(b, sizeof b, (uint64_t)g->size));
    uint64_t room = g->size - data;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *ti = &g->tensors[i];
        if (ti->offset % g->alignment != 0)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor '%s' starts at data offset %llu, not a multiple of "
                            "the alignment %u (corrupt file)", name, ti->name,
                            (unsigned long long)ti->offset, (unsigned)g->alignment);
        if (ti->offset > room || ti->bytes > room - ti->offset)
            return llm_fail(err, LLM_ERR_FORMAT,
                            "%s: GGUF tensor '%s' (%s bytes at data offset %s) ends past the "
                            "end of the file, whose data section holds %s bytes (truncated or "
                            "corrupt file)", name, ti->name,
                            llm_group_digits_u64(a, sizeof a, ti->bytes),
                            llm_group_digits_u64(b, sizeof b, ti->offset),
                            llm_group_digits_u64(c, sizeof c, room));
        ti->data = (const unsigned char *)g->buf + data + ti->offset;
        g->tensor_sorted[i] = i;
    }
    sort_ctx = g;
    qsort(g->tensor_sorted, (size_t)g->n_tensors, sizeof *g->tensor_sorted, cmp_names);
    sort_ctx = NULL;
    for (uint64_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->tensors[g->tensor_sorted[i - 1]].name,
                   g->tensors[g->tensor_sorted[i]].name) == 0)
            return llm_fail(err, LLM_ERR_FORMAT, "%s: GGUF tensor '%s' appears twice (corrupt "
                            "file)", name, g->tensors[g->tensor_sorted[i]].name);
    return LLM_OK;
}

llm_status gguf_parse(const void *buf, size_t size, const char *name, gguf **out, llm_err *err)
{
    *out = NULL;
    reader r = {.buf = buf, .size = size, .name = name, .err = err};
    uint32_t version = 0;
    uint64_t n_tensors = 0, n_kv = 0;
    size_t tensors_end;
    gguf *g = NULL;
    llm_status st = read_header(&r, &version, &n_tensors, &n_kv);
    if (st == LLM_OK)
        st = build_index(&r, version, n_tensors, n_kv, &g, &tensors_end);
    if (st == LLM_OK)
        st = sort_keys(g, name, err);
    if (st == LLM_OK)
        st = read_alignment(g, name, &g->alignment, err);
    if (st == LLM_OK)
        st = place_tensors(g, tensors_end, name, err);
    if (st != LLM_OK) {
        gguf_free(g);
        return st;
    }
    *out = g;
    return LLM_OK;
}

uint32_t gguf_version(const gguf *g) { return g->version; }
uint32_t gguf_alignment(const gguf *g) { return g->alignment; }
uint64_t gguf_data_offset(const gguf *g) { return g->data_offset; }

/* ---- metadata access ---- */

uint64_t gguf_kv_count(const gguf *g) { return g->n_kv; }
const char *gguf_kv_key(const gguf *g, uint64_t i) { return i < g->n_kv ? g->kv[i].key : NULL; }

gguf_value_type gguf_kv_type(const gguf *g, uint64_t i)
{
    return i < g->n_kv ? (gguf_value_type)g->kv[i].type : GGUF_TYPE_COUNT;
}

int64_t gguf_find_key(const gguf *g, const char *key)
{
    uint64_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->kv[g->kv_sorted[mid]].key, key);
        if (c == 0)
            return (int64_t)g->kv_sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static const kv_entry *find(const gguf *g, const char *key)
{
    int64_t i = gguf_find_key(g, key);
    return i < 0 ? NULL : &g->kv[i];
}

/* A scalar number as int64 (ok = false for floats, strings, arrays and uint64 >= 2^63). */
static int64_t number_int(uint32_t type, const unsigned char *p, bool *ok)
{
    *ok = true;
    switch (type) {
    case GGUF_TYPE_UINT8: return p[0];
    case GGUF_TYPE_INT8: return (int8_t)p[0];
    case GGUF_TYPE_UINT16: return (uint16_t)(p[0] | p[1] << 8);
    case GGUF_TYPE_INT16: return (int16_t)(uint16_t)(p[0] | p[1] << 8);
    case GGUF_TYPE_UINT32: return le32(p);
    case GGUF_TYPE_INT32: return (int32_t)le32(p);
    case GGUF_TYPE_UINT64: {
        uint64_t v = le64(p);
        *ok = v <= (uint64_t)INT64_MAX;
        return (int64_t)v;
    }
    case GGUF_TYPE_INT64: return (int64_t)le64(p);
    case GGUF_TYPE_BOOL: return p[0];
    }
    *ok = false;
    return 0;
}

static double number_float(uint32_t type, const unsigned char *p, bool *ok)
{
    if (type == GGUF_TYPE_FLOAT32) {
        uint32_t u = le32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        *ok = true;
        return f;
    }
    if (type == GGUF_TYPE_FLOAT64) {
        uint64_t u = le64(p);
        double d;
        memcpy(&d, &u, sizeof d);
        *ok = true;
        return d;
    }
    if (type == GGUF_TYPE_UINT64) {
        *ok = true;
        return (double)le64(p);
    }
    return (double)number_int(type, p, ok);
}

bool gguf_get_uint(const gguf *g, const char *key, uint64_t *out)
{
    const kv_entry *e = find(g, key);
    if (!e || e->type == GGUF_TYPE_BOOL)
        return false;
    if (e->type == GGUF_TYPE_UINT64) {
        *out = le64(e->value);
        return true;
    }
    bool ok;
    int64_t v = number_int(e->type, e->value, &ok);
    if (!ok || v < 0)
        return false;
    *out = (uint64_t)v;
    return true;
}

bool gguf_get_float(const gguf *g, const char *key, double *out)
{
    const kv_entry *e = find(g, key);
    if (!e || e->type == GGUF_TYPE_BOOL)
        return false;
    bool ok;
    double v = number_float(e->type, e->value, &ok);
    if (ok)
        *out = v;
    return ok;
}

bool gguf_get_bool(const gguf *g, const char *key, bool *out)
{
    const kv_entry *e = find(g, key);
    if (!e || e->type != GGUF_TYPE_BOOL)
        return false;
    *out = e->value[0] != 0;
    return true;
}

bool gguf_string_has_nul(const gguf *g, const char *key)
{
    const kv_entry *e = find(g, key);
    return e && e->type == GGUF_TYPE_STRING && memchr(e->str, '\0', (size_t)e->str_len);
}

const char *gguf_get_string(const gguf *g, const char *key, size_t *len)
{
    const kv_entry *e = find(g, key);
    if (!e || e->type != GGUF_TYPE_STRING || memchr(e->str, '\0', (size_t)e->str_len))
        return NULL;
    if (len)
        *len = (size_t)e->str_len;
    return e->str;
}

bool gguf_get_array(const gguf *g, const char *key, gguf_array *out)
{
    const kv_entry *e = find(g, key);
    if (!e || e->type != GGUF_TYPE_ARRAY)
        return false;
    out->type = (gguf_value_type)le32(e->value);
    out->n = le64(e->value + 4);
    out->data = e->value + 12;
    out->end = e->end;
    return true;
}

double gguf_array_float(const gguf_array *a, uint64_t i)
{
    size_t sz = scalar_bytes(a->type);
    if (!sz || i >= a->n)
        return 0.0;
    bool ok;
    double v = number_float(a->type, a->data + i * sz, &ok);
    return ok ? v : 0.0;
}

int64_t gguf_array_int(const gguf_array *a, uint64_t i)
{
    size_t sz = scalar_bytes(a->type);
    if (!sz || i >= a->n || a->type == GGUF_TYPE_FLOAT32 || a->type == GGUF_TYPE_FLOAT64)
        return 0;
    bool ok;
    int64_t v = number_int(a->type, a->data + i * sz, &ok);
    return ok ? v : 0;
}

bool gguf_array_string(const gguf_array *a, const unsigned char **cursor, const char **s,
                       uint64_t *len)
{
    if (a->type != GGUF_TYPE_STRING)
        return false;
    const unsigned char *p = *cursor ? *cursor : a->data;
    if (p >= a->end) /* checked when parsed: every string lies before end */
        return false;
    *len = le64(p);
    *s = (const char *)p + 8;
    *cursor = p + 8 + *len;
    return true;
}

/* ---- tensor access ---- */

uint64_t gguf_tensor_count(const gguf *g) { return g->n_tensors; }

const gguf_tensor *gguf_tensor_at(const gguf *g, uint64_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf *g, const char *name)
{
    uint64_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->tensors[g->tensor_sorted[mid]].name, name);
        if (c == 0)
            return &g->tensors[g->tensor_sorted[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
