// Greedy decode against transformers' generate(output_logits=True) (issue 23): every step's logits
// bit for bit, under each Intel target (and avx2) whose host made goldens
// (tests/golden/targets/<target>/decode/decode.safetensors, tools/ref/gen_decode_goldens.py, the
// real torch 2.15 and transformers 4.57.3; on an Emerald Rapids Xeon, natively and under the
// dispatch caps), on the model tests/golden/decode_model/ (wide enough for torch's one-row kernels:
// MKL's one-row sgemm kernels and their 2-thread K cut, oneDNN's one-row brgemm, the attention's
// one-row bmm slices on both sides of torch's 16^3 rule). Per case and torch thread count t (1, 2):
// gm_gpt2_generate with threads = t, greedy, gives torch's logits at every step (the prefill's last
// position, then each cached step) and so torch's tokens. Cases: 80 tokens after the stored 8-token
// prompt (hf in f32, f16, bf16; meg in f16, bf16), and 20 after its first 2 tokens (hf f32, meg f16
// and bf16: the first steps' slices take ATen's small kernel, cache or not), and, but under avx2,
// 12 after its first 3 in hf f32 (the prefill's 3 x 3 x 64 q @ k^T: MKL's own kernel). At least
// one golden file must exist.
#include "harness.h"

#include "gptmeg/model.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEPS = 80, PROMPT = 8, SHORT_STEPS = 20, SHORT_PROMPT = 2, V = 400 };
static const struct {
  const char *profile;
  gm_dtype dt;
  bool short_too; // also the 2-token prompt
} CASES[] = {{"hf", GM_F32, true}, {"hf", GM_F16, false}, {"hf", GM_BF16, false}, {"meg", GM_F16, true}, {"meg", GM_BF16, true}};

typedef struct {
  float *rows; // [STEPS, V]
  int n;
} kept;

static int keep(void *ctx, int32_t token, const float *logits) {
  (void)token;
  kept *k = ctx;
  if (k->n < STEPS) memcpy(k->rows + (size_t)k->n * V, logits, V * sizeof(float));
  k->n++;
  return 0;
}

// One case: steps tokens after the first n_prompt of prompt, on 1 and 2 threads, against the
// golden's <profile>.<dtype>[.short].t<t>.
static void check_case(const char *file, gm_safetensors *st, const char *profile, gm_dtype dt, const int32_t *prompt,
                       int n_prompt, int steps, kept *k) {
  gm_gpt2 m;
  if (gm_gpt2_load(&m, GPTMEG_SOURCE_DIR "/tests/golden/decode_model") || gm_gpt2_to_dtype(&m, dt)) {
    CHECK(0, "decode_model: %s", gm_errmsg());
    return;
  }
  gm_profile p;
  CHECK(gm_profile_get(profile, dt, &p) == 0, "profile: %s", gm_errmsg());
  for (int t = 1; t <= 2; t++) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s%s.t%d", profile, gm_dtype_name(dt),
             n_prompt == PROMPT ? "" : n_prompt == SHORT_PROMPT ? ".short" : ".p3", t);
    int64_t r0 = 0, r1 = 0;
    float *ref = test_st_f32(st, name, &r0, &r1);
    CHECK(ref && r0 == steps && r1 == V, "%s: %s missing or not %d x %d", file, name, steps, V);
    if (!ref) continue;
    gm_sampler s;
    gm_sample_params greedy = {0, 0, 1, 0};
    gm_generate_stats stats;
    k->n = 0;
    int rc = gm_sampler_init(&s, &greedy, V);
    if (!rc) rc = gm_gpt2_generate(&m, &p, prompt, n_prompt, steps, &s, -1, t, keep, k, &stats);
    gm_sampler_free(&s);
    CHECK(rc == 0 && k->n == steps, "%s: generate: %d steps (%s)", name, k->n, rc ? gm_errmsg() : "ok");
    int first = -1, rows_same = 0;
    for (int i = 0; i < steps && i < k->n; i++) {
      const bool same = test_count_diff(k->rows + (size_t)i * V, ref + (size_t)i * V, V) == 0;
      rows_same += same;
      if (!same && first < 0) first = i;
    }
    CHECK(first < 0, "%s: step %d is the first whose logits differ from torch's (%d of %d steps identical)", name, first,
          rows_same, steps);
    printf("  %-18s %d of %d steps bit-identical\n", name, rows_same, steps);
    free(ref);
  }
  gm_gpt2_free(&m);
}

// Every case of one golden file under target; 0 when the file is absent.
static int check_file(int target) {
  char file[1024];
  gm_safetensors st;
  if (!test_open_target_st(target, "decode/decode.safetensors", &st, file, sizeof file)) return 0;
  int64_t p0 = 0, p1 = 0;
  float *pf = test_st_f32(&st, "prompt", &p0, &p1);
  CHECK(pf && p0 == 1 && p1 == PROMPT, "%s: prompt missing or not 1 x %d", file, PROMPT);
  int32_t prompt[PROMPT];
  for (int i = 0; pf && p1 == PROMPT && i < PROMPT; i++) prompt[i] = (int32_t)pf[i];
  kept k = {malloc(sizeof(float) * STEPS * V), 0};
  for (size_t c = 0; k.rows && pf && p0 == 1 && p1 == PROMPT && c < sizeof CASES / sizeof CASES[0]; c++) {
    check_case(file, &st, CASES[c].profile, CASES[c].dt, prompt, PROMPT, STEPS, &k);
    if (CASES[c].short_too) check_case(file, &st, CASES[c].profile, CASES[c].dt, prompt, SHORT_PROMPT, SHORT_STEPS, &k);
  }
  if (k.rows && pf && p1 == PROMPT && target != GM_TT_AVX2) check_case(file, &st, "hf", GM_F32, prompt, 3, 12, &k);
  free(pf);
  free(k.rows);
  gm_st_close(&st);
  gm_torch_target_set(GM_TT_ZEN4);
  return 1;
}

int main(void) {
  CHECK(test_intel_targets(true, check_file) >= 1, "no tests/golden/targets/*/decode/decode.safetensors (tools/ref/gen_decode_goldens.py)");
  return test_done("test_decode");
}
