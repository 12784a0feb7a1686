/* kernels/arm-neon-blocks-body.h — the AArch64 row dots of ggml block types (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4; see kernels/table.h's blocks_dot_fn; and the same
 * dots of several vectors at once, blocks_dot_multi_fn), written once and
 * included by both NEON tables' files: kernels/arm-neon.c (the int8 products by
 * widening multiplies) and kernels/arm-neon-dotprod.c (sdot, inside its dot-product
 * region). The includer defines
 *   BLK(name)           the function's name for its table (the functions are static)
 *   BLK_DOT(acc, a, b)  acc + the products of 16 int8 pairs a · b in int32 lanes (a
 *                       neon_dot_step of kernels/arm-neon.h)
 * and includes this after its step.
 *
 * The weights are unpacked to signed bytes with their offsets taken away (|q| <= 32),
 * so the widening step's int16 sums of two products cannot overflow. Every sub-block's
 * integer sum is exact in int32 lanes (as in the plain-C twin, kernels/scalar-blocks.c);
 * the lanes are made fp32 exactly (each is below 2^24) and only the order of the fp32
 * sums differs from the plain-C twin. */

/* The half-precision float at p (little-endian), by the CPU's own conversion. */
static inline float BLK(half)(const uint8_t *p)
{
    uint16_t h = (uint16_t)(p[0] | p[1] << 8);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* The bytes of v whose bit is set in the matching byte of bits, as 16; others 0. */
static inline uint8x16_t BLK(bit16)(uint8x16_t v, uint8x16_t bits)
{
    return vandq_u8(vtstq_u8(v, bits), vdupq_n_u8(16));
}

/* The 32 values of a block's 16 bytes of nibbles (value j low: *lo, j + 16 high: *hi),
 * with the fifth bits of qh (bit j of the little-endian u32: value j) when qh is not
 * NULL, minus offset. */
static inline void BLK(unpack32)(const uint8_t *qs, const uint8_t *qh, int offset,
                                 int8x16_t *lo, int8x16_t *hi)
{
    uint8x16_t q = vld1q_u8(qs);
    uint8x16_t l = vandq_u8(q, vdupq_n_u8(0x0f)), h = vshrq_n_u8(q, 4);
    if (qh) {
        /* byte j of each half gets byte j / 8 of qh, then bit j % 8 of it */
        uint8x8_t b = vcreate_u8(0x8040201008040201ull);
        uint8x16_t bits = vcombine_u8(b, b);
        l = vorrq_u8(l, BLK(bit16)(vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1])), bits));
        h = vorrq_u8(h, BLK(bit16)(vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3])), bits));
    }
    *lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8((int8_t)offset));
    *hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8((int8_t)offset));
}

/* One vector's sums of block b of the 32-value types and MXFP4: its values lo (the first
 * 16) and hi by xb's 32, exact in int32 lanes, scaled by f into acc1 (b odd) or acc0,
 * so that neither chain waits on the other. */
static inline void BLK(block_32)(float32x4_t *acc0, float32x4_t *acc1, int8x16_t lo,
                                 int8x16_t hi, const int8_t *xb, float f, int b)
{
    int32x4_t s = BLK_DOT(vdupq_n_s32(0), lo, vld1q_s8(xb));
    s = BLK_DOT(s, hi, vld1q_s8(xb + 16));
    if (b & 1)
        *acc1 = vfmaq_n_f32(*acc1, vcvtq_f32_s32(s), f);
    else
        *acc0 = vfmaq_n_f32(*acc0, vcvtq_f32_s32(s), f);
}

/* The 32-value types: blocks of `bytes`, nibbles at qs_at, fifth bits at qh_at (or
 * none, -1), a min after d (has_min), values offset by `offset` (8, 16 or 0):
 * d·xs·Σ(q − offset)·x [+ m·xsum]. For n vectors of one row at once (n <=
 * BLOCKS_MULTI_MAX): each block unpacked and its d and m made floats once, then each
 * vector's sums made in the same operations and order (a vector's bits alone or among
 * others; the one-vector dot is n = 1). */
static inline void BLK(dot_32_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                     const float *xs, size_t xs_stride, const float *xsum,
                                     size_t xsum_stride, int cols, int n, float *out,
                                     size_t out_stride, int bytes, int qs_at, int qh_at,
                                     int has_min, int offset)
{
    float32x4_t acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX];
    float mins[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++) {
        acc0[v] = acc1[v] = vdupq_n_f32(0.0f);
        mins[v] = 0.0f;
    }
    int blocks = cols / 32;
    for (int b = 0; b < blocks; b++, row += bytes) {
        int8x16_t lo, hi;
        BLK(unpack32)(row + qs_at, qh_at >= 0 ? row + qh_at : NULL, offset, &lo, &hi);
        float d = BLK(half)(row), m = has_min ? BLK(half)(row + 2) : 0.0f;
        for (int v = 0; v < n; v++) {
            BLK(block_32)(&acc0[v], &acc1[v], lo, hi, x + v * x_stride + 32 * b,
                          d * xs[v * xs_stride + b], b);
            if (has_min)
                mins[v] += m * xsum[v * xsum_stride + b];
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = vaddvq_f32(vaddq_f32(acc0[v], acc1[v])) + mins[v];
}

/* The four types' one-vector and several-vector dots: BLK(dot_q4_0) and
 * BLK(dot_q4_0_multi), and so on for q4_1, q5_0 and q5_1, from each type's bytes, qs_at,
 * qh_at, has_min and offset (Q4_0: 18-byte blocks, half d and 16 bytes of nibbles,
 * d·xs·Σ(q − 8)·x). */
#define BLK_DOT_32(name, ...)                                                                \
    static float BLK(dot_##name)(const uint8_t *row, const int8_t *x, const float *xs,       \
                                 const float *xsum, int cols)                                \
    {                                                                                        \
        float r;                                                                             \
        BLK(dot_32_multi)(row, x, 0, xs, 0, xsum, 0, cols, 1, &r, 0, __VA_ARGS__);           \
        return r;                                                                            \
    }                                                                                        \
    static void BLK(dot_##name##_multi)(const uint8_t *row, const int8_t *x, size_t x_stride, \
                                        const float *xs, size_t xs_stride, const float *xsum, \
                                        size_t xsum_stride, int cols, int n, float *out,     \
                                        size_t out_stride)                                   \
    {                                                                                        \
        BLK(dot_32_multi)(row, x, x_stride, xs, xs_stride, xsum, xsum_stride, cols, n, out,  \
                          out_stride, __VA_ARGS__);                                          \
    }

BLK_DOT_32(q4_0, 18, 2, -1, 0, 8)
BLK_DOT_32(q4_1, 20, 4, -1, 1, 0)
BLK_DOT_32(q5_0, 22, 6, 2, 0, 16)
BLK_DOT_32(q5_1, 24, 8, 4, 1, 0)
#undef BLK_DOT_32

/* MXFP4: 17-byte blocks (E8M0 e, 16 bytes of e2m1 codes, nibbles as Q4_0's): each code's
 * doubled e2m1 value by a table lookup (ggml_kvalues_mxfp4, |v| <= 12):
 * 2^(e - 128)·xs·Σ v·x. For n vectors at once as dot_32_multi. */
static inline void BLK(dot_mxfp4_multi_n)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                          const float *xs, size_t xs_stride, int cols, int n,
                                          float *out, size_t out_stride)
{
    const int8x16_t table = vld1q_s8(ggml_kvalues_mxfp4);
    float32x4_t acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc0[v] = acc1[v] = vdupq_n_f32(0.0f);
    int blocks = cols / 32;
    for (int b = 0; b < blocks; b++, row += GGML_MXFP4_BYTES) {
        uint8x16_t q = vld1q_u8(row + 1);
        int8x16_t lo = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0f)));
        int8x16_t hi = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
        float e = ggml_e8m0_half_to_f32(row[0]);
        for (int v = 0; v < n; v++)
            BLK(block_32)(&acc0[v], &acc1[v], lo, hi, x + v * x_stride + 32 * b,
                          e * xs[v * xs_stride + b], b);
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = vaddvq_f32(vaddq_f32(acc0[v], acc1[v]));
}

static float BLK(dot_mxfp4)(const uint8_t *row, const int8_t *x, const float *xs,
                            const float *xsum, int cols)
{
    (void)xsum;
    float r;
    BLK(dot_mxfp4_multi_n)(row, x, 0, xs, 0, cols, 1, &r, 0);
    return r;
}

static void BLK(dot_mxfp4_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                 const float *xs, size_t xs_stride, const float *xsum,
                                 size_t xsum_stride, int cols, int n, float *out,
                                 size_t out_stride)
{
    (void)xsum, (void)xsum_stride;
    BLK(dot_mxfp4_multi_n)(row, x, x_stride, xs, xs_stride, cols, n, out, out_stride);
}

/* 8 bytes as fp32, in two halves. */
static inline void BLK(u8x8_f32)(uint8x8_t v, float32x4_t *lo, float32x4_t *hi)
{
    uint16x8_t w = vmovl_u8(v);
    *lo = vcvtq_f32_u32(vmovl_u16(vget_low_u16(w)));
    *hi = vcvtq_f32_u32(vmovl_high_u16(w));
}

/* Q4_K (five 0) and Q5_K: 144- / 176-byte super-blocks (half d, half dmin, 12 bytes of
 * 6-bit scales and mins, [32 bytes qh,] 128 bytes of nibbles: sub-block 2p the low
 * nibbles of bytes 32p.., 2p + 1 the high ones; Q5_K's fifth bits: bit j of qh[l] for
 * value l of sub-block j). Sub-block j is activation group 8b + j:
 * d·sc_j·xs·Σ q·x − dmin·m_j·xsum. For n vectors of one row at once (n <=
 * BLOCKS_MULTI_MAX, table.h's blocks_dot_multi_fn): each super-block's values unpacked
 * and its scales and mins made floats once, then each vector's sums made in the same
 * operations and order (a vector's bits alone or among others; the one-vector dots are
 * n = 1). */
static inline void BLK(dot_k45_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                      const float *xs, size_t xs_stride, const float *xsum,
                                      size_t xsum_stride, int cols, int n, float *out,
                                      size_t out_stride, int five)
{
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int bytes = five ? 176 : 144;
    float32x4_t acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX], accm[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc0[v] = acc1[v] = accm[v] = vdupq_n_f32(0.0f);
    int blocks = cols / 256;
    for (int b = 0; b < blocks; b++, row += bytes) {
        uint32_t u[4];
        k4_scales_mins(u, row + 4);
        uint8x16_t sm = vld1q_u8((const uint8_t *)u);
        float32x4_t sc_lo, sc_hi, mn_lo, mn_hi;
        BLK(u8x8_f32)(vget_low_u8(sm), &sc_lo, &sc_hi);
        BLK(u8x8_f32)(vget_high_u8(sm), &mn_lo, &mn_hi);
        float d = BLK(half)(row), dmin = BLK(half)(row + 2);
        float32x4_t dsc_lo = vmulq_n_f32(sc_lo, d), dsc_hi = vmulq_n_f32(sc_hi, d);
        float32x4_t dmn_lo = vmulq_n_f32(mn_lo, dmin), dmn_hi = vmulq_n_f32(mn_hi, dmin);
        const uint8_t *qs = row + (five ? 48 : 16);
        uint8x16_t qh0 = vdupq_n_u8(0), qh1 = qh0;
        if (five) {
            qh0 = vld1q_u8(row + 16);
            qh1 = vld1q_u8(row + 32);
        }
        int8x16_t w[4][4]; /* per p: l0, l1, h0, h1 */
        for (int p = 0; p < 4; p++) {
            uint8x16_t q0 = vld1q_u8(qs + 32 * p), q1 = vld1q_u8(qs + 32 * p + 16);
            uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4);
            uint8x16_t h0 = vshrq_n_u8(q0, 4), h1 = vshrq_n_u8(q1, 4);
            if (five) {
                uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << 2 * p));
                uint8x16_t bh = vdupq_n_u8((uint8_t)(2u << 2 * p));
                l0 = vorrq_u8(l0, BLK(bit16)(qh0, bl));
                l1 = vorrq_u8(l1, BLK(bit16)(qh1, bl));
                h0 = vorrq_u8(h0, BLK(bit16)(qh0, bh));
                h1 = vorrq_u8(h1, BLK(bit16)(qh1, bh));
            }
            w[p][0] = vreinterpretq_s8_u8(l0);
            w[p][1] = vreinterpretq_s8_u8(l1);
            w[p][2] = vreinterpretq_s8_u8(h0);
            w[p][3] = vreinterpretq_s8_u8(h1);
        }
        for (int v = 0; v < n; v++) {
            const float *xsv = xs + v * xs_stride + 8 * b, *sumv = xsum + v * xsum_stride + 8 * b;
            float f[8];
            vst1q_f32(f, vmulq_f32(dsc_lo, vld1q_f32(xsv)));
            vst1q_f32(f + 4, vmulq_f32(dsc_hi, vld1q_f32(xsv + 4)));
            accm[v] = vfmaq_f32(accm[v], dmn_lo, vld1q_f32(sumv));
            accm[v] = vfmaq_f32(accm[v], dmn_hi, vld1q_f32(sumv + 4));
            const int8_t *xb = x + v * x_stride + 256 * b;
            for (int p = 0; p < 4; p++) {
                const int8_t *xp = xb + 64 * p;
                int32x4_t s0 = BLK_DOT(vdupq_n_s32(0), w[p][0], vld1q_s8(xp));
                s0 = BLK_DOT(s0, w[p][1], vld1q_s8(xp + 16));
                int32x4_t s1 = BLK_DOT(vdupq_n_s32(0), w[p][2], vld1q_s8(xp + 32));
                s1 = BLK_DOT(s1, w[p][3], vld1q_s8(xp + 48));
                acc0[v] = vfmaq_n_f32(acc0[v], vcvtq_f32_s32(s0), f[2 * p]);
                acc1[v] = vfmaq_n_f32(acc1[v], vcvtq_f32_s32(s1), f[2 * p + 1]);
            }
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = vaddvq_f32(vaddq_f32(acc0[v], acc1[v])) - vaddvq_f32(accm[v]);
}

static float BLK(dot_q4_k)(const uint8_t *row, const int8_t *x, const float *xs,
                           const float *xsum, int cols)
{
    float r;
    BLK(dot_k45_multi)(row, x, 0, xs, 0, xsum, 0, cols, 1, &r, 0, 0);
    return r;
}

static float BLK(dot_q5_k)(const uint8_t *row, const int8_t *x, const float *xs,
                           const float *xsum, int cols)
{
    float r;
    BLK(dot_k45_multi)(row, x, 0, xs, 0, xsum, 0, cols, 1, &r, 0, 1);
    return r;
}

static void BLK(dot_q4_k_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                const float *xs, size_t xs_stride, const float *xsum,
                                size_t xsum_stride, int cols, int n, float *out, size_t out_stride)
{
    BLK(dot_k45_multi)(row, x, x_stride, xs, xs_stride, xsum, xsum_stride, cols, n, out, out_stride, 0);
}

static void BLK(dot_q5_k_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                const float *xs, size_t xs_stride, const float *xsum,
                                size_t xsum_stride, int cols, int n, float *out, size_t out_stride)
{
    BLK(dot_k45_multi)(row, x, x_stride, xs, xs_stride, xsum, xsum_stride, cols, n, out, out_stride, 1);
}

/* Q6_K: 210-byte super-blocks (128 bytes ql, 64 qh, 16 int8 scales, half d). In half h,
 * values l, l + 32, l + 64, l + 96 (l < 32) are the low / high nibbles of ql[l] and
 * ql[l + 32] topped with bits 0-1, 2-3, 4-5, 6-7 of qh[l], minus 32: four activation
 * groups (k = 0..3 of v), each two 16-value sub-blocks (i = 0, 1: one register each)
 * with their own scale, applied to the sub-block's int32 lanes. For n vectors of one
 * row at once (n <= BLOCKS_MULTI_MAX): each super-block's values unpacked (less 32)
 * once, then each vector's sums made in the same operations and order (a vector's bits
 * alone or among others; the one-vector dot is n = 1). */
static inline void BLK(dot_q6_k_multi)(const uint8_t *row, const int8_t *x, size_t x_stride,
                                const float *xs, size_t xs_stride, const float *xsum,
                                size_t xsum_stride, int cols, int n, float *out, size_t out_stride)
{
    (void)xsum;
    (void)xsum_stride;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    const int8x16_t k32 = vdupq_n_s8(32);
    float32x4_t acc0[BLOCKS_MULTI_MAX], acc1[BLOCKS_MULTI_MAX];
    for (int v = 0; v < n; v++)
        acc0[v] = acc1[v] = vdupq_n_f32(0.0f);
    int blocks = cols / 256;
    for (int b = 0; b < blocks; b++, row += 210) {
        const int8_t *sc = (const int8_t *)(row + 192);
        float d = BLK(half)(row + 208);
        int8x16_t w[2][2][4]; /* [h][i][k] */
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = row + 64 * h, *qh = row + 128 + 32 * h;
            for (int i = 0; i < 2; i++) {
                uint8x16_t qa = vld1q_u8(ql + 16 * i), qb = vld1q_u8(ql + 32 + 16 * i);
                uint8x16_t hb = vld1q_u8(qh + 16 * i);
                uint8x16_t u[4];
                u[0] = vorrq_u8(vandq_u8(qa, m4), vshlq_n_u8(vandq_u8(hb, m3), 4));
                u[1] = vorrq_u8(vandq_u8(qb, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m3), 4));
                u[2] = vorrq_u8(vshrq_n_u8(qa, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m3), 4));
                u[3] = vorrq_u8(vshrq_n_u8(qb, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4));
                for (int k = 0; k < 4; k++)
                    w[h][i][k] = vsubq_s8(vreinterpretq_s8_u8(u[k]), k32);
            }
        }
        for (int v = 0; v < n; v++) {
            const int8_t *xv = x + v * x_stride;
            const float *xsv = xs + v * xs_stride;
            for (int h = 0; h < 2; h++) {
                const int8_t *xh = xv + 256 * b + 128 * h;
                const int8_t *sh = sc + 8 * h;
                int32x4_t s[4];
                for (int i = 0; i < 2; i++)
                    for (int k = 0; k < 4; k++) {
                        int32x4_t p = BLK_DOT(vdupq_n_s32(0), w[h][i][k], vld1q_s8(xh + 32 * k + 16 * i));
                        s[k] = i ? vmlaq_n_s32(s[k], p, sh[2 * k + i]) : vmulq_n_s32(p, sh[2 * k]);
                    }
                for (int k = 0; k < 4; k++) {
                    float f = d * xsv[8 * b + 4 * h + k];
                    if (k & 1)
                        acc1[v] = vfmaq_n_f32(acc1[v], vcvtq_f32_s32(s[k]), f);
                    else
                        acc0[v] = vfmaq_n_f32(acc0[v], vcvtq_f32_s32(s[k]), f);
                }
            }
        }
    }
    for (int v = 0; v < n; v++)
        out[v * out_stride] = vaddvq_f32(vaddq_f32(acc0[v], acc1[v]));
}

static float BLK(dot_q6_k)(const uint8_t *row, const int8_t *x, const float *xs,
                           const float *xsum, int cols)
{
    float r;
    BLK(dot_q6_k_multi)(row, x, 0, xs, 0, xsum, 0, cols, 1, &r, 0);
    return r;
}
