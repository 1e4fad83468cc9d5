// Rounding of f32 buffers to a storage dtype, and f32 <-> f16/bf16 buffer conversion (contract in
// nn.h). At the AVX2 level f16 goes through F16C (vcvtps2ph with round-to-nearest-even, which gives
// the bits of gm_f32_to_f16: tests/test_dtype.c checks them against each other) and bf16 runs in
// AVX2 integer lanes (round_avx2.c); at the AVX-512 level bf16 and the f16 rounding run 16 lanes
// (round_avx512.c); below AVX2, the scalar loops here (same bits).
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "kernels/round/round_isa.h"

#include <string.h>

static void round_f16_scalar(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = gm_f16_to_f32(gm_f32_to_f16(x[i]));
}

static void round_bf16_scalar(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = gm_bf16_to_f32(gm_f32_to_bf16(x[i]));
}

static void f32_to_f16_scalar(const float *x, uint16_t *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = gm_f32_to_f16(x[i]);
}

static void f32_to_bf16_scalar(const float *x, uint16_t *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = gm_f32_to_bf16(x[i]);
}

static void f16_to_f32_scalar(const uint16_t *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = gm_f16_to_f32(x[i]);
}

static void bf16_to_f32_scalar(const uint16_t *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = gm_bf16_to_f32(x[i]);
}

// The bodies of one SIMD level (round_isa.h), chosen per call from gm_cpu_simd().
typedef struct {
  void (*round_f16)(float *x, size_t n);
  void (*round_bf16)(float *x, size_t n);
  void (*f32_to_f16)(const float *x, uint16_t *y, size_t n);
  void (*f32_to_bf16)(const float *x, uint16_t *y, size_t n);
  void (*f16_to_f32)(const uint16_t *x, float *y, size_t n);
  void (*bf16_to_f32)(const uint16_t *x, float *y, size_t n);
} round_isa;

static const round_isa isa_scalar = {round_f16_scalar,   round_bf16_scalar, f32_to_f16_scalar,
                                     f32_to_bf16_scalar, f16_to_f32_scalar, bf16_to_f32_scalar};
// The AVX2 level's bodies (the AVX-512 level has its own for bf16 and the f16 rounding).
static const round_isa isa_avx2 = {gm_round_f16_buf_f16c, gm_round_bf16_buf_avx2,  gm_f32_to_f16_buf_f16c,
                                   f32_to_bf16_scalar,    gm_f16_to_f32_buf_f16c, gm_bf16_to_f32_buf_avx2};

static void round_f16_avx512(float *x, size_t n) { gm_round_f16_copy_avx512(x, x, n); }
static void round_bf16_avx512(float *x, size_t n) { gm_round_bf16_copy_avx512(x, x, n); }
static const round_isa isa_avx512 = {round_f16_avx512,          round_bf16_avx512,      gm_f32_to_f16_buf_f16c,
                                     gm_f32_to_bf16_buf_avx512, gm_f16_to_f32_buf_f16c, gm_bf16_to_f32_buf_avx2};

static const round_isa *isa_now(void) {
  gm_simd_level s = gm_cpu_simd();
  return s == GM_SIMD_AVX512 ? &isa_avx512 : s >= GM_SIMD_AVX2 ? &isa_avx2 : &isa_scalar;
}

void gm_round_inplace(gm_dtype dt, float *x, size_t n) {
  if (dt == GM_F32) return;
  const round_isa *isa = isa_now();
  if (dt == GM_F16) isa->round_f16(x, n);
  else isa->round_bf16(x, n);
}

void gm_round_rows(gm_dtype dt, float *x, size_t ld, int rows, int cols) {
  if (dt == GM_F32 || rows <= 0 || cols <= 0) return;
  const round_isa *isa = isa_now(); // once for all the rows
  for (int i = 0; i < rows; i++) {
    if (dt == GM_F16) isa->round_f16(x + (size_t)i * ld, (size_t)cols);
    else isa->round_bf16(x + (size_t)i * ld, (size_t)cols);
  }
}

static void round_copy_one(gm_dtype dt, const float *x, float *y, size_t n) {
  if (dt != GM_F32 && gm_cpu_simd() == GM_SIMD_AVX512) { // one pass
    if (dt == GM_F16) gm_round_f16_copy_avx512(x, y, n);
    else gm_round_bf16_copy_avx512(x, y, n);
    return;
  }
  if (y != x) memcpy(y, x, n * sizeof(float));
  gm_round_inplace(dt, y, n);
}

void gm_round_copy(gm_dtype dt, const float *x, float *y, size_t n, int threads) {
  if (dt == GM_F32 && y == x) return;
  const int nt = threads > 1 && n >= ((size_t)1 << 16) ? threads : 1;
  if (nt == 1) {
    round_copy_one(dt, x, y, n);
    return;
  }
  const size_t per = (n / (size_t)nt + 15) / 16 * 16; // whole 64-byte lines a thread
#pragma omp parallel for num_threads(nt)
  for (int t = 0; t < nt; t++) {
    size_t a = (size_t)t * per, e = a + per < n ? a + per : n;
    if (a < e) round_copy_one(dt, x + a, y + a, e - a);
  }
}

void gm_f32_to_dtype_buf(gm_dtype dt, const float *x, uint16_t *y, size_t n) {
  const round_isa *isa = isa_now();
  if (dt == GM_F16) isa->f32_to_f16(x, y, n);
  else isa->f32_to_bf16(x, y, n);
}

void gm_dtype_to_f32_buf(gm_dtype dt, const uint16_t *x, float *y, size_t n) {
  const round_isa *isa = isa_now();
  if (dt == GM_F16) isa->f16_to_f32(x, y, n);
  else isa->bf16_to_f32(x, y, n);
}
