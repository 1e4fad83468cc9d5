// NGC's Megatron zip (gm_megatron_detect / gm_megatron_open / gm_gpt2_load on a .zip path): the
// goldens of tools/ref/gen_ngc_goldens.py (a legacy-format checkpoint_version-0 Megatron .pt in a
// zip, stored, deflated, and deflated under another folder) give every tensor bit-identical to
// transformers 4.47.1's converter run on the zip as its main() does (ref/), the same config, and
// the same logits under the megatron profile; the stored entry is read in place (no copy); the
// hostile zips (no entry, second rank, CRC and size lies, zip bomb, entry outside the file)
// each fail with one line.
#include "gptmeg/ckpt.h"
#include "gptmeg/model.h"
#include "harness.h"
#include "io/torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define G "tests/golden/megatron_zip/"

static const char *const zips[] = {G "stored.zip", G "deflated.zip", G "nested.zip"};

static void test_conversion(void) {
  gm_ckpt ref;
  gm_gpt2_config rcfg;
  if (gm_ckpt_open_safetensors(&ref, G "ref/model.safetensors") || gm_config_load(G "ref/config.json", &rcfg)) {
    CHECK(0, "%s", gm_errmsg());
    return;
  }
  for (size_t k = 0; k < sizeof zips / sizeof zips[0]; k++) {
    const char *z = zips[k];
    CHECK(gm_megatron_detect(z), "%s: not detected", z);
    gm_ckpt c;
    gm_gpt2_config cfg;
    gm_megatron_info info;
    if (gm_megatron_open(&c, &cfg, &info, z, false)) { CHECK(0, "%s: %s", z, gm_errmsg()); continue; }
    CHECK(info.tp == 1 && info.pp == 1 && info.checkpoint_version == 0 && info.has_args, "%s: tp %d pp %d version %g args %d", z, info.tp,
          info.pp, info.checkpoint_version, info.has_args);
    CHECK(info.release == (k < 2), "%s: release %d", z, info.release);
    CHECK(strstr(c.format, "megatron-lm zip") != NULL, "%s: format '%s'", z, c.format);
    struct stat sb;
    CHECK(stat(z, &sb) == 0 && c.file_bytes == (uint64_t)sb.st_size, "%s: file_bytes %llu", z, (unsigned long long)c.file_bytes);
    CHECK(c.n_tensors == ref.n_tensors, "%s: %d tensors, ref %d", z, c.n_tensors, ref.n_tensors);
    for (int i = 0; i < ref.n_tensors; i++) {
      const gm_ckpt_tensor *a = gm_ckpt_find(&c, ref.tensors[i].name), *b = &ref.tensors[i];
      if (!a) { CHECK(0, "%s: no %s", z, b->name); continue; }
      bool same = a->dtype == b->dtype && a->ndim == b->ndim && a->numel == b->numel && memcmp(a->shape, b->shape, sizeof a->shape) == 0 &&
                  memcmp(a->data, b->data, (size_t)a->numel * (a->dtype == GM_F32 ? 4 : 2)) == 0;
      CHECK(same, "%s: %s differs from transformers' converter", z, b->name);
    }
    CHECK(cfg.n_embd == rcfg.n_embd && cfg.n_layer == rcfg.n_layer && cfg.n_head == rcfg.n_head && cfg.n_inner == rcfg.n_inner &&
              cfg.vocab_size == rcfg.vocab_size && cfg.n_positions == rcfg.n_positions &&
              strcmp(cfg.activation_function, rcfg.activation_function) == 0 && cfg.layer_norm_epsilon == rcfg.layer_norm_epsilon,
          "%s: config differs from the converter's", z);
    gm_ckpt_close(&c);
  }
  gm_ckpt_close(&ref);
}

// The stored entry's tensors point into the zip's own mapping (read in place, no copy).
static void test_in_place(void) {
  gm_ckpt c;
  gm_meg_meta *meta = calloc(1, sizeof *meta);
  bool release = false;
  char entry[128];
  if (!meta) return;
  if (gm_megatron_zip_rank(&c, G "stored.zip", meta, &release, entry, sizeof entry)) { CHECK(0, "%s", gm_errmsg()); free(meta); return; }
  CHECK(release && strcmp(entry, "release/mp_rank_00/model_optim_rng.pt") == 0, "entry '%s'", entry);
  struct stat sb;
  CHECK(c.n_files == 1 && stat(G "stored.zip", &sb) == 0 && c.map_lens[0] == (size_t)sb.st_size, "the mapping is not the zip's");
  int inside = 0;
  for (int i = 0; i < c.n_tensors; i++) {
    const unsigned char *d = c.tensors[i].data, *m = c.maps[0];
    if (!c.tensors[i].owned && d >= m && d < m + c.map_lens[0]) inside++;
  }
  CHECK(c.n_tensors > 0 && inside == c.n_tensors, "%d of %d tensors in the zip's mapping", inside, c.n_tensors);
  gm_ckpt_close(&c);
  free(meta);
}

static void test_logits(void) {
  int32_t tok[12];
  for (int i = 0; i < 12; i++) tok[i] = (i * 37 + 5) % 128;
  gm_profile p;
  CHECK(gm_profile_get("megatron", GM_F32, &p) == 0, "profile");
  static float a[12 * 128], b[12 * 128];
  gm_gpt2 h;
  if (gm_gpt2_load(&h, G "ref")) { CHECK(0, "%s", gm_errmsg()); return; }
  CHECK(gm_gpt2_run(&h, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 12, .logits = b, .threads = 1}) == 0, "run");
  for (size_t k = 0; k < sizeof zips / sizeof zips[0]; k++) {
    gm_gpt2 m;
    if (gm_gpt2_load(&m, zips[k])) { CHECK(0, "%s: %s", zips[k], gm_errmsg()); continue; }
    CHECK(m.tied, "%s: not tied", zips[k]);
    CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 12, .logits = a, .threads = 1}) == 0, "run");
    CHECK(memcmp(a, b, sizeof a) == 0, "%s: logits differ from the converted directory's", zips[k]);
    gm_gpt2_free(&m);
  }
  gm_gpt2_free(&h);
}

static void expect_fail(const char *file, const char *want) {
  char path[256];
  snprintf(path, sizeof path, G "hostile/%s", file);
  CHECK(gm_megatron_detect(path), "%s: not detected", path);
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  int rc = gm_megatron_open(&c, &cfg, &info, path, false);
  CHECK(rc != 0, "%s accepted; expected '%s'", file, want);
  if (rc) {
    CHECK(strstr(gm_errmsg(), want) != NULL, "%s: message '%s' lacks '%s'", file, gm_errmsg(), want);
    CHECK(strchr(gm_errmsg(), '\n') == NULL, "%s: message is not one line: %s", file, gm_errmsg());
  } else gm_ckpt_close(&c);
}

static void test_hostile(void) {
  // The unedited small zips reach the torch reader (a 4 KiB head of the .pt): proof the edits below fail earlier.
  expect_fail("small_deflated.zip", "release/mp_rank_00/model_optim_rng.pt");
  expect_fail("small_stored.zip", "release/mp_rank_00/model_optim_rng.pt");
  expect_fail("no_entry.zip", "no zip entry release/mp_rank_00/model_optim_rng.pt, nor one named */mp_rank_00/model_optim_rng.pt");
  expect_fail("two_ranks.zip", "is another rank");
  expect_fail("crc.zip", "CRC-32");
  expect_fail("stored_crc.zip", "CRC-32");
  expect_fail("size_small.zip", "inflates to more than its declared");
  expect_fail("size_big.zip", "not its declared");
  expect_fail("bomb.zip", "zip bomb");
  expect_fail("outside.zip", "outside the file");
}

int main(void) {
  test_conversion();
  test_in_place();
  test_logits();
  test_hostile();
  return test_done("test_megatron_zip");
}
