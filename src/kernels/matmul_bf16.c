// bf16 matmul in the order of AVX512-BF16 dot products (contract in nn.h). A and B hold bf16
// values in f32 buffers. Each output accumulates the K products in pairs, as one VDPBF16PS lane
// does: acc = (acc + a[2p+1] * b[2p+1]) + a[2p] * b[2p] for p = 0, 1, ..., both additions rounded
// to f32 (RNE), bf16 subnormal inputs read as zero and f32 subnormal results flushed to zero; an
// odd K's last pair has a zero second element. The result is alpha * acc, plus bias when given.
// The scalar code here and the AVX512-BF16 kernel give the same bits (tests/test_matmul_bf16.c),
// on any thread count.
#include "kernels/nn.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { STRIP = 32 }; // columns per work item

void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, const uint32_t *Bs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc);

static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

// bf16 bits of an f32 holding a bf16 value, subnormals read as zero (DAZ).
static uint16_t bf16_daz(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint32_t h) {
  uint32_t u = h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void strip_scalar(const uint32_t *Ap, int P, const uint32_t *Bs, int M, int ncols, float alpha,
                         const float *bias, float *C, int ldc) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < ncols; j++) {
      float acc = 0.0f;
      for (int p = 0; p < P; p++) {
        uint32_t a = Ap[(size_t)i * P + p], b = Bs[(size_t)p * STRIP + j];
        acc = ftz(acc + ftz(from_bf16(a >> 16) * from_bf16(b >> 16)));
        acc = ftz(acc + ftz(from_bf16(a & 0xffff) * from_bf16(b & 0xffff)));
      }
      float v = alpha * acc;
      C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
    }
}

static bool have_avx512bf16(void) {
  const char *cap = getenv("GPTMEG_SIMD");
  if (cap && strcmp(cap, "avx512") != 0) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

void gm_matmul_bf16(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                    float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  int P = (K + 1) / 2, n_strips = (N + STRIP - 1) / STRIP;
  uint32_t *Ap = malloc((size_t)M * (P > 0 ? P : 1) * sizeof(uint32_t));
  if (!Ap) abort(); // callers pass activations that already fit; this is a few MB at most
  for (int i = 0; i < M; i++)
    for (int p = 0; p < P; p++) {
      const float *a = A + (size_t)i * lda + 2 * p;
      Ap[(size_t)i * P + p] = (uint32_t)bf16_daz(a[0]) | (uint32_t)(2 * p + 1 < K ? bf16_daz(a[1]) : 0) << 16;
    }
  bool simd = have_avx512bf16();
  if (threads > n_strips) threads = n_strips;
#pragma omp parallel num_threads(threads)
  {
    uint32_t *Bs = aligned_alloc(64, (size_t)(P > 0 ? P : 1) * STRIP * sizeof(uint32_t));
#pragma omp for schedule(dynamic, 4)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
      for (int p = 0; p < P; p++) { // the strip of op(B) as bf16 pairs (k = 2p low, 2p+1 high)
        uint32_t *dst = Bs + (size_t)p * STRIP;
        for (int j = 0; j < nc; j++) {
          float lo = trans_b ? B[(size_t)(j0 + j) * ldb + 2 * p] : B[(size_t)(2 * p) * ldb + j0 + j];
          float hi = 2 * p + 1 >= K ? 0.0f : trans_b ? B[(size_t)(j0 + j) * ldb + 2 * p + 1] : B[(size_t)(2 * p + 1) * ldb + j0 + j];
          dst[j] = (uint32_t)bf16_daz(lo) | (uint32_t)bf16_daz(hi) << 16;
        }
        for (int j = nc; j < STRIP; j++) dst[j] = 0;
      }
      if (simd) gm_bf16_strip_avx512bf16(Ap, P, Bs, M, nc, alpha, bias ? bias + j0 : NULL, C + j0, ldc);
      else strip_scalar(Ap, P, Bs, M, nc, alpha, bias ? bias + j0 : NULL, C + j0, ldc);
    }
    free(Bs);
  }
  free(Ap);
}
