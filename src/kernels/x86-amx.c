/* kernels/x86-amx.c — the kernel table `avx512-amx`: the AVX-512 VNNI table (its base)
 * with the prefill GEMM (gemm_q8) on AMX-INT8 tiles (Sapphire Rapids and later Xeons).
 *
 * One C tile holds the int32 sums of 16 weight rows x 16 vectors (one gemm_pack block).
 * Per 32 values (64 when the group is a multiple of 64) TDPBSSD multiplies an A tile,
 * 16 rows x 32 bytes read straight from the Q8_0 rows (stride: the row stride) or from
 * a GGUF Q8_0 tensor's 34-byte blocks in place (gemm_q8b; stride: a row's bytes, each
 * group's values 2 bytes into its block, the half scales made fp32 with F16C), by a B
 * tile, 8 rows x 64 bytes that are the pack's 512 contiguous bytes of those values for
 * the block (4-byte pieces down, vectors across: the pack's layout is the B layout).
 * The table asks kernels_gemm for packs of signed x (gemm_signed), so a group's sum is
 * Σ x·w itself: the integer the other tables reach from Σ (x + 128)·w - 128 Σ w.
 * Each group's sums go to memory (TILESTORED) and the AVX-512 epilogue adds them to
 * the float accumulators, one zmm per row with the 16 vectors across, with the float
 * operations of every other table: acc = fma(cvt(sum), xs * ws, acc), groups in order;
 * so the results have the scalar twin's bits. The accumulators are then transposed
 * (16 x 16 floats in registers) and stored one vector's 16 rows at a time.
 *
 * Two sets of A, B and C tiles and of sum buffers alternate between groups, the tiles
 * of group g + 1 issued before the epilogue of group g (faster than one set, though on
 * the CPUs measured the tile instructions and the epilogue do not overlap: see
 * docs/performance.md). The vectors are cut into tiles of about 1.5 MiB of packed
 * bytes that stay in L2 while a row block of 16 rows is reused across a tile's
 * blocks. The weights' scales of a row block are laid out group by group (16 floats,
 * zero past the block's rows) so that a block of fewer than 16 rows reads no row
 * beyond it.
 *
 * Each call configures the tiles (LDTILECFG: the configuration is per thread) and
 * releases them at the end (TILERELEASE), so no thread keeps tile state between calls.
 * The tile instructions are inline assembly (the assembler knows them; no intrinsics,
 * whose LDTILECFG and TILELOADD tell the compiler nothing of the memory they read).
 * Built with -DLLMCHAT_AMX_EMULATE (the test program only), the same kernel runs on
 * software tiles (kernels/x86-amx-emulation.h) as the table kernels_x86_amx_emulated. */
#include "config.h"

#include "x86-amx.h"
#include "x86.h"

#include <stdlib.h>
#include <string.h>

/* The tiles: two sets of A (weights), B (activations) and C (sums). Literal numbers:
 * the instructions name them. */
#define TILE_A0 0
#define TILE_A1 1
#define TILE_B0 2
#define TILE_B1 3
#define TILE_C0 4
#define TILE_C1 5

/* LDTILECFG's 64 bytes (palette 1: eight tiles of up to 16 rows x 64 bytes). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;
_Static_assert(sizeof(tile_config) == 64, "LDTILECFG reads 64 bytes");

#ifdef LLMCHAT_AMX_EMULATE
#include "x86-amx-emulation.h"
#define TILE_CONFIG(cfg) emu_loadconfig((const uint8_t *)(cfg))
#define TILE_ZERO_(t) emu_zero(t)
#define TILE_LOAD_(t, base, stride) emu_load(t, base, (long)(stride))
#define TILE_DP_(c, a, b) emu_dpbssd(c, a, b)
#define TILE_STORE_(t, base, stride) emu_store(t, base, (long)(stride))
#define TILE_RELEASE() emu_release()
#define AMX_TABLE kernels_x86_amx_emulated
#else
#define TILE_CONFIG(cfg) __asm__ volatile("ldtilecfg %0" ::"m"(*(const tile_config *)(cfg)))
#define TILE_ZERO_(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_LOAD_(t, base, stride)                                                       \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(base)),          \
                     "r"((long)(stride))                                                  \
                     : "memory")
#define TILE_DP_(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_STORE_(t, base, stride)                                                      \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void *)(base)),             \
                     "r"((long)(stride))                                                  \
                     : "memory")
#define TILE_RELEASE() __asm__ volatile("tilerelease" ::)
#define AMX_TABLE kernels_x86_amx
#endif
/* One more expansion, so that TILE_A0 becomes 0 before the instruction text is made. */
#define TILE_ZERO(t) TILE_ZERO_(t)
#define TILE_LOAD(t, base, stride) TILE_LOAD_(t, base, stride)
#define TILE_DP(c, a, b) TILE_DP_(c, a, b)
#define TILE_STORE(t, base, stride) TILE_STORE_(t, base, stride)

/* A and C tiles of `rows` rows, A of kbytes (32 or 64) columns, B of kbytes / 4 rows. */
static void tile_config_for(tile_config *c, int rows, int kbytes)
{
    memset(c, 0, sizeof *c);
    c->palette = 1;
    const int a[2] = {TILE_A0, TILE_A1}, b[2] = {TILE_B0, TILE_B1}, s[2] = {TILE_C0, TILE_C1};
    for (int i = 0; i < 2; i++) {
        c->rows[a[i]] = (uint8_t)rows;
        c->colsb[a[i]] = (uint16_t)kbytes;
        c->rows[b[i]] = (uint8_t)(kbytes / 4);
        c->colsb[b[i]] = 64;
        c->rows[s[i]] = (uint8_t)rows;
        c->colsb[s[i]] = 64;
    }
}

/* Packed bytes of activations a row block keeps reading from L2: vector tiles are cut
 * to about this much. Every CPU with AMX has 2 MiB of L2 a core; this leaves room for a
 * row block of the longest rows (16 x 11,008 values: 176 KiB) and the next one being
 * prefetched. Each further tile reads the thread's rows again from memory, so a prompt
 * chunk should be one tile wherever it fits. */
enum { AMX_TILE_BYTES = 1536 << 10 };

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

/* The row scales group by group, as by_group16 (x86.h) lays them out, from the half
 * scales of R rows of Q8_0_BLOCKS (row 0 at b, row_bytes apart). */
static void block_scales_fill_halves(float *wst, const uint8_t *b, size_t row_bytes, int R,
                                     int groups)
{
    for (int g = 0; g < groups; g++)
        for (int r = 0; r < 16; r++)
            wst[g * 16 + r] =
                r < R ? half_at(b + r * row_bytes + (size_t)g * QUANT_BLOCK_BYTES) : 0.0f;
}

/* Adds one group's sums (16 rows x 16 vectors, int32) to the accumulators: xs the
 * group's 16 vector scales, wsg its 16 row scales. The scalar twin's operations. */
INLINE void group_epilogue(__m512 acc[16], const int32_t *sums, const float *xs, const float *wsg)
{
    const __m512 xsv = _mm512_loadu_ps(xs);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(sums + 16 * r)));
        acc[r] = _mm512_fmadd_ps(s, _mm512_mul_ps(xsv, _mm512_set1_ps(wsg[r])), acc[r]);
    }
}

/* The sums of group g into tile C and then into buf: zero, then per kstep values an A
 * tile from the rows and a B tile from the pack, multiplied in. */
#define GROUP_TILES(C, A, B, buf, g)                                                      \
    do {                                                                                  \
        TILE_ZERO(C);                                                                     \
        for (int c_ = 0; c_ < chunks; c_++) {                                             \
            size_t i_ = (size_t)(g) * group + (size_t)c_ * kstep;                          \
            TILE_LOAD(A, w + (size_t)(g) * wgroup + (size_t)c_ * kstep, wrow);              \
            TILE_LOAD(B, xb + i_ / 4 * 64, 64); /* from piece i_ / 4, 64 bytes each */   \
            TILE_DP(C, A, B);                                                             \
        }                                                                                 \
        TILE_STORE(C, buf, 64);                                                           \
    } while (0)

/* One C tile: the R rows whose first group's values are at w (rows wrow bytes apart,
 * groups wgroup bytes apart within a row: the group itself for Q8_0 rows, a 34-byte
 * block for Q8_0_BLOCKS; the A and C tiles configured with R rows; wst their scales,
 * see by_group16 in x86.h) times block b of xp over every group of `stride` values, into
 * out[v * ldo + r] for the block's real vectors v and r < R. */
INLINE void gemm_tile_amx(float *out, size_t ldo, const int8_t *w, size_t wrow, size_t wgroup,
                          int stride, const float *wst, const gemm_pack *xp, int b, int group,
                          int kstep, int32_t sums[2][256], int R)
{
    const int groups = stride / group, chunks = group / kstep;
    const uint8_t *xb = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        acc[r] = _mm512_setzero_ps();
    /* tiles of group g + 1 are issued before the epilogue of group g */
    for (int g = 0; g < groups; g += 2) {
        GROUP_TILES(TILE_C0, TILE_A0, TILE_B0, sums[0], g);
        if (g > 0)
            group_epilogue(acc, sums[1], xs + (g - 1) * GEMM_VECS, wst + (g - 1) * 16);
        if (g + 1 < groups)
            GROUP_TILES(TILE_C1, TILE_A1, TILE_B1, sums[1], g + 1);
        group_epilogue(acc, sums[0], xs + g * GEMM_VECS, wst + g * 16);
    }
    if (groups % 2 == 0)
        group_epilogue(acc, sums[1], xs + (groups - 1) * GEMM_VECS, wst + (groups - 1) * 16);

    transpose16(acc);
    const int left = xp->n - b * GEMM_VECS;
    const __mmask16 rows = R >= 16 ? 0xFFFF : (__mmask16)((1u << R) - 1);
    float *o = out + (size_t)b * GEMM_VECS * ldo;
#pragma GCC unroll 16
    for (int v = 0; v < 16; v++)
        if (v < left)
            _mm512_mask_storeu_ps(o + (size_t)v * ldo, rows, acc[v]);
}

/* gemm_q8 (or gemm_q8b: a Q8_0_BLOCKS w, its blocks read in place, the tile rows a
 * row's length of blocks apart and each group 2 bytes into its block) on tiles. */
static void gemm_amx(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                     int r0, int r1)
{
    const bool in_blocks = w->type == TENSOR_Q8_0_BLOCKS;
    const int stride = w->stride, group = w->group, groups = stride / group;
    const size_t wrow = in_blocks ? (size_t)groups * QUANT_BLOCK_BYTES : (size_t)stride;
    const size_t wgroup = in_blocks ? QUANT_BLOCK_BYTES : (size_t)group;
    const int8_t *w0 = in_blocks ? (const int8_t *)quant_block_values(w->blocks) : w->q;
    const int kstep = group % 64 == 0 ? 64 : 32;
    /* a row block's scales, groups x 16 floats */
    float *wst = kernels_scratch_get(s, SCRATCH_AMX_SCALES, sizeof(float) * (size_t)groups * 16);
    if (!wst)
        return; /* out of memory, counted in s */
    _Alignas(64) int32_t sums[2][256] = {{0}};
    tile_config cfg;
    int configured = 0; /* the rows of the A and C tiles as configured; 0: not yet */
    int tile_blocks = (int)(AMX_TILE_BYTES / ((size_t)stride * GEMM_VECS));
    if (tile_blocks < 1)
        tile_blocks = 1;
    for (int b0 = 0; b0 < xp->blocks; b0 += tile_blocks) {
        int b1 = b0 + tile_blocks < xp->blocks ? b0 + tile_blocks : xp->blocks;
        for (int r = r0; r < r1; r += 16) {
            int R = r1 - r < 16 ? r1 - r : 16;
            if (R != configured) {
                tile_config_for(&cfg, R, kstep);
                TILE_CONFIG(&cfg);
                configured = R;
            }
            if (in_blocks)
                block_scales_fill_halves(wst, w->blocks + (size_t)r * wrow, wrow, R, groups);
            else
                by_group16(wst, w->scale + (size_t)r * groups, groups, R);
            /* the next row block's weights, a slice before each vector block of this
             * one: the scales above are the first touch of a block's rows, and would
             * otherwise wait for memory; after the last block, the bytes w names ahead
             * (a K-quant prefill's next rows, which it reads to make them Q8_0) */
            const int next_rows = r1 - r - 16 < 16 ? r1 - r - 16 : 16;
            const uint8_t *next = next_rows > 0 ? (const uint8_t *)(w0 + (size_t)(r + 16) * wrow)
                                                : w->ahead;
            const size_t next_bytes = next_rows > 0 ? (size_t)next_rows * wrow : w->ahead_bytes;
            const size_t nb = (size_t)(b1 - b0);
            size_t slice = ((next_bytes + nb - 1) / nb + 63) / 64 * 64, o = 0;
            for (int b = b0; b < b1; b++) {
                for (size_t end = o + slice; o < end && o < next_bytes; o += 64)
                    prefetch_weights(next + o);
                gemm_tile_amx(out + r, (size_t)w->rows, w0 + (size_t)r * wrow, wrow, wgroup,
                              stride, wst, xp, b, group, kstep, sums, R);
            }
        }
    }
    if (configured)
        TILE_RELEASE();
}

static void gemm_q8_amx(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                        int r0, int r1)
{
    if (!xp->signed_x) { /* a pack for the other tables (not made by kernels_gemm for us) */
        kernels_x86_avx512.gemm_q8(s, out, w, xp, r0, r1);
        return;
    }
    gemm_amx(s, out, w, xp, r0, r1);
}

TARGET_END

#ifdef LLMCHAT_AMX_EMULATE
/* Software tiles: the AVX-512 epilogue is all this table needs of the CPU. */
static bool amx_supported(void)
{
    return kernels_amx_probe()->avx512;
}
#else
static bool amx_supported(void)
{
    const amx_probe *p = kernels_amx_probe();
    return p->avx512 && p->usable;
}
#endif

const kernel_table AMX_TABLE = {
    .isa = KERNELS_AMX,
    .cpu_supports = amx_supported,
    .base = &kernels_x86_avx512,
    .gemm_q8 = gemm_q8_amx,
    .gemm_q8b = gemm_amx, /* kernels_gemm hands it only the packs gemm_signed asks for */
    .gemm_signed = true,
    .gemm_rows = 16,
};
