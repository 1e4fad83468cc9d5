// The intel-amx bf16 order (matmul_bf16.c, ORDER_AMX) with AVX2 arithmetic, for hosts with neither
// AMX tiles nor the AVX-512 level (a laptop reproducing a Xeon's bits): the bits of the tile kernel,
// of matmul_bf16_amxemu_avx512.c and of the scalar twin, 32 columns as four 8-lane vectors.
// Numerics contract, per output (as matmul_bf16_amxemu_avx512.c): within a K tile of Pt pairs the
// even elements' products run in one f32 chain E from zero and the odd ones' in O, every product
// and sum flushed to a signed zero when subnormal (MXCSR's flush-to-zero, set only around
// chunk_rows); at the tile's end acc = acc + (E + O), flushed; each chunk of Pc pairs' acc joins the
// sum of the chunks before it in plain f32 (the flag cleared); then alpha * sum (+ bias). Products
// of two bf16 values are exact in f32 apart from the flush; no FMA. Pairs as packed (bf16
// subnormals already read as zero).
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul/matmul_isa.h"

enum { MXCSR_FTZ = 0x8000, V = 4 }; // V vectors of 8 columns

static inline __m256i lanes_mask(int n) { // lanes [0, n) of 8 set (n may be <= 0 or >= 8)
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

// One chunk (pairs [p0, p1) of rows a[0 .. R-1], R <= 2) in the tile order, FTZ set by the caller:
// the chunk's acc of row r, vector v, to out[V r + v].
static __attribute__((noinline)) void chunk_rows(const uint32_t *Ap, int lda, int p0, int p1, int Pt, const uint32_t *Bs,
                                                 int ldbs, int R, const __m256i m[V], __m256 *out) {
  const __m256i hi_mask = _mm256_set1_epi32((int)0xffff0000u);
  __m256 e[2][V], o[2][V], acc[2][V];
  for (int r = 0; r < 2; r++)
    for (int v = 0; v < V; v++) e[r][v] = o[r][v] = acc[r][v] = _mm256_setzero_ps();
  for (int p = p0; p < p1; p++) {
    const uint32_t *row = Bs + (size_t)p * ldbs;
    __m256 bl[V], bh[V];
    for (int v = 0; v < V; v++) {
      const __m256i b = _mm256_maskload_epi32((const int *)(row + 8 * v), m[v]);
      bl[v] = _mm256_castsi256_ps(_mm256_slli_epi32(b, 16));
      bh[v] = _mm256_castsi256_ps(_mm256_and_si256(b, hi_mask));
    }
    for (int r = 0; r < R; r++) {
      const uint32_t w = Ap[(size_t)r * lda + p];
      const __m256 alo = _mm256_set1_ps(bf16_pair_lo(w)), ahi = _mm256_set1_ps(bf16_pair_hi(w));
      for (int v = 0; v < V; v++) {
        e[r][v] = _mm256_add_ps(e[r][v], _mm256_mul_ps(alo, bl[v]));
        o[r][v] = _mm256_add_ps(o[r][v], _mm256_mul_ps(ahi, bh[v]));
      }
    }
    if ((p + 1 - p0) % Pt != 0 && p + 1 != p1) continue;
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) {
        acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_add_ps(e[r][v], o[r][v]));
        e[r][v] = o[r][v] = _mm256_setzero_ps();
      }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) out[V * r + v] = acc[r][v];
}

// gm_bf16_strip_amx's arguments and bits (see matmul_isa.h).
void gm_bf16_strip_amxemu_avx2(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                               float alpha, const float *bias, float *C, int ldc) {
  if (Pc <= 0) Pc = P > 0 ? P : 1;
  __m256i m[V];
  for (int v = 0; v < V; v++) m[v] = lanes_mask(ncols - 8 * v);
  const __m256 va = _mm256_set1_ps(alpha);
  const unsigned csr = _mm_getcsr();
  for (int i = 0; i < M; i += 2) {
    const int R = M - i < 2 ? M - i : 2;
    __m256 sum[2 * V], part[2 * V];
    for (int x = 0; x < 2 * V; x++) sum[x] = _mm256_setzero_ps();
    for (int p0 = 0; p0 < P; p0 += Pc) { // the chunks' sums in order, plain f32 (the first is the sum)
      _mm_setcsr(csr | MXCSR_FTZ);
      chunk_rows(Ap + (size_t)i * lda, lda, p0, P - p0 < Pc ? P : p0 + Pc, Pt, Bs, ldbs, R, m, part);
      _mm_setcsr(csr);
      for (int x = 0; x < V * R; x++) sum[x] = p0 == 0 ? part[x] : _mm256_add_ps(sum[x], part[x]);
    }
    for (int r = 0; r < R; r++) {
      float *c = C + (size_t)(i + r) * ldc;
      for (int v = 0; v < V; v++) {
        __m256 y = _mm256_mul_ps(va, sum[V * r + v]);
        if (bias) y = _mm256_add_ps(_mm256_maskload_ps(bias + 8 * v, m[v]), y);
        _mm256_maskstore_ps(c + 8 * v, m[v], y);
      }
    }
  }
}
