/* kernels/scalar-blocks.c — the plain-C dot products of one row of ggml blocks (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4), used in place from a GGUF file, with one
 * activation vector quantized to Q8_0 in groups of 32 (a qbatch vector): the reference
 * every SIMD block kernel is tested against, and itself tested against "decode the row
 * (dequant.h), then an fp32 dot product".
 *
 * Activations: int8 x with one fp32 scale xs[g] per 32 values, and for the types with
 * mins xsum[g] = xs[g] * Σ x over group g (the SIMD kernels also take the offsets of
 * Q4_0, Q5_0 and Q6_K away with such sums; here the values are made signed first). Every
 * block type's sub-blocks are 16 or 32
 * values that fall inside one activation group, so each group's integer sum Σ w·x is
 * exact in int32, then scaled in fp32. (llama.cpp quantizes activations to Q8_K, one
 * scale per 256 values, for the K types; a scale per 32 keeps the activations as exact
 * as the Q8_0 weights' products and lets every type share one quantized vector.)
 *
 * Block layouts: docs/formats.md and dequant.c. Owns nothing. */
#include "table.h"

#include <string.h>

#include "ggml_type.h"

static inline float half_at(const uint8_t *p)
{
    return ggml_fp16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static uint32_t le32_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Σ q[i] * x[i] over n values, q unpacked to int. */
static int32_t idot(const int *q, const int8_t *x, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++)
        s += q[i] * x[i];
    return s;
}

/* The 32 values of a 4-bit block's 16 bytes (low nibbles first), plus `offset`, with
 * fifth bits from qh (NULL: none). */
static void unpack_32(int *q, const uint8_t *qs, const uint8_t *qh, int offset)
{
    uint32_t h = qh ? le32_at(qh) : 0;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0f) + (int)((h >> j & 1) << 4) + offset;
        q[j + 16] = (qs[j] >> 4) + (int)((h >> (j + 16) & 1) << 4) + offset;
    }
}

float kernels_scalar_dot_q4_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    (void)xsum;
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 32; b++, row += 18) {
        unpack_32(q, row + 2, NULL, -8);
        sum += half_at(row) * xs[b] * (float)idot(q, x + 32 * b, 32);
    }
    return sum;
}

float kernels_scalar_dot_q4_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 32; b++, row += 20) {
        unpack_32(q, row + 4, NULL, 0);
        sum += half_at(row) * xs[b] * (float)idot(q, x + 32 * b, 32) + half_at(row + 2) * xsum[b];
    }
    return sum;
}

float kernels_scalar_dot_q5_0(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    (void)xsum;
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 32; b++, row += 22) {
        unpack_32(q, row + 6, row + 2, -16);
        sum += half_at(row) * xs[b] * (float)idot(q, x + 32 * b, 32);
    }
    return sum;
}

float kernels_scalar_dot_q5_1(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 32; b++, row += 24) {
        unpack_32(q, row + 8, row + 4, 0);
        sum += half_at(row) * xs[b] * (float)idot(q, x + 32 * b, 32) + half_at(row + 2) * xsum[b];
    }
    return sum;
}

/* The 32 values of an MXFP4 block's 16 bytes of e2m1 codes (low nibbles first) as
 * their doubled values (ggml_kvalues_mxfp4: integers in [-12, 12]). */
static void unpack_mxfp4(int *q, const uint8_t *qs)
{
    for (int j = 0; j < 16; j++) {
        q[j] = ggml_kvalues_mxfp4[qs[j] & 0x0f];
        q[j + 16] = ggml_kvalues_mxfp4[qs[j] >> 4];
    }
}

/* MXFP4: 17-byte blocks (E8M0 e, 16 bytes of codes): 2^(e - 128)·xs·Σ kvalue·x. */
float kernels_scalar_dot_mxfp4(const uint8_t *row, const int8_t *x, const float *xs,
                               const float *xsum, int cols)
{
    (void)xsum;
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 32; b++, row += GGML_MXFP4_BYTES) {
        unpack_mxfp4(q, row + 1);
        sum += ggml_e8m0_half_to_f32(row[0]) * xs[b] * (float)idot(q, x + 32 * b, 32);
    }
    return sum;
}

void kernels_k4_scale_min(const uint8_t *s, int j, int *scale, int *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4;
        *min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K (qh NULL) and Q5_K: super-blocks of 256 values (d, dmin, 12 bytes of 6-bit
 * scales and mins, [32 bytes qh,] 128 bytes of nibbles: sub-block 2p the low nibbles
 * of qs[32p..32p+31], 2p + 1 the high ones; fifth bits 2p and 2p + 1 of qh[l]).
 * Sub-block j is group 8b + j of x: d·sc·xs·Σqx − dmin·m·xsum. */
static float dot_k45(const uint8_t *row, const int8_t *x, const float *xs, const float *xsum,
                     int cols, bool five)
{
    const size_t bytes = five ? 176 : 144;
    float sum = 0.0f;
    int q[32];
    for (int b = 0; b < cols / 256; b++, row += bytes) {
        float d = half_at(row), dmin = half_at(row + 2);
        const uint8_t *scales = row + 4, *qh = five ? row + 16 : NULL;
        const uint8_t *qs = row + (five ? 48 : 16);
        for (int j = 0; j < 8; j++) {
            int sc, m, g = 8 * b + j;
            kernels_k4_scale_min(scales, j, &sc, &m);
            const uint8_t *p = qs + 32 * (j / 2);
            for (int l = 0; l < 32; l++)
                q[l] = (j & 1 ? p[l] >> 4 : p[l] & 0x0f) + (qh && (qh[l] >> j & 1) ? 16 : 0);
            sum += d * (float)sc * xs[g] * (float)idot(q, x + 32 * g, 32) -
                   dmin * (float)m * xsum[g];
        }
    }
    return sum;
}

float kernels_scalar_dot_q4_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    return dot_k45(row, x, xs, xsum, cols, false);
}

float kernels_scalar_dot_q5_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    return dot_k45(row, x, xs, xsum, cols, true);
}

/* Q6_K: super-blocks of 256 values (128 bytes ql, 64 qh, 16 int8 scales, d); value v of
 * a half h (128 values) takes ql and qh as dequant.c reads them, minus 32, and scale
 * v / 16 + 8h. Group g's two 16-value sub-blocks are summed in int32 with their
 * scales, then scaled by d·xs. */
float kernels_scalar_dot_q6_k(const uint8_t *row, const int8_t *x, const float *xs,
                              const float *xsum, int cols)
{
    (void)xsum;
    float sum = 0.0f;
    int q[256];
    for (int b = 0; b < cols / 256; b++, row += 210) {
        const int8_t *sc = (const int8_t *)(row + 192);
        float d = half_at(row + 208);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = row + 64 * h, *qh = row + 128 + 32 * h;
            int *y = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                y[l] = ((ql[l] & 0x0f) | (qh[l] & 3) << 4) - 32;
                y[l + 32] = ((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32;
                y[l + 64] = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
                y[l + 96] = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
            }
        }
        for (int j = 0; j < 8; j++) {
            int g = 8 * b + j;
            int32_t s = sc[2 * j] * idot(q + 32 * j, x + 32 * g, 16) +
                        sc[2 * j + 1] * idot(q + 32 * j + 16, x + 32 * g + 16, 16);
            sum += d * xs[g] * (float)s;
        }
    }
    return sum;
}

/* ---- a row as exact Q8_0 (prefill) ---- */

/* Loops below have fixed trip counts and no branches, so that the compiler vectorizes
 * them: prefill decodes every row once per batch, and the GEMM kernel is fast enough
 * for this decoding to matter. */
static void unpack_k45(const uint8_t *restrict row, int cols, bool five, int8_t *restrict q,
                       float *restrict scale, float *restrict min)
{
    const size_t bytes = five ? 176 : 144;
    for (int b = 0; b < cols / 256; b++, row += bytes) {
        float d = half_at(row), dmin = half_at(row + 2);
        const uint8_t *qh = row + 16, *qs = row + (five ? 48 : 16);
        int8_t *y = q + 256 * b;
        for (int p = 0; p < 4; p++) {
            const uint8_t *c = qs + 32 * p;
            int8_t *lo = y + 64 * p, *hi = lo + 32;
            for (int l = 0; l < 32; l++) {
                lo[l] = (int8_t)(c[l] & 0x0f);
                hi[l] = (int8_t)(c[l] >> 4);
            }
            if (five)
                for (int l = 0; l < 32; l++) {
                    lo[l] = (int8_t)(lo[l] | (qh[l] >> (2 * p) & 1) << 4);
                    hi[l] = (int8_t)(hi[l] | (qh[l] >> (2 * p + 1) & 1) << 4);
                }
        }
        for (int j = 0; j < 8; j++) {
            int sc, m;
            kernels_k4_scale_min(row + 4, j, &sc, &m);
            scale[8 * b + j] = d * (float)sc;
            min[8 * b + j] = -(dmin * (float)m);
        }
    }
}

/* Q6_K's groups hold two 16-value sub-blocks with their own scales: part 0 keeps the
 * first sub-block of every group (zeros in the second), part 1 the second;
 * KERNELS_UNPACK_HALVES both, with both scales (two a group). */
static void unpack_q6_k(const uint8_t *restrict row, int cols, int part, int8_t *restrict q,
                        float *restrict scale)
{
    for (int b = 0; b < cols / 256; b++, row += 210) {
        const int8_t *sc = (const int8_t *)(row + 192);
        float d = half_at(row + 208);
        int8_t *y = q + 256 * b;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = row + 64 * h, *qh = row + 128 + 32 * h;
            int8_t *z = y + 128 * h;
            for (int l = 0; l < 32; l++) {
                z[l] = (int8_t)(((ql[l] & 0x0f) | (qh[l] & 3) << 4) - 32);
                z[l + 32] = (int8_t)(((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32);
                z[l + 64] = (int8_t)(((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32);
                z[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32);
            }
        }
        if (part == KERNELS_UNPACK_HALVES)
            for (int j = 0; j < 16; j++)
                scale[16 * b + j] = d * (float)sc[j];
        else
            for (int j = 0; j < 8; j++) {
                memset(y + 32 * j + (part ? 0 : 16), 0, 16);
                scale[8 * b + j] = d * (float)sc[2 * j + part];
            }
    }
}

int kernels_unpack_parts(int btype)
{
    return btype == GGML_TYPE_Q6_K ? 2 : 1;
}

bool kernels_unpacks_nibbles(int btype)
{
    return btype == GGML_TYPE_Q4_K || btype == GGML_TYPE_Q4_1;
}

void kernels_unpack_row(int btype, const uint8_t *row, int cols, int part, int8_t *q,
                        float *scale, float *min)
{
    const ggml_type_info *info = ggml_type_get((uint32_t)btype);
    int v[32];
    switch (btype) {
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K:
        unpack_k45(row, cols, btype == GGML_TYPE_Q5_K, q, scale, min);
        return;
    case GGML_TYPE_Q6_K:
        unpack_q6_k(row, cols, part, q, scale);
        return;
    default:
        break;
    }
    /* the 32-value types: Q4_0, Q4_1, Q5_0, Q5_1, MXFP4 (its scale a power of two) */
    bool has_min = btype == GGML_TYPE_Q4_1 || btype == GGML_TYPE_Q5_1;
    for (int b = 0; b < cols / 32; b++, row += info->bytes) {
        switch (btype) {
        case GGML_TYPE_Q4_0: unpack_32(v, row + 2, NULL, -8); break;
        case GGML_TYPE_Q4_1: unpack_32(v, row + 4, NULL, 0); break;
        case GGML_TYPE_Q5_0: unpack_32(v, row + 6, row + 2, -16); break;
        case GGML_TYPE_MXFP4: unpack_mxfp4(v, row + 1); break;
        default: unpack_32(v, row + 8, row + 4, 0); break;
        }
        for (int i = 0; i < 32; i++)
            q[32 * b + i] = (int8_t)v[i];
        scale[b] = btype == GGML_TYPE_MXFP4 ? ggml_e8m0_half_to_f32(row[0]) : half_at(row);
        if (has_min)
            min[b] = half_at(row + 2);
    }
}
