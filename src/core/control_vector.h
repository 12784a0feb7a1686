/* control_vector.h — steering (control) vectors in llama.cpp's control-vector GGUF
 * format: one F32 tensor `direction.N` of n_embd values per layer N (layers numbered
 * from 0, as llama.cpp numbers them; N >= 1), added to the residual stream after layer
 * N. The format's metadata (general.architecture "controlvector",
 * controlvector.model_hint, controlvector.layer_count) is written but not required;
 * llmchat adds llmchat.suggested_scale to the vectors it makes (llama.cpp ignores it).
 *
 * Reads (checking every tensor's name, type, shape and values), writes, and makes a
 * vector from a model: the mean difference of the residual streams of two texts after
 * each layer (activation addition). Owns the vector's values. Knows nothing of how a
 * vector is applied: the engine sums the loaded vectors and the transformer adds them. */
#ifndef LLMCHAT_CONTROL_VECTOR_H
#define LLMCHAT_CONTROL_VECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "status.h"

/* The most layers a vector file may name (direction.N with N below this) and the
 * largest file read. */
enum { CONTROL_VECTOR_MAX_LAYERS = 4096 };
#define CONTROL_VECTOR_MAX_BYTES ((size_t)256 << 20)

typedef struct {
    int n_embd;    /* values per layer */
    int n_layers;  /* rows of data: one more than the highest direction.N */
    float *data;   /* (n_layers, n_embd): row N is direction.N; rows without a tensor
                      (row 0 always) are zero */
    float suggested_scale; /* the scale to apply it with when none is asked for (the file's
                              llmchat.suggested_scale, finite and not 0), else 0 */
    unsigned char *has; /* (n_layers) 1 where the file holds direction.N; NULL: every
                           row from 1 (a vector made here) */
    uint64_t fnv1a;     /* FNV-1a (64 bits) of the file's bytes when read from one (or
                           set by control_vector_hash_file); 0: not known */
} control_vector;

/* Reads a control-vector GGUF held in buf (size bytes); name is used in messages. Every
 * tensor must be called direction.N (N a decimal number, 1 <= N < MAX_LAYERS), be
 * F32, one-dimensional, all of one length, and finite. */
llm_status control_vector_parse(const void *buf, size_t size, const char *name,
                                control_vector **out, llm_err *err);
/* Reads the file at path (at most CONTROL_VECTOR_MAX_BYTES). */
llm_status control_vector_load(const char *path, control_vector **out, llm_err *err);
void control_vector_free(control_vector *cv); /* NULL does nothing */

/* Whether cv holds direction.layer (1 <= layer < n_layers, and in the file). */
bool control_vector_has(const control_vector *cv, int layer);

/* The FNV-1a (64 bits) of the file at path's bytes into *out: what a trace records of
 * a vector's file, so that a replay can tell the file changed. */
llm_status control_vector_hash_file(const char *path, uint64_t *out, llm_err *err);

/* Writes cv as a control-vector GGUF (direction.1 .. direction.(n_layers-1), as
 * llama.cpp's cvector-generator does); model_hint names the model's architecture
 * ("llama"). Through a temporary file renamed into place. */
llm_status control_vector_write(const control_vector *cv, const char *path,
                                const char *model_hint, llm_err *err);

/* The mean difference of two texts' residual streams: runs a (na tokens) and b (nb)
 * each after bos (when bos >= 0) on a transformer of its own, and sets row N (1 <= N <
 * n_layers) to the mean over the texts' tokens (bos excluded) of the residual stream
 * after layer N for a, less that for b. Row 0 stays zero (llama.cpp never applies it).
 * resid_norm (n_layers, or NULL) receives the mean Euclidean norm of the residual
 * stream after each layer over both texts' tokens (bos excluded; [0] is 0): what a
 * scale for the vector can be measured against. */
llm_status control_vector_make(const model *m, int bos, const int *a, int na, const int *b,
                               int nb, control_vector **out, float *resid_norm, llm_err *err);

#endif
