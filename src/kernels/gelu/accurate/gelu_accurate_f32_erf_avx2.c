// Accurate mode, f32 forward of the erf family, 8 f32 lanes (AVX2+FMA): the operations of
// gm_gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. A piece
// of the 16 columns is looked up with two 8-wide permutes and a blend on bit 3 of the column (the
// permutes use its low 3 bits; with the 32-column layout before it, three permutes and two
// blends: AVX2 code on Zen 4 at 2^20 on one thread, gelu 749 -> 843 Melem/s); 2^nT scales in two
// exact-then-rounding steps built from the exponent bits. The loop keeps three vectors in flight
// at different stages, as the AVX-512 kernel's does (677 -> 745 Melem/s when it came).
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

// Row j of the pieces at column i; upper has the sign bit set where i >= 8.
static inline __attribute__((always_inline)) __m256 piece_row(int j, __m256i i, __m256 upper) {
  const float *row = gm_gelu_acc32_erf_pieces[j];
  __m256 g0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row), i);
  __m256 g1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + 8), i);
  return _mm256_blendv_ps(g0, g1, upper);
}

// 2^n for n in [-126, 127], exactly.
static inline __attribute__((always_inline)) __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// v * 2^n for n in [-200, 0], rounded once: as gelu_acc32_scale_once.
static inline __attribute__((always_inline)) __m256 scale_once8(__m256 v, __m256i n) {
  __m256i n1 = _mm256_max_epi32(n, _mm256_set1_epi32(-100));
  __m256i n2 = _mm256_max_epi32(_mm256_sub_epi32(n, n1), _mm256_set1_epi32(-100));
  return _mm256_mul_ps(_mm256_mul_ps(v, pow2i8(n1)), pow2i8(n2));
}

// A vector between stages (as the AVX-512 kernel's): after reduce8, the exponent's r and nT, the
// piece's column i with its half and u; after polys8, c0 and L of f = x*(c0 + L)*2^nT.
typedef struct {
  __m256 x, r, nT, upper, u, c0, L;
  __m256i i;
} acc32_erf_lanes8;

// Stage 1: a = min(|x|, AMAX), the exponent (x < 0 only), the piece of a.
static inline __attribute__((always_inline)) acc32_erf_lanes8 reduce8(__m256 x) {
  acc32_erf_lanes8 s;
  s.x = x;
  __m256 a = _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(GELU_ACC32_ERF_AMAX));
  __m256 aT = _mm256_blendv_ps(_mm256_setzero_ps(), a, x); // a where x's sign bit is set
  gelu_acc32_reduce_erf8(aT, &s.r, &s.nT);
  __m256i fl = _mm256_cvttps_epi32(a); // floor(a), as a >= 0
  __m256i col = _mm256_min_epi32(fl, _mm256_add_epi32(_mm256_srli_epi32(fl, 1), _mm256_set1_epi32(2)));
  __m256i neg = _mm256_srai_epi32(_mm256_castps_si256(x), 31);
  s.i = _mm256_add_epi32(col, _mm256_andnot_si256(neg, _mm256_set1_epi32(GELU_ACC32_ERF_PHI_COLUMN)));
  s.upper = _mm256_castsi256_ps(_mm256_slli_epi32(s.i, 28)); // sign bit = bit 3 of the column
  s.u = _mm256_sub_ps(a, piece_row(GELU_ACC32_ERF_MID_ROW, s.i, s.upper));
  s.c0 = s.L = _mm256_setzero_ps();
  return s;
}

// Stage 2: the piece's polynomial and 2^r = 1 + s, combined as L = c0*s + w*(1 + s).
static inline __attribute__((always_inline)) void polys8(acc32_erf_lanes8 *s) {
  __m256 S = piece_row(GELU_ACC32_ERF_DEG, s->i, s->upper);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm256_fmadd_ps(S, s->u, piece_row(j, s->i, s->upper));
  __m256 w = _mm256_fmadd_ps(s->u, S, piece_row(GELU_ACC32_ERF_DEG + 1, s->i, s->upper));
  s->c0 = piece_row(0, s->i, s->upper);
  __m256 P = gelu_acc32_exp2_poly8(s->r);
  __m256 e = _mm256_mul_ps(s->r, P);
  s->L = _mm256_fmadd_ps(s->c0, e, _mm256_fmadd_ps(w, e, w));
}

// Stage 3: y = (x*c0 + x*L)*2^nT (x's sign comes with it), x for x >= HI (and NaN), min(10, y)
// for gelu_10.
static inline __attribute__((always_inline)) __m256 product8(bool clip10, const acc32_erf_lanes8 *s) {
  __m256 x = s->x;
  __m256 xn = _mm256_max_ps(x, _mm256_set1_ps(-GELU_ACC32_ERF_AMAX));
  __m256 y = scale_once8(_mm256_fmadd_ps(xn, s->c0, _mm256_mul_ps(xn, s->L)), _mm256_cvtps_epi32(s->nT));
  y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_set1_ps(GELU_ACC32_ERF_HI), _CMP_NLT_UQ));
  return clip10 ? _mm256_min_ps(_mm256_set1_ps(10.0f), y) : y;
}

static inline __attribute__((always_inline)) __m256 one8(bool clip10, __m256 x) {
  acc32_erf_lanes8 s = reduce8(x);
  polys8(&s);
  return product8(clip10, &s);
}

// Three vectors in flight, as in gelu_accurate_f32_erf_avx512.c: vector v in a, v+1 in b, v+2 in c.
// Returns how many elements it wrote (all whole vectors, or none for fewer than two).
static inline __attribute__((always_inline)) size_t run8(bool clip10, const float *x, float *y, size_t n) {
  size_t nv = n / 8, v = 0;
  if (nv < 2) return 0;
  acc32_erf_lanes8 a = reduce8(_mm256_loadu_ps(x)), b = reduce8(_mm256_loadu_ps(x + 8)), c;
  polys8(&a);
  for (; v + 5 <= nv; v += 3) {
    c = reduce8(_mm256_loadu_ps(x + 8 * (v + 2)));
    polys8(&b);
    _mm256_storeu_ps(y + 8 * v, product8(clip10, &a));
    a = reduce8(_mm256_loadu_ps(x + 8 * (v + 3)));
    polys8(&c);
    _mm256_storeu_ps(y + 8 * (v + 1), product8(clip10, &b));
    b = reduce8(_mm256_loadu_ps(x + 8 * (v + 4)));
    polys8(&a);
    _mm256_storeu_ps(y + 8 * (v + 2), product8(clip10, &c));
  }
  for (; v + 3 <= nv; v++) { // a holds v (polynomials done), b holds v+1 (reduced)
    c = reduce8(_mm256_loadu_ps(x + 8 * (v + 2)));
    polys8(&b);
    _mm256_storeu_ps(y + 8 * v, product8(clip10, &a));
    a = b;
    b = c;
  }
  polys8(&b);
  _mm256_storeu_ps(y + 8 * v, product8(clip10, &a));
  _mm256_storeu_ps(y + 8 * (v + 1), product8(clip10, &b));
  return 8 * (v + 2);
}

void gm_gelu_acc32_erf_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  size_t i = p->clip10 ? run8(true, x, y, n) : run8(false, x, y, n);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(p->clip10 != 0, _mm256_loadu_ps(x + i)));
  if (i < n) gm_gelu_acc32_erf_fwd_scalar(p, x + i, y + i, n - i);
}
