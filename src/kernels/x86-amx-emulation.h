/* kernels/x86-amx-emulation.h — AMX tiles in software, for testing the AMX kernel on
 * CPUs without AMX: included by kernels/x86-amx.c only when the test program compiles it
 * with -DLLMCHAT_AMX_EMULATE (never in the library or the program).
 *
 * Each thread has its own eight tiles and configuration, as on the hardware. The
 * semantics are the Intel SDM's: LDTILECFG takes palette 1 (or 0: release), rows <= 16
 * and colsb <= 64 for tiles 0-7 and zero everywhere else, and zeroes every tile;
 * TILELOADD reads rows x colsb bytes and zeroes the rest of the tile; TDPBSSD adds, for
 * each C row m and dword column n, the four signed-by-signed byte products of A row m's
 * dword k and B row k's dword n over k < A.colsb / 4, in wrapping 32-bit arithmetic,
 * and requires C.rows == A.rows, A.colsb == 4 * B.rows and C.colsb == B.colsb;
 * TILESTORED writes rows x colsb bytes. What the hardware refuses (an instruction
 * before LDTILECFG, a tile with zero rows or columns, shapes that do not match, a
 * config with reserved bits set) aborts with a message on stderr naming the fault the
 * hardware would raise, so that a kernel bug shows here before it reaches an AMX CPU. */
#ifndef LLMCHAT_KERNELS_X86_AMX_EMULATION_H
#define LLMCHAT_KERNELS_X86_AMX_EMULATION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EMU_TILES = 8, EMU_ROWS = 16, EMU_COLSB = 64 };

typedef struct {
    bool configured;
    int rows[EMU_TILES], colsb[EMU_TILES];
    uint8_t t[EMU_TILES][EMU_ROWS][EMU_COLSB];
} emu_tiles;

/* The calling thread's tiles. Thread-local because the hardware's are: tile registers
 * and their configuration are per-thread state, which LDTILECFG sets and TILERELEASE
 * clears, not memory a caller could own and pass in (a kernel's scratch memory is its
 * caller's: kernels/scratch.h). */
static _Thread_local emu_tiles emu;

static inline void emu_fault(const char *fault, const char *what, int tile)
{
    fprintf(stderr, "AMX emulation: %s (the hardware raises %s), tile %d\n", what, fault, tile);
    abort();
}

/* The tile t, checked usable. */
static inline void emu_check(int t, const char *op)
{
    if (!emu.configured)
        emu_fault("#UD", op, t);
    if (t < 0 || t >= EMU_TILES || emu.rows[t] == 0 || emu.colsb[t] == 0)
        emu_fault("#UD", op, t);
}

static inline void emu_loadconfig(const uint8_t cfg[64])
{
    uint16_t colsb[16];
    memcpy(colsb, cfg + 16, sizeof colsb);
    const uint8_t *rows = cfg + 48;
    if (cfg[0] == 0) { /* palette 0: the tiles are released */
        memset(&emu, 0, sizeof emu);
        return;
    }
    if (cfg[0] != 1 || cfg[1] != 0)
        emu_fault("#GP", "ldtilecfg: palette not 1 or start_row not 0", -1);
    for (int i = 2; i < 16; i++)
        if (cfg[i])
            emu_fault("#GP", "ldtilecfg: reserved byte set", i);
    for (int t = 0; t < 16; t++) {
        bool in = t < EMU_TILES;
        if (!in && (colsb[t] || rows[t]))
            emu_fault("#GP", "ldtilecfg: a tile past the palette's 8 configured", t);
        if (in && (colsb[t] > EMU_COLSB || rows[t] > EMU_ROWS))
            emu_fault("#GP", "ldtilecfg: rows > 16 or colsb > 64", t);
        if (in && (colsb[t] == 0) != (rows[t] == 0))
            emu_fault("#GP", "ldtilecfg: rows or colsb zero, not both", t);
    }
    memset(&emu, 0, sizeof emu);
    emu.configured = true;
    for (int t = 0; t < EMU_TILES; t++) {
        emu.rows[t] = rows[t];
        emu.colsb[t] = colsb[t];
    }
}

static inline void emu_zero(int t)
{
    emu_check(t, "tilezero");
    memset(emu.t[t], 0, sizeof emu.t[t]);
}

static inline void emu_load(int t, const void *base, long stride)
{
    emu_check(t, "tileloadd");
    memset(emu.t[t], 0, sizeof emu.t[t]);
    for (int r = 0; r < emu.rows[t]; r++)
        memcpy(emu.t[t][r], (const uint8_t *)base + r * stride, (size_t)emu.colsb[t]);
}

static inline void emu_store(int t, void *base, long stride)
{
    emu_check(t, "tilestored");
    for (int r = 0; r < emu.rows[t]; r++)
        memcpy((uint8_t *)base + r * stride, emu.t[t][r], (size_t)emu.colsb[t]);
}

static inline void emu_dpbssd(int c, int a, int b)
{
    emu_check(c, "tdpbssd C");
    emu_check(a, "tdpbssd A");
    emu_check(b, "tdpbssd B");
    if (c == a || c == b || a == b)
        emu_fault("#UD", "tdpbssd: the same tile twice", c);
    if (emu.colsb[a] % 4 || emu.colsb[c] % 4 || emu.colsb[a] / 4 != emu.rows[b] ||
        emu.colsb[c] != emu.colsb[b] || emu.rows[c] != emu.rows[a])
        emu_fault("#UD", "tdpbssd: shapes do not match", c);
    for (int m = 0; m < emu.rows[c]; m++)
        for (int n = 0; n < emu.colsb[c] / 4; n++) {
            uint32_t acc;
            memcpy(&acc, &emu.t[c][m][4 * n], 4);
            for (int k = 0; k < emu.colsb[a] / 4; k++)
                for (int j = 0; j < 4; j++)
                    acc += (uint32_t)((int32_t)(int8_t)emu.t[a][m][4 * k + j] *
                                      (int32_t)(int8_t)emu.t[b][k][4 * n + j]);
            memcpy(&emu.t[c][m][4 * n], &acc, 4);
        }
}

static inline void emu_release(void)
{
    memset(&emu, 0, sizeof emu);
}

#endif
