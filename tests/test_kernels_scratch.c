/* test_kernels_scratch.c — the kernels' scratch (kernels/scratch.h) and what the kernels do
 * with it: slots that grow and are kept, 64-byte aligned; a workspace's scratches, one a
 * thread; running out of memory (kernels_scratch_limit_bytes) reported by kernels_matmul,
 * kernels_matmul_rows, the GEMMs and kernels_attention_f32 on every kernel table, never
 * written into the results; a kept workspace that needs no allocation for a shape it
 * has seen; and calls from inside a parallel region, which get a workspace of their own.
 * The transformer's and the engine's error path: test_transformer.c and test_engine.c. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "ggml_type.h"
#include "kernels.h"
#include "table.h"
#include "testutil.h"

static bool aligned64(const void *p)
{
    return ((uintptr_t)p & 63) == 0;
}

START_TEST(test_scratch_slots)
{
    kernels_scratch *s = kernels_scratch_new();
    ck_assert_ptr_nonnull(s);
    unsigned char *a = kernels_scratch_get(s, SCRATCH_ROWS_Q, 100);
    ck_assert(a && aligned64(a));
    memset(a, 7, 100);
    ck_assert_ptr_eq(kernels_scratch_get(s, SCRATCH_ROWS_Q, 50), a); /* kept */
    ck_assert_ptr_eq(kernels_scratch_get(s, SCRATCH_ROWS_Q, 128), a); /* rounded to 64 */
    unsigned char *b = kernels_scratch_get(s, SCRATCH_ROWS_SCALE, 0);
    ck_assert(b && aligned64(b) && b != a);
    unsigned char *big = kernels_scratch_get(s, SCRATCH_ROWS_Q, 100000);
    ck_assert(big && aligned64(big));
    memset(big, 1, 100000);
    ck_assert_uint_eq(kernels_scratch_failures(s), 0);

    kernels_scratch_limit_bytes(4096);
    ck_assert_ptr_eq(kernels_scratch_get(s, SCRATCH_ROWS_Q, 100000), big); /* has it */
    ck_assert_ptr_null(kernels_scratch_get(s, SCRATCH_X_ORDER, 4097));
    ck_assert_uint_eq(kernels_scratch_failures(s), 1);
    ck_assert_ptr_nonnull(kernels_scratch_get(s, SCRATCH_X_ORDER, 4096));
    ck_assert_ptr_null(kernels_scratch_get(s, SCRATCH_ROWS_SCALE, SIZE_MAX));
    ck_assert_uint_eq(kernels_scratch_failures(s), 2);
    kernels_scratch_limit_bytes(SIZE_MAX);
    ck_assert_ptr_null(kernels_scratch_get(s, SCRATCH_ROWS_SCALE, SIZE_MAX));
    ck_assert_ptr_nonnull(kernels_scratch_get(s, SCRATCH_ROWS_SCALE, 64));
    kernels_scratch_free(s);
    kernels_scratch_free(NULL);
}
END_TEST

START_TEST(test_workspace)
{
    kernels_workspace *ws = kernels_workspace_new();
    ck_assert_ptr_nonnull(ws);
    ck_assert_int_eq(kernels_workspace_threads(ws), 0);
    ck_assert(kernels_workspace_reserve(ws, 3));
    ck_assert_int_eq(kernels_workspace_threads(ws), 3);
    kernels_scratch *s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = kernels_workspace_scratch(ws, i);
        ck_assert_ptr_nonnull(s[i]);
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(s[i], s[j]);
    }
    ck_assert(kernels_workspace_reserve(ws, 2)); /* never shrinks */
    ck_assert(kernels_workspace_reserve(ws, 9));
    ck_assert_int_eq(kernels_workspace_threads(ws), 9);
    for (int i = 0; i < 3; i++) /* pointers stay valid as it grows */
        ck_assert_ptr_eq(kernels_workspace_scratch(ws, i), s[i]);
    ck_assert(!kernels_workspace_failed(ws));
    kernels_scratch_limit_bytes(0);
    ck_assert_ptr_null(kernels_scratch_get(s[2], SCRATCH_PACK_Q, 1));
    kernels_scratch_limit_bytes(SIZE_MAX);
    ck_assert(kernels_workspace_failed(ws));
    kernels_workspace_clear(ws);
    ck_assert(!kernels_workspace_failed(ws));
    ck_assert_uint_eq(kernels_scratch_failures(s[2]), 0);
    ck_assert_ptr_nonnull(kernels_scratch_get(s[2], SCRATCH_PACK_Q, 1));
    kernels_workspace_free(ws);
    kernels_workspace_free(NULL);
}
END_TEST

/* A Q8_0_BLOCKS tensor of random values (ggml's 34-byte blocks): a product of more than
 * BLOCKS_MULTI_MAX vectors (MM) makes its rows Q8_0 in the scratch on every table (up to
 * that many, AVX2 reads the blocks in place: matmul_q8b), and its GEMM packs the
 * vectors there. */
enum { MM = BLOCKS_MULTI_MAX + 1 };
typedef struct {
    tensor t;
    uint8_t *blocks;
} q8b;

static uint32_t rng = 12345;
static uint32_t next_u32(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

static q8b make_q8b(int rows, int cols)
{
    q8b w;
    size_t blocks = (size_t)rows * cols / QUANT_BLOCK;
    w.blocks = malloc(blocks * QUANT_BLOCK_BYTES);
    ck_assert_ptr_nonnull(w.blocks);
    for (size_t b = 0; b < blocks; b++) {
        uint8_t *p = w.blocks + b * QUANT_BLOCK_BYTES;
        uint16_t h = ggml_f32_to_fp16(ldexpf(1.0f + (float)(next_u32() % 100) / 100.0f, -7));
        memcpy(p, &h, 2);
        for (int i = 0; i < QUANT_BLOCK; i++)
            p[2 + i] = (uint8_t)(next_u32() % 255 + 1); /* -127..127 as int8 */
    }
    w.t = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                   .group = QUANT_BLOCK, .blocks = w.blocks};
    return w;
}

static qbatch *random_vectors(int n, int cols)
{
    float *x = malloc(sizeof(float) * (size_t)n * cols);
    for (size_t i = 0; i < (size_t)n * cols; i++)
        x[i] = (float)((int)(next_u32() % 2001) - 1000) / 1000.0f;
    qbatch *xq = qbatch_new(n, cols, QUANT_BLOCK);
    ck_assert_ptr_nonnull(xq);
    qbatch_quantize(xq, x, n);
    free(x);
    return xq;
}

/* Out of memory on every table: the calls say so (false), count it in the workspace, and
 * write nothing into the results; with memory back the same workspace gives the bits of
 * a call that made its own. */
START_TEST(test_out_of_memory)
{
    enum { ROWS = 40, COLS = 256, N = 20 };
#ifdef _OPENMP
    /* one thread: which scratch a range runs in must not depend on the schedule, for
     * the check that a kept workspace needs no allocation */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    q8b w = make_q8b(ROWS, COLS);
    qbatch *xq = random_vectors(N, COLS);
    float *got = malloc(sizeof(float) * N * ROWS), *want = malloc(sizeof(float) * N * ROWS);
    for (int isa = KERNELS_SCALAR; isa < KERNELS_COUNT; isa++) {
        if (!kernels_isa_supported((kernels_isa)isa))
            continue;
        ck_assert_int_eq(kernels_init((kernels_isa)isa), isa);
        const char *name = kernels_isa_name((kernels_isa)isa);
        kernels_workspace *ws = kernels_workspace_new();
        kernels_scratch_limit_bytes(0);
        for (int i = 0; i < N * ROWS; i++)
            got[i] = 1.5f;
        ck_assert_msg(!kernels_matmul(ws, got, &w.t, NULL, xq, MM), "%s: matmul", name);
        ck_assert(kernels_workspace_failed(ws));
        for (int i = 0; i < N * ROWS; i++) /* no NaN written, nothing at all */
            ck_assert_msg(got[i] == 1.5f, "%s: out[%d] = %g", name, i, got[i]);
        ck_assert_msg(!kernels_gemm(ws, got, &w.t, NULL, xq, N), "%s: gemm", name);
        float *outs[2] = {got, want};
        const tensor *two[2] = {&w.t, &w.t};
        ck_assert_msg(!kernels_gemm_shared(ws, 2, outs, two, NULL, xq, N), "%s: shared", name);
        ck_assert(kernels_workspace_reserve(ws, 1));
        kernels_scratch *s = kernels_workspace_scratch(ws, 0);
        unsigned before = kernels_scratch_failures(s);
        ck_assert(!kernels_matmul_rows(s, got, &w.t, NULL, xq, MM, 0, ROWS));
        ck_assert_uint_gt(kernels_scratch_failures(s), before);
        ck_assert(!kernels_matmul(NULL, got, &w.t, NULL, xq, MM)); /* one made for the call */

        /* fp32 attention: the AVX-512 and AVX2 kernels (AVX-VNNI's are AVX2's) transpose
         * the keys in the scratch */
        enum { HS = 16, KEYS = 9 };
        float q[HS], kv[KEYS * HS], out[HS], att[KEYS];
        for (int i = 0; i < HS; i++)
            q[i] = (float)i / HS;
        for (int i = 0; i < KEYS * HS; i++)
            kv[i] = (float)(i % 7) / 7.0f;
        bool in_scratch = isa == KERNELS_AVX2 || isa == KERNELS_AVX_VNNI ||
                          isa == KERNELS_AVX512 || isa == KERNELS_AMX;
        ck_assert_int_eq(kernels_attention_f32(s, out, HS, att, KEYS, q, HS, kv, kv, HS, 1,
                                               KEYS - 1, HS, 0.25f),
                         !in_scratch);

        kernels_scratch_limit_bytes(SIZE_MAX);
        kernels_workspace_clear(ws);
        ck_assert(kernels_matmul(ws, got, &w.t, NULL, xq, MM));
        ck_assert(kernels_matmul(NULL, want, &w.t, NULL, xq, MM));
        ck_assert_msg(memcmp(got, want, sizeof(float) * MM * ROWS) == 0, "%s", name);
        ck_assert(kernels_gemm(ws, got, &w.t, NULL, xq, N));
        ck_assert(kernels_gemm(NULL, want, &w.t, NULL, xq, N));
        ck_assert_msg(memcmp(got, want, sizeof(float) * N * ROWS) == 0, "%s", name);
        ck_assert(kernels_attention_f32(s, out, HS, att, KEYS, q, HS, kv, kv, HS, 1, KEYS - 1,
                                        HS, 0.25f));
        ck_assert(!kernels_workspace_failed(ws));

        /* kept: the same shapes again need no allocation at all */
        kernels_scratch_limit_bytes(0);
        ck_assert_msg(kernels_matmul(ws, got, &w.t, NULL, xq, MM), "%s: kept matmul", name);
        ck_assert_msg(kernels_gemm(ws, got, &w.t, NULL, xq, N), "%s: kept gemm", name);
        ck_assert_msg(memcmp(got, want, sizeof(float) * N * ROWS) == 0, "%s", name);
        kernels_scratch_limit_bytes(SIZE_MAX);
        kernels_workspace_free(ws);
    }
    kernels_init(KERNELS_AUTO);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    free(got);
    free(want);
    qbatch_free(xq);
    free(w.blocks);
}
END_TEST

/* Called by every thread of a parallel region with one workspace, kernels_matmul runs
 * in a workspace of its own for the call: the results are the bits of a call from
 * outside. */
START_TEST(test_inside_parallel_region)
{
    enum { ROWS = 64, COLS = 512, N = 4, CALLERS = 4 };
    q8b w = make_q8b(ROWS, COLS);
    qbatch *xq = random_vectors(N, COLS);
    float *want = malloc(sizeof(float) * N * ROWS);
    float *got = malloc(sizeof(float) * CALLERS * N * ROWS);
    kernels_workspace *ws = kernels_workspace_new();
    ck_assert(kernels_matmul(ws, want, &w.t, NULL, xq, N));
    bool ok[CALLERS];
#pragma omp parallel for num_threads(CALLERS)
    for (int c = 0; c < CALLERS; c++)
        ok[c] = kernels_matmul(ws, got + (size_t)c * N * ROWS, &w.t, NULL, xq, N);
    for (int c = 0; c < CALLERS; c++) {
        ck_assert(ok[c]);
        ck_assert_msg(memcmp(got + (size_t)c * N * ROWS, want, sizeof(float) * N * ROWS) == 0,
                      "caller %d", c);
    }
    kernels_workspace_free(ws);
    free(want);
    free(got);
    qbatch_free(xq);
    free(w.blocks);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("kernels_scratch");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_scratch_slots);
    tcase_add_test(core, test_workspace);
    tcase_add_test(core, test_inside_parallel_region);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_out_of_memory);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
