// gm_op_attention_bwd against torch 2.15 autograd (tools/ref/gen_attention_bwd_goldens.py, made on
// an Intel Xeon with AMX, natively for intel-amx and under the dispatch caps that imitate
// intel-avx512-bf16, intel-avx512 and avx2; each target set here in turn; a target's file holds
// the cases whose bits differ from intel-amx's). Not reproduced (skipped with the measured
// fraction): avx2 f32 at T = 200 (MKL's AVX2 packed sgemm). Each golden case names a
// profile, dtype, B, NH, hd, T, layer (2: scale_attn_by_inverse_layer_idx) and the torch thread
// count(s) that gave its bits ("12": both); the inputs come from the generator both sides share
// (a 64-bit LCG, 24-bit uniform in [-2, 2), rounded to the dtype), the forward runs through
// gm_op_attention_fwd, and each row of dqkv is hashed (FNV-1a 32 of its f32 bits) against torch's.
// Every case is asserted bit-identical for the thread counts it names (c->threads = 1 and 2), and
// the thread dependence is asserted where torch has it (the other count's bits differ).
#include "gptmeg/core.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char profile[32], dtype[8], threads[4];
  int B, NH, hd, T, layer;
  uint32_t *rows;
} golden_case;

// dqkv of one case under c->threads = threads: the row hashes into h (B*T). 0 on success.
static int run_case(const golden_case *g, int threads, uint32_t *h) {
  gm_dtype dt;
  gm_profile p;
  if (gm_dtype_parse(g->dtype, &dt) || gm_profile_get(g->profile, dt, &p)) return -1;
  gm_op_ctx c;
  gm_op_ctx_init(&c, &p, threads, NULL, NULL);
  const int B = g->B, T = g->T, C = g->NH * g->hd;
  const size_t N = (size_t)B * T, S = (size_t)B * g->NH * T * T;
  float *qkv = malloc(N * 3 * C * sizeof(float)), *dout = malloc(N * C * sizeof(float));
  float *out = malloc(N * C * sizeof(float)), *scores = malloc(S * sizeof(float)), *probs = malloc(S * sizeof(float));
  float *dsc = malloc(S * sizeof(float)), *dqkv = malloc(N * 3 * C * sizeof(float));
  float *kc = malloc(N * C * sizeof(float)), *vc = malloc(N * C * sizeof(float));
  int rc = -1;
  if (qkv && dout && out && scores && probs && dsc && dqkv && kc && vc) {
    uint64_t seed = (uint64_t)(((B * 131 + g->NH) * 131 + g->hd) * 131 + T);
    test_lcg_values(seed, qkv, N * 3 * C, dt);
    test_lcg_values(seed + 7, dout, N * C, dt);
    gm_op_attn a = {B, T, 0, C, g->NH, g->layer, true, g->layer == 2, false, kc, vc, T};
    rc = gm_op_attention_fwd(&c, &a, out, scores, probs, qkv);
    if (!rc) rc = gm_op_attention_bwd(&c, &a, dqkv, dsc, dout, qkv, probs, scores);
    if (!rc)
      for (size_t r = 0; r < N; r++) h[r] = test_fnv_row(dqkv + r * 3 * C, 3 * C);
  }
  free(qkv), free(dout), free(out), free(scores), free(probs), free(dsc), free(dqkv), free(kc), free(vc);
  return rc;
}

static int parse(const char *line, golden_case *g) {
  int used = 0;
  if (sscanf(line, "%31s %7s %d %d %d %d %d %3s%n", g->profile, g->dtype, &g->B, &g->NH, &g->hd, &g->T, &g->layer,
             g->threads, &used) != 8)
    return -1;
  int n = g->B * g->T;
  g->rows = malloc((size_t)n * sizeof(uint32_t));
  const char *s = line + used;
  for (int i = 0; i < n; i++) {
    char *end;
    g->rows[i] = (uint32_t)strtoul(s, &end, 16);
    if (end == s) return -1;
    s = end;
  }
  return 0;
}

typedef struct {
  char key[80];
  long rows, same, cases, exact;
} tally;

// The case key of a golden line: its first 7 fields (profile .. layer), into key.
static void case_key(const char *line, char *key, size_t n) {
  size_t i = 0;
  int fields = 0;
  while (line[i] && line[i] != '\n' && i + 1 < n) {
    if (line[i] == ' ' && ++fields == 7) break;
    key[i] = line[i];
    i++;
  }
  key[i] = 0;
}

// base's lines whose case over does not list, then over's lines (a target's file holds only the
// cases whose bits differ from intel-amx's). Caller frees.
static char *overlay(const char *base, const char *over) {
  char *out = malloc(strlen(base) + strlen(over) + 2), *o = out;
  char key[128], k2[128];
  for (const char *ln = base; *ln;) {
    const char *end = strchr(ln, '\n');
    size_t n = end ? (size_t)(end - ln) + 1 : strlen(ln);
    bool keep = true;
    if (ln[0] != '#') {
      case_key(ln, key, sizeof key);
      for (const char *l2 = over; *l2 && keep;) {
        if (l2[0] != '#') {
          case_key(l2, k2, sizeof k2);
          keep = strcmp(key, k2) != 0;
        }
        const char *e2 = strchr(l2, '\n');
        l2 = e2 ? e2 + 1 : l2 + strlen(l2);
      }
    }
    if (keep) memcpy(o, ln, n), o += n;
    ln += n;
  }
  strcpy(o, over);
  return out;
}

// One target's goldens: every case under tt; where exact, each case is asserted bit-identical (and
// thread-dependent where torch is); elsewhere the fraction is reported.
static void run_target(gm_torch_target tt, bool exact) {
  char path[512], base_path[512];
  snprintf(path, sizeof path, "%s/tests/golden/targets/%s/attention_bwd/attention_bwd.txt", GPTMEG_SOURCE_DIR,
           gm_torch_target_name(tt));
  snprintf(base_path, sizeof base_path, "%s/tests/golden/targets/intel-amx/attention_bwd/attention_bwd.txt",
           GPTMEG_SOURCE_DIR);
  gm_torch_target_set(tt);
  size_t len;
  char *text = test_slurp_len(path, &len);
  CHECK(text != NULL, "cannot read %s", path);
  // GPTMEG_QUICK: another target runs only its own file's cases (those whose bits differ from intel-amx's)
  if (text && tt != GM_TT_INTEL_AMX && !test_quick()) {
    char *base = test_slurp_len(base_path, &len);
    CHECK(base != NULL, "cannot read %s", base_path);
    char *all = base ? overlay(base, text) : NULL;
    free(base);
    free(text);
    text = all;
  }
  if (!text) {
    gm_torch_target_set(GM_TT_ZEN4);
    return;
  }
  printf("%s (%s):\n", gm_torch_target_name(tt), exact ? "asserted bit for bit" : "reported, not reproduced");
  tally tl[32];
  int nt = 0, lineno = 0, ran = 0;
  golden_case prev = {0};
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    lineno++;
    if (line[0] == '#') continue;
    golden_case g;
    if (parse(line, &g)) {
      CHECK(0, "%s: golden line %d unreadable", path, lineno);
      free(g.rows);
      continue;
    }
    // GPTMEG_QUICK: the cases with T <= 24 (every thread-dependent one included)
    if (test_quick() && g.T > 24) {
      free(g.rows);
      continue;
    }
    const int n = g.B * g.T;
    uint32_t *h = malloc((size_t)n * sizeof(uint32_t));
    for (int th = 1; th <= 2; th++) {
      if (!strchr(g.threads, '0' + th)) continue;
      if (run_case(&g, th, h)) {
        CHECK(0, "%s %s B%d NH%d hd%d T%d layer %d threads %d: %s", g.profile, g.dtype, g.B, g.NH, g.hd, g.T, g.layer, th,
              gm_errmsg());
        continue;
      }
      ran++;
      int same = 0;
      for (int i = 0; i < n; i++) same += h[i] == g.rows[i];
      char key[80];
      snprintf(key, sizeof key, "%s %s threads %d", g.profile, g.dtype, th);
      int t = 0;
      while (t < nt && strcmp(tl[t].key, key)) t++;
      if (t == nt && nt < 32) {
        memset(&tl[nt], 0, sizeof tl[nt]);
        snprintf(tl[nt].key, sizeof tl[nt].key, "%s", key);
        nt++;
      }
      if (t < nt) tl[t].rows += n, tl[t].same += same, tl[t].cases++, tl[t].exact += same == n;
      if (!exact) continue;
      // avx2 f32 from T = 192: MKL's AVX2 packed path of big products (blocks of 192 with their
      // own column tails) is not reproduced by gm_matmul_f32_torch (gptmeg/kernels.h)
      if (tt == GM_TT_AVX2 && !strcmp(g.dtype, "f32") && g.T >= 192) {
        char what[160], why[96];
        snprintf(what, sizeof what, "avx2 %s f32 B%d NH%d hd%d T%d layer %d threads %d", g.profile, g.B, g.NH, g.hd, g.T,
                 g.layer, th);
        snprintf(why, sizeof why, "MKL's AVX2 packed sgemm is not reproduced (%d of %d rows identical)", same, n);
        test_skip(what, why);
        continue;
      }
      CHECK(same == n, "%s %s %s B%d NH%d hd%d T%d layer %d threads %d: %d of %d rows of dqkv differ from torch",
            gm_torch_target_name(tt), g.profile, g.dtype, g.B, g.NH, g.hd, g.T, g.layer, th, n - same, n);
      // torch's bits depend on the thread count here: ours must too (the line of the other count differs)
      if (strcmp(g.threads, "12") && th == 2 && prev.rows && !strcmp(prev.profile, g.profile) &&
          !strcmp(prev.dtype, g.dtype) && prev.B == g.B && prev.NH == g.NH && prev.hd == g.hd && prev.T == g.T &&
          prev.layer == g.layer) {
        int same1 = 0;
        for (int i = 0; i < n; i++) same1 += h[i] == prev.rows[i];
        CHECK(same1 < n, "%s %s B%d NH%d hd%d T%d layer %d: 2 threads gave the 1-thread bits", g.profile, g.dtype, g.B,
              g.NH, g.hd, g.T, g.layer);
      }
    }
    free(h);
    free(prev.rows);
    prev = g;
  }
  free(prev.rows);
  for (int t = 0; t < nt; t++)
    printf("  %-28s %4ld cases, %4ld exact; rows identical %ld / %ld\n", tl[t].key, tl[t].cases, tl[t].exact,
           tl[t].same, tl[t].rows);
  CHECK(ran > 0, "%s: no golden case ran", path);
  free(text);
  gm_torch_target_set(GM_TT_ZEN4);
}

int main(void) {
  run_target(GM_TT_INTEL_AMX, true);
  run_target(GM_TT_INTEL_AVX512_BF16, true);
  run_target(GM_TT_INTEL_AVX512, true);
  run_target(GM_TT_AVX2, true);
  run_target(GM_TT_INTEL_AVX512_FP16, true);
  return test_done("test_attention_bwd");
}
