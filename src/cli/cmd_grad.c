// gptmeg grad: one training step's loss and every parameter's gradient (argument parsing, reading
// the tokens and writing the file; the work is gm_gpt2_grad).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void grad_help(FILE *f) {
  fprintf(f,
          "usage: gptmeg grad --model DIR --tokens-npy T.npy --out G.safetensors [--labels-npy L.npy]\n"
          "                   [--dtype f32|f16|bf16 | --autocast] [--threads N] [--profile P] [KNOB OPTIONS]\n"
          "  The loss and gradients of `model(tokens, labels=tokens).loss.backward()` of transformers'\n"
          "  GPT2LMHeadModel (eager attention, dropout off) under the numerics profile: tokens [B, T] or [T]\n"
          "  int32/int64; labels (same shape, -100 = not scored) default to the tokens, shifted by one as\n"
          "  transformers shifts them. G.safetensors holds \"loss\" (f32, shape [1]) and every parameter's\n"
          "  gradient under its checkpoint name, in the run's dtype (wte's includes the tied lm_head's).\n"
          "  --autocast: the f32 model's forward under torch.autocast('cpu', dtype=torch.bfloat16), backward\n"
          "  outside (recipe bf16-autocast's step: the profile's bf16 numerics for linears, attention and\n"
          "  activation on a bf16 copy of the weights; embeddings, layer norms, residual stream f32); f32 gradients.\n"
          "  Prints the loss.\n%s",
          cli_profile_help);
}

int cmd_grad(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { grad_help(stdout); return CLI_OK; }
  const char *dir = NULL, *npy = NULL, *lnpy = NULL, *out = NULL, *dts = "f32";
  long threads = 0;
  bool autocast = false;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = cli_profile_option("grad", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (!strcmp(a, "--model")) { if (!(dir = cli_value("grad", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--tokens-npy")) { if (!(npy = cli_value("grad", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--labels-npy")) { if (!(lnpy = cli_value("grad", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--out")) { if (!(out = cli_value("grad", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dtype")) { if (!(dts = cli_value("grad", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--autocast")) autocast = true;
    else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value("grad", argc, argv, &i)) || cli_parse_long("grad", a, v, 1, 1024, &threads)) return CLI_USAGE;
    } else return cli_usage_error("grad", "unknown option '%s'", a);
  }
  if (!dir || !npy || !out) return cli_usage_error("grad", "--model, --tokens-npy and --out are required");
  gm_dtype dt;
  if (gm_dtype_parse(dts, &dt)) return cli_usage_error("grad", "%s", gm_errmsg());
  if (cli_profile_recorded(&po, dir)) return cli_fail("%s", gm_errmsg());
  if (autocast && dt != GM_F32) return cli_usage_error("grad", "--autocast runs an f32 model: no --dtype %s", dts);
  gm_profile p;
  if (cli_profile_build(&po, autocast ? GM_BF16 : dt, &p)) return cli_fail("%s", gm_errmsg());

  int32_t *ids = NULL, *labels = NULL;
  size_t n = 0, nl = 0;
  int B = 0, T = 0, LB = 0, LT = 0;
  if (cli_read_tokens_npy(npy, false, &ids, &n, &B, &T)) return cli_fail("%s", gm_errmsg());
  if (lnpy && cli_read_tokens_npy(lnpy, false, &labels, &nl, &LB, &LT)) { free(ids); return cli_fail("%s", gm_errmsg()); }
  if (labels && (LB != B || LT != T)) {
    free(ids), free(labels);
    return cli_fail("%s is [%d, %d] but the tokens are [%d, %d]: labels need the tokens' shape", lnpy, LB, LT, B, T);
  }
  gm_gpt2 m, g = {0}, work = {0}; // work: autocast's bf16 copy of the weights
  if (gm_gpt2_load(&m, dir)) { free(ids), free(labels); return cli_fail("%s", gm_errmsg()); }
  int rc = gm_gpt2_to_dtype(&m, dt);
  if (!rc && autocast && m.file_dtype != GM_F32)
    rc = gm_fail("--autocast needs an f32 checkpoint (this one holds %s weights)", gm_dtype_name(m.file_dtype));
  if (!rc && autocast) rc = gm_gpt2_alloc_working(&work, &m, GM_BF16) || gm_gpt2_set_weights(&work, &m, (int)threads);
  if (!rc) rc = gm_gpt2_alloc_like(&g, &m);
  float loss = 0.0f;
  int64_t scored = 0;
  if (!rc) {
    gm_gpt2_grad_opts o = {&p, ids, labels, B, T, (int)threads, 1.0f, autocast ? &work : NULL};
    rc = gm_gpt2_grad(&m, &o, &g, &loss, &scored);
  }
  if (!rc) {
    gm_st_entry extra = {"loss", GM_F32, 1, {1}, &loss};
    rc = gm_gpt2_write_tensors(&g, out, dt, &extra, 1);
  }
  gm_gpt2_free(&g);
  gm_gpt2_free(&work);
  gm_gpt2_free(&m);
  free(ids);
  free(labels);
  if (rc) return cli_fail("%s", gm_errmsg());
  printf("loss %.9g  (%lld labels scored, B %d, T %d, %s, profile %s) -> %s\n", loss, (long long)scored, B, T,
         autocast ? "f32 under bf16 autocast" : gm_dtype_name(dt), p.name, out);
  return CLI_OK;
}
