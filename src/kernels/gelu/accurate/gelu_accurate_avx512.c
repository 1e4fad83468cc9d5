// Accurate mode, AVX-512 kernel: gm_gelu_acc_kernel_scalar (gelu_accurate.c) eight f64 lanes at a
// time, the same operations in the same order, so the bits are the scalar kernel's. x, dy: n f32;
// result rounded once to f32 (of) or kept in f64 (od).
#include "kernels/gelu/gelu_math.h"

#include <immintrin.h>

static inline __attribute__((always_inline)) __m512d exp_core8(__m512d a) {
  __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(a, _mm512_set1_pd(1.4426950408889634)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(0x1.62e42fefa39efp-1), a);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(0x1.abc9e3b39803fp-56), r);
  __m512d q = _mm512_set1_pd(1.0 / 39916800);
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 3628800));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 362880));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 40320));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 5040));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 720));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 120));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 24));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
  __m512i bits = _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtpd_epi64(n), _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(q, _mm512_castsi512_pd(bits));
}

// row[i] for each lane's i in [0, 32).
static inline __attribute__((always_inline)) __m512d lookup32(const double *row, __m512i i, __mmask8 upper) {
  __m512d lo = _mm512_permutex2var_pd(_mm512_loadu_pd(row), i, _mm512_loadu_pd(row + 8));
  __m512d hi = _mm512_permutex2var_pd(_mm512_loadu_pd(row + 16), i, _mm512_loadu_pd(row + 24));
  return _mm512_mask_blend_pd(upper, lo, hi);
}

static inline __attribute__((always_inline)) __m512d one8(const gelu_acc_params *p, gelu_family fam, int deriv, __m512d x,
                                                           __m512d dy) {
  __mmask8 nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
  __mmask8 below = _mm512_cmp_pd_mask(x, _mm512_set1_pd(p->lo), _CMP_LT_OQ);
  __mmask8 above = _mm512_cmp_pd_mask(x, _mm512_set1_pd(p->hi), _CMP_GT_OQ);
  __mmask8 clip = p->clip10 ? _mm512_cmp_pd_mask(x, _mm512_set1_pd(10.0), _CMP_GT_OQ) : 0;
  // Keep the core finite: lanes outside it are replaced below.
  __m512d xc = _mm512_mask_blend_pd(nan | below | above, x, _mm512_setzero_pd());
  __m512d res;
  if (fam == GELU_FAM_ERF) {
    __m512d t = _mm512_mul_pd(_mm512_abs_pd(xc), _mm512_set1_pd(0.70710678118654752440));
    __m256i i = _mm512_cvttpd_epi32(_mm512_mul_pd(t, _mm512_set1_pd(2.0)));
    i = _mm256_min_epi32(i, _mm256_set1_epi32(GELU_ERFCX_NI - 1));
    __m512d c = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(i), _mm512_set1_pd(0.5)), _mm512_set1_pd(0.25));
    __m512d u = _mm512_sub_pd(t, c);
    // Table lookup of the 32-entry rows by two-source permutes (registers, no gathers).
    __m512i i64 = _mm512_cvtepi32_epi64(i);
    __mmask8 upper = _mm512_test_epi64_mask(i64, _mm512_set1_epi64(16));
    __m512d P = lookup32(gm_gelu_erfcx_table[GELU_ERFCX_DEG], i64, upper);
    for (int j = GELU_ERFCX_DEG - 1; j >= 0; j--) P = _mm512_fmadd_pd(P, u, lookup32(gm_gelu_erfcx_table[j], i64, upper));
    __m512d G = exp_core8(_mm512_mul_pd(_mm512_set1_pd(-0.5), _mm512_mul_pd(xc, xc)));
    __m512d Q = _mm512_mul_pd(_mm512_set1_pd(0.5), _mm512_mul_pd(G, P));
    __mmask8 negx = _mm512_cmp_pd_mask(xc, _mm512_setzero_pd(), _CMP_LT_OQ);
    __m512d Phi = _mm512_mask_blend_pd(negx, _mm512_sub_pd(_mm512_set1_pd(1.0), Q), Q);
    if (!deriv) res = _mm512_mul_pd(xc, Phi);
    else {
      __m512d d = _mm512_add_pd(Phi, _mm512_mul_pd(xc, _mm512_mul_pd(G, _mm512_set1_pd(0.39894228040143267794))));
      // Next to the root of f': its Taylor polynomial (gelu_math.h).
      __m512d delta = _mm512_sub_pd(_mm512_sub_pd(xc, _mm512_set1_pd(GELU_ERF_ROOT_HI)), _mm512_set1_pd(GELU_ERF_ROOT_LO));
      const double *C = gm_gelu_erf_root_taylor;
      __m512d q = _mm512_set1_pd(C[4]);
      for (int j = 3; j >= 0; j--) q = _mm512_fmadd_pd(q, delta, _mm512_set1_pd(C[j]));
      __mmask8 near = _mm512_cmp_pd_mask(_mm512_abs_pd(delta), _mm512_set1_pd(GELU_ERF_ROOT_RADIUS), _CMP_LT_OQ);
      d = _mm512_mask_blend_pd(near, d, _mm512_mul_pd(q, delta));
      res = _mm512_mul_pd(dy, d);
    }
  } else {
    __m512d s, om, t;
    if (fam == GELU_FAM_SIGMOID) {
      __m512d bx = _mm512_mul_pd(_mm512_set1_pd(p->a), xc);
      __m512d E = exp_core8(_mm512_sub_pd(_mm512_setzero_pd(), bx));
      s = _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(1.0), E));
      om = _mm512_mul_pd(E, s);
      t = bx;
    } else {
      __m512d x2 = _mm512_mul_pd(xc, xc);
      __m512d z = _mm512_mul_pd(_mm512_set1_pd(p->a), _mm512_mul_pd(xc, _mm512_fmadd_pd(_mm512_set1_pd(p->k), x2, _mm512_set1_pd(1.0))));
      __m512d E = exp_core8(_mm512_mul_pd(_mm512_set1_pd(-2.0), z));
      s = _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(1.0), E));
      om = _mm512_mul_pd(E, s);
      t = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), xc), _mm512_fmadd_pd(_mm512_set1_pd(p->B), x2, _mm512_set1_pd(p->A)));
    }
    if (!deriv) res = _mm512_mul_pd(xc, s);
    else res = _mm512_mul_pd(dy, _mm512_mul_pd(s, _mm512_fmadd_pd(t, om, _mm512_set1_pd(1.0))));
  }
  if (!deriv) {
    res = _mm512_mask_blend_pd(below, res, _mm512_set1_pd(-0.0));
    res = _mm512_mask_blend_pd(above, res, x);
    res = _mm512_mask_blend_pd(clip, res, _mm512_set1_pd(10.0));
  } else {
    res = _mm512_mask_blend_pd(below, res, _mm512_mul_pd(dy, _mm512_set1_pd(-0x1p-1074)));
    res = _mm512_mask_blend_pd(above, res, dy);
    res = _mm512_mask_blend_pd(clip, res, _mm512_setzero_pd());
  }
  return _mm512_mask_blend_pd(nan, res, x);
}

// The loop with the family and direction as constants (one copy per pair, no per-vector tests).
static inline __attribute__((always_inline)) void kernel_body(const gelu_acc_params *p, gelu_family fam, int deriv,
                                                              const float *x, const float *dy, float *of, double *od,
                                                              size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), x1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
    __m512d g0 = _mm512_set1_pd(1.0), g1 = g0;
    if (deriv) { g0 = _mm512_cvtps_pd(_mm256_loadu_ps(dy + i)); g1 = _mm512_cvtps_pd(_mm256_loadu_ps(dy + i + 8)); }
    __m512d r0 = one8(p, fam, deriv, x0, g0), r1 = one8(p, fam, deriv, x1, g1);
    if (of) {
      _mm256_storeu_ps(of + i, _mm512_cvtpd_ps(r0));
      _mm256_storeu_ps(of + i + 8, _mm512_cvtpd_ps(r1));
    } else {
      _mm512_storeu_pd(od + i, r0);
      _mm512_storeu_pd(od + i + 8, r1);
    }
  }
  if (i < n) gm_gelu_acc_kernel_scalar(p, deriv, x + i, deriv ? dy + i : NULL, of ? of + i : NULL, od ? od + i : NULL, n - i);
}

void gm_gelu_acc_kernel_avx512(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                            float *of, double *od, size_t n) {
  switch (p->fam) {
  case GELU_FAM_ERF:
    if (deriv) kernel_body(p, GELU_FAM_ERF, 1, x, dy, of, od, n);
    else kernel_body(p, GELU_FAM_ERF, 0, x, dy, of, od, n);
    break;
  case GELU_FAM_SIGMOID:
    if (deriv) kernel_body(p, GELU_FAM_SIGMOID, 1, x, dy, of, od, n);
    else kernel_body(p, GELU_FAM_SIGMOID, 0, x, dy, of, od, n);
    break;
  default:
    if (deriv) kernel_body(p, GELU_FAM_TANH, 1, x, dy, of, od, n);
    else kernel_body(p, GELU_FAM_TANH, 0, x, dy, of, od, n);
    break;
  }
}

// ---- f16/bf16 storage (contract in gelu_math.h) ------------------------------------------------

void gm_gelu_acc_widen_avx512(gm_dtype dt, const uint16_t *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(in + i));
    __m512 f = dt == GM_F16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    _mm512_storeu_ps(out + i, f);
  }
  gm_gelu_acc_widen_scalar(dt, in + i, out + i, n - i);
}

// 8 f64 -> f32 by round-to-odd (NaN: as (float)v).
static __m256i round_odd8(__m512d v) {
  __m256 t = _mm512_cvt_roundpd_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), v, _CMP_NEQ_OQ);
  __m256i b = _mm256_castps_si256(t);
  return _mm256_mask_or_epi32(b, inexact, b, _mm256_set1_epi32(1));
}

// 16 finite f32 bit patterns (an infinite or NaN pattern acts as a bound beyond the largest finite)
// rounded to nearest even f16/bf16; bf16 as gm_f32_to_bf16: (u + 0x7fff + ((u >> 16) & 1)) >> 16.
static inline __attribute__((always_inline)) __m256i round16_finite(gm_dtype dt, __m512i u) {
  if (dt == GM_F16) return _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16));
}

// 16 f64 (two vectors) rounded once to f16/bf16: round-to-odd to f32 first (exact in effect: no
// double rounding, as f32 has more than twice the target's precision plus 2 bits), then RNE; a bf16
// NaN keeps its sign and top payload bits, made quiet ((u >> 16) | 0x40, as gm_f32_to_bf16).
static __m256i narrow16(gm_dtype dt, __m512d lo, __m512d hi) {
  __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(round_odd8(lo)), round_odd8(hi), 1);
  __m256i r = round16_finite(dt, u);
  if (dt == GM_F16) return r; // VCVTPS2PH keeps NaNs itself
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm256_mask_mov_epi16(r, nan, _mm512_cvtepi32_epi16(quiet));
}

void gm_gelu_acc_narrow_avx512(gm_dtype dt, const double *in, uint16_t *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(out + i), narrow16(dt, _mm512_loadu_pd(in + i), _mm512_loadu_pd(in + i + 8)));
  gm_gelu_acc_narrow_scalar(dt, in + i, out + i, n - i);
}

// ---- f16/bf16 backward by table (contract in gelu_math.h): dx = round16(round64(dy * d[x])) ----
// In f32 lanes first: p = dy * dh[x], dh = d rounded to f32. dy is exact in f32, so where p is a
// normal finite f32, |p - dy*d| <= 2^-23 |dy*d| (dh's rounding and p's), under 2.0001 ulp(p) with
// the f64 rounding of dy*d included: the f64 product lies between p - 3 ulp and p + 3 ulp (the
// same sign, adjacent bit patterns). Rounding to 16 bits is monotone, so where both ends round to
// the same 16-bit value, so does the f64 product, and that value is dx. A vector with a lane where
// they differ (a product within 3 ulp of a 16-bit rounding tie: about 1 lane in 10^3 for f16, 10^4
// for bf16) or with a zero, subnormal, infinite or NaN product (dh is NaN where d is not a normal
// f32, marking NaN d too) is done again in f64: d gathered as f64, the product rounded once.
// f16 backward of `gelu` at 2^20 on one Zen 4 core: 1,710-1,740 Melem/s (bf16 1,830-1,870); the
// f64 lanes alone, in three passes, gave 1,275 (bf16 1,288).

// 16 dy (f16/bf16 bits) widened to f32, exactly.
static inline __attribute__((always_inline)) __m512 widen16(gm_dtype dt, __m256i h) {
  return dt == GM_F16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// The f64 route for 16 elements: d[x] gathered as f64, times dy, rounded once. Sets *nan where some d is NaN.
__attribute__((noinline, cold)) static __m256i bwd16_f64_route(gm_dtype dt, const double *d, __m256i xi, __m512 g,
                                                                  bool *nan) {
  __m256i i0 = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(xi)), i1 = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(xi, 1));
  __m512d d0 = _mm512_i32gather_pd(i0, d, 8), d1 = _mm512_i32gather_pd(i1, d, 8);
  __m512d p0 = _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(g)), d0);
  __m512d p1 = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g), 1))), d1);
  if (_mm512_cmp_pd_mask(d0, d0, _CMP_UNORD_Q) | _mm512_cmp_pd_mask(d1, d1, _CMP_UNORD_Q)) *nan = true;
  return narrow16(dt, p0, p1);
}

static inline __attribute__((always_inline)) bool bwd16_loop(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x,
                                                             const uint16_t *dy, uint16_t *dx, size_t n) {
  const __m512i three = _mm512_set1_epi32(3), abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i lowest = _mm512_set1_epi32(0x00800003), span = _mm512_set1_epi32(0x7f800000 - 0x00800003);
  bool nan = false;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i xi = _mm256_loadu_si256((const __m256i *)(x + i));
    __m512 dh = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(xi), t->dh, 4);
    __m512 g = widen16(dt, _mm256_loadu_si256((const __m256i *)(dy + i)));
    __m512i u = _mm512_castps_si512(_mm512_mul_ps(g, dh));
    // |p| in [2^-126 + 3 ulp, largest finite]: p - 3 ulp and p + 3 ulp are normal (or the bound beyond)
    __mmask16 sure = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(_mm512_and_si512(u, abs_mask), lowest), span);
    __m256i r;
    if (dt == GM_F16) {
      r = round16_finite(dt, _mm512_sub_epi32(u, three));
      sure &= _mm256_cmpeq_epi16_mask(r, round16_finite(dt, _mm512_add_epi32(u, three)));
    } else { // bf16 keeps f32's exponent: p - 3 ulp and p + 3 ulp round apart only if a tie (low half 0x8000) lies between
      __m512i low = _mm512_and_si512(u, _mm512_set1_epi32(0xffff));
      sure &= _mm512_cmpge_epu32_mask(_mm512_sub_epi32(low, _mm512_set1_epi32(0x8000 - 3)), _mm512_set1_epi32(7));
      r = round16_finite(dt, u);
    }
    if (sure != 0xffff) r = bwd16_f64_route(dt, t->d, xi, g, &nan);
    _mm256_storeu_si256((__m256i *)(dx + i), r);
  }
  if (i < n) nan |= gm_gelu_acc_bwd16_by_table_scalar(dt, t, x + i, dy + i, dx + i, n - i);
  return nan;
}

bool gm_gelu_acc_bwd16_by_table_avx512(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                    uint16_t *dx, size_t n) {
  if (dt == GM_F16) return bwd16_loop(GM_F16, t, x, dy, dx, n);
  return bwd16_loop(GM_BF16, t, x, dy, dx, n);
}
