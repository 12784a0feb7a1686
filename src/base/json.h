/* json.h — a small, strict JSON reader for the files llmchat reads back (saved chats,
 * traces), and the string writer their writers share.
 *
 * json_parse turns one JSON text (RFC 8259) into a tree of values that the caller
 * owns and frees with json_free. Nesting is limited to JSON_DEPTH_MAX levels, so no
 * input can exhaust the stack. Strings are decoded to bytes: escapes become UTF-8,
 * except a lone low surrogate \udc80..\udcff, which stands for the raw byte 0x80..0xFF
 * (PEP 383's "surrogateescape": llmchat's writers write a byte that is not valid UTF-8
 * that way, and Python reads and writes it back unchanged), so text round-trips byte
 * for byte through llmchat and through other JSON tools. llmchat's files written before
 * that wrote such a byte as \u0080..\u00FF; JSON_LATIN1_BYTES reads them (their
 * readers tell them apart by the member JSON_RAW_BYTES_KEY, which newer files carry). A
 * string may hold NUL (\u0000); `length` counts every byte. Numbers keep their text, so
 * that integers such as 64-bit seeds read back exactly. Reading does not depend on the
 * locale.
 * Does not: write objects or numbers (each file's writer does), or accept comments,
 * trailing commas, NaN or single quotes. */
#ifndef LLMCHAT_JSON_H
#define LLMCHAT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

enum { JSON_DEPTH_MAX = 64 };

typedef enum { JSON_NULL = 0, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    bool boolean;          /* JSON_BOOL */
    char *text;            /* JSON_STRING: the decoded bytes; JSON_NUMBER: the number as
                              written; NUL-terminated, owned */
    size_t length;         /* bytes in text */
    json_value *items;     /* JSON_ARRAY: elements; JSON_OBJECT: member values (count) */
    char **keys;           /* JSON_OBJECT: member names, decoded (count) */
    size_t count;
};

/* How a string's escapes stand for bytes that are not UTF-8 (see the top). */
typedef enum {
    JSON_SURROGATE_BYTES, /* \udc80..\udcff alone: that byte; \u00e9: U+00E9 (standard) */
    JSON_LATIN1_BYTES     /* \u0080..\u00ff: that byte (llmchat's files before the member
                             below); a lone surrogate is an error */
} json_bytes;

/* The member a file's top object (a saved chat, a trace's header) carries when its
 * strings write raw bytes as \udcXX; a file without it is read with JSON_LATIN1_BYTES. */
#define JSON_RAW_BYTES_KEY "raw_bytes"
#define JSON_RAW_BYTES_VALUE "\"\\\\udcXX\"" /* as JSON text: the string \udcXX */

/* Parses text[0..len) as standard JSON (JSON_SURROGATE_BYTES). On failure *out is NULL
 * and err says what and where ("line 3, column 14: expected ',' or '}'"). */
llm_status json_parse(const char *text, size_t len, json_value **out, llm_err *err);
/* The same, with raw bytes read as `bytes` says. */
llm_status json_parse_bytes(const char *text, size_t len, json_bytes bytes, json_value **out,
                            llm_err *err);
/* Whether a file's top object says how it writes raw bytes (JSON_RAW_BYTES_KEY). */
bool json_has_raw_bytes_member(const json_value *top);
void json_free(json_value *v); /* NULL does nothing */

/* The value of member key of an object (the last one when the key repeats), or NULL
 * when v is not an object or has no such member. */
const json_value *json_get(const json_value *v, const char *key);
/* Element i of an array, or NULL. */
const json_value *json_at(const json_value *v, size_t i);

/* Typed reads: return false, leaving *out alone, when v is NULL or of another type
 * (or, for the integers, not an integer within range). */
bool json_as_string(const json_value *v, const char **out);
bool json_as_double(const json_value *v, double *out);
bool json_as_int(const json_value *v, int *out);
bool json_as_u64(const json_value *v, uint64_t *out);
bool json_as_bool(const json_value *v, bool *out);

const char *json_type_name(json_type t); /* "null", "boolean", "number", ... */

/* Writes s to f as a JSON string: quotes, escapes and control bytes as JSON escapes,
 * and a byte that is not part of valid UTF-8 as the lone surrogate \udcXX (the reader
 * turns it back into the byte; Python reads it with errors="surrogateescape"). NULL
 * writes "". */
void json_write_string(FILE *f, const char *s);
/* The same for the n bytes at s, which may hold NUL (written \u0000). */
void json_write_bytes(FILE *f, const char *s, size_t n);
/* For a request to a server, which takes only valid Unicode (llama-server refuses a
 * lone surrogate): a byte that is not valid UTF-8 as the character U+00XX, its Latin-1
 * reading, as llmchat sent it before files used \udcXX. NULL writes "". */
void json_write_request_string(FILE *f, const char *s);

#endif
