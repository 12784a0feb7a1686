/* ggml_type.c — the table of ggml tensor types, half / bfloat16 conversions and the
 * Q8_0 encoder (see ggml_type.h).
 *
 * Block layouts, from the GGUF specification and ggml's documentation of its types
 * (bytes per block in parentheses):
 *   Q4_0 (18)  half d; 16 bytes of 4-bit q            x = (q - 8) d
 *   Q4_1 (20)  half d, m; 16 bytes of 4-bit q         x = q d + m
 *   Q5_0 (22)  half d; 4 bytes of 5th bits; 16 bytes  x = (q - 16) d
 *   Q5_1 (24)  half d, m; 4 bytes of 5th bits; 16     x = q d + m
 *   Q8_0 (34)  half d; 32 int8                        x = q d
 *   Q8_1 (36)  half d, s; 32 int8
 *   MXFP4 (17) u8 e (E8M0); 16 bytes of 4-bit e2m1 codes  x = kvalue[q] 2^(e - 128)
 *   K types: super-blocks of 256 values, see dequant.c for their layouts;
 *   Q8_K (292) float d; 256 int8; 16 int16 sums
 *   IQ and TQ types: lattice / ternary codes, listed for their sizes only. */
#include "ggml_type.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const ggml_type_info types[GGML_TYPE_LIMIT] = {
    [GGML_TYPE_F32] = {"F32", 1, 4},
    [GGML_TYPE_F16] = {"F16", 1, 2},
    [GGML_TYPE_Q4_0] = {"Q4_0", 32, 18},
    [GGML_TYPE_Q4_1] = {"Q4_1", 32, 20},
    [GGML_TYPE_Q5_0] = {"Q5_0", 32, 22},
    [GGML_TYPE_Q5_1] = {"Q5_1", 32, 24},
    [GGML_TYPE_Q8_0] = {"Q8_0", 32, 34},
    [GGML_TYPE_Q8_1] = {"Q8_1", 32, 36},
    [GGML_TYPE_Q2_K] = {"Q2_K", 256, 84},
    [GGML_TYPE_Q3_K] = {"Q3_K", 256, 110},
    [GGML_TYPE_Q4_K] = {"Q4_K", 256, 144},
    [GGML_TYPE_Q5_K] = {"Q5_K", 256, 176},
    [GGML_TYPE_Q6_K] = {"Q6_K", 256, 210},
    [GGML_TYPE_Q8_K] = {"Q8_K", 256, 292},
    [GGML_TYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66},
    [GGML_TYPE_IQ2_XS] = {"IQ2_XS", 256, 74},
    [GGML_TYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98},
    [GGML_TYPE_IQ1_S] = {"IQ1_S", 256, 50},
    [GGML_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18},
    [GGML_TYPE_IQ3_S] = {"IQ3_S", 256, 110},
    [GGML_TYPE_IQ2_S] = {"IQ2_S", 256, 82},
    [GGML_TYPE_IQ4_XS] = {"IQ4_XS", 256, 136},
    [GGML_TYPE_I8] = {"I8", 1, 1},
    [GGML_TYPE_I16] = {"I16", 1, 2},
    [GGML_TYPE_I32] = {"I32", 1, 4},
    [GGML_TYPE_I64] = {"I64", 1, 8},
    [GGML_TYPE_F64] = {"F64", 1, 8},
    [GGML_TYPE_IQ1_M] = {"IQ1_M", 256, 56},
    [GGML_TYPE_BF16] = {"BF16", 1, 2},
    [GGML_TYPE_TQ1_0] = {"TQ1_0", 256, 54},
    [GGML_TYPE_TQ2_0] = {"TQ2_0", 256, 66},
    [GGML_TYPE_MXFP4] = {"MXFP4", 32, 17},
};

/* The e2m1 values doubled (OCP MX 1.0: 0, 0.5, 1, 1.5, 2, 3, 4, 6, and their negatives). */
const int8_t ggml_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

const ggml_type_info *ggml_type_get(uint32_t t)
{
    return t < GGML_TYPE_LIMIT && types[t].name ? &types[t] : NULL;
}

const char *ggml_type_name(uint32_t t)
{
    /* Per thread, so that threads naming unknown types at once (the loader's messages
     * among them) do not write one buffer: 24 bytes of static storage each, nothing
     * on the heap and nothing to free. The name of a known type needs none. */
    static _Thread_local char buf[24];
    const ggml_type_info *info = ggml_type_get(t);
    if (info)
        return info->name;
    snprintf(buf, sizeof buf, "type %u", (unsigned)t);
    return buf;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float ggml_bf16_to_f32(uint16_t b)
{
    return f32_from_bits((uint32_t)b << 16);
}

uint16_t ggml_f32_to_fp16(float f)
{
    uint32_t u = bits_from_f32(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: a quiet NaN */
        return sign | 0x7e00;
    if (abs >= 0x477ff000u) /* rounds to 65520 or more: infinity */
        return sign | 0x7c00;
    if (abs < 0x38800000u) {
        /* below the smallest normal half (2^-14): a subnormal half, counted in units
         * of 2^-24; the fp32 product is exact and rintf rounds to nearest even */
        float scaled = f32_from_bits(abs) * 0x1p24f;
        return sign | (uint16_t)rintf(scaled);
    }
    /* normal: drop 13 mantissa bits, rounding to nearest even (a carry into the
     * exponent is the right answer) */
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | (uint16_t)((rounded >> 13) - ((uint32_t)112 << 10));
}

void ggml_quantize_q8_0(void *out, const float *x, size_t n)
{
    unsigned char *o = out;
    for (size_t b = 0; b < n / 32; b++, x += 32, o += sizeof(ggml_block_q8_0)) {
        ggml_block_q8_0 blk;
        float amax = 0.0f;
        bool finite = true;
        for (int i = 0; i < 32; i++) {
            finite = finite && isfinite(x[i]);
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        float d = amax / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; i++)
            blk.qs[i] = finite ? (int8_t)roundf(x[i] * id) : 0;
        blk.d = finite ? ggml_f32_to_fp16(d) : 0x7e00;
        memcpy(o, &blk, sizeof blk);
    }
}
