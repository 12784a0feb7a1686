/* kernels/x86-amx-cpu.c — whether this process may run AMX-INT8 tile instructions: the
 * CPU has them (CPUID), the OS saves their state (XCR0: XTILECFG and XTILEDATA) and
 * Linux has granted the process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM; without
 * it the first tile instruction raises SIGILL). Plain x86-64 code: XGETBV by inline
 * assembly, so that nothing here needs a target flag. */
#include "x86-amx.h"

#include <cpuid.h>
#include <errno.h>
#include <stdio.h>

#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux's arch_prctl codes (asm/prctl.h) and the tile data's XSAVE feature number. */
enum {
    ARCH_GET_XCOMP_PERM_ = 0x1022,
    ARCH_REQ_XCOMP_PERM_ = 0x1023,
    XFEATURE_XTILECFG_ = 17,
    XFEATURE_XTILEDATA_ = 18,
};

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static bool avx512_vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static void probe(amx_probe *p)
{
    unsigned a, b, c, d;
    *p = (amx_probe){.avx512 = avx512_vnni(), .req = -ENOSYS};
    if (__get_cpuid_max(0, NULL) >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        p->cpuid_tile = (d >> 24) & 1;
        p->cpuid_int8 = (d >> 25) & 1;
    }
    if (__get_cpuid(1, &a, &b, &c, &d))
        p->osxsave = (c >> 27) & 1;
    if (p->osxsave)
        p->xcr0 = read_xcr0();
    const uint64_t tile_bits = 1ull << XFEATURE_XTILECFG_ | 1ull << XFEATURE_XTILEDATA_;
    bool os_saves = (p->xcr0 & tile_bits) == tile_bits;
#ifdef __linux__
    if (p->cpuid_tile && p->cpuid_int8 && os_saves) {
        p->asked = true;
        p->req = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM_, XFEATURE_XTILEDATA_) == 0 ? 0
                                                                                      : -errno;
        unsigned long perm = 0;
        if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM_, &perm) == 0)
            p->perm = perm;
    }
#endif
    p->usable = p->cpuid_tile && p->cpuid_int8 && os_saves && p->req == 0 &&
                (p->perm >> XFEATURE_XTILEDATA_ & 1);
}

const amx_probe *kernels_amx_probe(void)
{
    static amx_probe found;
    static bool done;
    if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
#pragma omp critical(kernels_amx_probe)
        if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
            probe(&found);
            __atomic_store_n(&done, true, __ATOMIC_RELEASE);
        }
    }
    return &found;
}

void kernels_amx_describe(char *buf, size_t size)
{
    const amx_probe *p = kernels_amx_probe();
    char req[48];
    if (p->asked)
        snprintf(req, sizeof req, "%ld%s", p->req, p->req ? " (-errno)" : "");
    else
        snprintf(req, sizeof req, "not asked");
    snprintf(buf, size,
             "CPUID.7.0:EDX amx-tile %d amx-int8 %d; AVX-512 VNNI %d; XCR0 %#llx (XTILECFG %d, "
             "XTILEDATA %d%s); ARCH_REQ_XCOMP_PERM %s; XCOMP_PERM %#llx: %s",
             p->cpuid_tile, p->cpuid_int8, p->avx512, (unsigned long long)p->xcr0,
             (int)(p->xcr0 >> XFEATURE_XTILECFG_ & 1), (int)(p->xcr0 >> XFEATURE_XTILEDATA_ & 1),
             p->osxsave ? "" : ", no OSXSAVE", req, (unsigned long long)p->perm,
             p->usable ? "AMX usable" : "AMX not usable");
}
