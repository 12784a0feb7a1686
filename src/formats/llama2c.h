/* llama2c.h — the llama2.c checkpoint layout (docs/formats.md): the headers of
 * versions 0, 1 and 2, the order of the tensors after them, and the byte size a header
 * implies. The one description of the format that the loader reads with and the
 * converter, the benchmark and the tests write with.
 *
 *   v0  7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
 *       a negative vocab_size means an unshared classifier); fp32 tensors.
 *   v1  256 bytes: uint32 magic "ak42", int32 version 1, the 7 fields, uint8 shared,
 *       zero padding; fp32 tensors.
 *   v2  as v1 with version 2 and an int32 group size after the shared flag; fp32 norms,
 *       then each matrix as int8 values followed by one fp32 scale per `group` values
 *       of the flattened tensor.
 *
 * Owns nothing. Does not validate shapes (the loader does) or hold weights. */
#ifndef LLMCHAT_LLAMA2C_H
#define LLMCHAT_LLAMA2C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

enum {
    LLAMA2C_MAGIC = 0x616b3432,      /* "ak42" read as a little-endian uint32 */
    LLAMA2C_V0_HEADER_BYTES = 28,
    LLAMA2C_AK42_HEADER_BYTES = 256,
    /* byte offsets in the ak42 header */
    LLAMA2C_AT_VERSION = 4,
    LLAMA2C_AT_FIELDS = 8,           /* the 7 int32 shape fields */
    LLAMA2C_AT_SHARED = 36,
    LLAMA2C_AT_GROUP = 37,           /* v2 only */
};

typedef struct {
    int version;                 /* 0, 1 or 2 */
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared;                  /* 1: the classifier is the token embedding (v1/v2 store the
                                    byte as found, which the loader checks is 0 or 1) */
    int32_t group;               /* v2: values per scale of the flattened tensors */
} llama2c_header;

/* Decodes the header at p (size bytes, at least 4): v1/v2 when the ak42 magic is there
 * (then size must be at least 256), else v0 (size at least 28; vocab_size made positive
 * and shared taken from its sign). Returns false when size is too small for it. The
 * fields are not validated. */
bool llama2c_header_decode(const unsigned char *p, size_t size, llama2c_header *h);

/* Encodes h into out (256 bytes); returns the header's size (28 for v0, 256 else). */
size_t llama2c_header_encode(const llama2c_header *h, unsigned char out[LLAMA2C_AK42_HEADER_BYTES]);

/* The tensors of a file, each spanning all layers where it is per layer. */
typedef enum {
    LLAMA2C_TOKEN_EMBEDDING,  /* (vocab, dim) */
    LLAMA2C_RMS_ATT,          /* per layer (dim) */
    LLAMA2C_WQ,               /* per layer (dim, dim) */
    LLAMA2C_WK,               /* per layer (kv_dim, dim) */
    LLAMA2C_WV,               /* per layer (kv_dim, dim) */
    LLAMA2C_WO,               /* per layer (dim, dim) */
    LLAMA2C_RMS_FFN,          /* per layer (dim) */
    LLAMA2C_W1,               /* per layer (hidden, dim) */
    LLAMA2C_W2,               /* per layer (dim, hidden) */
    LLAMA2C_W3,               /* per layer (hidden, dim) */
    LLAMA2C_RMS_FINAL,        /* (dim) */
    LLAMA2C_ROPE_TABLES,      /* v0 only: two unused tables of (seq_len, head_size / 2) */
    LLAMA2C_WCLS,             /* (vocab, dim), only when not shared */
    LLAMA2C_PART_COUNT
} llama2c_part;

/* The parts of a file of h's version, in file order (wcls only when not shared);
 * *n receives how many. */
const llama2c_part *llama2c_parts(const llama2c_header *h, int *n);

/* True for the matrices (quantized in v2); false for the norms and the RoPE tables. */
bool llama2c_part_is_matrix(llama2c_part p);
/* True for the parts stored once per layer. */
bool llama2c_part_per_layer(llama2c_part p);
/* Rows and columns of one layer's part (of the whole part when not per layer). */
void llama2c_part_shape(const llama2c_header *h, llama2c_part p, uint64_t *rows, uint64_t *cols);

/* Bytes a file with header h has. The shape must be sane (positive fields, bounded as
 * the loader bounds them) so that nothing overflows. */
uint64_t llama2c_file_bytes(const llama2c_header *h);

/* Writes the header (28 or 256 bytes). */
llm_status llama2c_write_header(FILE *f, const llama2c_header *h, const char *path, llm_err *err);

/* Writes n fp32 values x as a v2 tensor: n int8 values, then n / group fp32 scales, one
 * per `group` consecutive values (n must be a multiple of group). Each group is
 * quantized symmetrically: scale = max |x| / 127, q = round(x / scale). */
llm_status llama2c_write_q8(FILE *f, const float *x, uint64_t n, int group, const char *path,
                            llm_err *err);

#endif
