// Megatron-LM checkpoints (gm_megatron_open, gm_gpt2_load on a Megatron directory): the goldens
// of tools/ref/gen_megatron_goldens.py (checkpoint_version 0/2/3, TP 1 and 2, PP 1 and 2, args
// as argparse.Namespace, NumPy RNG and optimizer state beside the model) give every tensor
// bit-identical to transformers 4.47.1's converter output (ref/), the same config, and the same
// logits under the megatron profile; hostile files each fail with one line.
#include "gptmeg/ckpt.h"
#include "gptmeg/model.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int tp, pp; double ver; } cases[] = {
    {"v0_tp1", 1, 1, 0}, {"v0_tp2", 2, 1, 0}, {"v2_tp1", 1, 1, 2}, {"v3_tp2_pp2", 2, 2, 3}};

static void test_conversion(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char d[256], r[300];
    snprintf(d, sizeof d, "tests/golden/megatron/%s", cases[k].name);
    snprintf(r, sizeof r, "%s/ref/model.safetensors", d);
    CHECK(gm_megatron_detect(d), "%s: not detected", d);
    gm_ckpt c, ref;
    gm_gpt2_config cfg, rcfg;
    gm_megatron_info info;
    if (gm_megatron_open(&c, &cfg, &info, d, false)) { CHECK(0, "%s: %s", d, gm_errmsg()); continue; }
    CHECK(info.tp == cases[k].tp && info.pp == cases[k].pp && info.checkpoint_version == cases[k].ver && info.has_args,
          "%s: tp %d pp %d version %g", d, info.tp, info.pp, info.checkpoint_version);
    if (gm_ckpt_open_safetensors(&ref, r)) { CHECK(0, "%s", gm_errmsg()); gm_ckpt_close(&c); continue; }
    CHECK(c.n_tensors == ref.n_tensors, "%s: %d tensors, ref %d", d, c.n_tensors, ref.n_tensors);
    for (int i = 0; i < ref.n_tensors; i++) {
      const gm_ckpt_tensor *a = gm_ckpt_find(&c, ref.tensors[i].name), *b = &ref.tensors[i];
      if (!a) { CHECK(0, "%s: no %s", d, b->name); continue; }
      bool same = a->dtype == b->dtype && a->ndim == b->ndim && a->numel == b->numel &&
                  memcmp(a->shape, b->shape, sizeof a->shape) == 0 &&
                  memcmp(a->data, b->data, (size_t)a->numel * (a->dtype == GM_F32 ? 4 : 2)) == 0;
      CHECK(same, "%s: %s differs from transformers' converter", d, b->name);
    }
    snprintf(r, sizeof r, "%s/ref/config.json", d);
    if (gm_config_load(r, &rcfg) == 0) {
      CHECK(cfg.n_embd == rcfg.n_embd && cfg.n_layer == rcfg.n_layer && cfg.n_head == rcfg.n_head && cfg.n_inner == rcfg.n_inner &&
            cfg.vocab_size == rcfg.vocab_size && cfg.n_positions == rcfg.n_positions &&
            strcmp(cfg.activation_function, rcfg.activation_function) == 0 && cfg.layer_norm_epsilon == rcfg.layer_norm_epsilon,
            "%s: config differs from the converter's", d);
    } else CHECK(0, "%s", gm_errmsg());
    gm_ckpt_close(&ref);
    gm_ckpt_close(&c);
  }
}

static void test_logits(void) {
  int32_t tok[12];
  for (int i = 0; i < 12; i++) tok[i] = (i * 37 + 5) % 128;
  gm_profile p;
  CHECK(gm_profile_get("megatron", GM_F32, &p) == 0, "profile");
  static float a[12 * 128], b[12 * 128];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char d[256], r[300];
    snprintf(d, sizeof d, "tests/golden/megatron/%s", cases[k].name);
    snprintf(r, sizeof r, "%s/ref", d);
    gm_gpt2 m, h;
    if (gm_gpt2_load(&m, d)) { CHECK(0, "%s: %s", d, gm_errmsg()); continue; }
    if (gm_gpt2_load(&h, r)) { CHECK(0, "%s: %s", r, gm_errmsg()); gm_gpt2_free(&m); continue; }
    CHECK(m.tied, "%s: not tied", d);
    CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 12, .logits = a, .threads = 1}) == 0, "run");
    CHECK(gm_gpt2_run(&h, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 12, .logits = b, .threads = 1}) == 0, "run");
    CHECK(memcmp(a, b, sizeof a) == 0, "%s: logits differ from the converted directory's", d);
    gm_gpt2_free(&m);
    gm_gpt2_free(&h);
  }
}

static void expect_fail(int rc, const char *want) {
  CHECK(rc != 0, "accepted; expected '%s'", want);
  if (rc) {
    CHECK(strstr(gm_errmsg(), want) != NULL, "message '%s' lacks '%s'", gm_errmsg(), want);
    CHECK(strchr(gm_errmsg(), '\n') == NULL, "message is not one line: %s", gm_errmsg());
  }
}

static void test_hostile(void) {
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  expect_fail(gm_torch_open(&c, "tests/golden/megatron/hostile/namespace_plain.bin"),
              "argparse.Namespace is read only inside a Megatron checkpoint");
  expect_fail(gm_megatron_open(&c, &cfg, &info, "tests/golden/megatron/hostile/bad_args", false),
              "GLOBAL fractions.Fraction is not an allowed global");
  // A Megatron .pt through the plain reader: NEWOBJ / Namespace refused there too.
  expect_fail(gm_torch_open(&c, "tests/golden/megatron/v0_tp1/iter_0000010/mp_rank_00/model_optim_rng.pt"), "argparse.Namespace");
}

int main(void) {
  test_conversion();
  test_logits();
  test_hostile();
  return test_done("test_megatron");
}
