/* kernels/x86-blocks.c — the x86 row dots of the 32-value ggml block types used in
 * place (Q4_0, Q4_1, Q5_0, Q5_1): kernels/x86-blocks-body.h compiled once for AVX2
 * (maddubs + madd) and once for AVX-512 VNNI (vpdpbusd on 256-bit registers). The
 * tables of x86-avx2.c and x86-avx512.c point at them; the K-quants have a file per
 * table (x86-avx2-kquants.c, x86-avx512-kquants.c). */
#include "x86.h"

#include <string.h>

#include "ggml_type.h"

TARGET_BEGIN("avx2,fma")
#define BLK(name) kernels_avx2_##name
#define DOT_U8S8(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1))
#include "x86-blocks-body.h"
#undef BLK
#undef DOT_U8S8
TARGET_END

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")
#define BLK(name) kernels_avx512_##name
#define DOT_U8S8(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (u), (s))
#include "x86-blocks-body.h"
#undef BLK
#undef DOT_U8S8
TARGET_END
