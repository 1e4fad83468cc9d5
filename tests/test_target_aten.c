// The non-matmul torch-cpu kernels per torch CPU target (gptmeg/target.h) against the goldens torch
// wrote under each target's dispatch caps (tests/golden/targets/<target>/, else tests/golden/):
// F.gelu (gelu_aten), the op-by-op GELUs (gelu_ops), the softmax (softmax). For every target and
// every op and dtype the test sets the target, runs all of that op's golden cases and holds
// gm_target_support_get to them both ways: where it says exact every case must match bit for bit;
// where it says not exact some case must differ (else the table is stale), and the share that
// matches is printed. Layer norm is not here: its goldens hold the same values for every target
// (only the order of the metadata keys in the files differs), so tests/test_layernorm.c covers it.
// GPTMEG_QUICK=1 skips cases longer than 70001.
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"
#include "harness.h"
#include "kernels/gelu/gelu_impl.h"
#include "kernels/gelu/gelu_ops.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D_F32, D_F16, D_BF16, D_F64, ND };
static const char *DNAME[ND] = {"f32", "f16", "bf16", "f64"};
static const gm_dtype DTYPE[ND] = {GM_F32, GM_F16, GM_BF16, GM_F64};

typedef struct {
  int cases, match, skipped;
} share;

static int dindex(gm_dtype dt) {
  for (int d = 0; d < ND; d++)
    if (DTYPE[d] == dt) return d;
  return -1;
}

static void canonicalise(gm_dtype dt, void *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!isnan(gm_load_f64(dt, y, i))) continue;
    if (dt == GM_F64) {
      uint64_t q = 0x7ff8000000000000ull;
      memcpy((double *)y + i, &q, 8);
    } else if (dt == GM_F32) {
      uint32_t q = 0x7fc00000;
      memcpy((float *)y + i, &q, 4);
    } else {
      ((uint16_t *)y)[i] = dt == GM_F16 ? 0x7e00 : 0x7fc0;
    }
  }
}

static bool hash_is(const void *y, size_t bytes, const cJSON *c) {
  char got[32];
  snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(y, bytes));
  return strcmp(got, cJSON_GetObjectItem(c, "hash")->valuestring) == 0;
}

static cJSON *load_json(int target, const char *rel) {
  char path[512];
  test_golden_for(target, rel, path, sizeof path);
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing", path);
  cJSON *doc = txt ? cJSON_Parse(txt) : NULL;
  CHECK(!txt || doc, "%s does not parse", path);
  free(txt);
  return doc;
}

// ---- F.gelu: the inputs of tools/ref/gen_gelu_aten_goldens.py (as tests/test_gelu_torch_aten.c) ----
static void aten_x(gm_dtype dt, size_t n, void *x) {
  if (dt == GM_F32) {
    gm_golden_f32_inputs(1, n, x);
  } else if (dt == GM_F64) {
    float *f = malloc(n * sizeof *f);
    gm_golden_f32_inputs(1, n, f);
    for (size_t i = 0; i < n; i++) ((double *)x)[i] = (double)f[i] * (1.0 + 0x1p-30);
    free(f);
  } else {
    gm_golden_u16_inputs(n, n, x);
  }
}

static void aten_dy(gm_dtype dt, size_t n, void *dy) {
  float *d = malloc(n * sizeof *d);
  gm_golden_f32_inputs(2, n, d);
  for (size_t i = 0; i < n; i++) gm_store_f64(dt, dy, i, isfinite(d[i]) ? d[i] : 1.0f);
  free(d);
}

static void gelu_aten(int target, share sh[ND]) {
  static const struct { const char *name; gm_gelu_variant v; } files[] = {
      {"gelu", GM_GELU_ERF}, {"gelu_pytorch_tanh", GM_GELU_PYTORCH_TANH}, {"gelu_10", GM_GELU_10}};
  for (size_t f = 0; f < 3; f++) {
    char rel[128];
    snprintf(rel, sizeof rel, "gelu_aten/%s.json", files[f].name);
    cJSON *doc = load_json(target, rel), *c;
    if (!doc) continue;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
      gm_dtype dt;
      if (gm_dtype_parse(cJSON_GetObjectItem(c, "dtype")->valuestring, &dt)) continue;
      int d = dindex(dt);
      bool bwd = strcmp(cJSON_GetObjectItem(c, "dir")->valuestring, "bwd") == 0;
      size_t n = (size_t)cJSON_GetObjectItem(c, "n")->valuedouble, es = gm_dtype_size(dt);
      int threads = cJSON_GetObjectItem(c, "threads")->valueint;
      if (test_quick() && n > 70001) { sh[d].skipped++; continue; }
      void *x = malloc(n * es), *dy = malloc(n * es), *y = malloc(n * es);
      aten_x(dt, n, x);
      int rc;
      if (bwd) {
        aten_dy(dt, n, dy);
        rc = gm_gelu_torch_aten_bwd(files[f].v, dt, x, dy, y, n, threads);
      } else {
        rc = gm_gelu_torch_aten_fwd(files[f].v, dt, x, y, n, threads);
      }
      CHECK(rc == 0, "%s %s: %s", files[f].name, DNAME[d], gm_errmsg());
      canonicalise(dt, y, n);
      bool ok = rc == 0 && hash_is(y, n * es, c);
      if (!ok && getenv("GM_TEST_VERBOSE"))
        fprintf(stderr, "  %s: %s %s %s n=%zu threads=%d differs\n", gm_torch_target_name(target), files[f].name,
                DNAME[d], bwd ? "bwd" : "fwd", n, threads);
      sh[d].cases++;
      sh[d].match += ok;
      free(x);
      free(dy);
      free(y);
    }
    cJSON_Delete(doc);
  }
}

// ---- the op-by-op GELUs: tools/ref/gen_gelu_ops_goldens.py (as tests/test_gelu_torch_ops.c) ------
// torch's f32 tanh/erf/exp are MKL VML, whose bits depend on the CPU MKL runs on (and its
// instruction cap): those f32 cases are judged only with GPTMEG_TORCH_MKL on the CPU model that
// wrote the golden, with MKL capped as the target's class caps it (AVX2 for the avx2 target: MKL
// takes its cap once per process, from the target active at its load; GM_TEST_MKL_AVX2=1 loads it
// under the avx2 target), else skipped; quick_gelu's f32 sigmoid is ATen's and always judged.
static void gelu_ops(int target, share sh[ND]) {
  static const char *names[] = {"gelu_python", "gelu_new", "gelu_accurate", "gelu_fast", "gelu_megatron", "openai_gelu", "quick_gelu"};
  char here[256];
  test_cpu_model(here, sizeof here);
  for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
    gm_gelu_spec spec = {GM_GELU_NEW, GM_MODE_TORCH_CPU};
    CHECK(gm_gelu_variant_parse(names[f], &spec.variant) == 0, "%s", gm_errmsg());
    char rel[128];
    snprintf(rel, sizeof rel, "gelu_ops/%s.json", names[f]);
    cJSON *doc = load_json(target, rel), *c;
    if (!doc) continue;
    cJSON *gcpu = cJSON_GetObjectItem(doc, "cpu");
    bool same_cpu = cJSON_IsString(gcpu) && strcmp(gcpu->valuestring, here) == 0;
    bool mkl_class = gm_gelu_torch_ops_mkl_avx2() == (gm_torch_target_get_info(target)->mkl == GM_MKL_SGEMM_INTEL_AVX2);
    bool f32_judged = (gm_gelu_torch_mkl_loaded() && same_cpu && mkl_class) || spec.variant == GM_QUICK_GELU;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
      gm_dtype dt;
      if (gm_dtype_parse(cJSON_GetObjectItem(c, "dtype")->valuestring, &dt)) continue;
      int d = dindex(dt);
      bool bwd = strcmp(cJSON_GetObjectItem(c, "dir")->valuestring, "bwd") == 0;
      size_t n = (size_t)cJSON_GetObjectItem(c, "n")->valuedouble;
      size_t count = (size_t)cJSON_GetObjectItem(c, "count")->valuedouble;
      int threads = cJSON_GetObjectItem(c, "threads")->valueint;
      if ((test_quick() && n > 70001) || (dt == GM_F32 && !f32_judged)) { sh[d].skipped++; continue; }
      size_t es = gm_dtype_size(dt), total = n * count;
      void *x = malloc(total * es), *dy = malloc(total * es), *y = malloc(total * es);
      if (dt == GM_F32) gm_golden_f32_inputs(1, total, x);
      else gm_golden_u16_inputs(n, total, x);
      for (size_t i = 0; bwd && i < total; i++)
        gm_store_f64(dt, dy, i, (double)((int64_t)(gm_stream_u64(2, i) >> 40) - (1 << 23)) * 0x1p-22);
      int rc = 0;
      for (size_t j = 0; j < count && rc == 0; j++) {
        const char *xj = (const char *)x + j * n * es, *dj = (const char *)dy + j * n * es;
        char *yj = (char *)y + j * n * es;
        rc = bwd ? gm_gelu_bwd(spec, dt, xj, dj, yj, n, threads) : gm_gelu_fwd(spec, dt, xj, yj, n, threads);
      }
      CHECK(rc == 0, "%s %s: %s", names[f], DNAME[d], gm_errmsg());
      canonicalise(dt, y, total);
      bool ok = rc == 0 && hash_is(y, total * es, c);
      if (!ok && getenv("GM_TEST_VERBOSE"))
        fprintf(stderr, "  %s: %s %s %s n=%zu x %zu threads=%d differs\n", gm_torch_target_name(target), names[f],
                DNAME[d], bwd ? "bwd" : "fwd", n, count, threads);
      sh[d].cases++;
      sh[d].match += ok;
      free(x);
      free(dy);
      free(y);
    }
    cJSON_Delete(doc);
  }
}

// ---- softmax: rows of tools/ref/gen_softmax_goldens.py (as tests/test_softmax.c) ----------------
static void softmax(int target, share sh[ND]) {
  char path[512];
  test_golden_for(target, "softmax/softmax.safetensors", path, sizeof path);
  gm_safetensors st;
  if (gm_st_open(&st, path)) { CHECK(0, "%s", gm_errmsg()); return; }
  const int lengths[] = {1, 5, 15, 16, 17, 24, 31, 32, 48, 64, 100, 257};
  const float masks[3] = {-FLT_MAX, -65504.0f, -3.3895313892515355e38f};
  for (int d = 0; d < 3; d++)
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
      int L = lengths[l];
      int64_t R = 0;
      char name[64];
      snprintf(name, sizeof name, "%s.%d.x", DNAME[d], L);
      float *x = test_st_f32(&st, name, &R, NULL);
      snprintf(name, sizeof name, "%s.%d.vis", DNAME[d], L);
      float *vis = test_st_f32(&st, name, NULL, NULL);
      snprintf(name, sizeof name, "%s.%d.y", DNAME[d], L);
      float *y = test_st_f32(&st, name, NULL, NULL);
      CHECK(x && vis && y, "%s: %s rows of %d missing", path, DNAME[d], L);
      if (x && vis && y) {
        int bad = 0;
        for (int64_t r = 0; r < R; r++) {
          float *row = x + r * L;
          int n = (int)vis[r];
          gm_softmax_row_f32(row, n, L - n, masks[d], d != D_F32);
          for (int j = n; j < L; j++) row[j] = 0.0f;
          gm_round_inplace(DTYPE[d], row, (size_t)L);
          bad += memcmp(row, y + r * L, (size_t)L * sizeof(float)) != 0;
        }
        if (bad && getenv("GM_TEST_VERBOSE"))
          fprintf(stderr, "  %s: softmax %s rows of %d: %d of %lld differ\n", gm_torch_target_name(target), DNAME[d], L,
                  bad, (long long)R);
        sh[d].cases++;
        sh[d].match += bad == 0;
      }
      free(x);
      free(vis);
      free(y);
    }
  gm_st_close(&st);
}

// Holds one op's shares to the table for target t.
static void judge(int t, gm_kernel_op op, const share sh[ND]) {
  for (int d = 0; d < ND; d++) {
    if (sh[d].cases == 0) continue;
    bool exact = d == D_F64 ? true : gm_target_support_get((gm_torch_target)t, op, DTYPE[d]).exact;
    printf("  %-18s %-9s %-4s %4d/%-4d cases bit-identical%s (%s)%s\n", gm_torch_target_name(t), gm_kernel_op_name(op),
           DNAME[d], sh[d].match, sh[d].cases, sh[d].skipped ? " +skipped" : "", exact ? "exact" : "not exact",
           exact == (sh[d].match == sh[d].cases) ? "" : "  <-- table and goldens disagree");
    if (exact)
      CHECK(sh[d].match == sh[d].cases, "%s %s %s: the table says exact, %d of %d golden cases differ",
            gm_torch_target_name(t), gm_kernel_op_name(op), DNAME[d], sh[d].cases - sh[d].match, sh[d].cases);
    else
      CHECK(sh[d].match < sh[d].cases || sh[d].skipped, "%s %s %s: the table says not exact, but all %d golden cases match (stale row)",
            gm_torch_target_name(t), gm_kernel_op_name(op), DNAME[d], sh[d].cases);
  }
}

int main(void) {
  double t0 = gm_now_s();
  if (!gm_cpu_has(GM_CPU_AVX512F | GM_CPU_AVX512DQ)) {
    test_skip("every target", "torch-cpu mode needs AVX-512 (the pinned torch's kernels)");
    return test_done("test_target_aten");
  }
  if (getenv("GM_TEST_MKL_AVX2")) gm_torch_target_set(GM_TT_AVX2);
  printf("MKL VML: %s\n", !gm_gelu_torch_mkl_loaded() ? "not loaded (GPTMEG_TORCH_MKL)"
                         : gm_gelu_torch_ops_mkl_avx2() ? "loaded, capped to AVX2" : "loaded, uncapped");
  for (int t = 0; t < GM_TT_N; t++) {
    gm_torch_target_set((gm_torch_target)t);
    share sh[ND] = {{0}};
    gelu_aten(t, sh);
    judge(t, GM_KOP_GELU_ATEN, sh);
    share so[ND] = {{0}};
    gelu_ops(t, so);
    judge(t, GM_KOP_GELU_OPS, so);
    share sm[ND] = {{0}};
    softmax(t, sm);
    judge(t, GM_KOP_SOFTMAX, sm);
  }
  gm_torch_target_set(GM_TT_ZEN4);
  printf("(%.1f s)\n", gm_now_s() - t0);
  return test_done("test_target_aten");
}
