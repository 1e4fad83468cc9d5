// logits_to_keep (gm_gpt2_run_opts.logits_to_keep): the kept rows are bit-identical to the same rows of the
// all-logits forward in f32, f16 and bf16, for 1 and 2 threads, at lengths whose row tiles fall
// on OpenBLAS's small-matrix kernels (short prompts, a 257th row); the all-logits forward is itself
// bit-identical for 1 and 2 threads there; generation (which prefills with logits_to_keep = 1) draws
// the tokens the all-logits loop draws. In f16 and bf16 every cached one-token step (decode: the
// one-row kernels, which in f16 read the weights' f16 copy) gives bit for bit the row the all-logits
// forward gives at that position.
#include "gptmeg/model.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The tiny shape with GPT-2's vocabulary (an lm_head of 50257 columns) and room for 260 positions.
static int make_model(gm_gpt2 *m, gm_dtype dt) {
  gm_gpt2_config c;
  gm_config_tiny(&c);
  c.n_positions = 300;
  if (gm_gpt2_init_random(m, &c, 5)) return -1;
  for (uint64_t i = 0; i < m->n_params; i++) m->storage[i] *= 4.0f; // logits of order 1, finite in f16
  if (dt != GM_F32 && gm_gpt2_to_dtype(m, dt)) { gm_gpt2_free(m); return -1; }
  return 0;
}

static int fwd(const gm_gpt2 *m, const gm_profile *p, const int32_t *tok, int B, int T, int keep, float *out, int threads) {
  gm_kv_cache kv;
  if (gm_kv_init(&kv, m, B, T)) return -1;
  int rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = tok, .B = B, .T = T, .kv = &kv, .logits = out, .logits_to_keep = keep,
                                              .threads = threads});
  gm_kv_free(&kv);
  return rc;
}

typedef struct {
  int calls;
  int64_t rows, cols;
} logits_seen;

static int see_logits(void *ctx, const gm_probe_tensor *t) {
  logits_seen *s = ctx;
  if (t->point == GM_PT_LOGITS) { s->calls++; s->rows = t->shape[0]; s->cols = t->shape[1]; }
  return 0;
}

static void test_keep_rows(gm_dtype dt) {
  gm_gpt2 m;
  if (make_model(&m, dt)) { CHECK(0, "%s: model: %s", gm_dtype_name(dt), gm_errmsg()); return; }
  gm_profile p;
  gm_profile_get("hf", dt, &p);
  const int V = m.cfg.vocab_size, B = 2;
  const int lens[] = {1, 2, 5, 37, 257};
  const int n_lens = test_quick() || dt == GM_F16 ? 4 : 5; // f16 at 257 rows is slow (ATen's f16 orders)
  int32_t *tok = malloc((size_t)B * 257 * sizeof(int32_t));
  float *full = malloc((size_t)B * 257 * V * sizeof(float)), *full2 = malloc((size_t)B * 257 * V * sizeof(float));
  float *kept = malloc((size_t)B * 3 * V * sizeof(float));
  gm_rng r;
  gm_rng_seed(&r, 9);
  for (int i = 0; i < B * 257; i++) tok[i] = (int32_t)(gm_rng_u64(&r) % (uint64_t)V);
  for (int li = 0; li < n_lens; li++) {
    const int T = lens[li];
    CHECK(fwd(&m, &p, tok, B, T, 0, full, 1) == 0, "%s T=%d: forward: %s", gm_dtype_name(dt), T, gm_errmsg());
    CHECK(fwd(&m, &p, tok, B, T, 0, full2, 2) == 0, "%s T=%d: forward, 2 threads", gm_dtype_name(dt), T);
    CHECK(memcmp(full, full2, (size_t)B * T * V * sizeof(float)) == 0, "%s T=%d: all logits differ for 1 and 2 threads",
          gm_dtype_name(dt), T);
    for (int threads = 1; threads <= 2; threads++)
      for (int keep = 1; keep <= 3; keep += 2) {
        int k = keep < T ? keep : T;
        memset(kept, 0xff, (size_t)B * 3 * V * sizeof(float));
        CHECK(fwd(&m, &p, tok, B, T, keep, kept, threads) == 0, "%s T=%d keep=%d: %s", gm_dtype_name(dt), T, keep, gm_errmsg());
        int bad = 0;
        for (int b = 0; b < B; b++)
          bad += memcmp(kept + (size_t)b * k * V, full + ((size_t)b * T + T - k) * V, (size_t)k * V * sizeof(float)) != 0;
        CHECK(bad == 0, "%s T=%d keep=%d threads=%d: %d sequences' kept rows differ from the all-logits forward",
              gm_dtype_name(dt), T, keep, threads, bad);
      }
  }
  // 0 and more than T keep every row (transformers slices [-k:]); a negative count is refused
  const int T = 5;
  CHECK(fwd(&m, &p, tok, B, T, 0, full, 1) == 0 && fwd(&m, &p, tok, B, T, T + 4, full2, 2) == 0 &&
            memcmp(full, full2, (size_t)B * T * V * sizeof(float)) == 0,
        "%s: logits_to_keep > T is not the all-logits forward", gm_dtype_name(dt));
  CHECK(fwd(&m, &p, tok, B, T, -1, full2, 1) != 0 && strstr(gm_errmsg(), "logits_to_keep"), "negative keep accepted");
  // the logits probe sees the kept rows only
  logits_seen seen = {0, 0, 0};
  gm_kv_cache kv;
  CHECK(gm_kv_init(&kv, &m, B, T) == 0, "kv");
  CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = B, .T = T, .kv = &kv, .logits = kept,
                                              .logits_to_keep = 1, .threads = 1, .probe = see_logits, .probe_ctx = &seen}) == 0 && seen.calls == 1 &&
            seen.rows == B && seen.cols == V,
        "%s: logits probe saw %d calls of [%lld, %lld]", gm_dtype_name(dt), seen.calls, (long long)seen.rows,
        (long long)seen.cols);
  gm_kv_free(&kv);
  free(tok); free(full); free(full2); free(kept);
  gm_gpt2_free(&m);
}

typedef struct {
  int32_t *t;
  int n;
} tokens_seen;

static int collect(void *ctx, int32_t token, const float *logits) {
  (void)logits;
  tokens_seen *s = ctx;
  s->t[s->n++] = token;
  return 0;
}

// Greedy and sampled generation (prefill with logits_to_keep = 1) against the loop generation ran
// before: the prefill's all logits, its last row, then one cached step per token.
static void test_generate_unchanged(gm_dtype dt) {
  gm_gpt2 m;
  if (make_model(&m, dt)) { CHECK(0, "%s: model: %s", gm_dtype_name(dt), gm_errmsg()); return; }
  gm_profile p;
  gm_profile_get("hf", dt, &p);
  const int V = m.cfg.vocab_size, NP = 9, NEW = 6;
  int32_t prompt[9] = {50256, 11, 3, 40000, 7, 7, 812, 29, 1};
  float *lg = malloc((size_t)NP * V * sizeof(float));
  const gm_sample_params params[2] = {{0, 0, 1, 0}, {0.9, 50, 0.95, 4}};
  for (int pi = 0; pi < 2; pi++)
    for (int threads = 1; threads <= 2; threads++) {
      int32_t want[6], got[6];
      gm_sampler s;
      gm_sampler_init(&s, &params[pi], V);
      gm_kv_cache kv;
      gm_kv_init(&kv, &m, 1, NP + NEW);
      int rc = gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = prompt, .B = 1, .T = NP, .kv = &kv, .logits = lg, .threads = threads});
      const float *last = lg + (size_t)(NP - 1) * V;
      for (int i = 0; i < NEW && !rc; i++) {
        rc = gm_sampler_next(&s, last, &want[i]);
        if (!rc && i + 1 < NEW) rc = gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = &want[i], .B = 1, .T = 1, .kv = &kv, .logits = lg,
                                                           .threads = threads});
        last = lg;
      }
      gm_kv_free(&kv);
      gm_sampler_free(&s);
      CHECK(rc == 0, "%s: reference loop: %s", gm_dtype_name(dt), gm_errmsg());
      gm_sampler_init(&s, &params[pi], V);
      gm_generate_stats st;
      tokens_seen seen = {got, 0};
      CHECK(gm_gpt2_generate(&m, &p, prompt, NP, NEW, &s, -1, threads, collect, &seen, &st) == 0 && seen.n == NEW,
            "%s: generate: %s", gm_dtype_name(dt), gm_errmsg());
      gm_sampler_free(&s);
      CHECK(memcmp(want, got, sizeof want) == 0, "%s, %s, %d thread(s): generate draws other tokens than the all-logits loop",
            gm_dtype_name(dt), pi ? "sampled" : "greedy", threads);
    }
  free(lg);
  gm_gpt2_free(&m);
}

// f16/bf16 orders are defined element by element, so a cached step equals the full forward's row.
static void test_decode_rows(gm_dtype dt) {
  gm_gpt2 m;
  if (make_model(&m, dt)) { CHECK(0, "%s: model: %s", gm_dtype_name(dt), gm_errmsg()); return; }
  gm_profile p;
  gm_profile_get("hf", dt, &p);
  const int V = m.cfg.vocab_size, T = 7;
  int32_t tok[7] = {50256, 11, 3, 40000, 7, 812, 1};
  float *full = malloc((size_t)T * V * sizeof(float)), *step = malloc((size_t)V * sizeof(float));
  CHECK(fwd(&m, &p, tok, 1, T, 0, full, 1) == 0, "%s: forward: %s", gm_dtype_name(dt), gm_errmsg());
  for (int threads = 1; threads <= 2; threads++) {
    gm_kv_cache kv;
    gm_kv_init(&kv, &m, 1, T);
    int bad = -1;
    for (int t = 0; t < T && bad < 0; t++) {
      if (gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = &tok[t], .B = 1, .T = 1, .kv = &kv, .logits = step, .threads = threads})) { bad = t; break; }
      if (memcmp(step, full + (size_t)t * V, (size_t)V * sizeof(float))) bad = t;
    }
    gm_kv_free(&kv);
    CHECK(bad < 0, "%s, %d thread(s): the cached step at position %d differs from the all-logits row", gm_dtype_name(dt),
          threads, bad);
  }
  free(full);
  free(step);
  gm_gpt2_free(&m);
}

// Under every torch CPU target: a sequence's logits are the same bits alone (1 thread) and beside
// another sequence in a batch of 2 (2 threads), and each cached one-token step gives its row.
static void test_target_invariance(gm_torch_target tt, gm_dtype dt) {
  gm_torch_target_set(tt);
  gm_gpt2 m;
  if (make_model(&m, dt)) { CHECK(0, "%s: model: %s", gm_dtype_name(dt), gm_errmsg()); gm_torch_target_set(GM_TT_ZEN4); return; }
  gm_profile p;
  gm_profile_get("hf", dt, &p);
  const int V = m.cfg.vocab_size, T = 9;
  int32_t tok[18] = {50256, 11, 3, 40000, 7, 812, 1, 99, 5, 17, 2, 30000, 4, 4, 900, 12, 8, 50000};
  float *one = malloc((size_t)T * V * sizeof(float)), *two = malloc((size_t)2 * T * V * sizeof(float));
  float *step = malloc((size_t)V * sizeof(float));
  const char *tn = gm_torch_target_name(tt), *dn = gm_dtype_name(dt);
  CHECK(fwd(&m, &p, tok, 1, T, 0, one, 1) == 0 && fwd(&m, &p, tok, 2, T, 0, two, 2) == 0, "%s %s: forward: %s", tn, dn, gm_errmsg());
  // avx2 f32: MKL's Intel AVX2 sgemm takes rows in groups of six, a group's size choosing its
  // kernel (matmul_torch_f32.c), so a sequence's 9 rows alone (6 + 3) and beside another (18 rows:
  // 6 + 6 + 6) sum in other orders, in torch as in gptmeg.
  if (tt == GM_TT_AVX2 && dt == GM_F32) {
    char what[96];
    snprintf(what, sizeof what, "%s %s batch invariance", tn, dn);
    test_skip(what, memcmp(one, two, (size_t)T * V * sizeof(float)) == 0 ? "torch's row groups vary here, yet this run matched"
                                                                            : "torch's sgemm groups rows by six");
  } else
    CHECK(memcmp(one, two, (size_t)T * V * sizeof(float)) == 0, "%s %s: a sequence alone != in a batch of 2 on 2 threads", tn, dn);
  gm_kv_cache kv;
  gm_kv_init(&kv, &m, 1, T);
  int bad = -1;
  for (int t = 0; t < T && bad < 0; t++) {
    if (gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = &tok[t], .B = 1, .T = 1, .kv = &kv, .logits = step, .threads = 2})) bad = t;
    else if (memcmp(step, one + (size_t)t * V, (size_t)V * sizeof(float))) bad = t;
  }
  gm_kv_free(&kv);
  // Where torch's own kernels make a decode step differ from the full forward's row, and gptmeg
  // reproduces torch's: intel-amx bf16 (oneDNN's one-row addmm is one f32 chain, the prefill AMX
  // tiles pair products), avx2 f32 (ATen's 8-lane kernels take an element by where it falls in the
  // tensor's vector steps: the softmax sums a row shorter than 8 one by one but a masked row of the
  // full forward in lanes, and the elementwise ops' vector/scalar tail moves with the tensor's
  // length) and the Intel AVX-512 targets' f32 (MKL's one-row kernel against B^T, the decode step's
  // linears and lm_head, sums in 16 and then 8 lanes where prefill's rows run K-block chains), and
  // intel-amx f16 (a decode step's lm_head is ATen's one-row gemv, fp16_dot_with_fp32_arith, where
  // prefill's rows run oneDNN's K-block chains). docs/numerics.md, "Torch CPU targets".
  // (intel-avx512-fp16's f16 is intel-amx's: oneDNN's brgemm in prefill, ATen's gemv in a step;
  // intel-avx512-bf16's and -fp16's bf16 one row too: intel-amx's one-row kernels in a step;
  // intel-avx512's bf16: oneDNN's AVX512_CORE one-row kernels in a step)
  const bool intel512 = tt == GM_TT_INTEL_AMX || tt == GM_TT_INTEL_AVX512_BF16 || tt == GM_TT_INTEL_AVX512 ||
                        tt == GM_TT_INTEL_AVX512_FP16;
  const bool torch_varies = (tt == GM_TT_INTEL_AMX && (dt == GM_BF16 || dt == GM_F16)) ||
                            ((tt == GM_TT_INTEL_AVX512_BF16 || tt == GM_TT_INTEL_AVX512_FP16 || tt == GM_TT_INTEL_AVX512) &&
                             dt == GM_BF16) ||
                            (tt == GM_TT_INTEL_AVX512_FP16 && dt == GM_F16) || (tt == GM_TT_AVX2 && dt == GM_F32) ||
                            (intel512 && dt == GM_F32);
  if (torch_varies) {
    char what[96];
    snprintf(what, sizeof what, "%s %s decode invariance", tn, dn);
    test_skip(what, bad < 0 ? "torch's kernels vary here, yet this run's steps matched" : "torch's own kernels vary with the row count here");
  } else {
    CHECK(bad < 0, "%s %s: the cached step at position %d differs from the full forward's row", tn, dn, bad);
  }
  free(one);
  free(two);
  free(step);
  gm_gpt2_free(&m);
  gm_torch_target_set(GM_TT_ZEN4);
}

int main(void) {
  const gm_dtype dts[] = {GM_F32, GM_F16, GM_BF16};
  for (int i = 0; i < 3; i++) {
    test_keep_rows(dts[i]);
    test_generate_unchanged(dts[i]);
    if (dts[i] != GM_F32) test_decode_rows(dts[i]);
  }
  for (int t = 0; t < GM_TT_N; t++)
    for (int i = 0; i < 3; i++) test_target_invariance((gm_torch_target)t, dts[i]);
  return test_done("test_keep");
}
