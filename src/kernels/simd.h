/* kernels/simd.h — what the SIMD kernel files of every instruction set share (x86-64
 * and Arm alike): compiling a file for an instruction set the build does not assume, the
 * loops that walk register blocks, how far ahead a matvec prefetches its weights, the
 * byte unpacking of the K-quant scales and the constants of the SIMD exp. (A kernel's
 * scratch memory is the caller's: kernels/scratch.h.) Included by the files in
 * src/kernels/ only. */
#ifndef LLMCHAT_KERNELS_SIMD_H
#define LLMCHAT_KERNELS_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

#define INLINE static inline __attribute__((always_inline))

/* Every function from TARGET_BEGIN(isa) to TARGET_END is compiled for `isa`. */
#define TARGET_STR(x) #x
#if defined(__clang__)
#define TARGET_BEGIN(isa) _Pragma(TARGET_STR(clang attribute push(__attribute__((target(isa))), apply_to = function)))
#define TARGET_END _Pragma("clang attribute pop")
#else
#define TARGET_BEGIN(isa) _Pragma("GCC push_options") _Pragma(TARGET_STR(GCC target(isa)))
#define TARGET_END _Pragma("GCC pop_options")
#endif

/* Calls block(R, N, ...) with literal R in {1, BLOCK_ROWS} and N in 1..BLOCK_VECS, so
 * each call site is specialised and its loops over R and N unroll into registers. */
#define BLOCK_DISPATCH(block, R, N, ...)                                   \
    do {                                                                   \
        if ((R) == BLOCK_ROWS) {                                           \
            switch (N) {                                                   \
            case 4: block(4, 4, __VA_ARGS__); break;                       \
            case 3: block(4, 3, __VA_ARGS__); break;                       \
            case 2: block(4, 2, __VA_ARGS__); break;                       \
            default: block(4, 1, __VA_ARGS__); break;                      \
            }                                                              \
        } else {                                                           \
            switch (N) {                                                   \
            case 4: block(1, 4, __VA_ARGS__); break;                       \
            case 3: block(1, 3, __VA_ARGS__); break;                       \
            case 2: block(1, 2, __VA_ARGS__); break;                       \
            default: block(1, 1, __VA_ARGS__); break;                      \
            }                                                              \
        }                                                                  \
    } while (0)

/* Walks rows [r0, r1) x vectors [0, n) in cache tiles of TILE_VECS vectors, row
 * blocks of BLOCK_ROWS (or single rows when `one_row`) and vector blocks of
 * BLOCK_VECS; a leftover row is done one at a time. `call(r, R, v, N)` computes one
 * block. */
#define WALK_BLOCKS(n, r0, r1, call, one_row)                              \
    do {                                                                   \
        for (int vt_ = 0; vt_ < (n); vt_ += TILE_VECS) {                   \
            int ve_ = vt_ + TILE_VECS < (n) ? vt_ + TILE_VECS : (n);       \
            for (int r_ = (r0); r_ < (r1);) {                              \
                int R_ = (r1) - r_ >= BLOCK_ROWS && !(one_row) ? BLOCK_ROWS : 1; \
                for (int v_ = vt_; v_ < ve_; v_ += BLOCK_VECS) {           \
                    int N_ = ve_ - v_ < BLOCK_VECS ? ve_ - v_ : BLOCK_VECS; \
                    call(r_, R_, v_, N_);                                  \
                }                                                          \
                r_ += R_;                                                  \
            }                                                              \
        }                                                                  \
    } while (0)

/* The way weights are prefetched (kernels/prefetch.c); read by prefetch_weights. */
extern kernels_prefetch kernels_weight_prefetch;

/* Prefetches the `lines` cache lines from p, the weights of a stream, the way
 * kernels_set_prefetch chose: every weight prefetch of every table goes through here.
 * One predictable test for all the lines: where lines is a constant, the loops unroll
 * to bare prefetches. __builtin_prefetch's locality 3 is prefetcht0 / PLDL1KEEP, 0 is
 * prefetchnta / PLDL1STRM. */
static inline __attribute__((always_inline)) void prefetch_weight_lines(const void *p, int lines)
{
    const char *c = (const char *)p;
    if (kernels_weight_prefetch == KERNELS_PREFETCH_T0) {
#pragma GCC unroll 8
        for (int i = 0; i < lines; i++)
            __builtin_prefetch(c + 64 * i, 0, 3);
    } else if (kernels_weight_prefetch == KERNELS_PREFETCH_NTA) {
#pragma GCC unroll 8
        for (int i = 0; i < lines; i++)
            __builtin_prefetch(c + 64 * i, 0, 0);
    }
}

/* Prefetches the line at p of a weight stream (prefetch_weight_lines). */
static inline __attribute__((always_inline)) void prefetch_weights(const void *p)
{
    prefetch_weight_lines(p, 1);
}

/* How far ahead a matvec prefetches its weights: the same offset one row block
 * further, and at least 8 KiB. Hardware prefetchers stop at 4 KiB pages. */
static inline size_t prefetch_bytes(size_t row_bytes)
{
    size_t block = BLOCK_ROWS * row_bytes;
    return block > 8192 ? block : 8192;
}

/* The 8 scales and 8 mins of a Q4_K / Q5_K super-block's 12 bytes of 6-bit pairs s
 * (kernels_k4_scale_min's values) as plain bytes: the scales in bytes 0-7 of u, the
 * mins in bytes 8-15 (u as little-endian bytes, which x86-64 and AArch64 Linux and
 * macOS all are). */
static inline void k4_scales_mins(uint32_t u[4], const uint8_t *s)
{
    memcpy(u, s, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
    uint32_t mins_lo = u[1] & 0x3f3f3f3f;
    u[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
    u[2] = mins_lo;
    u[0] &= 0x3f3f3f3f;
}

/* exp for the SIMD softmax (Cephes expf): x = k ln2 + r, |r| <= ln2 / 2, exp(r) by a
 * degree-7 polynomial, times 2^k. Inputs are <= 0 here (x - max). Below -87.3 it
 * returns exp(-87.3) ~ 1e-38 where expf gives a denormal or 0: invisible once divided
 * by the sum, which is at least 1. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

#endif
