/* kernels/x86-amx.h — whether this process can run AMX-INT8 tile instructions, and
 * why not (kernels/x86-amx-cpu.c), for the AMX table's cpu_supports, the AMX test and
 * the smoke check (amx-smoke); and the software-emulated AMX table that the test
 * program builds from kernels/x86-amx.c (LLMCHAT_AMX_EMULATE). */
#ifndef LLMCHAT_KERNELS_X86_AMX_H
#define LLMCHAT_KERNELS_X86_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table.h"

/* What the CPU, the OS and Linux say about AMX. */
typedef struct {
    bool avx512;       /* AVX-512 F/BW/VL + VNNI (the AMX table's other kernels) */
    bool cpuid_tile;   /* CPUID.(EAX=7,ECX=0):EDX bit 24, AMX-TILE */
    bool cpuid_int8;   /* bit 25, AMX-INT8 */
    bool osxsave;      /* CPUID.1:ECX bit 27: XGETBV may be used */
    uint64_t xcr0;     /* XGETBV(0); 0 without OSXSAVE */
    bool asked;        /* the permission was asked for (CPUID and XCR0 say AMX) */
    long req;          /* arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): 0, or -errno */
    uint64_t perm;     /* arch_prctl(ARCH_GET_XCOMP_PERM) after it (0 if it failed) */
    bool usable;       /* all of it: CPUID bits, XCR0 bits 17 and 18, permission granted */
} amx_probe;

/* Probes (once; later calls return the first answer). The first call asks Linux for the
 * tile data permission, for the whole process: it must come before any thread runs a
 * tile instruction (kernels_init calls it through the table's cpu_supports). */
const amx_probe *kernels_amx_probe(void);
/* One line saying what the probe found, e.g. "CPUID.7.0:EDX amx-tile 1 amx-int8 1;
 * XCR0 0x602e7 (XTILECFG 1, XTILEDATA 1); ARCH_REQ_XCOMP_PERM 0; XCOMP_PERM 0x602e7". */
void kernels_amx_describe(char *buf, size_t size);

/* The AMX table built with software tiles (exact AMX semantics, checked shapes): only in
 * the test program that compiles x86-amx.c with -DLLMCHAT_AMX_EMULATE. */
extern const kernel_table kernels_x86_amx_emulated;

#endif
