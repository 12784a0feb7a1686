/* dequant.c — block decoders for the ggml types llmchat reads (see dequant.h).
 *
 * Written from the GGUF / ggml descriptions of the block layouts. Every block type
 * stores a half-precision scale d (and for the "_1" and K types with mins, a second
 * half dmin or m); the K types group 256 values in a super-block whose sub-blocks
 * carry small integer scales; MXFP4 instead stores a power-of-two scale (one E8M0 byte)
 * and 4-bit codes that stand for the e2m1 values (ggml_type.h). The arithmetic is done
 * in fp32 in the reference's order: where it computes (d * sc) * q - (dmin * m), so does
 * this file. Floating point contraction into fused multiply-adds would change the last
 * bit, so it is switched off here.
 *
 * Owns nothing. Does not handle the types it does not list (dequant_supported). */
#include "dequant.h"

#include <string.h>

#include "ggml_type.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- block layouts (all fields little-endian, halves as IEEE binary16 bits) ---- */

typedef struct {
    uint16_t d;
    uint8_t qs[16];     /* value j: low nibble of qs[j]; value j+16: high nibble */
} block_q4_0;

typedef struct {
    uint16_t d, m;
    uint8_t qs[16];
} block_q4_1;

typedef struct {
    uint16_t d;
    uint8_t qh[4];      /* bit j of the little-endian uint32: 5th bit of value j */
    uint8_t qs[16];
} block_q5_0;

typedef struct {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[16];
} block_q5_1;

/* Q2_K: 16 sub-blocks of 16 values, each with a 4-bit scale and a 4-bit min. */
typedef struct {
    uint8_t scales[16]; /* low nibble: scale, high nibble: min, per sub-block */
    uint8_t qs[64];     /* 2-bit values, four per byte */
    uint16_t d, dmin;
} block_q2_k;

/* Q3_K: 16 sub-blocks of 16 values, 6-bit signed scales; 2 low bits + 1 high bit. */
typedef struct {
    uint8_t hmask[32];  /* the high bit of each value: clear means subtract 4 */
    uint8_t qs[64];     /* the 2 low bits, four per byte */
    uint8_t scales[12]; /* 16 6-bit scales, offset by 32 */
    uint16_t d;
} block_q3_k;

/* Q4_K: 8 sub-blocks of 32 values, 6-bit scales and mins. */
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12]; /* 8 6-bit scales and 8 6-bit mins */
    uint8_t qs[128];    /* 4-bit values */
} block_q4_k;

/* Q5_K: Q4_K with a fifth bit per value. */
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} block_q5_k;

/* Q6_K: 16 sub-blocks of 16 values, 8-bit signed scales; 4 low bits + 2 high bits. */
typedef struct {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
} block_q6_k;

_Static_assert(sizeof(block_q4_0) == 18, "Q4_0 block is 18 bytes");
_Static_assert(sizeof(block_q4_1) == 20, "Q4_1 block is 20 bytes");
_Static_assert(sizeof(block_q5_0) == 22, "Q5_0 block is 22 bytes");
_Static_assert(sizeof(block_q5_1) == 24, "Q5_1 block is 24 bytes");
_Static_assert(sizeof(block_q2_k) == 84, "Q2_K block is 84 bytes");
_Static_assert(sizeof(block_q3_k) == 110, "Q3_K block is 110 bytes");
_Static_assert(sizeof(block_q4_k) == 144, "Q4_K block is 144 bytes");
_Static_assert(sizeof(block_q5_k) == 176, "Q5_K block is 176 bytes");
_Static_assert(sizeof(block_q6_k) == 210, "Q6_K block is 210 bytes");

static float half(uint16_t h)
{
    return ggml_fp16_to_f32(h);
}

/* ---- the 32-value block types: out (32) ---- */

static void block_to_f32_q4_0(const void *src, float *out)
{
    block_q4_0 b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d);
    for (int j = 0; j < 16; j++) {
        out[j] = (float)((b.qs[j] & 0x0f) - 8) * d;
        out[j + 16] = (float)((b.qs[j] >> 4) - 8) * d;
    }
}

static void block_to_f32_q4_1(const void *src, float *out)
{
    block_q4_1 b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d), m = half(b.m);
    for (int j = 0; j < 16; j++) {
        out[j] = (float)(b.qs[j] & 0x0f) * d + m;
        out[j + 16] = (float)(b.qs[j] >> 4) * d + m;
    }
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void block_to_f32_q5_0(const void *src, float *out)
{
    block_q5_0 b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d);
    uint32_t high = le32(b.qh);
    for (int j = 0; j < 16; j++) {
        int lo = (b.qs[j] & 0x0f) | (int)((high >> j) & 1) << 4;
        int hi = (b.qs[j] >> 4) | (int)((high >> (j + 16)) & 1) << 4;
        out[j] = (float)(lo - 16) * d;
        out[j + 16] = (float)(hi - 16) * d;
    }
}

static void block_to_f32_q5_1(const void *src, float *out)
{
    block_q5_1 b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d), m = half(b.m);
    uint32_t high = le32(b.qh);
    for (int j = 0; j < 16; j++) {
        int lo = (b.qs[j] & 0x0f) | (int)((high >> j) & 1) << 4;
        int hi = (b.qs[j] >> 4) | (int)((high >> (j + 16)) & 1) << 4;
        out[j] = (float)lo * d + m;
        out[j + 16] = (float)hi * d + m;
    }
}

/* MXFP4: e, then 16 bytes of e2m1 codes; kvalue * d as the reference computes it (the
 * int8 made fp32, times d). */
static void block_to_f32_mxfp4(const void *src, float *out)
{
    const uint8_t *b = src;
    float d = ggml_e8m0_half_to_f32(b[0]);
    for (int j = 0; j < 16; j++) {
        out[j] = (float)ggml_kvalues_mxfp4[b[1 + j] & 0x0f] * d;
        out[j + 16] = (float)ggml_kvalues_mxfp4[b[1 + j] >> 4] * d;
    }
}

static void block_to_f32_q8_0(const void *src, float *out)
{
    ggml_block_q8_0 b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d);
    for (int j = 0; j < 32; j++)
        out[j] = (float)b.qs[j] * d;
}

/* ---- the K types: out (256) ----
 *
 * The 2-bit and 3-bit types store their values in 32-byte runs: byte l of a run holds
 * value l of four consecutive 32-value stretches, at bits 0-1, 2-3, 4-5, 6-7. Each
 * stretch is two sub-blocks of 16 values with their own scales. */

static void block_to_f32_q2_k(const void *src, float *out)
{
    block_q2_k b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d), dmin = half(b.dmin);
    int sub = 0;
    for (int run = 0; run < 2; run++) {
        const uint8_t *q = b.qs + 32 * run;
        for (int shift = 0; shift < 8; shift += 2) {
            for (int part = 0; part < 2; part++, sub++) {
                float dl = d * (float)(b.scales[sub] & 0x0f);
                float ml = dmin * (float)(b.scales[sub] >> 4);
                for (int l = 0; l < 16; l++)
                    *out++ = dl * (float)((q[16 * part + l] >> shift) & 3) - ml;
            }
        }
    }
}

/* Scale i (0..15) of a Q3_K block: 4 low bits from the first 8 bytes (low nibbles
 * for i < 8, high nibbles after), 2 high bits from bytes 8..11 (byte 8 + i % 4, at
 * bit 2 * (i / 4)); stored with an offset of 32. */
static int q3_k_scale(const uint8_t *s, int i)
{
    int low = i < 8 ? s[i] & 0x0f : s[i - 8] >> 4;
    int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

static void block_to_f32_q3_k(const void *src, float *out)
{
    block_q3_k b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d);
    int sub = 0;
    uint8_t bit = 1; /* the hmask bit of the current stretch */
    for (int run = 0; run < 2; run++) {
        const uint8_t *q = b.qs + 32 * run;
        for (int shift = 0; shift < 8; shift += 2, bit = (uint8_t)(bit << 1)) {
            for (int part = 0; part < 2; part++, sub++) {
                float dl = d * (float)q3_k_scale(b.scales, sub);
                for (int l = 0; l < 16; l++) {
                    int k = 16 * part + l;
                    int v = ((q[k] >> shift) & 3) - ((b.hmask[k] & bit) ? 0 : 4);
                    *out++ = dl * (float)v;
                }
            }
        }
    }
}

/* Scale and min of sub-block j (0..7) of a Q4_K / Q5_K block, 6 bits each in 12
 * bytes: for j < 4 the low 6 bits of bytes j (scale) and j + 4 (min); for j >= 4 a
 * nibble of byte j + 4 (low: scale, high: min) topped with the 2 spare high bits of
 * bytes j - 4 (scale) and j (min). */
static void k4_scale_min(const uint8_t *s, int j, int *scale, int *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4;
        *min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K and Q5_K store 64 values per 32 bytes of qs: low nibbles are sub-block 2i,
 * high nibbles sub-block 2i + 1. Q5_K's fifth bits (qh, NULL for Q4_K): bits 2i and
 * 2i + 1 of qh[l]. */
static void k_4_5_to_f32(uint16_t d16, uint16_t dmin16, const uint8_t *scales, const uint8_t *qs,
                         const uint8_t *qh, float *out)
{
    float d = half(d16), dmin = half(dmin16);
    for (int pair = 0; pair < 4; pair++) {
        const uint8_t *q = qs + 32 * pair;
        uint8_t bit_lo = (uint8_t)(1u << (2 * pair)), bit_hi = (uint8_t)(2u << (2 * pair));
        int sc, m;
        k4_scale_min(scales, 2 * pair, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        k4_scale_min(scales, 2 * pair + 1, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        for (int l = 0; l < 32; l++)
            *out++ = d1 * (float)((q[l] & 0x0f) + (qh && (qh[l] & bit_lo) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++)
            *out++ = d2 * (float)((q[l] >> 4) + (qh && (qh[l] & bit_hi) ? 16 : 0)) - m2;
    }
}

static void block_to_f32_q4_k(const void *src, float *out)
{
    block_q4_k b;
    memcpy(&b, src, sizeof b);
    k_4_5_to_f32(b.d, b.dmin, b.scales, b.qs, NULL, out);
}

static void block_to_f32_q5_k(const void *src, float *out)
{
    block_q5_k b;
    memcpy(&b, src, sizeof b);
    k_4_5_to_f32(b.d, b.dmin, b.scales, b.qs, b.qh, out);
}

/* Q6_K: each half of 128 values uses 64 bytes of ql and 32 of qh. For l < 32,
 * values l, l + 32, l + 64, l + 96 of the half take the low / high nibbles of
 * ql[l] and ql[l + 32], and bits 0-1, 2-3, 4-5, 6-7 of qh[l]; values are offset by
 * 32, and each 16 values have a scale. */
static void block_to_f32_q6_k(const void *src, float *out)
{
    block_q6_k b;
    memcpy(&b, src, sizeof b);
    float d = half(b.d);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b.ql + 64 * h, *qh = b.qh + 32 * h;
        const int8_t *sc = b.scales + 8 * h;
        float *y = out + 128 * h;
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
    }
}

/* ---- the scalar types: one value per "block" ---- */

static void block_to_f32_f32(const void *src, float *out)
{
    memcpy(out, src, sizeof *out);
}

static void block_to_f32_f16(const void *src, float *out)
{
    uint16_t h;
    memcpy(&h, src, sizeof h);
    *out = ggml_fp16_to_f32(h);
}

static void block_to_f32_bf16(const void *src, float *out)
{
    uint16_t h;
    memcpy(&h, src, sizeof h);
    *out = ggml_bf16_to_f32(h);
}

typedef void (*block_fn)(const void *src, float *out);

static block_fn decoder(uint32_t type)
{
    switch (type) {
    case GGML_TYPE_F32: return block_to_f32_f32;
    case GGML_TYPE_F16: return block_to_f32_f16;
    case GGML_TYPE_BF16: return block_to_f32_bf16;
    case GGML_TYPE_Q4_0: return block_to_f32_q4_0;
    case GGML_TYPE_Q4_1: return block_to_f32_q4_1;
    case GGML_TYPE_Q5_0: return block_to_f32_q5_0;
    case GGML_TYPE_Q5_1: return block_to_f32_q5_1;
    case GGML_TYPE_Q8_0: return block_to_f32_q8_0;
    case GGML_TYPE_MXFP4: return block_to_f32_mxfp4;
    case GGML_TYPE_Q2_K: return block_to_f32_q2_k;
    case GGML_TYPE_Q3_K: return block_to_f32_q3_k;
    case GGML_TYPE_Q4_K: return block_to_f32_q4_k;
    case GGML_TYPE_Q5_K: return block_to_f32_q5_k;
    case GGML_TYPE_Q6_K: return block_to_f32_q6_k;
    }
    return NULL;
}

bool dequant_supported(uint32_t type)
{
    return decoder(type) != NULL;
}

void dequant_range(uint32_t type, const void *data, uint64_t first, float *out, size_t n)
{
    const ggml_type_info *info = ggml_type_get(type);
    block_fn fn = decoder(type);
    const unsigned char *base = data;
    uint64_t block = info->block;
    float tmp[GGML_BLOCK_K];

    uint64_t b = first / block;
    uint64_t skip = first % block; /* values of the first block before the range */
    while (n > 0) {
        const unsigned char *src = base + b * info->bytes;
        if (skip == 0 && n >= block) {
            fn(src, out); /* a whole block straight into the output */
            out += block;
            n -= block;
        } else {
            fn(src, tmp);
            size_t take = block - skip < n ? (size_t)(block - skip) : n;
            memcpy(out, tmp + skip, take * sizeof *out);
            out += take;
            n -= take;
            skip = 0;
        }
        b++;
    }
}
