/* kernels/x86-avx-vnni.c — the AVX-VNNI table (kernels_x86_avx_vnni, "avx-vnni"): for
 * x86-64 CPUs with the 256-bit VEX vpdpbusd but without AVX-512 (Intel Core 12th
 * generation and later, their Atom cores, and the AMD CPUs that have both take the
 * AVX-512 table). Its base is the AVX2 table; its own entries are the prefill GEMM, where
 * AVX2's products of bytes take two multiply instructions per 32 and vpdpbusd one
 * (kernels/x86-avx-vnni-body.h), and the decode product of Q4_K panels by vpdpbusd
 * (kernels/x86-k4-panels.c), whose bits are the AVX2 one's. The other row dots are the
 * AVX2 table's: they stream the weights from memory, and on two cores their arithmetic
 * is not what they wait on.
 *
 * The same GEMM is built a second time with the EVEX vpdpbusd of AVX-512 VL + VNNI
 * (kernels_x86_avx_vnni_evex): a table the tests run on CPUs that have AVX-512 VNNI but
 * not AVX-VNNI, the code the same but for the instruction's encoding. kernels_init never
 * chooses it. */
#include "config.h"

#include "x86-avx2-gemm.h"

#include <cpuid.h>
#include <string.h>

TARGET_BEGIN("avx2,fma,avxvnni")
#define VNNI_DPBUSD(acc, u, s) _mm256_dpbusd_avx_epi32(acc, u, s)
#define VNNI_FN(name) vex_##name
#include "x86-avx-vnni-body.h"
#undef VNNI_DPBUSD
#undef VNNI_FN
TARGET_END

TARGET_BEGIN("avx512f,avx512vl,avx512vnni,avx2,fma")
#define VNNI_DPBUSD(acc, u, s) _mm256_dpbusd_epi32(acc, u, s)
#define VNNI_FN(name) evex_##name
#include "x86-avx-vnni-body.h"
#undef VNNI_DPBUSD
#undef VNNI_FN
TARGET_END

/* The AVX2 table's instruction sets (AVX2, FMA, F16C) and AVX-VNNI (CPUID leaf 7,
 * sub-leaf 1: EAX bit 4). */
static bool avx_vnni_supported(void)
{
    unsigned a, b, c, d;
    if (!kernels_x86_avx2.cpu_supports() || !__get_cpuid_count(7, 1, &a, &b, &c, &d))
        return false;
    return (a >> 4) & 1;
}

/* The EVEX twin's: the AVX2 table's and AVX-512 F, VL and VNNI. */
static bool avx512_vnni_supported(void)
{
    __builtin_cpu_init();
    return kernels_x86_avx2.cpu_supports() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

/* gemm_signed false: the GEMM reads packs of unsigned x + 128, and having no
 * gemm_q8_small it reads them for the rows made of ggml blocks too. */
const kernel_table kernels_x86_avx_vnni = {
    .isa = KERNELS_AVX_VNNI,
    .cpu_supports = avx_vnni_supported,
    .base = &kernels_x86_avx2,
    .gemm_q8 = vex_gemm_q8,
    .gemm_q8_halves = vex_gemm_q8_halves,
    /* Q4_K from panels by vpdpbusd (x86-k4-panels.c), the AVX2 row dot's bits */
    .matvec_k4p = kernels_avx_vnni_matvec_k4p,
    .matmul_k4p = kernels_avx_vnni_matmul_k4p,
    .k4p_dot = kernels_avx2_dot_q4_k,
};

const kernel_table kernels_x86_avx_vnni_evex = {
    .isa = KERNELS_AVX_VNNI,
    .cpu_supports = avx512_vnni_supported,
    .base = &kernels_x86_avx2,
    .gemm_q8 = evex_gemm_q8,
    .gemm_q8_halves = evex_gemm_q8_halves,
    .matvec_k4p = kernels_avx512_matvec_k4p, /* the same by the EVEX vpdpbusd */
    .matmul_k4p = kernels_avx512_matmul_k4p,
    .k4p_dot = kernels_avx2_dot_q4_k,
};
