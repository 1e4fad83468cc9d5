// Scalar stages of the torch-cpu fast path (contract and stage shapes in gelu_torch_fast.h): each
// element runs the graph's ops (gelu_ops_graph.c) in f32, in the graph's order and operand order,
// rounded to the dtype after every op (gm_gelu_fast_round); post stages round the transcendental's
// f32 results (in0, in1) to the dtype as they read them. Factors and divisors are the Python
// literals read as f32; addends of 1 are exact in every dtype. gelu_torch_fast_avx512.c computes the same per lane.
#include <math.h>

#include "kernels/gelu/torch/gelu_torch_fast.h"

static const float kHalf = 0.5f;
static const float kKappa = (float)0.044715;
static const float kSqrt2OverPi = (float)0.7978845608028654; // gelu_new's math.sqrt(2 / pi)
static const float kSqrt2 = (float)1.4142135623730951;       // gelu_python's math.sqrt(2.0)
static const float kTwoOverSqrtPi = (float)1.1283791670955126; // erf's backward
static const float kQuick = (float)1.702;
static const float kMegatronSq = (float)0.1070322243;

float gm_gelu_fast_round(gm_dtype dt, float f) {
  if (dt == GM_F16) return gm_f16_to_f32(gm_f32_to_f16(f));
  if (dt == GM_BF16) return gm_bf16_to_f32(gm_f32_to_bf16(f));
  return f;
}

// torch.pow(x, 3): f32/f16 x*x*x rounded once; bf16 rounds after each multiply.
static float pow3(gm_dtype dt, float x) {
  float sq = x * x;
  if (dt == GM_BF16) sq = gm_gelu_fast_round(dt, sq);
  return gm_gelu_fast_round(dt, sq * x);
}

// aten::tanh_backward(g, t) = g * fma(-t, t, 1), rounded once.
static float tanh_backward(gm_dtype dt, float g, float t) {
  return gm_gelu_fast_round(dt, g * fmaf(-t, t, 1.0f));
}

// ---- gelu_new / gelu_accurate: 0.5*x*(1 + tanh(c*(x + k*pow(x, 3)))) ---------------------------

static void pow_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                    const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in0, (void)in1, (void)out1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float q = gm_gelu_fast_round(dt, pow3(dt, x[i]) * kKappa);
    float b = gm_gelu_fast_round(dt, x[i] + q);
    out0[i] = gm_gelu_fast_round(dt, b * kSqrt2OverPi);
  }
}

// y = (x*0.5)*(t + 1), t the transcendental's result: the pow form's and gelu_python's forward.
static void half_x_one_plus_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                                const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in1, (void)out1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float a = gm_gelu_fast_round(dt, x[i] * kHalf);
    float d = gm_gelu_fast_round(dt, gm_gelu_fast_round(dt, in0[i]) + 1.0f);
    out0[i] = gm_gelu_fast_round(dt, a * d);
  }
}

// Autograd of the pow form: x's gradient arrives from b = x + q, then pow, then a = 0.5*x.
static void pow_bwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                    const float *in1, float *out0, size_t n) {
  (void)in1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float t = gm_gelu_fast_round(dt, in0[i]);
    float a = gm_gelu_fast_round(dt, x[i] * kHalf);
    float d = gm_gelu_fast_round(dt, t + 1.0f);
    float ga = gm_gelu_fast_round(dt, dy[i] * d);
    float gd = gm_gelu_fast_round(dt, dy[i] * a);
    float gu = tanh_backward(dt, gd, t);
    float gb = gm_gelu_fast_round(dt, gu * kSqrt2OverPi);
    float gp = gm_gelu_fast_round(dt, gb * kKappa);
    float w = gm_gelu_fast_round(dt, x[i] * x[i]);
    w = gm_gelu_fast_round(dt, w * 3.0f);
    float g2 = gm_gelu_fast_round(dt, gp * w);
    float g3 = gm_gelu_fast_round(dt, ga * kHalf);
    float dx = gm_gelu_fast_round(dt, gb + g2);
    out0[i] = gm_gelu_fast_round(dt, dx + g3);
  }
}

// ---- product form: 0.5*x*(1 + tanh(c*x*(1 + k*x*x))); gelu_megatron first adds a zero bias ----

static float product_input(const gelu_fast_params *p, float x) {
  return p->zero_add ? gm_gelu_fast_round(p->dt, 0.0f + x) : x;
}

static void product_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                        const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in0, (void)in1, (void)out1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float xx = product_input(p, x[i]);
    float m = gm_gelu_fast_round(dt, xx * p->c);
    float k1 = gm_gelu_fast_round(dt, xx * kKappa);
    float k2 = gm_gelu_fast_round(dt, k1 * xx);
    float e = gm_gelu_fast_round(dt, k2 + 1.0f);
    out0[i] = gm_gelu_fast_round(dt, m * e);
  }
}

static void product_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                        const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in1, (void)out1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float xx = product_input(p, x[i]);
    float a = gm_gelu_fast_round(dt, xx * kHalf);
    float d = gm_gelu_fast_round(dt, gm_gelu_fast_round(dt, in0[i]) + 1.0f);
    out0[i] = gm_gelu_fast_round(dt, a * d);
  }
}

// Autograd of the product form (gelu_fast, openai_gelu); not used for gelu_megatron.
static void product_bwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                        const float *in1, float *out0, size_t n) {
  (void)in1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float xi = x[i], t = gm_gelu_fast_round(dt, in0[i]);
    float a = gm_gelu_fast_round(dt, xi * kHalf);
    float m = gm_gelu_fast_round(dt, xi * p->c);
    float k1 = gm_gelu_fast_round(dt, xi * kKappa);
    float k2 = gm_gelu_fast_round(dt, k1 * xi);
    float e = gm_gelu_fast_round(dt, k2 + 1.0f);
    float d = gm_gelu_fast_round(dt, t + 1.0f);
    float ga = gm_gelu_fast_round(dt, dy[i] * d);
    float gd = gm_gelu_fast_round(dt, dy[i] * a);
    float gf = tanh_backward(dt, gd, t);
    float gm = gm_gelu_fast_round(dt, gf * e);
    float ge = gm_gelu_fast_round(dt, gf * m);
    float gk1 = gm_gelu_fast_round(dt, ge * xi);
    float dx = gm_gelu_fast_round(dt, ge * k1);
    dx = gm_gelu_fast_round(dt, dx + gm_gelu_fast_round(dt, gk1 * kKappa));
    dx = gm_gelu_fast_round(dt, dx + gm_gelu_fast_round(dt, gm * p->c));
    out0[i] = gm_gelu_fast_round(dt, dx + gm_gelu_fast_round(dt, ga * kHalf));
  }
}

// Megatron's bias_gelu_back, bias 0: ff = 0.5x((1-t*t)(c + 0.1070322243x*x)) + 0.5(1+t); dx = ff*g.
static void megatron_bwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                         const float *in1, float *out0, size_t n) {
  (void)in1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float xx = product_input(p, x[i]), t = gm_gelu_fast_round(dt, in0[i]);
    float h = gm_gelu_fast_round(dt, xx * kHalf);
    float tt = gm_gelu_fast_round(dt, t * t);
    float q = gm_gelu_fast_round(dt, 1.0f - tt);
    float r1 = gm_gelu_fast_round(dt, xx * kMegatronSq);
    float r2 = gm_gelu_fast_round(dt, r1 * xx);
    float u = gm_gelu_fast_round(dt, r2 + p->megatron_addend);
    float w = gm_gelu_fast_round(dt, q * u);
    float hw = gm_gelu_fast_round(dt, h * w);
    float m1 = gm_gelu_fast_round(dt, t + 1.0f);
    m1 = gm_gelu_fast_round(dt, m1 * kHalf);
    m1 = gm_gelu_fast_round(dt, hw + m1);
    out0[i] = gm_gelu_fast_round(dt, m1 * dy[i]);
  }
}

// ---- gelu_python: x*0.5*(1 + erf(x/sqrt(2))) ---------------------------------------------------

// out0 = v = x/sqrt(2); out1 (backward only) = -(v*v), exp's argument in erf's backward.
static void python_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                       const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in0, (void)in1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float v = gm_gelu_fast_round(dt, x[i] / kSqrt2);
    out0[i] = v;
    if (out1) out1[i] = -gm_gelu_fast_round(dt, v * v);
  }
}

// in0 = erf(v), in1 = exp(-(v*v)).
static void python_bwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                       const float *in1, float *out0, size_t n) {
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float a = gm_gelu_fast_round(dt, x[i] * kHalf);
    float d = gm_gelu_fast_round(dt, gm_gelu_fast_round(dt, in0[i]) + 1.0f);
    float ga = gm_gelu_fast_round(dt, dy[i] * d);
    float gd = gm_gelu_fast_round(dt, dy[i] * a);
    float e = gm_gelu_fast_round(dt, gm_gelu_fast_round(dt, in1[i]) * kTwoOverSqrtPi);
    float gv = gm_gelu_fast_round(dt, e * gd);
    float dx = gm_gelu_fast_round(dt, gv / kSqrt2);
    out0[i] = gm_gelu_fast_round(dt, dx + gm_gelu_fast_round(dt, ga * kHalf));
  }
}

// ---- quick_gelu: x*sigmoid(1.702*x) -------------------------------------------------------------

static void quick_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                      const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in0, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i++) out0[i] = gm_gelu_fast_round(p->dt, x[i] * kQuick);
}

static void quick_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                      const float *in1, float *out0, float *out1, size_t n) {
  (void)dy, (void)in1, (void)out1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) out0[i] = gm_gelu_fast_round(dt, x[i] * gm_gelu_fast_round(dt, in0[i]));
}

// sigmoid_backward(g, s) = (g*(1-s))*s rounded once; f16 rounds each of the three ops.
static void quick_bwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                      const float *in1, float *out0, size_t n) {
  (void)in1;
  gm_dtype dt = p->dt;
  for (size_t i = 0; i < n; i++) {
    float s = gm_gelu_fast_round(dt, in0[i]);
    float dx = gm_gelu_fast_round(dt, dy[i] * s);
    float gs = gm_gelu_fast_round(dt, dy[i] * x[i]);
    float ga;
    if (dt == GM_F16) {
      float one_minus = gm_gelu_fast_round(dt, 1.0f - s);
      ga = gm_gelu_fast_round(dt, gm_gelu_fast_round(dt, gs * one_minus) * s);
    } else {
      ga = gm_gelu_fast_round(dt, (gs * (1.0f - s)) * s);
    }
    out0[i] = gm_gelu_fast_round(dt, dx + gm_gelu_fast_round(dt, ga * kQuick));
  }
}

// ---- storage --------------------------------------------------------------------------------------

static void widen(gm_dtype dt, const void *src, float *dst, size_t n) {
  if (dt == GM_F32) {
    for (size_t i = 0; i < n; i++) dst[i] = ((const float *)src)[i];
    return;
  }
  const uint16_t *s = src;
  for (size_t i = 0; i < n; i++) dst[i] = dt == GM_F16 ? gm_f16_to_f32(s[i]) : gm_bf16_to_f32(s[i]);
}

static void narrow(gm_dtype dt, const float *src, void *dst, size_t n) {
  if (dt == GM_F32) {
    for (size_t i = 0; i < n; i++) ((float *)dst)[i] = src[i];
    return;
  }
  uint16_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = dt == GM_F16 ? gm_f32_to_f16(src[i]) : gm_f32_to_bf16(src[i]);
}

static void bwd(gelu_fast_form f, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                const float *in1, float *out, size_t n) {
  switch (f) {
  case GELU_FAST_POW: pow_bwd(p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_PRODUCT: product_bwd(p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_MEGATRON: megatron_bwd(p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_PYTHON: python_bwd(p, x, dy, in0, in1, out, n); break;
  default: quick_bwd(p, x, dy, in0, in1, out, n); break;
  }
}

const gelu_fast_kernels gm_gelu_fast_scalar_kernels = {
    .pow_arg = pow_arg, .product_arg = product_arg, .python_arg = python_arg, .quick_arg = quick_arg,
    .half_x_one_plus_fwd = half_x_one_plus_fwd, .product_fwd = product_fwd, .quick_fwd = quick_fwd,
    .bwd = bwd,
    .widen = widen, .narrow = narrow,
};
