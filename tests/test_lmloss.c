// gm_op_lmloss_fwd/bwd against PyTorch 2.15 + transformers 4.57.3 (tools/ref/gen_lmloss_goldens.py):
// ForCausalLMLoss on logits (B, T, V) in f32/f16/bf16, V in {7, 50, 1000, 50257}, about one label
// in eight the ignore index, 1 and 2 threads; loss.backward(). Per case: the loss's f32 bits and
// the number scored exactly, the saved log_softmax (logp) and logits.grad (dlogits) by gm_hash64 of
// their bits (a failing case also counts the golden's 48 sampled values that differ). The
// backward runs twice: from the forward's logp, and with logp NULL (recomputed), in place over a
// copy of the logits; the forward also runs without logp and in place (logp over the logits). Goldens from ATen's AVX512 kernels (no matmul: zen4's and the intel targets'
// bits, checked under zen4 and intel-amx) and under the avx2 target's caps (8 lanes).
// GPTMEG_QUICK=1 skips the V = 50257 cases.
#include "gptmeg/core.h"
#include "gptmeg/inputs.h"
#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static double stream_k(uint64_t seed, size_t i) { return (double)((int64_t)(gm_stream_u64(seed, i) >> 40) - (1 << 23)); }

static void make_inputs(gm_dtype dt, int V, long rows, float *x, int32_t *lab) {
  const size_t n = (size_t)rows * V;
  for (size_t i = 0; i < n; i++) x[i] = (float)(stream_k(21, i) * 10.0 * 0x1p-23);
  gm_round_inplace(dt, x, n);
  for (long i = 0; i < rows; i++)
    lab[i] = gm_stream_u64(22, (uint64_t)i) >> 61 == 0 ? GM_IGNORE_INDEX : (int32_t)(gm_stream_u64(23, (uint64_t)i) % (uint64_t)V);
}

// true if the bits of y (as f32, or rounded to dt's 16-bit storage) hash to the golden's.
static bool matches(const char *what, const char *label, gm_dtype dt, const float *y, size_t n, const cJSON *g) {
  size_t nb = n * (dt == GM_F32 ? 4 : 2);
  void *u = malloc(nb);
  if (dt == GM_F32) {
    memcpy(u, y, nb);
    for (size_t i = 0; i < n; i++)
      if (isnan(y[i])) ((uint32_t *)u)[i] = 0x7fc00000;
  } else {
    gm_f32_to_dtype_buf(dt, y, u, n);
    for (size_t i = 0; i < n; i++)
      if (isnan(y[i])) ((uint16_t *)u)[i] = dt == GM_F16 ? 0x7e00 : 0x7fc0;
  }
  char got[32];
  snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(u, nb));
  bool ok = strcmp(got, cJSON_GetObjectItem(g, "hash")->valuestring) == 0;
  if (!ok) {
    int bad = 0, k = 0, nsamp = cJSON_GetArraySize(cJSON_GetObjectItem(g, "samples"));
    size_t prev = (size_t)-1;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(g, "samples")) {
      size_t i;
      do i = (size_t)k++ * n / 48; while (i == prev);
      prev = i;
      uint32_t have = dt == GM_F32 ? ((uint32_t *)u)[i] : ((uint16_t *)u)[i];
      bad += have != (uint32_t)s->valuedouble;
    }
    fprintf(stderr, "  %s %s: hash differs from torch; %d of %d sampled values differ\n", label, what, bad, nsamp);
  }
  free(u);
  return ok;
}

// The golden of torch target t: tests/golden/lmloss/ (ATen AVX512: zen4 and the intel targets) or
// tests/golden/targets/avx2/ (8 lanes).
static void test_golden(gm_torch_target t) {
  gm_torch_target_set(t);
  char GOLDEN[512];
  snprintf(GOLDEN, sizeof GOLDEN, "%s/tests/golden/%slmloss/lmloss.json", GPTMEG_SOURCE_DIR, t == GM_TT_AVX2 ? "targets/avx2/" : "");
  printf("  target %s: %s\n", gm_torch_target_name(t), GOLDEN);
  char *txt = test_slurp(GOLDEN);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_lmloss_goldens.py)", GOLDEN);
  if (!txt) return;
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", GOLDEN);
  if (!doc) { free(txt); return; }
  int cases = 0, passed = 0, skipped = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
    const char *dts = cJSON_GetObjectItem(c, "dtype")->valuestring;
    const int V = cJSON_GetObjectItem(c, "V")->valueint, B = cJSON_GetObjectItem(c, "B")->valueint,
              T = cJSON_GetObjectItem(c, "T")->valueint, threads = cJSON_GetObjectItem(c, "threads")->valueint;
    if (test_quick() && V > 1000) { skipped++; continue; }
    gm_dtype dt;
    CHECK(gm_dtype_parse(dts, &dt) == 0, "bad dtype %s", dts);
    gm_profile p;
    CHECK(gm_profile_get("hf", dt, &p) == 0, "%s", gm_errmsg());
    gm_op_ctx ctx;
    gm_op_ctx_init(&ctx, &p, threads, NULL, NULL);
    const long rows = (long)B * T;
    const size_t n = (size_t)rows * V;
    float *x = malloc(n * sizeof(float)), *logp = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    int32_t *lab = malloc((size_t)rows * sizeof(int32_t));
    make_inputs(dt, V, rows, x, lab);
    char label[128];
    snprintf(label, sizeof label, "%s V=%d B=%d T=%d threads=%d", dts, V, B, T, threads);
    float loss = 0.0f;
    int64_t scored = -1;
    int rc = gm_op_lmloss_fwd(&ctx, &loss, &scored, logp, x, lab, B, T, V);
    CHECK(rc == 0, "%s: %s", label, gm_errmsg());
    if (rc == 0) {
      uint32_t lb, want = (uint32_t)cJSON_GetObjectItem(c, "loss")->valuedouble;
      memcpy(&lb, &loss, 4);
      if (isnan(loss)) lb = 0x7fc00000;
      float wantf;
      memcpy(&wantf, &want, 4);
      bool ok = lb == want;
      CHECK(ok, "%s: loss %.9g (0x%08x), torch %.9g (0x%08x)", label, loss, lb, wantf, want);
      CHECK(scored == (int64_t)cJSON_GetObjectItem(c, "n_scored")->valuedouble, "%s: %lld scored", label, (long long)scored);
      ok = matches("logp", label, GM_F32, logp, n, cJSON_GetObjectItem(c, "logp")) && ok;
      CHECK(gm_op_lmloss_bwd(&ctx, d, 1.0f, logp, NULL, lab, B, T, V) == 0, "%s: %s", label, gm_errmsg());
      ok = matches("dlogits", label, dt, d, n, cJSON_GetObjectItem(c, "dlogits")) && ok;
      // without logp: recomputed from the logits, in place (dlogits over the logits' copy)
      float loss2 = 0.0f;
      CHECK(gm_op_lmloss_fwd(&ctx, &loss2, NULL, NULL, x, lab, B, T, V) == 0 && !memcmp(&loss2, &loss, 4),
            "%s: the loss without logp differs", label);
      float *d2 = malloc(n * sizeof(float)), loss3 = 0.0f;
      memcpy(d2, x, n * sizeof(float)); // the forward in place: logp over the logits
      CHECK(gm_op_lmloss_fwd(&ctx, &loss3, NULL, d2, d2, lab, B, T, V) == 0 && !memcmp(&loss3, &loss, 4) &&
                !memcmp(d2, logp, n * sizeof(float)),
            "%s: the forward in place differs", label);
      memcpy(d2, x, n * sizeof(float));
      CHECK(gm_op_lmloss_bwd(&ctx, d2, 1.0f, NULL, d2, lab, B, T, V) == 0 && !memcmp(d2, d, n * sizeof(float)),
            "%s: dlogits recomputed in place differ", label);
      free(d2);
      CHECK(ok, "%s: not bit-identical to torch", label);
      passed += ok;
    }
    cases++;
    free(x), free(logp), free(d), free(lab);
  }
  printf("  golden: %d of %d cases bit-identical to torch (loss, logp, dlogits)\n", passed, cases);
  if (skipped) test_skip("V = 50257 cases", "GPTMEG_QUICK=1");
  cJSON_Delete(doc);
  free(txt);
}

// A label outside the vocabulary that is not the ignore index is an error.
static void test_bad_label(void) {
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  gm_op_ctx ctx;
  gm_op_ctx_init(&ctx, &p, 1, NULL, NULL);
  float x[2 * 3] = {0}, loss;
  int32_t lab[2] = {0, 3};
  CHECK(gm_op_lmloss_fwd(&ctx, &loss, NULL, NULL, x, lab, 1, 2, 3) != 0, "label 3 of V = 3 accepted");
  CHECK(gm_op_lmloss_bwd(&ctx, x, 1.0f, NULL, x, lab, 1, 2, 3) != 0, "label 3 of V = 3 accepted by the backward");
}

// No rows: the loss is NaN with nothing scored; an empty activation backward writes nothing.
static void test_empty(void) {
  gm_profile p;
  gm_profile_get("megatron", GM_BF16, &p);
  gm_op_ctx ctx;
  gm_op_ctx_init(&ctx, &p, 2, NULL, NULL);
  float loss = 0.0f, db[3] = {1, 1, 1}, bias[3] = {0}, one = 1.0f;
  int64_t k = -1;
  int32_t lab = 0;
  CHECK(gm_op_lmloss_fwd(&ctx, &loss, &k, NULL, &one, &lab, 0, 1, 1) == 0 && isnan(loss) && k == 0, "empty loss");
  gm_activation a = {GM_ACT_GELU_FAMILY, GM_GELU_NEW};
  CHECK(gm_op_act_bwd(&ctx, a, NULL, db, &one, &one, bias, 0, 3) == 0 && db[0] == 0.0f && db[2] == 0.0f,
        "empty fused activation backward: %s", gm_errmsg());
}

int main(void) {
  test_empty();
  test_golden(GM_TT_ZEN4);
  test_golden(GM_TT_INTEL_AMX);
  test_golden(GM_TT_AVX2);
  test_bad_label();
  return test_done("test_lmloss");
}
