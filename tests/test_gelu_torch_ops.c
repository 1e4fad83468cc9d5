// torch-cpu mode of the GELU variants written as separate tensor ops (src/kernels/gelu_torch_ops*.c
// over the graphs of gelu_ops_graph.c) against goldens that tools/ref/gen_gelu_ops_goldens.py wrote
// from the real torch 2.15.0: per case (variant x dtype x direction x length x threads), `count`
// tensors of n elements run one by one, the hash of all their output bits (NaNs canonicalised) and
// the first 16 outputs.
//
// f32 tanh/erf/exp are MKL VML calls in torch; gptmeg reproduces them only with GPTMEG_TORCH_MKL
// (gm_gelu_torch_mkl_loaded), and MKL's bits depend on the CPU model, so those f32 cases run only
// when MKL is loaded and this CPU is the one that wrote the golden (its "cpu" field); otherwise
// they are skipped (quick_gelu's f32 sigmoid does not use MKL and always runs). GPTMEG_QUICK=1
// skips cases longer than 70001.
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// x: tensor j of a case is elements j*n .. j*n+n-1 of the concatenated stream (generator's make_x).
static void make_x(gm_dtype dt, size_t n, size_t total, void *x) {
  if (dt == GM_F32) {
    gm_golden_f32_inputs(1, total, x);
    return;
  }
  gm_golden_u16_inputs(n, total, x);
}

// dy[i] = ((stream_u64(2, i) >> 40) - 2^23) * 2^-22, rounded to the dtype (generator's make_dy).
static void make_dy(gm_dtype dt, size_t total, void *dy) {
  for (size_t i = 0; i < total; i++) {
    double v = (double)((int64_t)(gm_stream_u64(2, i) >> 40) - (1 << 23)) * 0x1p-22;
    gm_store_f64(dt, dy, i, v);
  }
}

static void canonicalise(gm_dtype dt, void *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!isnan(gm_load_f64(dt, y, i))) continue;
    if (dt == GM_F32) {
      uint32_t q = 0x7fc00000;
      memcpy((float *)y + i, &q, 4);
    } else {
      ((uint16_t *)y)[i] = dt == GM_F16 ? 0x7e00 : 0x7fc0;
    }
  }
}

static uint64_t out_bits(gm_dtype dt, const void *y, size_t i) {
  if (dt == GM_F32) {
    uint32_t u;
    memcpy(&u, (const float *)y + i, 4);
    return u;
  }
  return ((const uint16_t *)y)[i];
}

typedef struct {
  int cases, passed, skipped;
} tally;

static bool mkl_cpu_mismatch = false;

static void run_file(const char *name, tally *t) {
  gm_gelu_spec spec = {GM_GELU_NEW, GM_MODE_TORCH_CPU};
  CHECK(gm_gelu_variant_parse(name, &spec.variant) == 0, "%s", gm_errmsg());
  char path[256];
  snprintf(path, sizeof path, "tests/golden/gelu_ops/%s.json", name);
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_gelu_ops_goldens.py)", path);
  if (!txt) return;
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", path);
  char here[256];
  test_cpu_model(here, sizeof here);
  cJSON *gcpu = cJSON_GetObjectItem(doc, "cpu");
  bool same_cpu = cJSON_IsString(gcpu) && strcmp(gcpu->valuestring, here) == 0;
  if (gm_gelu_torch_mkl_loaded() && !same_cpu) mkl_cpu_mismatch = true;
  bool f32_exact = (gm_gelu_torch_mkl_loaded() && same_cpu) || spec.variant == GM_QUICK_GELU;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
    gm_dtype dt;
    const char *dts = cJSON_GetObjectItem(c, "dtype")->valuestring;
    CHECK(gm_dtype_parse(dts, &dt) == 0, "%s: bad dtype %s", path, dts);
    bool bwd = strcmp(cJSON_GetObjectItem(c, "dir")->valuestring, "bwd") == 0;
    size_t n = (size_t)cJSON_GetObjectItem(c, "n")->valuedouble;
    size_t count = (size_t)cJSON_GetObjectItem(c, "count")->valuedouble;
    int threads = cJSON_GetObjectItem(c, "threads")->valueint;
    if ((test_quick() && n > 70001) || (dt == GM_F32 && !f32_exact)) {
      t->skipped++;
      continue;
    }
    size_t es = gm_dtype_size(dt), total = n * count;
    void *x = malloc(total * es), *dy = malloc(total * es), *y = malloc(total * es);
    make_x(dt, n, total, x);
    if (bwd) make_dy(dt, total, dy);
    int rc = 0;
    for (size_t j = 0; j < count && rc == 0; j++) {
      const char *xj = (const char *)x + j * n * es, *dj = (const char *)dy + j * n * es;
      char *yj = (char *)y + j * n * es;
      rc = bwd ? gm_gelu_bwd(spec, dt, xj, dj, yj, n, threads) : gm_gelu_fwd(spec, dt, xj, yj, n, threads);
    }
    CHECK(rc == 0, "%s %s %s n=%zu threads=%d: %s", name, dts, bwd ? "bwd" : "fwd", n, threads, gm_errmsg());
    if (rc == 0) {
      canonicalise(dt, y, total);
      char got[32];
      snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(y, total * es));
      bool ok = strcmp(got, cJSON_GetObjectItem(c, "hash")->valuestring) == 0;
      int idx = 0;
      cJSON *fv;
      cJSON_ArrayForEach(fv, cJSON_GetObjectItem(c, "first")) {
        uint64_t want = strtoull(fv->valuestring, NULL, 16), have = out_bits(dt, y, (size_t)idx);
        CHECK(have == want, "%s %s %s n=%zu threads=%d: output %d is %llx, torch %llx", name, dts, bwd ? "bwd" : "fwd",
              n, threads, idx, (unsigned long long)have, (unsigned long long)want);
        idx++;
      }
      CHECK(ok, "%s %s %s n=%zu x %zu threads=%d: output hash differs from torch", name, dts, bwd ? "bwd" : "fwd", n,
            count, threads);
      t->passed += ok;
    }
    t->cases++;
    free(x);
    free(dy);
    free(y);
  }
  cJSON_Delete(doc);
  free(txt);
}

int main(void) {
  double t0 = gm_now_s();
  tally t = {0, 0, 0};
  const char *names[] = {"gelu_python", "gelu_new", "gelu_accurate", "gelu_fast", "gelu_megatron", "openai_gelu", "quick_gelu"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) run_file(names[i], &t);
  if (!gm_gelu_torch_mkl_loaded())
    test_skip("f32 cases of the tanh/erf variants", "GPTMEG_TORCH_MKL not set (torch's f32 tanh/erf/exp are MKL VML)");
  else if (mkl_cpu_mismatch)
    test_skip("f32 cases of the tanh/erf variants", "the goldens were written on another CPU model (MKL VML's bits depend on it)");
  printf("torch-cpu op-by-op GELU: %d/%d golden cases bit-identical, %d skipped (%.2f s)\n", t.passed, t.cases, t.skipped,
         gm_now_s() - t0);
  return test_done("test_gelu_torch_ops");
}
