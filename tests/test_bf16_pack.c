// The AVX-512 pair packing of gm_matmul_bf16's operands (src/kernels/matmul/matmul_bf16_pack_avx512.c)
// gives the words of the scalar packing (GPTMEG_SIMD=scalar), for B as stored and transposed, odd
// and even K, column counts off the 16-lane grid, and inputs holding subnormals of both signs,
// -0, infinities and NaN (flushed or kept as the scalar code does): through gm_bf16_pack (B) and
// through the products of gm_matmul_bf16 under the intel-amx target, whose A is packed the same way
// (the AMX or AVX512-BF16 kernel against its scalar twin, bit for bit); and A^T packed straight
// from A (gm_matmul_bf16_ta) against the product of A^T copied, and the product rounded strip by
// strip (gm_matmul_bf16_packed_rounded) against the product then a rounding pass. Skipped without
// AVX-512. On every machine first: the pairs of op(B)^T made from those of op(B)
// (gm_bf16_pack_transposed) against packing op(B)^T from the floats, the rounding pack from f32
// (gm_bf16_pack_rounded) against packing a rounded copy, and a linear's dX from the pairs
// (gm_matmul_bf16_packed_t_rounded) against the float route, under every torch CPU target.
#include "harness.h"

#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// A bf16 value (as f32) for index i: mostly ordinary values, with the special ones spread in.
static float value(uint32_t i) {
  uint32_t h = i * 2654435761u;
  switch (h % 23) {
  case 0: { uint32_t u = 0x00010000u | ((h >> 8) & 0x007f0000u); float f; memcpy(&f, &u, 4); return f; } // +subnormal
  case 1: { uint32_t u = 0x80010000u | ((h >> 8) & 0x007f0000u); float f; memcpy(&f, &u, 4); return f; } // -subnormal
  case 2: return -0.0f;
  case 3: return (h >> 5) & 1 ? INFINITY : -INFINITY;
  case 4: return NAN;
  default: break;
  }
  uint32_t u = (((h >> 7) & 0x1ffu) + 0x3c00u) << 16 | ((h >> 3) & 1u) << 31;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float finite_value(uint32_t i) {
  float v = value(i);
  return isfinite(v) ? v : 0.5f;
}

static void check_pack(int K, int N, bool trans_b) {
  size_t n = (size_t)K * N, words = gm_bf16_packed_size(K, N);
  float *B = malloc(n * sizeof *B);
  uint32_t *ps = malloc(words * sizeof *ps), *pv = malloc(words * sizeof *pv);
  if (!B || !ps || !pv) { CHECK(false, "out of memory"); free(B); free(ps); free(pv); return; }
  for (size_t i = 0; i < n; i++) B[i] = value((uint32_t)(i + 7 * (size_t)K));
  int ldb = trans_b ? K : N;
  test_set_simd("scalar");
  gm_bf16_pack(B, ldb, trans_b, K, N, ps);
  test_set_simd(NULL);
  gm_bf16_pack(B, ldb, trans_b, K, N, pv);
  size_t bad = 0, first = 0;
  for (size_t w = 0; w < words; w++)
    if (ps[w] != pv[w] && !bad++) first = w;
  CHECK(bad == 0, "gm_bf16_pack K %d N %d %s: %zu of %zu words differ from the scalar packing (first at %zu: %08x vs %08x)", K, N,
        trans_b ? "B^T" : "B", bad, words, first, bad ? pv[first] : 0u, bad ? ps[first] : 0u);
  free(B);
  free(ps);
  free(pv);
}

// gm_matmul_bf16 (A packed by rows, B by columns at call time) against its scalar twin.
static void check_product(int M, int N, int K, bool trans_b) {
  float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
  float *cs = malloc((size_t)M * N * sizeof *cs), *cv = malloc((size_t)M * N * sizeof *cv);
  if (!A || !B || !cs || !cv) { CHECK(false, "out of memory"); free(A); free(B); free(cs); free(cv); return; }
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = finite_value((uint32_t)i * 3u + 1u);
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = finite_value((uint32_t)i * 5u + 2u);
  int ldb = trans_b ? K : N;
  test_set_simd("scalar");
  gm_matmul_bf16(A, K, B, ldb, trans_b, NULL, 1.0f, cs, N, M, N, K, 1);
  test_set_simd(NULL);
  gm_matmul_bf16(A, K, B, ldb, trans_b, NULL, 1.0f, cv, N, M, N, K, 1);
  int d = test_count_diff(cs, cv, (size_t)M * N);
  CHECK(d == 0, "gm_matmul_bf16 M %d N %d K %d %s: %d of %d outputs differ from the scalar twin", M, N, K, trans_b ? "B^T" : "B", d,
        M * N);
  free(A);
  free(B);
  free(cs);
  free(cv);
}

// gm_matmul_bf16_ta (A^T packed straight from A [K, M]) against gm_matmul_bf16 on A^T made
// contiguous, bit for bit, with the AVX-512 packing and the scalar one, on 1 and 2 threads, under
// intel-avx512-bf16 (one order whatever the operands' layout, from two rows; under intel-amx oneDNN
// blocks a transposed A another way than a contiguous one, as torch does, and check_product_ta_amx
// holds that order's kernel to its scalar twin; one row takes intel-amx's one-row kernels under
// both targets, checked there).
static void check_product_ta(int M, int N, int K, bool trans_b, int threads, bool scalar) {
  float *A = malloc((size_t)M * K * sizeof *A), *At = malloc((size_t)M * K * sizeof *At), *B = malloc((size_t)K * N * sizeof *B);
  float *cr = malloc((size_t)M * N * sizeof *cr), *ct = malloc((size_t)M * N * sizeof *ct);
  if (!A || !At || !B || !cr || !ct) { CHECK(false, "out of memory"); free(A); free(At); free(B); free(cr); free(ct); return; }
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = value((uint32_t)i * 3u + 11u); // A [K, M], specials included
  for (int k = 0; k < K; k++)
    for (int i = 0; i < M; i++) At[(size_t)i * K + k] = A[(size_t)k * M + i];
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = finite_value((uint32_t)i * 5u + 2u);
  int ldb = trans_b ? K : N;
  if (scalar) test_set_simd("scalar");
  gm_matmul_bf16(At, K, B, ldb, trans_b, NULL, 1.0f, cr, N, M, N, K, threads);
  gm_matmul_bf16_ta(A, M, B, ldb, trans_b, NULL, 1.0f, ct, N, M, N, K, threads);
  test_set_simd(NULL);
  int d = test_count_diff(cr, ct, (size_t)M * N);
  CHECK(d == 0, "gm_matmul_bf16_ta M %d N %d K %d %s, %d threads%s: %d of %d outputs differ from the product of A^T copied", M,
        N, K, trans_b ? "B^T" : "B", threads, scalar ? " (scalar)" : "", d, M * N);
  free(A);
  free(At);
  free(B);
  free(cr);
  free(ct);
}

// Under intel-amx: gm_matmul_bf16_ta's AMX kernel against its scalar twin (the same plan; finite
// inputs: a NaN's payload is the kernels' own).
static void check_product_ta_amx(int M, int N, int K, bool trans_b, int threads) {
  float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
  float *cs = malloc((size_t)M * N * sizeof *cs), *cv = malloc((size_t)M * N * sizeof *cv);
  if (!A || !B || !cs || !cv) { CHECK(false, "out of memory"); free(A); free(B); free(cs); free(cv); return; }
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = finite_value((uint32_t)i * 3u + 11u);
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = finite_value((uint32_t)i * 5u + 2u);
  int ldb = trans_b ? K : N;
  gm_matmul_bf16_ta(A, M, B, ldb, trans_b, NULL, 1.0f, cv, N, M, N, K, threads);
  test_set_simd("scalar");
  gm_matmul_bf16_ta(A, M, B, ldb, trans_b, NULL, 1.0f, cs, N, M, N, K, threads);
  test_set_simd(NULL);
  int d = test_count_diff(cs, cv, (size_t)M * N);
  CHECK(d == 0, "intel-amx gm_matmul_bf16_ta M %d N %d K %d %s, %d threads: %d of %d outputs differ from the scalar twin", M, N, K,
        trans_b ? "B^T" : "B", threads, d, M * N);
  free(A);
  free(B);
  free(cs);
  free(cv);
}

// gm_matmul_bf16_packed_rounded against gm_matmul_bf16_packed then gm_round_inplace, bit for bit
// (A's first row holds infinities and NaN, so its outputs are NaN or infinite), both levels, 1 and 2
// threads.
static void check_rounded(int M, int N, int K, int threads, bool scalar) {
  size_t words = gm_bf16_packed_size(K, N);
  float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B), *bias = malloc((size_t)N * sizeof *bias);
  float *cr = malloc((size_t)M * N * sizeof *cr), *ct = malloc((size_t)M * N * sizeof *ct);
  uint32_t *Bp = malloc(words * sizeof *Bp);
  if (!A || !B || !bias || !cr || !ct || !Bp) {
    CHECK(false, "out of memory");
    free(A); free(B); free(bias); free(cr); free(ct); free(Bp);
    return;
  }
  for (size_t i = 0; i < (size_t)M * K; i++) // row 0 with the special values, the others finite
    A[i] = i < (size_t)K ? value((uint32_t)i * 7u + 3u) : finite_value((uint32_t)i * 7u + 3u);
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = finite_value((uint32_t)i * 5u + 2u);
  for (int j = 0; j < N; j++) bias[j] = finite_value((uint32_t)j * 13u + 1u) * 0.75f; // not bf16 values: the sum rounds
  if (scalar) test_set_simd("scalar");
  gm_bf16_pack(B, N, false, K, N, Bp);
  gm_matmul_bf16_packed(A, K, Bp, bias, 1.0f, cr, N, M, N, K, threads);
  gm_round_inplace(GM_BF16, cr, (size_t)M * N);
  gm_matmul_bf16_packed_rounded(A, K, Bp, bias, 1.0f, ct, N, M, N, K, threads);
  test_set_simd(NULL);
  int d = test_count_diff(cr, ct, (size_t)M * N);
  CHECK(d == 0, "gm_matmul_bf16_packed_rounded M %d N %d K %d, %d threads%s: %d of %d outputs differ from product then rounding",
        M, N, K, threads, scalar ? " (scalar)" : "", d, M * N);
  free(A); free(B); free(bias); free(cr); free(ct); free(Bp);
}

// An f32 that is not a bf16 value for index i (mostly; rounding ties, values rounding to bf16
// subnormals and to infinity, and value()'s specials spread in).
static float raw_value(uint32_t i) {
  uint32_t h = i * 2246822519u + 0x9e3779b9u;
  switch (h % 19) {
  case 0: return value(i);
  case 1: { uint32_t u = 0x3f808000u | (h & 0x007f0000u); float f; memcpy(&f, &u, 4); return f; } // a tie
  case 2: { uint32_t u = 0x007f8000u | ((h >> 9) & 0x7fffu) | (h & 0x80000000u); float f; memcpy(&f, &u, 4); return f; } // near FLT_MIN
  case 3: return (h & 1 ? 1.0f : -1.0f) * 3.3999e38f; // rounds to infinity
  default: break;
  }
  uint32_t u = (((h >> 7) & 0xffu) + 0x3b80u) << 16 | (h & 0xffffu) | ((h >> 3) & 1u) << 31;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// gm_bf16_pack_rounded(B) against gm_bf16_pack of B rounded by gm_round_copy, word for word.
static void check_pack_rounded(int K, int N, bool trans_b, bool scalar) {
  size_t n = (size_t)K * N, words = gm_bf16_packed_size(K, N);
  float *B = malloc(n * sizeof *B), *R = malloc(n * sizeof *R);
  uint32_t *pr = malloc(words * sizeof *pr), *pt = malloc(words * sizeof *pt);
  if (!B || !R || !pr || !pt) { CHECK(false, "out of memory"); free(B); free(R); free(pr); free(pt); return; }
  for (size_t i = 0; i < n; i++) B[i] = raw_value((uint32_t)(i + 3 * (size_t)N));
  memset(pt, 0xa5, words * sizeof *pt); // every word must be written
  int ldb = trans_b ? K : N;
  if (scalar) test_set_simd("scalar");
  gm_round_copy(GM_BF16, B, R, n, 1);
  gm_bf16_pack(R, ldb, trans_b, K, N, pr);
  int rc = gm_bf16_pack_rounded(B, ldb, trans_b, K, N, pt);
  test_set_simd(NULL);
  size_t bad = 0, first = 0;
  for (size_t w = 0; w < words; w++)
    if (pr[w] != pt[w] && !bad++) first = w;
  CHECK(rc == 0 && bad == 0, "gm_bf16_pack_rounded K %d N %d %s%s: %zu of %zu words differ from packing the rounded copy (first at %zu: %08x vs %08x)",
        K, N, trans_b ? "B^T" : "B", scalar ? " (scalar)" : "", bad, words, first, bad ? pt[first] : 0u, bad ? pr[first] : 0u);
  free(B); free(R); free(pr); free(pt);
}

// gm_bf16_pack_transposed(pairs of op(B)) against the pairs gm_bf16_pack makes of op(B)^T from the
// floats (B read the other way round), word for word, orientation word included.
static void check_transposed(int K, int N, bool trans_b, int threads, bool scalar) {
  size_t n = (size_t)K * N, wb = gm_bf16_packed_size(K, N), wt = gm_bf16_packed_size(N, K);
  float *B = malloc(n * sizeof *B);
  uint32_t *bp = malloc(wb * sizeof *bp), *ref = malloc(wt * sizeof *ref), *got = malloc(wt * sizeof *got);
  if (!B || !bp || !ref || !got) { CHECK(false, "out of memory"); free(B); free(bp); free(ref); free(got); return; }
  for (size_t i = 0; i < n; i++) B[i] = value((uint32_t)(i * 3 + (size_t)K));
  memset(got, 0x5a, wt * sizeof *got);
  if (scalar) test_set_simd("scalar");
  gm_bf16_pack(B, trans_b ? K : N, trans_b, K, N, bp);
  // op(B)^T [N, K]: B as stored [K, N] read transposed, or B [N, K] as stored
  gm_bf16_pack(B, trans_b ? K : N, !trans_b, N, K, ref);
  gm_bf16_pack_transposed(bp, K, N, got, threads);
  test_set_simd(NULL);
  size_t bad = 0, first = 0;
  for (size_t w = 0; w < wt; w++)
    if (ref[w] != got[w] && !bad++) first = w;
  CHECK(bad == 0, "gm_bf16_pack_transposed K %d N %d %s, %d threads%s: %zu of %zu words differ from packing op(B)^T (first at %zu: %08x vs %08x)",
        K, N, trans_b ? "B^T" : "B", threads, scalar ? " (scalar)" : "", bad, wt, first, bad ? got[first] : 0u, bad ? ref[first] : 0u);
  free(B); free(bp); free(ref); free(got);
}

// gm_matmul_bf16_packed_t_rounded(A, pairs of X) against gm_matmul_bf16(A, X given transposed) then
// rounding, bit for bit, under the target in force.
static void check_product_t(int M, int N, int K, int threads, bool scalar) {
  float *A = malloc((size_t)M * K * sizeof *A), *X = malloc((size_t)N * K * sizeof *X);
  float *cr = malloc((size_t)M * N * sizeof *cr), *ct = malloc((size_t)M * N * sizeof *ct);
  uint32_t *Xp = malloc(gm_bf16_packed_size(N, K) * sizeof *Xp);
  if (!A || !X || !cr || !ct || !Xp) { CHECK(false, "out of memory"); free(A); free(X); free(cr); free(ct); free(Xp); return; }
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = finite_value((uint32_t)i * 7u + 5u);
  for (size_t i = 0; i < (size_t)N * K; i++) X[i] = value((uint32_t)i * 5u + 9u);
  if (scalar) test_set_simd("scalar");
  gm_matmul_bf16(A, K, X, K, true, NULL, 1.0f, cr, N, M, N, K, threads);
  gm_round_inplace(GM_BF16, cr, (size_t)M * N);
  gm_bf16_pack(X, K, false, N, K, Xp);
  int rc = gm_matmul_bf16_packed_t_rounded(A, K, Xp, ct, N, M, N, K, threads);
  test_set_simd(NULL);
  int d = test_count_diff(cr, ct, (size_t)M * N);
  CHECK(rc == 0 && d == 0, "gm_matmul_bf16_packed_t_rounded M %d N %d K %d, %s, %d threads%s: %d of %d outputs differ from the product of X^T",
        M, N, K, gm_torch_target_name(gm_torch_target_active()), threads, scalar ? " (scalar)" : "", d, M * N);
  free(A); free(X); free(cr); free(ct); free(Xp);
}

int main(void) {
  // the pairs-to-pairs transposition and the rounding pack (bf16 working copies), every level here
  const bool avx512 = gm_cpu_simd() == GM_SIMD_AVX512;
  static const int TK[] = {1, 2, 3, 31, 32, 33, 64, 97, 768}, TN[] = {1, 2, 5, 31, 32, 33, 64, 100};
  for (size_t a = 0; a < sizeof TK / sizeof TK[0]; a++)
    for (size_t b = 0; b < sizeof TN / sizeof TN[0]; b++)
      for (int t = 0; t < 2; t++)
        for (int sc = avx512 ? 0 : 1; sc < 2; sc++) {
          check_transposed(TK[a], TN[b], t == 1, 1 + (int)((a + b) % 2), sc == 1);
          check_pack_rounded(TK[a], TN[b], t == 1, sc == 1);
        }
  // every target's bf16 order (each reads B's orientation from the pairs' last word)
  static const int pt[][3] = {{1, 33, 65}, {5, 17, 31}, {40, 70, 97}, {64, 768, 768}, {70, 100, 3072}};
  for (int tt = 0; tt < GM_TT_N; tt++) {
    gm_torch_target_set((gm_torch_target)tt);
    for (size_t s = 0; s < sizeof pt / sizeof pt[0]; s++) {
      if (tt != GM_TT_INTEL_AMX && pt[s][0] * pt[s][1] * pt[s][2] > 1000000) continue; // the scalar orders: small shapes
      for (int th = 1; th <= 2; th++)
        for (int sc = avx512 ? 0 : 1; sc < 2; sc++) check_product_t(pt[s][0], pt[s][1], pt[s][2], th, sc == 1);
    }
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  if (gm_cpu_simd() != GM_SIMD_AVX512) {
    test_skip("bf16 pair packing", "no AVX-512 here: the scalar packing is the only one");
    return test_done("test_bf16_pack");
  }
  static const int Ks[] = {1, 2, 3, 16, 31, 32, 33, 64, 65, 97, 768};
  static const int Ns[] = {1, 5, 16, 17, 31, 32, 33, 64, 100};
  for (size_t a = 0; a < sizeof Ks / sizeof Ks[0]; a++)
    for (size_t b = 0; b < sizeof Ns / sizeof Ns[0]; b++)
      for (int t = 0; t < 2; t++) check_pack(Ks[a], Ns[b], t == 1);
  gm_torch_target_set(GM_TT_INTEL_AMX);
  // {200, 70, 3072} and {700, 40, 768}: more rows than one row block of the AMX kernel (160 rows at
  // K = 3072, 672 at 768), so A is packed and taken a block at a time and B's pairs packed whole first
  static const int shapes[][3] = {{1, 33, 65}, {5, 17, 31}, {40, 70, 97}, {33, 64, 768}, {200, 70, 3072}, {700, 40, 768}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 2; t++) check_product(shapes[s][0], shapes[s][1], shapes[s][2], t == 1);
  static const int ta[][3] = {{1, 33, 65}, {5, 17, 31}, {17, 40, 33}, {40, 70, 97}, {33, 64, 256}, {70, 96, 768}, {200, 40, 3072}};
  for (size_t s = 0; s < sizeof ta / sizeof ta[0]; s++)
    for (int t = 0; t < 2; t++)
      for (int th = 1; th <= 2; th++) check_product_ta_amx(ta[s][0], ta[s][1], ta[s][2], t == 1, th);
  gm_torch_target_set(GM_TT_INTEL_AVX512_BF16);
  for (size_t s = 0; s < sizeof ta / sizeof ta[0]; s++)
    for (int t = 0; t < 2; t++)
      for (int th = 1; th <= 2; th++)
        for (int sc = 0; sc < 2 && ta[s][0] > 1; sc++) check_product_ta(ta[s][0], ta[s][1], ta[s][2], t == 1, th, sc == 1);
  gm_torch_target_set(GM_TT_INTEL_AMX);
  static const int rd[][3] = {{1, 33, 65}, {5, 17, 31}, {40, 70, 97}, {70, 100, 768}, {200, 40, 3072}};
  for (size_t s = 0; s < sizeof rd / sizeof rd[0]; s++)
    for (int th = 1; th <= 2; th++)
      for (int sc = 0; sc < 2; sc++) check_rounded(rd[s][0], rd[s][1], rd[s][2], th, sc == 1);
  return test_done("test_bf16_pack");
}
