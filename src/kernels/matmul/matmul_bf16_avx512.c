// AVX512-BF16 body of gm_matmul_bf16 (order and contract in matmul_bf16.c): VDPBF16PS does one
// pair step per lane, eight rows by 32 columns at a time (16 accumulators, enough independent
// chains to cover the instruction's latency), then four, then one. Each output is one chain over
// the pairs of a K block whatever the blocking of rows and columns, so the bits do not depend on
// it; the blocks' sums meet in C (the first stored, the next added), then alpha and the bias.
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul/matmul_isa.h"

typedef struct {
  __mmask16 m0, m1;  // valid columns of the two 16-column halves
  __m512 va, vb0, vb1;
  bool bias, first, last;
} strip_out;

// Writes one row's two accumulators for this K block: the first block's sum is stored (or, when it
// is also the last, finished), later blocks are added to what C holds; the last finishes with
// alpha * sum (+ bias).
static inline __attribute__((always_inline)) void put_row(const strip_out *o, float *c, __m512 a0, __m512 a1) {
  if (!o->first) {
    a0 = _mm512_add_ps(_mm512_maskz_loadu_ps(o->m0, c), a0);
    a1 = _mm512_add_ps(_mm512_maskz_loadu_ps(o->m1, c + 16), a1);
  }
  if (o->last) {
    a0 = _mm512_mul_ps(o->va, a0);
    a1 = _mm512_mul_ps(o->va, a1);
    if (o->bias) { a0 = _mm512_add_ps(o->vb0, a0); a1 = _mm512_add_ps(o->vb1, a1); }
  }
  _mm512_mask_storeu_ps(c, o->m0, a0);
  if (o->m1) _mm512_mask_storeu_ps(c + 16, o->m1, a1);
}

// Pairs [p0, p1) of every row of the strip.
static void strip_block(const uint32_t *Ap, int P, int p0, int p1, const uint32_t *Bs, int ldbs, int M,
                        const strip_out *o, float *C, int ldc) {
  const __mmask16 m0 = o->m0, m1 = o->m1;
  int i = 0;
  for (; i + 8 <= M; i += 8) {
    const uint32_t *a = Ap + (size_t)i * P;
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int p = p0; p < p1; p++) {
      const uint32_t *row = Bs + (size_t)p * ldbs;
      __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, row);
      __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16);
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) {
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)r * P + p]);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) put_row(o, C + (size_t)(i + r) * ldc, acc[r][0], acc[r][1]);
  }
  for (; i < M; i += 4) {
    int R = M - i < 4 ? M - i : 4;
    if (R == 1) { // a single row (decode): one row of accumulators
      const uint32_t *a0 = Ap + (size_t)i * P;
      __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
      for (int p = p0; p < p1; p++) {
        const uint32_t *row = Bs + (size_t)p * ldbs;
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a0[p]);
        c0 = _mm512_dpbf16_ps(c0, x, (__m512bh)_mm512_maskz_loadu_epi32(m0, row));
        c1 = _mm512_dpbf16_ps(c1, x, (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16));
      }
      put_row(o, C + (size_t)i * ldc, c0, c1);
      continue;
    }
    const uint32_t *a[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) a[r] = Ap + (size_t)(i + (r < R ? r : 0)) * P;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int p = p0; p < p1; p++) {
      const uint32_t *row = Bs + (size_t)p * ldbs;
      __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, row);
      __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16);
#pragma GCC unroll 4
      for (int r = 0; r < 4; r++) {
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[r][p]);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
      }
    }
    for (int r = 0; r < R; r++) put_row(o, C + (size_t)(i + r) * ldc, acc[r][0], acc[r][1]);
  }
}

// Rows of pairs at Bs + p * ldbs, ncols (<= 32) of them valid; K blocks of Pb pairs.
void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, int Pb, const uint32_t *Bs, int ldbs, int M, int ncols,
                              float alpha, const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  strip_out o;
  o.m0 = (__mmask16)((1u << n0) - 1u);
  o.m1 = (__mmask16)((1u << n1) - 1u);
  o.va = _mm512_set1_ps(alpha);
  o.vb0 = bias ? _mm512_maskz_loadu_ps(o.m0, bias) : _mm512_setzero_ps();
  o.vb1 = bias && n1 ? _mm512_maskz_loadu_ps(o.m1, bias + 16) : _mm512_setzero_ps();
  o.bias = bias != NULL;
  for (int p0 = 0;; p0 += Pb) { // at least one block, also when P = 0
    int p1 = P - p0 < Pb ? P : p0 + Pb;
    o.first = p0 == 0;
    o.last = p1 >= P;
    strip_block(Ap, P, p0, p1, Bs, ldbs, M, &o, C, ldc);
    if (o.last) break;
  }
}

// The intel-amx one-row order (matmul_bf16.c, ORDER_SEQ): per output one f32 chain over k, element
// 2p then 2p + 1, each product rounded and then added (no fusing, no flushing), 32 columns at once.
void gm_bf16_seq_strip_avx512(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  const __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
  for (int i = 0; i < M; i++) {
    const uint32_t *a = Ap + (size_t)i * P;
    __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
      const uint32_t *row = Bs + (size_t)p * ldbs;
      __m512i b0 = _mm512_maskz_loadu_epi32(m0, row), b1 = _mm512_maskz_loadu_epi32(m1, row + 16);
      const __m512 alo = _mm512_set1_ps(bf16_pair_lo(a[p])), ahi = _mm512_set1_ps(bf16_pair_hi(a[p]));
      c0 = _mm512_add_ps(c0, _mm512_mul_ps(alo, _mm512_castsi512_ps(_mm512_slli_epi32(b0, 16))));
      c1 = _mm512_add_ps(c1, _mm512_mul_ps(alo, _mm512_castsi512_ps(_mm512_slli_epi32(b1, 16))));
      c0 = _mm512_add_ps(c0, _mm512_mul_ps(ahi, _mm512_castsi512_ps(_mm512_and_si512(b0, hi_mask))));
      c1 = _mm512_add_ps(c1, _mm512_mul_ps(ahi, _mm512_castsi512_ps(_mm512_and_si512(b1, hi_mask))));
    }
    const __m512 va = _mm512_set1_ps(alpha);
    c0 = _mm512_mul_ps(va, c0);
    c1 = _mm512_mul_ps(va, c1);
    if (bias) {
      c0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, bias), c0);
      c1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, bias + 16), c1);
    }
    _mm512_mask_storeu_ps(C + (size_t)i * ldc, m0, c0);
    if (m1) _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16, m1, c1);
  }
}

// 16 columns (mask m) of the one-row B-transposed order for row a: pair p into accumulator p % 16
// (VDPBF16PS), then c[l] + c[l + 8], then + c[l + 4], then (0 + 1) + (2 + 3), per column.
static __m512 row16_half(const uint32_t *a, int P, const uint32_t *Bs, int ldbs, __mmask16 m) {
  __m512 c[16];
#pragma GCC unroll 16
  for (int l = 0; l < 16; l++) c[l] = _mm512_setzero_ps();
  int p = 0;
  for (; p + 16 <= P; p += 16) {
#pragma GCC unroll 16
    for (int l = 0; l < 16; l++) {
      __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[p + l]);
      c[l] = _mm512_dpbf16_ps(c[l], x, (__m512bh)_mm512_maskz_loadu_epi32(m, Bs + (size_t)(p + l) * ldbs));
    }
  }
  for (int l = 0; p < P; p++, l++) {
    __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[p]);
    c[l] = _mm512_dpbf16_ps(c[l], x, (__m512bh)_mm512_maskz_loadu_epi32(m, Bs + (size_t)p * ldbs));
  }
#pragma GCC unroll 8
  for (int l = 0; l < 8; l++) c[l] = _mm512_add_ps(c[l], c[l + 8]);
#pragma GCC unroll 4
  for (int l = 0; l < 4; l++) c[l] = _mm512_add_ps(c[l], c[l + 4]);
  return _mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3]));
}

void gm_bf16_row16_strip_avx512(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                                const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  const __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  const __m512 va = _mm512_set1_ps(alpha);
  for (int i = 0; i < M; i++) {
    const uint32_t *a = Ap + (size_t)i * P;
    __m512 c0 = _mm512_mul_ps(va, row16_half(a, P, Bs, ldbs, m0));
    if (bias) c0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, bias), c0);
    _mm512_mask_storeu_ps(C + (size_t)i * ldc, m0, c0);
    if (!m1) continue;
    __m512 c1 = _mm512_mul_ps(va, row16_half(a, P, Bs + 16, ldbs, m1));
    if (bias) c1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, bias + 16), c1);
    _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16, m1, c1);
  }
}
