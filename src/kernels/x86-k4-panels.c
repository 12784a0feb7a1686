/* kernels/x86-k4-panels.c — the x86 tables' decode product of a Q4_K tensor read from
 * its panels (kernels/panels.h: 8 rows side by side), matvec_k4p and matmul_k4p (several
 * vectors) in kernels/table.h: the AVX2 table's (vpmaddubsw), the AVX-512 ones'
 * (vpdpbusd on 256-bit registers) and the AVX-VNNI one's (the same instruction, VEX
 * encoded), one body (kernels/x86-k4-panels-body.h) compiled for each.
 *
 * The AVX2 row dot (kernels/x86-avx2-blocks.c, dot_k45_multi) needs each of a
 * super-block's eight sub-block sums out of a register of 16 int16 pair sums: a
 * transpose-and-add of eight registers, about a quarter of that dot's instructions. In
 * a panel a piece holds 4 values of 8 rows, so a product by x's 4 values (broadcast)
 * gives the 8 rows' sums in their own lanes, and the 8 pieces of a sub-block add up
 * lane by lane into its 8 exact int32 sums, one a row, with no transpose. The low
 * nibbles of 8 pieces are sub-block 2p, the high ones 2p + 1.
 *
 * The float steps are the AVX2 row dot's, lane for lane: a row's sub-block j accumulates
 * fma(float(sum), d · sc_j · xs_j, acc_j) and fma(dmin · m_j, xsum_j, accm_j) over the
 * super-blocks in order, and the result is acc's eight sums added in hsum256's order
 * minus accm's. There a sub-block is a lane of one vector and rows follow one another;
 * here a row is a lane and each sub-block has its own vector: the same operations on
 * the same values, so both kernels give a row the AVX2 row dot's bits, which the
 * AVX-512 row dot has too (kernels/x86-avx512-blocks.c, dot_k45_multi).
 * Each group is one stream of cols / 256 · 1152 bytes, prefetched K4_AHEAD bytes ahead
 * (prefetch_weight_lines), 5 lines at each quarter of a super-block: the 19 lines at
 * once made two threads' streams slower than the row dots' (docs/performance.md, "Q4_K
 * decode panels"). */
#include "config.h"

#include "x86.h"

#include "panels.h"

#include <string.h>

/* How far ahead of its loads a group's stream is prefetched: the row dots' distance
 * (prefetch_bytes, at least 8 KiB); 4 and 16 KiB were no faster. */
enum { K4_AHEAD = 8192 };

TARGET_BEGIN("avx2,fma,f16c")

#define K4P(name) name##_avx2
#define K4P_MATVEC kernels_avx2_matvec_k4p
#define K4P_MATMUL kernels_avx2_matmul_k4p
#define K4P_STEP(acc, w, x) _mm256_add_epi16((acc), _mm256_maddubs_epi16((w), (x)))
#define K4P_TOTAL(acc) _mm256_madd_epi16((acc), _mm256_set1_epi16(1))
#include "x86-k4-panels-body.h"

TARGET_END

TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#define K4P(name) name##_vnni
#define K4P_MATVEC kernels_avx512_matvec_k4p
#define K4P_MATMUL kernels_avx512_matmul_k4p
#define K4P_STEP(acc, w, x) _mm256_dpbusd_epi32((acc), (w), (x))
#define K4P_TOTAL(acc) (acc)
#include "x86-k4-panels-body.h"

TARGET_END

#ifdef HAVE_KERNELS_AVX_VNNI
TARGET_BEGIN("avx2,fma,f16c,avxvnni")

#define K4P(name) name##_avx_vnni
#define K4P_MATVEC kernels_avx_vnni_matvec_k4p
#define K4P_MATMUL kernels_avx_vnni_matmul_k4p
#define K4P_STEP(acc, w, x) _mm256_dpbusd_avx_epi32((acc), (w), (x))
#define K4P_TOTAL(acc) (acc)
#include "x86-k4-panels-body.h"

TARGET_END
#endif
