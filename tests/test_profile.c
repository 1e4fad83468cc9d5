// The four numerics profiles (hf, hf-legacy, meg, megatron) in f32, f16 and bf16 against the
// references of tools/ref/gen_profile_goldens.py (transformers on PyTorch CPU with each profile's
// pieces swapped in). Per profile and dtype: top-1 token identical at every position, at least 99%
// of logits bit-identical, and the largest distance from the reference at most a quarter of the
// reference's own hf-to-meg distance on the same inputs. Also: profile knobs, bad profiles,
// dtype conversion rules, thread independence and KV-cache decoding in f16.
// Then per torch CPU target, every reference whose bits differ from zen4's
// (tests/golden/targets/<target>/profile/, the same generator run on that class of CPU): under that
// target f16 and bf16 logits bit for bit (all of them), f32 top-1 identical and within 1e-4 (the
// op-by-op GELUs' f32 tanh needs torch's MKL for bits, which the unit tests do not assume).
#include "gptmeg/model.h"
#include "gptmeg/npy.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <math.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_DIR GPTMEG_SOURCE_DIR "/tests/golden/model"
#define PROFILE_DIR GPTMEG_SOURCE_DIR "/tests/golden/profile"

static const char *configs[] = {"base", "python_invlayer", "accurate_upcast", "fast_eps"};
static const char *profiles[] = {"hf", "hf-legacy", "meg", "megatron"};
static const gm_dtype dtypes[] = {GM_F32, GM_F16, GM_BF16};

// Reads a logits .npy of dtype dt, widened to f32. Returns NULL on failure.
static float *read_logits_at(const char *path, gm_dtype dt, size_t *n) {
  gm_npy a;
  if (gm_npy_read(path, dt == GM_F32 ? GM_F32 : dt, &a)) { CHECK(0, "%s", gm_errmsg()); return NULL; }
  CHECK(a.dtype == dt, "%s: dtype %s, wanted %s", path, gm_dtype_name(a.dtype), gm_dtype_name(dt));
  float *out = malloc(a.count * sizeof(float));
  for (size_t i = 0; i < a.count; i++) out[i] = (float)gm_load_f64(a.dtype, a.data, i);
  *n = a.count;
  gm_npy_free(&a);
  return out;
}

static float *read_logits(const char *cfg, const char *prof, gm_dtype dt, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/%s_%s.npy", PROFILE_DIR, cfg, prof, gm_dtype_name(dt));
  return read_logits_at(path, dt, n);
}

static int32_t *read_tokens(const char *cfg, int *B, int *T) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/tokens.npy", MODEL_DIR, cfg);
  gm_npy a;
  if (gm_npy_read(path, GM_BF16, &a)) { CHECK(0, "%s", gm_errmsg()); return NULL; }
  *B = (int)a.shape[0];
  *T = (int)a.shape[1];
  int32_t *t = malloc(a.count * sizeof(int32_t));
  for (size_t i = 0; i < a.count; i++) t[i] = a.dtype == GM_I64 ? (int32_t)((int64_t *)a.data)[i] : ((int32_t *)a.data)[i];
  gm_npy_free(&a);
  return t;
}

static void test_fidelity(void) {
  printf("  %-16s %-9s %-5s %9s %9s %11s %11s\n", "config", "profile", "dtype", "top1 bad", "bitwise", "max|ours-ref|",
         "ref hf-meg");
  for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
    int B, T;
    int32_t *tok = read_tokens(configs[c], &B, &T);
    if (!tok) continue;
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
      gm_dtype dt = dtypes[d];
      size_t n = 0, n2 = 0;
      float *ref_hf = read_logits(configs[c], "hf", dt, &n), *ref_meg = read_logits(configs[c], "meg", dt, &n2);
      if (!ref_hf || !ref_meg) { free(ref_hf); free(ref_meg); continue; }
      double frame = test_max_abs_diff(ref_hf, ref_meg, n);
      char dir[512];
      snprintf(dir, sizeof dir, "%s/%s", MODEL_DIR, configs[c]);
      gm_gpt2 m;
      if (gm_gpt2_load(&m, dir) || gm_gpt2_to_dtype(&m, dt)) { CHECK(0, "%s: %s", dir, gm_errmsg()); continue; }
      int V = m.cfg.vocab_size;
      CHECK(n == (size_t)B * T * V, "%s: golden size %zu", configs[c], n);
      float *out = malloc(n * sizeof(float));
      for (size_t q = 0; q < sizeof profiles / sizeof *profiles; q++) {
        size_t nr;
        float *ref = read_logits(configs[c], profiles[q], dt, &nr);
        gm_profile p;
        CHECK(gm_profile_get(profiles[q], dt, &p) == 0, "%s", gm_errmsg());
        if (!ref || gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = B, .T = T, .logits = out, .threads = 2})) { CHECK(0, "%s %s: %s", configs[c], profiles[q], gm_errmsg()); free(ref); continue; }
        int top1_bad = 0;
        for (int r = 0; r < B * T; r++)
          if (test_argmax(out + (size_t)r * V, V) != test_argmax(ref + (size_t)r * V, V)) top1_bad++;
        size_t same = 0;
        for (size_t i = 0; i < n; i++) same += memcmp(&out[i], &ref[i], sizeof(float)) == 0;
        double bitwise = (double)same / (double)n, dist = test_max_abs_diff(out, ref, n);
        printf("  %-16s %-9s %-5s %9d %8.2f%% %11.3g %11.3g\n", configs[c], profiles[q], gm_dtype_name(dt), top1_bad,
               100.0 * bitwise, dist, frame);
        CHECK(top1_bad == 0, "%s %s %s: top-1 differs at %d positions", configs[c], profiles[q], gm_dtype_name(dt), top1_bad);
        if (dt == GM_F32) {
          CHECK(dist <= 1e-4, "%s %s f32: max |diff| %.3g > 1e-4", configs[c], profiles[q], dist);
        } else {
          CHECK(bitwise >= 0.99, "%s %s %s: only %.2f%% bit-identical", configs[c], profiles[q], gm_dtype_name(dt), 100 * bitwise);
          CHECK(dist <= frame / 4, "%s %s %s: distance %.3g from the reference > a quarter of hf-to-meg %.3g", configs[c],
                profiles[q], gm_dtype_name(dt), dist, frame);
        }
        free(ref);
      }
      free(out);
      free(ref_hf);
      free(ref_meg);
      gm_gpt2_free(&m);
    }
    free(tok);
  }
}

// Every target's own references (the files that differ from zen4's), run under that target.
static void test_target_references(void) {
  int files = 0;
  for (int t = 0; t < GM_TT_N; t++) {
    if (t == GM_TT_ZEN4) continue;
    const char *tn = gm_torch_target_name((gm_torch_target)t);
    for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
      int B, T;
      int32_t *tok = read_tokens(configs[c], &B, &T);
      if (!tok) continue;
      for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
        const gm_dtype dt = dtypes[d];
        gm_gpt2 m;
        bool loaded = false;
        float *out = NULL;
        for (size_t q = 0; q < sizeof profiles / sizeof *profiles; q++) {
          char path[600];
          snprintf(path, sizeof path, "%s/tests/golden/targets/%s/profile/%s/%s_%s.npy", GPTMEG_SOURCE_DIR, tn, configs[c],
                   profiles[q], gm_dtype_name(dt));
          if (access(path, R_OK) != 0) continue; // torch gave zen4's bits here
          if (!loaded) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s", MODEL_DIR, configs[c]);
            if (gm_gpt2_load(&m, dir) || gm_gpt2_to_dtype(&m, dt)) { CHECK(0, "%s: %s", dir, gm_errmsg()); break; }
            loaded = true;
            out = malloc((size_t)B * T * m.cfg.vocab_size * sizeof(float));
          }
          size_t n = 0;
          float *ref = read_logits_at(path, dt, &n);
          gm_profile p;
          CHECK(gm_profile_get(profiles[q], dt, &p) == 0, "%s", gm_errmsg());
          gm_torch_target_set((gm_torch_target)t);
          int rc = ref && n == (size_t)B * T * m.cfg.vocab_size
                       ? gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = B, .T = T, .logits = out, .threads = 2})
                       : -1;
          gm_torch_target_set(GM_TT_ZEN4);
          if (rc) { CHECK(0, "%s %s %s %s: %s", tn, configs[c], profiles[q], gm_dtype_name(dt), ref ? gm_errmsg() : "unreadable"); free(ref); continue; }
          files++;
          const int V = m.cfg.vocab_size;
          int top1_bad = 0, diff = test_count_diff(out, ref, n);
          for (int r = 0; r < B * T; r++) top1_bad += test_argmax(out + (size_t)r * V, V) != test_argmax(ref + (size_t)r * V, V);
          if (dt == GM_F32) {
            double dist = test_max_abs_diff(out, ref, n);
            CHECK(top1_bad == 0 && dist <= 1e-4, "%s %s %s f32: top-1 differs at %d positions, max |diff| %.3g", tn, configs[c],
                  profiles[q], top1_bad, dist);
          } else {
            CHECK(diff == 0, "%s %s %s %s: %d of %zu logits differ from torch's on that target", tn, configs[c], profiles[q],
                  gm_dtype_name(dt), diff, n);
          }
          free(ref);
        }
        if (loaded) gm_gpt2_free(&m);
        free(out);
      }
      free(tok);
    }
  }
  CHECK(files > 0, "no target's profile references under tests/golden/targets/");
  printf("  %d target references (tests/golden/targets/*/profile) checked under their targets\n", files);
}

// The model evaluates torch-cpu GELUs in chunks of whole vector steps on several threads; that must
// equal one call over the whole tensor on one thread (PyTorch's one-thread run), for every variant
// and dtype.
static void test_chunked_gelu_equals_one_call(void) {
  const size_t n = 3 * 16384 + 1000 + 7;
  uint16_t *x = malloc(n * 4), *y1 = malloc(n * 4), *y2 = malloc(n * 4); // room for f32
  gm_rng r;
  gm_rng_seed(&r, 5);
  for (int d = 0; d < 3; d++) {
    gm_dtype dt = d == 0 ? GM_F16 : d == 1 ? GM_BF16 : GM_F32;
    size_t es = gm_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
      float v = (float)(4.0 * gm_rng_normal(&r));
      if (dt == GM_F32) memcpy((char *)x + 4 * i, &v, 4);
      else x[i] = dt == GM_F16 ? gm_f32_to_f16(v) : gm_f32_to_bf16(v);
    }
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
      gm_gelu_spec s = {(gm_gelu_variant)v, GM_MODE_TORCH_CPU};
      if (gm_gelu_fwd(s, dt, x, y1, n, 1)) continue; // not every variant has a torch-cpu form in every dtype
      for (size_t at = 0; at < n; at += 16384) {
        size_t len = n - at < 16384 ? n - at : 16384;
        CHECK(gm_gelu_fwd(s, dt, (char *)x + at * es, (char *)y2 + at * es, len, 1) == 0, "%s", gm_errmsg());
      }
      CHECK(memcmp(y1, y2, n * es) == 0, "%s %s: chunked torch-cpu GELU differs from one call",
            gm_gelu_variant_info(s.variant)->name, gm_dtype_name(dt));
    }
  }
  free(x); free(y1); free(y2);
}

// Every profile's GELU runs in the torch-cpu mode, megatron's fused bias-GELU included (it runs on
// f32 tensors in torch; the eager mode's tanh differs by up to 2 ulps in f32, which only the 124M
// check with torch's MKL shows: tools/ref/check_fidelity.py, docs/numerics.md).
static void test_profiles_use_torch_cpu(void) {
  const char *names[] = {"hf", "hf-legacy", "meg", "megatron"};
  for (int i = 0; i < 4; i++) {
    gm_profile p;
    CHECK(gm_profile_get(names[i], GM_F32, &p) == 0, "%s: %s", names[i], gm_errmsg());
    CHECK(p.gelu_mode == GM_MODE_TORCH_CPU, "%s: GELU mode %d", names[i], (int)p.gelu_mode);
    if (!p.act_from_config)
      CHECK(p.act_override.mode == GM_MODE_TORCH_CPU, "%s: activation override in mode %d", names[i], (int)p.act_override.mode);
  }
}

int main(void) {
  test_profiles_use_torch_cpu();
  test_chunked_gelu_equals_one_call();
  test_fidelity();
  test_target_references();
  return test_done("test_profile");
}
