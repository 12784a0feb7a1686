/* model_internal.h — what the format loaders (model_llama2c.c, model_gguf.c) share with
 * model.c: buffers the model owns, building its tensors (in place, quantized, decoded),
 * the shape limits, progress reports and the tally behind the load summary.
 * Private to src/formats/model*.c. */
#ifndef LLMCHAT_MODEL_INTERNAL_H
#define LLMCHAT_MODEL_INTERNAL_H

#include "gguf.h"
#include "llama2c.h"
#include "model.h"
#include "model_family.h"

/* Upper bounds of a sane shape: far beyond any Llama 2 model, small enough that no
 * size computed from them overflows 64 bits. */
enum {
    MODEL_MAX_DIM = 65536,
    MODEL_MAX_HIDDEN = 1 << 20,
    MODEL_MAX_LAYERS = 1024,
    MODEL_MAX_VOCAB = 1 << 20,
    MODEL_MAX_SEQ = 1 << 20,
    MODEL_MAX_EXPERTS = 512, /* experts of a layer (Qwen3 MoE: 128; DeepSeek V3: 256) */
    MODEL_MAX_HEAD = 1024, /* head size (dim / n_heads); Llama models use 64..256 */
};

/* The file's bytes, size of them, at *out (model_memory.c): read into memory of 2 MiB
 * pages when read_in, else mapped; read-only either way. Released by
 * model_memory_release with the same size and read_in. */
llm_status model_memory_hold(int fd, size_t size, bool read_in, const char *path, void **out,
                             llm_err *err);
void model_memory_release(void *p, size_t size, bool read_in);
/* Makes memory that model_memory_hold read the file into (all size bytes of it) writable,
 * or read-only again; false where the system refuses. */
bool model_memory_writable(void *p, size_t size, bool writable);
/* Gives back the whole pages of n bytes at p of a mapped file, which are not read again
 * (read, the file fills them again). */
void model_memory_give_back(const void *p, size_t n);

/* The shape fields in header order, and the head size. */
typedef struct {
    int64_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int64_t head_size;  /* values per head when the file says (GGUF attention.key_length);
                           0: dim / n_heads */
} model_shape;

/* Checks a shape against the bounds above and the rules of the architecture (heads
 * divide dim unless the head size is given, kv heads divide heads, even head size); on
 * failure writes the reason (a phrase) into why. */
bool model_shape_ok(const model_shape *s, char *why, size_t why_size);

/* Fills m->config from a checked shape (head_size unless given, q_dim and kv_dim
 * derived; llama's description) and counts m->n_params. rope_base and rms_eps are left
 * to the caller. */
void model_set_shape(model *m, const model_shape *s, bool shared_classifier);

/* What loading did with a matrix of the file. */
typedef enum {
    MODEL_IN_PLACE,    /* used where it lies in the mapping */
    MODEL_CONVERTED,   /* decoded and quantized again (or decoded to fp32) */
} model_treatment;

/* Loading state: the progress reports and what was done, for the summary. */
enum { MODEL_TALLY_MAX = 16 };
struct model_load_state {
    model_progress_fn progress;  /* NULL: no reports */
    void *user;
    uint64_t done, total;        /* bytes of weights processed / to process */
    struct {
        char from[16];           /* source type: "Q4_K", "F32", ... */
        model_treatment how;
        int count;
    } tally[MODEL_TALLY_MAX];
    int n_tally;
};

/* Records what was done with a matrix of type `from`, and that `bytes` of the file
 * were processed: reports progress when asked for. */
void model_note_tensor(model *m, const char *from, model_treatment how, uint64_t bytes);

/* A buffer of `bytes` (64-byte aligned) freed by model_close; NULL when out of memory. */
void *model_own(model *m, size_t bytes);

/* An fp32 tensor viewing (rows, cols) floats that stay valid (the mapping). */
tensor model_tensor_view(const float *f, int rows, int cols);

/* Quantizes (rows, cols) fp32 values into an owned row-aligned Q8_0 tensor. */
bool model_tensor_quantize(model *m, tensor *t, const float *src, int rows, int cols, int group);

/* Reads row `row` (cols values) of a source tensor as fp32 into out. Must be safe to
 * call from several threads at once. */
typedef void (*model_row_reader)(const void *src, int row, int cols, float *out);

/* An owned tensor of type want (F32, or Q8_0 with `group`) made from the rows that
 * read gives, rows converted in parallel. Returns false when out of memory. */
bool model_tensor_convert(model *m, tensor *t, tensor_type want, int group, int rows, int cols,
                          model_row_reader read, const void *src);

/* The tensor of llama2.c part p (a matrix) of layer l, for the loader and the writer. */
const tensor *model_part_tensor(const model *m, llama2c_part p, int l);

/* The format loaders: from m->map (m->map_bytes) they validate the file, fill
 * m->config, m->format, m->format_name, m->n_params and every weight, or fail with a
 * message naming m->path. */
llm_status model_load_llama2c(model *m, const model_options *opt, llm_err *err);
llm_status model_load_gguf(model *m, const model_options *opt, llm_err *err);

/* The GGUF loader's second half (model_gguf_weights.c): with m->config and each layer's
 * window set from family f's keys, finds, checks and loads every weight of g the
 * description implies (and sets arch.fused_qkv, fused_gate_up, the LongRoPE factors,
 * rope_freqs and m->n_params). */
llm_status model_gguf_weights(model *m, const gguf *g, const model_family *f,
                              const model_options *opt, llm_err *err);

#endif
