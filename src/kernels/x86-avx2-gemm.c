/* kernels/x86-avx2-gemm.c — the AVX2 table's prefill GEMMs (gemm_q8, gemm_q8_small and
 * gemm_q8_nibbles, see kernels/table.h): Q8_0 rows times activations packed 16 vectors a block
 * (gemm_pack). Without VNNI there are two integer products: maddubs multiplies
 * unsigned by signed bytes into int16 pairs that saturate, madd multiplies int16 by
 * int16 into int32 pairs that do not:
 *   gemm_q8 (any w) reads a wide pack (gemm_wide: signed x as int16 pairs) and the
 *     rows made int16 BLOCK_ROWS_CONVERTED at a time: one madd gives 8 vectors' int32 sums of a
 *     pair of products, exact for any int8 values. (maddubs would need each weight's
 *     sign moved onto x first: sign, maddubs and madd, three instructions on the two
 *     multiply pipes for four products a lane, where madd takes one for two; on Zen 4
 *     the wide kernel is about a fifth faster.)
 *   gemm_q8_small (|w| <= 32: the rows ggml blocks are made exact Q8_0 of) reads
 *     unsigned x + 128 and multiplies it by w directly with maddubs: a pair is at most
 *     2 * 255 * 32 = 16320, so two pieces' pairs add in int16 before one madd widens
 *     them, and 128 * Σ w of the group, taken away first, leaves Σ x * w exactly.
 *   gemm_q8_nibbles (w in [0, 15]: Q4_K and Q4_1 rows made exact Q8_0) reads signed x
 *     bytes and multiplies w, the unsigned side, by x with maddubs: a pair is at most
 *     2 * 15 * 127 = 3810, so a group's 8 pieces' pairs add in int16 (30480 at most)
 *     before one madd widens them, and nothing is taken away: three quarters of
 *     gemm_q8_small's multiplies.
 *
 * A register block is 4 rows x 16 vectors: a row's 4-byte piece k (or pair p),
 * broadcast, meets piece k (pair p) of 8 vectors in one 32-byte load (the pack's
 * layout). A group's int32 sums then take one fused multiply-add each into the float
 * sums: the scalar GEMM's operations per row and vector (kernels/scalar.c:
 * gemm_q8_scalar), so its bits. A full block's sums leave by a 4 x 8 transpose in
 * registers, a vector's 4 rows in one store (out's vectors are rows x 4 bytes apart,
 * often a multiple of 4 KB, so their lines share an L1 set: 16 stores, not 64). Vectors
 * are walked in token tiles, so that a row block reads its tile's packed activations
 * from L2, each line of them asked for (prefetcht0) 512 bytes ahead of its use (the
 * hardware's prefetch leaves the loads waiting on L2 part of the time). A group of a
 * full register block in the wide and nibbles kernels is one asm block, its sums in
 * registers throughout. K-quant and Q8_0 block rows reach this kernel made Q8_0 a few
 * rows at a time (kernels.c). */
#include "x86-avx2-gemm.h"

#include <string.h>

TARGET_BEGIN("avx2,fma")

/* acc + madd(a, b): the pairs' int32 sums added to acc, in one register. Written out
 * because GCC, given the intrinsics in an unrolled group, keeps the products apart and
 * adds them as a tree (spilling them), or copies each sum between two registers after
 * every add: either way the loop runs at about two thirds of this one's speed. */
INLINE __m256i madd_add_avx2(__m256i acc, __m256i a, __m256i b)
{
    __m256i t;
    __asm__("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0" : "+x"(acc), "=&x"(t) : "x"(a), "x"(b));
    return acc;
}

/* Group g's 16 pairs of 4 rows of int16 weights (w0 to w3, each at the group's first
 * value) x 16 vectors of a wide pack (xg, the group's first pair): acc[r][h] for vectors
 * 8h to 8h + 7. One asm block, so that the 8 sums stay in their registers (GCC, given
 * the same in intrinsics, moves them between registers and to the stack every pair). */
INLINE void wide_group4_avx2(__m256i acc[4][2], const int16_t *xg, const int16_t *w0,
                             const int16_t *w1, const int16_t *w2, const int16_t *w3)
{
    __m256i xl, xh, wv, t0, t1;
    __asm__(".irp p,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
            "prefetcht0 \\p*64+512(%[x])\n\t"
            "vmovdqu \\p*64(%[x]), %[xl]\n\t"
            "vmovdqu \\p*64+32(%[x]), %[xh]\n\t"
            "vpbroadcastd \\p*4(%[w0]), %[wv]\n\t"
            "vpmaddwd %[wv], %[xl], %[t0]\n\t"
            "vpaddd %[t0], %[a00], %[a00]\n\t"
            "vpmaddwd %[wv], %[xh], %[t1]\n\t"
            "vpaddd %[t1], %[a01], %[a01]\n\t"
            "vpbroadcastd \\p*4(%[w1]), %[wv]\n\t"
            "vpmaddwd %[wv], %[xl], %[t0]\n\t"
            "vpaddd %[t0], %[a10], %[a10]\n\t"
            "vpmaddwd %[wv], %[xh], %[t1]\n\t"
            "vpaddd %[t1], %[a11], %[a11]\n\t"
            "vpbroadcastd \\p*4(%[w2]), %[wv]\n\t"
            "vpmaddwd %[wv], %[xl], %[t0]\n\t"
            "vpaddd %[t0], %[a20], %[a20]\n\t"
            "vpmaddwd %[wv], %[xh], %[t1]\n\t"
            "vpaddd %[t1], %[a21], %[a21]\n\t"
            "vpbroadcastd \\p*4(%[w3]), %[wv]\n\t"
            "vpmaddwd %[wv], %[xl], %[t0]\n\t"
            "vpaddd %[t0], %[a30], %[a30]\n\t"
            "vpmaddwd %[wv], %[xh], %[t1]\n\t"
            "vpaddd %[t1], %[a31], %[a31]\n\t"
            ".endr"
            : [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]),
              [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]),
              [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1]), [xl] "=&x"(xl), [xh] "=&x"(xh),
              [wv] "=&x"(wv), [t0] "=&x"(t0), [t1] "=&x"(t1)
            : [x] "r"(xg), [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [w3] "r"(w3)
            : "memory");
}

/* R rows of int16 weights (w16, rows stride values apart; scales ws) x the 16 vectors
 * of block b of a wide pack xp: out[v * ldo + r] for the block's real vectors. A row's
 * pair p, broadcast, meets pair p of 8 vectors in one 32-byte load, and one madd gives
 * their int32 sums of 2 exact products (int16 by int16: no saturation, no sign trick). */
INLINE void gemm_block_wide_avx2(int R, float *out, size_t ldo, const int16_t *w16,
                                 const float *ws, const gemm_pack *xp, int b, int stride,
                                 int group)
{
    const int groups = stride / group, pairs = group / 2;
    const int16_t *x0 = (const int16_t *)(const void *)xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        facc[r][0] = facc[r][1] = _mm256_setzero_ps();
    for (int g = 0; g < groups; g++) {
        __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_si256();
        const int16_t *xg = x0 + (size_t)g * group * GEMM_VECS;
        const int16_t *wg = w16 + (size_t)g * group;
        if (R == 4 && group == 32) {
            wide_group4_avx2(acc, xg, wg, wg + stride, wg + 2 * (size_t)stride,
                             wg + 3 * (size_t)stride);
            gemm_scale_avx2(R, facc, acc, ws, xs0, g, groups, 1);
            continue;
        }
#pragma GCC unroll 16
        for (int p = 0; p < pairs; p++) {
            /* pair p of vectors 0-7 and of 8-15 */
            const int16_t *xp2 = xg + (size_t)p * 2 * GEMM_VECS;
            __m256i x_lo = _mm256_loadu_si256((const __m256i *)xp2);
            __m256i x_hi = _mm256_loadu_si256((const __m256i *)(xp2 + 16));
            /* kept in registers: GCC would load them again for every row */
            __asm__("" : "+x"(x_lo), "+x"(x_hi));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256i wv = broadcast4_256(wg + (size_t)r * stride + 2 * p);
                acc[r][0] = madd_add_avx2(acc[r][0], wv, x_lo);
                acc[r][1] = madd_add_avx2(acc[r][1], wv, x_hi);
            }
        }
        gemm_scale_avx2(R, facc, acc, ws, xs0, g, groups, 1);
    }
    gemm_store_avx2(R, out, ldo, facc, xp, b, false);
}

/* Rows [r, r + n) of w (int8, stride values) as int16 to w16. */
static void rows_to_int16_avx2(int16_t *w16, const tensor *w, int r, int n)
{
    const int stride = w->stride;
    for (int i = 0; i < n; i++) {
        const int8_t *src = w->q + (size_t)(r + i) * stride;
        int16_t *dst = w16 + (size_t)i * stride;
        for (int c = 0; c < stride; c += 16) /* stride is a multiple of 32 */
            _mm256_storeu_si256((__m256i *)(dst + c),
                                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + c))));
    }
}

/* Pieces k and k + 1 of R rows from wg (a group's weights, rows stride apart) times
 * vectors 0-7 and 8-15 of the group's packed x (xg), added to the int32 sums acc:
 * unsigned x + 128 by w directly, two pieces' pairs added in int16 before one madd. */
INLINE void small_pieces_avx2(int R, __m256i acc[][2], const uint8_t *xg, const int8_t *wg,
                              int stride, int k)
{
    const __m256i ones = _mm256_set1_epi16(1);
    _mm_prefetch((const char *)(xg + (size_t)k * 64 + 512), _MM_HINT_T0);
    _mm_prefetch((const char *)(xg + (size_t)k * 64 + 576), _MM_HINT_T0);
    __m256i xa_lo = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64));
    __m256i xa_hi = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 32));
    __m256i xb_lo = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 64));
    __m256i xb_hi = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 96));
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        int32_t pa, pb;
        memcpy(&pa, wg + (size_t)r * stride + 4 * k, 4);
        memcpy(&pb, wg + (size_t)r * stride + 4 * k + 4, 4);
        __m256i wa = _mm256_set1_epi32(pa), wb = _mm256_set1_epi32(pb);
        __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(xa_lo, wa),
                                      _mm256_maddubs_epi16(xb_lo, wb));
        __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(xa_hi, wa),
                                      _mm256_maddubs_epi16(xb_hi, wb));
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(lo, ones));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(hi, ones));
    }
}

/* acc + maddubs(u, sx): u's unsigned bytes by sx's signed ones, the pairs' int16 sums
 * added to acc in one register (as madd_add_avx2, and for its reason). */
INLINE __m256i maddubs_add_avx2(__m256i acc, __m256i u, __m256i sx)
{
    __m256i t;
    __asm__("vpmaddubsw %3, %2, %1\n\tvpaddw %1, %0, %0"
            : "+x"(acc), "=&x"(t)
            : "x"(u), "x"(sx));
    return acc;
}

/* Group g's 8 pieces of 4 rows of nibble weights (w0 to w3, each at the group's first
 * value) x 16 vectors of signed bytes (xg, the group's first piece): lo[r] and hi[r] get
 * the int16 pair sums of vectors 0-7 and 8-15. One asm block, as wide_group4_avx2. */
INLINE void nibbles_group4_avx2(__m256i lo[4], __m256i hi[4], const uint8_t *xg,
                                const int8_t *w0, const int8_t *w1, const int8_t *w2,
                                const int8_t *w3)
{
    __m256i xl, xh, wv, t0, t1;
    __asm__(".irp p,0,1,2,3,4,5,6,7\n\t"
            "prefetcht0 \\p*64+512(%[x])\n\t"
            "vmovdqu \\p*64(%[x]), %[xl]\n\t"
            "vmovdqu \\p*64+32(%[x]), %[xh]\n\t"
            "vpbroadcastd \\p*4(%[w0]), %[wv]\n\t"
            "vpmaddubsw %[xl], %[wv], %[t0]\n\t"
            "vpaddw %[t0], %[l0], %[l0]\n\t"
            "vpmaddubsw %[xh], %[wv], %[t1]\n\t"
            "vpaddw %[t1], %[h0], %[h0]\n\t"
            "vpbroadcastd \\p*4(%[w1]), %[wv]\n\t"
            "vpmaddubsw %[xl], %[wv], %[t0]\n\t"
            "vpaddw %[t0], %[l1], %[l1]\n\t"
            "vpmaddubsw %[xh], %[wv], %[t1]\n\t"
            "vpaddw %[t1], %[h1], %[h1]\n\t"
            "vpbroadcastd \\p*4(%[w2]), %[wv]\n\t"
            "vpmaddubsw %[xl], %[wv], %[t0]\n\t"
            "vpaddw %[t0], %[l2], %[l2]\n\t"
            "vpmaddubsw %[xh], %[wv], %[t1]\n\t"
            "vpaddw %[t1], %[h2], %[h2]\n\t"
            "vpbroadcastd \\p*4(%[w3]), %[wv]\n\t"
            "vpmaddubsw %[xl], %[wv], %[t0]\n\t"
            "vpaddw %[t0], %[l3], %[l3]\n\t"
            "vpmaddubsw %[xh], %[wv], %[t1]\n\t"
            "vpaddw %[t1], %[h3], %[h3]\n\t"
            ".endr"
            : [l0] "+x"(lo[0]), [h0] "+x"(hi[0]), [l1] "+x"(lo[1]), [h1] "+x"(hi[1]),
              [l2] "+x"(lo[2]), [h2] "+x"(hi[2]), [l3] "+x"(lo[3]), [h3] "+x"(hi[3]),
              [xl] "=&x"(xl), [xh] "=&x"(xh), [wv] "=&x"(wv), [t0] "=&x"(t0), [t1] "=&x"(t1)
            : [x] "r"(xg), [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [w3] "r"(w3)
            : "memory");
}

/* R rows from w (stride values in [0, 15], groups of 32, scales ws) x the 16 vectors
 * of block b of a pack of signed bytes xp. A row's piece k, broadcast, meets piece k of
 * 8 vectors in one 32-byte load; a group's 8 pieces add up in int16, then one madd. */
INLINE void gemm_block_nibbles_avx2(int R, float *out, size_t ldo, const int8_t *w,
                                    const float *ws, const gemm_pack *xp, int b, int stride)
{
    const int groups = stride / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *x0 = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        facc[r][0] = facc[r][1] = _mm256_setzero_ps();
    for (int g = 0; g < groups; g++) {
        const uint8_t *xg = x0 + (size_t)g * 8 * 64;
        const int8_t *wg = w + (size_t)g * 32;
        __m256i lo[GEMM2_ROWS], hi[GEMM2_ROWS]; /* int16 pair sums, vectors 0-7 and 8-15 */
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            lo[r] = hi[r] = _mm256_setzero_si256();
        if (R == 4) {
            nibbles_group4_avx2(lo, hi, xg, wg, wg + stride, wg + 2 * (size_t)stride,
                                wg + 3 * (size_t)stride);
        } else { /* the last rows of a matrix */
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                __m256i x_lo = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64));
                __m256i x_hi = _mm256_loadu_si256((const __m256i *)(xg + (size_t)k * 64 + 32));
                /* kept in registers: GCC would load them again for every row */
                __asm__("" : "+x"(x_lo), "+x"(x_hi));
#pragma GCC unroll 4
                for (int r = 0; r < R; r++) {
                    __m256i wv = broadcast4_256(wg + (size_t)r * stride + 4 * k);
                    lo[r] = maddubs_add_avx2(lo[r], wv, x_lo);
                    hi[r] = maddubs_add_avx2(hi[r], wv, x_hi);
                }
            }
        }
        __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            acc[r][0] = _mm256_madd_epi16(lo[r], ones);
            acc[r][1] = _mm256_madd_epi16(hi[r], ones);
        }
        gemm_scale_avx2(R, facc, acc, ws, xs0, g, groups, 1);
    }
    gemm_store_avx2(R, out, ldo, facc, xp, b, false);
}

/* R rows from w (stride values with |w| <= 32, scales ws, wsum[r * groups + g] = Σ w of
 * row r's group g) x the 16 vectors of block b of an unsigned pack xp. */
INLINE void gemm_block_small_avx2(int R, float *out, size_t ldo, const int8_t *w,
                                  const float *ws, const int32_t *wsum, const gemm_pack *xp,
                                  int b, int stride, int group)
{
    const int groups = stride / group, k4 = group / 4;
    const uint8_t *x0 = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        facc[r][0] = facc[r][1] = _mm256_setzero_ps();
    for (int g = 0; g < groups; g++) {
        __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) /* Σ (x + 128) w - 128 Σ w = Σ x w */
            acc[r][0] = acc[r][1] = _mm256_set1_epi32(-128 * wsum[(size_t)r * groups + g]);
        for (int k = 0; k < k4; k += 2)
            small_pieces_avx2(R, acc, x0 + (size_t)g * k4 * 64, w + (size_t)g * group, stride, k);
        gemm_scale_avx2(R, facc, acc, ws, xs0, g, groups, 1);
    }
    gemm_store_avx2(R, out, ldo, facc, xp, b, false);
}

/* gemm_block_small_avx2 for gemm_q8_halves (group 32, two units a group, each with its
 * scale and wsum): first every group's first half, summed and stored, then the second
 * halves, summed and added — the bits of two products of the halves. */
INLINE void gemm_block_halves_avx2(int R, float *out, size_t ldo, const int8_t *w,
                                   const float *ws, const int32_t *wsum, const gemm_pack *xp,
                                   int b, int stride)
{
    const int groups = stride / 32;
    const uint8_t *x0 = xp->q + (size_t)b * stride * GEMM_VECS;
    const float *xs0 = xp->scale + (size_t)b * groups * GEMM_VECS;
    for (int h = 0; h < 2; h++) {
        __m256 facc[GEMM2_ROWS][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            facc[r][0] = facc[r][1] = _mm256_setzero_ps();
        for (int g = 0; g < groups; g++) {
            __m256i acc[GEMM2_ROWS][2];
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][0] = acc[r][1] =
                    _mm256_set1_epi32(-128 * wsum[((size_t)r * groups + g) * 2 + h]);
            for (int k = 4 * h; k < 4 * h + 4; k += 2)
                small_pieces_avx2(R, acc, x0 + (size_t)g * 8 * 64, w + (size_t)g * 32, stride, k);
            gemm_scale_avx2(R, facc, acc, ws + h, xs0, g, groups, 2);
        }
        gemm_store_avx2(R, out, ldo, facc, xp, b, h > 0);
    }
}

/* Each unit's Σ w (x86-avx2-gemm.h). */
int32_t *kernels_avx2_unit_sums(kernels_scratch *s, const tensor *w, int r0, int r1, int H)
{
    const int stride = w->stride, group = w->group, groups = stride / group, n = r1 - r0;
    int32_t *wsum = kernels_scratch_get(s, SCRATCH_GEMM_BIAS,
                                        sizeof(int32_t) * (size_t)n * groups * H);
    if (!wsum)
        return NULL;
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int i = 0; i < n; i++) {
        const int8_t *wr = w->q + (size_t)(r0 + i) * stride;
        for (int g = 0; g < groups; g++) {
            __m256i sum = _mm256_setzero_si256();
            for (int k = 0; k < group; k += 32) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(wr + (size_t)g * group + k));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v),
                                                              ones16));
            }
            __m128i lo = _mm256_castsi256_si128(sum), hi = _mm256_extracti128_si256(sum, 1);
            __m128i part[2] = {H == 1 ? _mm_add_epi32(lo, hi) : lo, hi}; /* a unit's 4 sums */
            for (int u = 0; u < H; u++) {
                __m128i t = _mm_add_epi32(part[u], _mm_shuffle_epi32(part[u], 0x4E));
                t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
                wsum[((size_t)i * groups + g) * H + u] = _mm_cvtsi128_si32(t);
            }
        }
    }
    return wsum;
}

/* R rows from r of w x block b: the small-weights kernel where there are row sums
 * (wsum: rows from r0, H units a group), the wide one on the rows as int16 where there
 * are those (w16: rows from r0), else the nibbles kernel. */
INLINE void gemm_block_either(int R, int H, float *out, const tensor *w, const gemm_pack *xp,
                              int b, int r, int r0, const int32_t *wsum, const int16_t *w16)
{
    const int stride = w->stride, group = w->group, units = stride / group * H;
    const int8_t *wr = w->q + (size_t)r * stride;
    const float *ws = w->scale + (size_t)r * units;
    if (wsum && H == 2)
        gemm_block_halves_avx2(R, out + r, (size_t)w->rows, wr, ws,
                               wsum + (size_t)(r - r0) * units, xp, b, stride);
    else if (wsum)
        gemm_block_small_avx2(R, out + r, (size_t)w->rows, wr, ws,
                              wsum + (size_t)(r - r0) * units, xp, b, stride, group);
    else if (!w16)
        gemm_block_nibbles_avx2(R, out + r, (size_t)w->rows, wr, ws, xp, b, stride);
    else if (group == 32) /* a constant: the pairs' loop unrolls, each sum in a register */
        gemm_block_wide_avx2(R, out + r, (size_t)w->rows, w16 + (size_t)(r - r0) * stride, ws,
                             xp, b, stride, 32);
    else if (group == 64)
        gemm_block_wide_avx2(R, out + r, (size_t)w->rows, w16 + (size_t)(r - r0) * stride, ws,
                             xp, b, stride, 64);
    else
        gemm_block_wide_avx2(R, out + r, (size_t)w->rows, w16 + (size_t)(r - r0) * stride, ws,
                             xp, b, stride, group);
}

/* Rows [r0, r1) times every vector of xp, in register blocks, the vectors in token
 * tiles: with the small-weights kernel when wsum (the rows' unit sums) is given, with
 * the wide one on the rows made int16 when w16 is, else with the nibbles kernel. */
static void gemm_rows_avx2(int H, float *out, const tensor *w, const gemm_pack *xp, int r0,
                           int r1, const int32_t *wsum, int16_t *w16)
{
    size_t x_bytes = (size_t)w->stride * GEMM_VECS * (xp->wide_x ? sizeof(int16_t) : 1);
#define EITHER(R, H, b, r) gemm_block_either(R, H, out, w, xp, b, r, r0, wsum, w16)
    GEMM2_WALK(EITHER, H, xp, x_bytes, r0, r1);
#undef EITHER
}

/* gemm_q8: Q8_0 rows of any values by a wide pack (the table's gemm_wide),
 * BLOCK_ROWS_CONVERTED rows at a time made int16 once for every vector (kernels.c hands
 * Q8_0 blocks over that many rows at a time). */
void kernels_avx2_gemm_q8(kernels_scratch *s, float *out, const tensor *w, const gemm_pack *xp,
                          int r0, int r1)
{
    int16_t *w16 = kernels_scratch_get(s, SCRATCH_GEMM_WIDE_ROWS,
                                       sizeof(int16_t) * BLOCK_ROWS_CONVERTED * (size_t)w->stride);
    if (!w16)
        return; /* out of memory, counted in s */
    for (int c0 = r0; c0 < r1; c0 += BLOCK_ROWS_CONVERTED) {
        int c1 = c0 + BLOCK_ROWS_CONVERTED < r1 ? c0 + BLOCK_ROWS_CONVERTED : r1;
        rows_to_int16_avx2(w16, w, c0, c1 - c0);
        gemm_rows_avx2(1, out, w, xp, c0, c1, NULL, w16);
    }
}

/* The small-weights kernel with H units a group (gemm_q8_small: 1; gemm_q8_halves: 2). */
static void gemm_small_units(int H, kernels_scratch *s, float *out, const tensor *w,
                             const gemm_pack *xp, int r0, int r1)
{
    int32_t *wsum = kernels_avx2_unit_sums(s, w, r0, r1, H); /* once for every tile */
    if (wsum)
        gemm_rows_avx2(H, out, w, xp, r0, r1, wsum, NULL);
}

void kernels_avx2_gemm_q8_small(kernels_scratch *s, float *out, const tensor *w,
                                const gemm_pack *xp, int r0, int r1)
{
    gemm_small_units(1, s, out, w, xp, r0, r1);
}

void kernels_avx2_gemm_q8_halves(kernels_scratch *s, float *out, const tensor *w,
                                 const gemm_pack *xp, int r0, int r1)
{
    gemm_small_units(2, s, out, w, xp, r0, r1);
}

void kernels_avx2_gemm_q8_nibbles(kernels_scratch *s, float *out, const tensor *w,
                                  const gemm_pack *xp, int r0, int r1)
{
    (void)s;
    gemm_rows_avx2(1, out, w, xp, r0, r1, NULL, NULL);
}

/* Vectors the mins' product takes at once: 2 x 6 sums in flight, more than an FMA's
 * latency times its rate, beside the two registers of mins and a broadcast. */
enum { MINS_VECS = 6 };

/* N vectors (from v) of the mins' product of a block of nr rows (min_t: 16 floats a
 * group), added to out. */
INLINE void mins_vectors_avx2(int N, float *out, size_t ldo, const float *min_t, int groups,
                              const float *xsum, int v, int nr)
{
    __m256 acc[MINS_VECS][2];
#pragma GCC unroll 6
    for (int j = 0; j < N; j++)
        acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    const float *xs = xsum + (size_t)v * groups;
    for (int g = 0; g < groups; g++) {
        const __m256 m0 = _mm256_loadu_ps(min_t + 16 * (size_t)g);
        const __m256 m1 = _mm256_loadu_ps(min_t + 16 * (size_t)g + 8);
#pragma GCC unroll 6
        for (int j = 0; j < N; j++) {
            __m256 x = _mm256_set1_ps(xs[(size_t)j * groups + g]);
            acc[j][0] = _mm256_fmadd_ps(x, m0, acc[j][0]);
            acc[j][1] = _mm256_fmadd_ps(x, m1, acc[j][1]);
        }
    }
#pragma GCC unroll 6
    for (int j = 0; j < N; j++) {
        float f[16], *o = out + (size_t)(v + j) * ldo;
        if (nr == 16) { /* a whole block: the same adds, 8 at a time */
            _mm256_storeu_ps(o, _mm256_add_ps(_mm256_loadu_ps(o), acc[j][0]));
            _mm256_storeu_ps(o + 8, _mm256_add_ps(_mm256_loadu_ps(o + 8), acc[j][1]));
            continue;
        }
        _mm256_storeu_ps(f, acc[j][0]);
        _mm256_storeu_ps(f + 8, acc[j][1]);
        for (int i = 0; i < nr; i++)
            o[i] += f[i];
    }
}

/* The mins' part of the K-quant prefill (gemm_mins; the AVX-512 one's arithmetic, so its
 * bits): the block's mins laid out 16 floats a group (zero past its nr rows), then for
 * MINS_VECS vectors at a time one FMA adds a group's term to 8 rows; each sum runs over
 * the groups in order, then is added to out. */
void kernels_avx2_gemm_mins(kernels_scratch *s, float *out, size_t ldo, const float *min,
                            int groups, const float *xsum, int n, int nr)
{
    float *min_t = kernels_scratch_get(s, SCRATCH_MINS, sizeof(float) * (size_t)groups * 16);
    if (!min_t)
        return; /* out of memory, counted in s */
    for (int g = 0; g < groups; g++)
        for (int i = 0; i < 16; i++)
            min_t[16 * (size_t)g + i] = i < nr ? min[(size_t)i * groups + g] : 0.0f;
    int v = 0;
    for (; v + MINS_VECS <= n; v += MINS_VECS)
        mins_vectors_avx2(MINS_VECS, out, ldo, min_t, groups, xsum, v, nr);
    switch (n - v) {
    case 5: mins_vectors_avx2(5, out, ldo, min_t, groups, xsum, v, nr); break;
    case 4: mins_vectors_avx2(4, out, ldo, min_t, groups, xsum, v, nr); break;
    case 3: mins_vectors_avx2(3, out, ldo, min_t, groups, xsum, v, nr); break;
    case 2: mins_vectors_avx2(2, out, ldo, min_t, groups, xsum, v, nr); break;
    case 1: mins_vectors_avx2(1, out, ldo, min_t, groups, xsum, v, nr); break;
    default: break;
    }
}

TARGET_END
