/* block_decode.h — one block of a weight tensor taken apart for display: the fields its
 * format defines (the half-precision scale d and min, the sub-blocks' integer scales
 * and mins, each value's packed quant and its high bits) and each value dequantized
 * from those fields, in the order of operations dequant.c uses (so the values equal
 * llama.cpp's bit for bit); and the part of a row's dot product that one 32-value group
 * of int8 activations contributes, in the plain-C reference kernels' arithmetic (the
 * kernels themselves are called, with the other groups zero).
 *
 * Types: the ggml blocks F32, F16, BF16 (a run of 32 values), Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4; and llmchat's own Q8_0 rows (int8 values with
 * one fp32 scale per group, what the loader converts other types to). Owns nothing;
 * reads blocks at any alignment; no printing. */
#ifndef LLMCHAT_BLOCK_DECODE_H
#define LLMCHAT_BLOCK_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    BLOCK_VALUES_MAX = 256, /* the K types' super-block */
    BLOCK_SUBS_MAX = 16,
    BLOCK_RUN = 32,         /* the values F32, F16 and BF16 are shown in runs of */
    BLOCK_Q8_ROWS = 1000,   /* not a ggml number: llmchat's Q8_0 rows (fp32 scales) */
};

typedef struct {
    uint32_t type;          /* a ggml type (ggml_type.h) or BLOCK_Q8_ROWS */
    const char *name;       /* "Q4_K", "Q8_0 (llmchat's rows, fp32 scale)" */
    int n;                  /* values in the block */
    bool has_d, has_min;    /* the block stores a scale d, and a min (Q4_1, Q5_1: m;
                               the K types with mins: dmin) */
    uint32_t d_bits, min_bits; /* as stored: a half's 16 bits (Q8 rows: the fp32's;
                                  MXFP4: the E8M0 exponent byte e, d = 2^(e - 128)) */
    bool d_e8m0;            /* MXFP4: d_bits is an E8M0 byte, not a half */
    float d, dmin;          /* decoded (NaN when absent) */
    int n_sub, sub_len;     /* sub-blocks with integer scales: Q4_K, Q5_K 8 x 32; Q2_K,
                               Q3_K, Q6_K 16 x 16; the others 1 x n (no integer scale) */
    bool sub_scales, sub_mins; /* scale[] (and min[]) hold the sub-blocks' integers */
    int scale[BLOCK_SUBS_MAX]; /* each sub-block's scale as an integer (Q3_K: minus 32,
                                  Q6_K: signed 8-bit) */
    int min[BLOCK_SUBS_MAX];
    int scale_bits;         /* bits of a stored scale (and min): 4, 6, 8; 0 */
    int low_bits, high_bits; /* bits of a value's quant in the packed low part (qs) and
                                in the high part (qh, hmask); 0 and 0 for F32..BF16 */
    int offset;             /* what the format takes from a quant: 8, 16, 32, 4; 0 */
    const int8_t *levels;   /* MXFP4: the integer each 4-bit quant stands for (its e2m1
                               value doubled, ggml_kvalues_mxfp4), which the kernels
                               multiply; NULL: quant - offset */
    int quant[BLOCK_VALUES_MAX]; /* each value's whole quant: low | high << low_bits
                                    (Q8_0: the signed int8) */
    int high[BLOCK_VALUES_MAX];  /* its high bits alone (0 without them) */
    uint32_t raw[BLOCK_VALUES_MAX]; /* F16, BF16: the stored 16 bits; F32: the 32 */
    float value[BLOCK_VALUES_MAX];  /* dequantized from the fields above */
    const char *formula;    /* how a value is made: "d * (q - 8)", "d*sc*q - dmin*m" */
    const char *packing;    /* where the quants are in the block's bytes */
} block_decoded;

/* True for the ggml types block_decode takes. */
bool block_decode_supported(uint32_t type);

/* Values a block of type holds (32, 256; BLOCK_RUN for F32, F16, BF16) and the bytes
 * it takes; 0 for a type not supported. */
int block_decode_values(uint32_t type);
size_t block_decode_bytes(uint32_t type);

/* Decodes the block at `block` (BLOCK_RUN values from it for F32, F16, BF16) into out.
 * type must be supported. */
void block_decode(uint32_t type, const void *block, block_decoded *out);

/* llmchat's Q8_0 row group: n (<= BLOCK_VALUES_MAX) int8 values q with the fp32 scale. */
void block_decode_q8_rows(const int8_t *q, float scale, int n, block_decoded *out);

/* The integer sums of activation group g (values 32g..32g+31 of the block) with int8
 * activations xq (32): the quants with their offsets taken times xq, one sum per
 * sub-block inside the group (Q2_K, Q3_K, Q6_K: two of 16 values; else one), into
 * sums; returns how many. For F32..BF16 there are none (0). MXFP4's quants count as
 * their levels. */
int block_group_sums(const block_decoded *b, int g, const int8_t *xq, int32_t sums[2]);

/* The term group g of the block at `block` (type; for BLOCK_Q8_ROWS, the group's int8
 * values with its scale: q, scale) adds to a row's dot product with int8 activations
 * xq (32) of scale xs, computed by the plain-C reference kernel of the type (the row
 * dot with every other group zero). xsum_out, when not NULL, receives the group sum the
 * kernels give types with mins (xs times the sum of xq). F32..BF16: NaN (they are not
 * multiplied with int8 activations). */
float block_partial_dot(uint32_t type, const void *block, int g, const int8_t *xq, float xs,
                        float *xsum_out);
float block_partial_dot_q8_rows(const int8_t *q, float scale, const int8_t *xq, float xs,
                                int n);

#endif
