// Buffer rounding and conversion (kernels/round.c, SIMD paths) against core's scalar conversions,
// over every f16/bf16 neighbourhood: all 2^16 upper halves with several lower halves, ties,
// NaNs with payloads, infinities, subnormals, and odd buffer lengths (vector body + tail), at every
// SIMD level this CPU has (GPTMEG_SIMD), in place and into another buffer (gm_round_copy), and rows
// of a strided buffer (gm_round_rows).
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <stdlib.h>
#include <string.h>

int main(void) {
  static const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1000, 0x0fff, 0xc000, 0x4000};
  const size_t nl = sizeof lows / sizeof *lows, n = 65536 * nl + 3; // odd length: the scalar tail runs too
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  uint16_t *h = malloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)((i / nl) % 65536) << 16 | lows[i % nl];
    if (i >= 65536 * nl) u = 0x33800001u + (uint32_t)i; // a few subnormal-f16 neighbours in the tail
    memcpy(&x[i], &u, 4);
  }
  float *z = malloc(n * sizeof(float));
  static const char *levels[] = {"scalar", "avx2", "avx512"};
  const int top = (int)gm_cpu_simd();
  for (int lv = 0; lv <= top; lv++) {
    test_set_simd(levels[lv]);
    const char *lvl = levels[lv];
    for (int d = 0; d < 2; d++) {
      gm_dtype dt = d ? GM_BF16 : GM_F16;
      memcpy(y, x, n * sizeof(float));
      gm_round_inplace(dt, y, n);
      gm_f32_to_dtype_buf(dt, x, h, n);
      gm_round_copy(dt, x, z, n, 1);
      size_t bad_round = 0, bad_to = 0, bad_back = 0, bad_copy = 0;
      for (size_t i = 0; i < n; i++) {
        uint16_t want = dt == GM_F16 ? gm_f32_to_f16(x[i]) : gm_f32_to_bf16(x[i]);
        float back = dt == GM_F16 ? gm_f16_to_f32(want) : gm_bf16_to_f32(want);
        bad_round += memcmp(&y[i], &back, 4) != 0;
        bad_copy += memcmp(&z[i], &back, 4) != 0;
        bad_to += h[i] != want;
      }
      memcpy(z, x, n * sizeof(float));
      gm_round_copy(dt, z, z, n, 2);
      CHECK(memcmp(z, y, n * sizeof(float)) == 0, "%s %s: gm_round_copy in place differs from gm_round_inplace", lvl,
            gm_dtype_name(dt));
      CHECK(bad_copy == 0, "%s %s: gm_round_copy differs from the scalar rounding at %zu of %zu", lvl, gm_dtype_name(dt),
            bad_copy, n);
      gm_dtype_to_f32_buf(dt, h, y, n);
      for (size_t i = 0; i < n; i++) {
        float back = dt == GM_F16 ? gm_f16_to_f32(h[i]) : gm_bf16_to_f32(h[i]);
        bad_back += memcmp(&y[i], &back, 4) != 0;
      }
      CHECK(bad_round == 0, "%s %s: gm_round_inplace differs from the scalar rounding at %zu of %zu", lvl, gm_dtype_name(dt),
            bad_round, n);
      CHECK(bad_to == 0, "%s %s: gm_f32_to_dtype_buf differs at %zu", lvl, gm_dtype_name(dt), bad_to);
      CHECK(bad_back == 0, "%s %s: gm_dtype_to_f32_buf differs at %zu", lvl, gm_dtype_name(dt), bad_back);
    }
    test_set_simd(NULL);
  }
  // gm_round_rows: rows of 37 values 50 apart, the gaps between them untouched
  for (int d = 0; d < 2; d++) {
    gm_dtype dt = d ? GM_BF16 : GM_F16;
    memcpy(y, x, n * sizeof(float));
    memcpy(z, x, n * sizeof(float));
    const int rows = (int)(n / 50) - 1;
    gm_round_rows(dt, y, 50, rows, 37);
    for (int i = 0; i < rows; i++) gm_round_inplace(dt, z + (size_t)i * 50, 37);
    CHECK(memcmp(y, z, n * sizeof(float)) == 0, "%s: gm_round_rows differs from gm_round_inplace row by row", gm_dtype_name(dt));
  }
  memcpy(y, x, n * sizeof(float));
  gm_round_inplace(GM_F32, y, n);
  CHECK(memcmp(x, y, n * sizeof(float)) == 0, "f32 rounding is not the identity");
  free(x); free(y); free(z); free(h);
  return test_done("test_round");
}
