/* gguf.h — reading and writing GGUF files (versions 2 and 3).
 *
 * Reading: gguf_parse walks a buffer of known size (normally the mapping of a whole
 * file) once and checks everything before anything is allocated from it: every
 * count, string length, array length, dimension and tensor offset is checked against
 * the bytes that remain and for overflow, value types and tensor types must be known,
 * keys and tensor names must be unique, general.alignment must be a power of two and
 * every tensor must lie inside the file at an aligned offset. Afterwards the accessors
 * below cannot fail on a hostile file: what they return has been checked. Strings in
 * the file are not NUL-terminated; the parsed file keeps NUL-terminated copies of the
 * keys, tensor names and string values (not of string arrays, which are read through
 * gguf_array_string).
 *
 * Writing: a gguf_writer collects metadata and tensor descriptions, then writes the
 * header; the caller streams each tensor's bytes in order and pads after each.
 *
 * Owns: the parsed index (keys, names, copies) and the writer's buffers. Borrows the
 * buffer given to gguf_parse, which must outlive the parsed file. Knows nothing of
 * models: what the keys mean is the loader's business. */
#ifndef LLMCHAT_GGUF_H
#define LLMCHAT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

enum { GGUF_MAGIC = 0x46554747 /* "GGUF" read as a little-endian uint32 */ };
enum { GGUF_DEFAULT_ALIGNMENT = 32, GGUF_MAX_DIMS = 4 };

/* Metadata value types, numbered as in the file. */
typedef enum {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_value_type;

/* Name of a value type ("uint32", "array", ...). */
const char *gguf_type_name(uint32_t type);

typedef struct gguf gguf;

typedef struct {
    const char *name;             /* NUL-terminated copy, owned by the gguf */
    uint32_t n_dims;              /* 1..GGUF_MAX_DIMS */
    uint64_t dims[GGUF_MAX_DIMS]; /* dims[0] is the row length; unused dims are 1 */
    uint32_t type;                /* ggml_type */
    uint64_t n_values;            /* product of the dims */
    uint64_t offset;              /* from the start of the data section */
    uint64_t bytes;
    const void *data;             /* borrowed: into the parsed buffer */
} gguf_tensor;

/* An array value. Its elements start at data and are `type`: numbers are stored
 * little-endian at any alignment (use the accessors), strings as length + bytes. */
typedef struct {
    gguf_value_type type;
    uint64_t n;
    const unsigned char *data;  /* borrowed: into the parsed buffer */
    const unsigned char *end;   /* one past the last element's last byte */
} gguf_array;

/* Parses buf (size bytes). name is used in messages ("model.gguf: ..."). On failure
 * *out is NULL and err says what is wrong and where. Version 1 is refused as
 * obsolete, versions above 3 as unknown. buf must stay valid until gguf_free. */
llm_status gguf_parse(const void *buf, size_t size, const char *name, gguf **out, llm_err *err);
void gguf_free(gguf *g); /* NULL does nothing */

uint32_t gguf_version(const gguf *g);
uint32_t gguf_alignment(const gguf *g);
uint64_t gguf_data_offset(const gguf *g); /* where the data section starts in the buffer */

/* ---- metadata ---- */

uint64_t gguf_kv_count(const gguf *g);
const char *gguf_kv_key(const gguf *g, uint64_t i);
gguf_value_type gguf_kv_type(const gguf *g, uint64_t i);
/* Index of key, or -1. */
int64_t gguf_find_key(const gguf *g, const char *key);

/* The typed getters return false when the key is absent or its value cannot be
 * represented as asked: gguf_get_uint takes any integer type with a non-negative
 * value, gguf_get_float any float or integer type, gguf_get_string a string without a
 * NUL byte in it (*len, when not NULL, receives its length in bytes; the copy is
 * NUL-terminated), so that "gemma2\0x" is never read as "gemma2";
 * gguf_string_has_nul says when that is why it returned NULL. */
bool gguf_get_uint(const gguf *g, const char *key, uint64_t *out);
bool gguf_get_float(const gguf *g, const char *key, double *out);
bool gguf_get_bool(const gguf *g, const char *key, bool *out);
const char *gguf_get_string(const gguf *g, const char *key, size_t *len);
bool gguf_string_has_nul(const gguf *g, const char *key);
bool gguf_get_array(const gguf *g, const char *key, gguf_array *out);

/* Element i of a numeric array converted to double / int64 (0 for other types). */
double gguf_array_float(const gguf_array *a, uint64_t i);
int64_t gguf_array_int(const gguf_array *a, uint64_t i);

/* Reads the strings of a string array in order: *cursor starts at NULL; each call
 * gives the next string (not NUL-terminated) and its length; false after the last. */
bool gguf_array_string(const gguf_array *a, const unsigned char **cursor, const char **s,
                       uint64_t *len);

/* ---- tensors ---- */

uint64_t gguf_tensor_count(const gguf *g);
const gguf_tensor *gguf_tensor_at(const gguf *g, uint64_t i);
/* The tensor called name, or NULL. */
const gguf_tensor *gguf_find_tensor(const gguf *g, const char *name);

/* ---- writing ---- */

typedef struct gguf_writer gguf_writer;

/* alignment 0 means the default, 32. Returns NULL when out of memory. */
gguf_writer *gguf_writer_new(uint32_t alignment);
void gguf_writer_free(gguf_writer *w); /* NULL does nothing */

/* Metadata, written in the order added (general.alignment is added by the writer when
 * it is not the default). Running out of memory is remembered and reported by
 * gguf_writer_write_header. Strings are NUL-terminated here. */
void gguf_writer_add_string(gguf_writer *w, const char *key, const char *value);
/* A string of len bytes, which may hold any byte (a hostile file's NUL, for tests). */
void gguf_writer_add_string_n(gguf_writer *w, const char *key, const char *value, size_t len);
void gguf_writer_add_uint32(gguf_writer *w, const char *key, uint32_t value);
void gguf_writer_add_int32(gguf_writer *w, const char *key, int32_t value);
void gguf_writer_add_float32(gguf_writer *w, const char *key, float value);
void gguf_writer_add_bool(gguf_writer *w, const char *key, bool value);
/* An array of n strings; lens[i] is the length of values[i] (which may hold NULs). */
void gguf_writer_add_string_array(gguf_writer *w, const char *key, const char *const *values,
                                  const size_t *lens, uint64_t n);
void gguf_writer_add_float32_array(gguf_writer *w, const char *key, const float *values,
                                   uint64_t n);
void gguf_writer_add_int32_array(gguf_writer *w, const char *key, const int32_t *values,
                                 uint64_t n);

/* Describes the next tensor (dims[0] is the row length); its data comes after the
 * previous tensor's, aligned. Returns its byte size, or 0 when the type is unknown or
 * its value count is not a whole number of blocks (nothing is added then). */
uint64_t gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const uint64_t *dims);

/* Writes the header, metadata and tensor descriptions and pads to the data section.
 * path names f in messages. */
llm_status gguf_writer_write_header(gguf_writer *w, FILE *f, const char *path, llm_err *err);

/* Writes the zero bytes that follow a tensor of `bytes` bytes, up to the alignment
 * (call after each tensor's data, the last one included). */
llm_status gguf_writer_pad(const gguf_writer *w, FILE *f, uint64_t bytes, const char *path,
                           llm_err *err);

#endif
