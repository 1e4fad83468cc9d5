// Numerics-profile options shared by the model commands (logits, generate, eval, info):
// --profile NAME and one flag per knob (gm_profile_set_knob), applied in the order given.
#include "cli/cli.h"
#include "gptmeg/model.h"

#include <string.h>

const char *const cli_profile_help =
    "  --profile P         hf (default), hf-legacy, meg, megatron (docs/numerics.md,\n"
    "                      'GPT-2 numerics profiles'; gptmeg info --profile P)\n"
    "  --ln native|fp32    layer norm in the dtype, or in f32 cast back\n"
    "  --scores matmul-div|baddbmm   scale after the rounded q@k^T, or inside the gemm\n"
    "  --mask finfo|-1e4|-inf        masked score value\n"
    "  --softmax dtype|fp32          softmax of the dtype's scores, or of f32 scores (then cast)\n"
    "  --act SPEC          VARIANT[:MODE] overrides the config's activation; 'config' restores it\n"
    "  --qk-layer-scaling on|off     Megatron's alpha/L in the scores, *L in f32 before softmax\n"
    "  --bias-act fused|separate     Megatron's bias-GELU fused in f32, or c_fc's bias in the gemm\n";

int cli_profile_option(const char *cmd, int argc, char **argv, int *i, cli_profile_opts *o) {
  const char *a = argv[*i];
  if (strncmp(a, "--", 2) != 0) return 0;
  const char *name = a + 2;
  bool is_profile = strcmp(name, "profile") == 0, is_knob = false;
  for (int k = 0; gm_profile_knobs[k]; k++)
    if (strcmp(name, gm_profile_knobs[k]) == 0) is_knob = true;
  if (!is_profile && !is_knob) return 0;
  const char *v = cli_value(cmd, argc, argv, i);
  if (!v) return -1;
  if (is_profile) {
    o->profile = v;
  } else {
    if (o->n_knobs >= CLI_MAX_KNOBS) return cli_usage_error(cmd, "too many knob options"), -1;
    o->knob[o->n_knobs] = name;
    o->value[o->n_knobs] = v;
    o->n_knobs++;
  }
  return 1;
}

int cli_profile_build(const cli_profile_opts *o, gm_dtype dt, gm_profile *p) {
  if (gm_profile_get(o->profile ? o->profile : "hf", dt, p)) return -1;
  for (int k = 0; k < o->n_knobs; k++)
    if (gm_profile_set_knob(p, o->knob[k], o->value[k])) return -1;
  return 0;
}
