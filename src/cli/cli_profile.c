// Numerics-profile options shared by the model commands (logits, generate, eval, info):
// --profile NAME and one flag per knob (gm_profile_set_knob), applied in the order given.
#include "cli/cli.h"
#include "gptmeg/ckpt.h"
#include "gptmeg/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
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

int cli_profile_of_model(const char *dir, char *name, size_t cap, char *from, size_t from_cap) {
  if (gm_megatron_detect(dir)) {
    snprintf(name, cap, "megatron");
    snprintf(from, from_cap, "the default for a Megatron checkpoint, %s", dir);
    return 1;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return 0; // no config: the model's loader says what is missing
  char *buf = NULL;
  size_t n = 0, got;
  char chunk[8192];
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && n < (16u << 20)) {
    char *b = realloc(buf, n + got + 1);
    if (!b) { free(buf); fclose(f); return gm_fail("out of memory reading %s", path); }
    buf = b;
    memcpy(buf + n, chunk, got);
    n += got;
  }
  fclose(f);
  if (!buf) return 0;
  buf[n] = 0;
  cJSON *r = cJSON_Parse(buf);
  free(buf);
  if (!r) return 0; // not JSON: gm_config_load reports it
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "gptmeg_profile");
  int rc = 0;
  if (p && !cJSON_IsNull(p)) {
    gm_profile tmp;
    if (!cJSON_IsString(p) || strlen(p->valuestring) >= cap)
      rc = gm_fail("%s: \"gptmeg_profile\" is not a profile name (valid: hf, hf-legacy, meg, megatron)", path);
    else if (gm_profile_get(p->valuestring, GM_F32, &tmp))
      rc = gm_fail("%s: \"gptmeg_profile\": \"%.64s\" is not a profile gptmeg knows (valid: hf, hf-legacy, meg, megatron)", path,
                   p->valuestring);
    else {
      snprintf(name, cap, "%s", p->valuestring);
      snprintf(from, from_cap, "recorded in %s", path);
      rc = 1;
    }
  }
  cJSON_Delete(r);
  return rc;
}

int cli_profile_recorded(cli_profile_opts *o, const char *dir) {
  if (o->profile || !dir) return 0;
  char from[4400];
  int k = cli_profile_of_model(dir, o->recorded, sizeof o->recorded, from, sizeof from);
  if (k < 0) return -1;
  if (k == 0) return 0;
  o->profile = o->recorded;
  const char *q = getenv("GPTMEG_QUIET"); // as the target note: scripts that want one error line set it
  if (!cli_quiet && !(q && *q && strcmp(q, "0") != 0)) fprintf(stderr, "gptmeg: profile %s (%s; --profile overrides it)\n", o->recorded, from);
  return 0;
}
