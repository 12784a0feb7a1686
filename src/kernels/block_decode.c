/* block_decode.c — a weight block's fields for display, and one activation group's
 * part of a row's dot product in the reference kernels' arithmetic (see
 * block_decode.h).
 *
 * The layouts are ggml's (docs/formats.md, dequant.c): every value is rebuilt here
 * from the fields this file shows, with dequant.c's operations in its order, so that
 * tests can hold the fields to llama.cpp's values. Floating-point contraction is off,
 * as in dequant.c. Owns nothing. */
#include "block_decode.h"

#include <math.h>
#include <string.h>

#include "ggml_type.h"
#include "table.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static uint16_t u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The scale d at p (a half), and optionally the min m after it. */
static void set_d(block_decoded *o, const uint8_t *d, const uint8_t *m)
{
    o->has_d = true;
    o->d_bits = u16(d);
    o->d = ggml_fp16_to_f32((uint16_t)o->d_bits);
    if (m) {
        o->has_min = true;
        o->min_bits = u16(m);
        o->dmin = ggml_fp16_to_f32((uint16_t)o->min_bits);
    }
}

/* ---- the scalar types: a run of BLOCK_RUN values ---- */

static void decode_run(uint32_t type, const uint8_t *p, block_decoded *o)
{
    o->n = BLOCK_RUN;
    o->n_sub = 1;
    o->sub_len = BLOCK_RUN;
    for (int i = 0; i < BLOCK_RUN; i++) {
        if (type == GGML_TYPE_F32) {
            o->raw[i] = u32(p + 4 * i);
            memcpy(&o->value[i], &o->raw[i], sizeof(float));
        } else {
            o->raw[i] = u16(p + 2 * i);
            o->value[i] = type == GGML_TYPE_F16 ? ggml_fp16_to_f32((uint16_t)o->raw[i])
                                                : ggml_bf16_to_f32((uint16_t)o->raw[i]);
        }
    }
    o->formula = type == GGML_TYPE_F32 ? "the value as stored (IEEE single)"
                 : type == GGML_TYPE_F16 ? "the value as stored (IEEE half)"
                                         : "the value as stored (bfloat16: a single's top 16 bits)";
    o->packing = type == GGML_TYPE_F32 ? "4 bytes a value" : "2 bytes a value";
}

/* ---- the 32-value types ---- */

/* Q4_0, Q4_1, Q5_0, Q5_1: value j low nibble of qs[j], value j + 16 the high one;
 * the fifth bit of value j is bit j of qh (little-endian uint32). */
static void decode_small(uint32_t type, const uint8_t *p, block_decoded *o)
{
    bool min = type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1;
    bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1;
    set_d(o, p, min ? p + 2 : NULL);
    const uint8_t *qh = p + (min ? 4 : 2), *qs = qh + (five ? 4 : 0);
    uint32_t high = five ? u32(qh) : 0;
    o->n = 32;
    o->n_sub = 1;
    o->sub_len = 32;
    o->low_bits = 4;
    o->high_bits = five ? 1 : 0;
    o->offset = min ? 0 : five ? 16 : 8;
    for (int j = 0; j < 32; j++) {
        int low = j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4;
        o->high[j] = (int)((high >> j) & 1);
        o->quant[j] = low | o->high[j] << 4;
        if (min)
            o->value[j] = (float)o->quant[j] * o->d + o->dmin;
        else
            o->value[j] = (float)(o->quant[j] - o->offset) * o->d;
    }
    o->formula = min ? "d * q + m" : five ? "d * (q - 16)" : "d * (q - 8)";
    o->packing = five ? "qs[j] low nibble: value j, high nibble: value j+16; bit j of qh: "
                        "value j's fifth bit"
                      : "qs[j] low nibble: value j, high nibble: value j+16";
}

/* MXFP4: the E8M0 exponent e, then 16 bytes of e2m1 codes packed as Q4_0's nibbles;
 * value = kvalue[q] * 2^(e - 128) (dequant.c's operations). */
static void decode_mxfp4(const uint8_t *p, block_decoded *o)
{
    o->has_d = o->d_e8m0 = true;
    o->d_bits = p[0];
    o->d = ggml_e8m0_half_to_f32(p[0]);
    o->n = 32;
    o->n_sub = 1;
    o->sub_len = 32;
    o->low_bits = 4;
    o->levels = ggml_kvalues_mxfp4;
    for (int j = 0; j < 32; j++) {
        o->quant[j] = j < 16 ? p[1 + j] & 0x0f : p[1 + j - 16] >> 4;
        o->value[j] = (float)o->levels[o->quant[j]] * o->d;
    }
    o->formula = "kvalue[q] * d, d = 2^(e - 128); kvalue: the e2m1 value doubled (0, 1, 2, 3, "
                 "4, 6, 8, 12; q >= 8 the negatives)";
    o->packing = "e (E8M0) first; qs[j] low nibble: value j, high nibble: value j+16; bit 3 of "
                 "a code: its sign";
}

static void decode_q8_0(const uint8_t *p, block_decoded *o)
{
    set_d(o, p, NULL);
    o->n = 32;
    o->n_sub = 1;
    o->sub_len = 32;
    o->low_bits = 8;
    for (int j = 0; j < 32; j++) {
        o->quant[j] = (int8_t)p[2 + j];
        o->value[j] = (float)o->quant[j] * o->d;
    }
    o->formula = "d * q";
    o->packing = "32 signed bytes after d";
}

/* ---- the K types: 256 values ---- */

/* Q2_K: 16 sub-blocks of 16, a 4-bit scale and min each (scales[16], then qs[64],
 * d, dmin); 2-bit values in two runs of 32 bytes, four stretches of 32 values a run. */
static void decode_q2_k(const uint8_t *p, block_decoded *o)
{
    set_d(o, p + 80, p + 82);
    o->n = 256;
    o->n_sub = 16;
    o->sub_len = 16;
    o->sub_scales = o->sub_mins = true;
    o->scale_bits = 4;
    o->low_bits = 2;
    for (int s = 0; s < 16; s++) {
        o->scale[s] = p[s] & 0x0f;
        o->min[s] = p[s] >> 4;
    }
    int i = 0;
    for (int run = 0; run < 2; run++)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; part++) {
                int s = i / 16;
                float dl = o->d * (float)o->scale[s], ml = o->dmin * (float)o->min[s];
                for (int l = 0; l < 16; l++, i++) {
                    o->quant[i] = (p[16 + 32 * run + 16 * part + l] >> shift) & 3;
                    o->value[i] = dl * (float)o->quant[i] - ml;
                }
            }
    o->formula = "d*sc * q - dmin*m";
    o->packing = "qs: byte l of a 32-byte run holds value l of four 32-value stretches "
                 "(bits 0-1, 2-3, 4-5, 6-7)";
}

/* Q3_K scale i (hmask[32], qs[64], scales[12], d): 4 low bits from bytes 0..7, 2 high
 * bits from bytes 8..11, stored plus 32. */
static int q3_scale(const uint8_t *s, int i)
{
    int low = i < 8 ? s[i] & 0x0f : s[i - 8] >> 4;
    int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

static void decode_q3_k(const uint8_t *p, block_decoded *o)
{
    set_d(o, p + 108, NULL);
    o->n = 256;
    o->n_sub = 16;
    o->sub_len = 16;
    o->sub_scales = true;
    o->scale_bits = 6;
    o->low_bits = 2;
    o->high_bits = 1;
    o->offset = 4;
    for (int s = 0; s < 16; s++)
        o->scale[s] = q3_scale(p + 96, s);
    int i = 0;
    uint8_t bit = 1;
    for (int run = 0; run < 2; run++)
        for (int shift = 0; shift < 8; shift += 2, bit = (uint8_t)(bit << 1))
            for (int part = 0; part < 2; part++) {
                float dl = o->d * (float)o->scale[i / 16];
                for (int l = 0; l < 16; l++, i++) {
                    int k = 16 * part + l;
                    o->high[i] = (p[k] & bit) ? 1 : 0;
                    o->quant[i] = ((p[32 + 32 * run + k] >> shift) & 3) | o->high[i] << 2;
                    o->value[i] = dl * (float)(o->quant[i] - 4);
                }
            }
    o->formula = "d*sc * (q - 4)  (q's third bit from hmask: clear means minus 4)";
    o->packing = "qs as Q2_K's; hmask[l] bit k: the high bit of value l of stretch k";
}

/* Q4_K / Q5_K scale and min of sub-block j: 6 bits each in 12 bytes. */
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

/* Q4_K (d, dmin, scales[12], qs[128]) and Q5_K (the same with qh[32] before qs):
 * sub-block 2p the low nibbles of qs[32p..32p+31], 2p+1 the high ones; fifth bits
 * 2p and 2p+1 of qh[l]. */
static void decode_k45(const uint8_t *p, bool five, block_decoded *o)
{
    set_d(o, p, p + 2);
    const uint8_t *qh = p + 16, *qs = p + (five ? 48 : 16);
    o->n = 256;
    o->n_sub = 8;
    o->sub_len = 32;
    o->sub_scales = o->sub_mins = true;
    o->scale_bits = 6;
    o->low_bits = 4;
    o->high_bits = five ? 1 : 0;
    for (int j = 0; j < 8; j++) {
        k4_scale_min(p + 4, j, &o->scale[j], &o->min[j]);
        float dl = o->d * (float)o->scale[j], ml = o->dmin * (float)o->min[j];
        const uint8_t *q = qs + 32 * (j / 2);
        for (int l = 0; l < 32; l++) {
            int i = 32 * j + l;
            o->high[i] = five ? (qh[l] >> j) & 1 : 0;
            o->quant[i] = (j & 1 ? q[l] >> 4 : q[l] & 0x0f) | o->high[i] << 4;
            o->value[i] = dl * (float)o->quant[i] - ml;
        }
    }
    o->formula = "d*sc * q - dmin*m";
    o->packing = five ? "qs[32p+l]: low nibble value l of sub-block 2p, high nibble of 2p+1; "
                        "qh[l] bit j: value l's fifth bit in sub-block j"
                      : "qs[32p+l]: low nibble value l of sub-block 2p, high nibble of 2p+1";
}

/* Q6_K (ql[128], qh[64], scales[16] int8, d): each half of 128 values takes 64 bytes
 * of ql and 32 of qh; values l, l+32, l+64, l+96 of a half: the low / high nibbles of
 * ql[l] and ql[l+32] and bits 0-1, 2-3, 4-5, 6-7 of qh[l]; offset 32; a scale per 16. */
static void decode_q6_k(const uint8_t *p, block_decoded *o)
{
    set_d(o, p + 208, NULL);
    o->n = 256;
    o->n_sub = 16;
    o->sub_len = 16;
    o->sub_scales = true;
    o->scale_bits = 8;
    o->low_bits = 4;
    o->high_bits = 2;
    o->offset = 32;
    for (int s = 0; s < 16; s++)
        o->scale[s] = (int8_t)p[192 + s];
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = p + 64 * h, *qh = p + 128 + 32 * h;
        for (int l = 0; l < 32; l++) {
            int base = 128 * h + l;
            int low[4] = {ql[l] & 0x0f, ql[l + 32] & 0x0f, ql[l] >> 4, ql[l + 32] >> 4};
            for (int k = 0; k < 4; k++) {
                int i = base + 32 * k;
                o->high[i] = (qh[l] >> (2 * k)) & 3;
                o->quant[i] = low[k] | o->high[i] << 4;
                o->value[i] = o->d * (float)o->scale[i / 16] * (float)(o->quant[i] - 32);
            }
        }
    }
    o->formula = "d * sc * (q - 32)";
    o->packing = "ql: low nibbles (values l, l+32 of a half in ql[l], ql[l+32]; l+64, l+96 "
                 "their high nibbles); qh[l]: the 2 high bits of l, l+32, l+64, l+96";
}

static const char *type_name(uint32_t type)
{
    return type == BLOCK_Q8_ROWS ? "Q8_0 (llmchat's rows, fp32 scale)" : ggml_type_name(type);
}

bool block_decode_supported(uint32_t type)
{
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K:
    case GGML_TYPE_Q6_K: case GGML_TYPE_MXFP4:
        return true;
    default:
        return false;
    }
}

int block_decode_values(uint32_t type)
{
    if (!block_decode_supported(type))
        return 0;
    const ggml_type_info *info = ggml_type_get(type);
    return info->block == 1 ? BLOCK_RUN : (int)info->block;
}

size_t block_decode_bytes(uint32_t type)
{
    if (!block_decode_supported(type))
        return 0;
    const ggml_type_info *info = ggml_type_get(type);
    return info->block == 1 ? (size_t)BLOCK_RUN * info->bytes : info->bytes;
}

void block_decode(uint32_t type, const void *block, block_decoded *out)
{
    const uint8_t *p = block;
    memset(out, 0, sizeof *out);
    out->type = type;
    out->name = type_name(type);
    out->d = out->dmin = NAN;
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: decode_run(type, p, out); break;
    case GGML_TYPE_Q8_0: decode_q8_0(p, out); break;
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
        decode_small(type, p, out);
        break;
    case GGML_TYPE_Q2_K: decode_q2_k(p, out); break;
    case GGML_TYPE_Q3_K: decode_q3_k(p, out); break;
    case GGML_TYPE_Q4_K: decode_k45(p, false, out); break;
    case GGML_TYPE_Q5_K: decode_k45(p, true, out); break;
    case GGML_TYPE_Q6_K: decode_q6_k(p, out); break;
    case GGML_TYPE_MXFP4: decode_mxfp4(p, out); break;
    default: break;
    }
}

void block_decode_q8_rows(const int8_t *q, float scale, int n, block_decoded *out)
{
    memset(out, 0, sizeof *out);
    out->type = BLOCK_Q8_ROWS;
    out->name = type_name(BLOCK_Q8_ROWS);
    n = n > BLOCK_VALUES_MAX ? BLOCK_VALUES_MAX : n;
    out->n = n;
    out->n_sub = 1;
    out->sub_len = n;
    out->has_d = true;
    out->d = scale;
    memcpy(&out->d_bits, &scale, sizeof scale);
    out->dmin = NAN;
    out->low_bits = 8;
    for (int j = 0; j < n; j++) {
        out->quant[j] = q[j];
        out->value[j] = (float)q[j] * scale;
    }
    out->formula = "d * q";
    out->packing = "the row's int8 values together, its fp32 scales apart (one a group)";
}

/* ---- one activation group's part of a row's dot product ---- */

int block_group_sums(const block_decoded *b, int g, const int8_t *xq, int32_t sums[2])
{
    if (b->low_bits == 0)
        return 0;
    int len = b->type == BLOCK_Q8_ROWS ? b->n : 32, first = 32 * g;
    if (first + len > b->n)
        return 0;
    int per = b->sub_len < len ? b->sub_len : len, n = len / per;
    for (int k = 0; k < n && k < 2; k++) {
        int32_t s = 0;
        for (int i = 0; i < per; i++)
            s += (b->levels ? b->levels[b->quant[first + k * per + i]]
                            : b->quant[first + k * per + i] - b->offset) *
                 xq[k * per + i];
        sums[k] = s;
    }
    return n < 2 ? n : 2;
}

/* xs times the sum of the 32 int8 values x, as the kernels' group sums. */
static float group_sum(const int8_t *x, float xs)
{
    int s = 0;
    for (int i = 0; i < 32; i++)
        s += x[i];
    return xs * (float)s;
}

float block_partial_dot(uint32_t type, const void *block, int g, const int8_t *xq, float xs,
                        float *xsum_out)
{
    float xsum = group_sum(xq, xs);
    if (xsum_out)
        *xsum_out = xsum;
    if (type == GGML_TYPE_Q8_0) {
        int8_t w[32];
        memcpy(w, (const uint8_t *)block + 2, 32);
        float d = ggml_fp16_to_f32(u16(block));
        return kernels_scalar_dot_q8(w, &d, xq, &xs, 32, 32);
    }
    blocks_dot_fn dot = NULL;
    switch (type) {
    case GGML_TYPE_Q4_0: dot = kernels_scalar_dot_q4_0; break;
    case GGML_TYPE_Q4_1: dot = kernels_scalar_dot_q4_1; break;
    case GGML_TYPE_Q5_0: dot = kernels_scalar_dot_q5_0; break;
    case GGML_TYPE_Q5_1: dot = kernels_scalar_dot_q5_1; break;
    case GGML_TYPE_Q4_K: dot = kernels_scalar_dot_q4_k; break;
    case GGML_TYPE_Q5_K: dot = kernels_scalar_dot_q5_k; break;
    case GGML_TYPE_Q6_K: dot = kernels_scalar_dot_q6_k; break;
    case GGML_TYPE_MXFP4: dot = kernels_scalar_dot_mxfp4; break;
    default: return NAN; /* not computed in place: converted at load */
    }
    int n = block_decode_values(type), groups = n / 32;
    if (g < 0 || g >= groups)
        return NAN;
    int8_t x[BLOCK_VALUES_MAX] = {0};
    float scales[BLOCK_VALUES_MAX / 32] = {0}, sums[BLOCK_VALUES_MAX / 16] = {0};
    memcpy(x + 32 * g, xq, 32);
    scales[g] = xs;
    if (type != GGML_TYPE_Q6_K) /* Q6_K's plain C reads no sums */
        sums[g] = xsum;
    return dot(block, x, scales, sums, n);
}

float block_partial_dot_q8_rows(const int8_t *q, float scale, const int8_t *xq, float xs, int n)
{
    return kernels_scalar_dot_q8(q, &scale, xq, &xs, n, n);
}
