// Adam and AdamW, one f32 tensor a call, as torch 2.15 CPU runs them.
//
// Numerics contract (f32 param, grad and moments; every product and sum below rounded to f32 once;
// fma(a, b, c) is one rounding; f32(x) rounds a Python float (double) to f32; measured against torch
// 2.15.0 on AVX-512, tests/test_optim.c with tools/ref/gen_optim_goldens.py):
//   scalars, in double as Python computes them: step += 1 (torch keeps an f32 count),
//     bc1 = 1 - beta1**step, bc2 = 1 - beta2**step (C pow: Python's float ** float),
//     step_size = lr / bc1;
//     single: bc2_sqrt = bc2 ** 0.5 (pow); fused: sqrt(bc2)
//   GM_ADAM_SINGLE (_single_tensor_adam; each line one eager op, ATen's vector and scalar lambdas give
//   the same bits, so neither the length nor the thread count matters):
//     AdamW, wd != 0: p = p * f32(1 - lr*wd)                      param.mul_
//     Adam,  wd != 0: g = fma(p, f32(wd), g)                      grad.add(param, alpha=wd) (ufunc add: fmadd)
//     w = f32(1 - beta1); m = |w| < 0.5 ? fma(w, g - m, m)        exp_avg.lerp_(grad, 1 - beta1)
//                               : fma(w - 1, g - m, g)
//     v = v * f32(beta2); v = fma(f32(1 - beta2) * g, g, v)       mul_, addcmul_ (GCC contracted s*t1*t2 + self)
//     d = sqrt(v) / f32(bc2_sqrt) + f32(eps)                      sqrt: MKL VML's (gm_adam_sqrt_name)
//     p = p + (f32(-step_size) * m) / d                           addcdiv_
//   foreach=True runs the same ops per tensor on CPU: the same bits (the golden script checks it).
//   GM_ADAM_FUSED (aten/src/ATen/native/cpu/FusedAdamKernel.cpp, float opmath): the same formulas
//   with the decay inside (Adam: g = fma(p, f32(wd), g); AdamW: p *= f32(1 - lr*wd)), the lerp as
//   above, d = IEEE sqrt(v) / f32(bc2_sqrt) + f32(eps), p = p + (f32(-step_size) * m) / d, and
//   v*b2 + c*g*g contracted by GCC two ways (measured, tails of 1 to 15 elements):
//     the first n - (n % 16) % 8 elements (16-lane body, and the 8-lane vectorized part of the tail):
//       v = fma(f32(1 - beta2) * g, g, v * f32(beta2))
//     the last (n % 16) % 8: v = fma(v, f32(beta2), (f32(1 - beta2) * g) * g)
//   Its threads split at 16-element units, so the thread count does not matter.
#include "gptmeg/optim.h"
#include "gptmeg/cpu.h"
#include "gptmeg/target.h"
#include "train/optim_isa.h"

#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// ---- MKL VML's sqrt, loaded at run time (torch's f32 Tensor.sqrt) ------------------------------

typedef void (*vml_fn)(const int *n, const float *a, float *r, const long long *mode);
typedef int (*mkl_threads_fn)(int n);
static vml_fn vml_sqrt;
static mkl_threads_fn mkl_threads_local;
static pthread_once_t vml_once = PTHREAD_ONCE_INIT;
enum { VML_HA = 2 };

static bool target_wants_vml(void) {
  // MKL's Intel AVX-512 code is what torch ran on the goldens' CPU; its AVX2 code (the avx2 target)
  // is IEEE's sqrt (measured: MKL_ENABLE_INSTRUCTIONS=AVX2, 100000 of 100000 equal); zen4's MKL is
  // not measured and taken as IEEE.
  return gm_torch_target_get_info(gm_torch_target_active())->mkl == GM_MKL_SGEMM_INTEL_AVX512;
}

static void vml_load(void) {
  const char *path = gm_torch_lib_path(NULL);
  if (!path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  vml_sqrt = (vml_fn)dlsym(h, "VMSSQRT_");
  mkl_threads_local = (mkl_threads_fn)dlsym(h, "MKL_Set_Num_Threads_Local");
}

// MKL's own vmsSqrt when torch's library is found (the real thing), else its emulation on a CPU
// with AVX-512F (optim_sqrt_avx512.c), else none (IEEE sqrtf, not torch's bits under intel-*).
static void emulated_sqrt(const int *n, const float *a, float *r, const long long *mode) {
  (void)mode;
  gm_train_vml_sqrt_avx512(a, r, (size_t)*n);
}

// Loaded on the first step that wants it (never under a target that does not).
static vml_fn sqrt_fn(void) {
  if (!target_wants_vml()) return NULL;
  pthread_once(&vml_once, vml_load);
  if (vml_sqrt) return vml_sqrt;
  return gm_cpu_has(GM_CPU_AVX512F) ? emulated_sqrt : NULL;
}

const char *gm_adam_sqrt_name(void) {
  vml_fn f = sqrt_fn();
  return !f ? "ieee" : f == emulated_sqrt ? "mkl-vml-avx512" : "mkl-vml";
}

// ---- configuration and state -----------------------------------------------------------------------

gm_adam_cfg gm_adam_cfg_default(gm_adam_kind kind, gm_adam_impl impl) {
  gm_adam_cfg c = {kind, impl, 0.9, 0.999, 1e-8, kind == GM_ADAMW ? 0.01 : 0.0};
  return c;
}

int gm_adam_state_init(gm_adam_state *s, size_t n) {
  memset(s, 0, sizeof *s);
  size_t bytes = (n ? n : 1) * sizeof(float);
  s->exp_avg = calloc(1, bytes);
  s->exp_avg_sq = calloc(1, bytes);
  if (!s->exp_avg || !s->exp_avg_sq) {
    gm_adam_state_free(s);
    return gm_fail("adam state: out of memory for %zu elements", n);
  }
  s->n = n;
  return 0;
}

void gm_adam_state_free(gm_adam_state *s) {
  free(s->exp_avg);
  free(s->exp_avg_sq);
  memset(s, 0, sizeof *s);
}

// ---- the step ---------------------------------------------------------------------------------------

typedef gm_train_adam_k adam_consts;

static inline float lerp_m(const adam_consts *k, float m, float g) {
  float d = g - m;
  return k->w_small ? fmaf(k->w, d, m) : fmaf(k->wm1, d, g);
}

enum { BLOCK = 1024 };

// Elements [i0, i1) of the single-tensor (foreach) step.
static void single_range(const adam_consts *k, vml_fn vsqrt, bool avx512, float *p, const float *grad,
                         float *m, float *v, size_t i0, size_t i1) {
  float r[BLOCK];
  for (size_t b = i0; b < i1; b += BLOCK) {
    int len = (int)(i1 - b < BLOCK ? i1 - b : BLOCK);
    int vec = avx512 ? len / 16 * 16 : 0;
    if (vec) gm_train_adam_pre_avx512(k, p + b, grad + b, m + b, v + b, (size_t)vec);
    for (int j = vec; j < len; j++) {
      size_t i = b + (size_t)j;
      float g = grad[i];
      if (k->decay) {
        if (k->adamw) p[i] = p[i] * k->keep;
        else g = fmaf(p[i], k->wd, g);
      }
      m[i] = lerp_m(k, m[i], g);
      float vi = v[i] * k->b2;
      v[i] = fmaf(k->c2 * g, g, vi);
    }
    if (vsqrt) {
      long long mode = VML_HA;
      vsqrt(&len, v + b, r, &mode);
    } else {
      for (int j = 0; j < len; j++) r[j] = sqrtf(v[b + (size_t)j]);
    }
    if (vec) gm_train_adam_post_avx512(k, p + b, m + b, r, (size_t)vec);
    for (int j = vec; j < len; j++) {
      size_t i = b + (size_t)j;
      float d = r[j] / k->bc2_sqrt + k->eps;
      p[i] = p[i] + (k->neg_step * m[i]) / d;
    }
  }
}

// Where the fused kernel's vector forms end: its 16-lane body (ATen's AVX-512 Vectorized<float>)
// plus the 8-lane part GCC vectorized of the scalar tail loop; the last (n % 16) % 8 elements run
// the scalar statements. Its threads split at 16-element units, so this is the same for every count.
// Under ATen's AVX2 capability (the avx2 target) the body is 8 lanes and the tail (< 8) scalar
// (measured against torch under the avx2 target's environment).
static size_t fused_vector_end(size_t n) {
  bool avx2 = gm_torch_target_get_info(gm_torch_target_active())->aten != GM_ATEN_AVX512;
  if (avx2) return n - n % 8;
  size_t body = n - n % 16;
  return body + (n - body) / 8 * 8;
}

// Elements [i0, i1) of the fused step.
static void fused_range(const adam_consts *k, bool avx512, float *p, const float *grad, float *m, float *v,
                        size_t i0, size_t i1, size_t body) {
  size_t i = i0;
  if (avx512 && body > i0) {
    size_t vec = ((body < i1 ? body : i1) - i0) / 16 * 16;
    if (vec) gm_train_adam_fused_avx512(k, p + i0, grad + i0, m + i0, v + i0, vec);
    i += vec;
  }
  for (; i < i1; i++) {
    float g = grad[i], pi = p[i];
    if (k->decay) {
      if (k->adamw) pi = pi * k->keep;
      else g = fmaf(pi, k->wd, g);
    }
    float mi = lerp_m(k, m[i], g);
    // v*b2 + c*g*g: GCC contracted ATen's vector expression to fma(c*g, g, v*b2) and its scalar
    // tail statements to fma(v, b2, (c*g)*g); it also vectorized the tail loop 8 lanes at a time,
    // which takes the vector form (measured on tails of 1 to 15 elements).
    float vi = i < body ? fmaf(k->c2 * g, g, v[i] * k->b2) : fmaf(v[i], k->b2, (k->c2 * g) * g);
    m[i] = mi;
    v[i] = vi;
    float d = sqrtf(vi) / k->bc2_sqrt + k->eps;
    p[i] = pi + (k->neg_step * mi) / d;
  }
}

int gm_adam_step(const gm_adam_cfg *cfg, gm_adam_state *s, float *param, const float *grad,
                 size_t n, double lr, int threads) {
  if (!cfg || !s || (n && (!param || !grad || !s->exp_avg || !s->exp_avg_sq)))
    return gm_fail("adam step: NULL argument");
  if (n != s->n) return gm_fail("adam step: tensor of %zu elements, state of %zu", n, s->n);
  if ((cfg->kind != GM_ADAM && cfg->kind != GM_ADAMW) || (cfg->impl != GM_ADAM_SINGLE && cfg->impl != GM_ADAM_FUSED))
    return gm_fail("adam step: unknown optimizer kind %d or impl %d", (int)cfg->kind, (int)cfg->impl);
  if (!(lr >= 0) || !(cfg->eps >= 0) || !(cfg->beta1 >= 0 && cfg->beta1 < 1) || !(cfg->beta2 >= 0 && cfg->beta2 < 1) ||
      !(cfg->weight_decay >= 0))
    return gm_fail("adam step: invalid lr %g, betas (%g, %g), eps %g or weight_decay %g (torch refuses them)", lr,
                   cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay);
  if (threads < 1) threads = 1;
  s->step++;
  double step = (double)(float)s->step; // torch's f32 step tensor, read back as a Python float
  double bc1 = 1.0 - pow(cfg->beta1, step);
  double bc2 = 1.0 - pow(cfg->beta2, step);
  double step_size = lr / bc1;
  double bc2_sqrt = cfg->impl == GM_ADAM_FUSED ? sqrt(bc2) : pow(bc2, 0.5);
  adam_consts k;
  k.adamw = cfg->kind == GM_ADAMW;
  k.decay = cfg->weight_decay != 0;
  k.wd = (float)cfg->weight_decay;
  k.keep = (float)(1.0 - lr * cfg->weight_decay);
  k.w = (float)(1.0 - cfg->beta1);
  k.wm1 = k.w - 1.0f;
  k.w_small = fabsf(k.w) < 0.5f;
  k.b2 = (float)cfg->beta2;
  k.c2 = (float)(1.0 - cfg->beta2);
  k.bc2_sqrt = (float)bc2_sqrt;
  k.eps = (float)cfg->eps;
  k.neg_step = (float)(-step_size);
  vml_fn vsqrt = cfg->impl == GM_ADAM_SINGLE ? sqrt_fn() : NULL;
  // The ISA is a speed choice: the AVX-512 bodies compute the scalar code's bits.
  bool avx512 = gm_cpu_simd() >= GM_SIMD_AVX512;
  size_t vec_end = fused_vector_end(n);
  // Contiguous slices of whole BLOCKs, one a thread: elementwise, so the split does not matter.
  size_t nblocks = (n + BLOCK - 1) / BLOCK;
  int nt = (size_t)threads < nblocks ? threads : (int)(nblocks ? nblocks : 1);
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    if (vsqrt && mkl_threads_local) mkl_threads_local(1);
    size_t b0 = nblocks * (size_t)t / (size_t)nt, b1 = nblocks * (size_t)(t + 1) / (size_t)nt;
    size_t i0 = b0 * BLOCK, i1 = b1 * BLOCK < n ? b1 * BLOCK : n;
    if (i0 < i1) {
      if (cfg->impl == GM_ADAM_SINGLE) single_range(&k, vsqrt, avx512, param, grad, s->exp_avg, s->exp_avg_sq, i0, i1);
      else fused_range(&k, avx512, param, grad, s->exp_avg, s->exp_avg_sq, i0, i1, vec_end);
    }
  }
  return 0;
}

double gm_adam_bench(size_t n, int iters, int threads, double *gbps) {
  gm_adam_cfg cfg = gm_adam_cfg_default(GM_ADAMW, GM_ADAM_SINGLE);
  gm_adam_state s;
  float *p = malloc((n ? n : 1) * sizeof(float)), *g = malloc((n ? n : 1) * sizeof(float));
  if (!p || !g || gm_adam_state_init(&s, n) != 0) {
    free(p);
    free(g);
    if (gbps) *gbps = 0;
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    p[i] = (float)((double)(i % 1000) * 1e-3 - 0.5);
    g[i] = (float)((double)(i % 777) * 1e-4 - 0.03);
  }
  gm_adam_step(&cfg, &s, p, g, n, 1e-3, threads);
  if (iters < 1) iters = 1;
  double t0 = gm_now_s();
  for (int it = 0; it < iters; it++) gm_adam_step(&cfg, &s, p, g, n, 1e-3, threads);
  double per = (gm_now_s() - t0) / iters;
  if (gbps) *gbps = per > 0 ? 28.0 * (double)n / per / 1e9 : 0;
  gm_adam_state_free(&s);
  free(p);
  free(g);
  return per;
}
