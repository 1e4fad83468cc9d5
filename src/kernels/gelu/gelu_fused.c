// Fused mode: the whole formula as written, evaluated in opmath -- f32 for f16/bf16/f32 inputs,
// f64 for f64 -- with every op rounded to opmath (no intermediate rounding to the storage dtype),
// then ONE rounding to the dtype. This is what a CUDA ATen kernel or a jit-fused Megatron kernel
// computes, up to its math library. Contract in detail:
//   - constants are rounded to opmath (0.044715f, kBeta = (float)(M_SQRT2*M_2_SQRTPI*0.5), ...);
//   - + - * / are IEEE opmath operations in the written order, no FMA;
//   - erf, tanh, exp, sigmoid and pow(x,3) are the correctly rounded (or nearly: double libm
//     rounded to f32) opmath value of the exact function of the opmath argument; f64 uses glibc's
//     double erf/tanh/exp (sigmoid as 1/(1+exp(-v)) in f64);
//   - backward: the backward formula written out in opmath (ATen's GeluBackward formulas for
//     gelu and gelu_pytorch_tanh, Megatron's custom rule, the chain rule written the same way for
//     the autograd variants), times dy, rounded once; gelu_10's gradient is +0 where gelu(x) > 10.
#include "kernels/gelu/gelu_math.h"

// ---- f32 opmath ---------------------------------------------------------------------------
static float erf_f(float v) { return (float)erf((double)v); }
static float tanh_f(float v) { return (float)tanh((double)v); }
static float exp_f(float v) { return (float)exp((double)v); }
static float sigmoid_f(float v) { return (float)(1.0 / (1.0 + exp(-(double)v))); }
static float cube_f(float x) { return (float)((double)x * x * x); } // x*x exact in double: one rounding of x^3 nearly

// tanh argument of each tanh variant, as written.
static float inner_f(gm_gelu_variant v, float x) {
  switch (v) {
  case GM_GELU_NEW: case GM_GELU_ACCURATE:
    return (float)0.7978845608028654 * (x + 0.044715f * cube_f(x)); // sqrt(2/pi) in double, then f32
  case GM_GELU_FAST: return x * 0.7978845608f * (1.0f + 0.044715f * x * x);
  case GM_GELU_PYTORCH_TANH: return (float)(M_SQRT2 * M_2_SQRTPI * 0.5) * (x + 0.044715f * (x * x * x));
  case GM_GELU_MEGATRON: return 0.79788456f * x * (1.0f + 0.044715f * x * x);
  default: return 0.7978845608028654f * x * (1.0f + 0.044715f * x * x); // openai_gelu
  }
}

static float fwd_f(gm_gelu_variant v, float x) {
  switch (v) {
  case GM_GELU_ERF: return x * 0.5f * (1.0f + erf_f(x * (float)M_SQRT1_2));
  case GM_GELU_PYTHON: return x * 0.5f * (1.0f + erf_f(x / (float)sqrt(2.0)));
  case GM_GELU_10: {
    float g = x * 0.5f * (1.0f + erf_f(x * (float)M_SQRT1_2));
    return g > 10.0f ? 10.0f : (g < -10.0f ? -10.0f : g);
  }
  case GM_QUICK_GELU: return x * sigmoid_f(1.702f * x);
  case GM_GELU_MEGATRON: return x * 0.5f * (1.0f + tanh_f(inner_f(v, x)));
  default: return 0.5f * x * (1.0f + tanh_f(inner_f(v, x)));
  }
}

// d f / dx in opmath (times dy by the caller).
static float deriv_f(gm_gelu_variant v, float x) {
  gelu_family fam = gelu_family_of(v);
  if (fam == GELU_FAM_ERF) {
    if (v == GM_GELU_10 && fwd_f(v, x) != fwd_f(GM_GELU_ERF, x)) return 0.0f; // clip active
    const float kAlpha = v == GM_GELU_PYTHON ? 1.0f / (float)sqrt(2.0) : (float)M_SQRT1_2;
    const float kBeta = (float)(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    float cdf = 0.5f * (1.0f + erf_f(x * kAlpha));
    float pdf = kBeta * exp_f(-0.5f * x * x);
    return cdf + x * pdf;
  }
  if (fam == GELU_FAM_SIGMOID) {
    float s = sigmoid_f(1.702f * x);
    return s + x * 1.702f * s * (1.0f - s);
  }
  float t = tanh_f(inner_f(v, x));
  if (v == GM_GELU_MEGATRON) return 0.5f * x * ((1.0f - t * t) * (0.79788456f + 0.1070322243f * x * x)) + 0.5f * (1.0f + t);
  float a;
  switch (v) {
  case GM_GELU_FAST: a = 0.7978845608f; break;
  case GM_GELU_PYTORCH_TANH: a = (float)(M_SQRT2 * M_2_SQRTPI * 0.5); break;
  case GM_OPENAI_GELU: a = 0.7978845608028654f; break;
  default: a = (float)0.7978845608028654; break;
  }
  float left = 0.5f * x, right = 1.0f + t;
  float inner_derivative = a * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * right + left * (1.0f - t * t) * inner_derivative;
}

// ---- f64 opmath ---------------------------------------------------------------------------
static double inner_d(gm_gelu_variant v, double x) {
  switch (v) {
  case GM_GELU_NEW: case GM_GELU_ACCURATE: return sqrt(2 / M_PI) * (x + 0.044715 * (x * x * x));
  case GM_GELU_FAST: return x * 0.7978845608 * (1.0 + 0.044715 * x * x);
  case GM_GELU_PYTORCH_TANH: return (M_SQRT2 * M_2_SQRTPI * 0.5) * (x + 0.044715 * (x * x * x));
  case GM_GELU_MEGATRON: return 0.79788456 * x * (1.0 + 0.044715 * x * x);
  default: return 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
  }
}
static double sigmoid_d(double v) { return 1.0 / (1.0 + exp(-v)); }

static double fwd_d(gm_gelu_variant v, double x) {
  switch (v) {
  case GM_GELU_ERF: return x * 0.5 * (1.0 + erf(x * M_SQRT1_2));
  case GM_GELU_PYTHON: return x * 0.5 * (1.0 + erf(x / sqrt(2.0)));
  case GM_GELU_10: {
    double g = x * 0.5 * (1.0 + erf(x * M_SQRT1_2));
    return g > 10.0 ? 10.0 : (g < -10.0 ? -10.0 : g);
  }
  case GM_QUICK_GELU: return x * sigmoid_d(1.702 * x);
  case GM_GELU_MEGATRON: return x * 0.5 * (1.0 + tanh(inner_d(v, x)));
  default: return 0.5 * x * (1.0 + tanh(inner_d(v, x)));
  }
}

static double deriv_d(gm_gelu_variant v, double x) {
  gelu_family fam = gelu_family_of(v);
  if (fam == GELU_FAM_ERF) {
    if (v == GM_GELU_10 && fwd_d(v, x) != fwd_d(GM_GELU_ERF, x)) return 0.0;
    const double kAlpha = v == GM_GELU_PYTHON ? 1.0 / sqrt(2.0) : M_SQRT1_2;
    const double kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5;
    double cdf = 0.5 * (1.0 + erf(x * kAlpha));
    double pdf = kBeta * exp(-0.5 * x * x);
    return cdf + x * pdf;
  }
  if (fam == GELU_FAM_SIGMOID) {
    double s = sigmoid_d(1.702 * x);
    return s + x * 1.702 * s * (1.0 - s);
  }
  double t = tanh(inner_d(v, x));
  if (v == GM_GELU_MEGATRON) return 0.5 * x * ((1.0 - t * t) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1.0 + t);
  double a;
  switch (v) {
  case GM_GELU_FAST: a = 0.7978845608; break;
  case GM_GELU_PYTORCH_TANH: a = M_SQRT2 * M_2_SQRTPI * 0.5; break;
  case GM_OPENAI_GELU: a = 0.7978845608028654; break;
  default: a = sqrt(2 / M_PI); break;
  }
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (a * (1.0 + 3.0 * 0.044715 * x * x));
}

// ---- kernels ------------------------------------------------------------------------------
// x, y: n elements of dt; f16/bf16 widen to f32 exactly and round once at the end.
int gm_gelu_fused_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  if (dt == GM_F64) {
    const double *xi = x; double *yo = y;
#pragma omp parallel for schedule(static) num_threads(gelu_threads_for(n, threads))
    for (size_t i = 0; i < n; i++) yo[i] = fwd_d(v, xi[i]);
    return 0;
  }
#pragma omp parallel for schedule(static) num_threads(gelu_threads_for(n, threads))
  for (size_t i = 0; i < n; i++) gm_store_f64(dt, y, i, fwd_f(v, (float)gm_load_f64(dt, x, i)));
  return 0;
}

int gm_gelu_fused_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads) {
  if (dt == GM_F64) {
    const double *xi = x, *g = dy; double *o = dx;
#pragma omp parallel for schedule(static) num_threads(gelu_threads_for(n, threads))
    for (size_t i = 0; i < n; i++) o[i] = g[i] * deriv_d(v, xi[i]);
    return 0;
  }
#pragma omp parallel for schedule(static) num_threads(gelu_threads_for(n, threads))
  for (size_t i = 0; i < n; i++) {
    float xf = (float)gm_load_f64(dt, x, i), g = (float)gm_load_f64(dt, dy, i);
    gm_store_f64(dt, dx, i, g * deriv_f(v, xf));
  }
  return 0;
}
