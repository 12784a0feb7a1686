/* kernels/x86-avx2-blocks.c — the AVX2 row dots of the ggml block types used in place
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4), for the x86-avx2 table
 * (blocks_dot_fn in kernels/table.h; the plain-C twins are in kernels/scalar-blocks.c).
 * 256-bit registers: a 32-value activation group is one register; maddubs + madd give
 * each 4-value lane's exact int32 sum. Every integer sum is exact; only the order of
 * the fp32 sums differs from the twins. The half-precision scales convert with F16C
 * (the table requires it). Each dot prefetches its row's weights prefetch_bytes ahead
 * as it reads them (at least a line per 64 bytes consumed), as the Q8_0 decode kernel
 * does: with the hardware prefetchers alone these dots wait on memory; the AVX-512 dots
 * read faster without (docs/performance.md, "What was tried"). Every type also has a
 * dot of up to 8 vectors at once (blocks_dot_multi_fn, a check of speculative
 * decoding's guesses): the weights unpacked once, then each vector's sums made in the
 * one-vector dot's operations and order, so that a vector gets the same bits alone or
 * among others. (The AVX-512 table has its own, 64 values a register:
 * kernels/x86-avx512-blocks.c.) Also both x86 tables' q8b_to_rows: GGUF Q8_0 blocks
 * made Q8_0 rows with 32-byte moves and F16C, and their unpack_row: K-quant, Q4_0 and
 * MXFP4 rows made exact Q8_0 for the prefill GEMM (the plain-C twin's bytes and floats:
 * MXFP4's scale is its power of two halved, its values doubled), and their
 * unpack_k4_group: the same of the 8 rows of a Q4_K panel group at once; and the AVX2 table's
 * decode kernels of those Q8_0 blocks, reading them in place (matvec_q8b; matmul_q8b
 * for a few vectors at once). */
#include "x86.h"

#include "panels.h"

#include <stdbool.h>
#include <string.h>

TARGET_BEGIN("avx2,fma,f16c")

/* 8 int32 sums of 4 products u (unsigned bytes) · s (signed bytes); exact while each
 * pair sum fits int16 (true of 4- and 5-bit u). */
INLINE __m256i dot_u8s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

void kernels_x86_q8b_to_rows(int8_t *q, float *scale, const tensor *w, int r0, int n)
{
    const int blocks = w->cols / QUANT_BLOCK;
    for (int r = 0; r < n; r++) {
        const uint8_t *b = tensor_block(w, r0 + r, 0);
        int8_t *qr = q + (size_t)r * w->cols;
        float *sr = scale + (size_t)r * blocks;
        for (int g = 0; g < blocks; g++, b += QUANT_BLOCK_BYTES) {
            _mm256_storeu_si256((__m256i *)(qr + (size_t)g * QUANT_BLOCK),
                                _mm256_loadu_si256((const __m256i *)(b + 2)));
            sr[g] = half_at(b);
        }
    }
}

/* The AVX2 table's matvec_q8b: rows [r0, r1) of a Q8_0_BLOCKS w times vector 0 of xq,
 * reading ggml's 34-byte blocks in place. Each block is rows_q8's 32-byte chunk (the
 * sign moved onto x, |w| by it with maddubs) and its half scale made fp32 by F16C, as
 * q8b_to_rows makes it, times x's: the operations, in the order, of rows_q8 on the
 * rows q8b_to_rows writes, so the same bits, without writing those rows first. One row
 * at a time, one stream per thread, as rows_q8 reads long rows. */
void kernels_avx2_matvec_q8b(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                             int r0, int r1)
{
    const int blocks = w->cols / QUANT_BLOCK;
    const size_t row_bytes = (size_t)blocks * QUANT_BLOCK_BYTES;
    const size_t pf = prefetch_bytes(row_bytes);
    const int8_t *x = xq->q;
    const float *xs = xq->scale;
    for (int r = r0; r < r1; r++) {
        const uint8_t *b = w->blocks + (size_t)r * row_bytes;
        __m256 acc = _mm256_setzero_ps();
        for (int g = 0; g < blocks; g++, b += QUANT_BLOCK_BYTES) {
            if (g % 2 == 0) /* a line per two blocks (68 bytes) */
                prefetch_weights(b + pf);
            __m256i wv = _mm256_loadu_si256((const __m256i *)(b + 2));
            __m256 sc = _mm256_set1_ps(half_at(b) * xs[g]);
            __m256i p =
                dot_s8_avx2(wv, _mm256_loadu_si256((const __m256i *)(x + (size_t)g * QUANT_BLOCK)));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc);
        }
        out[r] = hsum256(acc);
    }
}

/* The AVX2 table's matmul_q8b: rows [r0, r1) of a Q8_0_BLOCKS w times n (at most
 * BLOCKS_MULTI_MAX) vectors of xq, the blocks read in place once for all of them: a
 * block's |w| is made once, then each vector's sum is made as matvec_q8b makes it (its
 * signs moved onto x, maddubs, madd, one FMA by the block's scale times x's), so
 * vector v's bits are those of a matvec of it alone. Speculative decoding's checks and
 * short batches take this instead of converting the rows first. */
void kernels_avx2_matmul_q8b(kernels_scratch *s, float *out, const tensor *w, const qbatch *xq,
                             int n, int r0, int r1)
{
    (void)s;
    const int blocks = w->cols / QUANT_BLOCK;
    const size_t row_bytes = (size_t)blocks * QUANT_BLOCK_BYTES;
    const size_t pf = prefetch_bytes(row_bytes);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int r = r0; r < r1; r++) {
        const uint8_t *b = w->blocks + (size_t)r * row_bytes;
        __m256 acc[BLOCKS_MULTI_MAX];
        for (int v = 0; v < n; v++)
            acc[v] = _mm256_setzero_ps();
        for (int g = 0; g < blocks; g++, b += QUANT_BLOCK_BYTES) {
            if (g % 2 == 0) /* a line per two blocks (68 bytes) */
                prefetch_weights(b + pf);
            __m256i wv = _mm256_loadu_si256((const __m256i *)(b + 2));
            __m256i aw = _mm256_abs_epi8(wv);
            float d = half_at(b);
            for (int v = 0; v < n; v++) {
                const int8_t *x = xq->q + (size_t)v * xq->stride + (size_t)g * QUANT_BLOCK;
                __m256 sc = _mm256_set1_ps(d * xq->scale[(size_t)v * blocks + g]);
                __m256i p = _mm256_madd_epi16(
                    _mm256_maddubs_epi16(aw, _mm256_sign_epi8(
                                                 _mm256_loadu_si256((const __m256i *)x), wv)),
                    ones);
                acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc[v]);
            }
        }
        for (int v = 0; v < n; v++)
            out[(size_t)v * w->rows + r] = hsum256(acc[v]);
    }
}

/* The 32 values of a block's 16 bytes of nibbles (value j low, j + 16 high), with the
 * fifth bits of qh (bit j of the little-endian u32: value j) when qh is not NULL. */
static inline __m256i unpack32(const uint8_t *qs, const uint8_t *qh)
{
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
    if (!qh)
        return v;
    uint32_t h;
    memcpy(&h, qh, 4);
    /* byte j gets byte j / 8 of h, then bit j % 8 of it */
    __m256i hv = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h),
                                     _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                       0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    hv = _mm256_cmpeq_epi8(_mm256_and_si256(hv, bit), bit);
    return _mm256_or_si256(v, _mm256_and_si256(hv, _mm256_set1_epi8(16)));
}

/* The 32-value types: blocks of `bytes`, nibbles at qs_at, fifth bits at qh_at (or
 * none, -1), a min after d (has_min), values offset by `offset` (8, 16 or 0):
 * d·xs·Σ q·x + (m or −offset·d)·xsum per block. A block unpacked once: its 32 values,
 * d, and the factor of xsum (m or −offset·d). */
typedef struct {
    __m256i q;
    float d, mf;
} block32;

INLINE block32 unpack_block_32(const uint8_t *row, int qs_at, int qh_at, int has_min, int offset)
{
    block32 u;
    u.q = unpack32(row + qs_at, qh_at >= 0 ? row + qh_at : NULL);
    __m128 dm = two_halves(row); /* d, and m when has_min */
    u.d = _mm_cvtss_f32(dm);
    u.mf = has_min ? _mm_cvtss_f32(_mm_movehdup_ps(dm)) : -(float)offset * u.d;
    return u;
}

/* One vector's sums over an unpacked block. */
INLINE void block_32(__m256 *acc, float *mins, const block32 *u, const int8_t *x, float xs,
                     float xsum)
{
    __m256i s = dot_u8s8(u->q, _mm256_loadu_si256((const __m256i *)x));
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(u->d * xs), *acc);
    *mins += u->mf * xsum;
}

/* The d and the factors of xsum (m or −offset·d) of the eight blocks at row, at once. */
INLINE void scales_8(const uint8_t *row, int bytes, int has_min, int offset, __m256 *d8,
                     __m256 *mf8)
{
    /* each block's first 4 bytes: half d, then half m (or the block's next bytes) */
    const __m128i halves = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    __m128i lo = _mm_shuffle_epi8(four_words(row, (size_t)bytes), halves);
    __m128i hi = _mm_shuffle_epi8(four_words(row + 4 * bytes, (size_t)bytes), halves);
    *d8 = _mm256_cvtph_ps(_mm_unpacklo_epi64(lo, hi));
    *mf8 = has_min ? _mm256_cvtph_ps(_mm_unpackhi_epi64(lo, hi))
                   : _mm256_mul_ps(_mm256_set1_ps(-(float)offset), *d8);
}

/* The 32-value types for n vectors of one row at once (n <= BLOCKS_MULTI_MAX): eight
 * blocks at a time, their eight d·xs made at once (then each block's taken out by a
 * permute) and their mins' terms with one FMA, the blocks' products two sums, blocks
 * alternating, so that neither chain waits on the other; the row's last one to seven
 * blocks one at a time. Each block unpacked once, then each vector's sums made in the
 * same operations and order (a vector's bits alone or among others; the one-vector dot
 * is n = 1). */
INLINE void dot_32_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                         size_t xs_stride, const float *xsum, size_t xsum_stride, int cols, int n,
                         float *out, size_t out_stride, int bytes, int qs_at, int qh_at,
                         int has_min, int offset)
{
    __m256 acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX], accm[BLOCKS_MULTI_MAX];
    float mins[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++) {
        acc0[v] = acc1[v] = accm[v] = _mm256_setzero_ps();
        mins[v] = 0.0f;
    }
    int blocks = cols / 32, b = 0;
    const size_t pf = prefetch_bytes((size_t)blocks * bytes);
    for (; b + 8 <= blocks; b += 8, row += 8 * bytes) {
        __m256 d8, mf8;
        scales_8(row, bytes, has_min, offset, &d8, &mf8);
        __m256 f[BLOCKS_MULTI_MAX]; /* each vector's d·xs of the eight blocks */
        for (int v = 0; v < n; v++) {
            f[v] = _mm256_mul_ps(d8, _mm256_loadu_ps(xs + v * xs_stride + b));
            accm[v] = _mm256_fmadd_ps(mf8, _mm256_loadu_ps(xsum + v * xsum_stride + b), accm[v]);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 8; k += 2) {
            const uint8_t *b0 = row + k * bytes, *b1 = b0 + bytes;
            prefetch_weights(b0 + pf); /* a line per pair (36 to 48 bytes) */
            __m256i q0 = unpack32(b0 + qs_at, qh_at >= 0 ? b0 + qh_at : NULL);
            __m256i q1 = unpack32(b1 + qs_at, qh_at >= 0 ? b1 + qh_at : NULL);
            for (int v = 0; v < n; v++) {
                const int8_t *xb = x + v * x_stride + 32 * (b + k);
                __m256i s0 = dot_u8s8(q0, _mm256_loadu_si256((const __m256i *)xb));
                __m256i s1 = dot_u8s8(q1, _mm256_loadu_si256((const __m256i *)(xb + 32)));
                acc0[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0),
                                          _mm256_permutevar8x32_ps(f[v], _mm256_set1_epi32(k)),
                                          acc0[v]);
                acc1[v] = _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(s1),
                    _mm256_permutevar8x32_ps(f[v], _mm256_set1_epi32(k + 1)), acc1[v]);
            }
        }
    }
    for (; b < blocks; b++, row += bytes) {
        block32 u = unpack_block_32(row, qs_at, qh_at, has_min, offset);
        for (int v = 0; v < n; v++)
            block_32(&acc0[v], &mins[v], &u, x + v * x_stride + 32 * b, xs[v * xs_stride + b],
                     xsum[v * xsum_stride + b]);
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] =
            hsum256(_mm256_add_ps(acc0[v], acc1[v])) + (hsum256(accm[v]) + mins[v]);
}

/* The four types' dots, from each type's bytes, qs_at, qh_at, has_min and offset (Q4_0:
 * 18-byte blocks, half d and 16 bytes of nibbles, d·xs·Σ(q − 8)·x). */
X86_BLOCK_DOTS(avx2, q4_0, dot_32_multi, 18, 2, -1, 0, 8)
X86_BLOCK_DOTS(avx2, q4_1, dot_32_multi, 20, 4, -1, 1, 0)
X86_BLOCK_DOTS(avx2, q5_0, dot_32_multi, 22, 6, 2, 0, 16)
X86_BLOCK_DOTS(avx2, q5_1, dot_32_multi, 24, 8, 4, 1, 0)

/* MXFP4: 17-byte blocks (E8M0 e, 16 bytes of e2m1 codes, nibbles as Q4_0's). Each code
 * becomes its doubled e2m1 value (signed, |v| <= 12) by one byte shuffle of
 * ggml_kvalues_mxfp4, then the signed-by-signed dot of rows_q8 (dot_s8_avx2):
 * 2^(e - 128)·xs·Σ v·x per block, two blocks alternating between two sums. A block
 * unpacked once: its 32 values and 2^(e - 128). */
typedef struct {
    __m256i v;
    float e;
} block_mxfp4_unpacked;

INLINE block_mxfp4_unpacked unpack_block_mxfp4(__m256i table, const uint8_t *blk)
{
    block_mxfp4_unpacked u = {_mm256_shuffle_epi8(table, unpack32(blk + 1, NULL)),
                              ggml_e8m0_half_to_f32(blk[0])};
    return u;
}

INLINE __m256 block_mxfp4(__m256 acc, const block_mxfp4_unpacked *u, const int8_t *x, float xs)
{
    __m256i s = dot_s8_avx2(u->v, _mm256_loadu_si256((const __m256i *)x));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(u->e * xs), acc);
}

/* MXFP4 for n vectors of one row at once (n <= BLOCKS_MULTI_MAX), as dot_32_multi. */
INLINE void dot_mxfp4_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                            size_t xs_stride, const float *xsum, size_t xsum_stride, int cols,
                            int n, float *out, size_t out_stride)
{
    (void)xsum, (void)xsum_stride; /* no mins */
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggml_kvalues_mxfp4));
    __m256 acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc0[v] = acc1[v] = _mm256_setzero_ps();
    int blocks = cols / 32, b = 0;
    const size_t pf = prefetch_bytes((size_t)blocks * GGML_MXFP4_BYTES);
    for (; b + 1 < blocks; b += 2, row += 2 * GGML_MXFP4_BYTES) {
        prefetch_weights(row + pf); /* a line per pair (34 bytes) */
        block_mxfp4_unpacked u0 = unpack_block_mxfp4(table, row);
        block_mxfp4_unpacked u1 = unpack_block_mxfp4(table, row + GGML_MXFP4_BYTES);
        for (int v = 0; v < n; v++) {
            const int8_t *xb = x + v * x_stride + 32 * b;
            const float *xsb = xs + v * xs_stride + b;
            acc0[v] = block_mxfp4(acc0[v], &u0, xb, xsb[0]);
            acc1[v] = block_mxfp4(acc1[v], &u1, xb + 32, xsb[1]);
        }
    }
    if (b < blocks) {
        block_mxfp4_unpacked u = unpack_block_mxfp4(table, row);
        for (int v = 0; v < n; v++)
            acc0[v] = block_mxfp4(acc0[v], &u, x + v * x_stride + 32 * b, xs[v * xs_stride + b]);
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = hsum256(_mm256_add_ps(acc0[v], acc1[v]));
}

X86_BLOCK_DOTS(avx2, mxfp4, dot_mxfp4_multi)

/* The 8 sub-block totals of a super-block, lane j the sum of t[j]'s 16 lanes: t[j] holds
 * maddubs's int16 pair sums of sub-block j's 32 values, each within 2 · 31 · 128 = 7936
 * for 4- and 5-bit weights. Adds of interleaved halves do the work the multiply pipes
 * would (a madd by ones a sub-block costs a multiply slot each, and there are only two
 * such pipes): the 32-bit pieces of two sub-blocks interleaved and added (int16 sums of
 * 2 values, within 15872), then their 64-bit pieces (sums of 4, within 31744: still no
 * saturation), then one madd by ones widens each sub-block's two int16 a 128-bit half
 * to int32, and the halves are added. Exact, and with no broadcast of a scale per
 * sub-block: the caller multiplies the totals by its vector of sub-block scales at once. */
INLINE __m256i sub_block_sums(const __m256i t[8])
{
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256i a[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) /* a half: j's, j + 1's, j's, j + 1's two sums (j = 2i) */
        a[i] = _mm256_add_epi16(_mm256_unpacklo_epi32(t[2 * i], t[2 * i + 1]),
                                _mm256_unpackhi_epi32(t[2 * i], t[2 * i + 1]));
    /* a half: sub-blocks 4k .. 4k + 3, two int16 sums each */
    __m256i b0 = _mm256_add_epi16(_mm256_unpacklo_epi64(a[0], a[1]),
                                  _mm256_unpackhi_epi64(a[0], a[1]));
    __m256i b1 = _mm256_add_epi16(_mm256_unpacklo_epi64(a[2], a[3]),
                                  _mm256_unpackhi_epi64(a[2], a[3]));
    __m256i q0 = _mm256_madd_epi16(b0, ones16); /* 0-3 | 0-3 */
    __m256i q1 = _mm256_madd_epi16(b1, ones16); /* 4-7 | 4-7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                            _mm256_permute2x128_si256(q0, q1, 0x31));
}

/* Q4_K (five 0) and Q5_K: 144- / 176-byte super-blocks (half d, half dmin, 12 bytes of
 * 6-bit scales and mins, [32 bytes qh,] 128 bytes of nibbles: sub-block 2p the low
 * nibbles of bytes 32p.., 2p + 1 the high ones; Q5_K's fifth bits: bit j of qh[l] for
 * value l of sub-block j). Sub-block j is activation group 8b + j:
 * d·sc_j·xs·Σ q·x − dmin·m_j·xsum, the eight Σ q·x made in integers (sub_block_sums)
 * and scaled by the vector of d·sc_j·xs with one FMA a super-block. For n vectors of one
 * row at once (n <= BLOCKS_MULTI_MAX): each super-block's values unpacked and its
 * scales and mins made floats once, then each vector's sums made in the same operations
 * and order (a vector's bits alone or among others; the one-vector dots are n = 1). */
INLINE void dot_k45_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                          size_t xs_stride, const float *xsum, size_t xsum_stride, int cols, int n,
                          float *out, size_t out_stride, int five)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const int bytes = five ? 176 : 144;
    __m256 acc0[BLOCKS_MULTI_MAX], accm[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc0[v] = accm[v] = _mm256_setzero_ps();
    int blocks = cols / 256;
    const size_t pf = prefetch_bytes((size_t)blocks * bytes);
    for (int b = 0; b < blocks; b++, row += bytes) {
        prefetch_weight_lines(row + pf, 3); /* 144 or 176 bytes */
        __m128i sm = k4_scales_mins_x86(row + 4);
        __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm));
        __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)));
        __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(half_at(row)), sc);
        __m256 mins = _mm256_mul_ps(_mm256_set1_ps(half_at(row + 2)), mn);
        const uint8_t *qs = row + (five ? 48 : 16);
        __m256i qh = _mm256_setzero_si256();
        if (five)
            qh = _mm256_loadu_si256((const __m256i *)(row + 16));
        __m256i lo[4], hi[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
            lo[p] = _mm256_and_si256(q, m4);
            hi[p] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                __m256i h = _mm256_srli_epi16(qh, 2 * p);
                lo[p] = _mm256_or_si256(lo[p], _mm256_slli_epi16(_mm256_and_si256(h, one), 4));
                hi[p] = _mm256_or_si256(
                    hi[p], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 1), one), 4));
            }
        }
        for (int v = 0; v < n; v++) {
            __m256 f = _mm256_mul_ps(dsc, _mm256_loadu_ps(xs + v * xs_stride + 8 * b));
            accm[v] = _mm256_fmadd_ps(mins, _mm256_loadu_ps(xsum + v * xsum_stride + 8 * b), accm[v]);
            const int8_t *xb = x + v * x_stride + 256 * b;
            __m256i t[8];
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) {
                t[2 * p] = _mm256_maddubs_epi16(lo[p],
                                                _mm256_loadu_si256((const __m256i *)(xb + 64 * p)));
                t[2 * p + 1] = _mm256_maddubs_epi16(
                    hi[p], _mm256_loadu_si256((const __m256i *)(xb + 64 * p + 32)));
            }
            acc0[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sub_block_sums(t)), f, acc0[v]);
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = hsum256(acc0[v]) - hsum256(accm[v]);
}

X86_BLOCK_DOTS(avx2, q4_k, dot_k45_multi, 0)
X86_BLOCK_DOTS(avx2, q5_k, dot_k45_multi, 1)

/* Q6_K: 210-byte super-blocks (128 bytes ql, 64 qh, 16 int8 scales, half d). In half h,
 * values l, l + 32, l + 64, l + 96 (l < 32) are the low / high nibbles of ql[l] and
 * ql[l + 32] topped with bits 0-1, 2-3, 4-5, 6-7 of qh[l], minus 32: four activation
 * groups, each two 16-value pieces with their own scale (group j: pieces 2j, 2j + 1, the
 * low and high 128-bit halves of its register). The values are used unsigned (0..63):
 * maddubs and madd by ones make 4-product sums within int16 (4 · 63 · 128); packs puts
 * groups j and j + 1 side by side in int16 and madd multiplies them by their pieces'
 * scales (pair_sc); hadd and the halves added give the group totals, lane j, one
 * conversion and one FMA by the groups' d · xs a super-block. The −32 is taken away
 * once per super-block from the activation's per-16 sums xsum16[i] = xs[i / 2] · Σ x
 * over piece i. For n vectors of one row at once (n <= BLOCKS_MULTI_MAX): each
 * super-block's values unpacked and its scales made ready once, then each vector's
 * sums made in the same operations and order (a vector's bits alone or among others;
 * the one-vector dot is n = 1). */
INLINE void dot_q6_k_multi(const uint8_t *row, const int8_t *x, size_t x_stride, const float *xs,
                           size_t xs_stride, const float *xsum16, size_t xsum_stride, int cols,
                           int n, float *out, size_t out_stride)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    /* int16 lanes of pair i (groups 2i, 2i + 1: pieces 4i..4i + 3) from the 8 scales of
     * its half of the super-block in both 128-bit halves: low half pieces 4i, 4i + 2,
     * high half 4i + 1, 4i + 3, each over the 4 int16 lanes its group's sums fill */
    const __m256i pick0 = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5, 4, 5, 2, 3,
                                           2, 3, 2, 3, 2, 3, 6, 7, 6, 7, 6, 7, 6, 7);
    const __m256i pick1 = _mm256_add_epi8(pick0, _mm256_set1_epi8(8));
    __m256 acc[BLOCKS_MULTI_MAX], offset[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc[v] = offset[v] = _mm256_setzero_ps();
    int blocks = cols / 256;
    const size_t pf = prefetch_bytes((size_t)blocks * 210);
    for (int b = 0; b < blocks; b++, row += 210) {
        prefetch_weight_lines(row + pf, 4); /* 210 bytes */
        const uint8_t *sc = row + 192;
        float d = half_at(row + 208);
        __m256 ds[2];
        for (int h = 0; h < 2; h++)
            ds[h] = _mm256_mul_ps(_mm256_set1_ps(d),
                                  _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                      _mm_loadl_epi64((const __m128i *)(sc + 8 * h)))));
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        /* each half's 8 scales in both 128-bit halves (immediates: a -O0 build too) */
        const __m256i half0 = _mm256_permute2x128_si256(sc16, sc16, 0x00);
        const __m256i half1 = _mm256_permute2x128_si256(sc16, sc16, 0x11);
        const __m256i pair_sc[4] = {
            _mm256_shuffle_epi8(half0, pick0), _mm256_shuffle_epi8(half0, pick1),
            _mm256_shuffle_epi8(half1, pick0), _mm256_shuffle_epi8(half1, pick1)};
        __m256i vals[8];
        for (int h = 0; h < 2; h++) {
            __m256i qa = _mm256_loadu_si256((const __m256i *)(row + 64 * h));
            __m256i qb = _mm256_loadu_si256((const __m256i *)(row + 64 * h + 32));
            __m256i hb = _mm256_loadu_si256((const __m256i *)(row + 128 + 32 * h));
            vals[4 * h] = _mm256_or_si256(_mm256_and_si256(qa, m4),
                                          _mm256_slli_epi16(_mm256_and_si256(hb, m3), 4));
            vals[4 * h + 1] = _mm256_or_si256(
                _mm256_and_si256(qb, m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m3), 4));
            vals[4 * h + 2] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(qa, 4), m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m3), 4));
            vals[4 * h + 3] = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(qb, 4), m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m3), 4));
        }
        for (int v = 0; v < n; v++) {
            __m256 f =
                _mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(xs + v * xs_stride + 8 * b));
            for (int h = 0; h < 2; h++)
                offset[v] = _mm256_fmadd_ps(
                    ds[h], _mm256_loadu_ps(xsum16 + v * xsum_stride + 16 * b + 8 * h), offset[v]);
            const int8_t *xr = x + v * x_stride + 256 * b;
            __m256i pair[4];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                __m256i s0 = dot_u8s8(vals[2 * i],
                                      _mm256_loadu_si256((const __m256i *)(xr + 64 * i)));
                __m256i s1 = dot_u8s8(vals[2 * i + 1],
                                      _mm256_loadu_si256((const __m256i *)(xr + 64 * i + 32)));
                pair[i] = _mm256_madd_epi16(_mm256_packs_epi32(s0, s1), pair_sc[i]);
            }
            __m256i h0 = _mm256_hadd_epi32(pair[0], pair[1]); /* groups 0-3, pieces 2j | 2j + 1 */
            __m256i h1 = _mm256_hadd_epi32(pair[2], pair[3]); /* groups 4-7 */
            __m256i tot = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                                           _mm256_permute2x128_si256(h0, h1, 0x31));
            acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot), f, acc[v]);
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = hsum256(acc[v]) - 32.0f * hsum256(offset[v]);
}

X86_BLOCK_DOTS(avx2, q6_k, dot_q6_k_multi)

/* A Q4_K / Q5_K super-block's 8 scales and mins as floats: d · scale j to scale[j],
 * -(dmin · min j) to min[j], from its 12 bytes of 6-bit pairs at s (16 bytes read). */
INLINE void k45_scales_out(const uint8_t *s, float d, float dmin, float *scale, float *min)
{
    __m128i sm = k4_scales_mins_x86(s);
    __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm));
    __m256 m = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)));
    _mm256_storeu_ps(scale, _mm256_mul_ps(_mm256_set1_ps(d), sc));
    _mm256_storeu_ps(min, _mm256_xor_ps(_mm256_mul_ps(_mm256_set1_ps(dmin), m),
                                        _mm256_set1_ps(-0.0f)));
}

/* A Q4_K / Q5_K super-block (kernels/scalar-blocks.c: unpack_k45): sub-block 2p the low
 * nibbles of qs[32p..32p+31], 2p + 1 the high ones, plus 16 where bits 2p, 2p + 1 of
 * qh[l] are set (Q5_K); scale j = d · sc_j, min j = −(dmin · m_j). */
INLINE void unpack_k45_block(const uint8_t *b, bool five, int8_t *y, float *scale, float *min)
{
    const __m256i low = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const uint8_t *qs = b + (five ? 48 : 16);
    const __m256i qh =
        five ? _mm256_loadu_si256((const __m256i *)(b + 16)) : _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        __m256i c = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
        __m256i lo = _mm256_and_si256(c, low), hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), low);
        if (five) { /* bit 2p (2p + 1) of each byte to bit 4: shifts within 16-bit lanes,
                       masked to one bit of each byte before it moves */
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), one), 4));
            hi = _mm256_or_si256(
                hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * p + 1), one), 4));
        }
        _mm256_storeu_si256((__m256i *)(y + 64 * p), lo);
        _mm256_storeu_si256((__m256i *)(y + 64 * p + 32), hi);
    }
    k45_scales_out(b + 4, half_at(b), half_at(b + 2), scale, min);
}

/* A Q6_K super-block's part (kernels/scalar-blocks.c: unpack_q6_k): each 32-byte group
 * is one register, ql's nibble or'ed with qh's two bits moved to bits 4-5 (masked after
 * the 16-bit shifts), minus 32, the half that is not the part's cleared; scale j =
 * d · sc[2j + part]. KERNELS_UNPACK_HALVES: nothing cleared, scale j = d · sc[j] for
 * j < 16. */
INLINE void unpack_q6_k_block(const uint8_t *b, int part, int8_t *y, float *scale)
{
    const __m256i low = _mm256_set1_epi8(0x0f), bits = _mm256_set1_epi8(0x30),
                  off = _mm256_set1_epi8(32);
    const __m256i keep = part == KERNELS_UNPACK_HALVES ? _mm256_set1_epi8(-1)
                         : part ? _mm256_set_epi64x(-1, -1, 0, 0)
                                : _mm256_set_epi64x(0, 0, -1, -1);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(b + 64 * h));
        const __m256i c = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
        /* values l, l + 32, l + 64, l + 96: qh's bits 0-1, 2-3, 4-5, 6-7 */
        const __m256i top[4] = {
            _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits),
            _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits),
            _mm256_and_si256(qh, bits),
            _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits),
        };
        const __m256i nib[4] = {
            _mm256_and_si256(a, low),
            _mm256_and_si256(c, low),
            _mm256_and_si256(_mm256_srli_epi16(a, 4), low),
            _mm256_and_si256(_mm256_srli_epi16(c, 4), low),
        };
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            _mm256_storeu_si256((__m256i *)(y + 128 * h + 32 * i),
                                _mm256_and_si256(
                                    _mm256_sub_epi8(_mm256_or_si256(nib[i], top[i]), off), keep));
    }
    __m128i sc = _mm_loadu_si128((const __m128i *)(b + 192));
    if (part == KERNELS_UNPACK_HALVES) {
        __m256 d = _mm256_set1_ps(half_at(b + 208));
        _mm256_storeu_ps(scale, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
        _mm256_storeu_ps(scale + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                         _mm_srli_si128(sc, 8)))));
        return;
    }
    /* sc[2j + part] for j < 8: every other byte, sign-extended (the upper 8 lanes of
     * the shuffle select nothing: -128 + part keeps the high bit) */
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -128, -128, -128, -128, -128,
                                       -128, -128, -128);
    __m128i pick = _mm_shuffle_epi8(sc, _mm_add_epi8(even, _mm_set1_epi8((char)part)));
    _mm256_storeu_ps(scale, _mm256_mul_ps(_mm256_set1_ps(half_at(b + 208)),
                                          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(pick))));
}

/* A 32-value block's 16 bytes of nibbles (low nibbles first, as Q4_0 and MXFP4 store
 * them) as 32 int8 values: each nibble looked up in the 16 bytes of table (Q4_0: the
 * nibble minus 8; MXFP4: ggml_kvalues_mxfp4), into q. */
INLINE void unpack_nibbles(const uint8_t *qs, __m128i table, int8_t *q)
{
    __m128i b = _mm_loadu_si128((const __m128i *)qs), low = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
    _mm_storeu_si128((__m128i *)q, _mm_shuffle_epi8(table, lo));
    _mm_storeu_si128((__m128i *)(q + 16), _mm_shuffle_epi8(table, hi));
}

void kernels_x86_unpack_row(int btype, const uint8_t *row, int cols, int part, int8_t *q,
                            float *scale, float *min)
{
    switch (btype) {
    case GGML_TYPE_MXFP4: {
        __m128i table = _mm_loadu_si128((const __m128i *)ggml_kvalues_mxfp4);
        for (int b = 0; b < cols / 32; b++, row += GGML_MXFP4_BYTES) {
            unpack_nibbles(row + 1, table, q + 32 * b);
            scale[b] = ggml_e8m0_half_to_f32(row[0]);
        }
        return;
    }
    case GGML_TYPE_Q4_0: {
        __m128i table = _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
        for (int b = 0; b < cols / 32; b++, row += 18) {
            unpack_nibbles(row + 2, table, q + 32 * b);
            scale[b] = half_at(row);
        }
        return;
    }
    case GGML_TYPE_Q4_K:
        for (int b = 0; b < cols / 256; b++)
            unpack_k45_block(row + 144 * (size_t)b, false, q + 256 * b, scale + 8 * b,
                             min + 8 * b);
        return;
    case GGML_TYPE_Q5_K:
        for (int b = 0; b < cols / 256; b++)
            unpack_k45_block(row + 176 * (size_t)b, true, q + 256 * b, scale + 8 * b,
                             min + 8 * b);
        return;
    case GGML_TYPE_Q6_K:
        for (int b = 0; b < cols / 256; b++)
            unpack_q6_k_block(row + 210 * (size_t)b, part, q + 256 * b,
                              scale + (part == KERNELS_UNPACK_HALVES ? 16 : 8) * b);
        return;
    default:
        kernels_unpack_row(btype, row, cols, part, q, scale, min);
    }
}

/* The 8 rows of a Q4_K panel group (kernels/panels.h) unpacked as kernels_x86_unpack_row
 * unpacks each row, without gathering the rows back first: row i's values to
 * q + i * ldq, its scales and mins to scale + i * lds and min + i * lds. A super-block's
 * 32 qs bytes of chunk c of the 8 rows are pieces 8c to 8c + 7, row i's 4 bytes of each
 * at 4i: an 8 x 8 transpose of 4-byte units gives each row its 32 bytes in one
 * register. The 12 bytes of scales (byte k of row i at 8k + i) come apart by shuffles. */
void kernels_x86_unpack_k4_group(const uint8_t *group, int cols, int8_t *q, size_t ldq,
                                 float *scale, float *min, size_t lds)
{
    const __m256i low = _mm256_set1_epi8(0x0f);
    /* bytes k and k + 1 of rows 0-7 (one 128-bit lane) to rows' pairs */
    const __m128i pairs = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    for (int b = 0; b < cols / 256; b++) {
        const uint8_t *p = group + (size_t)b * K4_PANEL_BLOCK;
        for (int l = 0; l < K4_PANEL_BLOCK; l += 64) /* two super-blocks on, from memory */
            _mm_prefetch((const char *)p + 2 * K4_PANEL_BLOCK + l, _MM_HINT_T0);
        for (int c = 0; c < 4; c++) {
            __m256i r[8], t[8];
            for (int k = 0; k < 8; k++)
                r[k] = _mm256_loadu_si256(
                    (const __m256i *)(p + K4_PANEL_VALUES + 32 * (size_t)(8 * c + k)));
            for (int k = 0; k < 8; k += 2) {
                t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
                t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
            }
            for (int k = 0; k < 8; k += 4) {
                r[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
                r[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
                r[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
                r[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
            }
            for (int i = 0; i < 4; i++) { /* rows i and i + 4 */
                const __m256i row[2] = {_mm256_permute2x128_si256(r[i], r[i + 4], 0x20),
                                        _mm256_permute2x128_si256(r[i], r[i + 4], 0x31)};
                for (int h = 0; h < 2; h++) {
                    int8_t *y = q + (size_t)(i + 4 * h) * ldq + 256 * (size_t)b + 64 * c;
                    _mm256_storeu_si256((__m256i *)y, _mm256_and_si256(row[h], low));
                    _mm256_storeu_si256((__m256i *)(y + 32),
                                        _mm256_and_si256(_mm256_srli_epi16(row[h], 4), low));
                }
            }
        }
        /* each row's 12 bytes of scales and mins, in bytes 0-11 of sm[i] */
        __m128i part[3][2]; /* bytes 4j..4j+3 of rows 0-3 and of rows 4-7, a row a dword */
        for (int j = 0; j < 3; j++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(p + K4_PANEL_SCALES + 32 * j));
            const __m128i x = _mm_shuffle_epi8(_mm256_castsi256_si128(v), pairs);
            const __m128i y = _mm_shuffle_epi8(_mm256_extracti128_si256(v, 1), pairs);
            part[j][0] = _mm_unpacklo_epi16(x, y);
            part[j][1] = _mm_unpackhi_epi16(x, y);
        }
        uint8_t sm[8][16];
        for (int h = 0; h < 2; h++) {
            const __m128i zero = _mm_setzero_si128();
            const __m128i ab_lo = _mm_unpacklo_epi32(part[0][h], part[1][h]);
            const __m128i ab_hi = _mm_unpackhi_epi32(part[0][h], part[1][h]);
            const __m128i c_lo = _mm_unpacklo_epi32(part[2][h], zero);
            const __m128i c_hi = _mm_unpackhi_epi32(part[2][h], zero);
            _mm_storeu_si128((__m128i *)sm[4 * h + 0], _mm_unpacklo_epi64(ab_lo, c_lo));
            _mm_storeu_si128((__m128i *)sm[4 * h + 1], _mm_unpackhi_epi64(ab_lo, c_lo));
            _mm_storeu_si128((__m128i *)sm[4 * h + 2], _mm_unpacklo_epi64(ab_hi, c_hi));
            _mm_storeu_si128((__m128i *)sm[4 * h + 3], _mm_unpackhi_epi64(ab_hi, c_hi));
        }
        for (int i = 0; i < K4_PANEL_ROWS; i++)
            k45_scales_out(sm[i], half_at(p + 2 * i), half_at(p + 16 + 2 * i),
                           scale + (size_t)i * lds + 8 * (size_t)b,
                           min + (size_t)i * lds + 8 * (size_t)b);
    }
}

TARGET_END
