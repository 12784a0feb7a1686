/* kernels/x86-avx2-attention.c — the AVX2 table's batched fp32 attention (attention_f32,
 * kernels/kernels.h: kernels_attention_f32), prefill's attention on CPUs without
 * AVX-512. The AVX-512 kernel's plan on 8-float registers: the keys transposed once per
 * call into tiles of 8 (the scratch's ATTENTION slot), so that one FMA adds a head
 * value's term to 8 keys' scores of a query with no horizontal sum; queries in blocks
 * of 4, each key tile loaded once for the block (two tiles a step, so that each query
 * value loaded feeds two FMAs); each score Σ_j q[j] k[j] in j order, times the scale;
 * softmax per query; then out = att · V for 4 queries at a time, 16 values a step in
 * registers, from value tiles made once per call (each key's 16 values of a step side by
 * side, key after key), each loaded once per step. */
#include "x86.h"

/* Queries per block (4 x 2 accumulators of 8 keys, beside the keys and a query value). */
enum { ATT2_QUERIES = 4 };

TARGET_BEGIN("avx2,fma")

/* A mask of the first `left` lanes of 8 (all when left >= 8, none when left <= 0), for
 * maskload / maskstore. */
INLINE __m256i lanes_upto8(int left)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), idx);
}

/* Scores of NQ queries (rows of q0) against the NT (1 or 2) key tiles at k0, keys
 * t0..t0 + 8 NT - 1 of which those below `keys` are stored, into rows of a0. */
INLINE void scores_tiles_avx2(int NQ, int NT, float *a0, size_t att_stride, const float *q0,
                              size_t q_stride, const float *k0, int t0, int keys, int hs,
                              __m256 vscale)
{
    __m256 acc[2][ATT2_QUERIES];
#pragma GCC unroll 2
    for (int c = 0; c < NT; c++)
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            acc[c][i] = _mm256_setzero_ps();
    for (int j = 0; j < hs; j++) {
        __m256 kv[2];
#pragma GCC unroll 2
        for (int c = 0; c < NT; c++)
            kv[c] = _mm256_load_ps(k0 + (size_t)c * 8 * hs + 8 * j);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++) {
            __m256 qv = _mm256_set1_ps(q0[(size_t)i * q_stride + j]);
#pragma GCC unroll 2
            for (int c = 0; c < NT; c++)
                acc[c][i] = _mm256_fmadd_ps(qv, kv[c], acc[c][i]);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < NT; c++) {
        const __m256i m = lanes_upto8(keys - t0 - 8 * c);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++)
            _mm256_maskstore_ps(a0 + (size_t)i * att_stride + t0 + 8 * c, m,
                                _mm256_mul_ps(acc[c][i], vscale));
    }
}

/* Scores of NQ queries against keys 0..keys-1 from the key tiles kt. */
INLINE void scores_block_avx2(int NQ, float *a0, size_t att_stride, const float *q0,
                              size_t q_stride, const float *kt, int keys, int hs, float scale)
{
    const __m256 vscale = _mm256_set1_ps(scale);
    const int tiles = (keys + 7) / 8;
    int T = 0;
    for (; T + 2 <= tiles; T += 2)
        scores_tiles_avx2(NQ, 2, a0, att_stride, q0, q_stride, kt + (size_t)T * 8 * hs, 8 * T,
                          keys, hs, vscale);
    if (T < tiles)
        scores_tiles_avx2(NQ, 1, a0, att_stride, q0, q_stride, kt + (size_t)T * 8 * hs, 8 * T,
                          keys, hs, vscale);
}

/* Values j..j+15 of out rows (NQ of them) = their weights a0 · V over keys 0..keys-1,
 * in registers, key t's 16 values at vj + t * vstride: whole steps from the value tiles
 * with plain loads, the last one (FULL false, fewer than 16 values left) masked from the
 * rows. */
INLINE void values_step_avx2(int NQ, bool FULL, float *o0, size_t out_stride, const float *a0,
                             size_t att_stride, const float *vj, size_t vstride, int keys,
                             int hs, int j)
{
    const __m256i m0 = lanes_upto8(hs - j), m1 = lanes_upto8(hs - j - 8);
    __m256 acc[ATT2_QUERIES][2];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int t = 0; t < keys; t++) {
        const float *vr = vj + (size_t)t * vstride;
        const __m256 v0 = FULL ? _mm256_loadu_ps(vr) : _mm256_maskload_ps(vr, m0);
        const __m256 v1 = FULL ? _mm256_loadu_ps(vr + 8) : _mm256_maskload_ps(vr + 8, m1);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; i++) {
            __m256 w = _mm256_set1_ps(a0[(size_t)i * att_stride + t]);
            acc[i][0] = _mm256_fmadd_ps(w, v0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(w, v1, acc[i][1]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NQ; i++) {
        float *o = o0 + (size_t)i * out_stride + j;
        if (FULL) {
            _mm256_storeu_ps(o, acc[i][0]);
            _mm256_storeu_ps(o + 8, acc[i][1]);
        } else {
            _mm256_maskstore_ps(o, m0, acc[i][0]);
            _mm256_maskstore_ps(o + 8, m1, acc[i][1]);
        }
    }
}

/* out rows (NQ of them) = their weights a0 · V over keys 0..keys-1, 16 values a step:
 * whole steps from the value tiles vt (all keys a tile), the rest from the rows v. */
INLINE void values_block_avx2(int NQ, float *o0, size_t out_stride, const float *a0,
                              size_t att_stride, const float *vt, int all, const float *v,
                              size_t kv_stride, int keys, int hs)
{
    int j = 0;
    for (; j + 16 <= hs; j += 16)
        values_step_avx2(NQ, true, o0, out_stride, a0, att_stride, vt + (size_t)j * all, 16,
                         keys, hs, j);
    if (j < hs)
        values_step_avx2(NQ, false, o0, out_stride, a0, att_stride, v + j, kv_stride, keys, hs,
                         j);
}

void kernels_avx2_attention_f32(kernels_scratch *s, float *out, size_t out_stride, float *att,
                                size_t att_stride, const float *q, size_t q_stride,
                                const float *k, const float *v, size_t kv_stride, int n, int pos,
                                int hs, float scale)
{
    const int all = pos + n;
    const size_t kld = (size_t)(all + 7) / 8 * 8;
    const int whole = hs / 16 * 16; /* values in the value tiles */
    float *kt = kernels_scratch_get(s, SCRATCH_ATTENTION,
                                    sizeof(float) * (kld * hs + (size_t)all * whole));
    if (!kt)
        return; /* out of memory, counted in s */
    /* value tiles: values j..j+15 of every key, key after key (all x 16 floats each), so
     * that a step of the weighted sum walks its values in order (rows kv_stride apart,
     * often a multiple of 1 KB, share few L1 sets) */
    float *vt = kt + kld * hs;
    for (int j = 0; j < whole; j += 16)
        for (int t = 0; t < all; t++) {
            const float *vr = v + (size_t)t * kv_stride + j;
            float *dst = vt + ((size_t)j * all + (size_t)t * 16);
            _mm256_storeu_ps(dst, _mm256_loadu_ps(vr));
            _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(vr + 8));
        }
    /* key tiles: 8 keys' values j side by side, tile after tile (8 x hs floats each);
     * the last tile's missing keys zero */
    for (int t = 0; t < all; t++) {
        float *kc = kt + (size_t)(t / 8) * 8 * hs + t % 8;
        for (int j = 0; j < hs; j++)
            kc[8 * j] = k[(size_t)t * kv_stride + j];
    }
    for (size_t t = (size_t)all; t < kld; t++)
        for (int j = 0; j < hs; j++)
            kt[t / 8 * 8 * hs + 8 * (size_t)j + t % 8] = 0.0f;

    for (int i0 = 0; i0 < n; i0 += ATT2_QUERIES) {
        int nq = n - i0 < ATT2_QUERIES ? n - i0 : ATT2_QUERIES;
        int keys = pos + i0 + nq; /* the block's last query sees this many */
        float *a0 = att + (size_t)i0 * att_stride;
        const float *q0 = q + (size_t)i0 * q_stride;
        switch (nq) {
        case 4: scores_block_avx2(4, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 3: scores_block_avx2(3, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        case 2: scores_block_avx2(2, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        default: scores_block_avx2(1, a0, att_stride, q0, q_stride, kt, keys, hs, scale); break;
        }
        for (int i = 0; i < nq; i++) {
            float *a = a0 + (size_t)i * att_stride;
            int ki = pos + i0 + i + 1;
            kernels_avx2_softmax(a, ki);
            for (int t = ki; t < all; t++)
                a[t] = 0.0f;
        }
        float *o0 = out + (size_t)i0 * out_stride;
#define VALUES(NQ)                                                                         \
    values_block_avx2(NQ, o0, out_stride, a0, att_stride, vt, all, v, kv_stride, keys, hs)
        switch (nq) {
        case 4: VALUES(4); break;
        case 3: VALUES(3); break;
        case 2: VALUES(2); break;
        default: VALUES(1); break;
#undef VALUES
        }
    }
}

TARGET_END
