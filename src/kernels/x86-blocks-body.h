/* kernels/x86-blocks-body.h — the x86 row dots of the 32-value ggml block types (Q4_0,
 * Q4_1, Q5_0, Q5_1; see kernels/table.h's blocks_dot_fn), written once and compiled twice by
 * kernels/x86-blocks.c: for AVX2 and for AVX-512 VNNI. The includer defines
 *   BLK(name)         the function's name for its instruction set
 *   DOT_U8S8(u, s)    8 int32 sums of 4 products u (unsigned bytes) · s (signed bytes)
 * and includes this inside its TARGET_BEGIN / TARGET_END region. 256-bit registers
 * throughout: a 32-value activation group is one register.
 *
 * Every sub-block's integer sum is exact in int32 (as in the plain-C twin); only the
 * order of the fp32 sums differs from kernels/scalar-blocks.c. */

static inline float BLK(half)(const uint8_t *p)
{
    return ggml_fp16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* The 32 values of a block's 16 bytes of nibbles (value j low, j + 16 high), with the
 * fifth bits of qh (bit j of the little-endian u32: value j) when qh is not NULL. */
static inline __m256i BLK(unpack32)(const uint8_t *qs, const uint8_t *qh)
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
 * d·xs·Σ(q − offset)·x [+ m·xsum]. */
static inline float BLK(dot_32)(const uint8_t *row, const int8_t *x, const float *xs,
                                const float *xsum, int cols, int bytes, int qs_at, int qh_at,
                                int has_min, int offset)
{
    const __m256i off = _mm256_set1_epi8((char)offset);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float mins = 0.0f;
    int blocks = cols / 32;
    for (int b = 0; b < blocks; b++, row += bytes) {
        __m256i v = BLK(unpack32)(row + qs_at, qh_at >= 0 ? row + qh_at : NULL);
        __m256i xv = _mm256_loadu_si256((const __m256i *)(x + 32 * b));
        __m256i s = DOT_U8S8(v, xv);
        if (offset)
            s = _mm256_sub_epi32(s, DOT_U8S8(off, xv));
        __m256 f = _mm256_set1_ps(BLK(half)(row) * xs[b]);
        if (b & 1)
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), f, acc1);
        else
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), f, acc0);
        if (has_min)
            mins += BLK(half)(row + 2) * xsum[b];
    }
    return hsum256(_mm256_add_ps(acc0, acc1)) + mins;
}

float BLK(dot_q4_1)(const uint8_t *row, const int8_t *x, const float *xs, const float *xsum,
                    int cols)
{
    return BLK(dot_32)(row, x, xs, xsum, cols, 20, 4, -1, 1, 0);
}

float BLK(dot_q5_0)(const uint8_t *row, const int8_t *x, const float *xs, const float *xsum,
                    int cols)
{
    return BLK(dot_32)(row, x, xs, xsum, cols, 22, 6, 2, 0, 16);
}

float BLK(dot_q5_1)(const uint8_t *row, const int8_t *x, const float *xs, const float *xsum,
                    int cols)
{
    return BLK(dot_32)(row, x, xs, xsum, cols, 24, 8, 4, 1, 0);
}

/* Q4_0: 18-byte blocks (half d, 16 bytes of nibbles): d·xs·Σ(q − 8)·x. */
float BLK(dot_q4_0)(const uint8_t *row, const int8_t *x, const float *xs, const float *xsum,
                    int cols)
{
    return BLK(dot_32)(row, x, xs, xsum, cols, 18, 2, -1, 0, 8);
}
