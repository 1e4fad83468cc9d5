// gptmeg cpu: what this CPU is and can run (read once, with cpuid and xgetbv), and the SIMD level
// the kernels use: the CPU's own, capped by GPTMEG_SIMD. Every kernel family dispatches from
// gm_cpu_simd() (and, for instructions beyond a level, from gm_cpu_has); no other code asks the CPU.
#ifndef GPTMEG_CPU_H
#define GPTMEG_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// The vector widths the kernels are written for, in order: a level includes the ones below it.
//   GM_SIMD_AVX2    AVX2 + FMA + F16C (256-bit)
//   GM_SIMD_AVX512  that and AVX-512 F, DQ, BW, VL (512-bit)
typedef enum { GM_SIMD_SCALAR, GM_SIMD_AVX2, GM_SIMD_AVX512 } gm_simd_level;

const char *gm_simd_level_name(gm_simd_level l); // "scalar", "avx2", "avx512"

typedef enum { GM_CPU_VENDOR_OTHER, GM_CPU_VENDOR_INTEL, GM_CPU_VENDOR_AMD } gm_cpu_vendor;

// Instruction-set features, one bit each. A set of them (gm_cpu_features) describes a level, a
// kernel's needs, or a row of a table keyed by CPU.
typedef uint32_t gm_cpu_features;
enum {
  GM_CPU_AVX2 = 1u << 0,
  GM_CPU_FMA = 1u << 1,
  GM_CPU_F16C = 1u << 2,
  GM_CPU_AVX512F = 1u << 3,
  GM_CPU_AVX512DQ = 1u << 4,
  GM_CPU_AVX512BW = 1u << 5,
  GM_CPU_AVX512VL = 1u << 6,
  GM_CPU_AVX512_BF16 = 1u << 7, // vcvtneps2bf16, vdpbf16ps
  GM_CPU_AVX512_FP16 = 1u << 8, // f16 arithmetic (Sapphire Rapids on; not Zen 4)
  GM_CPU_AMX_TILE = 1u << 9,
  GM_CPU_AMX_BF16 = 1u << 10,
  GM_CPU_AMX_FP16 = 1u << 11,
  GM_CPU_N_FEATURES = 12
};
#define GM_CPU_LEVEL_AVX2 (GM_CPU_AVX2 | GM_CPU_FMA | GM_CPU_F16C)
#define GM_CPU_LEVEL_AVX512 (GM_CPU_LEVEL_AVX2 | GM_CPU_AVX512F | GM_CPU_AVX512DQ | GM_CPU_AVX512BW | GM_CPU_AVX512VL)

const char *gm_cpu_feature_name(gm_cpu_features bit); // "avx2", "avx512bf16", ...; NULL for no single known bit

typedef struct {
  char vendor[13];          // cpuid's vendor string: "GenuineIntel", "AuthenticAMD", ...
  gm_cpu_vendor vendor_id;
  char brand[49];           // the brand string ("" where the CPU has none)
  int family, model, stepping; // display family and model (extended fields folded in)
  gm_cpu_features cpuid;    // what cpuid reports
  // Register state the OS saves and restores (XCR0 through xgetbv): without it the instructions
  // fault even where cpuid lists them. AMX on Linux also needs a per-process permission
  // (arch_prctl(ARCH_REQ_XCOMP_PERM)); it is not requested here, and os_amx says only that XCR0
  // enables tile state.
  bool os_avx;              // XMM and YMM (XCR0 bits 1, 2)
  bool os_avx512;           // and opmask, ZMM_Hi256, Hi16_ZMM (bits 5, 6, 7)
  bool os_amx;              // XTILECFG, XTILEDATA (bits 17, 18)
  gm_cpu_features features; // usable: cpuid's bits whose register state the OS enables
  gm_simd_level simd;       // the highest level whose features are all usable (no GPTMEG_SIMD cap)
} gm_cpu;

// This CPU, read on first use (thread-safe) and kept for the life of the process.
const gm_cpu *gm_cpu_host(void);
// Whether every feature in f is usable here (not capped by GPTMEG_SIMD: for instructions a level
// does not cover, ask gm_cpu_simd() for the level first).
bool gm_cpu_has(gm_cpu_features f);

// GPTMEG_SIMD caps the vector instructions the kernels may use, for tests and comparisons:
// "scalar", "avx2" or "avx512". Unset or empty: no cap. The library treats any other value as no
// cap; the command line refuses it (gm_simd_cap_check). Read once, on first use; a program that
// changes the variable afterwards (the tests) calls gm_simd_cap_reload.
gm_simd_level gm_simd_cap(void);
void gm_simd_cap_reload(void);
int gm_simd_cap_check(void); // 0, or non-zero with gm_fail naming the value
// The level the kernels run: the CPU's, capped by GPTMEG_SIMD. Every family dispatches from it.
gm_simd_level gm_cpu_simd(void);

// One line per fact about this CPU (vendor, family/model, features, OS state, level, cap) into
// buf; returns the length it needed (as snprintf).
int gm_cpu_describe(char *buf, size_t size);

// Still to come here: the torch CPU target, which kernel family the pinned PyTorch picks on a
// CPU (ATen's CPU capability, MKL's sgemm kernel by vendor and ISA, oneDNN's ISA), as a table of
// (vendor, gm_cpu_features) rows. The torch-cpu kernels ask gm_cpu_has directly until then
// (e.g. AVX512-FP16 decides whether torch runs f16 GELU through oneDNN).

#ifdef __cplusplus
}
#endif
#endif
