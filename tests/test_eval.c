// Perplexity against transformers' sliding-window recipe (tests/golden/eval, written by
// tools/ref/gen_eval_goldens.py) and its argument errors; the fixture text through the GPT-2
// tokenizer when ../shared/data/gpt2-bpe is present (SKIP otherwise).
#include "gptmeg/model.h"
#include "gptmeg/npy.h"
#include "gptmeg/tok.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/eval"

// int64 .npy of ids -> malloc'd int32 (NULL on failure).
static int32_t *load_ids(const char *path, size_t *n) {
  gm_npy a;
  if (gm_npy_read(path, GM_BF16, &a) || a.dtype != GM_I64) return NULL;
  int32_t *v = malloc(a.count * sizeof(int32_t));
  for (size_t i = 0; i < a.count; i++) v[i] = (int32_t)((const int64_t *)a.data)[i];
  *n = a.count;
  gm_npy_free(&a);
  return v;
}

static double rel(double a, double e) { return fabs(a - e) / fabs(e); }

// Runs every case of one golden list against m; checks ppl and nll within 1e-4 relative, the
// counts exactly. max_cases < 0: all.
static void check_cases(const char *what, const gm_gpt2 *m, const int32_t *ids, size_t n, const cJSON *cases, int max_cases) {
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  int k = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cases) {
    if (max_cases >= 0 && k >= max_cases) break;
    int ctx = cJSON_GetObjectItem(c, "ctx")->valueint, stride = cJSON_GetObjectItem(c, "stride")->valueint;
    double ppl = cJSON_GetObjectItem(c, "ppl")->valuedouble, nll = cJSON_GetObjectItem(c, "nll")->valuedouble;
    int64_t n_tokens = (int64_t)cJSON_GetObjectItem(c, "n_tokens")->valuedouble;
    int n_windows = cJSON_GetObjectItem(c, "n_windows")->valueint;
    gm_ppl_result r;
    if (gm_gpt2_perplexity(m, &p, ids, (int64_t)n, ctx, stride, 1, NULL, NULL, &r)) {
      CHECK(0, "%s ctx %d stride %d: %s", what, ctx, stride, gm_errmsg());
      continue;
    }
    printf("  %-5s ctx %3d stride %3d: ppl %.8g (transformers %.8g, rel %.2g), nll rel %.2g, %lld tokens, %d windows\n",
           what, ctx, stride, r.ppl, ppl, rel(r.ppl, ppl), rel(r.nll, nll), (long long)r.n_tokens, r.n_windows);
    CHECK(rel(r.ppl, ppl) <= 1e-4, "%s ctx %d stride %d: ppl %.9g vs %.9g", what, ctx, stride, r.ppl, ppl);
    CHECK(rel(r.nll, nll) <= 1e-4, "%s ctx %d stride %d: nll %.9g vs %.9g", what, ctx, stride, r.nll, nll);
    CHECK(r.n_tokens == n_tokens && r.n_windows == n_windows, "%s ctx %d stride %d: %lld tokens %d windows, want %lld %d",
          what, ctx, stride, (long long)r.n_tokens, r.n_windows, (long long)n_tokens, n_windows);
    CHECK(r.ctx == ctx && r.stride == stride, "ctx/stride echoed");
    if (k == 1) { // thread count does not change the bits
      gm_ppl_result r2;
      CHECK(gm_gpt2_perplexity(m, &p, ids, (int64_t)n, ctx, stride, 2, NULL, NULL, &r2) == 0 &&
                memcmp(&r.ppl, &r2.ppl, sizeof(double)) == 0 && memcmp(&r.nll, &r2.nll, sizeof(double)) == 0,
            "%s: 1 and 2 threads differ", what);
    }
    k++;
  }
}

static int progress_calls;
static int64_t progress_last;
static void on_progress(void *ctx, int64_t done, int64_t total) {
  (void)ctx;
  CHECK(done > progress_last && done <= total, "progress %lld of %lld after %lld", (long long)done, (long long)total,
        (long long)progress_last);
  progress_last = done;
  progress_calls++;
}

static void test_base(const cJSON *idx) {
  const cJSON *base = cJSON_GetObjectItem(idx, "base");
  gm_gpt2 m;
  if (gm_gpt2_load(&m, GPTMEG_SOURCE_DIR "/tests/golden/model/base")) { CHECK(0, "load base: %s", gm_errmsg()); return; }
  size_t n = 0;
  int32_t *ids = load_ids(GOLDEN "/tokens.npy", &n);
  CHECK(ids && n == 300, "tokens.npy");
  if (!ids) { gm_gpt2_free(&m); return; }
  check_cases("base", &m, ids, n, cJSON_GetObjectItem(base, "cases"), -1);

  // hand check of the count: ctx 4, stride 2 over 7 tokens: windows [0,4) [2,6) [4,7): trg 4, 2, 1
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  gm_ppl_result r;
  progress_calls = 0;
  progress_last = 0;
  CHECK(gm_gpt2_perplexity(&m, &p, ids, 7, 4, 2, 1, on_progress, NULL, &r) == 0, "small: %s", gm_errmsg());
  CHECK(r.n_windows == 3 && r.n_tokens == 3 + 1 + 0 && r.n_scored == 3 + 2 + 1, "counts %d %lld %lld", r.n_windows,
        (long long)r.n_tokens, (long long)r.n_scored);
  CHECK(progress_calls == 3 && progress_last == 7, "progress calls %d last %lld", progress_calls, (long long)progress_last);
  // the same from the logits by hand
  float *lg = malloc((size_t)4 * 400 * sizeof(float));
  double want = 0;
  int64_t begins[3] = {0, 2, 4}, lens[3] = {4, 4, 3}, firsts[3] = {1, 2, 2}, counted[3] = {3, 1, 0};
  for (int w = 0; w < 3; w++) {
    gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = ids + begins[w], .B = 1, .T = (int)lens[w], .logits = lg, .threads = 1});
    double s = 0;
    for (int64_t j = firsts[w]; j < lens[w]; j++) {
      const float *x = lg + (j - 1) * 400;
      double mx = -INFINITY, z = 0;
      for (int i = 0; i < 400; i++) mx = x[i] > mx ? x[i] : mx;
      for (int i = 0; i < 400; i++) z += exp(x[i] - mx);
      s += mx + log(z) - x[ids[begins[w] + j]];
    }
    want += s / (double)(lens[w] - firsts[w]) * (double)counted[w];
  }
  want /= 4;
  CHECK(rel(r.nll, want) <= 1e-12, "hand nll %.15g vs %.15g", r.nll, want);
  free(lg);

  // errors: each names the problem
  struct { int64_t n; int ctx, stride; const char *msg; } bad[] = {
      {1, 64, 64, "at least 2 tokens"}, {0, 64, 64, "at least 2 tokens"}, {300, 65, 65, "n_positions 64"},
      {300, 1, 1, "[2, n_positions"},   {300, 64, 0, "stride 0"},         {300, 32, 33, "stride 33"},
      {300, 64, -3, "stride -3"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = gm_gpt2_perplexity(&m, &p, ids, bad[i].n, bad[i].ctx, bad[i].stride, 1, NULL, NULL, &r);
    CHECK(rc != 0 && strstr(gm_errmsg(), bad[i].msg), "case %zu: rc %d, message '%s' lacks '%s'", i, rc, gm_errmsg(), bad[i].msg);
  }
  ids[17] = 400;
  CHECK(gm_gpt2_perplexity(&m, &p, ids, 300, 64, 64, 1, NULL, NULL, &r) != 0 && strstr(gm_errmsg(), "index 17"),
        "token outside the vocab: %s", gm_errmsg());
  free(ids);
  gm_gpt2_free(&m);
}

// The fixture text: golden ids (tokenizer checked when the GPT-2 vocab is present), and the ppl of
// the scaled random tiny model the generator built through `gptmeg init`.
static void test_text(const cJSON *idx) {
  const cJSON *text = cJSON_GetObjectItem(idx, "text");
  if (!text) { CHECK(0, "index.json has no text golden"); return; }
  size_t n = 0;
  int32_t *ids = load_ids(GOLDEN "/text_tokens.npy", &n);
  CHECK(ids && n > 500, "text_tokens.npy");
  if (!ids) return;
  char *vocab = test_shared_data("gpt2-bpe/vocab.json");
  if (!vocab) test_skip("GPT-2 tokenizer on the fixture text", "../shared/data/gpt2-bpe is absent");
  else {
    char *dir = strdup(vocab);
    *strrchr(dir, '/') = 0;
    gm_tokenizer *tok;
    size_t len = 0;
    char *s = test_slurp_len(GPTMEG_SOURCE_DIR "/tests/fixtures/eval/sample.txt", &len);
    CHECK(s && gm_tok_load(dir, &tok) == 0, "tokenizer: %s", gm_errmsg());
    if (s && tok) {
      int32_t *got = NULL;
      size_t ng = 0;
      CHECK(gm_tok_encode(tok, s, len, &got, &ng) == 0, "encode: %s", gm_errmsg());
      CHECK(ng == n && got && memcmp(got, ids, n * sizeof(int32_t)) == 0, "fixture text ids differ from GPT2TokenizerFast (%zu vs %zu)", ng, n);
      free(got);
      gm_tok_free(tok);
    }
    free(s);
    free(dir);
    free(vocab);
  }
  const cJSON *init = cJSON_GetObjectItem(text, "init");
  gm_gpt2_config c;
  CHECK(strcmp(cJSON_GetObjectItem(init, "config")->valuestring, "tiny") == 0, "text model config");
  gm_config_tiny(&c);
  gm_gpt2 m;
  if (gm_gpt2_init_random(&m, &c, (uint64_t)cJSON_GetObjectItem(init, "seed")->valuedouble)) { CHECK(0, "init: %s", gm_errmsg()); free(ids); return; }
  float scale = (float)cJSON_GetObjectItem(init, "scale")->valuedouble;
  for (uint64_t i = 0; i < m.n_params; i++) m.storage[i] *= scale;
  check_cases("text", &m, ids, n, cJSON_GetObjectItem(text, "cases"), test_quick() ? 1 : -1);
  gm_gpt2_free(&m);
  free(ids);
}

int main(void) {
  char *js = test_slurp_len(GOLDEN "/index.json", NULL);
  cJSON *idx = js ? cJSON_Parse(js) : NULL;
  free(js);
  CHECK(idx != NULL, "cannot read %s/index.json", GOLDEN);
  if (idx) {
    test_base(idx);
    test_text(idx);
    cJSON_Delete(idx);
  }
  return test_done("test_eval");
}
