// The torch CPU targets: one row each (which ATen capability, MKL sgemm kernel and oneDNN ISA the
// pinned PyTorch picks on that class of CPU), the host's detection, and the target in force.
// The rows come from torch run on the classes' CPUs, or imitated on a larger one with the
// dispatch caps in torch_env (tools/ref, ../shared goldens; docs/numerics.md "Torch CPU targets").
#include "gptmeg/core.h"
#include "gptmeg/target.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define AVX512_CORE (GM_CPU_LEVEL_AVX512)

static const gm_torch_target_info TARGETS[GM_TT_N] = {
    [GM_TT_ZEN4] = {"zen4", "AMD Zen 4 (EPYC 9004, Ryzen 7000): AVX-512 with BF16, no AVX512-FP16, no AMX",
                    GM_ATEN_AVX512, GM_MKL_SGEMM_AMD_AVX512, GM_ONEDNN_AVX512_CORE_BF16, "",
                    AVX512_CORE | GM_CPU_AVX512_BF16},
    [GM_TT_INTEL_AMX] = {"intel-amx", "Intel Xeon Sapphire Rapids and later: AMX-BF16, AVX512-FP16",
                         GM_ATEN_AVX512, GM_MKL_SGEMM_INTEL_AVX512, GM_ONEDNN_AMX, "",
                         AVX512_CORE | GM_CPU_AVX512_BF16 | GM_CPU_AMX_TILE | GM_CPU_AMX_BF16},
    [GM_TT_INTEL_AVX512_BF16] = {"intel-avx512-bf16", "Intel Xeon Cooper Lake class: AVX-512 with BF16, no AMX",
                                 GM_ATEN_AVX512, GM_MKL_SGEMM_INTEL_AVX512, GM_ONEDNN_AVX512_CORE_BF16,
                                 "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16", AVX512_CORE | GM_CPU_AVX512_BF16},
    [GM_TT_INTEL_AVX512] = {"intel-avx512", "Intel Xeon Skylake-SP / Cascade Lake / Ice Lake class: AVX-512 without BF16",
                            GM_ATEN_AVX512, GM_MKL_SGEMM_INTEL_AVX512, GM_ONEDNN_AVX512_CORE,
                            "ONEDNN_MAX_CPU_ISA=AVX512_CORE", AVX512_CORE},
    [GM_TT_AVX2] = {"avx2", "an AVX2-only Intel CPU (Haswell to Alder Lake client)", GM_ATEN_AVX2,
                    GM_MKL_SGEMM_INTEL_AVX2, GM_ONEDNN_AVX2,
                    "ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2", GM_CPU_LEVEL_AVX2},
    [GM_TT_INTEL_AVX512_FP16] = {"intel-avx512-fp16",
                                 "Intel Xeon with AVX512-FP16 whose AMX tiles are absent or off (Sapphire / Emerald Rapids "
                                 "in a VM that leaves XCR0's tile bits clear): f16 as intel-amx, bf16 as intel-avx512-bf16",
                                 GM_ATEN_AVX512, GM_MKL_SGEMM_INTEL_AVX512, GM_ONEDNN_AVX512_CORE_FP16,
                                 "ONEDNN_MAX_CPU_ISA=AVX512_CORE_FP16", AVX512_CORE | GM_CPU_AVX512_BF16},
};

const gm_torch_target_info *gm_torch_target_get_info(gm_torch_target t) {
  return (unsigned)t < GM_TT_N ? &TARGETS[t] : NULL;
}

const char *gm_torch_target_name(gm_torch_target t) { return (unsigned)t < GM_TT_N ? TARGETS[t].name : "?"; }

const char *gm_aten_capability_name(gm_aten_capability a) {
  static const char *n[] = {"DEFAULT", "AVX2", "AVX512"};
  return (unsigned)a < 3 ? n[a] : "?";
}

const char *gm_mkl_sgemm_name(gm_mkl_sgemm m) {
  static const char *n[] = {"AMD AVX-512 (Zen 4)", "Intel AVX-512", "Intel AVX2"};
  return (unsigned)m < 3 ? n[m] : "?";
}

const char *gm_onednn_isa_name(gm_onednn_isa o) {
  static const char *n[] = {"AVX2", "AVX512_CORE", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX"};
  return (unsigned)o < 5 ? n[o] : "?";
}

// The target named name, or -1.
static int lookup(const char *name) {
  for (int t = 0; t < GM_TT_N; t++)
    if (name && strcmp(name, TARGETS[t].name) == 0) return t;
  return -1;
}

int gm_torch_target_parse(const char *name, gm_torch_target *out) {
  int t = lookup(name);
  if (t >= 0) { *out = (gm_torch_target)t; return 0; }
  char known[256] = "";
  for (int t = 0; t < GM_TT_N; t++) {
    strncat(known, t ? ", " : "", sizeof known - strlen(known) - 1);
    strncat(known, TARGETS[t].name, sizeof known - strlen(known) - 1);
  }
  return gm_fail("unknown torch CPU target '%s' (known: %s)", name ? name : "", known);
}

// As PyTorch decides: ATen takes AVX512 where F, CD, DQ, BW and VL are all there, oneDNN the
// highest ISA the CPU has (AMX before FP16 before BF16), MKL its kernel by vendor and ISA.
gm_torch_target gm_torch_target_detect(const gm_cpu *c, bool *exact_class) {
  const gm_cpu_features f = c->features;
  const bool avx512 = (f & GM_CPU_LEVEL_AVX512) == GM_CPU_LEVEL_AVX512;
  const bool avx2 = (f & GM_CPU_LEVEL_AVX2) == GM_CPU_LEVEL_AVX2;
  gm_torch_target t;
  bool exact = true;
  if (c->vendor_id == GM_CPU_VENDOR_AMD) {
    // Only Zen 4 (family 0x19 with AVX-512) has been measured; Zen 5 and Zen 2/3 are other classes.
    t = GM_TT_ZEN4;
    exact = avx512 && (f & GM_CPU_AVX512_BF16) && c->family == 0x19;
  } else {
    exact = c->vendor_id == GM_CPU_VENDOR_INTEL;
    if (avx512 && (f & GM_CPU_AMX_BF16) && (f & GM_CPU_AMX_TILE)) t = GM_TT_INTEL_AMX;
    else if (avx512 && (f & GM_CPU_AVX512_FP16)) t = GM_TT_INTEL_AVX512_FP16;
    else if (avx512 && (f & GM_CPU_AVX512_BF16)) t = GM_TT_INTEL_AVX512_BF16;
    else if (avx512) t = GM_TT_INTEL_AVX512;
    else { t = GM_TT_AVX2; exact = exact && avx2; }
  }
  if (exact_class) *exact_class = exact;
  return t;
}

// The target in force: chosen by gm_torch_target_set, else the environment's or the host's,
// resolved on first use and kept (kernels ask per softmax row and per product: no getenv there).
// -1: not set / not resolved yet.
static atomic_int chosen = -1, resolved = -1;

void gm_torch_target_set(gm_torch_target t) { atomic_store(&chosen, (int)t); }
void gm_torch_target_unset(void) {
  atomic_store(&chosen, -1);
  atomic_store(&resolved, -1);
}

gm_torch_target gm_torch_target_active(void) {
  int c = atomic_load(&chosen);
  if (c >= 0) return (gm_torch_target)c;
  int r = atomic_load(&resolved);
  if (r >= 0) return (gm_torch_target)r;
  r = lookup(getenv("GPTMEG_TORCH_TARGET"));
  if (r < 0) r = (int)gm_torch_target_detect(gm_cpu_host(), NULL);
  atomic_store(&resolved, r);
  return (gm_torch_target)r;
}

int gm_torch_target_check(void) {
  const char *env = getenv("GPTMEG_TORCH_TARGET");
  gm_torch_target t;
  if (!env || !*env) return 0;
  if (gm_torch_target_parse(env, &t)) return gm_fail("GPTMEG_TORCH_TARGET: %s", gm_errmsg());
  return 0;
}
