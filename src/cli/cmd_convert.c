// gptmeg convert: a Megatron-LM checkpoint directory -> a HF GPT-2 directory (config.json +
// model.safetensors, each written atomically), as transformers' converter lays it out.
#include "cli.h"
#include "gptmeg/ckpt.h"
#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int write_config(const char *path, const gm_gpt2_config *cfg) {
  char *js = gm_config_to_json(cfg);
  cJSON *r = js ? cJSON_Parse(js) : NULL;
  free(js);
  if (!r) return gm_fail("out of memory");
  // The numerics profile gptmeg records for a Megatron-trained model (transformers keeps unknown keys silently).
  cJSON_AddStringToObject(r, "gptmeg_profile", "megatron");
  char *s = cJSON_Print(r);
  cJSON_Delete(r);
  if (!s) return gm_fail("out of memory");
  gm_outfile o;
  int rc = gm_outfile_open(&o, path);
  if (!rc) {
    fprintf(o.fp, "%s\n", s);
    rc = gm_outfile_commit(&o);
  }
  free(s);
  return rc;
}

int cmd_convert(int argc, char **argv) {
  const char *from = NULL, *out = NULL, *dts = NULL;
  bool trim = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: gptmeg convert --from DIR|FILE.zip --out HFDIR [--dtype f32|f16|bf16] [--trim-vocab]\n"
             "  A Megatron-LM checkpoint directory (latest_checkpointed_iteration.txt, mp_rank_* shards), or NGC's\n"
             "  zip of one (megatron_lm_345m_v0.0.zip: release/mp_rank_00/model_optim_rng.pt inside), to a\n"
             "  HF GPT-2 directory: config.json + model.safetensors, laid out as transformers'\n"
             "  convert_megatron_gpt2_checkpoint.py does. --dtype: the stored dtype (default: the checkpoint's);\n"
             "  --trim-vocab: keep the first 50257 rows of the padded vocabulary. docs/formats.md.\n");
      return 0;
    }
    if (strcmp(argv[i], "--from") == 0) { if (!(from = cli_value("convert", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--out") == 0) { if (!(out = cli_value("convert", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--dtype") == 0) { if (!(dts = cli_value("convert", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--trim-vocab") == 0) trim = true;
    else return cli_usage_error("convert", "unknown option '%s'", argv[i]);
  }
  if (!from || !out) return cli_usage_error("convert", "--from DIR and --out HFDIR are required");
  gm_dtype want = GM_F32;
  if (dts && gm_dtype_parse(dts, &want)) return cli_usage_error("convert", "%s", gm_errmsg());
  if (!gm_megatron_detect(from))
    return cli_fail("%s: not a Megatron-LM or Megatron-DeepSpeed checkpoint (no latest_checkpointed_iteration.txt, latest, mp_rank_00, mp_rank_00_000 or mp_rank_00_model_states.pt) and not a .zip", from);
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  if (gm_megatron_open(&c, &cfg, &info, from, trim)) return cli_fail("%s", gm_errmsg());
  int rc = 0;
  gm_st_entry *e = calloc((size_t)c.n_tensors, sizeof *e);
  void **conv = calloc((size_t)c.n_tensors, sizeof *conv);
  if (!e || !conv) rc = gm_fail("out of memory");
  for (int i = 0; i < c.n_tensors && !rc; i++) {
    const gm_ckpt_tensor *t = &c.tensors[i];
    gm_dtype dt = dts ? want : t->dtype;
    e[i] = (gm_st_entry){.name = t->name, .dtype = dt, .ndim = t->ndim, .data = t->data};
    memcpy(e[i].shape, t->shape, sizeof e[i].shape);
    if (dt != t->dtype) { // widened to f32 (exact), then rounded once to the target
      float *f = malloc((size_t)t->numel * 4 + 4);
      conv[i] = dt == GM_F32 ? (void *)f : malloc((size_t)t->numel * 2 + 2);
      if (!f || !conv[i]) { free(f); rc = gm_fail("out of memory"); break; }
      gm_ckpt_read_f32(t, f);
      if (dt != GM_F32) {
        uint16_t *h = conv[i];
        for (uint64_t k = 0; k < t->numel; k++) h[k] = dt == GM_F16 ? gm_f32_to_f16(f[k]) : gm_f32_to_bf16(f[k]);
        free(f);
      }
      e[i].data = conv[i];
    }
  }
  if (!rc && mkdir(out, 0755) != 0 && errno != EEXIST) rc = gm_fail("cannot create directory '%s': %s", out, strerror(errno));
  size_t pl = strlen(out) + 32;
  char *path = malloc(pl);
  if (!rc && !path) rc = gm_fail("out of memory");
  if (!rc) { snprintf(path, pl, "%s/model.safetensors", out); rc = gm_st_write(path, e, c.n_tensors); }
  if (!rc) { snprintf(path, pl, "%s/config.json", out); rc = write_config(path, &cfg); }
  if (!rc)
    printf("converted %s (%s, iteration %lld%s) -> %s: %d tensors, vocab %d; default profile: megatron\n", from, c.format,
           info.iteration, info.release ? ", release" : "", out, c.n_tensors, cfg.vocab_size);
  for (int i = 0; conv && i < c.n_tensors; i++) free(conv[i]);
  free(conv);
  free(e);
  free(path);
  gm_ckpt_close(&c);
  return rc ? cli_fail("%s", gm_errmsg()) : 0;
}
