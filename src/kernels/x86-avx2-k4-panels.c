/* kernels/x86-avx2-k4-panels.c — the AVX2 table's decode product of a Q4_K tensor read
 * from its panels (kernels/panels.h: 8 rows side by side), matvec_k4p in
 * kernels/table.h.
 *
 * A row read on its own (kernels/x86-avx2-blocks.c, dot_k45_multi) needs each of its
 * super-block's eight sub-block sums out of a register of 16 int16 pair sums: a
 * transpose-and-add of eight registers, about a quarter of that dot's instructions. In
 * a panel a piece holds 4 values of 8 rows, so maddubs by x's 4 values (broadcast) gives
 * the 8 rows' pair sums in their own lanes, and the 8 pieces of a sub-block add up in
 * int16 lane by lane (at most 8 · 2 · 15 · 128 = 30720 for a lane of 16 products): one
 * madd by ones then leaves the sub-block's 8 exact int32 sums, one a row, with no
 * transpose. The low nibbles of 8 pieces are sub-block 2p, the high ones 2p + 1.
 *
 * The float steps are the row dot's, lane for lane: a row's sub-block j accumulates
 * fma(float(sum), d · sc_j · xs_j, acc_j) and fma(dmin · m_j, xsum_j, accm_j) over the
 * super-blocks in order, and the result is acc's eight sums added in hsum256's order
 * minus accm's. There a sub-block is a lane of one vector and rows follow one another;
 * here a row is a lane and each sub-block has its own vector: the same operations on
 * the same values, so a row gets the row dot's bits, with or without panels. Each group
 * is one stream of cols / 256 · 1184 bytes, prefetched K4_AHEAD bytes ahead
 * (prefetch_weight_lines), 5 lines at each quarter of a super-block: the 19 lines at
 * once made two threads' streams slower than the row dots' (docs/performance.md, "Q4_K
 * decode panels"). */
#include "x86.h"

#include "panels.h"

#include <string.h>

TARGET_BEGIN("avx2,fma,f16c")

/* How far ahead of its loads a group's stream is prefetched: the row dots' distance
 * (prefetch_bytes, at least 8 KiB); 4 and 16 KiB were no faster. */
enum { K4_AHEAD = 8192 };

/* 4 bytes of x, broadcast to every 32-bit lane. */
INLINE __m256i x_piece(const int8_t *x)
{
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* Rows g0..g0 + 7 (one group, at p) times x: out[0..7]. */
INLINE void group_dot(float *out, const uint8_t *p, const int8_t *x, const float *xs,
                      const float *xsum, int superblocks)
{
    const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    /* acc[j], accm[j]: sub-block j's sums of the 8 rows (the row dot's lane j) */
    __m256 acc[8], accm[8];
    for (int j = 0; j < 8; j++)
        acc[j] = accm[j] = _mm256_setzero_ps();
    for (int b = 0; b < superblocks; b++, p += K4_PANEL_BLOCK) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
        const int8_t *xb = x + 256 * b;
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            const uint8_t *piece = p + 160 + 256 * q;
            prefetch_weight_lines(p + K4_AHEAD + 320 * q, 5);
            __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(piece + 32 * k));
                lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(_mm256_and_si256(v, low),
                                                               x_piece(xb + 64 * q + 4 * k)));
                hi = _mm256_add_epi16(
                    hi, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), low),
                                             x_piece(xb + 64 * q + 32 + 4 * k)));
            }
            for (int h = 0; h < 2; h++) {
                const int j = 2 * q + h, g = 8 * b + j;
                __m256i sum = _mm256_madd_epi16(h ? hi : lo, ones);
                __m256 sc = _mm256_cvtepi32_ps(
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 32 + 8 * j))));
                __m256 m = _mm256_cvtepi32_ps(
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 96 + 8 * j))));
                __m256 f = _mm256_mul_ps(_mm256_mul_ps(d, sc), _mm256_set1_ps(xs[g]));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), f, acc[j]);
                accm[j] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, m), _mm256_set1_ps(xsum[g]), accm[j]);
            }
        }
    }
    /* hsum256's order: (lanes 0 + 4) + (2 + 6), plus (1 + 5) + (3 + 7) */
    __m256 a = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6])),
        _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7])));
    __m256 m = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(accm[0], accm[4]), _mm256_add_ps(accm[2], accm[6])),
        _mm256_add_ps(_mm256_add_ps(accm[1], accm[5]), _mm256_add_ps(accm[3], accm[7])));
    _mm256_storeu_ps(out, _mm256_sub_ps(a, m));
}

void kernels_avx2_matvec_k4p(float *out, const tensor *w, const int8_t *x, const float *xs,
                             const float *xsum, int r0, int r1)
{
    const int superblocks = w->cols / 256;
    const size_t bytes = k4_panel_bytes((size_t)superblocks);
    for (int r = r0; r < r1; r += K4_PANEL_ROWS)
        group_dot(out + (r - r0), w->panels + (size_t)(r / K4_PANEL_ROWS) * bytes, x, xs, xsum,
                  superblocks);
}

TARGET_END
