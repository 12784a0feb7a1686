/* model.h — loading and validating a Llama-2-architecture model file.
 *
 * Reads llama2.c checkpoints (legacy v0 fp32, v1 fp32 "ak42", v2 int8 Q8_0 "ak42") and
 * GGUF files (v2, v3) of the llama architecture in F32, F16, BF16, Q8_0, Q4_0, Q4_1,
 * Q5_0, Q5_1 and the K types Q2_K..Q6_K (see docs/formats.md). The file is
 * mmap'd and validated before any weight is touched: magic, version, a sane shape, and
 * that every tensor the shape implies is there, whole, with the right size. Weights
 * are then exposed as tensors of the type asked for:
 *   - TENSOR_BLOCKS (native, the default): GGUF Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
 *     Q6_K and Q8_0 tensors whose rows are whole blocks are used in place from the
 *     mapping; everything else as for TENSOR_Q8_0.
 *   - TENSOR_Q8_0: fp32 weights are quantized at load into owned buffers;
 *     llama2.c int8 files are used in place when their groups align with rows,
 *     repacked into row-aligned groups otherwise (stories260K_q80: rows of 172, groups
 *     of 32); GGUF Q8_0 is repacked into the same row layout; every other GGUF type is
 *     decoded and quantized to Q8_0 at load, in parallel.
 *   - TENSOR_F32: fp32 weights are used in place; everything else is decoded to fp32.
 * RMSNorm weights are always fp32. The model owns the mapping, the parsed GGUF
 * metadata and every buffer; all pointers stay valid until model_close. */
#ifndef LLMCHAT_MODEL_H
#define LLMCHAT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "status.h"

typedef struct {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int head_size;          /* dim / n_heads */
    int kv_dim;             /* n_kv_heads * head_size */
    bool shared_classifier; /* wcls is the token embedding */
    float rope_base;        /* RoPE frequency base (llama2.c files: 10000) */
    float rope_scale;       /* linear RoPE scaling: positions times this (1 / factor; 1: none) */
    const float *rope_freqs; /* (head_size / 2) per-pair frequency divisors (GGUF
                              * rope_freqs.weight, Llama 3.1+), or NULL; borrowed from the
                              * mapping or owned by the model */
    float rms_eps;          /* RMSNorm epsilon (llama2.c files: 1e-5) */
} model_config;

typedef struct {
    const float *rms_att;   /* (dim) */
    const float *rms_ffn;   /* (dim) */
    tensor wq;              /* (dim, dim) */
    tensor wk;              /* (kv_dim, dim) */
    tensor wv;              /* (kv_dim, dim) */
    tensor wo;              /* (dim, dim) */
    tensor w1;              /* (hidden_dim, dim) */
    tensor w2;              /* (dim, hidden_dim) */
    tensor w3;              /* (hidden_dim, dim) */
} model_layer;

typedef enum {
    MODEL_FORMAT_LLAMA2C_V0 = 0, /* legacy fp32, 28-byte header */
    MODEL_FORMAT_LLAMA2C_V1,     /* fp32, 256-byte "ak42" header */
    MODEL_FORMAT_LLAMA2C_V2,     /* int8 Q8_0, 256-byte "ak42" header */
    MODEL_FORMAT_GGUF,           /* GGUF v2 or v3, llama architecture */
} model_format;

/* Files at least this big report their progress while weights are converted. */
#define MODEL_PROGRESS_MIN_BYTES ((uint64_t)200 * 1000 * 1000)

/* Called on the loading thread while weights are converted at load: bytes of the
 * file's weights processed so far of total (done == total at the end). */
typedef void (*model_progress_fn)(void *user, uint64_t done, uint64_t total);

typedef struct {
    tensor_type weights;  /* type to compute with: TENSOR_BLOCKS (native: the file's block
                             types in place, Q8_0 for the others), TENSOR_Q8_0 or TENSOR_F32
                             (default TENSOR_BLOCKS) */
    int group;            /* group size when quantizing at load (0 = QUANT_GROUP_DEFAULT) */
    model_progress_fn progress;  /* NULL: no reports */
    void *progress_user;
    uint64_t progress_min_bytes; /* report only for files at least this big
                                    (default MODEL_PROGRESS_MIN_BYTES) */
} model_options;

typedef struct {
    model_config config;
    model_format format;
    const char *format_name;   /* "llama2.c v0 (fp32)", ... */
    tensor_type weights;       /* type of the tensors below: F32, Q8_0, or BLOCKS when some are
                                  the file's blocks in place (--weights native) */
    int n_native;              /* matrices used in place as ggml blocks (TENSOR_BLOCKS) */
    int group;                 /* Q8_0 group of the tensors below (0 for F32) */
    int file_group;            /* group size stored in a v2 file (0 otherwise) */
    char *path;                /* as given to model_open (owned) */
    const char *name;          /* basename of path, without directory (points into path) */
    long long n_params;        /* parameters, counting a shared classifier once */
    size_t file_bytes;
    size_t owned_bytes;        /* bytes allocated for converted weights */
    size_t mapped_bytes;       /* bytes of the file used as weights in place */
    char weights_label[32];    /* what the weights were and are: "Q8_0", "F32", "Q4_K→Q8_0" */
    char load_summary[224];    /* what loading did: "Q4_K, Q6_K → Q8_0 at load: 7.2 GB resident" */
    char weights_size[32];     /* memory the weights take, converted and mapped: "7.2 GB" */
    const struct gguf *meta;   /* GGUF files: the parsed metadata (tokenizer, chat template);
                                  NULL for llama2.c files. Owned; valid until model_close */

    const float *rms_final;    /* (dim) */
    tensor token_embedding;    /* (vocab_size, dim) */
    tensor wcls;               /* (vocab_size, dim); a copy of token_embedding's view when shared */
    model_layer *layers;       /* (n_layers) */

    /* private to model*.c */
    void *map;                 /* the whole file, read-only mapping */
    size_t map_bytes;
    void **owned;              /* buffers to free at close */
    int n_owned, cap_owned;
    struct model_load_state *load; /* while loading: progress and the conversion tally */
} model;

/* Fills opt with defaults (native, group 32, no progress reports). */
void model_options_default(model_options *opt);

/* Opens, validates and maps path. On failure *out is NULL and err says what is
 * wrong, e.g. "m.bin: 1,048,576 bytes, but its header implies 1,056,540 (truncated?)". */
llm_status model_open(const char *path, const model_options *opt, model **out, llm_err *err);
void model_close(model *m); /* NULL does nothing */

/* The type the weights are computed in: "native" (the file's block types, in place,
 * with Q8_0 for the types converted at load), "Q8_0" or "F32". */
const char *model_weights_name(const model *m);
/* The same as --weights names it: "native", "q8_0" or "f32" (traces record it). */
const char *model_weights_option(const model *m);
/* Parses a --weights value: native, q8_0 (or int8), f32 (or fp32). False for anything
 * else, leaving *out alone. */
bool model_weights_parse(const char *name, tensor_type *out);

#endif
