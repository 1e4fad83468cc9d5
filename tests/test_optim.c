// The optimizer module (gptmeg/optim.h) against torch 2.15 CPU (tools/ref/gen_optim_goldens.py),
// bit for bit:
//   Adam/AdamW single-tensor (foreach=False; the script checks foreach=True gives the same bits)
//   and fused=True, 24 steps over 9 tensors of 1 to 100003 elements, lr from each schedule (the lr
//   of every step compared too), 1 and 2 threads: the final param, exp_avg and exp_avg_sq (in full
//   up to 200 elements, FNV-1a hashes of all), under three targets: avx2 against torch run in the
//   avx2 target's environment (optim_avx2.*); zen4's fused step against torch on the goldens' CPU
//   and its single-tensor step (IEEE sqrt) against the avx2 run; intel-amx against torch on the
//   goldens' CPU (optim.*) when torch's MKL (the single-tensor step's sqrt) is loaded there, else
//   its single-tensor cases are skipped with the reason and asserted to differ.
//   clip_grad_norm_ (the per-tensor and total norms, the clipped grads) and Megatron's clipping;
//   Megatron's and DeepSpeed's loss scalers over found_inf sequences; the unscale with its check.
// And the state file: a run saved at step 10 and resumed gives the bits of a straight run; a state
// of another optimizer, size or tensor count, or a truncated file, is refused with one message.
#include "gptmeg/core.h"
#include "gptmeg/optim.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/cpu.h"
#include "gptmeg/target.h"
#include "harness.h"
#include "train/optim_isa.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GDIR GPTMEG_SOURCE_DIR "/tests/golden/optim/"

// gm_optim_fill of the golden script: splitmix64((seed << 32) + i) made into an f32 with a random
// sign, mantissa, binary exponent in [emin, emax], and an exact zero for ~1 in 97.
static void fill(uint64_t seed, float *x, size_t n, int emin, int emax) {
  for (size_t i = 0; i < n; i++) {
    uint64_t z = (seed << 32) + i + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    uint64_t mant = z & 0x7FFFFF, e = (uint64_t)(emin + 127) + ((z >> 23) % (uint64_t)(emax - emin + 1));
    uint32_t bits = (uint32_t)(((z >> 63) << 31) | (e << 23) | mant);
    if ((z >> 40) % 97 == 0) bits = 0;
    memcpy(&x[i], &bits, 4);
  }
}

static uint64_t fnv(const float *x, size_t n) {
  const unsigned char *b = (const unsigned char *)x;
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n * 4; i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

static bool same_hash(const cJSON *arr, int idx, const float *x, size_t n) {
  const cJSON *it = cJSON_GetArrayItem(arr, idx);
  if (!cJSON_IsString(it)) return false;
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fnv(x, n));
  return strcmp(buf, it->valuestring) == 0;
}

typedef struct {
  cJSON *doc;
  gm_safetensors st;
  bool ok;
} golden;

static bool golden_open(golden *g, const char *base) {
  char path[512];
  snprintf(path, sizeof path, GDIR "%s.json", base);
  char *txt = test_slurp(path);
  g->doc = txt ? cJSON_Parse(txt) : NULL;
  free(txt);
  snprintf(path, sizeof path, GDIR "%s.safetensors", base);
  g->ok = g->doc && gm_st_open(&g->st, path) == 0;
  CHECK(g->ok, "golden %s unreadable: %s", base, g->doc ? gm_errmsg() : "bad JSON");
  return g->ok;
}

static void golden_close(golden *g) {
  if (g->ok) gm_st_close(&g->st);
  cJSON_Delete(g->doc);
}

static int bits_diff(const float *a, const float *b, size_t n) { return test_count_diff(a, b, n); }

// Compares a run's tensor with the stored one (if stored) and the hash (always); returns mismatches.
static int check_tensor(const golden *g, const char *name, const cJSON *hashes, const char *hkey, int hidx,
                        const float *x, size_t n) {
  int bad = 0;
  float *ref = test_st_f32(&g->st, name, NULL, NULL);
  if (ref) {
    int d = bits_diff(x, ref, n);
    if (d) fprintf(stderr, "  %s: %d of %zu elements differ (max |diff| %g)\n", name, d, n, test_max_abs_diff(x, ref, n));
    bad += d;
    free(ref);
  }
  const cJSON *h = cJSON_GetObjectItem(hashes, hkey);
  if (!same_hash(h, hidx, x, n)) {
    if (!ref) fprintf(stderr, "  %s[%d]: hash differs\n", hkey, hidx);
    bad += ref ? 0 : 1;
    if (ref && bad == 0) bad = 1; // stored values agree but the hash does not: the test itself is wrong
  }
  return bad;
}

enum { MAXT = 16 };

typedef struct {
  const char *name, *opt, *mode, *sched;
  double lr, wd, b1, b2, eps;
  int seed;
} adam_case;

static bool parse_case(const cJSON *c, adam_case *a) {
  if (cJSON_GetArraySize(c) < 9) return false;
  a->name = cJSON_GetArrayItem(c, 0)->valuestring;
  a->opt = cJSON_GetArrayItem(c, 1)->valuestring;
  a->mode = cJSON_GetArrayItem(c, 2)->valuestring;
  a->sched = cJSON_GetArrayItem(c, 3)->valuestring;
  a->lr = cJSON_GetArrayItem(c, 4)->valuedouble;
  a->wd = cJSON_GetArrayItem(c, 5)->valuedouble;
  const cJSON *b = cJSON_GetArrayItem(c, 6);
  a->b1 = cJSON_GetArrayItem(b, 0)->valuedouble;
  a->b2 = cJSON_GetArrayItem(b, 1)->valuedouble;
  a->eps = cJSON_GetArrayItem(c, 7)->valuedouble;
  a->seed = cJSON_GetArrayItem(c, 8)->valueint;
  return a->name && a->opt && a->mode && a->sched;
}

static gm_lr_schedule schedule_of(const adam_case *a, const cJSON *sched) {
  gm_lr_schedule s = {GM_LR_CONSTANT, a->lr, 0, 0, 0, 0, 0.5};
  long warmup = (long)cJSON_GetObjectItem(sched, "warmup")->valuedouble;
  if (strcmp(a->sched, "megatron") == 0) {
    s.kind = GM_LR_MEGATRON;
    s.min_lr = a->lr * cJSON_GetObjectItem(sched, "min_lr_frac")->valuedouble;
    s.warmup_steps = warmup;
    s.decay_steps = (long)cJSON_GetObjectItem(sched, "decay")->valuedouble;
  } else if (strcmp(a->sched, "hf") == 0) {
    s.kind = GM_LR_HF_COSINE;
    s.warmup_steps = warmup;
    s.decay_steps = (long)cJSON_GetObjectItem(sched, "hf_total")->valuedouble;
  }
  return s;
}

// Runs one golden Adam case; returns the number of mismatching tensors/lrs.
static int run_adam_case(const golden *g, const adam_case *a, int threads, int *nsizes_out) {
  const cJSON *sizes = cJSON_GetObjectItem(g->doc, "sizes");
  const cJSON *js = cJSON_GetObjectItem(g->doc, "steps");
  int steps = cJSON_IsString(js) ? atoi(js->valuestring) : 0;
  const cJSON *hashes = cJSON_GetObjectItem(g->doc, "hashes");
  int k = cJSON_GetArraySize(sizes);
  if (k > MAXT) k = MAXT;
  *nsizes_out = k;
  gm_adam_cfg cfg = gm_adam_cfg_default(strcmp(a->opt, "adamw") == 0 ? GM_ADAMW : GM_ADAM,
                                        strcmp(a->mode, "fused") == 0 ? GM_ADAM_FUSED : GM_ADAM_SINGLE);
  cfg.beta1 = a->b1;
  cfg.beta2 = a->b2;
  cfg.eps = a->eps;
  cfg.weight_decay = a->wd;
  gm_lr_schedule sch = schedule_of(a, cJSON_GetObjectItem(g->doc, "sched"));
  char key[128];
  snprintf(key, sizeof key, "%s.lr", a->name);
  const cJSON *lrs = cJSON_GetObjectItem(g->doc, key);
  float *p[MAXT], *gr[MAXT];
  gm_adam_state st[MAXT];
  size_t ns[MAXT];
  for (int j = 0; j < k; j++) {
    ns[j] = (size_t)cJSON_GetArrayItem(sizes, j)->valuedouble;
    p[j] = malloc(ns[j] * sizeof(float));
    gr[j] = malloc(ns[j] * sizeof(float));
    fill((uint64_t)(7000 + a->seed * 100 + j), p[j], ns[j], -12, 1);
    gm_adam_state_init(&st[j], ns[j]);
  }
  int bad = 0;
  for (int s = 0; s < steps; s++) {
    double lr = gm_lr_at(&sch, s);
    double want = cJSON_GetArrayItem(lrs, s)->valuedouble;
    if (memcmp(&lr, &want, sizeof lr) != 0) {
      fprintf(stderr, "  %s step %d: lr %.17g, torch's %.17g\n", a->name, s, lr, want);
      bad++;
    }
    for (int j = 0; j < k; j++) {
      if (j == 2 && s == 5) memset(gr[j], 0, ns[j] * sizeof(float));
      else fill((uint64_t)a->seed * 100000 + (uint64_t)j * 1000 + (uint64_t)s, gr[j], ns[j], -60, 12);
      if (gm_adam_step(&cfg, &st[j], p[j], gr[j], ns[j], want, threads) != 0) {
        fprintf(stderr, "  %s: %s\n", a->name, gm_errmsg());
        bad++;
      }
    }
  }
  for (int j = 0; j < k; j++) {
    char hk[96], nm[128];
    snprintf(hk, sizeof hk, "%s.%d", a->name, j);
    snprintf(nm, sizeof nm, "%s.%d.param", a->name, j);
    bad += check_tensor(g, nm, hashes, hk, 0, p[j], ns[j]) != 0;
    snprintf(nm, sizeof nm, "%s.%d.exp_avg", a->name, j);
    bad += check_tensor(g, nm, hashes, hk, 1, st[j].exp_avg, ns[j]) != 0;
    snprintf(nm, sizeof nm, "%s.%d.exp_avg_sq", a->name, j);
    bad += check_tensor(g, nm, hashes, hk, 2, st[j].exp_avg_sq, ns[j]) != 0;
    free(p[j]);
    free(gr[j]);
    gm_adam_state_free(&st[j]);
  }
  return bad;
}

// All cases of one golden whose mode is `mode` (or every mode when NULL).
static void adam_cases(const golden *g, const char *which, bool single, bool fused) {
  const cJSON *cases = cJSON_GetObjectItem(g->doc, "cases");
  int n = 0;
  for (int c = 0; c < cJSON_GetArraySize(cases); c++) {
    adam_case a;
    if (!parse_case(cJSON_GetArrayItem(cases, c), &a)) {
      CHECK(0, "%s: case %d unreadable", which, c);
      continue;
    }
    bool is_fused = strcmp(a.mode, "fused") == 0;
    if ((is_fused && !fused) || (!is_fused && !single)) continue;
    for (int threads = 1; threads <= 2; threads++) {
      int k = 0;
      int bad = run_adam_case(g, &a, threads, &k);
      CHECK(bad == 0, "%s %s, %d threads (sqrt %s): %d of %d tensors/lrs differ from torch", which, a.name, threads,
            gm_adam_sqrt_name(), bad, 3 * k);
      n++;
    }
  }
  printf("  adam %s: %d case runs (single %d, fused %d, sqrt %s)\n", which, n, single, fused, gm_adam_sqrt_name());
}

static size_t sizes_of(const golden *g, size_t *ns, int max) {
  const cJSON *sizes = cJSON_GetObjectItem(g->doc, "sizes");
  int k = cJSON_GetArraySize(sizes);
  if (k > max) k = max;
  for (int j = 0; j < k; j++) ns[j] = (size_t)cJSON_GetArrayItem(sizes, j)->valuedouble;
  return (size_t)k;
}

static void clip_tests(const golden *g) {
  size_t ns[MAXT];
  int k = (int)sizes_of(g, ns, MAXT);
  const cJSON *hashes = cJSON_GetObjectItem(g->doc, "hashes");
  const double max_norms[2] = {1.0, 1e30};
  for (int mi = 0; mi < 2; mi++) {
    char nm[128], hk[64];
    // the per-tensor norms
    float *per = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "clip.%d.per_tensor", mi), nm), NULL, NULL);
    float *tn = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "clip.%d.total_norm", mi), nm), NULL, NULL);
    float *gr[MAXT];
    for (int j = 0; j < k; j++) {
      gr[j] = malloc(ns[j] * sizeof(float));
      fill((uint64_t)(500 + j), gr[j], ns[j], -20, 3);
      if (per) {
        float v = gm_l2_norm_f32(gr[j], ns[j]);
        CHECK(memcmp(&v, &per[j], 4) == 0, "vector_norm of %zu elements: %.9g, torch %.9g", ns[j], v, per[j]);
      }
    }
    for (int threads = 1; threads <= 2; threads++) {
      for (int j = 0; j < k; j++) fill((uint64_t)(500 + j), gr[j], ns[j], -20, 3);
      float total = gm_clip_grad_norm_torch(gr, ns, k, max_norms[mi], threads);
      CHECK(tn && memcmp(&total, tn, 4) == 0, "clip_grad_norm_ total norm %.9g, torch %.9g", total, tn ? *tn : NAN);
      int bad = 0;
      for (int j = 0; j < k; j++) {
        snprintf(nm, sizeof nm, "clip.%d.%d.grad", mi, j);
        snprintf(hk, sizeof hk, "clip.%d.%d", mi, j);
        bad += check_tensor(g, nm, hashes, hk, 0, gr[j], ns[j]) != 0;
      }
      CHECK(bad == 0, "clip_grad_norm_(max_norm %g), %d threads: %d of %d tensors differ", max_norms[mi], threads, bad, k);
      // Megatron
      for (int j = 0; j < k; j++) fill((uint64_t)(500 + j), gr[j], ns[j], -20, 3);
      bool clipped = false;
      double mt = gm_clip_grad_norm_megatron(gr, ns, k, max_norms[mi], threads, &clipped);
      snprintf(nm, sizeof nm, "mclip.%d.total_norm", mi);
      const cJSON *want = cJSON_GetObjectItem(g->doc, nm);
      CHECK(want && mt == want->valuedouble, "Megatron total norm %.17g, reference %.17g", mt, want ? want->valuedouble : NAN);
      CHECK(clipped == (mi == 0), "Megatron clipping: clipped %d at max_norm %g", clipped, max_norms[mi]);
      bad = 0;
      for (int j = 0; j < k; j++) {
        snprintf(nm, sizeof nm, "mclip.%d.%d.grad", mi, j);
        snprintf(hk, sizeof hk, "mclip.%d.%d", mi, j);
        bad += check_tensor(g, nm, hashes, hk, 0, gr[j], ns[j]) != 0;
      }
      CHECK(bad == 0, "Megatron clip (max_norm %g), %d threads: %d of %d tensors differ", max_norms[mi], threads, bad, k);
    }
    for (int j = 0; j < k; j++) free(gr[j]);
    free(per);
    free(tn);
  }
}

static void scaler_tests(const golden *g) {
  const cJSON *hashes = cJSON_GetObjectItem(g->doc, "hashes");
  for (int si = 0;; si++) {
    char nm[96];
    snprintf(nm, sizeof nm, "scaler.%d", si);
    const cJSON *set = cJSON_GetObjectItem(hashes, nm);
    if (!set) break;
    long window = atol(cJSON_GetArrayItem(set, 1)->valuestring);
    int hyst = atoi(cJSON_GetArrayItem(set, 2)->valuestring);
    double init = strtod(cJSON_GetArrayItem(set, 3)->valuestring, NULL);
    int64_t nsteps = 0;
    float *found = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "scaler.%d.found_inf", si), nm), &nsteps, NULL);
    float *ms = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "scaler.%d.megatron_scale", si), nm), NULL, NULL);
    float *minv = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "scaler.%d.megatron_inv", si), nm), NULL, NULL);
    snprintf(nm, sizeof nm, "scaler.%d.deepspeed_scale", si);
    const cJSON *ds = cJSON_GetObjectItem(g->doc, nm);
    if (!found || !ms || !minv || !ds) {
      CHECK(0, "scaler set %d missing", si);
      free(found); free(ms); free(minv);
      continue;
    }
    gm_megatron_scaler m;
    gm_megatron_scaler_init(&m, init, 1.0, 2.0, 0.5, (int)window, hyst);
    gm_deepspeed_scaler d;
    gm_deepspeed_scaler_init(&d, init, 2.0, window, 1.0, hyst, si % 2 == 1);
    int bad_m = 0, bad_d = 0, overflows = 0;
    for (int64_t s = 0; s < nsteps; s++) {
      bool f = found[s] != 0;
      overflows += f;
      gm_megatron_scaler_update(&m, f);
      gm_deepspeed_scaler_update(&d, f);
      float inv = gm_megatron_scaler_inv(&m);
      bad_m += memcmp(&m.scale, &ms[s], 4) != 0 || memcmp(&inv, &minv[s], 4) != 0;
      bad_d += d.cur_scale != cJSON_GetArrayItem(ds, (int)s)->valuedouble;
    }
    CHECK(bad_m == 0, "Megatron scaler set %d (window %ld, hysteresis %d): %d of %lld steps differ", si, window, hyst,
          bad_m, (long long)nsteps);
    CHECK(bad_d == 0, "DeepSpeed scaler set %d (window %ld, hysteresis %d): %d of %lld steps differ", si, window, hyst,
          bad_d, (long long)nsteps);
    printf("  scaler set %d: %lld updates, %d overflows, final Megatron %g, DeepSpeed %g\n", si, (long long)nsteps,
           overflows, (double)m.scale, d.cur_scale);
    free(found); free(ms); free(minv);
  }
  // unscale
  size_t ns[MAXT];
  sizes_of(g, ns, MAXT);
  const double scales[3] = {65536.0, 4294967296.0, 3.0};
  const char *bad_val[3] = {NULL, "inf", "nan"};
  for (int ui = 0; ui < 3; ui++) {
    float *gr[7];
    for (int j = 0; j < 7; j++) {
      gr[j] = malloc(ns[j] * sizeof(float));
      fill((uint64_t)(900 + ui * 10 + j), gr[j], ns[j], -10, 30);
    }
    if (bad_val[ui]) gr[3][7] = bad_val[ui][0] == 'i' ? INFINITY : NAN;
    gm_megatron_scaler m;
    gm_megatron_scaler_init(&m, scales[ui], 1, 2, 0.5, 1000, 2);
    bool found = gm_unscale_grads(gr, ns, 7, gm_megatron_scaler_inv(&m), 2);
    char nm[64];
    float *tf = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "unscale.%d.found_inf", ui), nm), NULL, NULL);
    CHECK(tf && found == (*tf != 0), "unscale %d: found_inf %d, torch %g", ui, found, tf ? *tf : NAN);
    int bad = 0;
    for (int j = 0; j < 7; j++) {
      float *ref = test_st_f32(&g->st, (snprintf(nm, sizeof nm, "unscale.%d.%d.grad", ui, j), nm), NULL, NULL);
      bad += !ref || bits_diff(gr[j], ref, ns[j]) != 0;
      free(ref);
      free(gr[j]);
    }
    CHECK(bad == 0, "unscale %d (scale %g): %d of 7 tensors differ from torch", ui, scales[ui], bad);
    free(tf);
  }
}

// Save at step 10, load into fresh states, run on: the bits of a straight run. Then the refusals.
static void state_file_tests(void) {
  enum { K = 3, STEPS = 16, SAVE_AT = 10 };
  const size_t ns[K] = {5, 100, 1037};
  gm_adam_cfg cfg = gm_adam_cfg_default(GM_ADAMW, GM_ADAM_SINGLE);
  float *pa[K], *pb[K], *g[K];
  gm_adam_state sa[K], sb[K];
  for (int j = 0; j < K; j++) {
    pa[j] = malloc(ns[j] * 4);
    pb[j] = malloc(ns[j] * 4);
    g[j] = malloc(ns[j] * 4);
    fill(31 + (uint64_t)j, pa[j], ns[j], -8, 1);
    memcpy(pb[j], pa[j], ns[j] * 4);
    gm_adam_state_init(&sa[j], ns[j]);
    gm_adam_state_init(&sb[j], ns[j]);
  }
  char path[64];
  snprintf(path, sizeof path, "/tmp/gm_test_optim_%d.bin", (int)getpid());
  for (int s = 0; s < STEPS; s++) {
    for (int j = 0; j < K; j++) {
      fill(77000 + (uint64_t)s * 10 + (uint64_t)j, g[j], ns[j], -30, 5);
      gm_adam_step(&cfg, &sa[j], pa[j], g[j], ns[j], 1e-3, 1);
      gm_adam_step(&cfg, &sb[j], pb[j], g[j], ns[j], 1e-3, 1);
    }
    if (s + 1 == SAVE_AT) {
      CHECK(gm_adam_state_save(path, &cfg, sb, K) == 0, "save: %s", gm_errmsg());
      for (int j = 0; j < K; j++) {
        gm_adam_state_free(&sb[j]);
        gm_adam_state_init(&sb[j], ns[j]);
      }
      CHECK(gm_adam_state_load(path, &cfg, sb, K) == 0, "load: %s", gm_errmsg());
      CHECK(sb[0].step == SAVE_AT, "loaded step %ld, saved %d", sb[0].step, SAVE_AT);
    }
  }
  int bad = 0;
  for (int j = 0; j < K; j++)
    bad += bits_diff(pa[j], pb[j], ns[j]) + bits_diff(sa[j].exp_avg, sb[j].exp_avg, ns[j]) +
           bits_diff(sa[j].exp_avg_sq, sb[j].exp_avg_sq, ns[j]);
  CHECK(bad == 0, "resumed run differs from the straight run in %d elements", bad);
  // refusals: another optimizer, another size, another count, a truncated file, a bad magic
  gm_adam_cfg adam = gm_adam_cfg_default(GM_ADAM, GM_ADAM_SINGLE);
  CHECK(gm_adam_state_load(path, &adam, sb, K) != 0 && strstr(gm_errmsg(), "AdamW"), "Adam loaded an AdamW state (%s)",
        gm_errmsg());
  gm_adam_state other[K];
  for (int j = 0; j < K; j++) gm_adam_state_init(&other[j], ns[j] + (j == 1));
  other[0].step = 123;
  CHECK(gm_adam_state_load(path, &cfg, other, K) != 0 && strstr(gm_errmsg(), "tensor 1"),
        "a state of another shape loaded (%s)", gm_errmsg());
  CHECK(other[0].step == 123, "a refused load changed the states");
  CHECK(gm_adam_state_load(path, &cfg, sb, K - 1) != 0 && strstr(gm_errmsg(), "3 tensors"),
        "a state of another tensor count loaded (%s)", gm_errmsg());
  FILE *f = fopen(path, "r+b");
  if (f) {
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    CHECK(truncate(path, len - 4) == 0, "truncate");
    CHECK(gm_adam_state_load(path, &cfg, sb, K) != 0 && strstr(gm_errmsg(), "truncated"), "a truncated state loaded (%s)",
          gm_errmsg());
    f = fopen(path, "r+b");
    fputc('X', f);
    fclose(f);
    CHECK(gm_adam_state_load(path, &cfg, sb, K) != 0 && strstr(gm_errmsg(), "magic"), "a bad magic loaded (%s)",
          gm_errmsg());
  }
  unlink(path);
  for (int j = 0; j < K; j++) {
    free(pa[j]); free(pb[j]); free(g[j]);
    gm_adam_state_free(&sa[j]);
    gm_adam_state_free(&sb[j]);
    gm_adam_state_free(&other[j]);
  }
  // step argument errors
  gm_adam_state s1;
  gm_adam_state_init(&s1, 4);
  float p4[4] = {0}, g4[4] = {0};
  CHECK(gm_adam_step(&cfg, &s1, p4, g4, 3, 1e-3, 1) != 0, "a step with n != state n ran");
  CHECK(s1.step == 0, "a refused step counted");
  gm_adam_state_free(&s1);
}

// The AVX-512 emulation of MKL's vmsSqrt against MKL's own, when torch's library is here: random
// normal, subnormal and special inputs, every length 0..40 for the masked tail.
typedef void (*vml_fn)(const int *n, const float *a, float *r, const long long *mode);
static void vml_emulation_test(void) {
  if (!gm_cpu_has(GM_CPU_AVX512F)) {
    test_skip("MKL sqrt emulation", "no AVX-512F");
    return;
  }
  const char *path = gm_torch_lib_path(NULL);
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  vml_fn f = h ? (vml_fn)dlsym(h, "VMSSQRT_") : NULL;
  if (!f) {
    test_skip("MKL sqrt emulation against MKL", "torch's libtorch_cpu.so not found (GPTMEG_TORCH_MKL)");
    return;
  }
  size_t n = test_quick() ? 100000 : 1000000;
  float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
  gm_rng r;
  gm_rng_seed(&r, 12345);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)gm_rng_u64(&r);
    if (i % 3 == 0) u &= 0x807fffffu;  // subnormals and zeros
    if (i % 5 == 0) u &= 0x7fffffffu;  // more positives
    memcpy(&x[i], &u, 4);
  }
  const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, -1.0f, 1.0f, 4.0f, 0x1p-149f, 0x1p-126f, 0x1.fffffep127f};
  memcpy(x, sp, sizeof sp);
  long long mode = 2; // VML_HA
  int bad = 0;
  for (size_t off = 0; off < n; off += 1 << 20) {
    int len = (int)(n - off < (1u << 20) ? n - off : (1u << 20));
    f(&len, x + off, a + off, &mode);
  }
  gm_train_vml_sqrt_avx512(x, b, n);
  bad += test_count_diff(a, b, n);
  for (int len = 0; len <= 40; len++) {   // the masked tails
    f(&len, x + 1000, a, &mode);
    gm_train_vml_sqrt_avx512(x + 1000, b, (size_t)len);
    bad += test_count_diff(a, b, (size_t)len);
  }
  CHECK(bad == 0, "the AVX-512 emulation of MKL's vmsSqrt differs from MKL in %d of %zu values", bad, n);
  printf("  MKL vmsSqrt emulation: %zu values and tails 0..40 against MKL's own\n", n);
  free(x); free(a); free(b);
}

int main(void) {
  golden avx2, full;
  bool have_avx2 = golden_open(&avx2, "optim_avx2"), have_full = golden_open(&full, "optim");
  // zen4 (every test's start): the fused step runs ATen's AVX-512 kernel, as on the goldens' Intel
  // CPU; the single-tensor step takes IEEE sqrt (Zen 4's MKL is not measured), checked against
  // torch under the avx2 environment, whose MKL sqrt is IEEE's (its ATen ops agree lane for lane).
  CHECK(strcmp(gm_adam_sqrt_name(), "ieee") == 0, "zen4 target took sqrt %s", gm_adam_sqrt_name());
  if (have_full) adam_cases(&full, "zen4 fused vs torch", false, true);
  if (have_avx2) adam_cases(&avx2, "zen4 single (IEEE sqrt) vs torch avx2 env", true, false);
  // avx2: every case against torch under the avx2 target's environment (8-lane fused body).
  gm_torch_target_set(GM_TT_AVX2);
  if (have_avx2) adam_cases(&avx2, "avx2 vs torch avx2 env", true, true);
  if (have_full) {
    clip_tests(&full);
    scaler_tests(&full);
    // intel-amx: torch as it ran on the goldens' CPU; its single-tensor sqrt is MKL VML's.
    gm_torch_target_set(GM_TT_INTEL_AMX);
    char here[256];
    test_cpu_model(here, sizeof here);
    const cJSON *cpu = cJSON_GetObjectItem(full.doc, "cpu");
    bool same_cpu = cJSON_IsString(cpu) && strcmp(cpu->valuestring, here) == 0;
    if (strcmp(gm_adam_sqrt_name(), "ieee") == 0) {
      test_skip("intel-amx single-tensor Adam cases", "neither torch's MKL nor AVX-512F here (MKL VML's sqrt)");
      adam_cases(&full, "intel-amx", false, true);
      if (same_cpu) {
        // What the IEEE stand-in costs: it must differ from torch's run.
        adam_case a = {"adamw_single_hf", "adamw", "single", "hf", 3e-3, 0.01, 0.9, 0.999, 1e-8, 2};
        int k = 0, bad = run_adam_case(&full, &a, 1, &k);
        CHECK(bad > 0, "IEEE sqrt matched torch's MKL VML run: the golden does not tell them apart");
        printf("  IEEE sqrt: adamw_single_hf differs from torch (MKL VML) in %d of %d tensors\n", bad, 3 * k);
      }
    } else if (!same_cpu) {
      test_skip("intel-amx single-tensor Adam cases", "the goldens were written on another CPU model (MKL VML's bits depend on it)");
      adam_cases(&full, "intel-amx", false, true);
    } else {
      adam_cases(&full, "intel-amx vs torch", true, true);
    }
    vml_emulation_test();
  }
  gm_torch_target_unset();
  if (have_full) golden_close(&full);
  if (have_avx2) golden_close(&avx2);
  state_file_tests();
  return test_done("test_optim");
}
