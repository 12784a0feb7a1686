/* kernels/x86-k4-panels-body.h — the decode product of a Q4_K tensor read from its
 * panels (kernels/panels.h), written once and included by kernels/x86-k4-panels.c in
 * each of its two target regions (AVX2; AVX-512 VNNI). The includer defines
 *   K4P(name)             a helper's name for its instruction set (static)
 *   K4P_MATVEC            the name of the table entry it defines (matvec_k4p)
 *   K4P_STEP(acc, w, x)   acc plus the products of w's unsigned bytes (nibbles) by x's
 *                         signed ones, 4 to a 32-bit lane: int16 pair sums added in
 *                         int16 (AVX2: vpmaddubsw), or int32 (VNNI: vpdpbusd)
 *   K4P_TOTAL(acc)        acc's 8 int32 lane sums (AVX2: vpmaddwd by ones; VNNI: acc)
 * and an all-zero acc is the start of a sub-block's sums; the body undefines the four
 * at its end, for the next includer. Either way each lane ends as the row's exact
 * integer sum of the sub-block (8 steps: at most 8 · 2 · 15 · 128 = 30720 in an int16
 * lane), so both give the same bits. */

/* 4 bytes of x, broadcast to every 32-bit lane. */
INLINE __m256i K4P(x_piece)(const int8_t *x)
{
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

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
                lo = K4P_STEP(lo, _mm256_and_si256(v, low), K4P(x_piece)(xb + 64 * q + 4 * k));
                hi = K4P_STEP(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), low),
                              K4P(x_piece)(xb + 64 * q + 32 + 4 * k));
            }
            for (int h = 0; h < 2; h++) {
                const int j = 2 * q + h, g = 8 * b + j;
                __m256i sum = K4P_TOTAL(h ? hi : lo);
                __m256 sc = _mm256_cvtepi32_ps(
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(scales + 8 * j))));
                __m256 m = _mm256_cvtepi32_ps(
                    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(mins + 8 * j))));
                __m256 f = _mm256_mul_ps(_mm256_mul_ps(d, sc), _mm256_set1_ps(xs[g]));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), f, acc[j]);
                accm[j] =
                    _mm256_fmadd_ps(_mm256_mul_ps(dmin, m), _mm256_set1_ps(xsum[g]), accm[j]);
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

#undef K4P
#undef K4P_MATVEC
#undef K4P_STEP
#undef K4P_TOTAL
