// The intel-amx bf16 order (matmul_bf16.c, ORDER_AMX) with AVX-512F arithmetic, for hosts that
// have the AVX-512 level but no usable AMX tiles (a CPU without them, or a VM whose hypervisor
// leaves XCR0's tile bits off): the bits of the tile kernel and of the scalar twin, 32 columns at
// once. Numerics contract, per output: within a K tile of Pt pairs (16 unless oneDNN's tiles
// divide a call: onednn_amx.h), the even elements' products run in one f32 chain E from zero and
// the odd ones' in another, O; each product and each sum
// flushed to a signed zero when subnormal (what TDPBF16PS does); at the tile's end
// acc = ftz(acc + ftz(E + O)); at the end of a chunk of Pc pairs the chunk's acc joins the sum of
// the chunks before it (plain f32 add, the first chunk is the sum); then alpha * sum (+ bias).
// Products of two bf16 values are exact in f32 apart from the flush, so mul then add is the
// hardware's arithmetic; no FMA is used. Inputs are pairs as packed (bf16 subnormals already read
// as zero). Each output's order does not depend on the rows or columns around it.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul/matmul_isa.h"

// MXCSR's flush-to-zero bit: a result that would be subnormal becomes a zero of its sign, exact
// or not (TDPBF16PS's flush; checked against the scalar twin's ftz in tests/test_bf16_pack.c).
// Inputs are never subnormal here (pairs are packed with DAZ; the chains are flushed), so
// denormals-are-zero is not needed. The flag is set only around chunk_rows, a call the compiler
// cannot move arithmetic across; the chunks' join and alpha, bias run with the caller's MXCSR.
enum { MXCSR_FTZ = 0x8000 };

// One chunk (pairs [p0, p1) of rows a[0 .. R-1], R <= 4) in the tile order, with FTZ set: E and O
// per tile of Pt pairs (counted from the chunk's start), acc += E + O at each tile's end; the chunk's acc of
// row r, columns 0-15 and 16-31, to out[2 r], out[2 r + 1].
static __attribute__((noinline)) void chunk_rows(const uint32_t *Ap, int lda, int p0, int p1, int Pt, const uint32_t *Bs, int ldbs,
                                                 int R, __mmask16 m0, __mmask16 m1, __m512 *out) {
  const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
  __m512 e[4][2], o[4][2], acc[4][2];
  for (int r = 0; r < 4; r++)
    for (int h = 0; h < 2; h++) e[r][h] = o[r][h] = acc[r][h] = _mm512_setzero_ps();
  for (int p = p0; p < p1; p++) {
    const uint32_t *row = Bs + (size_t)p * ldbs;
    const __m512i b0 = _mm512_maskz_loadu_epi32(m0, row), b1 = _mm512_maskz_loadu_epi32(m1, row + 16);
    const __m512 bl[2] = {_mm512_castsi512_ps(_mm512_slli_epi32(b0, 16)), _mm512_castsi512_ps(_mm512_slli_epi32(b1, 16))};
    const __m512 bh[2] = {_mm512_castsi512_ps(_mm512_and_si512(b0, hi_mask)), _mm512_castsi512_ps(_mm512_and_si512(b1, hi_mask))};
    for (int r = 0; r < R; r++) {
      const uint32_t w = Ap[(size_t)r * lda + p];
      const __m512 alo = _mm512_set1_ps(bf16_pair_lo(w)), ahi = _mm512_set1_ps(bf16_pair_hi(w));
      for (int h = 0; h < 2; h++) {
        e[r][h] = _mm512_add_ps(e[r][h], _mm512_mul_ps(alo, bl[h]));
        o[r][h] = _mm512_add_ps(o[r][h], _mm512_mul_ps(ahi, bh[h]));
      }
    }
    if ((p + 1 - p0) % Pt != 0 && p + 1 != p1) continue;
    for (int r = 0; r < R; r++)
      for (int h = 0; h < 2; h++) {
        acc[r][h] = _mm512_add_ps(acc[r][h], _mm512_add_ps(e[r][h], o[r][h]));
        e[r][h] = o[r][h] = _mm512_setzero_ps();
      }
  }
  for (int r = 0; r < R; r++)
    for (int h = 0; h < 2; h++) out[2 * r + h] = acc[r][h];
}

// A strip of pre-paired B (row stride ldbs, ncols <= 32 columns kept) for M rows of pre-paired A
// (rows of P pairs), K chunks of Pc pairs (a multiple of Pt; 0: one chunk), tiles of Pt pairs: gm_bf16_strip_amx's
// arguments and bits.
void gm_bf16_strip_amxemu_avx512(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                                 float alpha, const float *bias, float *C, int ldc) {
  if (Pc <= 0) Pc = P > 0 ? P : 1;
  const int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  const __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vb0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 vb1 = bias && n1 ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  const unsigned csr = _mm_getcsr();
  for (int i = 0; i < M; i += 4) {
    const int R = M - i < 4 ? M - i : 4;
    __m512 sum[8], part[8];
    for (int x = 0; x < 8; x++) sum[x] = _mm512_setzero_ps();
    for (int p0 = 0; p0 < P; p0 += Pc) { // the chunks' sums in order, plain f32 (the first is the sum)
      _mm_setcsr(csr | MXCSR_FTZ);
      chunk_rows(Ap + (size_t)i * lda, lda, p0, P - p0 < Pc ? P : p0 + Pc, Pt, Bs, ldbs, R, m0, m1, part);
      _mm_setcsr(csr);
      for (int x = 0; x < 2 * R; x++) sum[x] = p0 == 0 ? part[x] : _mm512_add_ps(sum[x], part[x]);
    }
    for (int r = 0; r < R; r++) {
      __m512 c0 = _mm512_mul_ps(va, sum[2 * r]), c1 = _mm512_mul_ps(va, sum[2 * r + 1]);
      if (bias) {
        c0 = _mm512_add_ps(vb0, c0);
        c1 = _mm512_add_ps(vb1, c1);
      }
      float *c = C + (size_t)(i + r) * ldc;
      _mm512_mask_storeu_ps(c, m0, c0);
      if (m1) _mm512_mask_storeu_ps(c + 16, m1, c1);
    }
  }
}
