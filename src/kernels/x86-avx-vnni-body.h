/* kernels/x86-avx-vnni-body.h — the AVX-VNNI table's prefill GEMM (gemm_q8 and
 * gemm_q8_halves, see kernels/table.h), written once for two encodings of the 256-bit
 * vpdpbusd: kernels/x86-avx-vnni.c includes it inside a TARGET_BEGIN / TARGET_END region
 * with VNNI_DPBUSD(acc, u, s) (acc + the 4-product sums of u's unsigned bytes by s's
 * signed ones, each lane) and VNNI_FN(name) (the functions' names) defined.
 *
 * A register block is 4 rows x 16 vectors of an unsigned pack (x + 128, gemm_pack): a
 * row's 4-byte piece k, broadcast, meets piece k of 8 vectors in one 32-byte load, and
 * one vpdpbusd adds their 8 sums of 4 exact products to int32 sums that start at
 * -128 Σ w of the row's unit (kernels_avx2_unit_sums): one instruction on the multiply
 * pipes per 32 products, where AVX2 takes two (x86-avx2-gemm.c). The float step, the
 * store and the token tiles are the AVX2 GEMM's (x86-avx2-gemm.h), so the scalar GEMM's
 * bits (kernels/scalar.c: gemm_q8_scalar). */

/* R rows from w (stride values; H units a group, each with its scale in ws and its
 * Σ w in wsum) x the 16 vectors of block b of xp: out[v * ldo + r] for the block's real
 * vectors. With H = 2 (group 32, Q6_K's halves) every group's first half is summed and
 * stored, then the second halves summed and added: the bits of two products of the
 * halves. */
INLINE void VNNI_FN(gemm_block)(int R, int H, float *out, size_t ldo, const int8_t *w,
                                const float *ws, const int32_t *wsum, const gemm_pack *xp,
                                int b, int stride, int group)
{
    const int groups = stride / group, k4 = group / 4, units = groups * H;
    const uint8_t *x0 = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    for (int h = 0; h < H; h++) {
        __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            facc[r][0] = facc[r][1] = _mm256_setzero_ps();
        for (int g = 0; g < groups; g++) {
            const uint8_t *xg = x0 + (size_t)g * k4 * 64;
            const int8_t *wg = w + (size_t)g * group;
            __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) /* Σ (x + 128) w - 128 Σ w = Σ x w */
                acc[r][0] = acc[r][1] =
                    _mm256_set1_epi32(-128 * wsum[(size_t)r * units + (size_t)g * H + h]);
#pragma GCC unroll 16
            for (int k = h * k4 / H; k < (h + 1) * k4 / H; k++) {
                _mm_prefetch((const char *)(xg + (size_t)k * 64 + 512), _MM_HINT_T0);
                __m256i x_lo = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64));
                __m256i x_hi = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 32));
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    __m256i wv = broadcast4_256(wg + (size_t)r * stride + 4 * k);
                    acc[r][0] = VNNI_DPBUSD(acc[r][0], x_lo, wv);
                    acc[r][1] = VNNI_DPBUSD(acc[r][1], x_hi, wv);
                }
            }
            gemm_scale_avx2(R, facc, acc, ws + h, xs0, g, groups, H);
        }
        gemm_store_avx2(R, out, ldo, facc, xp, b, h > 0);
    }
}

/* A register block's call: groups of 32 (GGUF rows) and 64 (llama2.c's int8 files) as
 * constants, so that a group's pieces unroll and each sum stays in its register; H 2
 * only with 32. */
INLINE void VNNI_FN(gemm_block_call)(int R, int H, float *out, const tensor *w,
                                     const gemm_pack *xp, int b, int r, int r0,
                                     const int32_t *wsum)
{
    const int stride = w->stride, group = w->group, units = stride / group * H;
    const int8_t *wr = w->q + (size_t)r * stride;
    const float *ws = w->scale + (size_t)r * units;
    const int32_t *sums = wsum + (size_t)(r - r0) * units;
    float *o = out + r;
    const size_t ldo = (size_t)w->rows;
    if (H == 2)
        VNNI_FN(gemm_block)(R, 2, o, ldo, wr, ws, sums, xp, b, stride, 32);
    else if (group == 32)
        VNNI_FN(gemm_block)(R, 1, o, ldo, wr, ws, sums, xp, b, stride, 32);
    else if (group == 64)
        VNNI_FN(gemm_block)(R, 1, o, ldo, wr, ws, sums, xp, b, stride, 64);
    else
        VNNI_FN(gemm_block)(R, 1, o, ldo, wr, ws, sums, xp, b, stride, group);
}

/* Rows [r0, r1) of w times every vector of xp, H units a group: the rows' unit sums
 * once, then register blocks, the vectors in token tiles. */
static void VNNI_FN(gemm_units)(int H, kernels_scratch *s, float *out, const tensor *w,
                                const gemm_pack *xp, int r0, int r1)
{
    int32_t *wsum = kernels_avx2_unit_sums(s, w, r0, r1, H);
    if (!wsum)
        return; /* out of memory, counted in s */
#define CALL(R, H, b, r) VNNI_FN(gemm_block_call)(R, H, out, w, xp, b, r, r0, wsum)
    GEMM2_WALK(CALL, H, xp, (size_t)w->stride * GEMM_VECS, r0, r1);
#undef CALL
}

static void VNNI_FN(gemm_q8)(kernels_scratch *s, float *out, const tensor *w,
                             const gemm_pack *xp, int r0, int r1)
{
    VNNI_FN(gemm_units)(1, s, out, w, xp, r0, r1);
}

/* Q6_K's rows whole (KERNELS_UNPACK_HALVES): a group's halves summed apart. */
static void VNNI_FN(gemm_q8_halves)(kernels_scratch *s, float *out, const tensor *w,
                                    const gemm_pack *xp, int r0, int r1)
{
    VNNI_FN(gemm_units)(2, s, out, w, xp, r0, r1);
}
