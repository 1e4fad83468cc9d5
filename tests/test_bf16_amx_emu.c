// The intel-amx bf16 order's fast bodies against the order written out here, bit for bit, on
// operands chosen to reach its flushes: exponents spread so that products underflow, tile sums
// cancel into the subnormal range (flushed) and chunk sums cancel into it too (not flushed: the
// chunks' join is plain f32), signed zeros, odd column counts, row counts off the 4-row grid, K
// tails and chunks of 16, 32, 48 pairs or one chunk, in tiles of 16 pairs and of fewer (oneDNN's
// divisor tiles for a K that is not a multiple of 32: 15, 11, 1 pairs, one chunk or chunks of 30),
// with A's rows as packed or further apart (the padded stride the AMX path packs for P % 256 == 0).
// Bodies: gm_bf16_strip_amxemu_avx512 and gm_bf16_strip_amxemu_avx2 (AVX-512F / AVX2 with MXCSR's
// flush-to-zero, for hosts without AMX tiles) where the CPU has the level, and gm_bf16_strip_amx
// (the tiles) where Linux grants them;
// then gm_matmul_bf16 under the intel-amx target on the same operands against GPTMEG_SIMD=scalar
// (the library's scalar twin), at the host's level and capped at avx2, 1 and 2 threads (3 for the
// row-blocked shape), A as stored and transposed. The MXCSR of the caller is the same after each call.
#include "harness.h"

#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "kernels/matmul/matmul_isa.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STRIP = 32 };

// A bf16 value for index i: exponents from 2^-80 to 2^20 (products down to 2^-160), with zeros
// of both signs, and pairs of equal magnitude so that sums cancel.
static uint16_t value(uint32_t i, uint32_t salt) {
  uint32_t h = (i + 1) * 2654435761u ^ salt * 2246822519u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  switch (h % 17) {
  case 0: return 0x0000;
  case 1: return 0x8000;
  case 2: return (uint16_t)(0x3f80 | (h >> 31) << 15); // +-1: cancels against its twin
  default: break;
  }
  uint32_t e = 127 - 80 + (h >> 8) % 101; // biased exponent 47 .. 147
  return (uint16_t)((h >> 31) << 15 | e << 7 | ((h >> 20) & 0x7f));
}

static float f(uint32_t h16) {
  uint32_t u = h16 << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

// The order, one output: E/O chains per tile of Pt pairs from each chunk's start, acc += E + O
// flushed, chunks of Pc pairs joined in plain f32, then alpha * sum (+ bias).
static float ref(const uint32_t *a, const uint32_t *Bs, int ldbs, int j, int P, int Pc, int Pt, float alpha,
                 const float *bias) {
  if (Pc <= 0) Pc = P > 0 ? P : 1;
  float e = 0.0f, o = 0.0f, acc = 0.0f, sum = 0.0f;
  for (int p = 0; p < P; p++) {
    uint32_t x = a[p], y = Bs[(size_t)p * ldbs + j];
    e = ftz(e + ftz(f(x & 0xffff) * f(y & 0xffff)));
    o = ftz(o + ftz(f(x >> 16) * f(y >> 16)));
    bool chunk_end = p + 1 == P || (p + 1) % Pc == 0;
    if (!chunk_end && (p % Pc + 1) % Pt != 0) continue;
    acc = ftz(acc + ftz(e + o));
    e = o = 0.0f;
    if (!chunk_end) continue;
    sum = p < Pc ? acc : sum + acc;
    acc = 0.0f;
  }
  float v = alpha * sum;
  return bias ? bias[j] + v : v;
}

typedef void (*strip_fn)(const uint32_t *, int, int, int, int, const uint32_t *, int, int, int, float, const float *, float *,
                         int);

// One body on M x ncols outputs of P pairs, A's rows lda >= P pairs apart (the pairs between hold
// bf16 NaNs, which any read of them would carry into C), chunks of Pc: mismatches against ref (also
// counts how many reference outputs are subnormal, to show the join's range is reached).
static int run_body(strip_fn fn, const char *name, int M, int ncols, int P, int lda, int Pc, int Pt, bool with_bias,
                    int *subnormal) {
  uint32_t *Ap = malloc(sizeof(uint32_t) * (size_t)M * (lda > 0 ? lda : 1));
  uint32_t *Bs = malloc(sizeof(uint32_t) * (size_t)(P > 0 ? P : 1) * STRIP);
  float *C = malloc(sizeof(float) * (size_t)M * STRIP), bias[STRIP];
  if (!Ap || !Bs || !C) { CHECK(0, "out of memory"); free(Ap); free(Bs); free(C); return 1; }
  for (int i = 0; i < M; i++) {
    for (int p = 0; p < P; p++) {
      const uint32_t k = 2u * (uint32_t)(i * P + p);
      Ap[(size_t)i * lda + p] = value(k, 1) | (uint32_t)value(k + 1, 1) << 16;
    }
    for (int p = P; p < lda; p++) Ap[(size_t)i * lda + p] = 0x7fc17fc1u;
  }
  for (int p = 0; p < P; p++)
    for (int j = 0; j < STRIP; j++) {
      uint32_t lo = value((uint32_t)(p * STRIP + j), 2), hi = value((uint32_t)(p * STRIP + j), 3);
      if (p % 7 == 3) lo = value(2u * (uint32_t)p, 1) ^ 0x8000u; // a product of -x^2 against row 0's +x^2 terms
      Bs[(size_t)p * STRIP + j] = lo | hi << 16;
    }
  for (int j = 0; j < STRIP; j++) bias[j] = j % 3 ? 0x1p-130f * (float)(j - 16) : -0.0f;
  memset(C, 0x7f, sizeof(float) * (size_t)M * STRIP);
  const float alpha = 1.0f;
  unsigned before = _mm_getcsr();
  fn(Ap, P, lda, Pc, Pt, Bs, STRIP, M, ncols, alpha, with_bias ? bias : NULL, C, STRIP);
  CHECK(_mm_getcsr() == before, "%s changed MXCSR %08x -> %08x", name, before, _mm_getcsr());
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < ncols; j++) {
      float want = ref(Ap + (size_t)i * lda, Bs, STRIP, j, P, Pc, Pt, alpha, with_bias ? bias : NULL), got = C[(size_t)i * STRIP + j];
      uint32_t uw, ug;
      memcpy(&uw, &want, 4);
      memcpy(&ug, &got, 4);
      if (uw != ug && !(want != want && got != got)) {
        if (bad++ < 3)
          fprintf(stderr, "%s M %d ncols %d P %d Pc %d Pt %d: C[%d][%d] = %a, the order gives %a\n", name, M, ncols, P, Pc, Pt, i, j,
                  got, want);
      }
      *subnormal += want != 0.0f && fabsf(want) < FLT_MIN;
    }
  for (int i = 0; i < M; i++) // columns past ncols are not written
    for (int j = ncols; j < STRIP; j++) {
      uint32_t u;
      memcpy(&u, &C[(size_t)i * STRIP + j], 4);
      bad += u != 0x7f7f7f7fu;
    }
  free(Ap); free(Bs); free(C);
  return bad;
}

// Chunks whose sums cancel into the subnormal range: row i's first chunk holds one product
// (1 + i/8) * 2^-125, its second -2^-125; the join is plain f32, so the output is the subnormal
// (i/8) * 2^-125 (a flushed join would give 0). Pc = 16, P = 32.
static void check_join(strip_fn fn, const char *name) {
  enum { M = 6, P = 32 };
  uint32_t Ap[M * P], Bs[P * STRIP];
  float C[M * STRIP];
  memset(Ap, 0, sizeof Ap);
  memset(Bs, 0, sizeof Bs);
  for (int i = 0; i < M; i++) {
    float x = (1.0f + (float)i / 8.0f) * 0x1p-63f, y = -0x1p-63f;
    uint32_t ux, uy;
    memcpy(&ux, &x, 4);
    memcpy(&uy, &y, 4);
    Ap[i * P + 0] = ux >> 16;  // even element of pair 0
    Ap[i * P + 16] = uy >> 16; // even element of pair 16
  }
  for (int j = 0; j < STRIP; j++) Bs[0 * STRIP + j] = Bs[16 * STRIP + j] = 0x2080u; // 2^-62 as the even element
  fn(Ap, P, P, 16, 16, Bs, STRIP, M, STRIP, 1.0f, NULL, C, STRIP);
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < STRIP; j++) bad += C[i * STRIP + j] != (float)i / 8.0f * 0x1p-125f || signbit(C[i * STRIP + j]);
  CHECK(bad == 0, "%s: %d outputs of chunks cancelling into subnormals are not the unflushed join", name, bad);
}

// gm_matmul_bf16 (and _ta) under intel-amx against the scalar twin on the same wide operands.
static void check_product(int M, int N, int K, bool trans_a, int threads, const char *cap) {
  // (B has a row of NaNs after its K rows: a packer reading past K would carry them into C, where a
  // zero of A's padding would hide any other value; masked vector loads escape ASan)
  float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)(K + 1) * N);
  float *c0 = malloc(sizeof(float) * (size_t)M * N), *c1 = malloc(sizeof(float) * (size_t)M * N);
  if (!A || !B || !c0 || !c1) { CHECK(0, "out of memory"); free(A); free(B); free(c0); free(c1); return; }
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = f(value((uint32_t)i, 5));
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = f(value((uint32_t)i, 6));
  for (int j = 0; j < N; j++) B[(size_t)K * N + j] = NAN;
  for (int r = 0; r < 2; r++) {
    test_set_simd(r ? "scalar" : cap);
    float *c = r ? c1 : c0;
    if (trans_a) gm_matmul_bf16_ta(A, M, B, N, false, NULL, 1.0f, c, N, M, N, K, threads);
    else gm_matmul_bf16(A, K, B, N, false, NULL, 1.0f, c, N, M, N, K, threads);
    test_set_simd(NULL);
  }
  int d = test_count_diff(c0, c1, (size_t)M * N);
  CHECK(d == 0, "gm_matmul_bf16%s %dx%dx%d, %d threads, cap %s: %d outputs differ from the scalar twin", trans_a ? "_ta" : "", M,
        N, K, threads, cap ? cap : "none", d);
  free(A); free(B); free(c0); free(c1);
}

int main(void) {
  if (gm_cpu_simd() < GM_SIMD_AVX2) {
    test_skip("AMX-order bodies", "no AVX2 here: the scalar twin is the only body");
    return test_done("test_bf16_amx_emu");
  }
  const bool avx512 = gm_cpu_simd() == GM_SIMD_AVX512;
  if (!avx512) test_skip("the AVX-512 emulation", "no AVX-512 here");
  const bool tiles = gm_cpu_has(GM_CPU_AMX_TILE) && gm_cpu_has(GM_CPU_AMX_BF16) && gm_bf16_amx_ready();
  static const int Ms[] = {1, 3, 4, 7, 33}, Ns[] = {1, 17, 32}, Ps[] = {0, 1, 15, 16, 17, 47, 96, 130, 150};
  // (chunk, tile) in pairs: tiles of 16 with chunks of 16, 32, 48 or one chunk; oneDNN's divisor
  // tiles (K 300 in one call: tiles of 15 pairs), and narrower ones
  static const int Pcs[] = {0, 16, 32, 48, 0, 30, 0, 0}, Pts[] = {16, 16, 16, 16, 15, 15, 11, 1};
  int subnormal = 0, cases = 0;
  for (size_t a = 0; a < sizeof Ms / sizeof Ms[0]; a++)
    for (size_t b = 0; b < sizeof Ns / sizeof Ns[0]; b++)
      for (size_t c = 0; c < sizeof Ps / sizeof Ps[0]; c++)
        for (size_t d = 0; d < sizeof Pcs / sizeof Pcs[0]; d++) {
          const bool bias = (a + c + d) % 2;
          const int Pc = Pcs[d], Pt = Pts[d];
          // A's row stride: as packed, one cache line more (matmul_bf16.c's a_stride), or 3 pairs more
          static const int pads[] = {0, 16, 3};
          const int lda = Ps[c] + pads[(a + b) % 3];
          int bad;
          if (avx512) {
            bad = run_body(gm_bf16_strip_amxemu_avx512, "amxemu", Ms[a], Ns[b], Ps[c], lda, Pc, Pt, bias, &subnormal);
            CHECK(bad == 0, "gm_bf16_strip_amxemu_avx512 M %d ncols %d P %d lda %d Pc %d Pt %d: %d outputs differ", Ms[a], Ns[b],
                  Ps[c], lda, Pc, Pt, bad);
          }
          bad = run_body(gm_bf16_strip_amxemu_avx2, "amxemu_avx2", Ms[a], Ns[b], Ps[c], lda, Pc, Pt, bias, &subnormal);
          CHECK(bad == 0, "gm_bf16_strip_amxemu_avx2 M %d ncols %d P %d lda %d Pc %d Pt %d: %d outputs differ", Ms[a], Ns[b], Ps[c],
                lda, Pc, Pt, bad);
          if (tiles) {
            int dummy = 0;
            bad = run_body(gm_bf16_strip_amx, "amx", Ms[a], Ns[b], Ps[c], lda, Pc, Pt, bias, &dummy);
            CHECK(bad == 0, "gm_bf16_strip_amx M %d ncols %d P %d lda %d Pc %d Pt %d: %d outputs differ", Ms[a], Ns[b], Ps[c], lda,
                  Pc, Pt, bad);
          }
          cases++;
        }
  if (avx512) check_join(gm_bf16_strip_amxemu_avx512, "amxemu");
  check_join(gm_bf16_strip_amxemu_avx2, "amxemu_avx2");
  if (tiles) check_join(gm_bf16_strip_amx, "amx");
  CHECK(subnormal > 0, "no reference output is subnormal: the chunks' unflushed join is not tested");
  if (!tiles) test_skip("AMX tiles", "this host has none (or Linux refused them): the emulation only");
  gm_torch_target_set(GM_TT_INTEL_AMX);
  // Row-blocked (B packed whole along its rows, then each thread its own share of the blocks on 2
  // and 3 threads): 345 x 40 x 3072 in blocks of 160 rows, 500 x 40 x 1025 (an odd K) of 480.
  static const int shapes[][3] = {{40, 70, 97}, {64, 96, 1024}, {130, 33, 3072}, {345, 40, 3072}, {500, 40, 1025}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int th = 1; th <= (s >= 3 ? 3 : 2); th++) {
        check_product(shapes[s][0], shapes[s][1], shapes[s][2], ta == 1, th, NULL);
        check_product(shapes[s][0], shapes[s][1], shapes[s][2], ta == 1, th, "avx2");
      }
  printf("test_bf16_amx_emu: %d strip cases, %d subnormal outputs%s\n", cases, subnormal, tiles ? ", tiles too" : "");
  return test_done("test_bf16_amx_emu");
}
