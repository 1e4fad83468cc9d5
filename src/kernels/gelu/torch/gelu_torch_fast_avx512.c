// AVX-512 stages of the torch-cpu fast path (contract and stage shapes in gelu_torch_fast.h): each
// lane computes exactly what gelu_torch_fast_scalar.c computes for its element: the graph's ops in
// f32, same order and operand order, rounded to the dtype after every op (f16 through
// vcvtps2ph/vcvtph2ps with RNE, which are gm_f32_to_f16's bits; bf16 by RNE on the bit pattern in
// integer lanes, NaN made quiet as gm_f32_to_bf16); post stages round the transcendental's f32
// results (in0, in1) as they load them. Stages step 32 elements at a time as two 16-lane vectors
// (vec32) whose ops alternate, so that the two dependency chains overlap (a bf16 rounding is a
// chain of several integer steps). Each stage body is compiled once per dtype (dt is a constant in
// its three call sites), so no lane op tests the dtype. The last partial step runs masked
// (inactive lanes compute on zeros and are not stored). Each backward form is one step function
// (x, dy and the transcendental results in, 32 results out) run by two drivers: the post stage
// over f32 arrays, and gm_gelu_fast_bwd16_saved_avx512, one pass over the 16-bit x and dy with the
// transcendental results gathered from a table by x's pattern.
#include <immintrin.h>

#include "kernels/gelu/torch/gelu_torch_fast.h"

// v rounded to the dtype's grid, back in f32 lanes.
static inline __m512 round16(gm_dtype dt, __m512 v) {
  if (dt == GM_F16)
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (dt == GM_BF16) {
    __m512i u = _mm512_castps_si512(v);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
  }
  return v;
}

// Active lanes of the 16 elements from i in an array of n (none when i >= n).
static __mmask16 lanes(size_t i, size_t n) {
  if (i >= n) return 0;
  return n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
}

// Elements i .. i+31 as two vectors.
typedef struct {
  __m512 lo, hi;
} vec32;

static inline vec32 splat(float f) { return (vec32){_mm512_set1_ps(f), _mm512_set1_ps(f)}; }
static inline vec32 v_zero(void) { return (vec32){_mm512_setzero_ps(), _mm512_setzero_ps()}; }
static inline vec32 load(const float *p, size_t i, size_t n) {
  return (vec32){_mm512_maskz_loadu_ps(lanes(i, n), p + i), _mm512_maskz_loadu_ps(lanes(i + 16, n), p + i + 16)};
}
// Full steps store unmasked (masked stores are slower on Zen 4).
static inline void store(float *p, size_t i, size_t n, vec32 v) {
  if (n - i >= 32) {
    _mm512_storeu_ps(p + i, v.lo);
    _mm512_storeu_ps(p + i + 16, v.hi);
    return;
  }
  _mm512_mask_storeu_ps(p + i, lanes(i, n), v.lo);
  _mm512_mask_storeu_ps(p + i + 16, lanes(i + 16, n), v.hi);
}
static inline vec32 round_dt(gm_dtype dt, vec32 v) { return (vec32){round16(dt, v.lo), round16(dt, v.hi)}; }
static inline vec32 v_mul(vec32 a, vec32 b) { return (vec32){_mm512_mul_ps(a.lo, b.lo), _mm512_mul_ps(a.hi, b.hi)}; }
static inline vec32 v_add(vec32 a, vec32 b) { return (vec32){_mm512_add_ps(a.lo, b.lo), _mm512_add_ps(a.hi, b.hi)}; }
static inline vec32 v_sub(vec32 a, vec32 b) { return (vec32){_mm512_sub_ps(a.lo, b.lo), _mm512_sub_ps(a.hi, b.hi)}; }
static inline vec32 v_div(vec32 a, vec32 b) { return (vec32){_mm512_div_ps(a.lo, b.lo), _mm512_div_ps(a.hi, b.hi)}; }
static inline vec32 v_neg(vec32 a) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  return (vec32){_mm512_xor_ps(a.lo, sign), _mm512_xor_ps(a.hi, sign)};
}
// fma(a, b, c) with one rounding (vfmadd).
static inline vec32 v_fma(vec32 a, vec32 b, vec32 c) {
  return (vec32){_mm512_fmadd_ps(a.lo, b.lo, c.lo), _mm512_fmadd_ps(a.hi, b.hi, c.hi)};
}
static inline vec32 mul_r(gm_dtype dt, vec32 a, vec32 b) { return round_dt(dt, v_mul(a, b)); }
static inline vec32 add_r(gm_dtype dt, vec32 a, vec32 b) { return round_dt(dt, v_add(a, b)); }

static const float kHalf = 0.5f;
static const float kKappa = (float)0.044715;
static const float kSqrt2OverPi = (float)0.7978845608028654;
static const float kSqrt2 = (float)1.4142135623730951;
static const float kTwoOverSqrtPi = (float)1.1283791670955126;
static const float kQuick = (float)1.702;
static const float kMegatronSq = (float)0.1070322243;

// torch.pow(x, 3): x*x*x rounded once; bf16 rounds after each multiply.
static inline vec32 pow3(gm_dtype dt, vec32 x) {
  vec32 sq = v_mul(x, x);
  if (dt == GM_BF16) sq = round_dt(dt, sq);
  return mul_r(dt, sq, x);
}

// aten::tanh_backward(g, t) = g * fma(-t, t, 1), rounded once.
static inline vec32 tanh_backward(gm_dtype dt, vec32 g, vec32 t) {
  return mul_r(dt, g, v_fma(v_neg(t), t, splat(1.0f)));
}

// ---- gelu_new / gelu_accurate ------------------------------------------------------------------

static inline __attribute__((always_inline)) void pow_arg_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in0, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) {
    vec32 xv = load(x, i, n);
    vec32 q = mul_r(dt, pow3(dt, xv), splat(kKappa));
    vec32 b = add_r(dt, xv, q);
    store(out0, i, n, mul_r(dt, b, splat(kSqrt2OverPi)));
  }
}

static void pow_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                    const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: pow_arg_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: pow_arg_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: pow_arg_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

// y = (x*0.5)*(t + 1), t the transcendental's result: the pow form's and gelu_python's forward.
static inline __attribute__((always_inline)) void half_x_one_plus_fwd_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) {
    vec32 a = mul_r(dt, load(x, i, n), splat(kHalf));
    vec32 d = add_r(dt, round_dt(dt, load(in0, i, n)), splat(1.0f));
    store(out0, i, n, mul_r(dt, a, d));
  }
}

static void half_x_one_plus_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                                const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: half_x_one_plus_fwd_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: half_x_one_plus_fwd_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: half_x_one_plus_fwd_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

// One step of 32 backward results from x, dy and the tanh result rounded to the dtype (in1 unused).
static inline __attribute__((always_inline)) vec32 pow_bwd_step(gm_dtype dt, const gelu_fast_params *p, vec32 xv,
                                                                 vec32 g, vec32 in0, vec32 in1) {
  (void)p, (void)in1;
  vec32 t = in0;
  vec32 a = mul_r(dt, xv, splat(kHalf));
  vec32 d = add_r(dt, t, splat(1.0f));
  vec32 ga = mul_r(dt, g, d);
  vec32 gd = mul_r(dt, g, a);
  vec32 gu = tanh_backward(dt, gd, t);
  vec32 gb = mul_r(dt, gu, splat(kSqrt2OverPi));
  vec32 gp = mul_r(dt, gb, splat(kKappa));
  vec32 w = mul_r(dt, mul_r(dt, xv, xv), splat(3.0f));
  vec32 g2 = mul_r(dt, gp, w);
  vec32 g3 = mul_r(dt, ga, splat(kHalf));
  return v_add(add_r(dt, gb, g2), g3);
}

// ---- product form (gelu_fast, openai_gelu, gelu_megatron) --------------------------------------

static inline vec32 product_input(gm_dtype dt, const gelu_fast_params *p, vec32 x) {
  return p->zero_add ? add_r(dt, v_zero(), x) : x;
}

static inline __attribute__((always_inline)) void product_arg_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in0, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) {
    vec32 xx = product_input(dt, p, load(x, i, n));
    vec32 m = mul_r(dt, xx, splat(p->c));
    vec32 k1 = mul_r(dt, xx, splat(kKappa));
    vec32 e = add_r(dt, mul_r(dt, k1, xx), splat(1.0f));
    store(out0, i, n, mul_r(dt, m, e));
  }
}

static void product_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                        const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: product_arg_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: product_arg_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: product_arg_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

static inline __attribute__((always_inline)) void product_fwd_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) {
    vec32 a = mul_r(dt, product_input(dt, p, load(x, i, n)), splat(kHalf));
    vec32 d = add_r(dt, round_dt(dt, load(in0, i, n)), splat(1.0f));
    store(out0, i, n, mul_r(dt, a, d));
  }
}

static void product_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                        const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: product_fwd_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: product_fwd_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: product_fwd_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

static inline __attribute__((always_inline)) vec32 product_bwd_step(gm_dtype dt, const gelu_fast_params *p,
                                                                     vec32 xv, vec32 g, vec32 in0, vec32 in1) {
  (void)in1;
  vec32 t = in0;
  vec32 a = mul_r(dt, xv, splat(kHalf));
  vec32 m = mul_r(dt, xv, splat(p->c));
  vec32 k1 = mul_r(dt, xv, splat(kKappa));
  vec32 e = add_r(dt, mul_r(dt, k1, xv), splat(1.0f));
  vec32 d = add_r(dt, t, splat(1.0f));
  vec32 ga = mul_r(dt, g, d);
  vec32 gd = mul_r(dt, g, a);
  vec32 gf = tanh_backward(dt, gd, t);
  vec32 gm = mul_r(dt, gf, e);
  vec32 ge = mul_r(dt, gf, m);
  vec32 gk1 = mul_r(dt, ge, xv);
  vec32 dx = mul_r(dt, ge, k1);
  dx = add_r(dt, dx, mul_r(dt, gk1, splat(kKappa)));
  dx = add_r(dt, dx, mul_r(dt, gm, splat(p->c)));
  return v_add(dx, mul_r(dt, ga, splat(kHalf)));
}

static inline __attribute__((always_inline)) vec32 megatron_bwd_step(gm_dtype dt, const gelu_fast_params *p,
                                                                      vec32 xv, vec32 g, vec32 in0, vec32 in1) {
  (void)in1;
  vec32 xx = product_input(dt, p, xv), t = in0;
  vec32 h = mul_r(dt, xx, splat(kHalf));
  vec32 q = round_dt(dt, v_sub(splat(1.0f), mul_r(dt, t, t)));
  vec32 r2 = mul_r(dt, mul_r(dt, xx, splat(kMegatronSq)), xx);
  vec32 u = add_r(dt, r2, splat(p->megatron_addend));
  vec32 hw = mul_r(dt, h, mul_r(dt, q, u));
  vec32 m1 = mul_r(dt, add_r(dt, t, splat(1.0f)), splat(kHalf));
  m1 = add_r(dt, hw, m1);
  return v_mul(m1, g);
}

// ---- gelu_python ---------------------------------------------------------------------------------

static inline __attribute__((always_inline)) void python_arg_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in0, (void)in1;
  for (size_t i = 0; i < n; i += 32) {
    vec32 v = round_dt(dt, v_div(load(x, i, n), splat(kSqrt2)));
    store(out0, i, n, v);
    if (out1) store(out1, i, n, v_neg(mul_r(dt, v, v)));
  }
}

static void python_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                       const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: python_arg_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: python_arg_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: python_arg_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

// in0: the erf result, in1: the exp result, rounded to the dtype.
static inline __attribute__((always_inline)) vec32 python_bwd_step(gm_dtype dt, const gelu_fast_params *p,
                                                                    vec32 xv, vec32 g, vec32 in0, vec32 in1) {
  (void)p;
  vec32 a = mul_r(dt, xv, splat(kHalf));
  vec32 d = add_r(dt, in0, splat(1.0f));
  vec32 ga = mul_r(dt, g, d);
  vec32 gd = mul_r(dt, g, a);
  vec32 e = mul_r(dt, in1, splat(kTwoOverSqrtPi));
  vec32 gv = mul_r(dt, e, gd);
  vec32 dx = round_dt(dt, v_div(gv, splat(kSqrt2)));
  return v_add(dx, mul_r(dt, ga, splat(kHalf)));
}

// ---- quick_gelu ------------------------------------------------------------------------------------

static inline __attribute__((always_inline)) void quick_arg_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in0, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) store(out0, i, n, mul_r(dt, load(x, i, n), splat(kQuick)));
}

static void quick_arg(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                      const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: quick_arg_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: quick_arg_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: quick_arg_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

static inline __attribute__((always_inline)) void quick_fwd_body(
    gm_dtype dt, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
    const float *in1, float *out0, float *out1, size_t n) {
  (void)p, (void)dy, (void)in1, (void)out1;
  for (size_t i = 0; i < n; i += 32) store(out0, i, n, mul_r(dt, load(x, i, n), round_dt(dt, load(in0, i, n))));
}

static void quick_fwd(const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                      const float *in1, float *out0, float *out1, size_t n) {
  switch (p->dt) {
  case GM_F16: quick_fwd_body(GM_F16, p, x, dy, in0, in1, out0, out1, n); break;
  case GM_BF16: quick_fwd_body(GM_BF16, p, x, dy, in0, in1, out0, out1, n); break;
  default: quick_fwd_body(GM_F32, p, x, dy, in0, in1, out0, out1, n); break;
  }
}

// in0: the sigmoid result rounded to the dtype.
static inline __attribute__((always_inline)) vec32 quick_bwd_step(gm_dtype dt, const gelu_fast_params *p, vec32 xv,
                                                                   vec32 g, vec32 in0, vec32 in1) {
  (void)p, (void)in1;
  const vec32 one = splat(1.0f);
  vec32 s = in0;
  vec32 dx = mul_r(dt, g, s);
  vec32 gs = mul_r(dt, g, xv);
  vec32 ga;
  if (dt == GM_F16) ga = mul_r(dt, mul_r(dt, gs, round_dt(dt, v_sub(one, s))), s);
  else ga = round_dt(dt, v_mul(v_mul(gs, v_sub(one, s)), s));
  return v_add(dx, mul_r(dt, ga, splat(kQuick)));
}

// ---- backward drivers ------------------------------------------------------------------------------

// The backward step of form f (a compile-time constant at every call site). Every step returns its
// last op's f32 result unrounded: the driver rounds it to the dtype once, as it stores it (f16:
// the narrowing vcvtps2ph is that rounding, so the value is not rounded twice).
static inline __attribute__((always_inline)) vec32 bwd_step(gelu_fast_form f, gm_dtype dt, const gelu_fast_params *p,
                                                            vec32 xv, vec32 g, vec32 in0, vec32 in1) {
  switch (f) {
  case GELU_FAST_POW: return pow_bwd_step(dt, p, xv, g, in0, in1);
  case GELU_FAST_PRODUCT: return product_bwd_step(dt, p, xv, g, in0, in1);
  case GELU_FAST_MEGATRON: return megatron_bwd_step(dt, p, xv, g, in0, in1);
  case GELU_FAST_PYTHON: return python_bwd_step(dt, p, xv, g, in0, in1);
  default: return quick_bwd_step(dt, p, xv, g, in0, in1);
  }
}

static inline __attribute__((always_inline)) void bwd_arrays_body(gelu_fast_form f, gm_dtype dt,
                                                                  const gelu_fast_params *p, const float *x,
                                                                  const float *dy, const float *in0,
                                                                  const float *in1, float *out0, size_t n) {
  for (size_t i = 0; i < n; i += 32)
    store(out0, i, n,
          round_dt(dt, bwd_step(f, dt, p, load(x, i, n), load(dy, i, n), round_dt(dt, load(in0, i, n)),
                                f == GELU_FAST_PYTHON ? round_dt(dt, load(in1, i, n)) : v_zero())));
}

static inline __attribute__((always_inline)) void bwd_arrays(gelu_fast_form f, const gelu_fast_params *p,
                                                             const float *x, const float *dy, const float *in0,
                                                             const float *in1, float *out0, size_t n) {
  switch (p->dt) {
  case GM_F16: bwd_arrays_body(f, GM_F16, p, x, dy, in0, in1, out0, n); break;
  case GM_BF16: bwd_arrays_body(f, GM_BF16, p, x, dy, in0, in1, out0, n); break;
  default: bwd_arrays_body(f, GM_F32, p, x, dy, in0, in1, out0, n); break;
  }
}

static void bwd(gelu_fast_form f, const gelu_fast_params *p, const float *x, const float *dy, const float *in0,
                const float *in1, float *out, size_t n) {
  switch (f) {
  case GELU_FAST_POW: bwd_arrays(GELU_FAST_POW, p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_PRODUCT: bwd_arrays(GELU_FAST_PRODUCT, p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_MEGATRON: bwd_arrays(GELU_FAST_MEGATRON, p, x, dy, in0, in1, out, n); break;
  case GELU_FAST_PYTHON: bwd_arrays(GELU_FAST_PYTHON, p, x, dy, in0, in1, out, n); break;
  default: bwd_arrays(GELU_FAST_QUICK, p, x, dy, in0, in1, out, n); break;
  }
}

// 16 f16/bf16 patterns widened to f32 (exact); and f32 values on the dtype's grid narrowed back
// (f16 conversion is exact there, bf16 keeps the top half).
static inline __m512 widen16(gm_dtype dt, __m256i h) {
  if (dt == GM_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __m256i narrow16(gm_dtype dt, __m512 v) {
  if (dt == GM_F16) return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
}

// Any f32 values rounded to the dtype (RNE, as round16) and narrowed: f16 in one vcvtps2ph.
static inline __m256i round_narrow16(gm_dtype dt, __m512 v) {
  return narrow16(dt, dt == GM_F16 ? v : round16(dt, v));
}

// The 32 patterns from i of an array of n, widened, as two vectors.
static inline vec32 load16(gm_dtype dt, const uint16_t *p, size_t i, size_t n) {
  return (vec32){widen16(dt, _mm256_maskz_loadu_epi16(lanes(i, n), p + i)),
                 widen16(dt, _mm256_maskz_loadu_epi16(lanes(i + 16, n), p + i + 16))};
}

// v rounded to the dtype and stored as 32 patterns from i.
static inline void round_store16(gm_dtype dt, uint16_t *p, size_t i, size_t n, vec32 v) {
  if (n - i >= 32) {
    _mm256_storeu_si256((__m256i *)(p + i), round_narrow16(dt, v.lo));
    _mm256_storeu_si256((__m256i *)(p + i + 16), round_narrow16(dt, v.hi));
    return;
  }
  _mm256_mask_storeu_epi16(p + i, lanes(i, n), round_narrow16(dt, v.lo));
  _mm256_mask_storeu_epi16(p + i + 16, lanes(i + 16, n), round_narrow16(dt, v.hi));
}

// table[the pattern] for the 32 patterns from i (inactive lanes read nothing and give 0).
static inline vec32 gather16(const float *table, const uint16_t *p, size_t i, size_t n) {
  __mmask16 k0 = lanes(i, n), k1 = lanes(i + 16, n);
  __m512i i0 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k0, p + i));
  __m512i i1 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k1, p + i + 16));
  return (vec32){_mm512_mask_i32gather_ps(_mm512_setzero_ps(), k0, i0, table, 4),
                 _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k1, i1, table, 4)};
}

static inline __attribute__((always_inline)) void bwd16_saved_body(gelu_fast_form f, gm_dtype dt,
                                                                   const gelu_fast_params *p, const float *saved,
                                                                   const uint16_t *x, const uint16_t *dy,
                                                                   uint16_t *dx, size_t n) {
  for (size_t i = 0; i < n; i += 32) {
    vec32 in1 = f == GELU_FAST_PYTHON ? gather16(saved + 65536, x, i, n) : v_zero();
    round_store16(dt, dx, i, n,
                  bwd_step(f, dt, p, load16(dt, x, i, n), load16(dt, dy, i, n), gather16(saved, x, i, n), in1));
  }
}

static inline __attribute__((always_inline)) void bwd16_saved_form(gelu_fast_form f, const gelu_fast_params *p,
                                                                   const float *saved, const uint16_t *x,
                                                                   const uint16_t *dy, uint16_t *dx, size_t n) {
  if (p->dt == GM_F16) bwd16_saved_body(f, GM_F16, p, saved, x, dy, dx, n);
  else bwd16_saved_body(f, GM_BF16, p, saved, x, dy, dx, n);
}

void gm_gelu_fast_bwd16_saved_avx512(gelu_fast_form f, const gelu_fast_params *p, const float *saved, const uint16_t *x,
                                  const uint16_t *dy, uint16_t *dx, size_t n) {
  switch (f) {
  case GELU_FAST_POW: bwd16_saved_form(GELU_FAST_POW, p, saved, x, dy, dx, n); break;
  case GELU_FAST_PRODUCT: bwd16_saved_form(GELU_FAST_PRODUCT, p, saved, x, dy, dx, n); break;
  case GELU_FAST_MEGATRON: bwd16_saved_form(GELU_FAST_MEGATRON, p, saved, x, dy, dx, n); break;
  case GELU_FAST_PYTHON: bwd16_saved_form(GELU_FAST_PYTHON, p, saved, x, dy, dx, n); break;
  default: bwd16_saved_form(GELU_FAST_QUICK, p, saved, x, dy, dx, n); break;
  }
}

// ---- storage -----------------------------------------------------------------------------------------

static void widen(gm_dtype dt, const void *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = lanes(i, n);
    __m512 v;
    if (dt == GM_F32) {
      v = _mm512_maskz_loadu_ps(k, (const float *)src + i);
    } else {
      v = widen16(dt, _mm256_maskz_loadu_epi16(k, (const uint16_t *)src + i));
    }
    if (k == 0xffff) _mm512_storeu_ps(dst + i, v);
    else _mm512_mask_storeu_ps(dst + i, k, v);
  }
}

// The values are on the dtype's grid (narrow16).
static void narrow(gm_dtype dt, const float *src, void *dst, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = lanes(i, n);
    __m512 v = _mm512_maskz_loadu_ps(k, src + i);
    if (dt == GM_F32) {
      if (k == 0xffff) _mm512_storeu_ps((float *)dst + i, v);
      else _mm512_mask_storeu_ps((float *)dst + i, k, v);
      continue;
    }
    __m256i h = narrow16(dt, v);
    if (k == 0xffff) _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i), h);
    else _mm256_mask_storeu_epi16((uint16_t *)dst + i, k, h);
  }
}

const gelu_fast_kernels gm_gelu_fast_avx512_kernels = {
    .pow_arg = pow_arg, .product_arg = product_arg, .python_arg = python_arg, .quick_arg = quick_arg,
    .half_x_one_plus_fwd = half_x_one_plus_fwd, .product_fwd = product_fwd, .quick_fwd = quick_fwd,
    .bwd = bwd,
    .widen = widen, .narrow = narrow,
};
