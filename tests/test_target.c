// The torch CPU targets: detection from a CPU description as PyTorch decides (vendor, then the
// highest oneDNN ISA), names and their errors, and which target is in force (set > environment >
// the host's).
#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static gm_cpu cpu_of(gm_cpu_vendor v, int family, gm_cpu_features f) {
  gm_cpu c;
  memset(&c, 0, sizeof c);
  c.vendor_id = v;
  c.family = family;
  c.features = f;
  return c;
}

static void check_detect(const char *what, gm_cpu c, gm_torch_target want, bool want_exact) {
  bool exact = !want_exact;
  gm_torch_target t = gm_torch_target_detect(&c, &exact);
  CHECK(t == want && exact == want_exact, "%s: got %s (exact %d), want %s (exact %d)", what, gm_torch_target_name(t),
        exact, gm_torch_target_name(want), want_exact);
}

int main(void) {
  const gm_cpu_features avx2 = GM_CPU_LEVEL_AVX2, avx512 = GM_CPU_LEVEL_AVX512;
  const gm_cpu_features spr = avx512 | GM_CPU_AVX512_BF16 | GM_CPU_AVX512_FP16 | GM_CPU_AMX_TILE | GM_CPU_AMX_BF16;
  check_detect("Sapphire Rapids", cpu_of(GM_CPU_VENDOR_INTEL, 6, spr), GM_TT_INTEL_AMX, true);
  check_detect("Cooper Lake", cpu_of(GM_CPU_VENDOR_INTEL, 6, avx512 | GM_CPU_AVX512_BF16), GM_TT_INTEL_AVX512_BF16, true);
  check_detect("Ice Lake", cpu_of(GM_CPU_VENDOR_INTEL, 6, avx512), GM_TT_INTEL_AVX512, true);
  check_detect("Haswell", cpu_of(GM_CPU_VENDOR_INTEL, 6, avx2), GM_TT_AVX2, true);
  // oneDNN then runs f16 on avx10_1_512 (AVX512_CORE_FP16) and bf16 on avx512_core_bf16 (measured
  // on an Emerald Rapids VM with XCR0's tile bits clear)
  check_detect("AMX without OS tile state", cpu_of(GM_CPU_VENDOR_INTEL, 6, spr & ~(GM_CPU_AMX_TILE | GM_CPU_AMX_BF16)),
               GM_TT_INTEL_AVX512_FP16, true);
  check_detect("Zen 4", cpu_of(GM_CPU_VENDOR_AMD, 0x19, avx512 | GM_CPU_AVX512_BF16), GM_TT_ZEN4, true);
  check_detect("Zen 3 (no AVX-512): nearest", cpu_of(GM_CPU_VENDOR_AMD, 0x19, avx2), GM_TT_ZEN4, false);
  check_detect("Zen 5 family: nearest", cpu_of(GM_CPU_VENDOR_AMD, 0x1a, avx512 | GM_CPU_AVX512_BF16), GM_TT_ZEN4, false);
  check_detect("other vendor", cpu_of(GM_CPU_VENDOR_OTHER, 6, avx2), GM_TT_AVX2, false);
  check_detect("no AVX2", cpu_of(GM_CPU_VENDOR_INTEL, 6, 0), GM_TT_AVX2, false);

  // Names round-trip; an unknown one is refused with the list.
  for (int t = 0; t < GM_TT_N; t++) {
    gm_torch_target back = GM_TT_N;
    const gm_torch_target_info *ti = gm_torch_target_get_info((gm_torch_target)t);
    CHECK(ti && gm_torch_target_parse(ti->name, &back) == 0 && back == (gm_torch_target)t, "round trip of target %d", t);
    CHECK(ti && strlen(ti->describes) > 10, "target %d describes its class", t);
  }
  gm_torch_target x;
  CHECK(gm_torch_target_parse("skylake", &x) != 0 && strstr(gm_errmsg(), "known: zen4, intel-amx") != NULL,
        "unknown target: %s", gm_errmsg());
  CHECK(gm_torch_target_get_info(GM_TT_N) == NULL, "no info past the last target");

  // In force: set > GPTMEG_TORCH_TARGET > the host's. (The harness set zen4 at start.)
  CHECK(gm_torch_target_active() == GM_TT_ZEN4, "the harness pins zen4");
  setenv("GPTMEG_TORCH_TARGET", "avx2", 1);
  gm_torch_target_unset(); // the environment is read on first use and after each unset
  CHECK(gm_torch_target_active() == GM_TT_AVX2 && gm_torch_target_check() == 0, "the environment chooses");
  setenv("GPTMEG_TORCH_TARGET", "bogus", 1);
  CHECK(gm_torch_target_active() == GM_TT_AVX2, "the environment is read once, not on every call");
  gm_torch_target_unset();
  CHECK(gm_torch_target_active() == gm_torch_target_detect(gm_cpu_host(), NULL), "a bad environment value: the host's");
  CHECK(gm_torch_target_check() != 0 && strstr(gm_errmsg(), "GPTMEG_TORCH_TARGET") != NULL, "a bad value is refused");
  unsetenv("GPTMEG_TORCH_TARGET");
  gm_torch_target_unset();
  CHECK(gm_torch_target_active() == gm_torch_target_detect(gm_cpu_host(), NULL), "unset: the host's");
  gm_torch_target_set(GM_TT_INTEL_AVX512);
  setenv("GPTMEG_TORCH_TARGET", "avx2", 1);
  CHECK(gm_torch_target_active() == GM_TT_INTEL_AVX512, "set wins over the environment");
  unsetenv("GPTMEG_TORCH_TARGET");

  // The support table: zen4 reproduces every op (f32 gelu ops given torch's library), and every
  // row names a kernel family.
  static const gm_dtype dts[3] = {GM_F32, GM_F16, GM_BF16};
  for (int t = 0; t < GM_TT_N; t++)
    for (int op = 0; op < GM_KOP_N; op++)
      for (int d = 0; d < 3; d++) {
        gm_target_support s = gm_target_support_get((gm_torch_target)t, (gm_kernel_op)op, dts[d]);
        CHECK(s.family && strcmp(s.family, "?") != 0, "target %d op %d: a family", t, op);
        if (t == GM_TT_ZEN4 && !(op == GM_KOP_GELU_OPS && d == 0)) CHECK(s.exact, "zen4 op %d dtype %d exact", op, d);
      }
  // GPTMEG_SIMD is read once and cached; gm_simd_cap_reload makes a change take effect.
  const gm_simd_level own = gm_cpu_host()->simd;
  test_set_simd("scalar");
  CHECK(gm_cpu_simd() == GM_SIMD_SCALAR, "GPTMEG_SIMD=scalar, reloaded: level %d", (int)gm_cpu_simd());
  setenv("GPTMEG_SIMD", "avx512", 1);
  CHECK(gm_cpu_simd() == GM_SIMD_SCALAR, "a change without a reload is not read (the cached cap holds)");
  test_set_simd(NULL);
  CHECK(gm_cpu_simd() == own, "GPTMEG_SIMD unset, reloaded: level %d, this CPU's %d", (int)gm_cpu_simd(), (int)own);
  return test_done("test_target");
}
