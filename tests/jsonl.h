/* jsonl.h — a tiny reader for the flat JSON Lines golden files in tests/data/golden:
 * fetch a string, number, boolean or number-array field of one object by key. Enough for those
 * files (no nested objects are searched), not a general JSON parser. */
#ifndef LLMCHAT_TEST_JSONL_H
#define LLMCHAT_TEST_JSONL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Finds `"key":` in line and returns a pointer to the value, or NULL. */
static inline const char *jsonl_find(const char *line, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    return p;
}

static inline size_t jsonl_put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the string field `key` into out (size). Returns false if absent. */
static inline bool jsonl_string(const char *line, const char *key, char *out, size_t size)
{
    const char *p = jsonl_find(line, key);
    if (!p || *p != '"')
        return false;
    size_t o = 0;
    for (p++; *p && *p != '"' && o + 5 < size; p++) {
        if (*p != '\\') {
            out[o++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'u': {
            unsigned cp = (unsigned)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                unsigned lo = (unsigned)strtoul((char[5]){p[3], p[4], p[5], p[6], 0}, NULL, 16);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            o += jsonl_put_utf8(out + o, cp);
            break;
        }
        default: out[o++] = *p; break;
        }
    }
    out[o] = '\0';
    return true;
}

static inline bool jsonl_bool(const char *line, const char *key)
{
    const char *p = jsonl_find(line, key);
    return p && !strncmp(p, "true", 4);
}

static inline double jsonl_number(const char *line, const char *key)
{
    const char *p = jsonl_find(line, key);
    return p ? strtod(p, NULL) : 0.0;
}

/* Reads the array of numbers `key` into out (at most max); returns how many it holds,
 * or -1 if absent. */
static inline int jsonl_numbers(const char *line, const char *key, double *out, int max)
{
    const char *p = jsonl_find(line, key);
    if (!p || *p != '[')
        return -1;
    int n = 0;
    for (p++;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ']' || !*p)
            return n;
        char *end;
        double v = strtod(p, &end);
        if (end == p)
            return n;
        if (n < max)
            out[n] = v;
        n++;
        p = end;
    }
}

#endif
