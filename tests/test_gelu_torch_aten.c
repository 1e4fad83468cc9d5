// torch-cpu mode of PyTorch's one-kernel GELU ops (src/kernels/gelu_torch_aten*.c) against goldens
// that tools/ref/gen_gelu_aten_goldens.py wrote from the real torch on this CPU: per case
// (variant x dtype x direction x length x threads) the hash of the output bits with NaNs
// canonicalised, the first 40 outputs (the special values: NaN/inf/0/denormals, checked one by one)
// and per-65536-block hashes of long cases. GPTMEG_QUICK=1 skips cases longer than 70001.
#include "gptmeg/core.h"
#include "gptmeg/inputs.h"
#include "gptmeg/target.h"
#include "harness.h"
#include "kernels/gelu/gelu_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_dtype(const char *s, gm_dtype *dt) { return gm_dtype_parse(s, dt) == 0; }

// Inputs exactly as the generator builds them.
static void make_x(gm_dtype dt, size_t n, void *x) {
  if (dt == GM_F32) {
    gm_golden_f32_inputs(1, n, x);
    return;
  }
  if (dt == GM_F64) {
    float *f = malloc(n * sizeof *f);
    gm_golden_f32_inputs(1, n, f);
    for (size_t i = 0; i < n; i++) ((double *)x)[i] = (double)f[i] * (1.0 + 0x1p-30);
    free(f);
    return;
  }
  gm_golden_u16_inputs(n, n, x);
}

static void make_dy(gm_dtype dt, size_t n, void *dy) {
  float *d = malloc(n * sizeof *d);
  gm_golden_f32_inputs(2, n, d);
  for (size_t i = 0; i < n; i++) {
    float v = isfinite(d[i]) ? d[i] : 1.0f;
    if (dt == GM_F64) ((double *)dy)[i] = v;
    else if (dt == GM_F32) ((float *)dy)[i] = v;
    else if (dt == GM_F16) ((uint16_t *)dy)[i] = gm_f32_to_f16(v);
    else ((uint16_t *)dy)[i] = gm_f32_to_bf16(v);
  }
  free(d);
}

// Output bits with every NaN replaced by the dtype's canonical quiet NaN (as the generator does).
static void canonicalise(gm_dtype dt, void *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (dt == GM_F64) {
      if (isnan(((double *)y)[i])) {
        uint64_t q = 0x7ff8000000000000ull;
        memcpy((double *)y + i, &q, 8);
      }
    } else if (dt == GM_F32) {
      float f = ((float *)y)[i];
      if (isnan(f)) {
        uint32_t q = 0x7fc00000;
        memcpy((float *)y + i, &q, 4);
      }
    } else {
      uint16_t h = ((uint16_t *)y)[i];
      float f = dt == GM_F16 ? gm_f16_to_f32(h) : gm_bf16_to_f32(h);
      if (isnan(f)) ((uint16_t *)y)[i] = dt == GM_F16 ? 0x7e00 : 0x7fc0;
    }
  }
}

static uint64_t out_bits(gm_dtype dt, const void *y, size_t i) {
  if (dt == GM_F64) {
    uint64_t u;
    memcpy(&u, (const double *)y + i, 8);
    return u;
  }
  if (dt == GM_F32) {
    uint32_t u;
    memcpy(&u, (const float *)y + i, 4);
    return u;
  }
  return ((const uint16_t *)y)[i];
}

typedef struct {
  int cases, passed;
} tally;

static void run_file(const char *variant_name, gm_gelu_variant v, tally *t) {
  char path[256];
  snprintf(path, sizeof path, "tests/golden/gelu_aten/%s.json", variant_name);
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_gelu_aten_goldens.py)", path);
  if (!txt) return;
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", path);
  // F.gelu(approximate='none') in f16 runs oneDNN only where oneDNN's ISA has AVX512-FP16, ATen's
  // kernel elsewhere: gptmeg follows the torch CPU target (zen4 here: ATen), so f16 erf goldens
  // judge it only when they were written by torch on a CPU of the same kind.
  cJSON *gfp16 = cJSON_GetObjectItem(doc, "avx512_fp16");
  bool fp16_here = gm_torch_target_get_info(gm_torch_target_active())->onednn >= GM_ONEDNN_AVX512_CORE_FP16;
  bool f16_erf_comparable = v == GM_GELU_PYTORCH_TANH || (cJSON_IsBool(gfp16) && cJSON_IsTrue(gfp16) == fp16_here);
  if (!f16_erf_comparable) test_skip("f16 cases", "the goldens were written on a CPU with different AVX512-FP16 support");
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
    gm_dtype dt;
    const char *dts = cJSON_GetObjectItem(c, "dtype")->valuestring;
    if (!parse_dtype(dts, &dt)) {
      CHECK(false, "%s: bad dtype %s", path, dts);
      continue;
    }
    if (dt == GM_F16 && !f16_erf_comparable) continue;
    bool bwd = strcmp(cJSON_GetObjectItem(c, "dir")->valuestring, "bwd") == 0;
    size_t n = (size_t)cJSON_GetObjectItem(c, "n")->valuedouble;
    int threads = cJSON_GetObjectItem(c, "threads")->valueint;
    if (test_quick() && n > 70001) continue;
    size_t es = gm_dtype_size(dt);
    void *x = malloc(n * es), *dy = malloc(n * es), *y = malloc(n * es);
    make_x(dt, n, x);
    int rc;
    if (bwd) {
      make_dy(dt, n, dy);
      rc = gm_gelu_torch_aten_bwd(v, dt, x, dy, y, n, threads);
    } else {
      rc = gm_gelu_torch_aten_fwd(v, dt, x, y, n, threads);
    }
    CHECK(rc == 0, "%s %s %s n=%zu threads=%d: %s", variant_name, dts, bwd ? "bwd" : "fwd", n, threads, gm_errmsg());
    if (rc == 0) {
      canonicalise(dt, y, n);
      char got[32];
      snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(y, n * es));
      bool ok = strcmp(got, cJSON_GetObjectItem(c, "hash")->valuestring) == 0;
      // The first outputs one by one: the special values (NaN, +-inf, +-0, denormals) lead the f32 stream.
      int idx = 0;
      cJSON *fv;
      cJSON_ArrayForEach(fv, cJSON_GetObjectItem(c, "first")) {
        uint64_t want = strtoull(fv->valuestring, NULL, 16);
        uint64_t have = out_bits(dt, y, (size_t)idx);
        CHECK(have == want, "%s %s %s n=%zu threads=%d: output %d is %llx, torch %llx", variant_name, dts,
              bwd ? "bwd" : "fwd", n, threads, idx, (unsigned long long)have, (unsigned long long)want);
        idx++;
      }
      cJSON *blocks = cJSON_GetObjectItem(c, "block_hashes");
      if (!ok && blocks) {
        size_t bs = (size_t)cJSON_GetObjectItem(c, "block")->valuedouble, b = 0;
        cJSON *bh;
        cJSON_ArrayForEach(bh, blocks) {
          size_t len = n - b * bs < bs ? n - b * bs : bs;
          snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64((char *)y + b * bs * es, len * es));
          if (strcmp(got, bh->valuestring) != 0) fprintf(stderr, "  block %zu (elements %zu..) differs\n", b, b * bs);
          b++;
        }
      }
      CHECK(ok, "%s %s %s n=%zu threads=%d: output hash differs from torch", variant_name, dts, bwd ? "bwd" : "fwd",
            n, threads);
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

// Properties that do not need torch: unsupported inputs fail cleanly; short tensors do not depend
// on the thread count; a long tanh forward does (its chunk boundary moves the scalar tail).
static void check_properties(void) {
  int32_t xi[4] = {1, 2, 3, 4}, yi[4];
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_ERF, GM_I32, xi, yi, 4, 1) != 0, "i32 must fail");
  CHECK(strstr(gm_errmsg(), "i32") != NULL, "the error names the dtype: %s", gm_errmsg());
  double xd[4] = {0.5, -1, 2, 3}, yd[4];
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_ERF, GM_F64, xd, yd, 4, 1) != 0, "f64 erf is refused, not approximated");
  CHECK(strstr(gm_errmsg(), "f64") != NULL, "the error names f64: %s", gm_errmsg());
  CHECK(gm_gelu_torch_aten_bwd(GM_GELU_10, GM_F64, xd, xd, yd, 4, 1) != 0, "f64 gelu_10 is refused too");
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_PYTORCH_TANH, GM_F64, xd, yd, 4, 1) == 0, "f64 tanh works: %s", gm_errmsg());
  float xf[4] = {0.5f, -1, 2, 3}, yf[4];
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_NEW, GM_F32, xf, yf, 4, 1) != 0, "gelu_new is not an ATen one-kernel op");
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_ERF, GM_F32, xf, yf, 0, 1) == 0, "n = 0 is fine");

  size_t n = 40001;
  float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
  gm_golden_f32_inputs(5, n, x);
  for (size_t i = 0; i < n; i++) x[i] = isfinite(x[i]) ? fmodf(x[i], 8.0f) : 0.25f;
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_PYTORCH_TANH, GM_F32, x, y1, 1000, 1) == 0, "tanh fwd");
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_PYTORCH_TANH, GM_F32, x, y2, 1000, 2) == 0, "tanh fwd");
  CHECK(memcmp(y1, y2, 1000 * sizeof *y1) == 0, "n=1000 is one chunk for any thread count");
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_PYTORCH_TANH, GM_F32, x, y1, n, 1) == 0, "tanh fwd");
  CHECK(gm_gelu_torch_aten_fwd(GM_GELU_PYTORCH_TANH, GM_F32, x, y2, n, 2) == 0, "tanh fwd");
  size_t differ = 0;
  for (size_t i = 0; i < n; i++) differ += memcmp(y1 + i, y2 + i, 4) != 0;
  CHECK(differ > 0 && differ < 64, "2 threads move only the tails' libm elements (%zu differ)", differ);
  free(x);
  free(y1);
  free(y2);
}

// oneDNN's bf16 kernel in one pass (src/kernels/gelu_torch_aten_avx512.c): torch-cpu serves bf16 from a
// table built with the integer rounding (checked against torch's goldens above); the instruction's
// rounding (vcvtneps2bf16, the path when the table cannot be allocated) must give the same bits on
// every pattern, forward and backward.
void gm_onednn_gelu_erf_bf16(const uint16_t *x, const uint16_t *dy, uint16_t *out, size_t n, int have_avx512bf16);

static void check_onednn_bf16_roundings(void) {
  if (!__builtin_cpu_supports("avx512bf16")) {
    test_skip("vcvtneps2bf16 rounding", "this CPU lacks AVX512-BF16");
    return;
  }
  enum { N = 65536 };
  uint16_t *x = malloc(N * 2), *dy = malloc(N * 2), *a = malloc(N * 2), *b = malloc(N * 2);
  for (int i = 0; i < N; i++) {
    x[i] = (uint16_t)i;
    dy[i] = (uint16_t)(i * 40503u + 0x3f00u); // every pattern again, in another order
  }
  for (int bwd = 0; bwd < 2; bwd++) {
    gm_onednn_gelu_erf_bf16(x, bwd ? dy : NULL, a, N, 0);
    gm_onednn_gelu_erf_bf16(x, bwd ? dy : NULL, b, N, 1);
    size_t differ = 0;
    for (int i = 0; i < N; i++) differ += a[i] != b[i];
    CHECK(differ == 0, "oneDNN bf16 %s: integer and vcvtneps2bf16 roundings differ on %zu patterns",
          bwd ? "bwd" : "fwd", differ);
  }
  free(x);
  free(dy);
  free(a);
  free(b);
}

int main(void) {
  double t0 = gm_now_s();
  check_onednn_bf16_roundings();
  tally t = {0, 0};
  run_file("gelu", GM_GELU_ERF, &t);
  run_file("gelu_pytorch_tanh", GM_GELU_PYTORCH_TANH, &t);
  run_file("gelu_10", GM_GELU_10, &t);
  check_properties();
  printf("torch-cpu ATen GELU: %d/%d golden cases bit-identical (%.2f s)\n", t.passed, t.cases, gm_now_s() - t0);
  return test_done("test_gelu_torch_aten");
}
