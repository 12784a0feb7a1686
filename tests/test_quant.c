/* test_quant.c — Q8_0 quantization and the matrix kernels.
 *
 * Every ISA this CPU and build support is forced in turn (kernels_init) and compared
 * with the plain-C reference: kernels_dot_q8 vs kernels_dot_q8_ref, kernels_matmul /
 * kernels_matvec vs a scalar loop over kernels_dot_q8_ref, F32 kernels vs a double
 * precision sum. Shapes cover padded rows (cols not a multiple of the group), rows
 * not a multiple of the kernel's row block, and batches of 1, 3 and 17 vectors.
 * The int8 KV-cache attention (kernels_attention_q8) is compared with its plain-C twin
 * (the scalar kernel set), with kernels_attention_f32 on the dequantized rows, and with
 * double-precision attention on the rows before quantization.
 * "core": agreement on random data; "limits": zero rows, ±127, round-trip bounds. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "model.h"
#include "kernels.h"
#include "quant.h"
#include "transformer.h"

#include "test_rng.h"

/* A Q8_0 tensor with its own buffers (freed by owned_free). */
typedef struct {
    tensor t;
    int8_t *q;    /* (rows, stride) */
    float *scale; /* (rows, stride / group) */
    float *f;     /* (rows, cols): the fp32 values it was quantized from */
} owned;

static owned owned_q8(int rows, int cols, int group, float amp)
{
    owned o;
    int stride = quant_stride(cols, group);
    o.f = malloc(sizeof(float) * (size_t)rows * cols);
    o.q = malloc((size_t)rows * stride);
    o.scale = malloc(sizeof(float) * (size_t)rows * (stride / group));
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        o.f[i] = amp * rng_f();
    for (int r = 0; r < rows; r++)
        quant_quantize_row(o.q + (size_t)r * stride, o.scale + (size_t)r * (stride / group),
                           o.f + (size_t)r * cols, cols, stride, group);
    o.t = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = stride,
                   .group = group, .q = o.q, .scale = o.scale};
    return o;
}

static void owned_free(owned *o)
{
    free(o->q);
    free(o->scale);
    free(o->f);
}

static float *random_vecs(int n, int len, float amp)
{
    float *x = malloc(sizeof(float) * (size_t)n * len);
    for (size_t i = 0; i < (size_t)n * len; i++)
        x[i] = amp * rng_f();
    return x;
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

/* Reference out (n, rows) with kernels_dot_q8_ref, and a bound on the rounding error
 * of any summation order: eps * sum |terms| per output. */
static void ref_matmul_q8(float *out, float *bound, const tensor *w, const qbatch *xq, int n)
{
    int groups = w->stride / w->group;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < w->rows; r++) {
            const int8_t *a = w->q + (size_t)r * w->stride;
            const int8_t *b = xq->q + (size_t)i * xq->stride;
            const float *as = w->scale + (size_t)r * groups;
            const float *bs = xq->scale + (size_t)i * groups;
            out[(size_t)i * w->rows + r] = kernels_dot_q8_ref(a, as, b, bs, w->stride, w->group);
            double mag = 0.0;
            for (int k = 0; k < w->stride; k++)
                mag += fabs((double)a[k] * b[k] * as[k / w->group] * bs[k / w->group]);
            bound[(size_t)i * w->rows + r] = (float)(1e-5 * mag + 1e-30);
        }
}

static void check_q8_matmul(int rows, int cols, int group, int n)
{
    owned w = owned_q8(rows, cols, group, 0.5f);
    float *x = random_vecs(n, cols, 2.0f);
    qbatch *xq = qbatch_new(n, cols, group);
    ck_assert_ptr_nonnull(xq);
    qbatch_quantize(xq, x, n);
    ck_assert_int_eq(xq->stride, w.t.stride);

    float *want = malloc(sizeof(float) * (size_t)n * rows);
    float *bound = malloc(sizeof(float) * (size_t)n * rows);
    float *got = malloc(sizeof(float) * (size_t)n * rows);
    ref_matmul_q8(want, bound, &w.t, xq, n);

    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        ck_assert_int_eq(kernels_init(isas[j]), isas[j]);
        for (int i = 0; i < n * rows; i++)
            got[i] = NAN;
        if (n == 1)
            ck_assert(kernels_matvec(NULL, got, &w.t, NULL, xq));
        else
            ck_assert(kernels_matmul(NULL, got, &w.t, NULL, xq, n));
        for (int i = 0; i < n * rows; i++)
            check_each(fabsf(got[i] - want[i]) <= bound[i],
                       "%s: rows %d cols %d group %d n %d: out[%d] = %g, want %g (±%g)",
                       kernels_isa_name(isas[j]), rows, cols, group, n, i, got[i], want[i],
                       bound[i]);
    }
    kernels_init(KERNELS_AUTO);
    free(want);
    free(bound);
    free(got);
    free(x);
    qbatch_free(xq);
    owned_free(&w);
}

START_TEST(test_isa_names)
{
    ck_assert(kernels_isa_supported(KERNELS_SCALAR));
    ck_assert_str_eq(kernels_isa_name(KERNELS_SCALAR), "scalar");
    ck_assert_str_eq(kernels_isa_name(KERNELS_AVX512), "avx512-vnni");
    kernels_isa best = kernels_init(KERNELS_AUTO);
    ck_assert(kernels_isa_supported(best));
    ck_assert_int_ne(best, KERNELS_AUTO);
    /* asking for something unsupported falls back to a supported ISA */
    for (int i = KERNELS_SCALAR; i < KERNELS_COUNT; i++) {
        kernels_isa got = kernels_init((kernels_isa)i);
        ck_assert(kernels_isa_supported(got));
        if (kernels_isa_supported((kernels_isa)i))
            ck_assert_int_eq(got, i);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* One parser for the names --kernels (llmchat) and --isa (llmchat-bench) take, and one
 * list of them (kernels.h's KERNELS_ISA_LIST) behind the parser, the printed names and
 * the choices --help shows. */
START_TEST(test_isa_parse)
{
    static const struct {
        kernels_isa isa;
        const char *name, *short_name;
    } rows[] = {
#define ROW(value, name, short_name) {value, name, short_name},
        KERNELS_ISA_LIST(ROW)
#undef ROW
    };
    ck_assert_int_eq(sizeof rows / sizeof *rows, KERNELS_COUNT);
    char choices[256] = "";
    bool seen[KERNELS_COUNT] = {false};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        kernels_isa got = KERNELS_COUNT, got_short = KERNELS_COUNT;
        ck_assert_msg(!seen[rows[i].isa], "%s listed twice", rows[i].name);
        seen[rows[i].isa] = true;
        ck_assert_msg(kernels_isa_parse(rows[i].name, &got), "%s", rows[i].name);
        ck_assert_msg(kernels_isa_parse(rows[i].short_name, &got_short), "%s",
                      rows[i].short_name);
        ck_assert_int_eq(got, rows[i].isa);
        ck_assert_int_eq(got_short, rows[i].isa);
        ck_assert_str_eq(kernels_isa_name(rows[i].isa), rows[i].name);
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
                 i ? " | " : "", rows[i].short_name);
    }
    ck_assert_str_eq(kernels_isa_choices(), choices);
    ck_assert_str_eq(KERNELS_ISA_CHOICES, choices);
    /* every printed name parses back to its set */
    for (int i = KERNELS_AUTO; i < KERNELS_COUNT; i++) {
        kernels_isa got = KERNELS_COUNT;
        ck_assert(kernels_isa_parse(kernels_isa_name((kernels_isa)i), &got));
        ck_assert_int_eq(got, i);
    }
    /* a few names as users type them */
    static const struct {
        const char *name;
        kernels_isa isa;
    } spot[] = {{"avx512", KERNELS_AVX512},     {"avx512-vnni", KERNELS_AVX512},
                {"amx", KERNELS_AMX},           {"avx512-amx", KERNELS_AMX},
                {"avxvnni", KERNELS_AVX_VNNI}, {"avx-vnni", KERNELS_AVX_VNNI}};
    for (size_t i = 0; i < sizeof spot / sizeof *spot; i++) {
        kernels_isa got = KERNELS_COUNT;
        ck_assert_msg(kernels_isa_parse(spot[i].name, &got), "%s", spot[i].name);
        ck_assert_int_eq(got, spot[i].isa);
    }
    static const char *const bad[] = {"",      "AVX2",    "avx",      "sve",
                                      "neon-", "avx512 ", "avx2-vnni"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kernels_isa got = KERNELS_COUNT;
        ck_assert_msg(!kernels_isa_parse(bad[i], &got), "'%s' parsed", bad[i]);
        ck_assert_int_eq(got, KERNELS_COUNT);
    }
}
END_TEST

START_TEST(test_stride)
{
    ck_assert_int_eq(quant_stride(172, 32), 192);
    ck_assert_int_eq(quant_stride(288, 64), 320);
    ck_assert_int_eq(quant_stride(256, 64), 256);
    ck_assert_int_eq(quant_stride(7, 0), 7);
}
END_TEST


/* A group quantized from a NaN or an infinity gets a non-finite scale on every ISA, so
 * that a corrupt fp32 model cannot hide behind finite scales; its other groups are
 * untouched. */
START_TEST(test_quantize_nonfinite)
{
    const float bad_values[] = {NAN, INFINITY, -INFINITY};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        for (size_t b = 0; b < 3; b++)
            for (int where = 0; where < 96; where += 13) {
                float x[96];
                for (int i = 0; i < 96; i++)
                    x[i] = 0.01f * (float)(i % 17) - 0.05f;
                x[where] = bad_values[b];
                int8_t q[96];
                float scale[3];
                quant_quantize_row(q, scale, x, 96, 96, 32);
                for (int g = 0; g < 3; g++)
                    ck_assert_msg(isfinite(scale[g]) == (g != where / 32),
                                  "%s: value %g at %d: scale of group %d is %g",
                                  kernels_isa_name(isas[j]), bad_values[b], where, g, scale[g]);
            }
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_dot_all_isas)
{
    rng_state = 0x9e3779b97f4a7c15ull;
    static const int groups[] = {32, 64, 96, 128, 256};
    static const int lens[] = {1, 2, 3, 5, 9, 24};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            int group = groups[gi], len = group * lens[li], ng = lens[li];
            int8_t *a = malloc(len), *b = malloc(len);
            float *as = malloc(sizeof(float) * ng), *bs = malloc(sizeof(float) * ng);
            double mag = 0.0;
            for (int i = 0; i < len; i++) {
                a[i] = (int8_t)((int)(rng_u32() % 255) - 127);
                b[i] = (int8_t)((int)(rng_u32() % 255) - 127);
            }
            for (int g = 0; g < ng; g++) {
                as[g] = rng_f() * 0.01f;
                bs[g] = rng_f() * 0.01f;
            }
            for (int i = 0; i < len; i++)
                mag += fabs((double)a[i] * b[i] * as[i / group] * bs[i / group]);
            float want = kernels_dot_q8_ref(a, as, b, bs, len, group);
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                float got = kernels_dot_q8(a, as, b, bs, len, group);
                ck_assert_msg(fabs(got - want) <= 1e-5 * mag,
                              "%s: group %d len %d: %g vs %g", kernels_isa_name(isas[j]), group,
                              len, got, want);
            }
            free(a);
            free(b);
            free(as);
            free(bs);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_matmul_shapes)
{
    rng_state = 0x243f6a8885a308d3ull;
    static const int shapes[][3] = {
        /* rows, cols, group */
        {64, 256, 32},  {61, 288, 32},  {7, 172, 32},   {13, 288, 64},  {37, 768, 64},
        {5, 64, 64},    {9, 320, 160},  {3, 96, 96},    {18, 512, 128}, {130, 100, 32},
        {2, 33, 32},    {1, 32, 32},    {9, 2048, 64},  {6, 4096, 32},  {5, 5632, 64},
    };
    static const int ns[] = {1, 2, 3, 4, 5, 17, 70};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            check_q8_matmul(shapes[s][0], shapes[s][1], shapes[s][2], ns[i]);
}
END_TEST

/* kernels_gemm (prefill's product, packed activations from 16 vectors on): every ISA
 * gives the scalar GEMM's bits, and all agree with the reference dot within rounding. */
static void check_gemm(int rows, int cols, int group, int n)
{
    owned w = owned_q8(rows, cols, group, 0.5f);
    float *x = random_vecs(n, cols, 2.0f);
    qbatch *xq = qbatch_new(n, cols, group);
    qbatch_quantize(xq, x, n);
    float *want = malloc(sizeof(float) * (size_t)n * rows);
    float *bound = malloc(sizeof(float) * (size_t)n * rows);
    float *ref = malloc(sizeof(float) * (size_t)n * rows);
    float *got = malloc(sizeof(float) * (size_t)n * rows);
    ref_matmul_q8(want, bound, &w.t, xq, n);
    kernels_init(KERNELS_SCALAR);
    ck_assert(kernels_gemm(NULL, ref, &w.t, NULL, xq, n));
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        for (int i = 0; i < n * rows; i++)
            got[i] = NAN;
        ck_assert(kernels_gemm(NULL, got, &w.t, NULL, xq, n));
        for (int i = 0; i < n * rows; i++) {
            check_each(fabsf(got[i] - want[i]) <= bound[i],
                       "%s gemm: rows %d cols %d group %d n %d: out[%d] = %g, want %g (±%g)",
                       kernels_isa_name(isas[j]), rows, cols, group, n, i, got[i], want[i],
                       bound[i]);
            /* plain NEON has no GEMM kernel: kernels_matmul */
            if (isas[j] != KERNELS_NEON)
                check_each(memcmp(&got[i], &ref[i], sizeof(float)) == 0,
                           "%s gemm: rows %d cols %d group %d n %d: out[%d] = %.9g, "
                           "the scalar GEMM %.9g", kernels_isa_name(isas[j]), rows, cols,
                           group, n, i, got[i], ref[i]);
        }
    }
    kernels_init(KERNELS_AUTO);
    free(want);
    free(bound);
    free(ref);
    free(got);
    free(x);
    qbatch_free(xq);
    owned_free(&w);
}

START_TEST(test_gemm_shapes)
{
    rng_state = 0x8aed2a6abf715880ull;
    static const int shapes[][3] = {
        /* rows, cols, group */
        {64, 256, 32}, {61, 288, 32}, {7, 172, 32}, {13, 288, 64}, {37, 768, 64},
        {9, 320, 160}, {3, 96, 96},   {18, 512, 128}, {5, 2048, 64}, {6, 1376, 32},
    };
    static const int ns[] = {16, 17, 31, 32, 33, 70};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], ns[i]);
    check_gemm(300, 768, 64, 300); /* several token tiles and row ranges, on threads */
    check_gemm(40, 11008, 32, 40); /* long rows: groups past the kernel's bias buffer */
}
END_TEST

/* kernels_gemm_shared: matrices of unequal rows reading one batch, products in one
 * region from one pack, each with kernels_gemm's bits, on every ISA; also at group 64,
 * the one matrix twice. */
START_TEST(test_gemm_shared)
{
    rng_state = 0x3c6ef372fe94f82bull;
    enum { COLS = 512, N = 70, COUNT = 4 };
    static const int rows[COUNT] = {300, 16, 48, 5};
    owned w[COUNT];
    const tensor *wp[COUNT];
    float *want[COUNT], *got[COUNT];
    for (int j = 0; j < COUNT; j++) {
        w[j] = owned_q8(rows[j], COLS, 32, 0.5f);
        wp[j] = &w[j].t;
        want[j] = malloc(sizeof(float) * (size_t)N * rows[j]);
        got[j] = malloc(sizeof(float) * (size_t)N * rows[j]);
    }
    owned other = owned_q8(24, COLS, 64, 0.5f); /* group 64: not the same pack */
    float *x = random_vecs(N, COLS, 2.0f);
    qbatch *xq = qbatch_new(N, COLS, 32);
    qbatch_quantize(xq, x, N);
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int i = 0; i < k; i++) {
        kernels_init(isas[i]);
        for (int j = 0; j < COUNT; j++)
            ck_assert(kernels_gemm(NULL, want[j], wp[j], NULL, xq, N));
        for (int c = 1; c <= COUNT; c++) {
            for (int j = 0; j < c; j++)
                for (int e = 0; e < N * rows[j]; e++)
                    got[j][e] = NAN;
            ck_assert(kernels_gemm_shared(NULL, c, got, wp, NULL, xq, N));
            for (int j = 0; j < c; j++)
                ck_assert_msg(memcmp(got[j], want[j], sizeof(float) * (size_t)N * rows[j]) == 0,
                              "%s: matrix %d of %d shared: not kernels_gemm's bits",
                              kernels_isa_name(isas[i]), j, c);
        }
        /* group 64, the same matrix twice */
        qbatch *xq64 = qbatch_new(N, COLS, 64);
        qbatch_quantize(xq64, x, N);
        size_t bytes64 = sizeof(float) * (size_t)N * 24;
        float *w64 = malloc(bytes64), *outs[2] = {malloc(bytes64), malloc(bytes64)};
        ck_assert(kernels_gemm(NULL, w64, &other.t, NULL, xq64, N));
        const tensor *twice[2] = {&other.t, &other.t};
        ck_assert(kernels_gemm_shared(NULL, 2, outs, twice, NULL, xq64, N));
        ck_assert(memcmp(outs[0], w64, bytes64) == 0 && memcmp(outs[1], w64, bytes64) == 0);
        free(outs[0]);
        free(outs[1]);
        free(w64);
        qbatch_free(xq64);
    }
    kernels_init(KERNELS_AUTO);
    for (int j = 0; j < COUNT; j++) {
        owned_free(&w[j]);
        free(want[j]);
        free(got[j]);
    }
    owned_free(&other);
    free(x);
    qbatch_free(xq);
}
END_TEST

/* The same int8 weights in both layouts: Q8_0 (values, fp32 scales apart) and
 * Q8_0_BLOCKS (ggml's 34-byte blocks, an IEEE half scale each). Scales are halves
 * exactly (10-bit mantissas), so both layouts hold the same numbers. */
typedef struct {
    tensor rows, blocks;
    int8_t *q;
    float *scale;
    uint8_t *b;
} two_layouts;

static two_layouts two_layouts_new(int rows, int cols)
{
    two_layouts t;
    int groups = cols / 32;
    t.q = malloc((size_t)rows * cols);
    t.scale = malloc(sizeof(float) * (size_t)rows * groups);
    t.b = malloc((size_t)rows * groups * QUANT_BLOCK_BYTES);
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        t.q[i] = (int8_t)((int)(rng_u32() % 255) - 127);
    for (size_t i = 0; i < (size_t)rows * groups; i++) {
        int mant = (int)(rng_u32() % 1024), e = (int)(rng_u32() % 6);
        t.scale[i] = ldexpf(1.0f + mant / 1024.0f, -7 - e);
        uint16_t h = (uint16_t)((15 - 7 - e) << 10 | mant); /* the same number as a half */
        uint8_t *blk = t.b + i * QUANT_BLOCK_BYTES;
        blk[0] = (uint8_t)(h & 0xff);
        blk[1] = (uint8_t)(h >> 8);
        memcpy(blk + 2, t.q + i * 32, 32);
    }
    t.rows = (tensor){.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = cols,
                      .group = 32, .q = t.q, .scale = t.scale};
    t.blocks = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                        .group = 32, .blocks = t.b};
    return t;
}

static void two_layouts_free(two_layouts *t)
{
    free(t->q);
    free(t->scale);
    free(t->b);
}

/* Every product of a Q8_0_BLOCKS tensor (decode, small batches, the GEMM, dequantizing a
 * row) gives the bits of the same product on the Q8_0 layout, on every ISA; and the
 * SIMD ones agree with the scalar reference. */
START_TEST(test_blocks_layout)
{
    rng_state = 0x1f83d9abfb41bd6bull;
    static const int shapes[][2] = {{9, 64}, {37, 96}, {20, 768}, {3, 32}, {33, 2080}};
    static const int ns[] = {1, 2, 5, 8, 9, 16, 33}; /* 2..8: matmul_q8b where a table has it */
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        two_layouts t = two_layouts_new(rows, cols);
        float *a = malloc(sizeof(float) * cols), *b = malloc(sizeof(float) * cols);
        for (int r = 0; r < rows; r++) {
            quant_dequantize_row(a, &t.rows, r);
            quant_dequantize_row(b, &t.blocks, r);
            ck_assert(memcmp(a, b, sizeof(float) * cols) == 0);
        }
        free(a);
        free(b);
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
            int n = ns[i];
            float *x = random_vecs(n, cols, 2.0f);
            qbatch *xq = qbatch_new(n, cols, 32);
            qbatch_quantize(xq, x, n);
            float *want = malloc(sizeof(float) * (size_t)n * rows);
            float *bound = malloc(sizeof(float) * (size_t)n * rows);
            float *got_r = malloc(sizeof(float) * (size_t)n * rows);
            float *got_b = malloc(sizeof(float) * (size_t)n * rows);
            ref_matmul_q8(want, bound, &t.rows, xq, n);
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                for (int gemm = 0; gemm < 2; gemm++) {
                    if (gemm) {
                        ck_assert(kernels_gemm(NULL, got_r, &t.rows, NULL, xq, n));
                        ck_assert(kernels_gemm(NULL, got_b, &t.blocks, NULL, xq, n));
                    } else if (n == 1) { /* each layout with one decode stream and four */
                        float *r4 = malloc(sizeof(float) * rows);
                        float *b1 = malloc(sizeof(float) * rows);
                        kernels_set_decode_streams(1);
                        ck_assert(kernels_matvec(NULL, got_r, &t.rows, NULL, xq));
                        ck_assert(kernels_matvec(NULL, b1, &t.blocks, NULL, xq));
                        kernels_set_decode_streams(4);
                        ck_assert(kernels_matvec(NULL, r4, &t.rows, NULL, xq));
                        ck_assert(kernels_matvec(NULL, got_b, &t.blocks, NULL, xq));
                        kernels_set_decode_streams(0);
                        ck_assert_msg(memcmp(r4, got_r, sizeof(float) * rows) == 0 &&
                                          memcmp(b1, got_b, sizeof(float) * rows) == 0,
                                      "%s %dx%d: one decode stream and four differ",
                                      kernels_isa_name(isas[j]), rows, cols);
                        free(r4);
                        free(b1);
                    } else {
                        ck_assert(kernels_matmul(NULL, got_r, &t.rows, NULL, xq, n));
                        ck_assert(kernels_matmul(NULL, got_b, &t.blocks, NULL, xq, n));
                    }
                    for (int o = 0; o < n * rows; o++) {
                        check_each(memcmp(&got_r[o], &got_b[o], sizeof(float)) == 0,
                                   "%s %s %dx%d n %d: out[%d]: rows %.9g, blocks %.9g",
                                   kernels_isa_name(isas[j]), gemm ? "gemm" : "matmul", rows,
                                   cols, n, o, got_r[o], got_b[o]);
                        check_each(fabsf(got_b[o] - want[o]) <= bound[o],
                                   "%s blocks %dx%d n %d: out[%d] = %g, want %g",
                                   kernels_isa_name(isas[j]), rows, cols, n, o, got_b[o],
                                   want[o]);
                    }
                }
            }
            kernels_init(KERNELS_AUTO);
            free(want);
            free(bound);
            free(got_r);
            free(got_b);
            free(x);
            qbatch_free(xq);
        }
        two_layouts_free(&t);
    }
}
END_TEST

/* The scalar GEMM's operations on a Q8_0_BLOCKS w (gemm_q8_scalar, kernels/scalar.c):
 * per row and vector, blocks in order, sum = fma(float(Σ x·w), xs · ws, sum). */
static void ref_gemm_bits(float *out, const tensor *w, const qbatch *xq, int n)
{
    int blocks = w->cols / 32;
    for (int v = 0; v < n; v++)
        for (int r = 0; r < w->rows; r++) {
            float sum = 0.0f;
            for (int b = 0; b < blocks; b++) {
                const uint8_t *blk = tensor_block(w, r, b);
                const int8_t *x = xq->q + (size_t)v * xq->stride + 32 * b;
                int32_t acc = 0;
                for (int i = 0; i < 32; i++)
                    acc += (int32_t)x[i] * quant_block_values(blk)[i];
                sum = fmaf((float)acc, xq->scale[(size_t)v * blocks + b] * quant_block_scale(blk),
                           sum);
            }
            out[(size_t)v * w->rows + r] = sum;
        }
}

/* A GGUF Q8_0 tensor read from panels (kernels_panels_pack): on every table that reads
 * them, decode, small batches and row ranges that cut panels give the scalar GEMM's
 * bits, which are also kernels_gemm's on the blocks (so a token decoded and the same
 * token prefilled agree bit for bit); -128 in the file is read as it is. A table
 * without a panel kernel ignores the panels (the bits of the blocks alone). */
START_TEST(test_panels)
{
    rng_state = 0x9c4f7e1d2b3a5968ull;
    static const int shapes[][2] = {{1, 32}, {15, 96}, {16, 768}, {17, 64}, {37, 2080}, {69, 256},
                                    {133, 64}};
    static const int ns[] = {1, 2, 3, 4, 5, 9, 16, 17};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas), readers = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        two_layouts t = two_layouts_new(rows, cols);
        for (int r = 0; r < rows; r += 3) /* the file's extreme value */
            t.b[((size_t)r * (cols / 32) + (size_t)r % (cols / 32)) * QUANT_BLOCK_BYTES + 2 + r % 32] =
                0x80;
        uint8_t *pb = aligned_alloc(64, (kernels_panels_bytes(&t.blocks) + 63) / 64 * 64);
        ck_assert_ptr_nonnull(pb);
        kernels_panels_pack(pb, &t.blocks);
        tensor wp = t.blocks;
        wp.panels = pb;
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
            int n = ns[i];
            float *x = random_vecs(n, cols, 2.0f);
            qbatch *xq = qbatch_new(n, cols, 32);
            qbatch_quantize(xq, x, n);
            size_t outs = (size_t)n * rows;
            float *want = malloc(sizeof(float) * outs), *got = malloc(sizeof(float) * outs);
            float *plain = malloc(sizeof(float) * outs);
            ref_gemm_bits(want, &t.blocks, xq, n);
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                if (!kernels_panels_wanted()) {
                    ck_assert(kernels_matmul(NULL, plain, &t.blocks, NULL, xq, n));
                    ck_assert(kernels_matmul(NULL, got, &wp, NULL, xq, n));
                    ck_assert_msg(memcmp(plain, got, sizeof(float) * outs) == 0,
                                  "%s reads panels it has no kernel for",
                                  kernels_isa_name(isas[j]));
                    continue;
                }
                readers++;
                for (int way = 0; way < 5; way++) {
                    for (size_t o = 0; o < outs; o++)
                        got[o] = NAN;
                    if (way == 0 && n == 1)
                        ck_assert(kernels_matvec(NULL, got, &wp, NULL, xq));
                    else if (way == 0)
                        ck_assert(kernels_matmul(NULL, got, &wp, NULL, xq, n));
                    else if (way == 1) /* ranges of 5 rows: panels cut */
                        for (int r0 = 0; r0 < rows; r0 += 5)
                            ck_assert(kernels_matmul_rows(NULL, got, &wp, NULL, xq, n, r0,
                                                          r0 + 5 < rows ? r0 + 5 : rows));
                    else if (way == 2) /* one range: panels read side by side */
                        ck_assert(kernels_matmul_rows(NULL, got, &wp, NULL, xq, n, 0, rows));
                    else if (way == 3)
                        ck_assert(kernels_gemm(NULL, got, &wp, NULL, xq, n));
                    else
                        ck_assert(kernels_gemm(NULL, got, &t.blocks, NULL, xq, n));
                    if (way == 4 && n < 16)
                        continue; /* below 16 vectors kernels_gemm is kernels_matmul */
                    for (size_t o = 0; o < outs; o++)
                        check_each(memcmp(&got[o], &want[o], sizeof(float)) == 0,
                                   "%s panels way %d %dx%d n %d: out[%zu] = %.9g, the "
                                   "scalar GEMM's %.9g",
                                   kernels_isa_name(isas[j]), way, rows, cols, n, o, got[o],
                                   want[o]);
                }
            }
            kernels_init(KERNELS_AUTO);
            free(want);
            free(got);
            free(plain);
            free(x);
            qbatch_free(xq);
        }
        free(pb);
        two_layouts_free(&t);
    }
    if (!readers)
        printf("test_panels: no kernel table here reads panels (AVX-512 VNNI); "
               "only the tables that ignore them were checked\n");
}
END_TEST

/* A gated activation's reference: the wanted product for gate g and up, and its
 * tolerance in *tol (asserting what else it knows of the form). */
typedef double (*gated_want)(double g, double up, double *tol);

/* kernel(gate, up, n) on every ISA and n = 1..39, then x3 to 1000, against want, with
 * gates i - 20 scaled by `step` for i < 40 (the range's edges) and `amp` sin(0.37 i)
 * beyond. */
static void check_gated(const char *name, void (*kernel)(float *, const float *, int),
                        gated_want want_of, float step, float amp)
{
    enum { N = 1000 };
    float gate[N], up[N], got[N];
    for (int i = 0; i < N; i++) {
        gate[i] = i < 40 ? (float)(i - 20) * step : amp * (float)sin(i * 0.37);
        up[i] = (float)cos(i * 0.11);
    }
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        for (int n = 1; n <= N; n = n < 40 ? n + 1 : n * 3) {
            memcpy(got, gate, sizeof(float) * n);
            kernel(got, up, n);
            for (int i = 0; i < n; i++) {
                double tol, want = want_of(gate[i], up[i], &tol);
                ck_assert_msg(fabs(got[i] - want) <= tol,
                              "%s %s n %d: [%d] act(%g) * %g = %.9g, want %.9g",
                              kernels_isa_name(isas[j]), name, n, i, gate[i], up[i], got[i],
                              want);
            }
        }
    }
    kernels_init(KERNELS_AUTO);
}

static double swiglu_want(double g, double up, double *tol)
{
    double want = g / (1.0 + exp(-g)) * up;
    *tol = 4e-7 * fabs(want) + 1e-30;
    return want;
}

/* GELU's tanh form, 0.5 g (1 + tanh(u)), as g / (1 + exp(-2u)): where g is far below 0,
 * 1 + tanh(u) is 0 in double too, and the product's true value is not. */
static double geglu_want(double g, double up, double *tol)
{
    double u = 0.7978845608028654 * (g + 0.044715 * g * g * g); /* sqrt(2/pi) */
    double want = g / (1.0 + exp(-2.0 * u)) * up;
    if (g > -4.0)
        ck_assert(fabs(want - 0.5 * g * (1.0 + tanh(u)) * up) <= 1e-12);
    /* u in float carries a relative error of about 2^-24, which exp turns into |2u|
     * 2^-24 of the result: relative 1e-6 plus that, twice */
    *tol = (1e-6 + 1.2e-7 * fabs(2.0 * u)) * fabs(want) + 1e-30;
    return want;
}

/* kernels_swiglu: every ISA vs double precision, within a few float ulps, over the
 * range activations take (and beyond, where exp under- and overflows). */
START_TEST(test_swiglu)
{
    check_gated("swiglu", kernels_swiglu, swiglu_want, 5.0f, 12.0f);
}
END_TEST

/* kernels_geglu: every ISA vs GELU's tanh form in double precision, over the range
 * activations take and beyond (where exp overflows: g far below 0), and the form itself
 * against 0.5 g (1 + tanh(u)) where that is exact enough. */
START_TEST(test_geglu)
{
    check_gated("geglu", kernels_geglu, geglu_want, 1.5f, 6.0f);
}
END_TEST

START_TEST(test_matmul_big_parallel)
{
    /* large enough to be split over threads */
    rng_state = 0x13198a2e03707344ull;
    check_q8_matmul(1000, 768, 64, 1);
    check_q8_matmul(517, 288, 32, 1);
    check_q8_matmul(203, 768, 32, 33);
}
END_TEST

/* The one-vector kernel may read rows its own way (AVX-512 reads four side by side, each
 * in its own accumulator, and the rest one at a time, or all one at a time with one
 * decode stream) where the batch kernels go in blocks of four; a row's result must not
 * depend on which, nor on the batch it is in: vectors of a matmul of 2 and of 20 equal
 * their matvecs bit for bit, on every ISA, with one decode stream and with four, for
 * short rows and long, whole groups and half ones, rows padded past cols. The GEMM
 * (prefill's batch kernels) has its own bits, also independent of the batch: a GEMM of
 * 1, 10 or 19 vectors gives each the bits it gets among 20. */
START_TEST(test_matvec_same_bits_as_matmul)
{
    rng_state = 0x452821e638d01377ull;
    static const int shapes[][3] = {{9, 288, 32},   {11, 768, 64},  {6, 96, 96},
                                    {9, 2048, 64},  {7, 2080, 32},  {6, 4096, 64},
                                    {5, 11008, 64}, {5, 1024, 128}, {3, 2112, 64},
                                    {64, 172, 32},  {40, 64, 32},   {33, 100, 64}};
    enum { N = 20 };
    static const int checked[] = {0, 1, N - 1}; /* the vectors compared with a matvec */
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], cols = shapes[s][1], group = shapes[s][2];
        owned w = owned_q8(rows, cols, group, 0.5f);
        float *x = random_vecs(N, cols, 2.0f);
        qbatch *xq = qbatch_new(N, cols, group), *x1[3];
        qbatch_quantize(xq, x, N);
        for (int c = 0; c < 3; c++) {
            x1[c] = qbatch_new(1, cols, group);
            qbatch_quantize(x1[c], x + (size_t)checked[c] * cols, 1);
        }
        float *one = malloc(sizeof(float) * rows), *many = malloc(sizeof(float) * N * rows);
        float *gemm = malloc(sizeof(float) * N * rows);
        for (int j = 0; j < k; j++) {
            kernels_init(isas[j]);
            for (int streams = 1; streams <= 4; streams += 3) {
                kernels_set_decode_streams(streams);
                for (int n = 2; n <= N; n += N - 2) {
                    ck_assert(kernels_matmul(NULL, many, &w.t, NULL, xq, n));
                    for (int c = 0; c < 3 && checked[c] < n; c++) {
                        int v = checked[c];
                        ck_assert(kernels_matvec(NULL, one, &w.t, NULL, x1[c]));
                        for (int r = 0; r < rows; r++)
                            ck_assert_msg(memcmp(&one[r], &many[(size_t)v * rows + r],
                                                 sizeof(float)) == 0,
                                          "%s, %d stream(s): %dx%d group %d, vector %d of %d, "
                                          "row %d: matvec %.9g, matmul %.9g",
                                          kernels_isa_name(isas[j]), streams, rows, cols, group,
                                          v, n, r, one[r], many[(size_t)v * rows + r]);
                    }
                }
            }
            if (group % 32 != 0)
                continue;
            /* the GEMM of v vectors: each has the bits it has among N */
            ck_assert(kernels_gemm(NULL, gemm, &w.t, NULL, xq, N));
            for (int v = 1; v <= N; v += 9) {
                float *const outs1[1] = {many};
                const tensor *ws1[1] = {&w.t};
                ck_assert(kernels_gemm_shared(NULL, 1, outs1, ws1, NULL, xq, v));
                ck_assert_msg(memcmp(many, gemm, sizeof(float) * (size_t)v * rows) == 0,
                              "%s: %dx%d group %d, the GEMM of %d vectors is not their bits "
                              "in a GEMM of %d", kernels_isa_name(isas[j]), rows, cols, group,
                              v, N);
            }
        }
        kernels_set_decode_streams(0);
        kernels_init(KERNELS_AUTO);
        free(one);
        free(many);
        free(gemm);
        free(x);
        for (int c = 0; c < 3; c++)
            qbatch_free(x1[c]);
        qbatch_free(xq);
        owned_free(&w);
    }
}
END_TEST

/* F32: every ISA vs a double-precision sum. */
static void check_f32(int rows, int cols, int n)
{
    float *w = random_vecs(rows, cols, 1.0f);
    float *x = random_vecs(n, cols, 1.0f);
    tensor t = {.type = TENSOR_F32, .rows = rows, .cols = cols, .stride = cols, .f = w};
    float *got = malloc(sizeof(float) * (size_t)n * rows);
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        if (n == 1)
            ck_assert(kernels_matvec(NULL, got, &t, x, NULL));
        else
            ck_assert(kernels_matmul(NULL, got, &t, x, NULL, n));
        for (int i = 0; i < n; i++)
            for (int r = 0; r < rows; r++) {
                double want = 0.0, mag = 0.0;
                for (int c = 0; c < cols; c++) {
                    want += (double)w[(size_t)r * cols + c] * x[(size_t)i * cols + c];
                    mag += fabs((double)w[(size_t)r * cols + c] * x[(size_t)i * cols + c]);
                }
                float g = got[(size_t)i * rows + r];
                check_each(fabs(g - want) <= 1e-5 * mag + 1e-30,
                           "%s f32 rows %d cols %d n %d: [%d,%d] %g vs %g",
                           kernels_isa_name(isas[j]), rows, cols, n, i, r, g, want);
            }
    }
    kernels_init(KERNELS_AUTO);
    free(w);
    free(x);
    free(got);
}

START_TEST(test_f32_shapes)
{
    rng_state = 0xa4093822299f31d0ull;
    static const int shapes[][2] = {{64, 256}, {61, 288}, {7, 172}, {5, 13}, {1, 1}, {300, 771}};
    static const int ns[] = {1, 3, 17};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            check_f32(shapes[s][0], shapes[s][1], ns[i]);
}
END_TEST

START_TEST(test_rows_f32)
{
    /* attention helpers: strided rows, every ISA vs double precision */
    rng_state = 0x3f84d5b5b5470917ull;
    static const int lens[] = {1, 7, 16, 48, 64, 100, 128, 200};
    static const int nrows[] = {1, 3, 4, 5, 17, 130};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t ri = 0; ri < sizeof nrows / sizeof *nrows; ri++) {
            int len = lens[li], n = nrows[ri];
            size_t stride = (size_t)len * 3 + 5;
            float *rows = random_vecs(n, (int)stride, 1.0f);
            float *x = random_vecs(1, len, 1.0f);
            float *a = random_vecs(1, n, 1.0f);
            float *base = random_vecs(1, len, 1.0f);
            float *got = malloc(sizeof(float) * (n > len ? n : len));
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                kernels_rows_dot(got, rows, stride, n, x, len);
                for (int r = 0; r < n; r++) {
                    double want = 0.0, mag = 0.0;
                    for (int c = 0; c < len; c++) {
                        want += (double)rows[r * stride + c] * x[c];
                        mag += fabs((double)rows[r * stride + c] * x[c]);
                    }
                    ck_assert_msg(fabs(got[r] - want) <= 1e-5 * mag + 1e-30,
                                  "%s dot len %d rows %d: [%d] %g vs %g",
                                  kernels_isa_name(isas[j]), len, n, r, got[r], want);
                }
                memcpy(got, base, sizeof(float) * len);
                kernels_rows_axpy(got, rows, stride, n, a, len);
                for (int c = 0; c < len; c++) {
                    double want = base[c], mag = fabs(base[c]);
                    for (int r = 0; r < n; r++) {
                        want += (double)a[r] * rows[r * stride + c];
                        mag += fabs((double)a[r] * rows[r * stride + c]);
                    }
                    ck_assert_msg(fabs(got[c] - want) <= 1e-5 * mag + 1e-30,
                                  "%s axpy len %d rows %d: [%d] %g vs %g",
                                  kernels_isa_name(isas[j]), len, n, c, got[c], want);
                }
            }
            free(rows);
            free(x);
            free(a);
            free(base);
            free(got);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

enum { STEPS_MAX = 100 };

START_TEST(test_softmax)
{
    /* every ISA's softmax vs a double-precision one: relative error below 1e-6 */
    rng_state = 0x6a09e667f3bcc909ull;
    static const int ns[] = {1, 2, 7, 16, 17, 100, 1000, 4097};
    static const float amps[] = {0.1f, 3.0f, 30.0f, 300.0f};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (size_t ai = 0; ai < sizeof amps / sizeof *amps; ai++) {
            int n = ns[ni];
            float *x = random_vecs(1, n, amps[ai]);
            float *y = malloc(sizeof(float) * n);
            double *want = malloc(sizeof(double) * n);
            float max = x[0];
            double sum = 0.0;
            for (int i = 1; i < n; i++)
                max = x[i] > max ? x[i] : max;
            /* exact exp of the float difference every kernel starts from */
            for (int i = 0; i < n; i++)
                sum += want[i] = exp((double)(x[i] - max));
            for (int i = 0; i < n; i++)
                want[i] /= sum;
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                memcpy(y, x, sizeof(float) * n);
                kernels_softmax(y, n);
                for (int i = 0; i < n; i++)
                    check_each(fabs(y[i] - want[i]) <= 1e-6 * want[i] + 1e-36,
                               "%s softmax n %d amp %g: [%d] = %g, want %g (x %g, max %g)",
                               kernels_isa_name(isas[j]), n, amps[ai], i, y[i], want[i], x[i],
                               max);
            }
            free(x);
            free(y);
            free(want);
        }
    /* exp over its whole range: softmax of {0, t} is {1, e^t} / (1 + e^t) */
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        for (float t = -87.0f; t <= 0.0f; t += 0.37f) {
            float v[2] = {t, 0.0f};
            kernels_softmax(v, 2);
            double e = exp((double)t);
            ck_assert_msg(fabs(v[0] - e / (1 + e)) <= 1e-6 * (e / (1 + e)),
                          "%s: exp(%g): %g vs %g", kernels_isa_name(isas[j]), t, v[0], e / (1 + e));
        }
    }
    /* -INFINITY (a masked key, a knocked-out expert) weighs exactly 0 at every lane and
     * tail position, and the rest share 1 */
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        for (int n = 2; n <= 37; n++) {
            float v[37];
            for (int i = 0; i < n; i++)
                v[i] = i % 3 == 1 ? -INFINITY : 0.25f * (float)(i % 5);
            kernels_softmax(v, n);
            double sum = 0.0;
            for (int i = 0; i < n; i++) {
                if (i % 3 == 1)
                    ck_assert_msg(v[i] == 0.0f, "%s n %d: exp(-inf) at %d gives %g",
                                  kernels_isa_name(isas[j]), n, i, v[i]);
                sum += v[i];
            }
            ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s n %d: sum %g", kernels_isa_name(isas[j]),
                          n, sum);
        }
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_attention)
{
    /* causal attention of one head, every ISA vs double precision: strided q, k, v
     * and out; batches not a multiple of the query block; head sizes with tails */
    rng_state = 0xbb67ae8584caa73bull;
    static const int hss[] = {8, 48, 64, 100, 128};
    static const int ns[] = {1, 3, 4, 5, 17};
    static const int poss[] = {0, 7, 100};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t pi = 0; pi < sizeof poss / sizeof *poss; pi++) {
                int hs = hss[hi], n = ns[ni], pos = poss[pi], keys = pos + n;
                size_t qs = (size_t)hs * 3, kvs = (size_t)hs * 2 + 3, os = (size_t)hs + 5;
                size_t as = (size_t)keys + 2;
                float *q = random_vecs(n, (int)qs, 1.0f);
                float *kc = random_vecs(keys, (int)kvs, 1.0f);
                float *vc = random_vecs(keys, (int)kvs, 1.0f);
                float *out = malloc(sizeof(float) * n * os);
                float *att = malloc(sizeof(float) * n * as);
                float scale = 1.0f / sqrtf((float)hs);
                for (int j = 0; j < k; j++) {
                    kernels_init(isas[j]);
                    for (size_t i = 0; i < n * as; i++)
                        att[i] = NAN;
                    ck_assert(kernels_attention_f32(NULL, out, os, att, as, q, qs, kc, vc, kvs, n,
                                                    pos, hs, scale));
                    for (int i = 0; i < n; i++) {
                        int ki = pos + i + 1;
                        double w[256], max = -1e300, sum = 0.0;
                        for (int t = 0; t < ki; t++) {
                            double d = 0.0;
                            for (int c = 0; c < hs; c++)
                                d += (double)q[i * qs + c] * kc[t * kvs + c];
                            w[t] = d * scale;
                            max = w[t] > max ? w[t] : max;
                        }
                        for (int t = 0; t < ki; t++)
                            sum += w[t] = exp(w[t] - max);
                        for (int t = 0; t < ki; t++) {
                            w[t] /= sum;
                            check_each(fabs(att[i * as + t] - w[t]) <= 1e-5 * w[t] + 1e-7,
                                       "%s attn hs %d n %d pos %d: weight [%d][%d] %g vs %g",
                                       kernels_isa_name(isas[j]), hs, n, pos, i, t,
                                       att[i * as + t], w[t]);
                        }
                        for (int t = ki; t < keys; t++)
                            ck_assert_float_eq(att[i * as + t], 0.0f);
                        for (int c = 0; c < hs; c++) {
                            double o = 0.0, mag = 0.0;
                            for (int t = 0; t < ki; t++) {
                                o += w[t] * vc[t * kvs + c];
                                mag += fabs(w[t] * vc[t * kvs + c]);
                            }
                            check_each(fabs(out[i * os + c] - o) <= 1e-5 * mag + 1e-7,
                                       "%s attn hs %d n %d pos %d: out [%d][%d] %g vs %g",
                                       kernels_isa_name(isas[j]), hs, n, pos, i, c,
                                       out[i * os + c], o);
                        }
                    }
                }
                free(q);
                free(kc);
                free(vc);
                free(out);
                free(att);
            }
    kernels_init(KERNELS_AUTO);
}
END_TEST


/* ---- int8 KV-cache attention ---- */

/* One head's int8 KV cache made by quantizing random fp32 rows (the same way the
 * transformer fills it), each row with its own amplitude so the row scales differ. */
typedef struct {
    int n, hs;
    float *kf, *vf;   /* (n, hs): the rows before quantization */
    int8_t *k, *v;    /* (n, hs) */
    float *ks, *vs;   /* (n) */
    float *kd, *vd;   /* (n, hs): dequantized rows */
} kv_head;

static kv_head kv_new(int n, int hs, float kamp, float vamp)
{
    kv_head h = {.n = n, .hs = hs};
    size_t sz = (size_t)n * hs;
    h.kf = malloc(sizeof(float) * sz);
    h.vf = malloc(sizeof(float) * sz);
    h.k = malloc(sz);
    h.v = malloc(sz);
    h.ks = malloc(sizeof(float) * n);
    h.vs = malloc(sizeof(float) * n);
    h.kd = malloc(sizeof(float) * sz);
    h.vd = malloc(sizeof(float) * sz);
    for (int t = 0; t < n; t++) {
        float ka = kamp * (0.1f + fabsf(rng_f())), va = vamp * (0.1f + fabsf(rng_f()));
        for (int j = 0; j < hs; j++) {
            h.kf[(size_t)t * hs + j] = ka * rng_f();
            h.vf[(size_t)t * hs + j] = va * rng_f();
        }
        quant_quantize_row(h.k + (size_t)t * hs, h.ks + t, h.kf + (size_t)t * hs, hs, hs, hs);
        quant_quantize_row(h.v + (size_t)t * hs, h.vs + t, h.vf + (size_t)t * hs, hs, hs, hs);
    }
    quant_dequantize_rows(h.kd, h.k, h.ks, n, hs);
    quant_dequantize_rows(h.vd, h.v, h.vs, n, hs);
    return h;
}

static void kv_free(kv_head *h)
{
    free(h->kf);
    free(h->vf);
    free(h->k);
    free(h->v);
    free(h->ks);
    free(h->vs);
    free(h->kd);
    free(h->vd);
}

/* Relative tolerance on att between two fp32 evaluations of the same attention that sum
 * in different orders. A score is a dot of hs terms times two factors: any two orders
 * differ by at most (hs + 2) eps * m_t, m_t = scale * ks * Σ|q k|. A weight moves by its
 * own score's error and the normaliser's (2 * max); exp and the sum of n_keys weights
 * add (n_keys + 8) eps, and rounding x - max adds |x - max| eps. */
static double att_rel_tol(const kv_head *h, const float *q, float scale)
{
    double worst = 0.0, smax = 0.0;
    for (int t = 0; t < h->n; t++) {
        double m = 0.0, d = 0.0;
        for (int j = 0; j < h->hs; j++) {
            m += fabs((double)q[j] * h->k[(size_t)t * h->hs + j]);
            d += (double)q[j] * h->k[(size_t)t * h->hs + j];
        }
        m *= fabs((double)scale * h->ks[t]);
        worst = fmax(worst, (h->hs + 2) * FLT_EPSILON * m);
        smax = fmax(smax, fabs(d * scale * h->ks[t]));
    }
    return 2.0 * worst + (h->n + 8 + 2.0 * smax) * FLT_EPSILON;
}

/* out[j] may move by rel * M_j from the weights plus (n_keys + 2) eps * M_j from its
 * own sum, M_j = Σ_t att[t] * vs[t] * |v[t][j]|. */
static void check_q8_out(const char *what, const kv_head *h, const float *got, const float *want,
                         const float *att, double rel)
{
    for (int j = 0; j < h->hs; j++) {
        double mag = 0.0;
        for (int t = 0; t < h->n; t++)
            mag += fabs((double)att[t] * h->vs[t] * h->v[(size_t)t * h->hs + j]);
        double tol = (rel + (h->n + 2) * FLT_EPSILON) * mag + 1e-30;
        ck_assert_msg(fabs((double)got[j] - want[j]) <= tol,
                      "%s: hs %d n_keys %d: out[%d] = %.9g, want %.9g (±%.3g)", what, h->hs, h->n,
                      j, got[j], want[j], tol);
    }
}

static void check_q8_att(const char *what, const kv_head *h, const float *got, const float *want,
                         double rel)
{
    double sum = 0.0;
    for (int t = 0; t < h->n; t++) {
        ck_assert_msg(fabs((double)got[t] - want[t]) <= rel * want[t] + 1e-37,
                      "%s: hs %d n_keys %d: att[%d] = %.9g, want %.9g (rel ±%.3g)", what, h->hs,
                      h->n, t, got[t], want[t], rel);
        sum += got[t];
    }
    ck_assert_msg(fabs(sum - 1.0) <= (h->n + 4) * FLT_EPSILON, "%s: hs %d n_keys %d: Σ att = %.9g",
                  what, h->hs, h->n, sum);
}

START_TEST(test_attention_q8)
{
    /* every ISA vs the plain-C twin (the scalar kernel set), and vs kernels_attention_f32
     * over the dequantized rows; head sizes with tails and above one 128-value slice */
    rng_state = 0x3c6ef372fe94f82bull;
    static const int hss[] = {8, 48, 64, 128, 1, 7, 100, 200};
    static const int ns[] = {1, 3, 17, 300};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            int hs = hss[hi], n = ns[ni];
            kv_head h = kv_new(n, hs, 2.0f, 1.0f);
            float *q = random_vecs(1, hs, 1.5f);
            float scale = 1.0f / sqrtf((float)hs);
            float *want = malloc(sizeof(float) * hs), *got = malloc(sizeof(float) * hs);
            float *watt = malloc(sizeof(float) * n), *att = malloc(sizeof(float) * n);
            double rel = att_rel_tol(&h, q, scale);
            kernels_init(KERNELS_SCALAR);
            kernels_attention_q8(want, watt, q, h.k, h.ks, h.v, h.vs, n, hs, scale);
            for (int j = 0; j < k; j++) {
                char what[64];
                snprintf(what, sizeof what, "%s vs twin", kernels_isa_name(isas[j]));
                kernels_init(isas[j]);
                for (int i = 0; i < hs; i++)
                    got[i] = NAN;
                for (int t = 0; t < n; t++)
                    att[t] = NAN;
                kernels_attention_q8(got, att, q, h.k, h.ks, h.v, h.vs, n, hs, scale);
                check_q8_att(what, &h, att, watt, rel);
                check_q8_out(what, &h, got, want, watt, rel);

                /* the fp32 kernel on the dequantized rows: the same numbers up to rounding
                 * (dequantizing rounds each k and v once more) */
                snprintf(what, sizeof what, "%s vs kernels_attention_f32", kernels_isa_name(isas[j]));
                float *fout = malloc(sizeof(float) * hs), *fatt = malloc(sizeof(float) * n);
                ck_assert(kernels_attention_f32(NULL, fout, hs, fatt, n, q, hs, h.kd, h.vd, hs, 1,
                                                n - 1, hs, scale));
                check_q8_att(what, &h, att, fatt, rel + 4 * FLT_EPSILON);
                check_q8_out(what, &h, got, fout, fatt, rel + 4 * FLT_EPSILON);
                free(fout);
                free(fatt);
            }
            free(want);
            free(got);
            free(watt);
            free(att);
            free(q);
            kv_free(&h);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_attention_q8_vs_unquantized)
{
    /* what the transformer relies on: attention over the int8 cache stays within the
     * quantization bound of exact attention over the rows it was made from. Each k and
     * v value is off by at most half a step (0.5 * its row scale), so score t moves by
     * at most d_t = scale * ks[t] / 2 * Σ|q|, each weight by a factor within
     * exp(±2 max d), and out[j] by (exp(2 max d) - 1) * Σ att|v| + Σ att * vs / 2. */
    rng_state = 0x510e527fade682d1ull;
    static const int hss[] = {8, 48, 64, 128};
    static const int ns[] = {3, 17, 300};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            int hs = hss[hi], n = ns[ni];
            kv_head h = kv_new(n, hs, 2.0f, 1.0f);
            float *q = random_vecs(1, hs, 1.5f);
            float scale = 1.0f / sqrtf((float)hs);
            double *w = malloc(sizeof(double) * n), qabs = 0.0, dmax = 0.0, wmax = -1e300;
            for (int j = 0; j < hs; j++)
                qabs += fabs(q[j]);
            for (int t = 0; t < n; t++) {
                double d = 0.0;
                for (int j = 0; j < hs; j++)
                    d += (double)q[j] * h.kf[(size_t)t * hs + j];
                w[t] = d * scale;
                wmax = fmax(wmax, w[t]);
                dmax = fmax(dmax, scale * h.ks[t] * 0.5001 * qabs);
            }
            double sum = 0.0;
            for (int t = 0; t < n; t++)
                sum += w[t] = exp(w[t] - wmax);
            for (int t = 0; t < n; t++)
                w[t] /= sum;
            double rel = expm1(2.0 * dmax) + 1e-5;
            float *out = malloc(sizeof(float) * hs), *att = malloc(sizeof(float) * n);
            for (int i = 0; i < k; i++) {
                kernels_init(isas[i]);
                kernels_attention_q8(out, att, q, h.k, h.ks, h.v, h.vs, n, hs, scale);
                for (int t = 0; t < n; t++)
                    ck_assert_msg(fabs(att[t] - w[t]) <= rel * w[t] + 1e-30,
                                  "%s hs %d n %d: att[%d] %g, exact %g (rel ±%g)",
                                  kernels_isa_name(isas[i]), hs, n, t, att[t], w[t], rel);
                for (int j = 0; j < hs; j++) {
                    double o = 0.0, mag = 0.0, step = 0.0;
                    for (int t = 0; t < n; t++) {
                        o += w[t] * h.vf[(size_t)t * hs + j];
                        mag += w[t] * fabs(h.vf[(size_t)t * hs + j]);
                        step += att[t] * 0.5001 * h.vs[t];
                    }
                    double tol = rel * mag + step + 1e-6 * mag;
                    ck_assert_msg(fabs(out[j] - o) <= tol,
                                  "%s hs %d n %d: out[%d] %g, exact %g (±%g)",
                                  kernels_isa_name(isas[i]), hs, n, j, out[j], o, tol);
                }
            }
            free(out);
            free(att);
            free(w);
            free(q);
            kv_free(&h);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_attention_q8_dominant_key)
{
    /* one key aligned with q and far ahead in score takes all the weight: att ≈ 1 there
     * (the others are below e^-40 each), and out is that key's dequantized value row */
    rng_state = 0x9b05688c2b3e6c1full;
    static const int hss[] = {8, 48, 64, 128};
    enum { N = 300, HOT = 123 };
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++) {
        int hs = hss[hi];
        kv_head h = kv_new(N, hs, 0.05f, 1.0f);
        float *q = random_vecs(1, hs, 1.0f);
        float scale = 1.0f / sqrtf((float)hs);
        double qq = 0.0;
        for (int j = 0; j < hs; j++)
            qq += (double)q[j] * q[j];
        /* row HOT = c * q with a score of 60 */
        float c = (float)(60.0 / (scale * qq)), row[128];
        for (int j = 0; j < hs; j++)
            row[j] = c * q[j];
        quant_quantize_row(h.k + (size_t)HOT * hs, h.ks + HOT, row, hs, hs, hs);
        float out[128], *att = malloc(sizeof(float) * N);
        for (int i = 0; i < k; i++) {
            kernels_init(isas[i]);
            kernels_attention_q8(out, att, q, h.k, h.ks, h.v, h.vs, N, hs, scale);
            ck_assert_msg(att[HOT] >= 1.0f - 1e-6f, "%s hs %d: att[hot] = %.9g",
                          kernels_isa_name(isas[i]), hs, att[HOT]);
            for (int t = 0; t < N; t++)
                if (t != HOT)
                    ck_assert_msg(att[t] <= 1e-15f, "%s hs %d: att[%d] = %g",
                                  kernels_isa_name(isas[i]), hs, t, att[t]);
            for (int j = 0; j < hs; j++) {
                float want = h.vd[(size_t)HOT * hs + j];
                ck_assert_msg(fabsf(out[j] - want) <= 1e-5f * h.vs[HOT] * 127.0f,
                              "%s hs %d: out[%d] = %g, want %g", kernels_isa_name(isas[i]), hs, j,
                              out[j], want);
            }
        }
        free(att);
        free(q);
        kv_free(&h);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* Greedy tokens of stories260K from BOS, one token at a time and as one batch. */
static void greedy_tokens(const char *file, tensor_type type, kernels_isa isa, int *out, int steps)
{
    kernels_init(isa);
    model_options opt;
    model_options_default(&opt);
    opt.weights = type;
    model *m = NULL;
    transformer *t = NULL;
    llm_err err;
    ck_assert_msg(model_open(data_path(file), &opt, &m, &err) == LLM_OK, "%s", err.text);
    ck_assert_msg(transformer_new(m, 0, &t, &err) == LLM_OK, "%s", err.text);
    int vocab = m->config.vocab_size, tok = 1;
    for (int i = 0; i < steps; i++) {
        const float *logits = transformer_forward(t, tok, i, NULL);
        int best = 0;
        for (int j = 1; j < vocab; j++)
            if (logits[j] > logits[best])
                best = j;
        out[i] = tok = best;
    }
    /* the batched (matrix-matrix) path predicts the same tokens */
    int in[STEPS_MAX];
    in[0] = 1;
    for (int i = 1; i < steps; i++)
        in[i] = out[i - 1];
    float *logits = malloc(sizeof(float) * (size_t)steps * vocab);
    transformer_forward_batch(t, in, steps, 0, logits, NULL);
    for (int i = 0; i < steps; i++) {
        const float *l = logits + (size_t)i * vocab;
        int best = 0;
        for (int j = 1; j < vocab; j++)
            if (l[j] > l[best])
                best = j;
        ck_assert_msg(best == out[i], "%s %s: batched position %d predicts %d, one by one %d",
                      file, kernels_isa_name(isa), i, best, out[i]);
    }
    free(logits);
    transformer_free(t);
    model_close(m);
}

START_TEST(test_greedy_text_agrees)
{
    /* every kernel set gives the same greedy continuation, for int8 and fp32 weights,
     * including a file whose groups straddle rows (stories260K_q80: rows of 172) */
    enum { STEPS = 60 };
    static const char *files[] = {"stories260K.bin", "stories260K_q80.bin"};
    static const tensor_type types[] = {TENSOR_Q8_0, TENSOR_F32};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t f = 0; f < 2; f++)
        for (size_t ty = 0; ty < 2; ty++) {
            int want[STEPS], got[STEPS];
            greedy_tokens(files[f], types[ty], KERNELS_SCALAR, want, STEPS);
            for (int j = 0; j < k; j++) {
                greedy_tokens(files[f], types[ty], isas[j], got, STEPS);
                for (int i = 0; i < STEPS; i++)
                    ck_assert_msg(got[i] == want[i], "%s, %s, %s: token %d is %d, scalar gives %d",
                                  files[f], types[ty] == TENSOR_F32 ? "F32" : "Q8_0",
                                  kernels_isa_name(isas[j]), i, got[i], want[i]);
            }
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* ---- limits ---- */

START_TEST(test_roundtrip_bound)
{
    rng_state = 0x082efa98ec4e6c89ull;
    static const int cols[] = {172, 288, 64, 1, 33};
    static const int groups[] = {32, 64};
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
            owned o = owned_q8(5, cols[c], groups[g], 3.0f);
            float *row = malloc(sizeof(float) * cols[c]);
            for (int r = 0; r < 5; r++) {
                quant_dequantize_row(row, &o.t, r);
                for (int i = 0; i < cols[c]; i++) {
                    float s = o.scale[r * (o.t.stride / o.t.group) + i / o.t.group];
                    float x = o.f[(size_t)r * cols[c] + i];
                    /* rounding to the nearest step: half a step, plus float slack */
                    ck_assert_msg(fabsf(row[i] - x) <= 0.5f * s * 1.0001f + 1e-7f,
                                  "cols %d group %d [%d,%d]: %g -> %g (scale %g)", cols[c],
                                  groups[g], r, i, x, row[i], s);
                }
                /* padding stays zero */
                for (int i = cols[c]; i < o.t.stride; i++)
                    ck_assert_int_eq(o.q[(size_t)r * o.t.stride + i], 0);
            }
            free(row);
            owned_free(&o);
        }
}
END_TEST

START_TEST(test_quantize_extremes)
{
    /* the largest magnitude of each group maps to ±127 exactly */
    float x[64];
    int8_t q[64];
    float s[2];
    for (int i = 0; i < 64; i++)
        x[i] = (i % 2 ? -1.0f : 1.0f) * (float)(i + 1);
    quant_quantize_row(q, s, x, 64, 64, 32);
    ck_assert_int_eq(q[31], -127);
    ck_assert_int_eq(q[63], -127);
    ck_assert_float_eq_tol(s[0], 32.0f / 127.0f, 1e-7f);
    ck_assert_float_eq_tol(s[1], 64.0f / 127.0f, 1e-7f);
    for (int i = 0; i < 64; i++)
        ck_assert(q[i] >= -127 && q[i] <= 127);
}
END_TEST

START_TEST(test_zero_rows)
{
    /* an all-zero row has scale 0 and yields exactly 0 in every kernel */
    float x[100] = {0};
    int8_t q[128];
    float s[4];
    quant_quantize_row(q, s, x, 100, 128, 32);
    for (int g = 0; g < 4; g++)
        ck_assert_float_eq(s[g], 0.0f);
    for (int i = 0; i < 128; i++)
        ck_assert_int_eq(q[i], 0);

    rng_state = 0x452821e638d01377ull;
    owned w = owned_q8(9, 100, 32, 1.0f);
    memset(w.q + 4 * w.t.stride, 0, w.t.stride);
    memset(w.scale + 4 * (w.t.stride / 32), 0, sizeof(float) * (w.t.stride / 32));
    float *xv = random_vecs(3, 100, 1.0f);
    qbatch *xq = qbatch_new(3, 100, 32);
    qbatch_quantize(xq, xv, 3);
    float out[27];
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        ck_assert(kernels_matmul(NULL, out, &w.t, NULL, xq, 3));
        for (int i = 0; i < 3; i++)
            ck_assert_msg(out[i * 9 + 4] == 0.0f, "%s: %g", kernels_isa_name(isas[j]),
                          out[i * 9 + 4]);
    }
    /* a zero input vector too */
    memset(xv, 0, sizeof(float) * 100);
    qbatch_quantize(xq, xv, 1);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        ck_assert(kernels_matvec(NULL, out, &w.t, NULL, xq));
        for (int r = 0; r < 9; r++)
            ck_assert_float_eq(out[r], 0.0f);
    }
    kernels_init(KERNELS_AUTO);
    qbatch_free(xq);
    free(xv);
    owned_free(&w);
}
END_TEST

START_TEST(test_extreme_values)
{
    /* every product at ±127 * ±127: the int32 sums are exact in every kernel */
    enum { ROWS = 6, COLS = 1024, N = 5 };
    int8_t *wq = malloc(ROWS * COLS);
    float ws[ROWS * COLS / 64];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            wq[r * COLS + c] = (int8_t)((r % 3 == 0) ? 127 : (r % 3 == 1) ? -127 : ((c & 1) ? 127 : -127));
    for (int i = 0; i < ROWS * COLS / 64; i++)
        ws[i] = 1.0f;
    tensor t = {.type = TENSOR_Q8_0, .rows = ROWS, .cols = COLS, .stride = COLS, .group = 64,
                .q = wq, .scale = ws};
    qbatch *xq = qbatch_new(N, COLS, 64);
    for (int i = 0; i < N * COLS; i++)
        xq->q[i] = (int8_t)((i / COLS) % 2 ? -127 : 127);
    for (int i = 0; i < N * COLS / 64; i++)
        xq->scale[i] = 1.0f;
    float out[N * ROWS];
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int j = 0; j < k; j++) {
        kernels_init(isas[j]);
        ck_assert(kernels_matmul(NULL, out, &t, NULL, xq, N));
        for (int i = 0; i < N; i++)
            for (int r = 0; r < ROWS; r++) {
                float sign = (i % 2 ? -1.0f : 1.0f);
                float want = r % 3 == 0 ? sign * 127 * 127 * COLS
                             : r % 3 == 1 ? -sign * 127 * 127 * COLS : 0.0f;
                ck_assert_msg(out[i * ROWS + r] == want, "%s [%d,%d]: %g vs %g",
                              kernels_isa_name(isas[j]), i, r, out[i * ROWS + r], want);
            }
        float d = kernels_dot_q8(wq, ws, xq->q, xq->scale, COLS, 64);
        ck_assert_float_eq(d, 127.0f * 127.0f * COLS);
    }
    kernels_init(KERNELS_AUTO);
    qbatch_free(xq);
    free(wq);
}
END_TEST

START_TEST(test_quantize_same_bytes)
{
    /* every ISA's quantizer gives the scalar one's bytes and scales exactly */
    rng_state = 0xbe5466cf34e90c6cull;
    static const int lens[] = {1, 15, 16, 17, 100, 172, 288, 768, 1040, 2048, 4111};
    static const int groups[] = {16, 32, 64, 128};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++) {
            int n = lens[li], group = groups[gi], stride = quant_stride(n, group);
            float *x = random_vecs(1, n, 5.0f);
            int8_t *q0 = malloc(stride), *q1 = malloc(stride);
            float *s0 = malloc(sizeof(float) * (stride / group));
            float *s1 = malloc(sizeof(float) * (stride / group));
            kernels_init(KERNELS_SCALAR);
            quant_quantize_row(q0, s0, x, n, stride, group);
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                memset(q1, 0x55, stride);
                quant_quantize_row(q1, s1, x, n, stride, group);
                ck_assert_msg(memcmp(q0, q1, stride) == 0, "%s: len %d group %d: bytes differ",
                              kernels_isa_name(isas[j]), n, group);
                ck_assert_msg(memcmp(s0, s1, sizeof(float) * (stride / group)) == 0,
                              "%s: len %d group %d: scales differ", kernels_isa_name(isas[j]), n,
                              group);
            }
            free(x);
            free(q0);
            free(q1);
            free(s0);
            free(s1);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_quantize_kv_rows)
{
    /* KV rows are quantized with group = stride = hs (one scale per row), including
     * head sizes that are not a multiple of 16 (the plain-C quantizer): the scale is
     * max|x| / 127, the largest value maps to ±127, every |q| <= 127, rounding is to the
     * nearest step, and it is symmetric (-x gives -q) */
    rng_state = 0x1f83d9abfb41bd6bull;
    static const int hss[] = {8, 48, 64, 128};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (int i = 0; i < k; i++) {
        kernels_init(isas[i]);
        for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
            for (int rep = 0; rep < 20; rep++) {
                int hs = hss[hi];
                float x[128], nx[128], s, ns;
                int8_t q[128], nq[128];
                int top = 0;
                for (int j = 0; j < hs; j++) {
                    x[j] = 3.0f * rng_f();
                    nx[j] = -x[j];
                    if (fabsf(x[j]) > fabsf(x[top]))
                        top = j;
                }
                quant_quantize_row(q, &s, x, hs, hs, hs);
                quant_quantize_row(nq, &ns, nx, hs, hs, hs);
                ck_assert_float_eq(s, fabsf(x[top]) / 127.0f);
                ck_assert_float_eq(ns, s);
                ck_assert_int_eq(q[top], x[top] > 0 ? 127 : -127);
                for (int j = 0; j < hs; j++) {
                    ck_assert(q[j] >= -127 && q[j] <= 127);
                    ck_assert_int_eq(nq[j], -q[j]);
                    ck_assert_msg(fabsf(q[j] * s - x[j]) <= 0.5f * s * 1.0001f,
                                  "%s hs %d: %g -> %d (scale %g)", kernels_isa_name(isas[i]), hs,
                                  x[j], q[j], s);
                }
            }
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_dequantize_q8_rows)
{
    /* every ISA gives exactly (float)q * s, tails and the whole int8 range included */
    rng_state = 0x5be0cd19137e2179ull;
    static const int hss[] = {1, 7, 8, 17, 48, 64, 100, 128, 200};
    static const int ns[] = {1, 3, 17};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            int hs = hss[hi], n = ns[ni];
            int8_t *q = malloc((size_t)n * hs);
            float *s = malloc(sizeof(float) * n);
            float *out = malloc(sizeof(float) * ((size_t)n * hs + 1));
            for (int i = 0; i < n * hs; i++)
                q[i] = (int8_t)(rng_u32() % 256 - 128);
            for (int r = 0; r < n; r++)
                s[r] = rng_f() * 0.1f;
            for (int j = 0; j < k; j++) {
                kernels_init(isas[j]);
                out[(size_t)n * hs] = 42.0f;
                quant_dequantize_rows(out, q, s, n, hs);
                for (int r = 0; r < n; r++)
                    for (int c = 0; c < hs; c++) {
                        float want = (float)q[r * hs + c] * s[r];
                        check_each(out[r * hs + c] == want, "%s hs %d n %d [%d,%d]: %g vs %g",
                                   kernels_isa_name(isas[j]), hs, n, r, c, out[r * hs + c], want);
                    }
                ck_assert_float_eq(out[(size_t)n * hs], 42.0f); /* nothing written past the end */
            }
            free(q);
            free(s);
            free(out);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_attention_q8_limits)
{
    /* one key: its weight is exactly 1 and out is exactly vs * v (one rounding, the same
     * in every kernel); all-zero keys (scale 0): uniform weights */
    rng_state = 0xcbbb9d5dc1059ed8ull;
    static const int hss[] = {1, 8, 48, 64, 100, 128, 200};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++) {
        int hs = hss[hi];
        kv_head one = kv_new(1, hs, 1.0f, 1.0f);
        kv_head zero = kv_new(17, hs, 1.0f, 1.0f);
        memset(zero.k, 0, (size_t)17 * hs);
        memset(zero.ks, 0, sizeof(float) * 17);
        float *q = random_vecs(1, hs, 1.0f);
        float *out = malloc(sizeof(float) * hs), att[17];
        for (int i = 0; i < k; i++) {
            kernels_init(isas[i]);
            kernels_attention_q8(out, att, q, one.k, one.ks, one.v, one.vs, 1, hs, 0.3f);
            ck_assert_float_eq(att[0], 1.0f);
            for (int j = 0; j < hs; j++)
                ck_assert_msg(out[j] == one.vs[0] * (float)one.v[j], "%s hs %d: out[%d] %g vs %g",
                              kernels_isa_name(isas[i]), hs, j, out[j], one.vs[0] * (float)one.v[j]);
            kernels_attention_q8(out, att, q, zero.k, zero.ks, zero.v, zero.vs, 17, hs, 0.3f);
            for (int t = 0; t < 17; t++)
                ck_assert_float_eq_tol(att[t], 1.0f / 17.0f, 1e-7f);
        }
        free(out);
        free(q);
        kv_free(&one);
        kv_free(&zero);
    }
    kernels_init(KERNELS_AUTO);
}
END_TEST

/* n bytes that end exactly where an inaccessible page begins: reading one byte past
 * them faults (and fails the test). Freed with guarded_free(p, n). */
static void *guarded_alloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (n + page - 1) / page * page;
    char *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
    ck_assert(base != MAP_FAILED);
    ck_assert_int_eq(mprotect(base + span, page, PROT_NONE), 0);
    return base + span - n;
}

static void guarded_free(void *p, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (n + page - 1) / page * page;
    munmap((char *)p + n - span, span + page);
}

START_TEST(test_attention_q8_reads_no_further)
{
    /* the last key and value rows end at an inaccessible page: the masked and plain-C
     * tails read no byte past a row (prefetches may point further; they never fault) */
    rng_state = 0x6a09e667bb67ae85ull;
    static const int hss[] = {1, 7, 8, 17, 48, 64, 100, 128, 200};
    static const int ns[] = {1, 5};
    kernels_isa isas[KERNELS_COUNT];
    int k = supported_isas(isas);
    for (size_t hi = 0; hi < sizeof hss / sizeof *hss; hi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            int hs = hss[hi], n = ns[ni];
            size_t bytes = (size_t)n * hs;
            kv_head h = kv_new(n, hs, 1.0f, 1.0f);
            int8_t *gk = guarded_alloc(bytes), *gv = guarded_alloc(bytes);
            float *gks = guarded_alloc(sizeof(float) * n), *gvs = guarded_alloc(sizeof(float) * n);
            float *gq = guarded_alloc(sizeof(float) * hs);
            memcpy(gk, h.k, bytes);
            memcpy(gv, h.v, bytes);
            memcpy(gks, h.ks, sizeof(float) * n);
            memcpy(gvs, h.vs, sizeof(float) * n);
            for (int j = 0; j < hs; j++)
                gq[j] = rng_f();
            float *want = malloc(sizeof(float) * hs), *got = malloc(sizeof(float) * hs);
            float *att = malloc(sizeof(float) * n), *rows = malloc(sizeof(float) * bytes);
            kernels_init(KERNELS_SCALAR);
            kernels_attention_q8(want, att, gq, gk, gks, gv, gvs, n, hs, 0.5f);
            for (int i = 0; i < k; i++) {
                kernels_init(isas[i]);
                kernels_attention_q8(got, att, gq, gk, gks, gv, gvs, n, hs, 0.5f);
                for (int j = 0; j < hs; j++)
                    ck_assert_float_eq_tol(got[j], want[j], 1e-4f);
                quant_dequantize_rows(rows, gv, gvs, n, hs);
                ck_assert_float_eq(rows[bytes - 1], (float)gv[bytes - 1] * gvs[n - 1]);
            }
            free(want);
            free(got);
            free(att);
            free(rows);
            guarded_free(gk, bytes);
            guarded_free(gv, bytes);
            guarded_free(gks, sizeof(float) * n);
            guarded_free(gvs, sizeof(float) * n);
            guarded_free(gq, sizeof(float) * hs);
            kv_free(&h);
        }
    kernels_init(KERNELS_AUTO);
}
END_TEST

START_TEST(test_qbatch)
{
    ck_assert_ptr_null(qbatch_new(0, 10, 32));
    qbatch_free(NULL);
    qbatch *b = qbatch_new(3, 172, 32);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->stride, 192);
    float x[3 * 172];
    for (int i = 0; i < 3 * 172; i++)
        x[i] = (float)(i % 17) - 8.0f;
    qbatch_quantize(b, x, 3);
    for (int v = 0; v < 3; v++)
        for (int i = 172; i < 192; i++)
            ck_assert_int_eq(b->q[v * 192 + i], 0);
    qbatch_free(b);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("quant");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_isa_names);
    tcase_add_test(core, test_isa_parse);
    tcase_add_test(core, test_stride);
    tcase_add_test(core, test_dot_all_isas);
    tcase_add_test(core, test_quantize_nonfinite);
    tcase_add_test(core, test_matmul_shapes);
    tcase_add_test(core, test_gemm_shapes);
    tcase_add_test(core, test_gemm_shared);
    tcase_add_test(core, test_swiglu);
    tcase_add_test(core, test_geglu);
    tcase_add_test(core, test_blocks_layout);
    tcase_add_test(core, test_matmul_big_parallel);
    tcase_add_test(core, test_matvec_same_bits_as_matmul);
    tcase_add_test(core, test_panels);
    tcase_add_test(core, test_f32_shapes);
    tcase_add_test(core, test_rows_f32);
    tcase_add_test(core, test_softmax);
    tcase_add_test(core, test_attention);
    tcase_add_test(core, test_attention_q8);
    tcase_add_test(core, test_attention_q8_vs_unquantized);
    tcase_add_test(core, test_attention_q8_dominant_key);
    tcase_add_test(core, test_greedy_text_agrees);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_roundtrip_bound);
    tcase_add_test(limits, test_quantize_extremes);
    tcase_add_test(limits, test_zero_rows);
    tcase_add_test(limits, test_extreme_values);
    tcase_add_test(limits, test_quantize_same_bytes);
    tcase_add_test(limits, test_qbatch);
    tcase_add_test(limits, test_quantize_kv_rows);
    tcase_add_test(limits, test_dequantize_q8_rows);
    tcase_add_test(limits, test_attention_q8_limits);
    tcase_add_test(limits, test_attention_q8_reads_no_further);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
