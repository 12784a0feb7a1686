/* test_kernels_gemm_tables.c — the tables that are another table with a prefill GEMM of
 * their own: kernels_gemm with them gives the bits of their base table for every
 * product and, for Q8_0 weights with 16 vectors and more, those of the plain-C GEMM.
 *   AMX (src/kernels/x86-amx.c), base AVX-512 VNNI: Q8_0 with fewer vectors than a GEMM
 *     takes, Q8_0_BLOCKS rows made Q8_0 a few at a time, the ggml block types made
 *     exact Q8_0 16 rows at a time, whose mins and second parts both tables add with
 *     the same AVX-512 kernels.
 *   AVX-VNNI (src/kernels/x86-avx-vnni.c), base AVX2: the same products, one pack of
 *     unsigned x for every block type (AVX2 packs signed bytes for Q4_K and Q4_1), Q6_K's
 *     halves in one pass.
 *
 * Shapes: rows that are not a multiple of 16 (and ranges whose last block is short,
 * which reconfigures the tiles), vector counts around the 16-vector blocks (15, 16, 17,
 * 31, 33, 70), groups of 32, 64, 96, 128 and 160 (A tiles of 32 or 64 bytes, one to
 * five of them a group; the AVX-VNNI kernel's constants 32 and 64 and the others),
 * batches past the 1.5 MiB vector tile and AVX-VNNI's 256 KiB one, on the test's two
 * OpenMP threads (each configures its own tiles).
 *
 * AMX twice: on software tiles (this program compiles its own x86-amx.c with
 * -DLLMCHAT_AMX_EMULATE: kernels/x86-amx-emulation.h, the SDM's semantics and its
 * faults), which needs only AVX-512 VNNI for the epilogue; and on the CPU's tiles where
 * the CPU, the OS and Linux give them (kernels_amx_probe), where the software tiles are
 * also checked against the CPU's, instruction by instruction. Where they do not, the log
 * says "skipped: no AMX (...)" with what CPUID, XCR0 and arch_prctl said, and no test
 * is counted for the hardware. AVX-VNNI on the table itself where the CPU has AVX-VNNI,
 * else on its twin with the EVEX-encoded instruction (kernels_x86_avx_vnni_evex) where
 * it has AVX-512 VNNI, so that its kernels' logic is tested on either kind of CPU (the
 * twin is the same source with the other encoding of one instruction: where the table
 * itself runs, it would repeat the same checks). With no table to test, the program
 * exits 77 (skipped). */
#include "config.h"

#include "testutil.h"

#include <math.h>
#include <string.h>

#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "table.h"
#include "x86-amx.h"

#include "test_rng.h"
#include "test_tensors.h"

/* The table under test (AMX on software or hardware tiles, AVX-VNNI in either
 * encoding), set by its tcase's fixture. */
static const kernel_table *table_under_test;
static const char *table_label; /* for the messages */

/* The table table_under_test takes its other entries from, whose bits it has. */
static kernels_isa base_isa(void)
{
    return table_under_test->isa == KERNELS_AMX ? KERNELS_AVX512 : KERNELS_AVX2;
}

/* out (n, w->rows) of kernels_gemm on table `isa` (the table under test's isa: that
 * table), every value NaN before. */
static void gemm_on(kernels_isa isa, float *out, const tensor *w, const qbatch *xq, int n)
{
    for (size_t i = 0; i < (size_t)n * w->rows; i++)
        out[i] = NAN;
    if (isa == table_under_test->isa)
        ck_assert_int_eq(kernels_init_table(table_under_test), isa);
    else
        ck_assert_int_eq(kernels_init(isa), isa);
    ck_assert(kernels_gemm(NULL, out, w, NULL, xq, n));
    kernels_init(KERNELS_AUTO);
}

/* kernels_gemm of w with n random vectors: the table under test's bits are those of
 * its base table and, when `scalar_bits`, of the scalar table. */
static void check_same_bits(const tensor *w, int n, bool scalar_bits, const char *what)
{
    int len = w->cols;
    float *x = malloc(sizeof(float) * (size_t)n * len);
    for (size_t i = 0; i < (size_t)n * len; i++)
        x[i] = 2.0f * rng_f();
    qbatch *xq = qbatch_new(n, len, w->group);
    ck_assert_ptr_nonnull(xq);
    qbatch_quantize(xq, x, n);
    size_t outs = (size_t)n * w->rows;
    float *got = malloc(sizeof(float) * outs), *want = malloc(sizeof(float) * outs);
    gemm_on(table_under_test->isa, got, w, xq, n);
    for (int ref = 0; ref < 2; ref++) {
        kernels_isa isa = ref ? KERNELS_SCALAR : base_isa();
        if (ref && !scalar_bits)
            continue;
        gemm_on(isa, want, w, xq, n);
        for (size_t o = 0; o < outs; o++)
            check_each(memcmp(&got[o], &want[o], sizeof(float)) == 0,
                       "%s %s n %d: out[%zu] (vector %zu, row %zu) = %.9g, %s gives %.9g",
                       table_label, what, n, o, o / w->rows, o % w->rows, got[o],
                       kernels_isa_name(isa), want[o]);
    }
    free(x);
    free(got);
    free(want);
    qbatch_free(xq);
}

START_TEST(test_q8_shapes)
{
    rng_state = 0x5851f42d4c957f2dull;
    static const int shapes[][3] = {
        /* rows, cols, group */
        {1, 32, 32},    {7, 64, 32},    {16, 256, 32}, {17, 96, 32},  {61, 288, 32},
        {13, 288, 64},  {37, 768, 64},  {3, 96, 96},   {9, 320, 160}, {18, 512, 128},
        {40, 2048, 32}, {5, 2048, 64},  {33, 1376, 32}, {64, 200, 32},
    };
    static const int ns[] = {15, 16, 17, 31, 33, 70};
    char what[64];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        q8_tensor w = q8_new(shapes[s][0], shapes[s][1], shapes[s][2]);
        snprintf(what, sizeof what, "Q8_0 %dx%d group %d", shapes[s][0], shapes[s][1],
                 shapes[s][2]);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            check_same_bits(&w.t, ns[i], ns[i] >= 16, what);
        q8_free(&w);
    }
}
END_TEST

/* Batches past the vector tile (1.5 MiB of packed values: 128 vectors of rows of 11,008
 * values, so 150 are two tiles), and a last row range of 24 rows (760 rows in ranges of
 * 32 on two threads: a block of 16, then one of 8, the tiles configured again). */
START_TEST(test_q8_large)
{
    rng_state = 0x2545f4914f6cdd1dull;
    q8_tensor a = q8_new(760, 4096, 32);
    check_same_bits(&a.t, 150, true, "Q8_0 760x4096 group 32");
    q8_free(&a);
    q8_tensor c = q8_new(100, 11008, 32);
    check_same_bits(&c.t, 150, true, "Q8_0 100x11008 group 32");
    q8_free(&c);
    q8_tensor b = q8_new(300, 768, 64);
    check_same_bits(&b.t, 300, true, "Q8_0 300x768 group 64");
    q8_free(&b);
}
END_TEST

/* Q8_0_BLOCKS: ggml's 34-byte blocks, half scales of about 2^-8. */
START_TEST(test_q8_blocks)
{
    rng_state = 0x9e3779b97f4a7c15ull;
    static const int shapes[][2] = {{9, 64}, {37, 96}, {20, 768}, {33, 2080}};
    static const int ns[] = {16, 33};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        uint8_t *b = q8_blocks_random(rows, cols);
        tensor w = {.type = TENSOR_Q8_0_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                    .group = 32, .blocks = b};
        char what[64];
        snprintf(what, sizeof what, "Q8_0_BLOCKS %dx%d", rows, cols);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            check_same_bits(&w, ns[i], true, what);
        free(b);
    }
}
END_TEST

/* The ggml block types through kernels_gemm's BLOCKS path: random bytes, every half (d,
 * dmin, Q6_K's d) about 2^-8. */
START_TEST(test_block_types)
{
    static const int shapes[][2] = {{5, 256}, {17, 512}, {40, 2048}};
    static const int ns[] = {16, 17, 70};
    rng_state = 0x1f83d9abfb41bd6bull + (uint64_t)_i;
    ggml_type type = block_test_types[_i];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        uint8_t *b = blocks_random(type, rows, cols);
        tensor w = {.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols,
                    .group = 32, .blocks = b, .btype = (int)type,
                    .row_bytes = blocks_row_bytes(type, cols)};
        char what[64];
        snprintf(what, sizeof what, "%s %dx%d", ggml_type_name(type), rows, cols);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            check_same_bits(&w, ns[i], false, what);
        free(b);
    }
}
END_TEST

#ifdef HAVE_KERNELS_AMX
#include "x86-amx-emulation.h"

/* The software tiles against the CPU's: random shapes (M rows, K bytes of A, N bytes of
 * C), random bytes (and all -128), C loaded with random sums first; TDPBSSD on both,
 * the same bytes out. What makes the software-tile runs of this test worth their pass
 * on CPUs without AMX. */
START_TEST(test_emulation_matches_hardware)
{
    rng_state = 0x94d049bb133111ebull;
    _Alignas(64) int8_t a[16 * 64], b[16 * 64];
    _Alignas(64) int32_t c0[256], hw[256], sw[256];
    for (int it = 0; it < 500; it++) {
        int m = 1 + (int)(rng_u32() % 16), k = 4 * (1 + (int)(rng_u32() % 16)),
            n = 4 * (1 + (int)(rng_u32() % 16));
        uint8_t cfg[64] = {1};
        uint16_t colsb[16] = {(uint16_t)k, (uint16_t)n, (uint16_t)n};
        uint8_t rows[16] = {(uint8_t)m, (uint8_t)(k / 4), (uint8_t)m};
        memcpy(cfg + 16, colsb, sizeof colsb);
        memcpy(cfg + 48, rows, sizeof rows);
        for (int i = 0; i < 16 * 64; i++) {
            a[i] = it % 7 ? (int8_t)rng_u32() : -128;
            b[i] = it % 7 ? (int8_t)rng_u32() : -128;
        }
        for (int i = 0; i < 256; i++)
            c0[i] = (int32_t)rng_u32();
        memcpy(hw, c0, sizeof hw);
        memcpy(sw, c0, sizeof sw);
        __asm__ volatile("ldtilecfg %0" ::"m"(*(const uint8_t(*)[64])cfg));
        __asm__ volatile("tileloadd (%0,%1,1), %%tmm0" ::"r"(a), "r"(64L) : "memory");
        __asm__ volatile("tileloadd (%0,%1,1), %%tmm1" ::"r"(b), "r"(64L) : "memory");
        __asm__ volatile("tileloadd (%0,%1,1), %%tmm2" ::"r"(hw), "r"(64L) : "memory");
        __asm__ volatile("tdpbssd %%tmm1, %%tmm0, %%tmm2" ::);
        __asm__ volatile("tilestored %%tmm2, (%0,%1,1)" ::"r"(hw), "r"(64L) : "memory");
        __asm__ volatile("tilerelease" ::);
        emu_loadconfig(cfg);
        emu_load(0, a, 64);
        emu_load(1, b, 64);
        emu_load(2, sw, 64);
        emu_dpbssd(2, 0, 1);
        emu_store(2, sw, 64);
        emu_release();
        for (int i = 0; i < 256; i++)
            ck_assert_msg(hw[i] == sw[i],
                          "M %d, K %d bytes, N %d bytes: C[%d][%d] is %d on the CPU's tiles, %d on "
                          "the software ones", m, k, n, i / 16, i % 16, hw[i], sw[i]);
    }
}
END_TEST
#endif

/* Each tcase's fixture: the table it tests. */
static void use_emulated(void)
{
    table_under_test = &kernels_x86_amx_emulated;
    table_label = "avx512-amx (software tiles)";
}

#ifdef HAVE_KERNELS_AMX
static void use_hardware(void)
{
    table_under_test = &kernels_x86_amx;
    table_label = "avx512-amx";
}
#endif

#ifdef HAVE_KERNELS_AVX_VNNI
static void use_vnni(void)
{
    table_under_test = &kernels_x86_avx_vnni;
    table_label = "avx-vnni";
}

static void use_vnni_evex(void)
{
    table_under_test = &kernels_x86_avx_vnni_evex;
    table_label = "avx-vnni (EVEX twin)";
}

/* The table's own GEMM and Q4_K panel product are the ones the kernels reach, the GEMM
 * with the pack it reads; the rest is AVX2's. */
START_TEST(test_vnni_entries)
{
    ck_assert_int_eq(kernels_init_table(table_under_test), KERNELS_AVX_VNNI);
    const kernel_table *k = kernels_active();
    ck_assert_ptr_eq(k->gemm_q8, table_under_test->gemm_q8);
    ck_assert_ptr_eq(k->gemm_q8_halves, table_under_test->gemm_q8_halves);
    ck_assert(!k->gemm_signed);
    ck_assert_ptr_null(k->gemm_q8_small);
    ck_assert_ptr_null(k->gemm_q8_nibbles);
    ck_assert_ptr_eq(k->matvec_k4p, table_under_test->matvec_k4p);
    ck_assert_ptr_eq(k->rows_q8, kernels_x86_avx2.rows_q8);
    kernels_init(KERNELS_AUTO);
}
END_TEST
#endif

static TCase *gemm_tcase(const char *name, void (*setup)(void))
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_q8_shapes);
    tcase_add_test(tc, test_q8_large);
    tcase_add_test(tc, test_q8_blocks);
    tcase_add_loop_test(tc, test_block_types, 0, BLOCK_TEST_TYPES);
    return tc;
}

int main(void)
{
    Suite *s = suite_create("kernels_gemm_tables");
    int cases = 0;
    char why[400];
    kernels_amx_describe(why, sizeof why);
    if (kernels_x86_amx_emulated.cpu_supports()) {
        suite_add_tcase(s, gemm_tcase("amx-emulated", use_emulated));
        cases++;
    } else {
        printf("test_kernels_gemm_tables: AMX on software tiles skipped: no AVX-512 VNNI for "
               "the epilogue (%s)\n", why);
    }
#ifdef HAVE_KERNELS_AMX
    if (kernels_isa_supported(KERNELS_AMX)) {
        printf("test_kernels_gemm_tables: AMX on hardware tiles: %s\n", why);
        TCase *tc = gemm_tcase("amx-hardware", use_hardware);
        tcase_add_test(tc, test_emulation_matches_hardware);
        suite_add_tcase(s, tc);
        cases++;
    } else {
        printf("test_kernels_gemm_tables: AMX on hardware tiles skipped: no AMX (%s)\n", why);
    }
#else
    printf("test_kernels_gemm_tables: AMX on hardware tiles skipped: this build has no AMX "
           "table (the assembler does not know the tile instructions; %s)\n", why);
#endif
#ifdef HAVE_KERNELS_AVX_VNNI
    static const struct {
        const kernel_table *table;
        const char *name, *lacks;
        void (*setup)(void);
    } vnni[] = {
        {&kernels_x86_avx_vnni, "avx-vnni", "AVX-VNNI", use_vnni},
        {&kernels_x86_avx_vnni_evex, "avx-vnni-evex", "AVX-512 VNNI", use_vnni_evex},
    };
    for (int i = 0; i < 2; i++) {
        if (!vnni[i].table->cpu_supports()) {
            printf("test_kernels_gemm_tables: %s skipped: this CPU has no %s\n", vnni[i].name,
                   vnni[i].lacks);
            continue;
        }
        if (i == 1 && vnni[0].table->cpu_supports()) {
            printf("test_kernels_gemm_tables: %s skipped: its source ran as avx-vnni on this "
                   "CPU's own instruction\n", vnni[i].name);
            continue;
        }
        TCase *tc = gemm_tcase(vnni[i].name, vnni[i].setup);
        tcase_add_test(tc, test_vnni_entries);
        suite_add_tcase(s, tc);
        cases++;
    }
#else
    printf("test_kernels_gemm_tables: avx-vnni skipped: this build has no AVX-VNNI table "
           "(the compiler does not know the avxvnni target)\n");
#endif
    fflush(stdout);
    if (!cases) { /* automake's "skipped"; the suite freed (with a runner: Check has no
                     suite_free), so that LeakSanitizer finds nothing on a CPU without it */
        srunner_free(srunner_create(s));
        return 77;
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
