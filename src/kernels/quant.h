/* quant.h — weight tensors (fp32 or int8 Q8_0) and the Q8_0 format: quantizing and
 * dequantizing rows and batches of activation vectors.
 *
 * Q8_0 here means: value ≈ q * scale, q in [-127, 127], one fp32 scale per `group`
 * consecutive values OF ONE ROW. Rows are padded with zeros to `stride`, a multiple
 * of `group`, so groups never straddle rows (files whose groups do straddle are
 * repacked by the loader). Activations are quantized the same way, with the same
 * group and stride as the weight they multiply, so a dot product is a sum over
 * groups of (int32 dot of the int8 values) * w_scale * x_scale.
 *
 * The products over these tensors are in kernels.h. This file owns no tensors:
 * tensors point into a model's mapping or buffers the model owns. */
#ifndef LLMCHAT_QUANT_H
#define LLMCHAT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    QUANT_GROUP_DEFAULT = 32,
    QUANT_GROUP_MAX = 1024,
    QUANT_BLOCK = 32,        /* values in a block of the GGUF layout */
    QUANT_BLOCK_BYTES = 34,  /* its bytes: an IEEE half scale, then 32 int8 values */
};

/* How a tensor's values are stored. Q8_0 and Q8_0_BLOCKS hold the same numbers (int8
 * values times one scale per group of a row) in two layouts: Q8_0 keeps a row's int8
 * values together and its fp32 scales apart (llama2.c's layout, and what the loader
 * builds); Q8_0_BLOCKS is ggml's block_q8_0, used in place from a GGUF file: each row is
 * cols / 32 blocks of QUANT_BLOCK_BYTES. BLOCKS is any other ggml block type used in
 * place (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4: `btype`), each row whole
 * blocks.
 *
 * As a model option (model_options.weights), TENSOR_BLOCKS means "native": every
 * tensor whose type has kernels is used in place, the others become Q8_0. */
typedef enum {
    TENSOR_F32 = 0,
    TENSOR_Q8_0 = 1,
    TENSOR_Q8_0_BLOCKS = 2,
    TENSOR_BLOCKS = 3,
} tensor_type;

typedef struct {
    tensor_type type;
    int rows, cols;      /* logical shape (out, in) */
    int stride;          /* values per stored row: cols for F32 and Q8_0_BLOCKS, cols rounded
                            up to group for Q8_0 */
    int group;           /* values per scale: for Q8_0 a multiple of 32 or the whole padded
                            row, for Q8_0_BLOCKS 32; 0 for F32 */
    const float *f;      /* F32: (rows, stride) */
    const int8_t *q;     /* Q8_0: (rows, stride), zeros in the padding */
    const float *scale;  /* Q8_0: (rows, stride / group) */
    const uint8_t *blocks; /* Q8_0_BLOCKS: (rows, cols / 32) blocks; cols % 32 == 0;
                              BLOCKS: (rows, row_bytes) */
    int btype;           /* BLOCKS: the ggml type of the blocks (ggml_type.h) */
    size_t row_bytes;    /* BLOCKS: bytes per row (cols / block values * block bytes) */
    const uint8_t *panels; /* the values repacked for a decode kernel (kernels_panels_pack),
                              or NULL. Q8_0_BLOCKS: all rows, and the blocks stay valid.
                              Q4_K BLOCKS: the rows of whole groups of TENSOR_K4_GROUP_ROWS,
                              which are read from here alone (tensor_row_read): their
                              blocks may be these same bytes, packed in place */
    const uint8_t *ahead;  /* bytes a GEMM kernel may prefetch while it multiplies this
                              tensor (ahead_bytes of them): in a K-quant prefill, the next
                              rows' blocks, which the rows made Q8_0 come from; else NULL */
    size_t ahead_bytes;    /* 0 when ahead is NULL */
} tensor;

/* True for the int8 layouts and the block types: the tensor multiplies activations
 * quantized with its group and stride (a qbatch; 32 and cols for the block types). */
static inline bool tensor_is_q8(const tensor *t)
{
    return t->type == TENSOR_Q8_0 || t->type == TENSOR_Q8_0_BLOCKS || t->type == TENSOR_BLOCKS;
}

enum { TENSOR_K4_GROUP_ROWS = 8 }; /* rows of a Q4_K panel (kernels/panels.h) */

/* Whether row r of t is held in Q4_K panels, not as blocks. */
static inline bool tensor_row_in_panels(const tensor *t, int r)
{
    return t->type == TENSOR_BLOCKS && t->panels &&
           r < t->rows / TENSOR_K4_GROUP_ROWS * TENSOR_K4_GROUP_ROWS;
}

/* Row r of a BLOCKS tensor, where its blocks are (not a row held in panels). */
static inline const uint8_t *tensor_row_blocks(const tensor *t, int r)
{
    return t->blocks + (size_t)r * t->row_bytes;
}

/* Blocks [b, b + n) of row r of a BLOCKS tensor as the file's bytes: of a row held in
 * panels gathered into buf (n Q4_K blocks, n x TENSOR_K4_BLOCK_BYTES), of any other row
 * its blocks in place (kernels/panels.c). tensor_row_read: the whole row (buf of
 * t->row_bytes). */
enum { TENSOR_K4_BLOCK_BYTES = 144 };
const uint8_t *tensor_blocks_read(const tensor *t, int r, int b, int n, uint8_t *buf);
const uint8_t *tensor_row_read(const tensor *t, int r, uint8_t *buf);

/* The block of row r, group g of a Q8_0_BLOCKS tensor; its scale and values. */
static inline const uint8_t *tensor_block(const tensor *t, int r, int g)
{
    return t->blocks + ((size_t)r * (t->cols / QUANT_BLOCK) + g) * QUANT_BLOCK_BYTES;
}
float quant_half_to_float(uint16_t h);
static inline float quant_block_scale(const uint8_t *block)
{
    return quant_half_to_float((uint16_t)(block[0] | block[1] << 8));
}
static inline const int8_t *quant_block_values(const uint8_t *block)
{
    return (const int8_t *)(block + 2);
}

/* A batch of activation vectors quantized for one tensor's group and stride. */
typedef struct {
    int n;          /* vectors */
    int len;        /* logical values per vector */
    int stride;     /* stored values per vector (zero padded), == the tensor's stride */
    int group;
    int8_t *q;      /* (n, stride) */
    float *scale;   /* (n, stride / group) */
} qbatch;

/* Rounds cols up to a multiple of group. */
int quant_stride(int cols, int group);

/* Quantizes n values of x into q (stride values, zero padded) and scale (stride/group):
 * scale = max |x| / 127 over the group, q = x / scale rounded to nearest even.
 * A group holding a NaN or an infinity gets a scale that is not finite, so that bad
 * values are never hidden behind a finite scale. Same bytes on every kernel set. */
void quant_quantize_row(int8_t *q, float *scale, const float *x, int n, int stride, int group);

/* Allocates / frees a qbatch for n vectors of len values with the given group. */
qbatch *qbatch_new(int n, int len, int group);
void qbatch_free(qbatch *b);
/* Quantizes vectors x (n, len) into b (b->n >= n); parallel over vectors when n > 8. */
void qbatch_quantize(qbatch *b, const float *x, int n);

/* Writes row `row` of w as fp32 into out (cols). */
void quant_dequantize_row(float *out, const tensor *w, int row);

/* out (n_rows, hs) = q (n_rows, hs) rows times their scales s (n_rows), exactly
 * (float)q * s: the int8 KV cache's rows (one scale per row) made fp32 again. */
void quant_dequantize_rows(float *out, const int8_t *q, const float *s, int n_rows, int hs);

#endif
