// `eager` mode (NUMERICS.md section 4): the formula as written, op by op. Each op reads the dtype,
// computes in opmath (f32 for f16/bf16/f32, f64 for f64) and rounds back to the dtype.
//
// Within opmath every op is correctly rounded: +, -, *, / are IEEE; pow(x, 3) is an exact cube
// rounded once; tanh, erf, exp, sigmoid and the fused backward kernels (tanh_backward,
// sigmoid_backward) are evaluated in double (glibc libm) and rounded once to f32, which is
// correctly rounded except in rare double-rounding cases (a double result within 2^-29 f32 ULP
// of an f32 rounding boundary). For f64 the elementary functions are glibc's double ones (within
// 1 ULP, not correctly rounded). Python float scalars enter in opmath (as PyTorch's kernels read
// them). The op graphs are shared with torch-cpu mode (gelu_ops_graph.c).
//
// The one-kernel variants (gelu, gelu_pytorch_tanh) are one op: the whole formula, evaluated in
// double in a cancellation-free form (0.5*x*erfc(-x/sqrt2); x/(1+exp(-2z))), rounded once to
// opmath and then to the dtype; gelu_10 is that op followed by clip(-10, 10). Results never
// depend on the thread count.
#include <math.h>

#include "kernels/gelu/gelu_ops.h"

// ---- helpers ------------------------------------------------------------------------------------

static bool is_f64(const gelu_op_set *o) { return o->dt == GM_F64; }

// A double result of an opmath-f32 op, rounded to f32 and then to the dtype.
static double to_dtype(const gelu_op_set *o, double v) {
  return is_f64(o) ? v : gm_gelu_ops_round_f32(o->dt, (float)v);
}

// hi + lo (lo the exact error of hi) rounded once to f32: a double-rounding fix for exact cubes.
static float round_pair_f32(double hi, double lo) {
  float f = (float)hi;
  if (lo == 0.0 || (double)f == hi || !isfinite(hi)) return f;
  float g = nextafterf(f, hi > (double)f ? INFINITY : -INFINITY);
  double mid = 0.5 * ((double)f + (double)g);
  if (hi != mid) return f;                  // not a tie in double: (float)hi was right
  return (lo > 0.0) == (g > f) ? g : f;     // the tie is broken by the error term
}

// ---- the op set --------------------------------------------------------------------------------

static void eager_mul(const gelu_op_set *o, size_t off, size_t n, const double *a, const double *b,
                      double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++)
    out[i] = is_f64(o) ? a[i] * b[i] : to_dtype(o, (float)a[i] * (float)b[i]);
}

static void eager_add(const gelu_op_set *o, size_t off, size_t n, const double *a, const double *b,
                      double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++)
    out[i] = is_f64(o) ? a[i] + b[i] : to_dtype(o, (float)a[i] + (float)b[i]);
}

static void eager_mul_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = is_f64(o) ? a[i] * s : to_dtype(o, (float)a[i] * sf);
}

static void eager_add_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = is_f64(o) ? a[i] + s : to_dtype(o, (float)a[i] + sf);
}

static void eager_rsub_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                              double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = is_f64(o) ? s - a[i] : to_dtype(o, sf - (float)a[i]);
}

static void eager_div_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  float sf = (float)s;
  for (size_t i = 0; i < n; i++) out[i] = is_f64(o) ? a[i] / s : to_dtype(o, (float)a[i] / sf);
}

// pow(a, 2) and pow(a, 3), each correctly rounded once.
static double cube_f64(double x) {
  double p = x * x, pl = fma(x, x, -p);
  double r = p * x, e = fma(p, x, -r) + pl * x;
  return r + e;
}

static void eager_pow_scalar(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                             double *out) {
  (void)off;
  bool cube = s == 3.0;
  for (size_t i = 0; i < n; i++) {
    double x = a[i];
    if (is_f64(o)) {
      out[i] = cube ? cube_f64(x) : x * x;
    } else if (!cube) {
      out[i] = to_dtype(o, (float)(x * x));  // x*x is exact in double
    } else {
      double p = x * x, hi = p * x, lo = fma(p, x, -hi);
      out[i] = gm_gelu_ops_round_f32(o->dt, round_pair_f32(hi, lo));
    }
  }
}

static void eager_neg(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)o; (void)off;
  for (size_t i = 0; i < n; i++) out[i] = -a[i];
}

static void eager_tanh(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, tanh(a[i]));
}

static void eager_erf(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, erf(a[i]));
}

static void eager_exp(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, exp(a[i]));
}

static void eager_sigmoid(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, 1.0 / (1.0 + exp(-a[i])));
}

static void eager_tanh_backward(const gelu_op_set *o, size_t off, size_t n, const double *g,
                                const double *t, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, g[i] * fma(-t[i], t[i], 1.0));
}

static void eager_sigmoid_backward(const gelu_op_set *o, size_t off, size_t n, const double *g,
                                   const double *s, double *out) {
  (void)off;
  for (size_t i = 0; i < n; i++) out[i] = to_dtype(o, g[i] * ((1.0 - s[i]) * s[i]));
}

static gelu_op_set eager_op_set(gm_dtype dt, size_t n, int threads) {
  gelu_op_set o = {
      .dt = dt, .numel = n, .threads = threads,
      .mul = eager_mul, .add = eager_add, .mul_scalar = eager_mul_scalar,
      .add_scalar = eager_add_scalar, .rsub_scalar = eager_rsub_scalar,
      .div_scalar = eager_div_scalar, .pow_scalar = eager_pow_scalar, .neg = eager_neg,
      .tanh = eager_tanh, .erf = eager_erf, .exp = eager_exp, .sigmoid = eager_sigmoid,
      .tanh_backward = eager_tanh_backward, .sigmoid_backward = eager_sigmoid_backward,
  };
  return o;
}

// ---- one-kernel variants --------------------------------------------------------------------------

static const double kBeta = 0.7978845608028654;  // M_SQRT2 * M_2_SQRTPI * 0.5
static const double kKappa = 0.044715;

// F.gelu(x) and its backward over the reals, in double without cancellation.
static double erf_gelu(double x) { return 0.5 * x * erfc(-x * M_SQRT1_2); }
static double erf_gelu_grad(double x) {
  double cdf = 0.5 * erfc(-x * M_SQRT1_2);
  double pdf = exp(-0.5 * x * x) * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return cdf + x * pdf;
}

// F.gelu(x, approximate='tanh'): 0.5*x*(1+tanh z) = x*s with s = 1/(1+exp(-2z)).
static double tanh_gelu(double x) {
  double z = kBeta * (x + kKappa * x * x * x);
  return x / (1.0 + exp(-2.0 * z));
}
// d/dx: 0.5*(1+t) + 0.5*x*(1-t*t)*kBeta*(1+3*kKappa*x*x), with 1+t = 2s, 1-t*t = 4s(1-s).
static double tanh_gelu_grad(double x) {
  double z = kBeta * (x + kKappa * x * x * x);
  double s = 1.0 / (1.0 + exp(-2.0 * z)), sc = 1.0 / (1.0 + exp(2.0 * z));
  return s + 2.0 * x * s * sc * kBeta * (1.0 + 3.0 * kKappa * x * x);
}

static int one_kernel(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *out,
                      size_t n, int threads) {
  int nt = gelu_threads_for(n, threads);
#pragma omp parallel for num_threads(nt) schedule(static, 4096)
  for (size_t i = 0; i < n; i++) {
    double xi = gm_load_f64(dt, x, i), r;
    bool is_tanh = v == GM_GELU_PYTORCH_TANH;
    double y = is_tanh ? tanh_gelu(xi) : erf_gelu(xi);
    if (dt != GM_F64) y = gm_gelu_ops_round_f32(dt, (float)y);
    if (!dy) {
      r = (v == GM_GELU_10 && !isnan(y)) ? fmin(fmax(y, -10.0), 10.0) : y;
      gm_store_f64(dt, out, i, r);
      continue;
    }
    double g = gm_load_f64(dt, dy, i);
    if (v == GM_GELU_10 && !(y >= -10.0 && y <= 10.0)) g = 0.0; // clamp_backward's mask
    r = g * (is_tanh ? tanh_gelu_grad(xi) : erf_gelu_grad(xi));
    if (dt != GM_F64) r = (double)(float)r;
    gm_store_f64(dt, out, i, r);
  }
  return 0;
}

static int check_dtype(gm_dtype dt) {
  if (dt == GM_F32 || dt == GM_F16 || dt == GM_BF16 || dt == GM_F64) return 0;
  return gm_fail("GELU eager mode: dtype %s is not supported (f32, f16, bf16, f64)",
                 gm_dtype_name(dt));
}

int gm_gelu_eager_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  if (check_dtype(dt)) return 1;
  if (!gm_gelu_ops_has_graph(v)) return one_kernel(v, dt, x, NULL, y, n, threads);
  gelu_op_set o = eager_op_set(dt, n, threads);
  return gm_gelu_ops_run(v, &o, x, NULL, y, threads);
}

int gm_gelu_eager_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx,
                   size_t n, int threads) {
  if (check_dtype(dt)) return 1;
  if (!gm_gelu_ops_has_graph(v)) return one_kernel(v, dt, x, dy, dx, n, threads);
  gelu_op_set o = eager_op_set(dt, n, threads);
  return gm_gelu_ops_run(v, &o, x, dy, dx, threads);
}
