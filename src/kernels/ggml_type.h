/* ggml_type.h — the tensor types of ggml / GGUF files: their numbers, names, block
 * sizes and bytes per block, and the scalar encodings they are built from (IEEE half,
 * bfloat16, MXFP4's E8M0 scale and e2m1 values). Also the one encoder the writers need:
 * fp32 to Q8_0 blocks.
 *
 * Owns nothing. Decoding blocks to fp32 is dequant.h; reading files is gguf.h. */
#ifndef LLMCHAT_GGML_TYPE_H
#define LLMCHAT_GGML_TYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The numbers are fixed by the file format (ggml's enum ggml_type); gaps are types
 * that were removed from it. */
typedef enum {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16,
    GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18,
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_LIMIT = 40, /* one past the largest number this program knows */
} ggml_type;

/* Values per block of the small block types and of the "K" super-block types. */
enum { GGML_BLOCK_32 = 32, GGML_BLOCK_K = 256 };

typedef struct {
    const char *name;   /* "Q4_K", as llama.cpp writes it */
    uint32_t block;     /* values per block (1 for plain scalar types) */
    uint32_t bytes;     /* bytes per block */
} ggml_type_info;

/* The description of type number t, or NULL for a number the format does not (or no
 * longer) define. */
const ggml_type_info *ggml_type_get(uint32_t t);

/* The type's name, or "type N" (in the calling thread's static buffer, valid until its
 * next call) for an unknown number. */
const char *ggml_type_name(uint32_t t);

/* IEEE 754 half precision and bfloat16 to fp32: exact (subnormals, infinities, NaN).
 * The half conversion is inline: the block kernels call it once or twice a block. */
static inline float ggml_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) { /* infinity or NaN: keep the payload */
        bits = sign | 0x7f800000u | mant << 13;
    } else if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in fp32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    } else {
        bits = sign | (exp + 112) << 23 | mant << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
float ggml_bf16_to_f32(uint16_t b);
/* fp32 to half, rounding to nearest even; overflow gives infinity, NaN stays NaN. */
uint16_t ggml_f32_to_fp16(float f);

/* MXFP4 (OCP microscaling FP4, as ggml stores it): blocks of 32 values, one byte e (an
 * E8M0 exponent) then 16 bytes of 4-bit e2m1 codes (value j the low nibble of qs[j],
 * value j + 16 the high one). ggml_kvalues_mxfp4 holds each code's e2m1 value doubled
 * (integers: 0, ±1, ±2, ±3, ±4, ±6, ±8, ±12), so a value is kvalue * 2^(e - 128), which
 * ggml_e8m0_half_to_f32 gives exactly (e 0 and 1: the fp32 subnormals 2^-128, 2^-127;
 * every e is a number, none is NaN). Bit 3 of a code is its sign. */
enum { GGML_MXFP4_BYTES = 17 };
extern const int8_t ggml_kvalues_mxfp4[16];
static inline float ggml_e8m0_half_to_f32(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Q8_0 block: 32 values as int8 with one half-precision scale. */
typedef struct {
    uint16_t d;      /* scale, IEEE half */
    int8_t qs[32];   /* value i ≈ qs[i] * d */
} ggml_block_q8_0;
_Static_assert(sizeof(ggml_block_q8_0) == 34, "Q8_0 block is 34 bytes");

/* Encodes n fp32 values (a multiple of 32) as n / 32 Q8_0 blocks: scale = max |x| / 127,
 * q = round(x / scale). A block holding NaN or infinity gets a NaN scale, so that a
 * reader's finiteness check still sees it. out may be unaligned. */
void ggml_quantize_q8_0(void *out, const float *x, size_t n);

#endif
