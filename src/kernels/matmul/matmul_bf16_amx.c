// AMX-BF16 body of gm_matmul_bf16 under the intel-amx target (order and contract in matmul_bf16.c):
// one TDPBF16PS per 16 pairs of K (a 32-element K tile), which is the order itself: the hardware
// keeps the even- and odd-index products of the tile in two f32 chains and adds their sum to the
// accumulator tile (measured with _tile_dpbf16ps, tools/ref/amx_tdpbf16ps_probe.c). Rows in blocks
// of 16 (one A tile, two accumulator tiles of 16 columns), the K tail (P % 16 pairs) in tiles of
// its own width, each K chunk started from zero and added to the chunks before it in f32, then
// alpha * sum (+ bias).
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/matmul/matmul_isa.h"

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

bool gm_bf16_amx_ready(void) {
  static atomic_int state; // 0 unknown, 1 granted, 2 refused
  int s = atomic_load(&state);
  if (s == 0) {
    s = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 ? 1 : 2;
    atomic_store(&state, s);
  }
  return s == 1;
}

typedef struct __attribute__((packed)) {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} tile_cfg;

// Tiles: 0, 1 accumulators (mr rows x 16 f32); 2 A (mr rows x 16 pairs); 3, 4 B (16 pairs x 16
// columns); 5 A tail (mr x rem pairs); 6, 7 B tail (rem pairs x 16 columns).
static void configure(int mr, int rem) {
  tile_cfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  c.rows[0] = c.rows[1] = (uint8_t)mr;
  c.colsb[0] = c.colsb[1] = 64;
  c.rows[2] = (uint8_t)mr;
  c.colsb[2] = 64;
  c.rows[3] = c.rows[4] = 16;
  c.colsb[3] = c.colsb[4] = 64;
  if (rem) {
    c.rows[5] = (uint8_t)mr;
    c.colsb[5] = (uint16_t)(4 * rem);
    c.rows[6] = c.rows[7] = (uint8_t)rem;
    c.colsb[6] = c.colsb[7] = 64;
  }
  _tile_loadconfig(&c);
}

void gm_bf16_strip_amx(const uint32_t *Ap, int P, int Pc, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                       const float *bias, float *C, int ldc) {
  const int rem = P % 16, full = P - rem;
  const size_t lda = (size_t)P * 4, ldb = (size_t)ldbs * 4;
  if (Pc <= 0 || Pc > P) Pc = P;
  float part[16][32], sum[16][32];
  int cfg_mr = -1;
  for (int i0 = 0; i0 < M; i0 += 16) {
    int mr = M - i0 < 16 ? M - i0 : 16;
    if (mr != cfg_mr) { configure(mr, rem); cfg_mr = mr; }
    const uint32_t *a = Ap + (size_t)i0 * P;
    for (int c0 = 0; c0 < P || c0 == 0; c0 += Pc) {
      int c1 = P - c0 < Pc ? P : c0 + Pc;
      _tile_zero(0);
      _tile_zero(1);
      int p = c0;
      for (; p + 16 <= c1 && p < full; p += 16) {
        _tile_loadd(2, a + p, lda);
        _tile_loadd(3, Bs + (size_t)p * ldbs, ldb);
        _tile_loadd(4, Bs + (size_t)p * ldbs + 16, ldb);
        _tile_dpbf16ps(0, 2, 3);
        _tile_dpbf16ps(1, 2, 4);
      }
      if (p < c1) { // the K tail: rem pairs (only in the last chunk)
        _tile_loadd(5, a + p, lda);
        _tile_loadd(6, Bs + (size_t)p * ldbs, ldb);
        _tile_loadd(7, Bs + (size_t)p * ldbs + 16, ldb);
        _tile_dpbf16ps(0, 5, 6);
        _tile_dpbf16ps(1, 5, 7);
      }
      _tile_stored(0, &part[0][0], 128);
      _tile_stored(1, &part[0][16], 128);
      for (int r = 0; r < mr; r++)
        for (int j = 0; j < 32; j += 16) {
          __m512 v = _mm512_loadu_ps(&part[r][j]);
          if (c0 > 0) v = _mm512_add_ps(_mm512_loadu_ps(&sum[r][j]), v);
          _mm512_storeu_ps(&sum[r][j], v);
        }
      if (c1 >= P) break;
    }
    const __m512 va = _mm512_set1_ps(alpha);
    for (int r = 0; r < mr; r++)
      for (int j = 0; j < ncols; j += 16) {
        __mmask16 m = (__mmask16)(ncols - j >= 16 ? 0xffffu : (1u << (ncols - j)) - 1u);
        __m512 v = _mm512_mul_ps(va, _mm512_loadu_ps(&sum[r][j]));
        if (bias) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, bias + j), v);
        _mm512_mask_storeu_ps(C + (size_t)(i0 + r) * ldc + j, m, v);
      }
  }
  _tile_release();
}
