// Megatron-LM checkpoints (gm_megatron_open, gm_gpt2_load on a Megatron directory): the goldens
// of tools/ref/gen_megatron_goldens.py (checkpoint_version 0/2/3, TP 1 and 2, PP 1 and 2, args
// as argparse.Namespace, NumPy RNG and optimizer state beside the model) give every tensor
// bit-identical to transformers 4.47.1's converter output (ref/), the same config, and the same
// logits under the megatron profile; hostile files each fail with one line. The same for the
// Megatron-DeepSpeed layouts (global_step10/: pipeline layer files at TP 1 and TP 2 x PP 2, older
// DeepSpeed's flat fp16 buffer, --no-pipeline-parallel 'module') and checkpoint_version 1.
#include "gptmeg/ckpt.h"
#include "gptmeg/model.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ds: a Megatron-DeepSpeed layout (global_step10/, layer files or 'module'); those four share one
// model, and so one reference (ds_ref).
static const struct { const char *name; int tp, pp; double ver; bool ds, layer_files; const char *ref; } cases[] = {
    {"v0_tp1", 1, 1, 0, false, false, NULL}, {"v0_tp2", 2, 1, 0, false, false, NULL}, {"v2_tp1", 1, 1, 2, false, false, NULL},
    {"v3_tp2_pp2", 2, 2, 3, false, false, NULL}, {"v1_tp1", 1, 1, 1, false, false, NULL},
    {"ds_tp1_pp1", 1, 1, 3, true, true, "ds_ref"}, {"ds_tp2_pp2", 2, 2, 3, true, true, "ds_ref"},
    {"ds_flat", 1, 2, 3, true, true, "ds_ref"}, {"ds_nopipe", 2, 1, 3, true, false, "ds_ref"}};

// The reference directory of case k (transformers' converter's output).
static void ref_dir(size_t k, char *r, size_t n) {
  if (cases[k].ref) snprintf(r, n, "tests/golden/megatron/%s", cases[k].ref);
  else snprintf(r, n, "tests/golden/megatron/%s/ref", cases[k].name);
}

static void test_conversion(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char d[256], r[300];
    char rd[256];
    snprintf(d, sizeof d, "tests/golden/megatron/%s", cases[k].name);
    ref_dir(k, rd, sizeof rd);
    snprintf(r, sizeof r, "%s/model.safetensors", rd);
    CHECK(gm_megatron_detect(d), "%s: not detected", d);
    gm_ckpt c, ref;
    gm_gpt2_config cfg, rcfg;
    gm_megatron_info info;
    if (gm_megatron_open(&c, &cfg, &info, d, false)) { CHECK(0, "%s: %s", d, gm_errmsg()); continue; }
    CHECK(info.tp == cases[k].tp && info.pp == cases[k].pp && info.checkpoint_version == cases[k].ver && info.has_args,
          "%s: tp %d pp %d version %g", d, info.tp, info.pp, info.checkpoint_version);
    CHECK(info.deepspeed == cases[k].ds && info.ds_layer_files == cases[k].layer_files && (info.release || info.iteration == 10) &&
              (!cases[k].ds || info.global_step == 10),
          "%s: deepspeed %d layer files %d iteration %lld global_step %lld", d, info.deepspeed, info.ds_layer_files, info.iteration,
          info.global_step);
    CHECK(strncmp(c.format, cases[k].ds ? "megatron-deepspeed (global_step10, " : "megatron-lm (", cases[k].ds ? 35 : 13) == 0,
          "%s: format '%s'", d, c.format);
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
    snprintf(r, sizeof r, "%s/config.json", rd);
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
    ref_dir(k, r, sizeof r);
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

// Megatron-DeepSpeed: hostile directories (tools/ref/gen_megatron_goldens.py ds_hostile, a tiny
// model) each refused in one line naming the file or folder and what is wrong.
static void test_ds_hostile(void) {
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  static const struct { const char *dir, *want; } h[] = {
      {"unknown_key", "layer_02-model_00-model_states.pt: a transformer layer file with an unknown key 'self_attention.rotary.inv_freq'"},
      {"missing_layer", "args say 2 layers but the layer files hold 1 (a missing layer)"},
      {"tp_mismatch", "args say tensor parallel size 1 but the layer files hold 2 TP ranks"},
      {"latest_missing", "latest names 'global_step99' but tests/golden/megatron/ds_hostile/latest_missing/global_step99 is not a folder"},
      {"flat_outside", "layer_03-model_00-model_states.pt: tensor 'mlp.dense_4h_to_h.bias': view (offset 8, size [8], stride [1]) "
                       "reaches element 15 of storage"}};
  for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
    char d[256];
    snprintf(d, sizeof d, "tests/golden/megatron/ds_hostile/%s", h[i].dir);
    CHECK(gm_megatron_detect(d), "%s: not detected", d);
    expect_fail(gm_megatron_open(&c, &cfg, &info, d, false), h[i].want);
    gm_gpt2 m;
    expect_fail(gm_gpt2_load(&m, d), h[i].want);
  }
  // Made here from ds_tp1_pp1's files by symlinks: a layer index missing between two transformer
  // layers, and a layer file that is no kind of layer (a HF state dict).
  char tmp[] = "/tmp/gptmeg-test-ds-XXXXXX", g[300], l[400], t[2600];
  if (!mkdtemp(tmp)) { CHECK(0, "mkdtemp"); return; }
  char cwd[2048];
  CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
  snprintf(g, sizeof g, "%s/global_step10", tmp);
  CHECK(mkdir(g, 0700) == 0, "mkdir %s", g);
  static const struct { const char *to, *from; } gap[] = {
      {"latest", "ds_tp1_pp1/latest"}, {"global_step10/mp_rank_00_model_states.pt", "ds_tp1_pp1/global_step10/mp_rank_00_model_states.pt"},
      {"global_step10/layer_01-model_00-model_states.pt", "ds_tp1_pp1/global_step10/layer_01-model_00-model_states.pt"},
      {"global_step10/layer_02-model_00-model_states.pt", "ds_tp1_pp1/global_step10/layer_02-model_00-model_states.pt"},
      {"global_step10/layer_05-model_00-model_states.pt", "ds_tp1_pp1/global_step10/layer_03-model_00-model_states.pt"},
      {"global_step10/layer_06-model_00-model_states.pt", "ds_tp1_pp1/global_step10/layer_04-model_00-model_states.pt"}};
  for (size_t i = 0; i < sizeof gap / sizeof gap[0]; i++) {
    snprintf(l, sizeof l, "%s/%s", tmp, gap[i].to);
    snprintf(t, sizeof t, "%s/tests/golden/megatron/%s", cwd, gap[i].from);
    CHECK(symlink(t, l) == 0, "symlink %s", l);
  }
  expect_fail(gm_megatron_open(&c, &cfg, &info, tmp, false),
              "global_step10: no layer_03 between transformer layers layer_02 and layer_05 (a missing layer)");
  snprintf(l, sizeof l, "%s/global_step10/layer_05-model_00-model_states.pt", tmp);
  snprintf(t, sizeof t, "%s/tests/golden/checkpoints/zip/pytorch_model.bin", cwd);
  CHECK(unlink(l) == 0 && symlink(t, l) == 0, "symlink %s", l);
  expect_fail(gm_megatron_open(&c, &cfg, &info, tmp, false),
              "layer_05-model_00-model_states.pt: a layer file with an unknown key set (first key 'transformer.");
  // The tied embedding copy at the end of the pipe (older versions wrote it): the same bits are
  // accepted and change nothing; other bits are refused.
  snprintf(l, sizeof l, "%s/global_step10/layer_05-model_00-model_states.pt", tmp);
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp1_pp1/global_step10/layer_03-model_00-model_states.pt", cwd);
  CHECK(unlink(l) == 0 && symlink(t, l) == 0, "symlink %s", l);
  snprintf(l, sizeof l, "%s/global_step10/layer_06-model_00-model_states.pt", tmp);
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp1_pp1/global_step10/layer_04-model_00-model_states.pt", cwd);
  CHECK(unlink(l) == 0 && symlink(t, l) == 0, "symlink %s", l);
  snprintf(l, sizeof l, "%s/global_step10/layer_03-model_00-model_states.pt", tmp); // layers 02, 03 (as layer_05), norm layer_06
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp1_pp1/global_step10/layer_03-model_00-model_states.pt", cwd);
  CHECK(symlink(t, l) == 0, "symlink %s", l);
  snprintf(l, sizeof l, "%s/global_step10/layer_05-model_00-model_states.pt", tmp);
  unlink(l);
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp1_pp1/global_step10/layer_04-model_00-model_states.pt", cwd);
  snprintf(l, sizeof l, "%s/global_step10/layer_04-model_00-model_states.pt", tmp);
  CHECK(symlink(t, l) == 0, "symlink %s", l);
  snprintf(l, sizeof l, "%s/global_step10/layer_06-model_00-model_states.pt", tmp);
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp1_pp1/global_step10/layer_01-model_00-model_states.pt", cwd);
  CHECK(unlink(l) == 0 && symlink(t, l) == 0, "symlink %s", l);
  gm_ckpt a, b;
  if (gm_megatron_open(&a, &cfg, &info, tmp, false) == 0) {
    if (gm_megatron_open(&b, &cfg, &info, "tests/golden/megatron/ds_tp1_pp1", false) == 0) {
      bool same = a.n_tensors == b.n_tensors;
      for (int i = 0; i < a.n_tensors && same; i++)
        same = strcmp(a.tensors[i].name, b.tensors[i].name) == 0 && a.tensors[i].numel == b.tensors[i].numel &&
               memcmp(a.tensors[i].data, b.tensors[i].data, (size_t)a.tensors[i].numel * 2) == 0;
      CHECK(same, "a tied embedding copy changed the model");
      gm_ckpt_close(&b);
    } else CHECK(0, "%s", gm_errmsg());
    gm_ckpt_close(&a);
  } else CHECK(0, "tied copy refused: %s", gm_errmsg());
  snprintf(t, sizeof t, "%s/tests/golden/megatron/ds_tp2_pp2/global_step10/layer_01-model_00-model_states.pt", cwd);
  CHECK(unlink(l) == 0 && symlink(t, l) == 0, "symlink %s", l);
  expect_fail(gm_megatron_open(&a, &cfg, &info, tmp, false), "layer_06-model_00-model_states.pt: the tied word_embeddings.weight "
                                                              "(layer_06) differs from layer_01's");
  unlink(l);
  snprintf(l, sizeof l, "%s/global_step10/layer_03-model_00-model_states.pt", tmp);
  unlink(l);
  snprintf(l, sizeof l, "%s/global_step10/layer_04-model_00-model_states.pt", tmp);
  unlink(l);
  // With a config.json beside `latest` it is a HF directory (transformers' Trainer + DeepSpeed).
  CHECK(gm_megatron_detect(tmp), "%s: not detected", tmp);
  snprintf(l, sizeof l, "%s/config.json", tmp);
  snprintf(t, sizeof t, "%s/tests/golden/checkpoints/zip/config.json", cwd);
  CHECK(symlink(t, l) == 0, "symlink %s", l);
  CHECK(!gm_megatron_detect(tmp), "%s: a folder with config.json taken as Megatron-DeepSpeed", tmp);
  unlink(l);
  for (size_t i = 0; i < sizeof gap / sizeof gap[0]; i++) {
    snprintf(l, sizeof l, "%s/%s", tmp, gap[i].to);
    unlink(l);
  }
  rmdir(g);
  rmdir(tmp);
}

// Older DeepSpeed's flat buffer: every tensor of ds_flat's layer files is a view at an offset
// into one storage several times its size, read in place (no copy of the view, none of the buffer).
static void test_ds_flat_in_place(void) {
  static const char *f[] = {"layer_01-model_00-model_states.pt", "layer_02-model_00-model_states.pt",
                            "layer_03-model_00-model_states.pt", "layer_04-model_00-model_states.pt"};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    char p[300];
    snprintf(p, sizeof p, "tests/golden/megatron/ds_flat/global_step10/%s", f[i]);
    gm_ckpt c;
    if (gm_torch_open(&c, p)) { CHECK(0, "%s", gm_errmsg()); continue; }
    const unsigned char *lo = c.maps[0], *hi = lo + c.map_lens[0];
    uint64_t bytes = 0;
    for (int k = 0; k < c.n_tensors; k++) {
      const gm_ckpt_tensor *t = &c.tensors[k];
      bytes += t->numel * 2;
      CHECK(!t->owned && (const unsigned char *)t->data >= lo && (const unsigned char *)t->data + t->numel * 2 <= hi,
            "%s: %s is not read in place", p, t->name);
      CHECK(t->dtype == GM_F16, "%s: %s is not f16", p, t->name);
    }
    // One flat storage for the stage: every file holds all of it (the stage's tensors + 256 padding).
    CHECK(c.map_lens[0] > bytes + 512, "%s: the file (%zu bytes) is not larger than its views (%llu bytes)", p, c.map_lens[0],
          (unsigned long long)bytes);
    gm_ckpt_close(&c);
  }
}

int main(void) {
  test_conversion();
  test_logits();
  test_hostile();
  test_ds_hostile();
  test_ds_flat_in_place();
  return test_done("test_megatron");
}
