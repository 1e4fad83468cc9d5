// The AMX tile configuration (palette 1) as LDTILECFG reads it, shared by the tile kernel
// (matmul_bf16_amx.c) and bench/amx_peak.c. Loads a configuration; computes nothing.
#ifndef GPTMEG_KERNELS_MATMUL_AMX_TILECFG_H
#define GPTMEG_KERNELS_MATMUL_AMX_TILECFG_H

#include <stdint.h>

typedef struct __attribute__((packed)) {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16]; // bytes per row of each tile
  uint8_t rows[16];   // rows of each tile
} gm_amx_tilecfg;

// Not _tile_loadconfig: GCC's macro names only the first 8 bytes of the configuration as its memory
// operand, so the stores of the rows and column widths may be dropped as dead (seen with GCC at -O1
// and -O2 once the caller is inlined); the operand here is the whole 64 bytes.
static inline void gm_amx_load_tilecfg(const gm_amx_tilecfg *c) { __asm__ volatile("ldtilecfg %0" : : "m"(*c)); }

#endif
