// gm_op_act_bwd against PyTorch 2.15 autograd (tools/ref/gen_act_bwd_goldens.py): every activation
// the profiles can select (gelu_new, gelu_pytorch_tanh, gelu, gelu_fast, gelu_python, relu, silu,
// and the megatron profile's fused bias_gelu with its dbias), f32/f16/bf16, N*OC from 1 to ~200k,
// 1 and 2 threads (torch's split of the elementwise ops and of the bias sum is reproduced for
// c->threads). Each case's dinp (and dbias) is compared by gm_hash64 of its bits; a failing case
// also reports how many of the golden's 48 sampled values differ.
//
// The goldens were written on an Intel AVX-512/AMX CPU: without dispatch caps (the intel-amx torch
// target, run first: f16 `gelu` takes oneDNN there) and under the avx2 target's caps
// (tests/golden/targets/avx2/: 8-lane ATen, so other vector/scalar splits and sum blocks). f32 tanh/erf/exp are MKL VML calls in
// torch: the f32 cases of gelu_new, gelu_fast, gelu_python and megatron run only with
// GPTMEG_TORCH_MKL on the CPU model that wrote the golden, else they are skipped with the reason.
// GPTMEG_QUICK=1 skips cases above 70,000 elements. The golden's "sums" hold torch's x.sum(dim=0) of
// more (N, OC) shapes (1 and 2 threads): gm_op_sum_rows, the bias sum, is checked on them too.
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/target.h"
#include "harness.h"
#include "ops/ops_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


// k(s, i) = (stream_u64(s, i) >> 40) - 2^23, scaled (the generator's stream_k).
static double stream_k(uint64_t seed, size_t i) { return (double)((int64_t)(gm_stream_u64(seed, i) >> 40) - (1 << 23)); }

static void make_inputs(gm_dtype dt, size_t n, int oc, float *x, float *dy, float *b) {
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(stream_k(11, i) * 6.0 * 0x1p-23);
    dy[i] = (float)(stream_k(12, i) * 0x1p-22);
  }
  for (int j = 0; j < oc; j++) b[j] = (float)(stream_k(13, (size_t)j) * 0x1p-23);
  gm_round_inplace(dt, x, n);
  gm_round_inplace(dt, dy, n);
  gm_round_inplace(dt, b, (size_t)oc);
}

// The dtype's bit patterns of y (NaN canonicalised as the generator does), as u32 (f32) or u16.
static void *out_bits(gm_dtype dt, const float *y, size_t n, size_t *nbytes) {
  if (dt == GM_F32) {
    uint32_t *u = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
      memcpy(&u[i], &y[i], 4);
      if (isnan(y[i])) u[i] = 0x7fc00000;
    }
    *nbytes = n * 4;
    return u;
  }
  uint16_t *u = malloc(n * 2);
  gm_f32_to_dtype_buf(dt, y, u, n);
  for (size_t i = 0; i < n; i++)
    if (isnan(y[i])) u[i] = dt == GM_F16 ? 0x7e00 : 0x7fc0;
  *nbytes = n * 2;
  return u;
}

// true if y's bits hash to the golden's; else prints how many sampled values differ.
static bool matches(const char *what, const char *label, gm_dtype dt, const float *y, size_t n, const cJSON *g) {
  size_t nb;
  void *u = out_bits(dt, y, n, &nb);
  char got[32];
  snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(u, nb));
  bool ok = strcmp(got, cJSON_GetObjectItem(g, "hash")->valuestring) == 0;
  if (!ok) {
    int bad = 0, k = 0, nsamp = cJSON_GetArraySize(cJSON_GetObjectItem(g, "samples"));
    size_t prev = (size_t)-1;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(g, "samples")) {
      size_t i;
      do i = (size_t)k++ * n / 48; while (i == prev); // the generator's sorted, de-duplicated k*n//48
      prev = i;
      uint32_t have = dt == GM_F32 ? ((uint32_t *)u)[i] : ((uint16_t *)u)[i];
      bad += have != (uint32_t)s->valuedouble;
    }
    fprintf(stderr, "  %s %s: hash differs from torch; %d of %d sampled values differ\n", label, what, bad, nsamp);
  }
  free(u);
  return ok;
}

static bool mkl_variant(const char *act) {
  return !strcmp(act, "gelu_new") || !strcmp(act, "gelu_fast") || !strcmp(act, "gelu_python") || !strcmp(act, "megatron");
}

// The golden of torch target t (tests/golden/targets/<t>/act_bwd/ where torch's bits differ there,
// else tests/golden/act_bwd/, made on the intel-amx class).
// mkl_ok: MKL VML can still be capped for this target (it is capped once a process, at its
// first load: the avx2 pass runs second, so its f32 MKL cases are skipped).
static void test_golden(gm_torch_target t, bool mkl_ok) {
  gm_torch_target_set(t);
  char GOLDEN[1024];
  test_golden_for(t, "act_bwd/act_bwd.json", GOLDEN, sizeof GOLDEN);
  printf("  target %s: %s\n", gm_torch_target_name(t), GOLDEN);
  char *txt = test_slurp(GOLDEN);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_act_bwd_goldens.py)", GOLDEN);
  if (!txt) return;
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", GOLDEN);
  if (!doc) { free(txt); return; }
  char here[256];
  test_cpu_model(here, sizeof here);
  const cJSON *gcpu = cJSON_GetObjectItem(doc, "cpu");
  const bool same_cpu = cJSON_IsString(gcpu) && strcmp(gcpu->valuestring, here) == 0;
  const bool mkl_exact = gm_gelu_torch_mkl_loaded() && same_cpu && mkl_ok;
  int cases = 0, passed = 0, skipped_mkl = 0, skipped_quick = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
    const char *act = cJSON_GetObjectItem(c, "act")->valuestring, *dts = cJSON_GetObjectItem(c, "dtype")->valuestring;
    const int N = cJSON_GetObjectItem(c, "N")->valueint, OC = cJSON_GetObjectItem(c, "OC")->valueint,
              threads = cJSON_GetObjectItem(c, "threads")->valueint;
    const size_t n = (size_t)N * OC;
    gm_dtype dt;
    CHECK(gm_dtype_parse(dts, &dt) == 0, "bad dtype %s", dts);
    if (test_quick() && n > 70000) { skipped_quick++; continue; }
    if (dt == GM_F32 && mkl_variant(act) && !mkl_exact) { skipped_mkl++; continue; }
    const bool fused = !strcmp(act, "megatron");
    gm_profile p;
    CHECK(gm_profile_get(fused ? "megatron" : "hf", dt, &p) == 0, "%s", gm_errmsg());
    gm_activation a = {GM_ACT_GELU_FAMILY, GM_GELU_NEW};
    if (!fused) CHECK(gm_activation_parse(act, &a) == 0, "%s", gm_errmsg());
    gm_op_ctx ctx;
    gm_op_ctx_init(&ctx, &p, threads, NULL, NULL);
    float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float)),
          *b = malloc((size_t)OC * sizeof(float)), *db = malloc((size_t)OC * sizeof(float));
    make_inputs(dt, n, OC, x, dy, b);
    char label[128];
    snprintf(label, sizeof label, "%s %s N=%d OC=%d threads=%d", act, dts, N, OC, threads);
    int rc = gm_op_act_bwd(&ctx, a, dx, fused ? db : NULL, dy, x, fused ? b : NULL, N, OC);
    CHECK(rc == 0, "%s: %s", label, gm_errmsg());
    if (rc == 0) {
      bool ok = matches("dinp", label, dt, dx, n, cJSON_GetObjectItem(c, "dinp"));
      if (fused) ok = matches("dbias", label, dt, db, (size_t)OC, cJSON_GetObjectItem(c, "dbias")) && ok;
      CHECK(ok, "%s: not bit-identical to torch", label);
      passed += ok;
      { // with scratch lent in the context (the backward lends the dead logits): the same bits
        gm_op_ctx lent = ctx;
        lent.ws_bytes = n * sizeof(uint16_t);
        lent.ws = malloc(lent.ws_bytes);
        float *dx3 = malloc(n * sizeof(float)), *db3 = malloc((size_t)OC * sizeof(float));
        if (lent.ws) memset(lent.ws, 0xa5, lent.ws_bytes);
        CHECK(lent.ws && gm_op_act_bwd(&lent, a, dx3, fused ? db3 : NULL, dy, x, fused ? b : NULL, N, OC) == 0 &&
                  !memcmp(dx3, dx, n * sizeof(float)),
              "%s: dinp with a lent scratch differs", label);
        free(lent.ws), free(dx3), free(db3);
      }
      if (fused) { // dinp alone (dbias NULL) and dbias alone (dinp NULL) give the same bits
        float *dx2 = malloc(n * sizeof(float)), *db2 = malloc((size_t)OC * sizeof(float));
        CHECK(gm_op_act_bwd(&ctx, a, dx2, NULL, dy, x, b, N, OC) == 0 && !memcmp(dx2, dx, n * sizeof(float)),
              "%s: dinp without dbias differs", label);
        CHECK(gm_op_act_bwd(&ctx, a, NULL, db2, dy, x, b, N, OC) == 0 && !memcmp(db2, db, (size_t)OC * sizeof(float)),
              "%s: dbias without dinp differs", label);
        free(dx2);
        free(db2);
      }
    }
    cases++;
    free(x), free(dy), free(dx), free(b), free(db);
  }
  printf("  golden: %d of %d cases bit-identical to torch\n", passed, cases);
  // x.sum(dim=0) (gm_op_sum_rows, the bias sum) over more shapes
  int sums = 0, sums_ok = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "sums")) {
    const char *dts = cJSON_GetObjectItem(c, "dtype")->valuestring;
    const int N = cJSON_GetObjectItem(c, "N")->valueint, OC = cJSON_GetObjectItem(c, "OC")->valueint,
              threads = cJSON_GetObjectItem(c, "threads")->valueint;
    const size_t n = (size_t)N * OC;
    gm_dtype dt;
    CHECK(gm_dtype_parse(dts, &dt) == 0, "bad dtype %s", dts);
    gm_profile p;
    CHECK(gm_profile_get("hf", dt, &p) == 0, "%s", gm_errmsg());
    gm_op_ctx ctx;
    gm_op_ctx_init(&ctx, &p, threads, NULL, NULL);
    float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float)), *b = malloc((size_t)OC * sizeof(float)),
          *out = malloc((size_t)OC * sizeof(float));
    make_inputs(dt, n, OC, x, dy, b);
    gm_op_sum_rows(&ctx, out, dy, N, OC);
    char label[128];
    snprintf(label, sizeof label, "sum(dim=0) %s N=%d OC=%d threads=%d", dts, N, OC, threads);
    bool ok = matches("sum", label, dt, out, (size_t)OC, cJSON_GetObjectItem(c, "sum"));
    CHECK(ok, "%s: not bit-identical to torch", label);
    sums_ok += ok;
    sums++;
    free(x), free(dy), free(b), free(out);
  }
  printf("  sums: %d of %d x.sum(dim=0) bit-identical to torch\n", sums_ok, sums);
  if (skipped_mkl)
    test_skip("f32 cases of gelu_new/gelu_fast/gelu_python/megatron",
              !gm_gelu_torch_mkl_loaded() ? "GPTMEG_TORCH_MKL not set (torch's f32 tanh/erf/exp are MKL VML)"
              : !mkl_ok ? "MKL VML was loaded uncapped by the intel-amx pass (one AVX2 cap a process)"
                        : "the goldens were written on another CPU model (MKL VML's bits depend on it)");
  if (skipped_quick) test_skip("cases above 70,000 elements", "GPTMEG_QUICK=1");
  cJSON_Delete(doc);
  free(txt);
}

int main(void) {
  // the Intel AVX-512 classes below AVX512_CORE_FP16 take ATen's f16 GELU backward, not oneDNN's
  const gm_torch_target order[] = {GM_TT_INTEL_AMX, GM_TT_INTEL_AVX512_FP16, GM_TT_INTEL_AVX512_BF16, GM_TT_INTEL_AVX512};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) test_golden(order[i], true);
  test_golden(GM_TT_AVX2, false); // last: it caps MKL VML for the process
  return test_done("test_act_bwd");
}
