/* kernels/x86-k4-panels-body.h — the decode product of a Q4_K tensor read from its
 * panels (kernels/panels.h), written once and included by kernels/x86-k4-panels.c in
 * each of its target regions (AVX2; AVX-512 VNNI; AVX-VNNI). The includer defines
 *   K4P(name)             a helper's name for its instruction set (static)
 *   K4P_MATVEC            the names of the table entries it defines (matvec_k4p,
 *   K4P_MATMUL            matmul_k4p)
 *   K4P_STEP(acc, w, x)   acc plus the products of w's unsigned bytes (nibbles) by x's
 *                         signed ones, 4 to a 32-bit lane: int16 pair sums added in
 *                         int16 (AVX2: vpmaddubsw), or int32 (VNNI: vpdpbusd)
 *   K4P_TOTAL(acc)        acc's 8 int32 lane sums (AVX2: vpmaddwd by ones; VNNI: acc)
 * and an all-zero acc is the start of a sub-block's sums; the body undefines the four
 * at its end, for the next includer. Either way each lane ends as the row's exact
 * integer sum of the sub-block (8 steps: at most 8 · 2 · 15 · 128 = 30720 in an int16
 * lane), so both give the same bits. */

/* A super-block's 6-bit scales and mins of the 8 rows (the file's 12 bytes a row, byte
 * k of the rows at s + 8 k: kernels/panels.h) as bytes, sub-block j's of rows 0..7 at
 * scales + 8 j and mins + 8 j. As ggml unpacks a row's (get_scale_min_k4): sub-blocks
 * 0-3 are the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 take their low 4
 * bits from bytes 8-11 (scales the low nibble, mins the high) and their top 2 from the
 * top bits of bytes 0-3 and 4-7. Three loads give all 8 rows' bytes 0-3, 4-7, 8-11. */
INLINE void K4P(unpack_scales)(uint8_t *scales, uint8_t *mins, const uint8_t *s)
{
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)s);
    const __m256i b4 = _mm256_loadu_si256((const __m256i *)(s + 32));
    const __m256i b8 = _mm256_loadu_si256((const __m256i *)(s + 64));
    const __m256i six = _mm256_set1_epi8(0x3f), four = _mm256_set1_epi8(0x0f);
    const __m256i top = _mm256_set1_epi8(0x30); /* bits 6-7 of a byte moved to 4-5 */
    _mm256_store_si256((__m256i *)scales, _mm256_and_si256(b0, six));
    _mm256_store_si256((__m256i *)mins, _mm256_and_si256(b4, six));
    _mm256_store_si256((__m256i *)(scales + 32),
                       _mm256_or_si256(_mm256_and_si256(b8, four),
                                       _mm256_and_si256(_mm256_srli_epi16(b0, 2), top)));
    _mm256_store_si256(
        (__m256i *)(mins + 32),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b8, 4), four),
                        _mm256_and_si256(_mm256_srli_epi16(b4, 2), top)));
}

/* Sub-block j's 6-bit scales (or mins) of the 8 rows, made floats, times d (or dmin). */
INLINE __m256 K4P(sub_block_scale)(__m256 d, const uint8_t *scales, int j)
{
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                _mm_loadl_epi64((const __m128i *)(scales + 8 * j)))));
}

/* Sub-block j of super-block b of one vector (its 8 rows' exact sums, int16 pairs or
 * int32 as K4P_STEP leaves them; d · sc_j and dmin · m_j of the rows in dsc and dm) into
 * its sums acc[j] and accm[j]: the row dot's float steps, lane for lane. */
INLINE void K4P(scale_add)(__m256 *acc, __m256 *accm, __m256i sums, __m256 dsc, __m256 dm,
                           const float *xs, const float *xsum, int b, int j)
{
    const int g = 8 * b + j;
    __m256 f = _mm256_mul_ps(dsc, _mm256_set1_ps(xs[g]));
    acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(K4P_TOTAL(sums)), f, acc[j]);
    accm[j] = _mm256_fmadd_ps(dm, _mm256_set1_ps(xsum[g]), accm[j]);
}

/* The rows' results from their sums (each a row's lane): acc's eight added in hsum256's
 * order, (0 + 4) + (2 + 6) plus (1 + 5) + (3 + 7), minus accm's. */
INLINE void K4P(store_rows)(float *out, const __m256 a8[8], const __m256 m8[8])
{
    __m256 a = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(a8[0], a8[4]), _mm256_add_ps(a8[2], a8[6])),
        _mm256_add_ps(_mm256_add_ps(a8[1], a8[5]), _mm256_add_ps(a8[3], a8[7])));
    __m256 m = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(m8[0], m8[4]), _mm256_add_ps(m8[2], m8[6])),
        _mm256_add_ps(_mm256_add_ps(m8[1], m8[5]), _mm256_add_ps(m8[3], m8[7])));
    _mm256_storeu_ps(out, _mm256_sub_ps(a, m));
}

/* The 8 rows of one group (its panel bytes at p) times x: out[0..7]. */
INLINE void K4P(group_dot)(float *out, const uint8_t *p, const int8_t *x, const float *xs,
                           const float *xsum, int superblocks)
{
    const __m256i low = _mm256_set1_epi8(0x0f);
    /* acc[j], accm[j]: sub-block j's sums of the 8 rows (the row dot's lane j) */
    __m256 acc[8], accm[8];
    for (int j = 0; j < 8; j++)
        acc[j] = accm[j] = _mm256_setzero_ps();
    _Alignas(32) uint8_t scales[64], mins[64]; /* sub-block j's of rows 0..7 at 8 j */
    for (int b = 0; b < superblocks; b++, p += K4_PANEL_BLOCK) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
        K4P(unpack_scales)(scales, mins, p + K4_PANEL_SCALES);
        const int8_t *xb = x + 256 * b;
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            const uint8_t *piece = p + K4_PANEL_VALUES + 256 * q;
            prefetch_weight_lines(p + K4_AHEAD + 288 * q, 5);
            __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(piece + 32 * k));
                lo = K4P_STEP(lo, _mm256_and_si256(v, low), broadcast4_256(xb + 64 * q + 4 * k));
                hi = K4P_STEP(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), low),
                              broadcast4_256(xb + 64 * q + 32 + 4 * k));
            }
            for (int h = 0; h < 2; h++) { /* the scales made as they are used */
                const int j = 2 * q + h;
                K4P(scale_add)(acc, accm, h ? hi : lo, K4P(sub_block_scale)(d, scales, j),
                               K4P(sub_block_scale)(dmin, mins, j), xs, xsum, b, j);
            }
        }
    }
    K4P(store_rows)(out, acc, accm);
}

/* The same for 2 to BLOCKS_MULTI_MAX vectors (vector v's values, scales and group sums
 * at x, xs and xsum plus v times their strides): out[v * ldo + i] for row i. Each
 * quarter super-block's pieces are taken apart into nibbles once, then every vector's
 * sums made from them in group_dot's operations and order, so that a vector gets the
 * same bits alone or among others. */
INLINE void K4P(group_dot_multi)(float *out, size_t ldo, const uint8_t *p, const int8_t *x,
                                 size_t x_stride, const float *xs, size_t xs_stride,
                                 const float *xsum, size_t xsum_stride, int superblocks, int n)
{
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256 acc[BLOCKS_MULTI_MAX][8], accm[BLOCKS_MULTI_MAX][8]; /* group_dot's, a vector */
    for (int v = 0; v < n; v++)
        for (int j = 0; j < 8; j++)
            acc[v][j] = accm[v][j] = _mm256_setzero_ps();
    _Alignas(32) uint8_t scales[64], mins[64];
    for (int b = 0; b < superblocks; b++, p += K4_PANEL_BLOCK) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
        K4P(unpack_scales)(scales, mins, p + K4_PANEL_SCALES);
        for (int q = 0; q < 4; q++) {
            const uint8_t *piece = p + K4_PANEL_VALUES + 256 * q;
            const int8_t *xq = x + 256 * b + 64 * q;
            prefetch_weight_lines(p + K4_AHEAD + 288 * q, 5);
            __m256i wlo[8], whi[8];
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(piece + 32 * k));
                wlo[k] = _mm256_and_si256(v, low);
                whi[k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            }
            __m256 dsc[2], dm[2];
            for (int h = 0; h < 2; h++) {
                dsc[h] = K4P(sub_block_scale)(d, scales, 2 * q + h);
                dm[h] = K4P(sub_block_scale)(dmin, mins, 2 * q + h);
            }
            for (int v = 0; v < n; v++) {
                const int8_t *xv = xq + v * x_stride;
                __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    lo = K4P_STEP(lo, wlo[k], broadcast4_256(xv + 4 * k));
                    hi = K4P_STEP(hi, whi[k], broadcast4_256(xv + 32 + 4 * k));
                }
                for (int h = 0; h < 2; h++)
                    K4P(scale_add)(acc[v], accm[v], h ? hi : lo, dsc[h], dm[h],
                                   xs + v * xs_stride, xsum + v * xsum_stride, b, 2 * q + h);
            }
        }
    }
    for (int v = 0; v < n; v++)
        K4P(store_rows)(out + v * ldo, acc[v], accm[v]);
}

/* matvec_k4p (kernels/table.h): rows r0..r1 - 1, whole groups, to out[0..r1 - r0). */
void K4P_MATVEC(float *out, const tensor *w, const int8_t *x, const float *xs, const float *xsum,
                int r0, int r1)
{
    const int superblocks = w->cols / 256;
    const size_t bytes = k4_panel_bytes((size_t)superblocks);
    for (int r = r0; r < r1; r += K4_PANEL_ROWS)
        K4P(group_dot)(out + (r - r0), w->panels + (size_t)(r / K4_PANEL_ROWS) * bytes, x, xs,
                       xsum, superblocks);
}

/* matmul_k4p (kernels/table.h): rows r0..r1 - 1, whole groups, times n vectors. */
void K4P_MATMUL(float *out, size_t ldo, const tensor *w, const int8_t *x, size_t x_stride,
                const float *xs, size_t xs_stride, const float *xsum, size_t xsum_stride, int n,
                int r0, int r1)
{
    const int superblocks = w->cols / 256;
    const size_t bytes = k4_panel_bytes((size_t)superblocks);
    for (int r = r0; r < r1; r += K4_PANEL_ROWS)
        K4P(group_dot_multi)(out + (r - r0), ldo, w->panels + (size_t)(r / K4_PANEL_ROWS) * bytes,
                             x, x_stride, xs, xs_stride, xsum, xsum_stride, superblocks, n);
}

#undef K4P
#undef K4P_MATVEC
#undef K4P_MATMUL
#undef K4P_STEP
#undef K4P_TOTAL
