// Buffer rounding and conversion (kernels/round.c, SIMD paths) against core's scalar conversions,
// over every f16/bf16 neighbourhood: all 2^16 upper halves with several lower halves, ties,
// NaNs with payloads, infinities, subnormals, and odd buffer lengths (vector body + tail).
#include "gptmeg/core.h"
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
  for (int d = 0; d < 2; d++) {
    gm_dtype dt = d ? GM_BF16 : GM_F16;
    memcpy(y, x, n * sizeof(float));
    gm_round_inplace(dt, y, n);
    gm_f32_to_dtype_buf(dt, x, h, n);
    size_t bad_round = 0, bad_to = 0, bad_back = 0;
    for (size_t i = 0; i < n; i++) {
      uint16_t want = dt == GM_F16 ? gm_f32_to_f16(x[i]) : gm_f32_to_bf16(x[i]);
      float back = dt == GM_F16 ? gm_f16_to_f32(want) : gm_bf16_to_f32(want);
      bad_round += memcmp(&y[i], &back, 4) != 0;
      bad_to += h[i] != want;
    }
    gm_dtype_to_f32_buf(dt, h, y, n);
    for (size_t i = 0; i < n; i++) {
      float back = dt == GM_F16 ? gm_f16_to_f32(h[i]) : gm_bf16_to_f32(h[i]);
      bad_back += memcmp(&y[i], &back, 4) != 0;
    }
    CHECK(bad_round == 0, "%s: gm_round_inplace differs from the scalar rounding at %zu of %zu", gm_dtype_name(dt), bad_round, n);
    CHECK(bad_to == 0, "%s: gm_f32_to_dtype_buf differs at %zu", gm_dtype_name(dt), bad_to);
    CHECK(bad_back == 0, "%s: gm_dtype_to_f32_buf differs at %zu", gm_dtype_name(dt), bad_back);
  }
  memcpy(y, x, n * sizeof(float));
  gm_round_inplace(GM_F32, y, n);
  CHECK(memcmp(x, y, n * sizeof(float)) == 0, "f32 rounding is not the identity");
  free(x); free(y); free(h);
  return test_done("test_round");
}
