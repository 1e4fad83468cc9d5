// Accurate mode, f32 forward of the erf family, 16 f32 lanes (AVX-512): the operations of
// gm_gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. A row
// of the pieces is 16 floats, looked up with a one-source permute (VPERMPS, the row its memory
// operand); the piece's column comes from floor(a) by a VPERMD of gelu_acc32_erf_column's 16
// values (measured faster than its three integer operations). The 32-column layout this replaced
// took a two-source VPERMT2PS and two loads a row: 1,490 -> 1,690 Melem/s at 2^20 on one Zen 4
// thread (1,806 with the two savings after it, docs/performance.md). 2^nT scaling is VSCALEFPS
// (one rounding, as the scalar's exact-then-rounding pair).
//
// As in gelu_accurate_f32_avx512.c, the loop keeps three vectors in flight at different stages
// (reduce, the two polynomials, the product and its fix-ups), so the out-of-order window holds
// independent work; each vector goes through the same operations, so the bits are unchanged.
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

// A vector between stages: after reduce16, the exponent's r and nT and the piece's column i with
// u = a - its middle; after polys16, c0 and L of f = x*(c0 + L)*2^nT.
typedef struct {
  __m512 x, r, nT, u, c0, L;
  __m512i i;
} acc32_erf_lanes;

// Row j of the pieces at column i (its low 4 bits): VPERMPS with the row as its memory operand.
static inline __attribute__((always_inline)) __m512 piece_row(int j, __m512i i) {
  return _mm512_permutexvar_ps(i, _mm512_loadu_ps(gm_gelu_acc32_erf_pieces[j]));
}

// Stage 1: a = min(|x|, AMAX), the exponent -a^2/2*log2(e) = nT + r (x < 0 only), the piece of a
// (its column i and u = a - its middle).
// The sign is taken as a lane of all ones or zeros (VPSRAD) and applied with AND/ANDN rather than
// as a mask register: VPMOVD2M runs on the FMA pipes, which this kernel fills (docs/performance.md).
static inline __attribute__((always_inline)) acc32_erf_lanes reduce16(__m512 x) {
  acc32_erf_lanes s;
  s.x = x;
  __m512i neg = _mm512_srai_epi32(_mm512_castps_si512(x), 31);
  __m512 a = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(GELU_ACC32_ERF_AMAX));
  gelu_acc32_reduce_erf16(_mm512_castsi512_ps(_mm512_and_si512(neg, _mm512_castps_si512(a))), &s.r, &s.nT);
  __m512i fl = _mm512_cvttps_epi32(a); // floor(a), as a >= 0
  const __m512i columns = _mm512_setr_epi32(0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9); // gelu_acc32_erf_column
  __m512i col = _mm512_permutexvar_epi32(fl, columns);
  s.i = _mm512_add_epi32(col, _mm512_andnot_si512(neg, _mm512_set1_epi32(GELU_ACC32_ERF_PHI_COLUMN)));
  s.u = _mm512_sub_ps(a, piece_row(GELU_ACC32_ERF_MID_ROW, s.i));
  s.c0 = s.L = _mm512_setzero_ps();
  return s;
}

// Stage 2: the piece's polynomial w(u) and 2^r = 1 + s, combined as L = c0*s + w*(1 + s).
static inline __attribute__((always_inline)) void polys16(acc32_erf_lanes *s) {
  __m512 S = piece_row(GELU_ACC32_ERF_DEG, s->i);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm512_fmadd_ps(S, s->u, piece_row(j, s->i));
  __m512 w = _mm512_fmadd_ps(s->u, S, piece_row(GELU_ACC32_ERF_DEG + 1, s->i));
  s->c0 = piece_row(0, s->i);
  __m512 P = gelu_acc32_exp2_poly16(s->r);
  __m512 e = _mm512_mul_ps(s->r, P);
  s->L = _mm512_fmadd_ps(s->c0, e, _mm512_fmadd_ps(w, e, w));
}

// Stage 3: y = (x*c0 + x*L)*2^nT (x's sign comes with it), x for x >= HI (and NaN), min(10, y)
// for gelu_10.
static inline __attribute__((always_inline)) __m512 product16(bool clip10, const acc32_erf_lanes *s) {
  __m512 x = s->x;
  __m512 xn = _mm512_max_ps(x, _mm512_set1_ps(-GELU_ACC32_ERF_AMAX));
  __m512 y = _mm512_scalef_ps(_mm512_fmadd_ps(xn, s->c0, _mm512_mul_ps(xn, s->L)), s->nT);
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(GELU_ACC32_ERF_HI), _CMP_NLT_UQ), y, x);
  return clip10 ? _mm512_min_ps(_mm512_set1_ps(10.0f), y) : y;
}

static inline __attribute__((always_inline)) __m512 one16(bool clip10, __m512 x) {
  acc32_erf_lanes s = reduce16(x);
  polys16(&s);
  return product16(clip10, &s);
}

// Vector v is in a, v+1 in b, v+2 in c; the unrolled body rotates the names instead of copying.
static inline __attribute__((always_inline)) void run16(bool clip10, const float *x, float *y, size_t n) {
  size_t nv = n / 16, v = 0;
  if (nv >= 2) {
    acc32_erf_lanes a = reduce16(_mm512_loadu_ps(x)), b = reduce16(_mm512_loadu_ps(x + 16)), c;
    polys16(&a);
    for (; v + 5 <= nv; v += 3) {
      c = reduce16(_mm512_loadu_ps(x + 16 * (v + 2)));
      polys16(&b);
      _mm512_storeu_ps(y + 16 * v, product16(clip10, &a));
      a = reduce16(_mm512_loadu_ps(x + 16 * (v + 3)));
      polys16(&c);
      _mm512_storeu_ps(y + 16 * (v + 1), product16(clip10, &b));
      b = reduce16(_mm512_loadu_ps(x + 16 * (v + 4)));
      polys16(&a);
      _mm512_storeu_ps(y + 16 * (v + 2), product16(clip10, &c));
    }
    for (; v + 3 <= nv; v++) { // a holds v (polynomials done), b holds v+1 (reduced)
      c = reduce16(_mm512_loadu_ps(x + 16 * (v + 2)));
      polys16(&b);
      _mm512_storeu_ps(y + 16 * v, product16(clip10, &a));
      a = b;
      b = c;
    }
    polys16(&b);
    _mm512_storeu_ps(y + 16 * v, product16(clip10, &a));
    _mm512_storeu_ps(y + 16 * (v + 1), product16(clip10, &b));
    v += 2;
  } else if (nv == 1) {
    _mm512_storeu_ps(y, one16(clip10, _mm512_loadu_ps(x)));
    v = 1;
  }
  size_t i = 16 * v;
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, one16(clip10, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gm_gelu_acc32_erf_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  if (p->clip10) run16(true, x, y, n);
  else run16(false, x, y, n);
}
