// The torch CPU target on the command line: the global --torch-target NAME (or
// GPTMEG_TORCH_TARGET) and what `gptmeg info` prints of it.
#include "cli/cli.h"
#include "gptmeg/gelu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_quiet = false;
static int cli_target_from_flag = 0;

// Takes --torch-target NAME / --torch-target=NAME and --quiet out of argv, wherever they stand
// after the command name, and applies them. Returns the new argc, or -1 after a usage error.
int cli_take_global_options(int argc, char **argv) {
  int out = 0;
  for (int i = 0; i < argc; i++) {
    const char *name = NULL;
    if (strcmp(argv[i], "--torch-target") == 0) {
      if (i + 1 >= argc) { cli_usage_error(argv[0], "--torch-target needs a value"); return -1; }
      name = argv[++i];
    } else if (strncmp(argv[i], "--torch-target=", 15) == 0) {
      name = argv[i] + 15;
    } else if (strcmp(argv[i], "--quiet") == 0 && i > 0) {
      cli_quiet = true;
      continue;
    } else {
      argv[out++] = argv[i];
      continue;
    }
    gm_torch_target t;
    if (gm_torch_target_parse(name, &t)) { cli_usage_error(argv[0], "%s", gm_errmsg()); return -1; }
    gm_torch_target_set(t);
    cli_target_from_flag = 1;
  }
  argv[out] = NULL;
  return out;
}

// Once per run, before a command computes: a target whose fast kernels need instructions this CPU
// lacks runs their scalar twins (same bits, slower); say so on stderr unless --quiet.
void cli_target_note(const char *cmd) {
  const char *q = getenv("GPTMEG_QUIET");
  if (q && *q && strcmp(q, "0") != 0) cli_quiet = true;
  if (cli_quiet || strcmp(cmd, "info") == 0) return;
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  gm_cpu_features usable = gm_cpu_host()->features; // as far as GPTMEG_SIMD lets the kernels use them
  if (gm_cpu_simd() < GM_SIMD_AVX512) usable &= GM_CPU_LEVEL_AVX2;
  if (gm_cpu_simd() < GM_SIMD_AVX2) usable = 0;
  gm_cpu_features missing = ti->fast & ~usable;
  if (!missing) return;
  char names[256] = "";
  for (int b = 0; b < GM_CPU_N_FEATURES; b++)
    if (missing & (1u << b)) {
      const char *n = gm_cpu_feature_name(1u << b);
      if (*names) strncat(names, " ", sizeof names - strlen(names) - 1);
      strncat(names, n ? n : "?", sizeof names - strlen(names) - 1);
    }
  fprintf(stderr, "note: torch target %s: this CPU (or GPTMEG_SIMD) lacks %s, so the target's scalar twins run (same bits, slower; --quiet)\n",
          ti->name, names);
}

// Where the active target came from, in words.
static const char *target_source(void) {
  const char *env = getenv("GPTMEG_TORCH_TARGET");
  if (cli_target_from_flag) return "--torch-target";
  if (env && *env) return "GPTMEG_TORCH_TARGET";
  return "detected";
}

void cli_print_target(FILE *f) {
  bool exact_class;
  const gm_torch_target host = gm_torch_target_detect(gm_cpu_host(), &exact_class);
  const gm_torch_target t = gm_torch_target_active();
  const gm_torch_target_info *ti = gm_torch_target_get_info(t);
  fprintf(f, "torch target: %s (%s)\n", ti->name, target_source());
  fprintf(f, "  class:      %s\n", ti->describes);
  fprintf(f, "  this cpu:   %s%s\n", gm_torch_target_name(host),
          exact_class ? "" : " (nearest: this CPU is of no measured class)");
  fprintf(f, "  torch picks: ATen %s, MKL sgemm %s, oneDNN %s\n", gm_aten_capability_name(ti->aten),
          gm_mkl_sgemm_name(ti->mkl), gm_onednn_isa_name(ti->onednn));
  if (*ti->torch_env) fprintf(f, "  imitated on a larger CPU by: %s\n", ti->torch_env);
  if ((gm_cpu_host()->features & ti->fast) != ti->fast)
    fprintf(f, "  this cpu lacks some of the target's instructions: its scalar twins run (same bits, slower)\n");
  fprintf(f, "  %-10s %-5s %-6s %s\n", "op", "dtype", "bits", "PyTorch kernel on this target");
  static const gm_dtype dts[3] = {GM_F32, GM_F16, GM_BF16};
  int n_not = 0;
  for (int op = 0; op < GM_KOP_N; op++)
    for (int d = 0; d < 3; d++) {
      gm_target_support s = gm_target_support_get(t, (gm_kernel_op)op, dts[d]);
      n_not += !s.exact;
      fprintf(f, "  %-10s %-5s %-6s %s\n", gm_kernel_op_name((gm_kernel_op)op), gm_dtype_name(dts[d]),
              s.exact ? "exact" : s.partial ? "part" : "NOT", s.family);
      if (s.partial) fprintf(f, "  %-10s %-5s %-6s   part: %s\n", "", "", "", s.limits);
    }
  const char *how, *lib = gm_torch_lib_path(&how);
  fprintf(f, "  f32 gelu ops' tanh/erf/exp: %s\n",
          !lib ? "no torch installation found (GPTMEG_TORCH_MKL): computed in double and rounded, close to torch's, not bit for bit"
          : gm_gelu_torch_mkl_loaded() ? "torch's MKL VML, bit for bit" : "the torch library found has no MKL VML: computed in double");
  if (lib) fprintf(f, "    from %s (%s)\n", lib, how);
  if (n_not)
    fprintf(f, "  NOT: gptmeg does not reproduce that kernel yet and runs zen4's order there; part: the target's order\n"
               "  runs and matches torch on the goldens' shapes, not everywhere (docs/numerics.md, \"Torch CPU targets\")\n");
}

// One line for commands that compute: the target, and the ops not exact under it in dtype dt.
void cli_target_line(gm_dtype dt, char *buf, size_t n) {
  const gm_torch_target t = gm_torch_target_active();
  char gaps[192];
  if (gm_target_gaps(t, &dt, 1, gaps, sizeof gaps)) snprintf(buf, n, "torch target %s; not exact there: %s", gm_torch_target_name(t), gaps);
  else snprintf(buf, n, "torch target %s", gm_torch_target_name(t));
}
