// Accurate mode, AVX2+FMA kernel: gm_gelu_acc_kernel_scalar (gelu_accurate.c) four f64 lanes at a
// time, the same operations in the same order, so the bits are the scalar kernel's. x, dy: n f32;
// result rounded once to f32 (of) or kept in f64 (od).
#include "kernels/gelu/gelu_math.h"

#include <immintrin.h>

static __m256d exp_core4(__m256d a) {
  __m256d n = _mm256_round_pd(_mm256_mul_pd(a, _mm256_set1_pd(1.4426950408889634)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(0x1.62e42fefa39efp-1), a);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(0x1.abc9e3b39803fp-56), r);
  __m256d q = _mm256_set1_pd(1.0 / 39916800);
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 3628800));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 362880));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 40320));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 5040));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 720));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 120));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 24));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0 / 6));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(0.5));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(1.0));
  // n is an integer of magnitude < 2^51: adding 1.5*2^52 puts it in the low mantissa bits.
  __m256d magic = _mm256_set1_pd(0x1.8p52);
  __m256i ni = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n, magic)), _mm256_castpd_si256(magic));
  __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(ni, _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(q, _mm256_castsi256_pd(bits));
}

static __m256d sel(__m256d mask, __m256d a, __m256d b) { return _mm256_blendv_pd(a, b, mask); } // mask ? b : a

static __m256d one4(const gelu_acc_params *p, int deriv, __m256d x, __m256d dy) {
  __m256d nan = _mm256_cmp_pd(x, x, _CMP_UNORD_Q);
  __m256d below = _mm256_cmp_pd(x, _mm256_set1_pd(p->lo), _CMP_LT_OQ);
  __m256d above = _mm256_cmp_pd(x, _mm256_set1_pd(p->hi), _CMP_GT_OQ);
  __m256d clip = p->clip10 ? _mm256_cmp_pd(x, _mm256_set1_pd(10.0), _CMP_GT_OQ) : _mm256_setzero_pd();
  __m256d xc = sel(_mm256_or_pd(nan, _mm256_or_pd(below, above)), x, _mm256_setzero_pd());
  __m256d res, onev = _mm256_set1_pd(1.0);
  if (p->fam == GELU_FAM_ERF) {
    __m256d absx = _mm256_and_pd(xc, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)));
    __m256d t = _mm256_mul_pd(absx, _mm256_set1_pd(0.70710678118654752440));
    __m128i i = _mm256_cvttpd_epi32(_mm256_mul_pd(t, _mm256_set1_pd(2.0)));
    i = _mm_min_epi32(i, _mm_set1_epi32(GELU_ERFCX_NI - 1));
    __m256d c = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(i), _mm256_set1_pd(0.5)), _mm256_set1_pd(0.25));
    __m256d u = _mm256_sub_pd(t, c);
    __m256d P = _mm256_i32gather_pd(gm_gelu_erfcx_table[GELU_ERFCX_DEG], i, 8);
    for (int j = GELU_ERFCX_DEG - 1; j >= 0; j--) P = _mm256_fmadd_pd(P, u, _mm256_i32gather_pd(gm_gelu_erfcx_table[j], i, 8));
    __m256d G = exp_core4(_mm256_mul_pd(_mm256_set1_pd(-0.5), _mm256_mul_pd(xc, xc)));
    __m256d Q = _mm256_mul_pd(_mm256_set1_pd(0.5), _mm256_mul_pd(G, P));
    __m256d negx = _mm256_cmp_pd(xc, _mm256_setzero_pd(), _CMP_LT_OQ);
    __m256d Phi = sel(negx, _mm256_sub_pd(onev, Q), Q);
    if (!deriv) res = _mm256_mul_pd(xc, Phi);
    else {
      __m256d d = _mm256_add_pd(Phi, _mm256_mul_pd(xc, _mm256_mul_pd(G, _mm256_set1_pd(0.39894228040143267794))));
      // Next to the root of f': its Taylor polynomial (gelu_math.h).
      __m256d delta = _mm256_sub_pd(_mm256_sub_pd(xc, _mm256_set1_pd(GELU_ERF_ROOT_HI)), _mm256_set1_pd(GELU_ERF_ROOT_LO));
      const double *C = gm_gelu_erf_root_taylor;
      __m256d q = _mm256_set1_pd(C[4]);
      for (int j = 3; j >= 0; j--) q = _mm256_fmadd_pd(q, delta, _mm256_set1_pd(C[j]));
      __m256d absd = _mm256_and_pd(delta, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)));
      __m256d near = _mm256_cmp_pd(absd, _mm256_set1_pd(GELU_ERF_ROOT_RADIUS), _CMP_LT_OQ);
      d = sel(near, d, _mm256_mul_pd(q, delta));
      res = _mm256_mul_pd(dy, d);
    }
  } else {
    __m256d s, om, t;
    if (p->fam == GELU_FAM_SIGMOID) {
      __m256d bx = _mm256_mul_pd(_mm256_set1_pd(p->a), xc);
      __m256d E = exp_core4(_mm256_sub_pd(_mm256_setzero_pd(), bx));
      s = _mm256_div_pd(onev, _mm256_add_pd(onev, E));
      om = _mm256_mul_pd(E, s);
      t = bx;
    } else {
      __m256d x2 = _mm256_mul_pd(xc, xc);
      __m256d z = _mm256_mul_pd(_mm256_set1_pd(p->a), _mm256_mul_pd(xc, _mm256_fmadd_pd(_mm256_set1_pd(p->k), x2, onev)));
      __m256d E = exp_core4(_mm256_mul_pd(_mm256_set1_pd(-2.0), z));
      s = _mm256_div_pd(onev, _mm256_add_pd(onev, E));
      om = _mm256_mul_pd(E, s);
      t = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), xc), _mm256_fmadd_pd(_mm256_set1_pd(p->B), x2, _mm256_set1_pd(p->A)));
    }
    if (!deriv) res = _mm256_mul_pd(xc, s);
    else res = _mm256_mul_pd(dy, _mm256_mul_pd(s, _mm256_fmadd_pd(t, om, onev)));
  }
  if (!deriv) {
    res = sel(below, res, _mm256_set1_pd(-0.0));
    res = sel(above, res, x);
    res = sel(clip, res, _mm256_set1_pd(10.0));
  } else {
    res = sel(below, res, _mm256_mul_pd(dy, _mm256_set1_pd(-0x1p-1074)));
    res = sel(above, res, dy);
    res = sel(clip, res, _mm256_setzero_pd());
  }
  return sel(nan, res, x);
}

void gm_gelu_acc_kernel_avx2(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                          float *of, double *od, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), x1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    __m256d g0 = _mm256_set1_pd(1.0), g1 = g0;
    if (deriv) { g0 = _mm256_cvtps_pd(_mm_loadu_ps(dy + i)); g1 = _mm256_cvtps_pd(_mm_loadu_ps(dy + i + 4)); }
    __m256d r0 = one4(p, deriv, x0, g0), r1 = one4(p, deriv, x1, g1);
    if (of) {
      _mm_storeu_ps(of + i, _mm256_cvtpd_ps(r0));
      _mm_storeu_ps(of + i + 4, _mm256_cvtpd_ps(r1));
    } else {
      _mm256_storeu_pd(od + i, r0);
      _mm256_storeu_pd(od + i + 4, r1);
    }
  }
  if (i < n) gm_gelu_acc_kernel_scalar(p, deriv, x + i, deriv ? dy + i : NULL, of ? of + i : NULL, od ? od + i : NULL, n - i);
}

// ---- f16/bf16 backward by table, 8 lanes (the f32 route of gelu_accurate_avx512.c) ---------------
// p = dy * dh[x] in f32; where p is normal and finite and p - 3 ulp, p + 3 ulp round to the same
// 16-bit value, that is the f64 route's dx (the argument: gelu_accurate_avx512.c, docs/numerics.md
// section 4). Other vectors of 8 take the scalar f64 route. Before: every element by the scalar
// route (about 50 Melem/s on a Zen 4 core).

// 8 dy (f16/bf16 bits) widened to f32, exactly.
static inline __m256 widen8(gm_dtype dt, __m128i h) {
  return dt == GM_F16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// 8 finite f32 bit patterns rounded to nearest even f16/bf16 (an infinite or NaN pattern acts as a
// bound beyond the largest finite).
static inline __m128i round8_finite(gm_dtype dt, __m256i u) {
  if (dt == GM_F16) return _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static inline __attribute__((always_inline)) bool bwd16_loop8(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x,
                                                              const uint16_t *dy, uint16_t *dx, size_t n) {
  const __m256i three = _mm256_set1_epi32(3), abs_mask = _mm256_set1_epi32(0x7fffffff);
  bool nan = false;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 dh = _mm256_i32gather_ps(t->dh, _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i))), 4);
    __m256i u = _mm256_castps_si256(_mm256_mul_ps(widen8(dt, _mm_loadu_si128((const __m128i *)(dy + i))), dh));
    // |p| in [2^-126 + 3 ulp, largest finite] (signed compares: |p| bits are non-negative)
    __m256i a = _mm256_and_si256(u, abs_mask);
    __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x00800002)),
                                  _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), a));
    __m128i r;
    bool sure;
    if (dt == GM_F16) {
      r = round8_finite(dt, _mm256_sub_epi32(u, three));
      __m128i hi = round8_finite(dt, _mm256_add_epi32(u, three));
      sure = _mm256_movemask_ps(_mm256_castsi256_ps(ok)) == 0xff && _mm_movemask_epi8(_mm_cmpeq_epi16(r, hi)) == 0xffff;
    } else { // a tie (low half 0x8000) within 3 ulp of p: low half in [0x7ffd, 0x8003]
      __m256i low = _mm256_and_si256(u, _mm256_set1_epi32(0xffff));
      __m256i near = _mm256_and_si256(_mm256_cmpgt_epi32(low, _mm256_set1_epi32(0x8000 - 4)),
                                      _mm256_cmpgt_epi32(_mm256_set1_epi32(0x8000 + 4), low));
      sure = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_andnot_si256(near, ok))) == 0xff;
      r = round8_finite(dt, u);
    }
    if (sure) _mm_storeu_si128((__m128i *)(dx + i), r);
    else nan |= gm_gelu_acc_bwd16_by_table_scalar(dt, t, x + i, dy + i, dx + i, 8);
  }
  if (i < n) nan |= gm_gelu_acc_bwd16_by_table_scalar(dt, t, x + i, dy + i, dx + i, n - i);
  return nan;
}

bool gm_gelu_acc_bwd16_by_table_avx2(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                  uint16_t *dx, size_t n) {
  if (dt == GM_F16) return bwd16_loop8(GM_F16, t, x, dy, dx, n);
  return bwd16_loop8(GM_BF16, t, x, dy, dx, n);
}
