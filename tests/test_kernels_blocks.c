/* test_kernels_blocks.c — the products of ggml block tensors used in place
 * (TENSOR_BLOCKS: Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4) with Q8_0 activations.
 *
 * For every type, on real blocks (tests/data/gguf-types/rand256-*.gguf, made by
 * llama-quantize) and on random blocks (every bit pattern of the quants and small
 * scales, negative Q6_K scales, MXFP4 exponents 2^-10..2^-1; and blocks of the largest
 * values against activations of +-127, the largest integer sums), and for every ISA this
 * CPU and build support: the plain-C kernel against "decode the row (dequant.h), then an fp32 dot with the
 * dequantized activation" in double precision, and every SIMD kernel against the
 * plain-C one, within a rounding bound (1e-5 of the sum of |terms|). Batches of 1, 3,
 * 17 and 70 vectors (prefill, across the vector tiles) through kernels_matvec,
 * kernels_matmul and kernels_gemm (from 16 vectors the rows made exact Q8_0 for the
 * GEMM kernel, whose bits for the types without mins are the scalar GEMM's on every table
 * that has one);
 * every vector of a matmul batch (several rows' dots at once where a
 * table has a multi-vector dot) has the bits of a matvec of it alone. Every table's
 * unpack_row (those rows made exact Q8_0) gives the plain-C one's bytes and floats, every
 * value within [-32, 32] (the AVX2 GEMM for small weights adds two pieces' products in
 * int16 on that bound). */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "dequant.h"
#include "ggml_type.h"
#include "gguf.h"
#include "kernels.h"
#include "quant.h"
#include "table.h"

static const struct {
    ggml_type type;
    const char *file; /* tests/data/gguf-types/ */
} types[] = {
    {.type = GGML_TYPE_Q4_0, .file = "rand256-q4_0.gguf"},
    {.type = GGML_TYPE_Q4_1, .file = "rand256-q4_1.gguf"},
    {.type = GGML_TYPE_Q5_0, .file = "rand256-q5_0.gguf"},
    {.type = GGML_TYPE_Q5_1, .file = "rand256-q5_1.gguf"},
    {.type = GGML_TYPE_Q4_K, .file = "rand256-q4_k_m.gguf"},
    {.type = GGML_TYPE_Q5_K, .file = "rand256-q5_k_m.gguf"},
    {.type = GGML_TYPE_Q6_K, .file = "rand256-q6_k.gguf"},
    {.type = GGML_TYPE_MXFP4, .file = "rand256-mxfp4.gguf"},
};
enum { N_TYPES = sizeof types / sizeof types[0] };

#include "test_rng.h"

/* Random blocks of `type` for (rows, cols): random bytes, then every half (scales and
 * mins) a finite value of about 2^-8; MXFP4's exponents a scale 2^-10..2^-1. */
static uint8_t *random_blocks(ggml_type type, int rows, int cols, size_t *row_bytes)
{
    const ggml_type_info *info = ggml_type_get(type);
    size_t per_row = (size_t)cols / info->block * info->bytes;
    uint8_t *b = malloc(per_row * rows);
    for (size_t i = 0; i < per_row * rows; i++)
        b[i] = (uint8_t)rng_u32();
    static const struct {
        ggml_type type;
        int at[2];
    } halves[] = {
        {GGML_TYPE_Q4_0, {0, -1}}, {GGML_TYPE_Q4_1, {0, 2}}, {GGML_TYPE_Q5_0, {0, -1}},
        {GGML_TYPE_Q5_1, {0, 2}},  {GGML_TYPE_Q4_K, {0, 2}}, {GGML_TYPE_Q5_K, {0, 2}},
        {GGML_TYPE_Q6_K, {208, -1}},
    };
    for (size_t k = 0; k < sizeof halves / sizeof halves[0]; k++) {
        if (halves[k].type != type)
            continue;
        for (size_t blk = 0; blk < per_row * rows / info->bytes; blk++)
            for (int h = 0; h < 2; h++)
                if (halves[k].at[h] >= 0) {
                    uint16_t v = ggml_f32_to_fp16(ldexpf(1.0f + rng_f() * 0.5f, -8));
                    memcpy(b + blk * info->bytes + halves[k].at[h], &v, 2);
                }
    }
    if (type == GGML_TYPE_MXFP4)
        for (size_t blk = 0; blk < per_row * rows / info->bytes; blk++)
            b[blk * info->bytes] = (uint8_t)(118 + rng_u32() % 10);
    *row_bytes = per_row;
    return b;
}

/* The ISAs to test: every one this CPU and build can run. */
static int supported_isas(kernels_isa *isas)
{
    int k = 0;
    for (int i = KERNELS_SCALAR; i < KERNELS_COUNT; i++)
        if (kernels_isa_supported((kernels_isa)i))
            isas[k++] = (kernels_isa)i;
    return k;
}

/* want (n, rows): each row decoded by dequant_range, dotted in double with the
 * dequantized activations; bound: 1e-5 of the sum of |terms|. */
static void reference(float *want, float *bound, const tensor *w, const qbatch *xq, int n)
{
    float *row = malloc(sizeof(float) * w->cols);
    for (int r = 0; r < w->rows; r++) {
        dequant_range((uint32_t)w->btype, tensor_row_blocks(w, r), 0, row, (size_t)w->cols);
        for (int v = 0; v < n; v++) {
            double s = 0.0, mag = 0.0;
            for (int i = 0; i < w->cols; i++) {
                double x = (double)xq->q[(size_t)v * xq->stride + i] *
                           xq->scale[(size_t)v * (xq->stride / 32) + i / 32];
                s += row[i] * x;
                mag += fabs(row[i] * x);
            }
            want[(size_t)v * w->rows + r] = (float)s;
            bound[(size_t)v * w->rows + r] = (float)(1e-5 * mag + 1e-30);
        }
    }
    free(row);
}

/* Checks every ISA's products of w with the n vectors x (n * w->cols values; freed
 * here) against the reference and against the scalar kernels. */
static void check_tensor_x(const tensor *w, int n, const char *what, float *x)
{
    qbatch *xq = qbatch_new(n, w->cols, 32);
    ck_assert_ptr_nonnull(xq);
    qbatch_quantize(xq, x, n);
    qbatch *x1 = qbatch_new(1, w->cols, 32); /* vector 0 alone */
    ck_assert_ptr_nonnull(x1);
    qbatch_quantize(x1, x, 1);
    size_t outs = (size_t)n * w->rows;
    float *want = malloc(sizeof(float) * outs), *bound = malloc(sizeof(float) * outs);
    float *scalar = malloc(sizeof(float) * outs), *got = malloc(sizeof(float) * outs);
    float *scalar_gemm = malloc(sizeof(float) * outs);
    /* the GEMM's products of a type without mins are exact integer sums taken into
     * floats group by group in one order on every table: the scalar GEMM's bits (the
     * mins' fp32 part is summed in an order of each table's own) */
    const bool gemm_bits = n >= KERNELS_GEMM_MIN_VECS && w->btype != GGML_TYPE_Q4_1 &&
                           w->btype != GGML_TYPE_Q5_1 && w->btype != GGML_TYPE_Q4_K &&
                           w->btype != GGML_TYPE_Q5_K;
    float *one = malloc(sizeof(float) * w->rows);
    reference(want, bound, w, xq, n);

    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        ck_assert_int_eq(kernels_init(isas[j]), isas[j]);
        for (int gemm = 0; gemm < 2; gemm++) {
            for (size_t o = 0; o < outs; o++)
                got[o] = NAN;
            if (gemm)
                ck_assert(kernels_gemm(NULL, got, w, NULL, xq, n));
            else
                ck_assert(kernels_matmul(NULL, got, w, NULL, xq, n));
            if (isas[j] == KERNELS_SCALAR && !gemm)
                memcpy(scalar, got, sizeof(float) * outs);
            if (isas[j] == KERNELS_SCALAR && gemm)
                memcpy(scalar_gemm, got, sizeof(float) * outs);
            if (gemm && gemm_bits && kernels_active()->gemm_q8) /* a table with a GEMM */
                ck_assert_msg(memcmp(got, scalar_gemm, sizeof(float) * outs) == 0,
                              "%s %s: the GEMM differs from the scalar GEMM's bits",
                              kernels_isa_name(isas[j]), what);
            for (size_t o = 0; o < outs; o++) {
                check_each(fabsf(got[o] - want[o]) <= bound[o],
                           "%s %s %s: out[%zu] = %.9g, reference %.9g (±%g)",
                           kernels_isa_name(isas[j]), what, gemm ? "gemm" : "matmul", o,
                           got[o], want[o], bound[o]);
                check_each(fabsf(got[o] - scalar[o]) <= bound[o],
                           "%s %s: out[%zu] = %.9g, scalar twin %.9g (±%g)",
                           kernels_isa_name(isas[j]), what, o, got[o], scalar[o], bound[o]);
            }
            if (!gemm) {
                ck_assert(kernels_matvec(NULL, one, w, NULL, xq));
                ck_assert_msg(memcmp(one, got, sizeof(float) * w->rows) == 0,
                              "%s %s: vector 0 of a batch differs from a matvec",
                              kernels_isa_name(isas[j]), what);
                /* every vector of the batch (several at once where a table's dot takes
                 * them so) has the bits of a matvec of it alone */
                for (int v = 1; v < n; v++) {
                    qbatch_quantize(x1, x + (size_t)v * w->cols, 1);
                    ck_assert(kernels_matvec(NULL, one, w, NULL, x1));
                    ck_assert_msg(memcmp(one, got + (size_t)v * w->rows,
                                         sizeof(float) * w->rows) == 0,
                                  "%s %s: vector %d of a batch differs from a matvec",
                                  kernels_isa_name(isas[j]), what, v);
                }
                qbatch_quantize(x1, x, 1);
            } else if (n >= KERNELS_GEMM_MIN_VECS) { /* the GEMM's bits for one vector too */
                float *const outs1[1] = {one};
                const tensor *ws1[1] = {w};
                ck_assert(kernels_gemm_shared(NULL, 1, outs1, ws1, NULL, x1, 1));
                ck_assert_msg(memcmp(one, got, sizeof(float) * w->rows) == 0,
                              "%s %s: the GEMM of one vector differs from vector 0 of %d",
                              kernels_isa_name(isas[j]), what, n);
            }
        }
    }
    kernels_init(KERNELS_AUTO);
    free(x);
    free(want);
    free(bound);
    free(scalar);
    free(scalar_gemm);
    free(got);
    free(one);
    qbatch_free(xq);
    qbatch_free(x1);
}

/* check_tensor_x with n random vectors. */
static void check_tensor(const tensor *w, int n, const char *what)
{
    float *x = malloc(sizeof(float) * (size_t)n * w->cols);
    for (size_t i = 0; i < (size_t)n * w->cols; i++)
        x[i] = 2.0f * rng_f();
    check_tensor_x(w, n, what, x);
}

static tensor blocks_tensor(ggml_type type, const uint8_t *data, int rows, int cols)
{
    const ggml_type_info *info = ggml_type_get(type);
    return (tensor){.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                    .group = 32, .blocks = data, .btype = (int)type,
                    .row_bytes = (size_t)cols / info->block * info->bytes};
}

START_TEST(test_random_blocks)
{
    rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
    ggml_type type = types[_i].type;
    bool k_type = ggml_type_get(type)->block == 256;
    static const int shapes[][2] = {{5, 256}, {17, 512}, {3, 2048}, {9, 64}, {4, 96}, {3, 2880}, {2, 160}};
    static const int ns[] = {1, 3, 17, 70};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        if (k_type && cols % 256)
            continue;
        size_t row_bytes;
        uint8_t *data = random_blocks(type, rows, cols, &row_bytes);
        tensor w = blocks_tensor(type, data, rows, cols);
        ck_assert_uint_eq(w.row_bytes, row_bytes);
        char what[64];
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            snprintf(what, sizeof what, "%s %dx%d n %d", ggml_type_name(type), rows, cols, ns[i]);
            check_tensor(&w, ns[i], what);
        }
        /* dequantizing a row of the tensor is dequant.h's decoding */
        float *a = malloc(sizeof(float) * cols), *b = malloc(sizeof(float) * cols);
        quant_dequantize_row(a, &w, rows - 1);
        dequant_range(type, data, (uint64_t)(rows - 1) * cols, b, (size_t)cols);
        ck_assert(memcmp(a, b, sizeof(float) * cols) == 0);
        free(a);
        free(b);
        free(data);
    }
}
END_TEST

/* The largest integer sums a block type allows: every quant bit set (the largest
 * values, Q4_K / Q5_K scales and mins 63; Q6_K's scales 127 and -128 by turns) against
 * activations that are all +1 or all -1 (int8 +-127), so that a SIMD dot that adds
 * partial sums in 16-bit lanes (the AVX2 K-quant dots' packs) would wrap or saturate
 * here if its bound were wrong. */
START_TEST(test_largest_sums)
{
    rng_state = 0x51ed270b27aa3b4full + (uint64_t)_i;
    ggml_type type = types[_i].type;
    const ggml_type_info *info = ggml_type_get(type);
    const int rows = 4, cols = 512, n = 3;
    size_t row_bytes;
    uint8_t *data = random_blocks(type, rows, cols, &row_bytes);
    uint8_t *scales = random_blocks(type, rows, cols, &row_bytes); /* its halves kept */
    memset(data, 0xff, row_bytes * rows);
    for (size_t blk = 0; blk < row_bytes * rows / info->bytes; blk++) {
        uint8_t *b = data + blk * info->bytes, *h = scales + blk * info->bytes;
        if (type == GGML_TYPE_Q6_K) {
            memcpy(b + 208, h + 208, 2);
            for (int i = 0; i < 16; i++)
                b[192 + i] = i % 2 ? 0x80 : 0x7f;
        } else if (type == GGML_TYPE_MXFP4) {
            b[0] = h[0];
        } else {
            int halves = type == GGML_TYPE_Q4_0 || type == GGML_TYPE_Q5_0 ? 1 : 2;
            memcpy(b, h, 2 * (size_t)halves);
        }
    }
    tensor w = blocks_tensor(type, data, rows, cols);
    float *x = malloc(sizeof(float) * (size_t)n * cols);
    for (int v = 0; v < n; v++)
        for (int i = 0; i < cols; i++)
            x[(size_t)v * cols + i] = v == 1 ? -1.0f : v == 2 && i % 64 < 32 ? -1.0f : 1.0f;
    char what[64];
    snprintf(what, sizeof what, "%s largest sums", ggml_type_name(type));
    check_tensor_x(&w, n, what, x);
    free(scales);
    free(data);
}
END_TEST

/* blk.0.attn_q.weight (256 x 256) of the file as llama-quantize wrote it. */
START_TEST(test_file_blocks)
{
    rng_state = 0x2545f4914f6cdd1dull + (uint64_t)_i;
    size_t size;
    char name[64];
    snprintf(name, sizeof name, "gguf-types/%s", types[_i].file);
    unsigned char *buf = read_whole_file(data_path(name), &size);
    ck_assert_ptr_nonnull(buf);
    gguf *g;
    llm_err err;
    ck_assert_int_eq(gguf_parse(buf, size, types[_i].file, &g, &err), LLM_OK);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_q.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->type, types[_i].type);
    tensor w = blocks_tensor(types[_i].type, t->data, 256, 256);
    ck_assert_uint_eq(w.row_bytes * 256, t->bytes);
    static const int ns[] = {1, 17};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        check_tensor(&w, ns[i], types[_i].file);
    gguf_free(g);
    free(buf);
}
END_TEST

/* Q4_K panels (kernels/panels.h: 8 rows side by side, which take the place of those
 * rows' blocks). A tensor's panels are packed twice: into memory of their own, the
 * blocks of its whole groups then overwritten, and in place over its blocks. Either
 * way every row read back (tensor_row_read, tensor_blocks_read, quant_dequantize_row)
 * is the file's, and on every table a matvec and row ranges that cut groups (3 or 4
 * rows at a time) give the untouched tensor's bits, the table's own matvec's (on a
 * table that reads the panels, also its panel kernel's row dot's, k4p_dot); several
 * vectors (3 and 11: more than one call of the panel kernel) give each its matvec's
 * bits, and the GEMM (prefill, 17 vectors) the untouched tensor's. Random blocks, blocks of the
 * largest sums (every nibble 15, scales 63) against activations of +-127 (the int16
 * sums of 8 pieces at their bound), and the file's. */
static void check_k4_panels(const uint8_t *data, int rows, int cols, const char *what,
                            bool largest, int *readers)
{
    tensor w = blocks_tensor(GGML_TYPE_Q4_K, data, rows, cols);
    const size_t bytes = w.row_bytes * rows;
    const int whole = rows / 8 * 8;
    uint8_t *other = malloc(bytes), *in_place = malloc(bytes), *panels = NULL;
    memcpy(other, data, bytes);
    memcpy(in_place, data, bytes);
    size_t pb = kernels_panels_bytes(&w);
    ck_assert_uint_eq(pb, (size_t)whole * w.row_bytes); /* a group is its rows' size */
    tensor wp = blocks_tensor(GGML_TYPE_Q4_K, other, rows, cols); /* panels of their own */
    tensor wi = blocks_tensor(GGML_TYPE_Q4_K, in_place, rows, cols); /* panels in place */
    if (pb) {
        panels = aligned_alloc(64, (pb + 63) / 64 * 64);
        ck_assert_ptr_nonnull(panels);
        ck_assert(kernels_panels_pack(panels, &w));
        ck_assert(kernels_panels_pack(in_place, &wi));
        ck_assert_msg(memcmp(in_place, panels, pb) == 0, "%s: in place packs otherwise", what);
        ck_assert(memcmp(in_place + pb, data + pb, bytes - pb) == 0); /* the rest as it was */
        wp.panels = panels;
        wi.panels = in_place;
    }
    for (size_t i = 0; i < w.row_bytes * whole; i++) /* the groups' blocks overwritten */
        other[i] = (uint8_t)(other[i] * 7 + 3);
    uint8_t *row = malloc(w.row_bytes), block[TENSOR_K4_BLOCK_BYTES];
    float *deq = malloc(sizeof(float) * cols), *deq_want = malloc(sizeof(float) * cols);
    for (int r = 0; r < rows; r++) { /* every row read back is the file's */
        const uint8_t *file_row = data + w.row_bytes * r;
        ck_assert_int_eq(tensor_row_in_panels(&wp, r), r < whole);
        ck_assert_msg(memcmp(tensor_row_read(&wp, r, row), file_row, w.row_bytes) == 0,
                      "%s: row %d gathered from panels of their own", what, r);
        ck_assert_msg(memcmp(tensor_row_read(&wi, r, row), file_row, w.row_bytes) == 0,
                      "%s: row %d gathered from panels in place", what, r);
        int b = r % (cols / 256);
        ck_assert(memcmp(tensor_blocks_read(&wi, r, b, 1, block), file_row + 144 * (size_t)b,
                         144) == 0);
        quant_dequantize_row(deq_want, &w, r);
        quant_dequantize_row(deq, &wi, r);
        ck_assert(memcmp(deq, deq_want, sizeof(float) * cols) == 0);
    }
    float *x = malloc(sizeof(float) * cols);
    for (int i = 0; i < cols; i++)
        x[i] = largest ? (i % 64 < 32 ? 1.0f : -1.0f) : 2.0f * rng_f();
    qbatch *xq = qbatch_new(1, cols, 32);
    ck_assert_ptr_nonnull(xq);
    qbatch_quantize(xq, x, 1);
    float *want = malloc(sizeof(float) * rows), *got = malloc(sizeof(float) * rows);
    float *xsum = malloc(sizeof(float) * (cols / 32)); /* as kernels.c makes them */
    for (int g = 0; g < cols / 32; g++) {
        int sum = 0;
        for (int i = 0; i < 32; i++)
            sum += xq->q[32 * g + i];
        xsum[g] = xq->scale[g] * (float)sum;
    }
    enum { N = 11, PREFILL = 17 };
    float *xn = malloc(sizeof(float) * PREFILL * cols);
    float *outn = malloc(sizeof(float) * PREFILL * rows);
    float *gemm = malloc(sizeof(float) * PREFILL * rows);
    for (int i = 0; i < PREFILL * cols; i++)
        xn[i] = 2.0f * rng_f();
    qbatch *qn = qbatch_new(N, cols, 32), *q1 = qbatch_new(1, cols, 32);
    qbatch *qp = qbatch_new(PREFILL, cols, 32);
    qbatch_quantize(qn, xn, N);
    qbatch_quantize(qp, xn, PREFILL);
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        const kernel_table *t = kernels_active();
        const bool reads = kernels_panels_read(&wp);
        ck_assert_int_eq(reads, t->matvec_k4p != NULL && rows >= 8);
        /* the table's own matvec of the untouched tensor */
        ck_assert(kernels_matvec(NULL, want, &w, NULL, xq));
        if (reads) { /* is the panel kernel's row dot's, on x in its own order */
            ck_assert_ptr_nonnull(t->k4p_dot);
            for (int r = 0; r < rows; r++) {
                float dot = t->k4p_dot(w.blocks + w.row_bytes * r, xq->q, xq->scale, xsum, cols);
                ck_assert_msg(memcmp(&dot, &want[r], sizeof dot) == 0,
                              "%s %s: row %d: k4p_dot %.9g, the table's dot %.9g",
                              kernels_isa_name(isas[j]), what, r, dot, want[r]);
            }
        }
        ck_assert_int_eq(kernels_row_block_of(&wp), reads ? 8 : 4);
        *readers += reads;
        for (int way = 0; way < 6; way++) {
            const tensor *wt = way < 3 ? &wp : &wi;
            int range = 2 + way % 3; /* rows at a time: 3 or 4 cut groups (2: all of them) */
            for (int r = 0; r < rows; r++)
                got[r] = NAN;
            if (way % 3 == 0)
                ck_assert(kernels_matvec(NULL, got, wt, NULL, xq));
            else
                for (int r0 = 0; r0 < rows; r0 += range)
                    ck_assert(kernels_matmul_rows(NULL, got, wt, NULL, xq, 1, r0,
                                                  r0 + range < rows ? r0 + range : rows));
            for (int r = 0; r < rows; r++)
                ck_assert_msg(memcmp(&got[r], &want[r], sizeof(float)) == 0,
                              "%s %s way %d: row %d = %.9g, want %.9g (%s)",
                              kernels_isa_name(isas[j]), what, way, r, got[r], want[r],
                              reads ? "the row dot's bits on the packed rows"
                                    : "the table's matvec of the untouched rows");
        }
        /* several vectors: each a matvec's bits */
        for (int nv = 3; nv <= N; nv += N - 3) {
            ck_assert(kernels_matmul(NULL, outn, &wi, NULL, qn, nv));
            for (int v = 0; v < nv; v++) {
                qbatch_quantize(q1, xn + (size_t)v * cols, 1);
                ck_assert(kernels_matvec(NULL, got, &wi, NULL, q1));
                ck_assert_msg(memcmp(got, outn + (size_t)v * rows, sizeof(float) * rows) == 0,
                              "%s %s: vector %d of %d differs from its matvec",
                              kernels_isa_name(isas[j]), what, v, nv);
            }
        }
        /* prefill: the untouched tensor's GEMM */
        ck_assert(kernels_gemm(NULL, gemm, &w, NULL, qp, PREFILL));
        ck_assert(kernels_gemm(NULL, outn, &wi, NULL, qp, PREFILL));
        ck_assert_msg(memcmp(gemm, outn, sizeof(float) * PREFILL * rows) == 0,
                      "%s %s: the GEMM of a tensor with panels differs", kernels_isa_name(isas[j]),
                      what);
        ck_assert(kernels_gemm(NULL, outn, &wp, NULL, qp, PREFILL));
        ck_assert(memcmp(gemm, outn, sizeof(float) * PREFILL * rows) == 0);
    }
    kernels_init(KERNELS_AUTO);
    free(x);
    free(xn);
    free(outn);
    free(gemm);
    qbatch_free(qn);
    qbatch_free(q1);
    qbatch_free(qp);
    free(want);
    free(got);
    free(other);
    free(in_place);
    free(panels);
    free(xsum);
    free(row);
    free(deq);
    free(deq_want);
    qbatch_free(xq);
}

/* A product's bits do not depend on the pack: a Q4_K or Q4_1 matrix alone (on AVX2,
 * gemm_q8_nibbles: signed x bytes, a group's pieces summed in int16) gives the bits it
 * gives beside a Q6_K one sharing its pack (unsigned x + 128: gemm_q8_small), on every
 * table; random blocks, and the largest sums (every nibble 15 against x = +-127, 30480
 * in an int16 lane). */
START_TEST(test_gemm_packs_agree)
{
    rng_state = 0x7c3b9d2e1f4a6085ull;
    static const ggml_type nibbles[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q4_1};
    enum { ROWS = 24, COLS = 512 };
    static const int ns[] = {17, 40};
    size_t rb6;
    uint8_t *d6 = random_blocks(GGML_TYPE_Q6_K, 16, COLS, &rb6);
    tensor w6 = blocks_tensor(GGML_TYPE_Q6_K, d6, 16, COLS);
    for (size_t t = 0; t < sizeof nibbles / sizeof nibbles[0]; t++) {
        for (int largest = 0; largest < 2; largest++) {
            size_t rb;
            uint8_t *d = random_blocks(nibbles[t], ROWS, COLS, &rb);
            const ggml_type_info *info = ggml_type_get(nibbles[t]);
            if (largest) /* every nibble 15 (and Q4_K's scales and mins 63) */
                for (size_t b = 0; b < rb * ROWS / info->bytes; b++)
                    memset(d + b * info->bytes + 4, 0xff, info->bytes - 4);
            tensor w = blocks_tensor(nibbles[t], d, ROWS, COLS);
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
                int n = ns[i];
                float *x = malloc(sizeof(float) * n * COLS);
                for (int j = 0; j < n * COLS; j++)
                    x[j] = largest ? (j % 3 ? 1.0f : -1.0f) : 2.0f * rng_f();
                qbatch *xq = qbatch_new(n, COLS, 32);
                qbatch_quantize(xq, x, n);
                float *alone = malloc(sizeof(float) * n * ROWS);
                float *shared = malloc(sizeof(float) * n * ROWS);
                float *other = malloc(sizeof(float) * n * 16);
                kernels_isa isas[KERNELS_COUNT];
                int k = supported_isas(isas);
                for (int j = 0; j < k; j++) {
                    kernels_init(isas[j]);
                    ck_assert(kernels_gemm(NULL, alone, &w, NULL, xq, n));
                    float *outs[2] = {shared, other};
                    const tensor *ws[2] = {&w, &w6};
                    ck_assert(kernels_gemm_shared(NULL, 2, outs, ws, NULL, xq, n));
                    ck_assert_msg(memcmp(alone, shared, sizeof(float) * n * ROWS) == 0,
                                  "%s %s%s n %d: the GEMM alone differs from the GEMM beside "
                                  "Q6_K", kernels_isa_name(isas[j]), ggml_type_name(nibbles[t]),
                                  largest ? " largest" : "", n);
                }
                kernels_init(KERNELS_AUTO);
                free(x);
                free(alone);
                free(shared);
                free(other);
                qbatch_free(xq);
            }
            free(d);
        }
    }
    free(d6);
}
END_TEST

START_TEST(test_k4_panels)
{
    rng_state = 0x2f6b1d3c5a7e9081ull;
    static const int shapes[][2] = {{8, 256}, {17, 512}, {40, 2048}, {3, 256}, {15, 768}};
    int readers = 0;
    char what[64];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t row_bytes;
        uint8_t *data = random_blocks(GGML_TYPE_Q4_K, rows, cols, &row_bytes);
        snprintf(what, sizeof what, "Q4_K panels %dx%d", rows, cols);
        check_k4_panels(data, rows, cols, what, false, &readers);
        for (size_t b = 0; b < row_bytes * rows / 144; b++) { /* the largest sums */
            memset(data + 144 * b + 4, 0xff, 140);
        }
        snprintf(what, sizeof what, "Q4_K panels %dx%d, largest sums", rows, cols);
        check_k4_panels(data, rows, cols, what, true, &readers);
        free(data);
    }
    size_t size;
    unsigned char *buf = read_whole_file(data_path("gguf-types/rand256-q4_k_m.gguf"), &size);
    ck_assert_ptr_nonnull(buf);
    gguf *g;
    llm_err err;
    ck_assert_int_eq(gguf_parse(buf, size, "rand256-q4_k_m.gguf", &g, &err), LLM_OK);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.attn_q.weight");
    ck_assert_ptr_nonnull(t);
    check_k4_panels(t->data, 256, 256, "Q4_K panels of the file", false, &readers);
    gguf_free(g);
    free(buf);
    if (kernels_isa_supported(KERNELS_AVX2))
        ck_assert_msg(readers > 0, "the AVX2 table read no Q4_K panels");
    else
        printf("test_k4_panels: no table here reads Q4_K panels (AVX2); only the tables "
               "that gather their rows back were checked\n");
}
END_TEST

/* Zero activations give exact zeros; a NaN activation scale is not hidden. */
START_TEST(test_zero_and_nan)
{
    rng_state = 7;
    ggml_type type = types[_i].type;
    size_t row_bytes;
    uint8_t *data = random_blocks(type, 4, 256, &row_bytes);
    tensor w = blocks_tensor(type, data, 4, 256);
    qbatch *xq = qbatch_new(1, 256, 32);
    float x[256] = {0}, out[4];
    qbatch_quantize(xq, x, 1);
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        ck_assert(kernels_matvec(NULL, out, &w, NULL, xq));
        for (int r = 0; r < 4; r++)
            ck_assert_msg(out[r] == 0.0f, "%s %s: %g", kernels_isa_name(isas[j]),
                          ggml_type_name(type), out[r]);
    }
    x[40] = NAN;
    qbatch_quantize(xq, x, 1);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        ck_assert(kernels_matvec(NULL, out, &w, NULL, xq));
        for (int r = 0; r < 4; r++)
            ck_assert_msg(isnan(out[r]), "%s %s: NaN hidden: %g", kernels_isa_name(isas[j]),
                          ggml_type_name(type), out[r]);
    }
    kernels_init(KERNELS_AUTO);
    qbatch_free(xq);
    free(data);
}
END_TEST

/* Every table's unpack_row against the plain-C one, bytes and floats, every part (and
 * Q6_K's KERNELS_UNPACK_HALVES: the parts' values added, their scales side by side), on
 * random rows of two super-blocks and more (odd bytes after the row: none read). */
START_TEST(test_unpack_same_bytes)
{
    rng_state = 0x41c64e6d12345ull + (uint64_t)_i;
    ggml_type type = types[_i].type;
    static const int col_counts[] = {256, 512, 2048};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t c = 0; c < sizeof col_counts / sizeof col_counts[0]; c++) {
        int cols = col_counts[c], groups = cols / 32;
        size_t row_bytes;
        uint8_t *data = random_blocks(type, 3, cols, &row_bytes);
        int8_t *q0 = malloc(cols), *q1 = malloc(cols);
        float *s0 = malloc(sizeof(float) * groups * 2), *s1 = malloc(sizeof(float) * groups * 2);
        float *m0 = calloc(groups, sizeof(float)), *m1 = calloc(groups, sizeof(float));
        const int parts = kernels_unpack_parts(type);
        const int first = parts == 2 ? KERNELS_UNPACK_HALVES : 0;
        for (int part = first; part < parts; part++)
            for (int r = 0; r < 3; r++) {
                const uint8_t *row = data + (size_t)r * row_bytes;
                const int scales = part == KERNELS_UNPACK_HALVES ? 2 * groups : groups;
                kernels_unpack_row(type, row, cols, part, q0, s0, m0);
                if (part == KERNELS_UNPACK_HALVES) { /* the two parts side by side */
                    int8_t *qp = malloc(cols);
                    float *sp = malloc(sizeof(float) * groups);
                    for (int h = 0; h < 2; h++) {
                        kernels_unpack_row(type, row, cols, h, qp, sp, m1);
                        for (int i = 0; i < cols; i++)
                            if ((i % 32 < 16) == (h == 0))
                                ck_assert_int_eq(qp[i], q0[i]);
                            else
                                ck_assert_int_eq(qp[i], 0);
                        for (int g = 0; g < groups; g++)
                            ck_assert(memcmp(&sp[g], &s0[2 * g + h], sizeof(float)) == 0);
                    }
                    free(qp);
                    free(sp);
                }
                for (int i = 0; i < cols; i++) /* what the GEMMs for small weights need */
                    check_each(q0[i] >= -32 && q0[i] <= 32, "%s: unpacked value %d",
                               ggml_type_name(type), q0[i]);
                for (int j = 0; j < k; j++) {
                    kernels_init(isas[j]);
                    memset(q1, 0x55, cols);
                    memset(s1, 0x55, sizeof(float) * scales);
                    memcpy(m1, m0, sizeof(float) * groups); /* types without mins: untouched */
                    kernels_active()->unpack_row(type, row, cols, part, q1, s1, m1);
                    ck_assert_msg(memcmp(q0, q1, cols) == 0 &&
                                      memcmp(s0, s1, sizeof(float) * scales) == 0 &&
                                      memcmp(m0, m1, sizeof(float) * groups) == 0,
                                  "%s %s cols %d part %d row %d: unpacked rows differ",
                                  kernels_isa_name(isas[j]), ggml_type_name(type), cols, part, r);
                }
            }
        free(data);
        free(q0);
        free(q1);
        free(s0);
        free(s1);
        free(m0);
        free(m1);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* Q4_K and Q5_K have one set of bits on every x86 table: the AVX-512 row dots add each
 * sub-block's partial sums in integers and take the AVX2 dots' float steps (so that a
 * file's products, and the Q4_K panels read by either, round the same on any x86 CPU).
 * One vector and several (the multi-vector dots), random blocks and the largest sums. */
START_TEST(test_k45_x86_same_bits)
{
    if (!kernels_isa_supported(KERNELS_AVX2) || !kernels_isa_supported(KERNELS_AVX512)) {
        printf("test_k45_x86_same_bits: this CPU or build has not both AVX2 and AVX-512 "
               "VNNI; not compared\n");
        return;
    }
    rng_state = 0x5bd1e9955bd1e995ull;
    enum { ROWS = 9, COLS = 1024, N = 5 };
    static const ggml_type k45[] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K};
    float x[N * COLS], out[2][N * ROWS];
    for (int i = 0; i < N * COLS; i++)
        x[i] = 2.0f * rng_f();
    qbatch *xq = qbatch_new(N, COLS, 32), *x1 = qbatch_new(1, COLS, 32);
    qbatch_quantize(xq, x, N);
    qbatch_quantize(x1, x, 1);
    for (size_t t = 0; t < 2; t++)
        for (int largest = 0; largest < 2; largest++) {
            size_t row_bytes;
            uint8_t *data = random_blocks(k45[t], ROWS, COLS, &row_bytes);
            const size_t bytes = k45[t] == GGML_TYPE_Q5_K ? 176 : 144;
            if (largest) /* every quant and scale at its top */
                for (size_t b = 0; b < row_bytes * ROWS / bytes; b++)
                    memset(data + bytes * b + 4, 0xff, bytes - 4);
            tensor w = blocks_tensor(k45[t], data, ROWS, COLS);
            for (int n = 1; n <= N; n += N - 1) {
                for (int i = 0; i < 2; i++) {
                    kernels_init(i ? KERNELS_AVX512 : KERNELS_AVX2);
                    ck_assert(n == 1 ? kernels_matvec(NULL, out[i], &w, NULL, x1)
                                     : kernels_matmul(NULL, out[i], &w, NULL, xq, n));
                }
                for (int r = 0; r < n * ROWS; r++)
                    ck_assert_msg(memcmp(&out[0][r], &out[1][r], sizeof(float)) == 0,
                                  "%s%s, %d vectors: value %d: AVX2 %.9g, AVX-512 %.9g",
                                  ggml_type_name(k45[t]), largest ? " (largest sums)" : "", n,
                                  r, out[0][r], out[1][r]);
            }
            free(data);
        }
    kernels_init(KERNELS_AUTO);
    qbatch_free(xq);
    qbatch_free(x1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("kernels_blocks");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_loop_test(core, test_random_blocks, 0, N_TYPES);
    tcase_add_loop_test(core, test_largest_sums, 0, N_TYPES);
    tcase_add_loop_test(core, test_file_blocks, 0, N_TYPES);
    tcase_add_loop_test(core, test_zero_and_nan, 0, N_TYPES);
    tcase_add_loop_test(core, test_unpack_same_bytes, 0, N_TYPES);
    tcase_add_test(core, test_k4_panels);
    tcase_add_test(core, test_k45_x86_same_bits);
    tcase_add_test(core, test_gemm_packs_agree);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
