// gptmeg target: the torch CPU target, the set of kernel families the pinned PyTorch (2.15) picks
// for its ops on a class of CPU. Bit-for-bit reproduction is per target: the same op gives other
// bits on an AMD Zen 4 than on an Intel Xeon with AMX, because three libraries each choose their
// kernel from the CPU:
//   ATen's CPU capability (DEFAULT, AVX2, AVX512): the softmax, layer norm and GELU kernels;
//   MKL's sgemm (chosen by vendor and ISA): every f32 matmul, and its K blocking;
//   oneDNN's ISA (AVX2, AVX512_CORE, AVX512_CORE_BF16, AVX512_CORE_FP16, AMX): bf16/f16 matmuls
//   and some bf16/f16 GELUs.
// A target is data: one row naming each. gptmeg detects the host's as PyTorch would decide it,
// and any target can be chosen on any machine (GPTMEG_TORCH_TARGET, or --torch-target), so a
// laptop reproduces the bits a Xeon training job got. Which ops gptmeg reproduces exactly under
// each target is the kernels' to say (gm_target_exact in gptmeg/kernels.h).
#ifndef GPTMEG_TARGET_H
#define GPTMEG_TARGET_H

#include "gptmeg/cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GM_TT_ZEN4 = 0,          // AMD Zen 4: AVX-512 with BF16, no AVX512-FP16, no AMX
  GM_TT_INTEL_AMX,         // Intel Sapphire Rapids and later: AMX-BF16 (-FP16), AVX512-FP16
  GM_TT_INTEL_AVX512_BF16, // Intel Cooper Lake class: AVX-512 with BF16, no AMX
  GM_TT_INTEL_AVX512,      // Intel Ice Lake / Cascade Lake / Skylake-SP class: AVX-512, no BF16
  GM_TT_AVX2,              // an AVX2-only Intel CPU (Haswell to Alder Lake client)
  GM_TT_INTEL_AVX512_FP16, // Intel with AVX512-FP16 but no usable AMX (Sapphire Rapids and later, tiles off)
  GM_TT_N
} gm_torch_target;

typedef enum { GM_ATEN_DEFAULT = 0, GM_ATEN_AVX2, GM_ATEN_AVX512 } gm_aten_capability;
typedef enum {
  GM_MKL_SGEMM_AMD_AVX512 = 0, // MKL on AMD Zen 4 (K blocks of 192 for M >= 4)
  GM_MKL_SGEMM_INTEL_AVX512,   // MKL's Intel AVX-512 kernels (K blocks of 384 for M >= 4)
  GM_MKL_SGEMM_INTEL_AVX2      // MKL's Intel AVX2 kernels
} gm_mkl_sgemm;
typedef enum {
  GM_ONEDNN_AVX2 = 0,
  GM_ONEDNN_AVX512_CORE,
  GM_ONEDNN_AVX512_CORE_BF16,
  GM_ONEDNN_AVX512_CORE_FP16, // from here torch's f16 matmul is oneDNN's brgemm (avx10_1_512)
  GM_ONEDNN_AMX // AVX512_CORE_AMX (bf16 tiles) and, with AMX-FP16, f16 tiles
} gm_onednn_isa;

typedef struct {
  const char *name;         // "zen4", "intel-amx", ... (the CLI's spelling)
  const char *describes;    // the CPUs of the class, in words
  gm_aten_capability aten;
  gm_mkl_sgemm mkl;
  gm_onednn_isa onednn;
  // The torch environment that makes this target's choices on a CPU of a larger class (how the
  // goldens of a target are produced on one machine); "" for none.
  const char *torch_env;
  gm_cpu_features fast;     // what the target's fast kernels need (without it: the scalar twins)
} gm_torch_target_info;

const gm_torch_target_info *gm_torch_target_get_info(gm_torch_target t);
const char *gm_torch_target_name(gm_torch_target t);
const char *gm_aten_capability_name(gm_aten_capability a);   // "DEFAULT", "AVX2", "AVX512"
const char *gm_mkl_sgemm_name(gm_mkl_sgemm m);
const char *gm_onednn_isa_name(gm_onednn_isa o);             // oneDNN's spelling: "AVX512_CORE_BF16"
// By name; an unknown name is an error (gm_fail) listing every known target.
int gm_torch_target_parse(const char *name, gm_torch_target *out);
// The target PyTorch would pick on CPU c (vendor, features), and whether the match is exact:
// false for a CPU of no named class (then the nearest target is returned; `gptmeg info` says so).
gm_torch_target gm_torch_target_detect(const gm_cpu *c, bool *exact_class);
// The target in force: the one set by gm_torch_target_set, else GPTMEG_TORCH_TARGET, else the
// host's. The environment is read once, on first use, and again after gm_torch_target_unset. A bad
// GPTMEG_TORCH_TARGET is treated as unset here; gm_torch_target_check refuses it.
gm_torch_target gm_torch_target_active(void);
void gm_torch_target_set(gm_torch_target t);
void gm_torch_target_unset(void); // back to GPTMEG_TORCH_TARGET (read again) or the host's
int gm_torch_target_check(void);  // 0, or non-zero with gm_fail naming a bad GPTMEG_TORCH_TARGET

// The pinned torch's libtorch_cpu.so (its MKL VML gives the op-by-op GELUs' f32 tanh/erf/exp), found
// once: GPTMEG_TORCH_MKL (a path; "none" turns it off), $VIRTUAL_ENV, $CONDA_PREFIX, each python3
// on PATH (its prefix's site-packages), ~/.local. NULL when none; how names where it was found
// or why not.
const char *gm_torch_lib_path(const char **how);

#ifdef __cplusplus
}
#endif
#endif
