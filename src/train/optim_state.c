// The Adam state file: enough to resume a run bit for bit (the step count and both moments of each
// tensor). Layout (little-endian; docs/training.md "State file"):
//   "GMOPTST1" | u32 version (1) | u32 kind (gm_adam_kind) | u32 impl (gm_adam_impl) | u32 k
//   | f64 beta1, beta2, eps, weight_decay, 0 (reserved)
//   | k times: u64 n | i64 step | n f32 exp_avg | n f32 exp_avg_sq
// No numerics: bytes are copied as they are.
#include "gptmeg/optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char MAGIC[8] = {'G', 'M', 'O', 'P', 'T', 'S', 'T', '1'};
enum { VERSION = 1 };

static bool put(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }
static bool get(FILE *f, void *p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

int gm_adam_state_save(const char *path, const gm_adam_cfg *cfg, const gm_adam_state *states, int k) {
  if (!path || !cfg || k < 0 || (k > 0 && !states)) return gm_fail("adam state save: bad arguments");
  gm_outfile o;
  if (gm_outfile_open(&o, path) != 0) return -1;
  FILE *f = o.fp;
  uint32_t head[4] = {VERSION, (uint32_t)cfg->kind, (uint32_t)cfg->impl, (uint32_t)k};
  double hyper[5] = {cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, 0.0};
  bool ok = put(f, MAGIC, 8) && put(f, head, sizeof head) && put(f, hyper, sizeof hyper);
  for (int i = 0; ok && i < k; i++) {
    uint64_t n = states[i].n;
    int64_t step = states[i].step;
    ok = put(f, &n, 8) && put(f, &step, 8) && put(f, states[i].exp_avg, n * sizeof(float)) &&
         put(f, states[i].exp_avg_sq, n * sizeof(float));
  }
  if (!ok) {
    gm_outfile_abort(&o);
    return gm_fail("%s: write failed", path);
  }
  return gm_outfile_commit(&o);
}

int gm_adam_state_load(const char *path, const gm_adam_cfg *cfg, gm_adam_state *states, int k) {
  if (!path || !cfg || k < 0 || (k > 0 && !states)) return gm_fail("adam state load: bad arguments");
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("%s: cannot open the optimizer state", path);
  char magic[8];
  uint32_t head[4];
  double hyper[5];
  int rc = 0;
  if (!get(f, magic, 8) || memcmp(magic, MAGIC, 8) != 0) {
    rc = gm_fail("%s: not a gptmeg optimizer state (bad magic)", path);
  } else if (!get(f, head, sizeof head) || !get(f, hyper, sizeof hyper)) {
    rc = gm_fail("%s: truncated header", path);
  } else if (head[0] != VERSION) {
    rc = gm_fail("%s: optimizer state version %u, this gptmeg reads version %d", path, head[0], VERSION);
  } else if (head[1] != (uint32_t)cfg->kind) {
    rc = gm_fail("%s: a state of %s, the optimizer is %s", path, head[1] == GM_ADAMW ? "AdamW" : "Adam",
                 cfg->kind == GM_ADAMW ? "AdamW" : "Adam");
  } else if (head[3] != (uint32_t)k) {
    rc = gm_fail("%s: a state of %u tensors, the model has %d", path, head[3], k);
  }
  // Two passes: check every size first, so a mismatch leaves states unchanged.
  long start = ftell(f);
  for (int i = 0; rc == 0 && i < k; i++) {
    uint64_t n;
    int64_t step;
    if (!get(f, &n, 8) || !get(f, &step, 8)) {
      rc = gm_fail("%s: truncated at tensor %d", path, i);
    } else if (n != states[i].n) {
      rc = gm_fail("%s: tensor %d has %llu elements in the state, %zu in the model", path, i,
                   (unsigned long long)n, states[i].n);
    } else if (step < 0) {
      rc = gm_fail("%s: tensor %d has a negative step %lld", path, i, (long long)step);
    } else if (fseek(f, (long)(2 * n * sizeof(float)), SEEK_CUR) != 0) {
      rc = gm_fail("%s: truncated at tensor %d", path, i);
    }
  }
  if (rc == 0) {
    // the end: nothing may follow, and each seek above must have landed inside the file
    long end_expected = ftell(f);
    if (fseek(f, 0, SEEK_END) != 0 || ftell(f) != end_expected)
      rc = gm_fail("%s: %s", path, ftell(f) < end_expected ? "truncated" : "trailing bytes after the last tensor");
  }
  if (rc == 0 && fseek(f, start, SEEK_SET) != 0) rc = gm_fail("%s: seek failed", path);
  for (int i = 0; rc == 0 && i < k; i++) {
    uint64_t n;
    int64_t step;
    if (!get(f, &n, 8) || !get(f, &step, 8) || !get(f, states[i].exp_avg, n * sizeof(float)) ||
        !get(f, states[i].exp_avg_sq, n * sizeof(float)))
      rc = gm_fail("%s: read failed at tensor %d", path, i);
    else
      states[i].step = (long)step;
  }
  fclose(f);
  return rc;
}
