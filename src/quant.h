/* quant.h — weight tensors (fp32 or int8 Q8_0) and the matrix kernels over them.
 *
 * Q8_0 here means: value ≈ q * scale, q in [-127, 127], one fp32 scale per `group`
 * consecutive values OF ONE ROW. Rows are padded with zeros to `stride`, a multiple
 * of `group`, so groups never straddle rows (files whose groups do straddle are
 * repacked by the loader). Activations are quantized the same way, with the same
 * group and stride as the weight they multiply, so a dot product is a sum over
 * groups of (int32 dot of the int8 values) * w_scale * x_scale.
 *
 * Every kernel has a plain-C reference twin; the fastest kernel the CPU supports is
 * chosen once (quant_init) and can be forced for tests. The kernels parallelise
 * over output rows with OpenMP. This file owns no tensors: tensors point into a
 * model's mapping or buffers the model owns. */
#ifndef LLMCHAT_QUANT_H
#define LLMCHAT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { QUANT_GROUP_DEFAULT = 32, QUANT_GROUP_MAX = 1024 };

typedef enum { TENSOR_F32 = 0, TENSOR_Q8_0 = 1 } tensor_type;

typedef struct {
    tensor_type type;
    int rows, cols;      /* logical shape (out, in) */
    int stride;          /* values per stored row: cols for F32, cols rounded up to group for Q8_0 */
    int group;           /* Q8_0 values per scale (a multiple of 32 or the whole padded row); 0 for F32 */
    const float *f;      /* F32: (rows, stride) */
    const int8_t *q;     /* Q8_0: (rows, stride), zeros in the padding */
    const float *scale;  /* Q8_0: (rows, stride / group) */
} tensor;

/* A batch of activation vectors quantized for one tensor's group and stride. */
typedef struct {
    int n;          /* vectors */
    int len;        /* logical values per vector */
    int stride;     /* stored values per vector (zero padded), == the tensor's stride */
    int group;
    int8_t *q;      /* (n, stride) */
    float *scale;   /* (n, stride / group) */
} qbatch;

typedef enum {
    QUANT_ISA_AUTO = 0, /* best the CPU supports */
    QUANT_ISA_SCALAR,
    QUANT_ISA_AVX2,
    QUANT_ISA_AVX512_VNNI,
    QUANT_ISA_COUNT
} quant_isa;

/* Chooses the kernels. QUANT_ISA_AUTO picks the best the CPU supports; asking for
 * an ISA the CPU lacks (or the build lacks) falls back to the best available.
 * Returns the ISA actually selected. Safe to call more than once. */
quant_isa quant_init(quant_isa wanted);
const char *quant_isa_name(quant_isa isa);
bool quant_isa_supported(quant_isa isa);

/* Rounds cols up to a multiple of group. */
int quant_stride(int cols, int group);

/* Quantizes n values of x into q (stride values, zero padded) and scale (stride/group).
 * A group holding a NaN or an infinity gets a scale that is not finite, so that bad
 * values are never hidden behind a finite scale. */
void quant_quantize_row(int8_t *q, float *scale, const float *x, int n, int stride, int group);

/* Allocates / frees a qbatch for n vectors of len values with the given group. */
qbatch *qbatch_new(int n, int len, int group);
void qbatch_free(qbatch *b);
/* Quantizes vectors x (n, len) into b (b->n >= n). */
void qbatch_quantize(qbatch *b, const float *x, int n);

/* out (rows) = w (rows, cols) · x. For Q8_0, xq holds x quantized with w's group and
 * stride (vector 0 of xq is used) and x may be NULL; for F32, x (cols) is used and xq
 * may be NULL. Parallel over rows. */
void quant_matvec(float *out, const tensor *w, const float *x, const qbatch *xq);

/* out (n, rows) = x (n, cols) · wᵀ: the batched form used by prefill. Same rules
 * for x and xq as quant_matvec, with n vectors. */
void quant_matmul(float *out, const tensor *w, const float *x, const qbatch *xq, int n);

/* Rows r0..r1-1 of quant_matmul's out (n, rows), on the calling thread only: for
 * callers that run their own parallel region and split the rows themselves. Ranges
 * that start at a multiple of quant_row_block() give the same bits as quant_matmul. */
void quant_matmul_rows(float *out, const tensor *w, const float *x, const qbatch *xq, int n,
                       int r0, int r1);
int quant_row_block(void);

/* Writes row `row` of w as fp32 into out (cols). */
void quant_dequantize_row(float *out, const tensor *w, int row);

/* Small fp32 kernels for attention. Single-threaded: call them from inside the
 * caller's own parallel region. Row r of `rows` starts at rows + r * row_stride.
 * quant_rows_dot_f32:  out[r] = rows[r] · x (len values), r < n_rows.
 * quant_rows_axpy_f32: out[j] += Σ_r a[r] * rows[r][j], j < len. */
void quant_rows_dot_f32(float *out, const float *rows, size_t row_stride, int n_rows,
                        const float *x, int len);
void quant_rows_axpy_f32(float *out, const float *rows, size_t row_stride, int n_rows,
                         const float *a, int len);
/* In place: x[i] = exp(x[i] - max) / Σ exp(x[j] - max), n >= 1. The SIMD exp is
 * within 2 ulp of expf. Single-threaded, like the helpers above. */
void quant_softmax_f32(float *x, int n);

/* Causal attention of one head over a batch of n queries at positions pos..pos+n-1,
 * keys and values at positions 0..pos+n-1 (rows of the KV cache). Single-threaded.
 *   q:   (n, hs), row i at q + i * q_stride
 *   k, v: (pos + n, hs), row t at k + t * kv_stride (same for v)
 *   out: (n, hs), row i at out + i * out_stride (overwritten)
 *   att: scratch (n, att_stride), att_stride >= pos + n; on return row i holds
 *        query i's softmaxed weights over keys 0..pos+i, zeros after them.
 * Scores are scale * q·k. Query blocks share each key and value row they load. */
void quant_attention_f32(float *out, size_t out_stride, float *att, size_t att_stride,
                         const float *q, size_t q_stride, const float *k, const float *v,
                         size_t kv_stride, int n, int pos, int hs, float scale);

/* The int8 KV cache: per layer and KV head, key rows k (n_keys, hs) int8, row t at
 * k + t * hs, with one fp32 scale per row ks (n_keys), each row quantized by
 * quant_quantize_row(k + t * hs, ks + t, x, hs, hs, hs) (symmetric, q in [-127, 127]);
 * values v / vs the same.
 *
 * Attention of one query over one head's int8 KV cache (a decode step). Single-threaded.
 *   q:      (hs) fp32
 *   k, v:   (n_keys, hs) int8 rows, row t at k + t * hs (same for v)
 *   ks, vs: (n_keys) row scales
 *   att:    scratch (n_keys); on return the softmaxed weights
 *   out:    (hs) = Σ_t att[t] * vs[t] * v[t] (overwritten)
 * scores[t] = scale * ks[t] * (q · k[t]). Any hs >= 1, n_keys >= 1. Every kernel set
 * converts the int8 values to fp32 (the query is not quantized), so the result is the
 * fp32 attention of the dequantized rows up to fp32 rounding. */
void quant_attention_q8(float *out, float *att, const float *q, const int8_t *k, const float *ks,
                        const int8_t *v, const float *vs, int n_keys, int hs, float scale);

/* out (n_rows, hs) = q (n_rows, hs) rows times their scales s (n_rows), exactly
 * (float)q * s: what prefill's batched fp32 attention reads. Single-threaded. */
void quant_dequantize_q8_rows(float *out, const int8_t *q, const float *s, int n_rows, int hs);

/* The int8 dot product of one Q8_0 row with one quantized vector: sum over groups of
 * (Σ a·b) * as * bs. `len` is a multiple of group. Exposed for tests and the bench. */
float quant_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                   int len, int group);
/* Reference twin of quant_dot_q8, plain C, always available. */
float quant_dot_q8_ref(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                       int len, int group);

#endif
