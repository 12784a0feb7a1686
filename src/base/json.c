/* json.c — a strict recursive-descent JSON reader, and the one JSON string writer
 * the trace and the saved chats share (see json.h).
 *
 * Owns the value tree it builds: every string, key and child array is malloc'd and
 * freed by json_free. The parser walks the text once; nesting deeper than
 * JSON_DEPTH_MAX is refused before the recursion could grow further. Errors name the
 * line and column of the offending byte. Writes strings only; the objects around them
 * are their writers'. */
#include "json.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"

typedef struct {
    const char *start, *p, *end;
    llm_err *err;
    llm_status status;     /* LLM_OK until the first failure */
    json_bytes bytes;      /* how raw bytes are escaped */
} cursor;

/* Records the first failure, with the line and column of the cursor. */
static void fail(cursor *c, llm_status st, const char *what)
{
    if (c->status != LLM_OK)
        return;
    int line = 1, col = 1;
    for (const char *q = c->start; q < c->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            col++;
        }
    }
    c->status = llm_fail(c->err, st, "line %d, column %d: %s", line, col, what);
}

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool at(const cursor *c, char ch) { return c->p < c->end && *c->p == ch; }

static void value_free(json_value *v)
{
    free(v->text);
    for (size_t i = 0; i < v->count; i++) {
        if (v->items)
            value_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void json_free(json_value *v)
{
    if (!v)
        return;
    value_free(v);
    free(v);
}

/* ---- strings ---- */

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits after "\u"; -1 when they are not hex. */
static long read_hex4(cursor *c)
{
    if (c->end - c->p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(c->p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    c->p += 4;
    return v;
}

static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string literal at the cursor (on its opening quote) into a malloc'd,
 * NUL-terminated buffer. Decoded text is never longer than the literal. */
static char *parse_string(cursor *c, size_t *length)
{
    c->p++; /* the opening quote */
    const char *q = c->p;
    while (q < c->end && *q != '"') {
        if (*q == '\\' && q + 1 < c->end)
            q++;
        q++;
    }
    if (q >= c->end) {
        fail(c, LLM_ERR_FORMAT, "a string is not closed");
        return NULL;
    }
    char *out = malloc((size_t)(q - c->p) + 1);
    if (!out) {
        fail(c, LLM_ERR_NOMEM, "out of memory");
        return NULL;
    }
    size_t n = 0;
    while (*c->p != '"') {
        unsigned char ch = (unsigned char)*c->p;
        if (ch < 0x20) {
            fail(c, LLM_ERR_FORMAT, "a control character inside a string (write it as \\u00XX)");
            free(out);
            return NULL;
        }
        if (ch != '\\') {
            out[n++] = (char)ch;
            c->p++;
            continue;
        }
        c->p++;
        char e = *c->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            long cp = read_hex4(c);
            if (cp < 0) {
                fail(c, LLM_ERR_FORMAT, "\\u is not followed by 4 hex digits");
                free(out);
                return NULL;
            }
            if (cp >= 0xDC80 && cp <= 0xDCFF && c->bytes == JSON_SURROGATE_BYTES) {
                out[n++] = (char)(cp - 0xDC00); /* a raw byte (see json.h) */
                break;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(c, LLM_ERR_FORMAT, "a low surrogate escape without a high one before it");
                free(out);
                return NULL;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = -1;
                if (c->end - c->p >= 2 && c->p[0] == '\\' && c->p[1] == 'u') {
                    c->p += 2;
                    lo = read_hex4(c);
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(c, LLM_ERR_FORMAT, "a high surrogate escape without a low one after it");
                    free(out);
                    return NULL;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp >= 0x80 && cp <= 0xFF && c->bytes == JSON_LATIN1_BYTES)
                out[n++] = (char)cp; /* a raw byte in an older file (see json.h) */
            else
                n += put_utf8(out + n, (unsigned long)cp);
            break;
        }
        default:
            c->p--;
            fail(c, LLM_ERR_FORMAT, "an unknown escape in a string");
            free(out);
            return NULL;
        }
    }
    c->p++; /* the closing quote */
    out[n] = '\0';
    *length = n;
    return out;
}

/* ---- numbers ---- */

static bool is_digit(const cursor *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

static void parse_number(cursor *c, json_value *v)
{
    const char *s = c->p;
    if (at(c, '-'))
        c->p++;
    if (at(c, '0')) {
        c->p++;
    } else if (is_digit(c)) {
        while (is_digit(c))
            c->p++;
    } else {
        fail(c, LLM_ERR_FORMAT, "a number needs a digit here");
        return;
    }
    if (at(c, '.')) {
        c->p++;
        if (!is_digit(c)) {
            fail(c, LLM_ERR_FORMAT, "a number needs a digit after its decimal point");
            return;
        }
        while (is_digit(c))
            c->p++;
    }
    if (at(c, 'e') || at(c, 'E')) {
        c->p++;
        if (at(c, '+') || at(c, '-'))
            c->p++;
        if (!is_digit(c)) {
            fail(c, LLM_ERR_FORMAT, "a number needs a digit in its exponent");
            return;
        }
        while (is_digit(c))
            c->p++;
    }
    size_t n = (size_t)(c->p - s);
    v->text = malloc(n + 1);
    if (!v->text) {
        fail(c, LLM_ERR_NOMEM, "out of memory");
        return;
    }
    memcpy(v->text, s, n);
    v->text[n] = '\0';
    v->length = n;
    v->type = JSON_NUMBER;
}

/* ---- values ---- */

static void parse_value(cursor *c, json_value *v, int depth);

/* Appends a zeroed slot to a container; NULL when out of memory. */
static json_value *add_item(cursor *c, json_value *v, size_t *cap, bool with_key)
{
    if (v->count == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : 4;
        json_value *items = realloc(v->items, grown_cap * sizeof *items);
        if (!items) {
            fail(c, LLM_ERR_NOMEM, "out of memory");
            return NULL;
        }
        v->items = items;
        if (with_key) {
            char **keys = realloc(v->keys, grown_cap * sizeof *keys);
            if (!keys) {
                fail(c, LLM_ERR_NOMEM, "out of memory");
                return NULL;
            }
            v->keys = keys;
        }
        *cap = grown_cap;
    }
    json_value *slot = &v->items[v->count];
    memset(slot, 0, sizeof *slot);
    if (with_key)
        v->keys[v->count] = NULL;
    v->count++;
    return slot;
}

static void parse_container(cursor *c, json_value *v, int depth, bool object)
{
    char close = object ? '}' : ']';
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    if (depth >= JSON_DEPTH_MAX) {
        fail(c, LLM_ERR_FORMAT, "nested too deeply");
        return;
    }
    c->p++; /* the opening bracket */
    skip_space(c);
    if (at(c, close)) {
        c->p++;
        return;
    }
    size_t cap = 0;
    for (;;) {
        skip_space(c);
        if (c->p >= c->end) {
            fail(c, LLM_ERR_FORMAT, "unexpected end of the text");
            return;
        }
        char *key = NULL;
        if (object) {
            if (!at(c, '"')) {
                fail(c, LLM_ERR_FORMAT, "expected a member name in quotes");
                return;
            }
            size_t key_len;
            if (!(key = parse_string(c, &key_len)))
                return;
            skip_space(c);
            if (!at(c, ':')) {
                free(key);
                fail(c, LLM_ERR_FORMAT, "expected ':' after a member name");
                return;
            }
            c->p++;
        }
        json_value *slot = add_item(c, v, &cap, object);
        if (!slot) {
            free(key);
            return;
        }
        if (object)
            v->keys[v->count - 1] = key;
        parse_value(c, slot, depth + 1);
        if (c->status != LLM_OK)
            return;
        skip_space(c);
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (at(c, close)) {
            c->p++;
            return;
        }
        fail(c, LLM_ERR_FORMAT, object ? "expected ',' or '}'" : "expected ',' or ']'");
        return;
    }
}

static bool take_word(cursor *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return false;
    c->p += n;
    return true;
}

static void parse_value(cursor *c, json_value *v, int depth)
{
    skip_space(c);
    if (c->p >= c->end) {
        fail(c, LLM_ERR_FORMAT, "unexpected end of the text");
        return;
    }
    switch (*c->p) {
    case '{': parse_container(c, v, depth, true); return;
    case '[': parse_container(c, v, depth, false); return;
    case '"':
        if ((v->text = parse_string(c, &v->length)))
            v->type = JSON_STRING;
        return;
    case 't':
    case 'f':
    case 'n':
        if (take_word(c, "true") || take_word(c, "false")) {
            v->type = JSON_BOOL;
            v->boolean = c->p[-1] == 'e' && c->p[-2] == 'u'; /* "true", not "false" */
            return;
        }
        if (take_word(c, "null")) {
            v->type = JSON_NULL;
            return;
        }
        break;
    default:
        if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
            parse_number(c, v);
            return;
        }
    }
    fail(c, LLM_ERR_FORMAT, "expected a value (object, array, string, number, true, false or null)");
}

llm_status json_parse(const char *text, size_t len, json_value **out, llm_err *err)
{
    return json_parse_bytes(text, len, JSON_SURROGATE_BYTES, out, err);
}

llm_status json_parse_bytes(const char *text, size_t len, json_bytes bytes, json_value **out,
                            llm_err *err)
{
    *out = NULL;
    json_value *root = calloc(1, sizeof *root);
    if (!root)
        return llm_fail(err, LLM_ERR_NOMEM, "out of memory");
    cursor c = {.start = text, .p = text, .end = text + len, .err = err, .status = LLM_OK,
                .bytes = bytes};
    parse_value(&c, root, 0);
    if (c.status == LLM_OK) {
        skip_space(&c);
        if (c.p != c.end)
            fail(&c, LLM_ERR_FORMAT, "text after the end of the value");
    }
    if (c.status != LLM_OK) {
        json_free(root);
        return c.status;
    }
    *out = root;
    return LLM_OK;
}

bool json_has_raw_bytes_member(const json_value *top)
{
    return json_get(top, JSON_RAW_BYTES_KEY) != NULL;
}

/* ---- access ---- */

const json_value *json_get(const json_value *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = v->count; i-- > 0;)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

const json_value *json_at(const json_value *v, size_t i)
{
    if (!v || v->type != JSON_ARRAY || i >= v->count)
        return NULL;
    return &v->items[i];
}

bool json_as_string(const json_value *v, const char **out)
{
    if (!v || v->type != JSON_STRING)
        return false;
    *out = v->text;
    return true;
}

bool json_as_bool(const json_value *v, bool *out)
{
    if (!v || v->type != JSON_BOOL)
        return false;
    *out = v->boolean;
    return true;
}

bool json_as_double(const json_value *v, double *out)
{
    if (!v || v->type != JSON_NUMBER)
        return false;
    /* The text uses '.'; strtod wants the locale's decimal point. */
    char buf[64];
    const char *s = v->text;
    const char *point = localeconv()->decimal_point;
    if (point && strcmp(point, ".") != 0 && strchr(v->text, '.')) {
        if (v->length + strlen(point) >= sizeof buf)
            return false;
        size_t i = (size_t)(strchr(v->text, '.') - v->text);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)i, v->text, point, v->text + i + 1);
        s = buf;
    }
    *out = strtod(s, NULL); /* overflow gives ±HUGE_VAL, which callers range-check */
    return true;
}

/* True when the number is written as an integer (no fraction, no exponent). */
static bool integer_text(const json_value *v)
{
    return v && v->type == JSON_NUMBER && !strpbrk(v->text, ".eE");
}

bool json_as_int(const json_value *v, int *out)
{
    if (!integer_text(v))
        return false;
    errno = 0;
    long long x = strtoll(v->text, NULL, 10);
    if (errno == ERANGE || x < INT_MIN || x > INT_MAX)
        return false;
    *out = (int)x;
    return true;
}

bool json_as_u64(const json_value *v, uint64_t *out)
{
    if (!integer_text(v) || v->text[0] == '-')
        return false;
    errno = 0;
    unsigned long long x = strtoull(v->text, NULL, 10);
    if (errno == ERANGE || x > UINT64_MAX)
        return false;
    *out = (uint64_t)x;
    return true;
}

const char *json_type_name(json_type t)
{
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "?";
}

/* s[0..n) as a JSON string; a byte that is not valid UTF-8 as \udcXX, or with latin1
 * as the character U+00XX. */
static void write_string(FILE *f, const char *s, size_t n, bool latin1);

void json_write_string(FILE *f, const char *s)
{
    write_string(f, s ? s : "", s ? strlen(s) : 0, false);
}

void json_write_bytes(FILE *f, const char *s, size_t n)
{
    write_string(f, s, n, false);
}

void json_write_request_string(FILE *f, const char *s)
{
    write_string(f, s ? s : "", s ? strlen(s) : 0, true);
}

static void write_string(FILE *f, const char *s, size_t n, bool latin1)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + n;
    putc('"', f);
    while (p < end) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc((int)c, f);
            p++;
        } else if (c == '\n') {
            fputs("\\n", f);
            p++;
        } else if (c == '\t') {
            fputs("\\t", f);
            p++;
        } else if (c == '\r') {
            fputs("\\r", f);
            p++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else {
            int len = textfmt_utf8_len(p, (size_t)(end - p));
            if (len == 0) {
                fprintf(f, latin1 ? "\\u%04x" : "\\udc%02x", c); /* an invalid byte (json.h) */
                p++;
            } else {
                fwrite(p, 1, (size_t)len, f);
                p += len;
            }
        }
    }
    putc('"', f);
}
