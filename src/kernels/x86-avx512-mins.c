/* kernels/x86-avx512-mins.c — the mins' part of the K-quant prefill on AVX-512 (the
 * kernel tables' gemm_mins, for the AVX-512 and AMX tables): for a block of up to 16
 * rows, out[v][i] += Σ_g xsum[v][g] · min[i][g] as an outer product. The rows' mins
 * (a row after another) are first laid out group by group in the thread's scratch (its
 * MINS slot: 16 floats a group, zero past the block's rows: x86.h's by_group16), so that
 * one FMA
 * adds a group's term to 16 rows of one vector; eight vectors at once keep eight
 * independent sums in flight. Each sum runs over the groups in order, then is
 * added to out. */
#include "x86.h"


TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx2,fma")

/* N vectors (from v) of the block: N accumulators of 16 rows. */
INLINE void mins_block(int N, float *out, size_t ldo, const float *min_t, int groups,
                       const float *xsum, int v, __mmask16 rows)
{
    __m512 acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < N; j++)
        acc[j] = _mm512_setzero_ps();
    const float *xs = xsum + (size_t)v * groups;
    for (int g = 0; g < groups; g++) {
        const __m512 m = _mm512_loadu_ps(min_t + 16 * (size_t)g);
#pragma GCC unroll 8
        for (int j = 0; j < N; j++)
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(xs[(size_t)j * groups + g]), m, acc[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < N; j++) {
        float *o = out + (size_t)(v + j) * ldo;
        _mm512_mask_storeu_ps(o, rows, _mm512_add_ps(_mm512_maskz_loadu_ps(rows, o), acc[j]));
    }
}

void kernels_avx512_gemm_mins(kernels_scratch *s, float *out, size_t ldo, const float *min,
                              int groups, const float *xsum, int n, int nr)
{
    float *min_t = kernels_scratch_get(s, SCRATCH_MINS, sizeof(float) * (size_t)groups * 16);
    if (!min_t)
        return; /* out of memory, counted in s */
    by_group16(min_t, min, groups, nr);
    const __mmask16 rows = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    int v = 0;
    for (; v + 8 <= n; v += 8)
        mins_block(8, out, ldo, min_t, groups, xsum, v, rows);
    for (; v < n; v++)
        mins_block(1, out, ldo, min_t, groups, xsum, v, rows);
}

TARGET_END
