// torch-cpu mode for the GELU variants written as separate tensor ops (gelu_python, gelu_new,
// gelu_accurate, gelu_fast, gelu_megatron, openai_gelu, quick_gelu): every op of the shared graph
// (gelu_ops_graph.c) computed the way the pinned PyTorch (2.15.0, CPU capability AVX512, MKL
// build) computes it on this CPU, measured against it op by op (tools/ref/gen_gelu_ops_goldens.py).
//
// What torch does, per op (f32 opmath for f16/bf16, result rounded to the dtype once per op):
//  - +, -, *, / with tensors or Python scalars: IEEE f32; a scalar factor, divisor or subtrahend
//    is read as f32, but a scalar addend (tensor + s, s + tensor) is first rounded to the tensor's
//    dtype (measured). Division by a scalar is a true division.
//  - pow(x, 3) / pow(x, 3.0): f32 x*x*x rounded once; bf16 rounds after each multiply
//    (bf16(bf16(x*x)*x)); f16 x*x*x in f32 rounded once. pow(x, 2) is x*x.
//  - tanh, erf, exp on contiguous f32: MKL VML in high-accuracy mode (vmsTanh/vmsErf/vmsExp, mode
//    VML_HA), for every length and thread count. gptmeg cannot carry MKL, so it calls MKL's VML
//    entry points VMSTANH_/VMSERF_/VMSEXP_ from torch's own libtorch_cpu.so, which exports them
//    (GPTMEG_TORCH_MKL names it, else gm_torch_lib_path finds a torch installation); without it, these three are computed in
//    double and rounded to f32 (close to VML_HA, not bit exact; gm_gelu_torch_ops_have_mkl()).
//  - tanh, erf, exp on f16/bf16 and sigmoid on every dtype: ATen's cpu_kernel_vec. Each thread's
//    chunk (at::parallel_for, grain 32768, chunk ceil(n / min(threads, ceil(n/32768)))) runs
//    2*Vec::size() elements per step (32 for f32, 64 for f16/bf16; half that under ATen's AVX2
//    capability, the torch CPU target avx2) through the vector lambda
//    (Sleef_tanhf16_u10, Sleef_expf16_u10, Abramowitz-Stegun erf, 1/(1+Sleef_expf(0-x))) and its
//    leftover through the scalar lambda (glibc tanhf, erff, expf, 1/(1+expf(-x)) in f32).
//  - tanh_backward(g, t) = g * fma(-t, t, 1) (GCC contracted 1 - t*t) in f32, rounded once.
//  - sigmoid_backward(g, s) = (g * (1 - s)) * s in f32, rounded once; for f16 each of the three
//    ops is rounded to f16 (Half arithmetic).
// f64 is not emulated here.
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "gptmeg/target.h"
#include "gptmeg/cpu.h"
#include "gptmeg/target.h"
#include "kernels/gelu/gelu_ops.h"
#include "kernels/gelu/torch/gelu_torch_fast.h"
#include "kernels/gelu/torch/gelu_torch_ops_simd.h"

// ---- MKL VML, loaded at run time -------------------------------------------------------------

typedef void (*vml_fn)(const int *n, const float *a, float *r, const long long *mode);
static vml_fn vml_tanh, vml_erf, vml_exp;
// MKL_Set_Num_Threads_Local(1) (C interface, by value) on each calling thread: VML runs there
// (gptmeg already splits the work across its threads; MKL's own threads would compete with
// them). Lanes are independent, so the bits do not depend on it.
typedef int (*mkl_threads_fn)(int n);
static mkl_threads_fn mkl_set_threads_local;
static _Thread_local bool vml_serial_here;
static pthread_once_t vml_once = PTHREAD_ONCE_INIT;
enum { VML_HA = 2 };

// MKL picks VML's code by the CPU and its instruction cap, once, at its first call: on an Intel
// AVX-512 CPU the uncapped library gives the intel-* targets' bits and, capped to AVX2 (what
// MKL_ENABLE_INSTRUCTIONS=AVX2 does for torch), the avx2 target's (measured against both targets'
// gelu_ops goldens: all f32 cases). So the cap follows the torch CPU target active when MKL is
// first loaded, for the rest of the process (gm_gelu_torch_ops_mkl_avx2 says which).
static bool vml_avx2;
enum { MKL_ENABLE_AVX2 = 2 }; // mkl_enable_instructions' value for AVX2 (mkl_service.h)

static void vml_load(void) {
  const char *path = gm_torch_lib_path(NULL); // GPTMEG_TORCH_MKL, else a torch installation found
  if (!path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  if (gm_torch_target_get_info(gm_torch_target_active())->mkl == GM_MKL_SGEMM_INTEL_AVX2) {
    typedef int (*enable_fn)(int);
    enable_fn en = (enable_fn)dlsym(h, "MKL_Enable_Instructions");
    if (!en) en = (enable_fn)dlsym(h, "mkl_enable_instructions");
    if (!en) en = (enable_fn)dlsym(h, "mkl_serv_enable_instructions"); // torch's build exports only this
    vml_avx2 = en && en(MKL_ENABLE_AVX2) == 1;
  }
  vml_fn t = (vml_fn)dlsym(h, "VMSTANH_"), e = (vml_fn)dlsym(h, "VMSERF_"),
         x = (vml_fn)dlsym(h, "VMSEXP_");
  mkl_set_threads_local = (mkl_threads_fn)dlsym(h, "MKL_Set_Num_Threads_Local");
  if (t && e && x) {
    vml_tanh = t;
    vml_erf = e;
    vml_exp = x;
  }
}

bool gm_gelu_torch_ops_mkl_avx2(void) {
  pthread_once(&vml_once, vml_load);
  return vml_avx2 && vml_tanh != NULL;
}

bool gm_gelu_torch_ops_have_mkl(void) {
  pthread_once(&vml_once, vml_load);
  return vml_tanh != NULL;
}

// ---- where an element runs in cpu_kernel_vec ---------------------------------------------------

enum { TORCH_GRAIN = 32768 };

void gm_gelu_torch_vec_split(gm_dtype dt, size_t numel, int threads, size_t *chunk, size_t *step) {
  size_t tasks = 1;
  if (threads > 1 && numel >= TORCH_GRAIN) {
    size_t by_grain = (numel + TORCH_GRAIN - 1) / TORCH_GRAIN;
    tasks = (size_t)threads < by_grain ? (size_t)threads : by_grain;
  }
  *chunk = numel == 0 ? 1 : (numel + tasks - 1) / tasks;
  // Two Vectorized per step: 16 f32 lanes a vector under ATen's AVX512 capability, 8 under AVX2
  // (the active torch CPU target's; the lambdas' bits per element are the same under both).
  bool avx2 = gm_torch_target_get_info(gm_torch_target_active())->aten != GM_ATEN_AVX512;
  *step = (dt == GM_F32 ? 32 : 64) >> (avx2 ? 1 : 0);
}

// True when element i of the tensor takes the vector lambda, false for the scalar leftover.
static bool in_vector_body(const gelu_op_set *o, size_t i) {
  size_t n = o->numel, chunk, step;
  gm_gelu_torch_vec_split(o->dt, n, o->threads, &chunk, &step);
  size_t begin = i / chunk * chunk, len = n - begin < chunk ? n - begin : chunk;
  return i - begin < len / step * step;
}

// ---- unary ops ----------------------------------------------------------------------------------

typedef float (*scalar_fn)(float);
typedef void (*vector_fn)(const float *in, float *out, size_t n);

static float scalar_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }
static float libm_tanhf(float a) { return tanhf(a); }
static float libm_erff(float a) { return erff(a); }
static float libm_expf(float a) { return expf(a); }
static float double_tanh(float a) { return (float)tanh((double)a); }
static float double_erf(float a) { return (float)erf((double)a); }
static float double_exp(float a) { return (float)exp((double)a); }

enum { PIECE = 256 };

// cpu_kernel_vec: vector lambda for the elements in a chunk's body, scalar lambda for the rest.
static void kernel_vec(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out,
                       vector_fn vec, scalar_fn scalar) {
  float in[PIECE], res[PIECE];
  size_t idx[PIECE];
  size_t i = 0;
  while (i < n) {
    size_t k = 0;
    for (; i < n && k < PIECE; i++) {
      if (in_vector_body(o, off + i)) {
        idx[k] = i;
        in[k++] = (float)a[i];
      } else {
        out[i] = gm_gelu_ops_round_f32(o->dt, scalar((float)a[i]));
      }
    }
    vec(in, res, k);
    for (size_t j = 0; j < k; j++) out[idx[j]] = gm_gelu_ops_round_f32(o->dt, res[j]);
  }
}

static vml_fn vml_of(gelu_vml_op op) {
  gm_gelu_torch_ops_have_mkl();
  if (vml_tanh && mkl_set_threads_local && !vml_serial_here) {
    mkl_set_threads_local(1);
    vml_serial_here = true;
  }
  return op == GELU_VML_TANH ? vml_tanh : op == GELU_VML_ERF ? vml_erf : vml_exp;
}

void gm_gelu_torch_ops_f32_vml(gelu_vml_op op, const float *in, float *out, size_t n) {
  vml_fn f = vml_of(op);
  if (!f) {
    gm_gelu_torch_double_rounded_avx512(op, in, out, n);
    return;
  }
  long long mode = VML_HA;
  for (size_t i = 0; i < n; i += (size_t)INT_MAX) {
    int k = (int)(n - i < (size_t)INT_MAX ? n - i : (size_t)INT_MAX);
    f(&k, in + i, out + i, &mode);
  }
}

// Contiguous f32 through MKL VML_HA, or its double-libm stand-in element by element (the graph
// path keeps the plain glibc loop: it is the oracle of gm_gelu_torch_double_rounded_avx512).
static void kernel_vml(size_t n, const double *a, double *out, gelu_vml_op op) {
  vml_fn f = vml_of(op);
  scalar_fn fallback = op == GELU_VML_TANH ? double_tanh : op == GELU_VML_ERF ? double_erf : double_exp;
  float in[PIECE], res[PIECE];
  for (size_t i = 0; i < n; i += PIECE) {
    int k = (int)(n - i < PIECE ? n - i : PIECE);
    for (int j = 0; j < k; j++) in[j] = (float)a[i + (size_t)j];
    if (f) {
      long long mode = VML_HA;
      f(&k, in, res, &mode);
    } else {
      for (int j = 0; j < k; j++) res[j] = fallback(in[j]);
    }
    for (int j = 0; j < k; j++) out[i + (size_t)j] = (double)res[j];
  }
}

static void torch_tanh(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  if (o->dt == GM_F32) {
    kernel_vml(n, a, out, GELU_VML_TANH);
  } else {
    kernel_vec(o, off, n, a, out, gm_gelu_torch_vec_tanh_avx512, libm_tanhf);
  }
}

static void torch_erf(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  if (o->dt == GM_F32) {
    kernel_vml(n, a, out, GELU_VML_ERF);
  } else if (o->dt == GM_F16) {
    // Measured (torch 2.15.0): f16 erf gives the vector lambda's bits for every element, the
    // scalar leftover included: erf(0.55517578125) is 0.56787109375 for n = 1 and n = 128 alike,
    // where glibc erff rounds to 0.5673828125.
    float in[PIECE], res[PIECE];
    for (size_t i = 0; i < n; i += PIECE) {
      size_t k = n - i < PIECE ? n - i : PIECE;
      for (size_t j = 0; j < k; j++) in[j] = (float)a[i + j];
      gm_gelu_torch_vec_erf_avx512(in, res, k);
      for (size_t j = 0; j < k; j++) out[i + j] = gm_gelu_ops_round_f32(o->dt, res[j]);
    }
  } else {
    kernel_vec(o, off, n, a, out, gm_gelu_torch_vec_erf_avx512, libm_erff);
  }
}

static void torch_exp(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  if (o->dt == GM_F32) {
    kernel_vml(n, a, out, GELU_VML_EXP);
  } else {
    kernel_vec(o, off, n, a, out, gm_gelu_torch_vec_exp_avx512, libm_expf);
  }
}

static void torch_sigmoid(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  kernel_vec(o, off, n, a, out, gm_gelu_torch_vec_sigmoid_avx512, scalar_sigmoid);
}

static void torch_neg(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)o; (void)off;
  for (size_t i = 0; i < n; i++) out[i] = -a[i];
}

// ---- arithmetic ---------------------------------------------------------------------------------

static double rd(const gelu_op_set *o, float f) { return gm_gelu_ops_round_f32(o->dt, f); }

static void torch_mul(const gelu_op_set *o, size_t off, size_t n, const double *a, const double *b,
                      double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = rd(o, (float)a[i] * (float)b[i]);
}

static void torch_add(const gelu_op_set *o, size_t off, size_t n, const double *a, const double *b,
                      double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = rd(o, (float)a[i] + (float)b[i]);
}

static void torch_mul_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = rd(o, (float)a[i] * sf);
}

static void torch_add_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  // Measured (torch 2.15.0): unlike mul, add reads a Python scalar in the tensor's dtype, so
  // 0.79788456 + r (gelu_megatron's backward) adds bf16(0.79788456) = 0.796875 in bf16.
  float sf = (float)rd(o, (float)s);
  for (size_t i = 0; i < n; i++) out[i] = rd(o, (float)a[i] + sf);
}

static void torch_rsub_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                              double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = rd(o, sf - (float)a[i]);
}

static void torch_div_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = rd(o, (float)a[i] / sf);
}

static void torch_pow_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) {
    float x = (float)a[i], sq = x * x;
    if (s != 3.0) out[i] = rd(o, sq);
    else if (o->dt == GM_BF16) out[i] = rd(o, (float)rd(o, sq) * x);
    else out[i] = rd(o, sq * x);
  }
}

static void torch_tanh_backward(const gelu_op_set *o, size_t off, size_t n, const double *g,
                                const double *t, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) {
    float tf = (float)t[i];
    out[i] = rd(o, (float)g[i] * fmaf(-tf, tf, 1.0f));
  }
}

static void torch_sigmoid_backward(const gelu_op_set *o, size_t off, size_t n, const double *g,
                                   const double *s, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) {
    float gf = (float)g[i], sf = (float)s[i];
    if (o->dt == GM_F16) {
      float one_minus = (float)rd(o, 1.0f - sf);
      out[i] = rd(o, (float)rd(o, gf * one_minus) * sf);
    } else {
      out[i] = rd(o, (gf * (1.0f - sf)) * sf);
    }
  }
}

// ---- entry points -------------------------------------------------------------------------------

static int torch_op_set(gm_gelu_variant v, gm_dtype dt, size_t n, int threads, gelu_op_set *o) {
  if (!gm_gelu_ops_has_graph(v))
    return gm_fail("torch-cpu ops: %s is one ATen kernel, not separate ops",
                   gm_gelu_variant_info(v)->name);
  if (dt != GM_F32 && dt != GM_F16 && dt != GM_BF16)
    return gm_fail("torch-cpu mode of %s: dtype %s is not emulated (f32, f16, bf16)",
                   gm_gelu_variant_info(v)->name, gm_dtype_name(dt));
  if (!gm_cpu_has(GM_CPU_AVX512F | GM_CPU_AVX512DQ)) // what torch ran: GPTMEG_SIMD does not apply
    return gm_fail("torch-cpu mode of %s emulates torch's AVX-512 kernels; this CPU lacks AVX-512",
                   gm_gelu_variant_info(v)->name);
  *o = (gelu_op_set){
      .dt = dt, .numel = n, .threads = threads > 0 ? threads : 1,
      .mul = torch_mul, .add = torch_add, .mul_scalar = torch_mul_scalar,
      .add_scalar = torch_add_scalar, .rsub_scalar = torch_rsub_scalar,
      .div_scalar = torch_div_scalar, .pow_scalar = torch_pow_scalar, .neg = torch_neg,
      .tanh = torch_tanh, .erf = torch_erf, .exp = torch_exp, .sigmoid = torch_sigmoid,
      .tanh_backward = torch_tanh_backward, .sigmoid_backward = torch_sigmoid_backward,
  };
  return 0;
}

// The entry points run the fast path (gelu_torch_fast.c: the same ops fused in f32 lanes, the same
// bits); the graph path below stays as its reference oracle (tests/test_gelu_torch_fast.c).
int gm_gelu_torch_ops_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  gelu_op_set o;
  if (torch_op_set(v, dt, n, threads, &o)) return 1;
  return gm_gelu_torch_fast_run(v, dt, x, NULL, y, n, o.threads, gm_gelu_fast_pick_isa());
}

int gm_gelu_torch_ops_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx,
                       size_t n, int threads) {
  gelu_op_set o;
  if (torch_op_set(v, dt, n, threads, &o)) return 1;
  return gm_gelu_torch_fast_run(v, dt, x, dy, dx, n, o.threads, gm_gelu_fast_pick_isa());
}

int gm_gelu_torch_ops_graph_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n,
                             int threads) {
  gelu_op_set o;
  if (torch_op_set(v, dt, n, threads, &o)) return 1;
  return gm_gelu_ops_run(v, &o, x, NULL, y, o.threads);
}

int gm_gelu_torch_ops_graph_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy,
                             void *dx, size_t n, int threads) {
  gelu_op_set o;
  if (torch_op_set(v, dt, n, threads, &o)) return 1;
  return gm_gelu_ops_run(v, &o, x, dy, dx, o.threads);
}
