/* kernels/x86-avx512-blocks.c — the AVX-512 VNNI row dots of the ggml block types used
 * in place (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4), for the x86-avx512 table
 * (blocks_dot_fn in kernels/table.h; the plain-C twins are in kernels/scalar-blocks.c).
 *
 * 512-bit registers hold 64 values, in the activation's own order, so the int8
 * activations are read as they are:
 * - Q4_0..Q5_1: four blocks' 16 bytes of nibbles, the low and the high nibbles in two
 *   registers whose 128-bit lane k both hold block k (x read in the matching order, as
 *   for Q4_K); a row's last one to three blocks two a register, each block's 16 bytes
 *   in two 128-bit lanes, the second shifted down by 4; the fifth bits (Q5_0, Q5_1) are
 *   a 64-bit mask that sets bit 4 of the bytes it selects; the offsets (8, 16) are
 *   taken away with the activation's group sums;
 * - Q4_K / Q5_K: 64 bytes of nibbles (four sub-blocks), the low and the high nibbles
 *   gathered into two registers whose 128-bit lane k both hold sub-block k, so that
 *   both add into one sum; x is read in the matching order, written once a call
 *   (kernels_avx512_x_halves, the table's blocks_x);
 * - Q6_K: four 16-value pieces, used unsigned (0..63); the −32 is taken away once per
 *   super-block from the activation's per-16 sums;
 * - MXFP4: four blocks' codes gathered as Q4_K's sub-blocks are (x in the same order);
 *   a byte shuffle gives each code's magnitude (|e2m1| doubled, 0..12) and its sign
 *   bit negates the activation instead.
 * vpdpbusd gives each 4-value lane's exact int32 sum; one FMA per register scales each
 * lane by its block's or sub-block's d · scale · activation scale (a super-block's 8 or
 * 16 factors computed at once, then spread over the lanes by one permute), except for
 * Q4_K and Q5_K, whose lanes of a sub-block are added in integers first, so that those
 * two round as the AVX2 row dots do. The
 * half-precision scales convert with F16C, which every AVX-512 CPU has. Each
 * super-block (each 4 blocks) prefetches the one KQ_AHEAD bytes on: rows are contiguous,
 * so that reaches every line of a thread's stream.
 *
 * Every type also has a dot of up to 8 vectors at once (blocks_dot_multi_fn, a check of
 * speculative decoding's guesses): the weights unpacked once, then each vector's sums
 * made in the one-vector dot's operations and order, so that a vector gets the same bits
 * alone or among others.
 *
 * Every integer sum is exact; only the order of the fp32 sums differs from the twins. */
#include "x86.h"

#include <stdbool.h>
#include <string.h>

/* How far ahead of the super-block being read the weights are prefetched. */
enum { KQ_AHEAD = 2048 };

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

static inline __m256 upper256(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* Prefetches the `lines` cache lines KQ_AHEAD bytes after p. */
INLINE void prefetch_ahead(const uint8_t *p, int lines)
{
    prefetch_weight_lines(p + KQ_AHEAD, lines);
}

/* The 32-value types: blocks of `bytes`, half d at 0, half m at 2 (has_min), fifth bits
 * at qh_at (or none, -1), nibbles at qs_at, values offset by `offset` (8, 16 or 0):
 * Σ_b d_b·xs_b·Σ q·x + (m_b or −offset·d_b)·xsum_b, four blocks a register (quad32
 * below), the last one to three two a register: blocks a and b = a + 1 (when `two`;
 * else b's lanes get zero activations and factors) unpacked once, their 64 values (a's
 * in the low 256 bits, x as it is), lanes 0 and 1 of d and of m. */
typedef struct {
    __m512i q;
    __m128 d, m;
} pair32;

INLINE pair32 unpack_pair_32(const uint8_t *a, bool two, int bytes, int qs_at, int qh_at,
                             int has_min)
{
    const uint8_t *b = two ? a + bytes : a;
    pair32 p;
    __m256i qa = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + qs_at)));
    __m256i qb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + qs_at)));
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1);
    /* words 8-15 and 24-31: each block's second 128-bit lane, its high nibbles */
    q = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xff00ff00u, q, 4), _mm512_set1_epi8(0x0f));
    if (qh_at >= 0) {
        uint32_t ha, hb;
        memcpy(&ha, a + qh_at, 4);
        memcpy(&hb, b + qh_at, 4);
        q = _mm512_or_si512(q, _mm512_maskz_mov_epi8((__mmask64)ha | (__mmask64)hb << 32,
                                                     _mm512_set1_epi8(0x10)));
    }
    p.q = q;
    uint32_t h2 = (uint32_t)(a[0] | a[1] << 8) | (uint32_t)(b[0] | b[1] << 8) << 16;
    p.d = _mm_cvtph_ps(_mm_cvtsi32_si128((int)h2));
    p.m = p.d;
    if (has_min) {
        uint32_t m2 = (uint32_t)(a[2] | a[3] << 8) | (uint32_t)(b[2] | b[3] << 8) << 16;
        p.m = _mm_cvtph_ps(_mm_cvtsi32_si128((int)m2));
    }
    return p;
}

/* One vector's sums over an unpacked pair: into acc the blocks' products, into accm
 * their m (or d) times xsum. */
INLINE void pair_32(__m512 *acc, __m128 *accm, const pair32 *p, const int8_t *x,
                    const float *xs, const float *xsum, bool two)
{
    __m512i xv = two ? _mm512_loadu_si512((const void *)x)
                     : _mm512_maskz_loadu_epi8(0xffffffffu, (const void *)x);
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p->q, xv);
    __m128 xs2 = two ? _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)xs)) : _mm_load_ss(xs);
    __m128 xsum2 =
        two ? _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)xsum)) : _mm_load_ss(xsum);
    /* lanes 0-7 take block a's factor, 8-15 block b's */
    const __m512i spread = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 f = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_mul_ps(p->d, xs2)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), f, *acc);
    *accm = _mm_fmadd_ps(p->m, xsum2, *accm);
}

/* Four 32-value blocks at row unpacked, as quad_mxfp4_unpack's: 128-bit lane k of lo
 * holds block k's first 16 values, of hi its last 16 (x in kernels_avx512_x_halves's
 * order), so that both vpdpbusd add into one sum and one conversion, permute and FMA
 * serve four blocks; d and m hold the four blocks' d and m (or d again). */
typedef struct {
    __m512i lo, hi;
    __m128 d, m;
} quad32;

INLINE quad32 unpack_quad_32(const uint8_t *row, int bytes, int qs_at, int qh_at, int has_min)
{
    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(row + qs_at)));
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + bytes + qs_at)), 1);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + 2 * bytes + qs_at)), 2);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + 3 * bytes + qs_at)), 3);
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    quad32 u;
    u.lo = _mm512_and_si512(q, nibble);
    u.hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
    if (qh_at >= 0) {
        /* bit j of block k's qh is value j's fifth: byte j of lane k of lo (j < 16) or
         * byte j - 16 of hi. Every lane gets the four qh; a byte shuffle gives byte i of
         * lane k byte 4k + i / 8 of them (lo; + 2 for hi), a test bit i % 8 of it. */
        __m512i qh = _mm512_broadcast_i32x4(four_words(row + qh_at, (size_t)bytes));
        const __m512i pick = _mm512_set_epi64(0x0d0d0d0d0d0d0d0d, 0x0c0c0c0c0c0c0c0c,
                                              0x0909090909090909, 0x0808080808080808,
                                              0x0505050505050505, 0x0404040404040404,
                                              0x0101010101010101, 0x0000000000000000);
        const __m512i bits = _mm512_set1_epi64((long long)0x8040201008040201ull);
        const __m512i bit4 = _mm512_set1_epi8(0x10), two = _mm512_set1_epi8(2);
        __mmask64 mlo = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, pick), bits);
        __mmask64 mhi = _mm512_test_epi8_mask(
            _mm512_shuffle_epi8(qh, _mm512_add_epi8(pick, two)), bits);
        u.lo = _mm512_mask_add_epi8(u.lo, mlo, u.lo, bit4);
        u.hi = _mm512_mask_add_epi8(u.hi, mhi, u.hi, bit4);
    }
    /* each block's first 4 bytes (half d, then half m or the block's next bytes): the
     * four d, then the four m, as eight halves */
    const __m128i halves = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    __m128i h = _mm_shuffle_epi8(four_words(row, (size_t)bytes), halves);
    if (has_min) {
        __m256 f = _mm256_cvtph_ps(h);
        u.d = _mm256_castps256_ps128(f);
        u.m = _mm256_extractf128_ps(f, 1);
    } else {
        u.d = u.m = _mm_cvtph_ps(h);
    }
    return u;
}

/* One vector's sums over an unpacked quad: into acc the blocks' products, into accm
 * their m (or d) times xsum. */
INLINE void quad_32(__m512 *acc, __m128 *accm, const quad32 *u, const int8_t *x,
                    const float *xs, const float *xsum)
{
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u->lo,
                                    _mm512_loadu_si512((const void *)x));
    s = _mm512_dpbusd_epi32(s, u->hi, _mm512_loadu_si512((const void *)(x + 64)));
    __m128 f = _mm_mul_ps(u->d, _mm_loadu_ps(xs));
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                           _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(f)), *acc);
    *accm = _mm_fmadd_ps(u->m, _mm_loadu_ps(xsum), *accm);
}

/* The 32-value types for n vectors of one row at once (n <= BLOCKS_MULTI_MAX): eight
 * blocks at a time (two quads into two sums), then four, the last one to three two at a
 * time (x there as it is); each group unpacked once, then each vector's sums made in the
 * same operations and order (a vector's bits alone or among others; the one-vector dot
 * is n = 1). */
INLINE void dot_32_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                         size_t xs_stride, const float *xsum, size_t xsum_stride, int cols, int n,
                         float *out, size_t out_stride, int bytes, int qs_at, int qh_at,
                         int has_min, int offset)
{
    __m512 acc[BLOCKS_MULTI_MAX][2];
    __m128 accm[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++) {
        acc[v][0] = acc[v][1] = _mm512_setzero_ps();
        accm[v] = _mm_setzero_ps();
    }
    int blocks = cols / 32, b = 0;
    for (; b + 8 <= blocks; b += 8, row += 8 * bytes) {
        prefetch_ahead(row, 2);
        prefetch_ahead(row + 4 * bytes, 2);
        quad32 u0 = unpack_quad_32(row, bytes, qs_at, qh_at, has_min);
        quad32 u1 = unpack_quad_32(row + 4 * bytes, bytes, qs_at, qh_at, has_min);
        for (int v = 0; v < n; v++) {
            const int8_t *xb = x + v * x_stride + 32 * b;
            const float *xsb = xs + v * xs_stride + b, *xsumb = xsum + v * xsum_stride + b;
            quad_32(&acc[v][0], &accm[v], &u0, xb, xsb, xsumb);
            quad_32(&acc[v][1], &accm[v], &u1, xb + 128, xsb + 4, xsumb + 4);
        }
    }
    if (b + 4 <= blocks) {
        quad32 u = unpack_quad_32(row, bytes, qs_at, qh_at, has_min);
        for (int v = 0; v < n; v++)
            quad_32(&acc[v][0], &accm[v], &u, x + v * x_stride + 32 * b, xs + v * xs_stride + b,
                    xsum + v * xsum_stride + b);
        b += 4, row += 4 * bytes;
    }
    for (; b < blocks; b += 2, row += 2 * bytes) {
        bool two = b + 1 < blocks;
        pair32 p = unpack_pair_32(row, two, bytes, qs_at, qh_at, has_min);
        for (int v = 0; v < n; v++)
            pair_32(&acc[v][1], &accm[v], &p, x + v * x_stride + 32 * b, xs + v * xs_stride + b,
                    xsum + v * xsum_stride + b, two);
    }
    for (int v = 0; v < n; v++) {
        __m128 m = _mm_add_ps(accm[v], _mm_movehl_ps(accm[v], accm[v]));
        float mins = _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
        out[v * out_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[v][0], acc[v][1])) +
                              (has_min ? mins : -(float)offset * mins);
    }
}

/* The four types' dots, from each type's bytes, qs_at, qh_at, has_min and offset (Q4_0:
 * 18-byte blocks, half d and 16 bytes of nibbles, d·xs·Σ(q − 8)·x). */
X86_BLOCK_DOTS(avx512, q4_0, dot_32_multi, 18, 2, -1, 0, 8)
X86_BLOCK_DOTS(avx512, q4_1, dot_32_multi, 20, 4, -1, 1, 0)
X86_BLOCK_DOTS(avx512, q5_0, dot_32_multi, 22, 6, 2, 0, 16)
X86_BLOCK_DOTS(avx512, q5_1, dot_32_multi, 24, 8, 4, 1, 0)

/* MXFP4 blocks unpacked for vpdpbusd: the codes' magnitudes (|e2m1| doubled, 0..12, by
 * one byte shuffle of `mags`, ggml_kvalues_mxfp4's, unsigned) and a mask of the codes
 * whose sign bit (bit 3) is set, which negates the activation instead; e holds the
 * blocks' scales 2^(e - 128) in its lanes. Four blocks (quad_mxfp4_unpack): 128-bit
 * lane k of lo and hi holds block k's codes, its low nibbles (the first 16 values) in
 * lo, its high ones in hi, x in kernels_avx512_x_halves's order (the four blocks' first
 * 16 values, then their last 16), so that both vpdpbusd add into one sum and one
 * conversion, permute and FMA serve four blocks. Two (pair_mxfp4_unpack): blocks a and
 * b = a + 1 (when `two`; else b's lanes get zero activations), a's 32 values in the low
 * 256 bits of lo, x as it is. */
typedef struct {
    __m512i lo, hi;
    __mmask64 neg_lo, neg_hi;
    __m128 e;
} mxfp4_unpacked;

INLINE mxfp4_unpacked quad_mxfp4_unpack(__m512i mags, const uint8_t *row)
{
    const int B = GGML_MXFP4_BYTES;
    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(row + 1)));
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + B + 1)), 1);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + 2 * B + 1)), 2);
    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(row + 3 * B + 1)), 3);
    const __m512i nibble = _mm512_set1_epi8(0x0f), sign = _mm512_set1_epi8(8);
    __m512i lo = _mm512_and_si512(q, nibble);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
    mxfp4_unpacked u;
    u.neg_lo = _mm512_test_epi8_mask(lo, sign);
    u.neg_hi = _mm512_test_epi8_mask(hi, sign);
    u.lo = _mm512_shuffle_epi8(mags, lo);
    u.hi = _mm512_shuffle_epi8(mags, hi);
    /* ggml_e8m0_half_to_f32 of the four exponents: (e - 1) << 23, below 2 a subnormal */
    __m128i e = _mm_setr_epi32(row[0], row[B], row[2 * B], row[3 * B]);
    __m128i normal = _mm_slli_epi32(_mm_sub_epi32(e, _mm_set1_epi32(1)), 23);
    __m128i tiny = _mm_sllv_epi32(_mm_set1_epi32(0x00200000), e);
    u.e = _mm_castsi128_ps(
        _mm_mask_blend_epi32(_mm_cmplt_epu32_mask(e, _mm_set1_epi32(2)), normal, tiny));
    return u;
}

INLINE __m512 quad_mxfp4(__m512 acc, const mxfp4_unpacked *u, const int8_t *x, const float *xs)
{
    __m512i xlo = _mm512_loadu_si512((const void *)x);
    __m512i xhi = _mm512_loadu_si512((const void *)(x + 64));
    xlo = _mm512_mask_sub_epi8(xlo, u->neg_lo, _mm512_setzero_si512(), xlo);
    xhi = _mm512_mask_sub_epi8(xhi, u->neg_hi, _mm512_setzero_si512(), xhi);
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u->lo, xlo);
    s = _mm512_dpbusd_epi32(s, u->hi, xhi);
    __m128 f = _mm_mul_ps(u->e, _mm_loadu_ps(xs));
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                           _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(f)), acc);
}

INLINE mxfp4_unpacked pair_mxfp4_unpack(__m512i mags, const uint8_t *a, bool two)
{
    const uint8_t *b = two ? a + GGML_MXFP4_BYTES : a;
    __m256i qa = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(a + 1)));
    __m256i qb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + 1)));
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1);
    q = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xff00ff00u, q, 4), _mm512_set1_epi8(0x0f));
    mxfp4_unpacked u;
    u.neg_lo = _mm512_test_epi8_mask(q, _mm512_set1_epi8(8));
    u.lo = _mm512_shuffle_epi8(mags, q);
    u.hi = u.lo;
    u.neg_hi = 0;
    u.e = _mm_setr_ps(ggml_e8m0_half_to_f32(a[0]), two ? ggml_e8m0_half_to_f32(b[0]) : 0.0f,
                      0.0f, 0.0f);
    return u;
}

INLINE __m512 pair_mxfp4(__m512 acc, const mxfp4_unpacked *u, const int8_t *x, const float *xs,
                         bool two)
{
    __m512i xv = two ? _mm512_loadu_si512((const void *)x)
                     : _mm512_maskz_loadu_epi8(0xffffffffu, (const void *)x);
    xv = _mm512_mask_sub_epi8(xv, u->neg_lo, _mm512_setzero_si512(), xv);
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u->lo, xv);
    float fb = two ? _mm_cvtss_f32(_mm_movehdup_ps(u->e)) * xs[1] : 0.0f;
    __m128 f2 = _mm_setr_ps(_mm_cvtss_f32(u->e) * xs[0], fb, 0.0f, 0.0f);
    /* lanes 0-7 take block a's factor, 8-15 block b's */
    const __m512i spread = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                           _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(f2)), acc);
}

/* MXFP4 for n vectors of one row at once (n <= BLOCKS_MULTI_MAX): eight blocks at a
 * time (two quads into two sums), then four, the last one to three two at a time; each
 * group unpacked once, then each vector's sums made in the same operations and order
 * (the one-vector dot is n = 1). */
INLINE void dot_mxfp4_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                            size_t xs_stride, const float *xsum, size_t xsum_stride, int cols,
                            int n, float *out, size_t out_stride)
{
    (void)xsum, (void)xsum_stride; /* no mins */
    const __m512i mags = _mm512_set4_epi32(0x0c080604, 0x03020100, 0x0c080604, 0x03020100);
    __m512 acc[BLOCKS_MULTI_MAX][2];
    for (int v = 0; v < n; v++)
        acc[v][0] = acc[v][1] = _mm512_setzero_ps();
    int blocks = cols / 32, b = 0;
    for (; b + 8 <= blocks; b += 8, row += 8 * GGML_MXFP4_BYTES) {
        prefetch_ahead(row, 2);
        prefetch_ahead(row + 4 * GGML_MXFP4_BYTES, 2);
        mxfp4_unpacked u0 = quad_mxfp4_unpack(mags, row);
        mxfp4_unpacked u1 = quad_mxfp4_unpack(mags, row + 4 * GGML_MXFP4_BYTES);
        for (int v = 0; v < n; v++) {
            const int8_t *xb = x + v * x_stride + 32 * b;
            const float *xsb = xs + v * xs_stride + b;
            acc[v][0] = quad_mxfp4(acc[v][0], &u0, xb, xsb);
            acc[v][1] = quad_mxfp4(acc[v][1], &u1, xb + 128, xsb + 4);
        }
    }
    if (b + 4 <= blocks) {
        mxfp4_unpacked u = quad_mxfp4_unpack(mags, row);
        for (int v = 0; v < n; v++)
            acc[v][0] =
                quad_mxfp4(acc[v][0], &u, x + v * x_stride + 32 * b, xs + v * xs_stride + b);
        b += 4, row += 4 * GGML_MXFP4_BYTES;
    }
    for (; b < blocks; b += 2, row += 2 * GGML_MXFP4_BYTES) {
        bool two = b + 1 < blocks;
        mxfp4_unpacked u = pair_mxfp4_unpack(mags, row, two);
        for (int v = 0; v < n; v++)
            acc[v][1] = pair_mxfp4(acc[v][1], &u, x + v * x_stride + 32 * b,
                                   xs + v * xs_stride + b, two);
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[v][0], acc[v][1]));
}

X86_BLOCK_DOTS(avx512, mxfp4, dot_mxfp4_multi)

/* The order dot_k45_multi, quad_32 and quad_mxfp4 read x in: in each whole 128 values (two 64-value
 * parts, four blocks or sub-blocks of 32), the first 16 values of each block, then the
 * last 16 of each: the 16-byte pieces 0, 2, 4, 6, 1, 3, 5, 7; the values after the
 * last whole 128 as they are. */
void kernels_avx512_x_halves(int8_t *dst, const int8_t *x, int cols)
{
    static const int piece[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    int c = 0;
    for (; c + 128 <= cols; c += 128)
        for (int i = 0; i < 8; i++)
            memcpy(dst + c + 16 * i, x + c + 16 * piece[i], 16);
    memcpy(dst + c, x + c, (size_t)(cols - c));
}

/* Two registers of int32 lane sums whose 128-bit lane k holds 4 partial sums of
 * sub-block k (lo) and k + 4 (hi) as the 8 sub-blocks' exact totals, sub-block j in
 * lane j: the four partials of each added in integers. */
static inline __m256i sub_block_totals(__m512i lo, __m512i hi)
{
    /* lane k: lo's partials 0+2, 1+3, then hi's */
    __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi64(lo, hi), _mm512_unpackhi_epi64(lo, hi));
    /* lane k: sub-block k's total twice, then sub-block k + 4's twice */
    __m512i t = _mm512_add_epi32(a, _mm512_shuffle_epi32(a, _MM_PERM_CDAB));
    const __m512i order = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 10, 6, 2, 12, 8, 4, 0);
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, t));
}

/* Q4_K (five 0) and Q5_K: d·sc_j·xs_j·Σ q·x − dmin·m_j·xsum_j over sub-blocks j, x in
 * kernels_avx512_x_halves's order. Each half h of a super-block's nibbles (64 bytes,
 * sub-blocks 4h to 4h + 3) is gathered into two registers whose 128-bit lane k both
 * hold sub-block 4h + k (values 0-15 in one, 16-31 in the other); both go into one
 * register of sums, whose four lanes of each sub-block are then added in integers, so
 * that one conversion and one FMA a super-block scale its 8 exact sub-block totals.
 * These are the AVX2 row dot's float steps (kernels/x86-avx2-blocks.c, dot_k45_multi:
 * acc_j = fma(total_j, d·sc_j·xs_j, acc_j) and accm_j = fma(dmin·m_j, xsum_j, accm_j)
 * over the super-blocks in order, then hsum256 of each), so both tables give a row the
 * same bits, and so does the panel kernel (kernels/x86-k4-panels.c) that reads a Q4_K
 * tensor's rows 8 side by side. For n vectors of one row at once (n <=
 * BLOCKS_MULTI_MAX): each super-block's nibbles unpacked and its scales and mins made
 * floats once, then each vector's sums made in the same operations and order, so that
 * a vector gets the same bits alone or among others (the one-vector dots are n = 1). */
INLINE void dot_k45_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                          size_t xs_stride, const float *xsum, size_t xsum_stride, int cols, int n,
                          float *out, size_t out_stride, int five)
{
    const int bytes = five ? 176 : 144;
    const __m512i first = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    const __m512i top0 = _mm512_set_epi64(0x0808080808080808, 0x0808080808080808,
                                          0x0404040404040404, 0x0404040404040404,
                                          0x0202020202020202, 0x0202020202020202,
                                          0x0101010101010101, 0x0101010101010101);
    const __m512i top[2] = {top0, _mm512_slli_epi32(top0, 4)};
    const __m512i m4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    __m256 acc[BLOCKS_MULTI_MAX], accm[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc[v] = accm[v] = _mm256_setzero_ps();
    for (int b = 0; b < cols / 256; b++, row += bytes) {
        prefetch_ahead(row, 3);
        __m128 dm = two_halves(row);
        __m512 scmn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(k4_scales_mins_x86(row + 4)));
        __m256 d = _mm256_broadcastss_ps(dm), dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
        __m256 dsc = _mm256_mul_ps(d, _mm512_castps512_ps256(scmn));
        __m256 mins = _mm256_mul_ps(dmin, upper256(scmn));
        const uint8_t *qs = row + (five ? 48 : 16);
        __m512i h0 = _mm512_setzero_si512(), h1 = _mm512_setzero_si512();
        if (five) {
            h0 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(row + 16)));
            h1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(row + 32)));
        }
        __m512i q0[2], q1[2];
        for (int h = 0; h < 2; h++) {
            __m512i q = _mm512_loadu_si512((const void *)(qs + 64 * h));
            __m512i lo = _mm512_and_si512(q, m4);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
            q0[h] = _mm512_permutex2var_epi64(lo, first, hi);
            q1[h] = _mm512_permutex2var_epi64(lo, second, hi);
            if (five) {
                q0[h] = _mm512_mask_add_epi8(q0[h], _mm512_test_epi8_mask(h0, top[h]), q0[h], bit4);
                q1[h] = _mm512_mask_add_epi8(q1[h], _mm512_test_epi8_mask(h1, top[h]), q1[h], bit4);
            }
        }
        for (int v = 0; v < n; v++) {
            __m256 f = _mm256_mul_ps(dsc, _mm256_loadu_ps(xs + v * xs_stride + 8 * b));
            accm[v] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(xsum + v * xsum_stride + 8 * b), accm[v]);
            const int8_t *xb = x + v * x_stride + 256 * b;
            __m512i sum[2];
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                sum[h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q0[h],
                                             _mm512_loadu_si512((const void *)(xb + 128 * h)));
                sum[h] = _mm512_dpbusd_epi32(sum[h], q1[h],
                                             _mm512_loadu_si512((const void *)(xb + 128 * h + 64)));
            }
            acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sub_block_totals(sum[0], sum[1])), f,
                                     acc[v]);
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = hsum256(acc[v]) - hsum256(accm[v]);
}

X86_BLOCK_DOTS(avx512, q4_k, dot_k45_multi, 0)
X86_BLOCK_DOTS(avx512, q5_k, dot_k45_multi, 1)

/* Q6_K: 210-byte super-blocks (128 bytes ql, 64 qh, 16 int8 scales, half d). In half h,
 * values 32k + l (k < 4, l < 32) are the low (k = 0, 1) or high (k = 2, 3) nibble of
 * ql[l + 32 (k & 1)] topped with bits 2k, 2k + 1 of qh[l], minus 32; 16-value piece i
 * has scale i. xsum16[i] = xs[i / 2] · Σ x over piece i:
 * Σ_i d·sc_i·xs·Σ q·x − 32·Σ_i d·sc_i·xsum16[i]. For n vectors of one row at once (n <= BLOCKS_MULTI_MAX): each super-block's values
 * unpacked and its scales made floats once, then each vector's sums made in the same
 * operations and order (a vector's bits alone or among others; the one-vector dot is
 * n = 1). */
INLINE void dot_q6_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                           size_t xs_stride, const float *xsum16, size_t xsum_stride, int cols,
                           int n, float *out, size_t out_stride)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i spread0 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i four = _mm512_set1_epi32(4);
    const __m512i pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    __m512i spread[4];
    spread[0] = spread0;
    for (int i = 1; i < 4; i++)
        spread[i] = _mm512_add_epi32(spread[i - 1], four);
    __m512 acc[BLOCKS_MULTI_MAX][2], offset[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc[v][0] = acc[v][1] = offset[v] = _mm512_setzero_ps();
    for (int b = 0; b < cols / 256; b++, row += 210) {
        prefetch_ahead(row, 4);
        __m128i sc = _mm_loadu_si128((const __m128i *)(row + 192));
        __m512 ds = _mm512_mul_ps(_mm512_set1_ps(half_at(row + 208)),
                                  _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)));
        __m512i vals[2][2];
        for (int half = 0; half < 2; half++) {
            __m512i ql = _mm512_loadu_si512((const void *)(row + 64 * half));
            __m512i qh = _mm512_broadcast_i64x4(
                _mm256_loadu_si256((const __m256i *)(row + 128 + 32 * half)));
            qh = _mm512_mask_srli_epi16(qh, 0xffff0000u, qh, 2);
            vals[half][0] = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, m4),
                                                      _mm512_slli_epi16(qh, 4), m30, 0xf8);
            vals[half][1] = _mm512_ternarylogic_epi32(
                _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), qh, m30, 0xf8);
        }
        for (int v = 0; v < n; v++) {
            __m512 f = _mm512_mul_ps(
                ds, _mm512_permutexvar_ps(
                        pairs, _mm512_castps256_ps512(_mm256_loadu_ps(xs + v * xs_stride + 8 * b))));
            offset[v] = _mm512_fmadd_ps(ds, _mm512_loadu_ps(xsum16 + v * xsum_stride + 16 * b),
                                        offset[v]);
            const int8_t *xb = x + v * x_stride + 256 * b;
#pragma GCC unroll 2
            for (int half = 0; half < 2; half++)
#pragma GCC unroll 2
                for (int k = 0; k < 2; k++) {
                    __m512i sum = _mm512_dpbusd_epi32(
                        _mm512_setzero_si512(), vals[half][k],
                        _mm512_loadu_si512((const void *)(xb + 128 * half + 64 * k)));
                    acc[v][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                                                _mm512_permutexvar_ps(spread[2 * half + k], f),
                                                acc[v][k]);
                }
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[v][0], acc[v][1])) -
                              32.0f * _mm512_reduce_add_ps(offset[v]);
}

X86_BLOCK_DOTS(avx512, q6_k, dot_q6_k_multi)

TARGET_END
