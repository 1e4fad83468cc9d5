// Rounding of f32 buffers to a storage dtype, and f32 <-> f16/bf16 buffer conversion (contract in
// nn.h). bf16 rounding runs in AVX2 integer lanes; f16 goes through F16C (vcvtps2ph with round-to-nearest-even, which gives the bits of
// gm_f32_to_f16: tests/test_dtype.c checks them against each other) when the CPU has it.
#include "gptmeg/kernels.h"


void gm_f32_to_f16_buf_f16c(const float *x, uint16_t *y, size_t n);
void gm_f16_to_f32_buf_f16c(const uint16_t *x, float *y, size_t n);
void gm_round_f16_buf_f16c(float *x, size_t n);
void gm_round_bf16_buf_avx2(float *x, size_t n);
void gm_bf16_to_f32_buf_avx2(const uint16_t *x, float *y, size_t n);

static bool have_f16c(void) {
  static int cached = -1;
  if (cached < 0) cached = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  return cached;
}

void gm_round_inplace(gm_dtype dt, float *x, size_t n) {
  if (dt == GM_F32) return;
  if (dt == GM_F16) {
    if (have_f16c()) { gm_round_f16_buf_f16c(x, n); return; }
    for (size_t i = 0; i < n; i++) x[i] = gm_f16_to_f32(gm_f32_to_f16(x[i]));
    return;
  }
  if (have_f16c()) { gm_round_bf16_buf_avx2(x, n); return; } // (AVX2 present)
  for (size_t i = 0; i < n; i++) x[i] = gm_bf16_to_f32(gm_f32_to_bf16(x[i]));
}

void gm_f32_to_dtype_buf(gm_dtype dt, const float *x, uint16_t *y, size_t n) {
  if (dt == GM_F16 && have_f16c()) { gm_f32_to_f16_buf_f16c(x, y, n); return; }
  for (size_t i = 0; i < n; i++) y[i] = dt == GM_F16 ? gm_f32_to_f16(x[i]) : gm_f32_to_bf16(x[i]);
}

void gm_dtype_to_f32_buf(gm_dtype dt, const uint16_t *x, float *y, size_t n) {
  if (dt == GM_F16 && have_f16c()) { gm_f16_to_f32_buf_f16c(x, y, n); return; }
  if (dt == GM_BF16 && have_f16c()) { gm_bf16_to_f32_buf_avx2(x, y, n); return; } // (AVX2 present)
  for (size_t i = 0; i < n; i++) y[i] = dt == GM_F16 ? gm_f16_to_f32(x[i]) : gm_bf16_to_f32(x[i]);
}
