/* kernels.h — the compute kernels: matrix products over weight tensors (fp32, Q8_0, or
 * ggml blocks used in place: Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4),
 * fp32 softmax and attention, attention over the int8 KV cache; and the choice of the
 * instruction set they run on.
 *
 * One table of kernels per instruction set (src/kernels/: scalar.c, the plain-C
 * reference that always builds; x86-avx2.c, x86-avx512.c and x86-amx.c, or arm-neon.c
 * and arm-neon-dotprod.c, when configure builds them); kernels_init picks one table at
 * start, the best the CPU supports unless told otherwise. Every SIMD kernel has its
 * plain-C twin in the scalar table, and tests compare them. kernels_matmul,
 * kernels_matvec and the GEMMs split their rows over OpenMP threads themselves (call
 * them from outside any parallel region); every other function here runs on the
 * calling thread only, for callers that run their own parallel region.
 *
 * The kernels' scratch memory is the caller's (kernels/scratch.h): the calls that split
 * over threads take a kernels_workspace (one scratch per thread), the per-thread calls
 * that need scratch a kernels_scratch. Either may be NULL: the call then makes its own
 * and frees it before it returns (for tests and tools; an owner that runs many calls
 * keeps one, as the transformer does). Out of memory for the scratch, a call returns
 * false and its outputs are undefined. Owns no tensors. */
#ifndef LLMCHAT_KERNELS_H
#define LLMCHAT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant.h"
#include "scratch.h"

typedef enum {
    KERNELS_AUTO = 0,   /* the best the CPU supports */
    KERNELS_SCALAR,     /* plain C */
    KERNELS_AVX2,       /* x86-64 AVX2 + FMA + F16C */
    KERNELS_AVX512,     /* x86-64 AVX-512 F/BW/VL + VNNI */
    KERNELS_NEON,       /* AArch64 Advanced SIMD */
    KERNELS_NEON_DOTPROD, /* AArch64 Advanced SIMD + the Armv8.2 dot product (sdot) */
    KERNELS_AMX,        /* x86-64 AVX-512 VNNI, the prefill GEMM on AMX-INT8 tiles */
    KERNELS_AVX_VNNI,   /* x86-64 AVX2 + FMA + F16C, the prefill GEMM with AVX-VNNI */
    KERNELS_COUNT
} kernels_isa;

/* Chooses the kernels. KERNELS_AUTO picks the best the CPU supports; asking for a set
 * the CPU (or the build) lacks falls back to the best available. Returns the set
 * actually chosen. Safe to call more than once (not while kernels run). Without a call,
 * the first kernel used chooses KERNELS_AUTO. */
kernels_isa kernels_init(kernels_isa wanted);

/* The one list of the names: X(value, name, short name) for auto, then for every
 * instruction set, in the order --help and the manuals show them. The name is what
 * kernels_isa_name prints; kernels_isa_parse (--kernels, --isa) takes either. */
#define KERNELS_ISA_LIST(X) X(KERNELS_AUTO, "auto", "auto") KERNELS_ISA_SETS(X)
#define KERNELS_ISA_SETS(X)                                                               \
    X(KERNELS_SCALAR, "scalar", "scalar")                                                 \
    X(KERNELS_AVX2, "avx2", "avx2")                                                       \
    X(KERNELS_AVX_VNNI, "avx-vnni", "avxvnni")                                            \
    X(KERNELS_AVX512, "avx512-vnni", "avx512")                                            \
    X(KERNELS_AMX, "avx512-amx", "amx")                                                   \
    X(KERNELS_NEON, "neon", "neon")                                                       \
    X(KERNELS_NEON_DOTPROD, "neon-dotprod", "neon-dotprod")
/* The short names joined by " | ", a string literal (for static --help text):
 * "auto | scalar | avx2 | avxvnni | avx512 | amx | neon | neon-dotprod". */
#define KERNELS_ISA_SHORT_(value, name, short_name) " | " short_name
#define KERNELS_ISA_CHOICES "auto" KERNELS_ISA_SETS(KERNELS_ISA_SHORT_)

/* "auto", "scalar", "avx2", "avx512-vnni", "avx512-amx", "neon", "neon-dotprod". */
const char *kernels_isa_name(kernels_isa isa);
/* KERNELS_ISA_CHOICES. */
const char *kernels_isa_choices(void);
/* True when this build has the set and this CPU can run it (AUTO and SCALAR always). */
bool kernels_isa_supported(kernels_isa isa);
/* Parses a set's name or short name (KERNELS_ISA_LIST). Returns false, leaving *out
 * alone, for anything else. */
bool kernels_isa_parse(const char *name, kernels_isa *out);

/* How the matrix kernels prefetch the weights they stream ahead of use (kernels/
 * prefetch.c says why T0 is the default): into every cache level (T0), with the
 * non-temporal hint (NTA), or not at all (NONE, the hardware prefetchers alone). The
 * KV-cache reads of attention always use T0. */
typedef enum {
    KERNELS_PREFETCH_T0 = 0,
    KERNELS_PREFETCH_NTA,
    KERNELS_PREFETCH_NONE,
} kernels_prefetch;

/* Sets the way (not while kernels run); without a call, KERNELS_PREFETCH_T0. */
void kernels_set_prefetch(kernels_prefetch way);
kernels_prefetch kernels_get_prefetch(void);
/* "t0", "nta", "none". */
const char *kernels_prefetch_name(kernels_prefetch way);
/* Parses those names; false, leaving *out alone, for anything else. */
bool kernels_prefetch_parse(const char *name, kernels_prefetch *out);

/* How many weight streams a decode thread reads side by side (kernels/
 * decode_streams.c says why the default differs by CPU): 4 (the AVX-512 one-vector
 * kernels read four rows at once, and GGUF Q8_0 matrices get decode panels unless
 * asked not to) or 1 (one row after the other, no panels unless asked for). Either
 * gives the same bits. kernels_set_decode_streams(0) (or any count but 1 and 4)
 * returns to this CPU's default: 4 on Intel, 1 elsewhere. Not while kernels run. */
void kernels_set_decode_streams(int streams);
int kernels_decode_streams(void);

/* out (rows) = w (rows, cols) · x. For Q8_0 and the block types (tensor_is_q8), xq
 * holds x quantized with w's group and stride (vector 0 of xq is used) and x may be
 * NULL; for F32, x (cols) is used and xq may be NULL. Parallel over rows, each thread
 * in its scratch of ws (grown to omp_get_max_threads() scratches; NULL: a workspace for
 * the call). False when out of memory for the scratch: out is then undefined. Called
 * from inside a parallel region, it runs in a workspace made for the call (the
 * threads of nested regions cannot be told apart). */
bool kernels_matvec(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                    const qbatch *xq);

/* out (n, rows) = x (n, cols) · wᵀ: the batched form used by prefill. Same rules for x,
 * xq and ws as kernels_matvec, with n vectors. Parallel over rows. */
bool kernels_matmul(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                    const qbatch *xq, int n);

/* The same product for prefill's batches: from KERNELS_GEMM_MIN_VECS vectors on (where
 * the GEMM pays off), Q8_0 products pack the vectors (in blocks of 16, once per call) for
 * a GEMM kernel that keeps each group's int32 sums in registers across 16 vectors at
 * once; block-type tensors are made exact Q8_0 a few rows at a time for it (their mins
 * added after). Below, kernels_matmul. Its results equal kernels_matmul's up to float
 * rounding (the same bits on every kernel set that has a GEMM kernel; the others run
 * kernels_matmul). The pack is in scratch 0 of ws (the calling thread's); ws and the
 * result as kernels_matmul's. */
enum { KERNELS_GEMM_MIN_VECS = 16 };
bool kernels_gemm(kernels_workspace *ws, float *out, const tensor *w, const float *x,
                  const qbatch *xq, int n);

/* The GEMM for count matrices (at most KERNELS_GEMM_SHARED_MAX) that read the same x
 * and xq (one cols and group), for ANY n >= 1 (the caller chooses the GEMM's bits: a
 * vector's result does not depend on how many share the pack): out[j] (n, w[j]->rows).
 * The vectors are packed once and all the matrices' rows shared out in one parallel
 * region, so q, k and v (or gate and up) cost one pack and one wait for the last
 * thread, not three; each product has kernels_gemm's bits (kernels_matmul's where w's
 * type or the table has no GEMM). ws and the result as kernels_matmul's (false: every
 * out[j] undefined). */
enum { KERNELS_GEMM_SHARED_MAX = 8 };
bool kernels_gemm_shared(kernels_workspace *ws, int count, float *const *out,
                         const tensor *const *w, const float *x, const qbatch *xq, int n);

/* Rows r0..r1-1 of kernels_matmul's out (n, rows), on the calling thread only, in its
 * scratch s (NULL: one made for the call). Ranges that start at a multiple of
 * kernels_row_block_of(w) give the same bits as kernels_matmul, and vector 0 of a
 * batch the same bits as a matvec. False when out of memory (counted in s, see
 * kernels_scratch_failures): those rows of out are then undefined. */
bool kernels_matmul_rows(kernels_scratch *s, float *out, const tensor *w, const float *x,
                         const qbatch *xq, int n, int r0, int r1);
/* The row block of w's products: the kernels' blocks of rows, or a panel's rows (16 for
 * Q8_0, 8 for Q4_K) when w is read from panels (ranges starting at its multiples then
 * read no panel twice, and cut no Q4_K group). */
int kernels_row_block_of(const tensor *w);

/* Panels (kernels/panels.h): a matrix's values repacked several rows side by side for
 * a table's decode kernel. Two kinds:
 *  - a GGUF Q8_0 tensor's, 16 rows a panel, for the AVX-512 tables, a copy (the
 *    tensor's memory twice): a tensor with them (tensor.panels) is multiplied from them
 *    by kernels_matvec and kernels_matmul with the bits of kernels_gemm (the scalar
 *    GEMM's), so a product rounds the same in decode and in a prompt's batch.
 *    kernels_gemm still reads the blocks.
 *  - a Q4_K tensor's, 8 rows a group, for the x86 tables: the group's rows' bytes
 *    reordered, which take the place of those rows (the loader packs them in place where
 *    the weights are its own memory). Its one-vector products read them with the bits of
 *    the AVX2 row dot (the AVX2 table's own; the AVX-512 tables' own rounds otherwise);
 *    every other product gathers the rows back (tensor_row_read) and reads them with
 *    that row dot, or unpacks them for the GEMM (a whole group from its panels where
 *    the table has unpack_k4_group), so the tensor's rows have one set of bits. A table
 *    with no such kernel (kernels_panels_read false) reads every row so.
 * kernels_panels_wanted: the chosen table reads Q8_0 panels. kernels_panels_read: it
 * reads panels of w (the loader packs those of such matrices only). kernels_panels_pack
 * writes kernels_panels_bytes(w) bytes from w's blocks, parallel over panels; for a
 * Q4_K w, dst may be w's blocks. False: out of memory (in place, a group is copied
 * aside), and w's rows are then neither blocks nor panels. */
bool kernels_panels_wanted(void);
bool kernels_panels_read(const tensor *w);
/* Whether a load that was not told --panels packs Q8_0 panels: the table reads them
 * and this CPU reads four streams (kernels_decode_streams). */
bool kernels_panels_by_default(void);
/* Whether a load that was not told --panels packs Q4_K panels: the table's panel
 * kernel gives its own row dot's bits (the AVX2 table), so they change no result. */
bool kernels_k4_panels_by_default(void);
size_t kernels_panels_bytes(const tensor *w);
bool kernels_panels_pack(uint8_t *dst, const tensor *w);

/* The int8 dot product of one Q8_0 row with one quantized vector: sum over groups of
 * (Σ a·b) * as * bs. `len` is a multiple of group. */
float kernels_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs, int len,
                     int group);
/* The same, always the plain-C reference. */
float kernels_dot_q8_ref(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                         int len, int group);

/* fp32 helpers for attention. Row r of `rows` starts at rows + r * row_stride.
 * kernels_rows_dot:  out[r] = rows[r] · x (len values), r < n_rows.
 * kernels_rows_axpy: out[j] += Σ_r a[r] * rows[r][j], j < len. */
void kernels_rows_dot(float *out, const float *rows, size_t row_stride, int n_rows,
                      const float *x, int len);
void kernels_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
                       const float *a, int len);

/* In place: x[i] = exp(x[i] - max) / Σ exp(x[j] - max), n >= 1. The SIMD exp is within
 * 2 ulp of expf. */
void kernels_softmax(float *x, int n);

/* In place: gate[i] = silu(gate[i]) * up[i], i < n: SwiGLU, silu(x) = x / (1 + e^-x)
 * (run.c's operations; the SIMD exp is within 2 ulp of expf). */
void kernels_swiglu(float *gate, const float *up, int n);
/* gate[i] = gelu(gate[i]) * up[i], i < n: GELU's tanh form, 0.5 g (1 + tanh(u)) with
 * u = sqrt(2/pi) (g + 0.044715 g^3), computed as g / (1 + exp(-2u)) (the same value:
 * 1 + tanh(u) = 2 / (1 + exp(-2u))), which needs only exp and keeps its precision
 * where g is far below 0. The Gemma families' feed-forward. */
void kernels_geglu(float *gate, const float *up, int n);

/* Causal attention of one head over a batch of n queries at positions pos..pos+n-1,
 * keys and values at positions 0..pos+n-1 (fp32 rows).
 *   q:   (n, hs), row i at q + i * q_stride
 *   k, v: (pos + n, hs), row t at k + t * kv_stride (same for v)
 *   out: (n, hs), row i at out + i * out_stride (overwritten)
 *   att: scratch (n, att_stride), att_stride >= pos + n; on return row i holds
 *        query i's softmaxed weights over keys 0..pos+i, zeros after them.
 * Scores are scale * q·k. Query blocks share each key and value row they load (the
 * AVX-512 kernel transposes the keys into s, the calling thread's scratch; NULL: one
 * made for the call). False when out of memory (counted in s): out and att are then
 * undefined. */
bool kernels_attention_f32(kernels_scratch *s, float *out, size_t out_stride, float *att,
                           size_t att_stride, const float *q, size_t q_stride, const float *k,
                           const float *v, size_t kv_stride, int n, int pos, int hs,
                           float scale);

/* Attention of one query over one head's int8 KV cache (a decode step). The cache
 * holds, per layer and KV head, key rows k (n_keys, hs) int8, row t at k + t * hs,
 * with one fp32 scale per row ks (n_keys), each row quantized by
 * quant_quantize_row(k + t * hs, ks + t, x, hs, hs, hs); values v / vs the same.
 *   q:      (hs) fp32
 *   att:    scratch (n_keys); on return the softmaxed weights
 *   out:    (hs) = Σ_t att[t] * vs[t] * v[t] (overwritten)
 * scores[t] = scale * ks[t] * (q · k[t]). Any hs >= 1, n_keys >= 1. Every kernel set
 * converts the int8 values to fp32 (the query is not quantized), so the result is the
 * fp32 attention of the dequantized rows up to fp32 rounding. */
void kernels_attention_q8(float *out, float *att, const float *q, const int8_t *k,
                          const float *ks, const int8_t *v, const float *vs, int n_keys, int hs,
                          float scale);

#endif
