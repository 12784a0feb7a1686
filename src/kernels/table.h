/* kernels/table.h — the table of kernels each instruction-set file exports (internal to
 * the kernels: included by the files in src/kernels/ only: kernels.c, quant.c, the tables).
 *
 * One table per instruction set: kernels_scalar (plain C, always built: the reference
 * every other table is tested against) and, when configure builds them, the x86 tables
 * or the AArch64 ones.
 * src/kernels/kernels.c picks one table at start. A table with a base (the AMX one: its base
 * is the AVX-512 table) takes every entry it leaves NULL from the base first. An entry
 * still NULL falls back to the scalar table's entry (kernels_attention_f32: to the
 * one-query-at-a-time loop over the chosen table's own row kernels), except gemm_q8
 * (without one, kernels_gemm is kernels_matmul), matvec_q8b (without one,
 * Q8_0_BLOCKS rows are made Q8_0 a few at a time for rows_q8) and matmul_q8p (without
 * one, panels are neither packed nor read). Every kernel is
 * single-threaded: src/kernels/kernels.c splits the work over threads.
 *
 * The entries that may need scratch memory take the calling thread's kernels_scratch
 * first (kernels/scratch.h: one named slot per use); those of a table that needs none
 * ignore it. A kernel whose kernels_scratch_get fails returns at once, its outputs
 * undefined: the failure is counted in the scratch, and kernels.c reports it. */
#ifndef LLMCHAT_KERNELS_TABLE_H
#define LLMCHAT_KERNELS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"

/* Register and cache blocking shared by the kernels and the row splitting:
 * a batch kernel computes blocks of BLOCK_ROWS weight rows x BLOCK_VECS input vectors
 * and walks the vectors in tiles of TILE_VECS, so that a range's rows are reused from
 * cache across a tile. Row ranges handed to a kernel start at multiples of BLOCK_ROWS. */
enum { BLOCK_ROWS = 4, BLOCK_VECS = 4, TILE_VECS = 64 };

/* Rows at a time that kernels.c makes a Q8_0_BLOCKS tensor or block-type rows Q8_0 in
 * (blocks_as_rows, blocks_gemm_rows) before a kernel reads them; AVX2's wide GEMM makes
 * its rows int16 as many at a time. */
enum { BLOCK_ROWS_CONVERTED = 16 };

/* Activations packed for the GEMM kernels (prefill): vectors in blocks of GEMM_VECS,
 * the last block padded with zero vectors. In block b the vectors' 4-byte pieces are
 * interleaved and offset to unsigned, so that one 64-byte load holds piece k of all 16
 * (which is also the layout of an AMX B tile: 4-byte pieces down, vectors across):
 *   q[((b * (stride / 4) + k) * GEMM_VECS + v) * 4 + j] = x[b * GEMM_VECS + v][4k + j] + 128
 *   scale[(b * groups + g) * GEMM_VECS + v]         = that vector's scale of group g
 * (0 for padding). A kernel sums (x + 128) * w exactly in int32 over a group and takes
 * 128 * Σ w of the group away, then adds the group's int32 sum times x's and w's scales
 * to a float accumulator, groups in order: so every kernel gives the same bits.
 * For a table with gemm_signed (AMX: signed by signed products) q holds x itself as
 * int8, signed_x is set and the int32 sum is Σ x * w directly: the same integer. With
 * gemm_wide as well (AVX2, whose int16 products need no sign trick), wide_x is set and
 * q holds x as int16 (twice the bytes), pairs of values interleaved:
 *   ((int16_t *)q)[((b * (stride / 2) + p) * GEMM_VECS + v) * 2 + j] = x[b * GEMM_VECS + v][2p + j]
 * so one 32-byte load holds pair p of 8 vectors, and the int32 sum is again Σ x * w.
 * For a table's gemm_q8_nibbles (AVX2) q holds x itself as int8 in the first layout:
 * signed_x set, wide_x not, whatever gemm_signed and gemm_wide say. */
enum { GEMM_VECS = 16 };
typedef struct {
    int n;          /* vectors */
    int blocks;     /* ceil(n / GEMM_VECS) */
    int stride, group;
    bool signed_x;  /* q holds x (int8), not x + 128 */
    bool wide_x;    /* signed_x, as int16 pairs */
    uint8_t *q;     /* (blocks, stride / 4, GEMM_VECS, 4) */
    float *scale;   /* (blocks, stride / group, GEMM_VECS) */
} gemm_pack;

/* The dot product of one row of ggml blocks (cols values, whole blocks) with one
 * activation vector quantized to Q8_0 in groups of 32: x (cols) int8, xs (cols / 32)
 * its scales, and xsum its scaled sums, which some types read:
 *   every type but Q6_K: xsum (cols / 32) = xs[g] · Σ x over group g (the mins of
 *     Q4_1, Q5_1, Q4_K and Q5_K multiply it; the SIMD kernels may take the offsets of
 *     Q4_0 and Q5_0 away with it);
 *   Q6_K: xsum (cols / 16) = xs[i / 2] · Σ x over the 16 values of piece i (the SIMD
 *     kernels take its offset of 32 away with it).
 * See kernels/scalar-blocks.c. */
typedef float (*blocks_dot_fn)(const uint8_t *row, const int8_t *x, const float *xs,
                               const float *xsum, int cols);
/* Where a table's row dot of a type reads x in an order of its own (to pair its
 * sub-blocks without shuffling x per row), the function that writes a vector of cols
 * values in that order: blocks_rows calls it once a call and vector, and the dot reads
 * its output as x. xs and xsum stay in the vector's own order. */
typedef void (*blocks_x_fn)(int8_t *dst, const int8_t *x, int cols);
/* A row dot of several vectors at once (n <= BLOCKS_MULTI_MAX): vector v's x at
 * x + v * x_stride (in the dot's order), its scales at xs + v * xs_stride, its sums at
 * xsum + v * xsum_stride, its result into out[v * out_stride], bit for bit what the
 * table's blocks_dot_fn gives it: the row's weights are unpacked once for all of them
 * (speculative decoding's positions, a short batch on the token kernels). */
typedef void (*blocks_dot_multi_fn)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                    const float *xs, size_t xs_stride, const float *xsum,
                                    size_t xsum_stride, int cols, int n, float *out,
                                    size_t out_stride);
enum { BLOCKS_MULTI_MAX = 8 };
/* Entries of a table's dot_blocks: indexed by ggml type number, up to MXFP4 (the
 * numbers between Q6_K and MXFP4 stay NULL). */
enum { BLOCKS_TYPES = GGML_TYPE_MXFP4 + 1 };

typedef struct kernel_table kernel_table;
struct kernel_table {
    kernels_isa isa;           /* its names: kernels_isa_name (KERNELS_ISA_LIST) */
    bool (*cpu_supports)(void);
    /* The table whose entries this one's NULL entries take (NULL: none). */
    const kernel_table *base;

    /* out[v * w->rows + r] = w[r] · vector v of xq, r in [r0, r1), v in [0, n); w is
     * Q8_0 with a group that is a multiple of 32. */
    void (*rows_q8)(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq, int n,
                    int r0, int r1);
    /* The same from packed activations (all of xp's vectors): the prefill GEMM. w is
     * Q8_0 (kernels.c hands Q8_0_BLOCKS tensors to gemm_q8b, or without one over a few
     * rows at a time, made Q8_0). */
    void (*gemm_q8)(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                    int r0, int r1);
    /* gemm_q8 for a Q8_0_BLOCKS w, reading the blocks in place: the bits of gemm_q8 on
     * the same values in the Q8_0 layout. NULL: rows made Q8_0 a few at a time, then
     * gemm_q8 (kernels.c). */
    void (*gemm_q8b)(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                     int r0, int r1);
    /* gemm_q8 reads packs of signed x (gemm_pack's signed_x): kernels_gemm packs so. */
    bool gemm_signed;
    /* With gemm_signed: those packs hold x as int16 pairs (gemm_pack's wide_x). */
    bool gemm_wide;
    /* gemm_q8 for weights with |w| <= 32 (every value kernels_unpack_row makes of a
     * block type is), reading packs of unsigned x + 128 whatever gemm_signed says: the
     * bits of gemm_q8_scalar. For a table whose gemm_q8 reads signed x because no
     * product of its takes unsigned x by w of the full range at speed (AVX2: maddubs
     * saturates, its gemm_q8 multiplies int16): where it has one, kernels.c packs
     * unsigned x for products of BLOCKS tensors only. NULL: gemm_q8 for those too. */
    void (*gemm_q8_small)(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                          int r0, int r1);
    /* gemm_q8 for weights whose 32-value groups are two 16-value halves with a scale
     * each (Q6_K unpacked as KERNELS_UNPACK_HALVES: w->scale two a group), reading the
     * pack the table's products of ggml blocks read (unsigned x + 128 where it has a
     * gemm_q8_small, else gemm_q8's): the bits of kernels.c's way without it, a product
     * of each half (the other half zero), the second added to the first. */
    void (*gemm_q8_halves)(kernels_scratch *s, float *out, const tensor *w,
                           const gemm_pack *xp, int r0, int r1);
    /* gemm_q8 for weights in [0, 15] (the nibbles kernels_unpack_row makes of Q4_K and
     * Q4_1: kernels_unpacks_nibbles) in groups of 32, reading packs of signed x bytes
     * (signed_x without wide_x): the bits of gemm_q8_scalar. Where it has one, kernels.c
     * packs so for a product whose matrices are all of those types. NULL: none. */
    void (*gemm_q8_nibbles)(kernels_scratch *s, float *out, const tensor *w,
                            const gemm_pack *xp, int r0, int r1);
    /* The rows gemm_q8 computes at once (0: any): kernels_gemm hands it row ranges of
     * whole blocks of them, but the last. */
    int gemm_rows;
    /* Packs one whole block of GEMM_VECS vectors for gemm_q8 in gemm_pack's layout:
     * rows[v] the vector's stride int8 values (stride a multiple of 4), each 4-byte piece
     * xor offset (0x80808080 makes x + 128; 0 keeps x), to dst (stride * GEMM_VECS
     * bytes). NULL: a C loop (kernels.c). */
    void (*gemm_pack16)(uint8_t *dst, const int8_t *const rows[GEMM_VECS], int stride,
                        uint32_t offset);
    /* The prefill's mins part for the block types with mins, for a block of nr <= 16
     * rows: out[v * ldo + i] += Σ_g xsum[v * groups + g] · min[i * groups + g] for v < n,
     * i < nr (min: the rows' mins, a row after another). NULL: rows_f32, then an add. */
    void (*gemm_mins)(kernels_scratch *s, float *out, size_t ldo, const float *min,
                      int groups, const float *xsum, int n, int nr);
    /* rows_q8 with one vector for a Q8_0_BLOCKS w: the decode kernel, reading the
     * blocks in place; the bits of rows_q8 on the same values in the Q8_0 layout. Other
     * products of Q8_0_BLOCKS tensors go through gemm_q8b, or rows_q8 and gemm_q8 a few
     * rows at a time made Q8_0 (kernels.c). */
    void (*matvec_q8b)(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                       int r0, int r1);
    /* matvec_q8b for 2..BLOCKS_MULTI_MAX vectors (out[v * w->rows + r]), each vector's
     * bits those of matvec_q8b on it alone; NULL: rows_q8 on rows made Q8_0 a few at a
     * time (kernels.c). */
    void (*matmul_q8b)(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                       int n, int r0, int r1);
    /* Rows [r0, r0 + n) of a Q8_0_BLOCKS w made Q8_0, the conversion those other
     * products go through: the values to q (rows of w->cols), each block's half scale
     * made fp32 to scale (rows of w->cols / 32). */
    void (*q8b_to_rows)(int8_t *q, float *scale, const tensor *w, int r0, int n);
    /* out[v * w->rows + r] = w[r] · vector v of xq, v < n, r in [r0, r1), for a
     * Q8_0_BLOCKS w with panels (kernels/panels.h): the bits of the scalar GEMM
     * (gemm_q8_scalar) for every n. Taken from a base, never from the scalar table: a
     * table without one reads the blocks, and the loader packs no panels for it. */
    void (*matmul_q8p)(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                       int n, int r0, int r1);
    /* out[r - r0] = w[r] · x for rows r in [r0, r1) (multiples of K4_PANEL_ROWS, within
     * the whole groups), w a BLOCKS Q4_K tensor with panels (kernels/panels.h), x one
     * vector in its own order with its scales xs and sums xsum as a row dot reads them:
     * the bits of k4p_dot on each row. NULL: the table reads no Q4_K panels. */
    void (*matvec_k4p)(float *out, const tensor *w, const int8_t *x, const float *xs,
                       const float *xsum, int r0, int r1);
    /* The same for 2 <= n <= BLOCKS_MULTI_MAX vectors, vector v's values, scales and
     * group sums at x, xs and xsum plus v times their strides, to out[v * ldo + r - r0]:
     * a group at a time, its pieces taken apart once for all the vectors, each vector
     * with matvec_k4p's bits. */
    void (*matmul_k4p)(float *out, size_t ldo, const tensor *w, const int8_t *x,
                       size_t x_stride, const float *xs, size_t xs_stride, const float *xsum,
                       size_t xsum_stride, int n, int r0, int r1);
    /* The rows past the last whole group (blocks) are read with k4p_dot, a row dot that
     * reads x in its own order and has the bits of the table's dot_blocks[Q4_K] on x in
     * that one's order, so that a tensor's rows have one set of bits whichever way in,
     * with panels or without. The three are taken together, never apart. */
    blocks_dot_fn k4p_dot;
    /* Per ggml block type (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4): the row dot of
     * BLOCKS tensors. An entry left NULL falls back to the scalar table's. */
    blocks_dot_fn dot_blocks[BLOCKS_TYPES];
    /* The order each of those dots reads x in (blocks_x_fn); NULL: the vector's own.
     * Taken with its dot_blocks entry, never apart from it. */
    blocks_x_fn blocks_x[BLOCKS_TYPES];
    /* dot_blocks for several vectors at once (blocks_dot_multi_fn), where a table has
     * one; NULL: dot_blocks a vector at a time. Taken with its dot_blocks entry. */
    blocks_dot_multi_fn dot_blocks_multi[BLOCKS_TYPES];
    /* The same for an F32 w and fp32 vectors x (n, w->cols). */
    void (*rows_f32)(float *out, const tensor *w, const float *x, int n, int r0, int r1);
    /* quant_dot_q8 (group a multiple of 32). */
    float (*dot_q8)(const int8_t *a, const float *as, const int8_t *b, const float *bs, int len,
                    int group);
    /* quant_quantize_row for groups that are a multiple of 16; same bytes as the scalar. */
    void (*quantize_row)(int8_t *q, float *scale, const float *x, int n, int stride, int group);
    /* quant_dequantize_rows. */
    void (*dequantize_rows)(float *out, const int8_t *q, const float *s, int n_rows, int hs);
    /* kernels_unpack_row (prefill's rows of ggml blocks made exact Q8_0): the same bytes
     * and floats. */
    void (*unpack_row)(int btype, const uint8_t *row, int cols, int part, int8_t *q,
                       float *scale, float *min);
    /* Optional: the 8 rows of a Q4_K panel group (kernels/panels.h) unpacked as
     * unpack_row unpacks each (the same bytes and floats), row i's values at q + i * ldq,
     * its scales and mins at scale + i * lds and min + i * lds; without it, the rows are
     * gathered back (tensor_row_read) one at a time first. */
    void (*unpack_k4_group)(const uint8_t *group, int cols, int8_t *q, size_t ldq,
                            float *scale, float *min, size_t lds);

    /* fp32 attention pieces (see kernels.h) */
    void (*rows_dot)(float *out, const float *rows, size_t row_stride, int n_rows, const float *x,
                     int len);
    void (*rows_axpy)(float *out, const float *rows, size_t row_stride, int n_rows,
                      const float *a, int len);
    void (*softmax)(float *x, int n);
    /* kernels_swiglu */
    void (*swiglu)(float *gate, const float *up, int n);
    /* kernels_geglu */
    void (*geglu)(float *gate, const float *up, int n);
    void (*attention_f32)(kernels_scratch *s, float *out, size_t out_stride, float *att,
                          size_t att_stride, const float *q, size_t q_stride, const float *k,
                          const float *v, size_t kv_stride, int n, int pos, int hs,
                          float scale);
    void (*attention_q8)(float *out, float *att, const float *q, const int8_t *k,
                         const float *ks, const int8_t *v, const float *vs, int n_keys, int hs,
                         float scale);
};

/* The chosen table (chosen by kernels_init, or on first use). */
const kernel_table *kernels_active(void);
/* For tests: makes t the chosen table, its empty entries filled as kernels_init fills
 * them, whatever the CPU (the caller has checked t->cpu_supports). Returns t->isa. */
kernels_isa kernels_init_table(const kernel_table *t);

extern const kernel_table kernels_scalar;
#ifdef HAVE_KERNELS_X86
extern const kernel_table kernels_x86_avx2;
extern const kernel_table kernels_x86_avx512;
#endif
#ifdef HAVE_KERNELS_AMX
extern const kernel_table kernels_x86_amx;
#endif
#ifdef HAVE_KERNELS_AVX_VNNI
extern const kernel_table kernels_x86_avx_vnni;
/* Its kernels with the EVEX encoding, for the tests on CPUs with AVX-512 VNNI but
 * without AVX-VNNI (kernels/x86-avx-vnni.c); never chosen by kernels_init. */
extern const kernel_table kernels_x86_avx_vnni_evex;
#endif
#ifdef HAVE_KERNELS_ARM
extern const kernel_table kernels_arm_neon;
#endif
#ifdef HAVE_KERNELS_ARM_DOTPROD
extern const kernel_table kernels_arm_neon_dotprod;
#endif

/* The scalar reference kernels, for the SIMD tables' fallbacks on shapes they do not
 * handle (groups that are not a multiple of 32). */
float kernels_scalar_dot_q8(const int8_t *a, const float *as, const int8_t *b, const float *bs,
                            int len, int group);
float kernels_scalar_dot_q4_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q4_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q5_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q5_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q4_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q5_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_q6_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols);
float kernels_scalar_dot_mxfp4(const uint8_t *row, const int8_t *x, const float *xs,
                               const float *xsum, int cols);
/* Prefill: one row of ggml blocks (btype, cols values) as exact Q8_0 values q (cols),
 * one fp32 scale per 32 values (cols / 32) and, for the types with mins, one fp32 offset
 * per 32 (min, cols / 32: the row's values are q * scale + min). Q6_K has two parts
 * (kernels_unpack_parts): each group's two 16-value sub-blocks, the other half zero;
 * the row is the sum of the parts. Its part KERNELS_UNPACK_HALVES is the whole row, both
 * halves of each group, with two scales a group (cols / 16: the first half's, then the
 * second's), for a table's gemm_q8_halves. */
enum { KERNELS_UNPACK_HALVES = -1 };
int kernels_unpack_parts(int btype);
/* Whether kernels_unpack_row makes btype's values nibbles, 0 to 15 (Q4_K, Q4_1). */
bool kernels_unpacks_nibbles(int btype);
void kernels_unpack_row(int btype, const uint8_t *row, int cols, int part, int8_t *q,
                        float *scale, float *min);
/* kernels_unpack_row with 256-bit moves for Q4_K, Q5_K and Q6_K (the other types: the
 * plain-C one), for both x86 tables (kernels/x86-avx2-blocks.c). */
void kernels_x86_unpack_row(int btype, const uint8_t *row, int cols, int part, int8_t *q,
                            float *scale, float *min);
/* unpack_k4_group for both x86 tables (kernels/x86-avx2-blocks.c). */
void kernels_x86_unpack_k4_group(const uint8_t *group, int cols, int8_t *q, size_t ldq,
                                 float *scale, float *min, size_t lds);
/* Scale j (0..7) and min of a Q4_K / Q5_K super-block's 12 bytes of 6-bit pairs. */
void kernels_k4_scale_min(const uint8_t *s, int j, int *scale, int *min);
void kernels_scalar_rows_axpy(float *out, const float *rows, size_t row_stride, int n_rows,
                              const float *a, int len);
/* The plain-C GELU (kernels.h: kernels_geglu), for the SIMD versions' tails. */
void kernels_scalar_geglu(float *gate, const float *up, int n);

#endif
