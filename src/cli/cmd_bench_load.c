// gptmeg bench load: how long a checkpoint takes to open, as safetensors and as its PyTorch .bin
// twin, against memcpy of the same bytes (docs/performance.md, "Loading checkpoints").
#include "cli/cli.h"
#include "gptmeg/ckpt.h"
#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_load_help =
    "usage: gptmeg bench load --model DIR [--rounds N] [--json]\n"
    "\n"
    "DIR holds config.json, model.safetensors and pytorch_model.bin, the same tensors twice (the .bin\n"
    "from torch.save: bench/load_bin_vs_safetensors.sh makes the 124M pair). For each file, best of N\n"
    "rounds (default 7), interleaved:\n"
    "  open+touch  open the file (mmap, header or zip directory and pickle) and read one byte of every\n"
    "              4 KiB page of every tensor (tied ones once), then close: reading the weights in place;\n"
    "  model load  gm_gpt2_load_files: the same, widened into the model's f32 weights (what the model\n"
    "              commands do).\n"
    "and memcpy of the tensors' bytes between two buffers already in memory. ratio = .bin / safetensors.\n";

typedef struct {
  const char *path;
  bool bin;
  const gm_gpt2_config *cfg;
  uint64_t bytes;      // tensor bytes read (last run; a storage shared by tied tensors once)
  int tensors, copied; // tensors; strided views copied out by the reader
  volatile unsigned sink;
} load_ctx;

static int open_touch(load_ctx *c) {
  gm_ckpt ck;
  if (c->bin ? gm_torch_open(&ck, c->path) : gm_ckpt_open_safetensors(&ck, c->path)) return -1;
  unsigned s = 0;
  uint64_t bytes = 0;
  int copied = 0;
  for (int i = 0; i < ck.n_tensors; i++) {
    const gm_ckpt_tensor *t = &ck.tensors[i];
    size_t n = (size_t)t->numel * (t->dtype == GM_F32 ? 4 : 2);
    const unsigned char *p = t->data;
    bool seen = false; // a tied tensor (the .bin's lm_head.weight is wte's storage): its pages are read once
    for (int j = 0; j < i && !seen; j++) seen = ck.tensors[j].data == t->data;
    if (seen) continue;
    for (size_t o = 0; o < n; o += 4096) s += p[o];
    if (n) s += p[n - 1];
    bytes += n;
    copied += t->owned != NULL;
  }
  c->sink += s;
  c->bytes = bytes;
  c->tensors = ck.n_tensors;
  c->copied = copied;
  gm_ckpt_close(&ck);
  return 0;
}

static int model_load(load_ctx *c) {
  gm_gpt2 m;
  if (gm_gpt2_load_files(&m, c->cfg, c->path)) return -1;
  c->sink += (unsigned)m.n_params;
  gm_gpt2_free(&m);
  return 0;
}

int cmd_bench_load(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(bench_load_help, stdout); return CLI_OK; }
  const char *dir = NULL;
  long rounds = 7;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (!strcmp(argv[i], "--model")) { if (!(dir = cli_value("bench load", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(argv[i], "--rounds")) {
      if (!(v = cli_value("bench load", argc, argv, &i)) || cli_parse_long("bench load", "--rounds", v, 1, 1000, &rounds)) return CLI_USAGE;
    } else if (!strcmp(argv[i], "--json")) json = true;
    else return cli_usage_error("bench load", "unknown option '%s'", argv[i]);
  }
  if (!dir) return cli_usage_error("bench load", "--model DIR is required");
  char cp[4200], st[4200], bin[4200];
  snprintf(cp, sizeof cp, "%s/config.json", dir);
  snprintf(st, sizeof st, "%s/model.safetensors", dir);
  snprintf(bin, sizeof bin, "%s/pytorch_model.bin", dir);
  gm_gpt2_config cfg;
  if (gm_config_load(cp, &cfg)) return cli_fail("%s", gm_errmsg());
  load_ctx c[2] = {{.path = st, .bin = false, .cfg = &cfg}, {.path = bin, .bin = true, .cfg = &cfg}};
  double touch[2] = {1e30, 1e30}, load[2] = {1e30, 1e30}, copy = 1e30;
  // A first untimed pass: both files in the page cache, and every failure before any timing.
  for (int k = 0; k < 2; k++)
    if (open_touch(&c[k]) || model_load(&c[k])) return cli_fail("%s", gm_errmsg());
  size_t nb = (size_t)c[0].bytes;
  unsigned char *a = malloc(nb ? nb : 1), *b = malloc(nb ? nb : 1);
  if (!a || !b) { free(a); free(b); return cli_fail("out of memory for the memcpy baseline (%zu bytes)", nb); }
  memset(a, 1, nb);
  memset(b, 2, nb);
  for (long r = 0; r < rounds; r++) {
    for (int k = 0; k < 2; k++) {
      double t0 = gm_now_s();
      if (open_touch(&c[k])) { free(a); free(b); return cli_fail("%s", gm_errmsg()); }
      double t1 = gm_now_s();
      if (model_load(&c[k])) { free(a); free(b); return cli_fail("%s", gm_errmsg()); }
      double t2 = gm_now_s();
      if (t1 - t0 < touch[k]) touch[k] = t1 - t0;
      if (t2 - t1 < load[k]) load[k] = t2 - t1;
    }
    double t0 = gm_now_s();
    memcpy(r & 1 ? a : b, r & 1 ? b : a, nb);
    double t1 = gm_now_s();
    if (t1 - t0 < copy) copy = t1 - t0;
  }
  c[0].sink += a[nb / 2] + b[nb / 3];
  free(a);
  free(b);
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", dir);
    cJSON_AddNumberToObject(o, "rounds", (double)rounds);
    cJSON_AddNumberToObject(o, "tensor_bytes", (double)nb);
    const char *names[2] = {"safetensors", "bin"};
    for (int k = 0; k < 2; k++) {
      cJSON *x = cJSON_AddObjectToObject(o, names[k]);
      cJSON_AddNumberToObject(x, "open_touch_s", touch[k]);
      cJSON_AddNumberToObject(x, "model_load_s", load[k]);
      cJSON_AddNumberToObject(x, "tensors", c[k].tensors);
      cJSON_AddNumberToObject(x, "copied_views", c[k].copied);
    }
    cJSON_AddNumberToObject(o, "memcpy_s", copy);
    cJSON_AddNumberToObject(o, "ratio_open_touch", touch[1] / touch[0]);
    cJSON_AddNumberToObject(o, "ratio_model_load", load[1] / load[0]);
    char *s = cJSON_Print(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    printf("%s: %.1f MB of tensors, best of %ld rounds\n", dir, (double)nb / 1e6, rounds);
    printf("%-18s %12s %12s %8s %8s\n", "", "open+touch", "model load", "tensors", "copied");
    for (int k = 0; k < 2; k++)
      printf("%-18s %10.2f ms %10.2f ms %8d %8d\n", k ? "pytorch_model.bin" : "model.safetensors", touch[k] * 1e3, load[k] * 1e3,
             c[k].tensors, c[k].copied);
    printf("%-18s %10.2f ms\n", "memcpy (same bytes)", copy * 1e3);
    printf("ratio .bin / safetensors: open+touch %.3f, model load %.3f\n", touch[1] / touch[0], load[1] / load[0]);
  }
  return CLI_OK;
}
