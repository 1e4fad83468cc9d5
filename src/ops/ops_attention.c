// Causal self-attention of one layer: scores, mask, softmax, probs @ v, and its backward.
// Numerics contract (layer l, 0-based; s = 1/sqrt(hd) if scale_attn_weights, / (l+1) if
// scale_by_inverse_layer; R = round to the dtype):
//   matmul-div  S = R(q@k^T); S = R(S / R(sqrt(hd))); S = R(S / (l+1))   (transformers' eager path)
//   baddbmm     S = R(alpha * q@k^T), alpha = f32(s / c), c = l+1 with qk-layer-scaling else 1
//   upcast      S = q@(f32(s)*k)^T in f32 (FMA per l), no rounding (reorder_and_upcast_attn, hf)
// Softmax input X: S, or with qk-layer-scaling S * c (in f32 when softmax is fp32, else rounded).
// Masked keys (j > query position) take the mask value; P = R(softmax_f32(X)); out = R(P @ v).
// q@k^T and P@v are torch's bmm per (batch, head) as GPT2LMHeadModel runs it (its DynamicCache
// hands the attention contiguous k and v: k^T a transposed view) (head_bmm): ATen's small kernel
// (each output one chain from zero, R(a*b) then add, alpha * acc) when T * len * hd < 400 and
// there is no cache; f16 (and bf16 under avx2) by target and operand views (oneDNN's one chain
// under AMX, ATen's reduced-type gemm elsewhere); else the dtype's torch order (gm_op_matmul),
// f32 scores passing k^T as stored without a cache. A cached step (t0 > 0) takes torch's small kernel
// too under the Intel targets (fwd_small: torch's bmm does not know the cache), and its one-row
// slices torch's one-row kernels; zen4 keeps the row-invariant orders there. Work is split by (batch,
// head) and every product is defined element by element: any thread count, the same bits.
// Backward (t0 == 0; autograd of the above; bit for bit torch 2.15 for every profile and dtype
// under intel-amx, intel-avx512-bf16, intel-avx512 and avx2 (f32 there up to T = 64),
// tests/test_attention_bwd.c): per (batch, head), each bmm as above (torch's views: dP's B, dv's
// and dk^T's A transposed) then rounded:
//   dP = R(dO @ v^T); dv = R(P^T @ dO)
//   dX = softmax backward of dP against the softmax's saved output Y (P, or for megatron in
//        f16/bf16 the f32 softmax of the scores, recomputed): (dP - sum(dP * Y)) * Y in f32, the
//        sum in ATen's lanes (softmax_bwd_row), rounded for a dtype softmax (f16/bf16 rows)
//   masked entries 0 (where / masked_fill); megatron: dS = R(dX * c) (f32 product, the .float()
//   cast's backward rounds); an f32 softmax without the coeff (hf+softmax=fp32 in f16/bf16, and
//   torch.autocast, where the bf16 scores meet the f32 mask): dS = R(dX);
//   matmul-div: dS = R(R(dX / (l+1)) / R(sqrt(hd)))
//   dq = R(dS @ k), dk = R(q^T @ dS)^T; baddbmm: each then R(x * alpha).
// The f32 softmax backward's tail (row length % 16 lanes) adds with an FMA when c->threads == 1
// and as R(dP * Y) + acc otherwise, as torch's one-thread and parallel code do: the only place
// the bits depend on the thread count.
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "ops/ops_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  bool upcast;          // transformers' _upcast_and_reordered_attn
  float alpha;          // scale inside the gemm
  float div1, div2;     // matmul-div divisors (0: none)
  float coeff;          // qk-layer-scaling multiplier before softmax (0: none)
  bool x_f32;           // softmax input kept in f32 (not rounded after the coeff multiply)
  float mask;           // masked score value
} score_rule;

// One (batch, head)'s view: T query rows after t0 cached positions, len keys; bh (batch, head)
// slices in torch's bmm.
typedef struct {
  const gm_op_ctx *c;
  int T, t0, len, bh;
} head_view;

static float finfo_min(gm_dtype dt) {
  if (dt == GM_F16) return -65504.0f;
  if (dt == GM_BF16) return gm_bf16_to_f32(0xff7f);
  return -FLT_MAX;
}

static score_rule rule_of(const gm_op_ctx *c, const gm_op_attn *a) {
  const gm_profile *p = c->profile;
  const int hd = a->C / a->NH, l = a->layer;
  score_rule s = {false, 1.0f, 0.0f, 0.0f, 0.0f, false, 0.0f};
  double scale = 1.0;
  if (a->scale_attn_weights) scale /= sqrt((double)hd);
  if (a->scale_by_inverse_layer) scale /= (double)(l + 1);
  s.upcast = p->honor_upcast_option && a->reorder_and_upcast;
  if (s.upcast) {
    s.alpha = (float)scale;
    s.x_f32 = true;
    s.mask = -FLT_MAX;
    return s;
  }
  double coeff = p->qk_layer_scaling ? (double)(l + 1) : 1.0;
  if (p->scores == GM_SCORES_BADDBMM) {
    s.alpha = (float)(scale / coeff);
  } else {
    if (a->scale_attn_weights) { // torch.full([], hd ** 0.5, dtype): the divisor itself is in the dtype
      unsigned char one[4];      // one element of the dtype, rounded once from the double
      gm_store_f64(c->dtype, one, 0, sqrt((double)hd));
      s.div1 = (float)gm_load_f64(c->dtype, one, 0);
    }
    if (a->scale_by_inverse_layer) s.div2 = (float)(l + 1);
  }
  if (p->qk_layer_scaling) s.coeff = (float)coeff;
  s.x_f32 = p->softmax == GM_SOFTMAX_F32;
  switch (p->mask) {
  case GM_MASK_FINFO: s.mask = s.x_f32 ? -FLT_MAX : finfo_min(c->dtype); break;
  case GM_MASK_NEG_1E4: s.mask = s.x_f32 ? -1e4f : gm_round_f32(c->dtype, -1e4f); break;
  case GM_MASK_NEG_INF: s.mask = -INFINITY; break;
  }
  return s;
}

// Rounds n values to the dtype unless keep_f32.
static void round_unless(const gm_op_ctx *c, bool keep_f32, float *x, int n) {
  if (!keep_f32) gm_op_round(c, x, (size_t)n);
}

// dst[c, r] = src[r, c] for r < rows, c < cols (src stride lds, dst stride ldd).
static void transpose(float *dst, int ldd, const float *src, int lds, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    for (int c2 = 0; c2 < cols; c2++) dst[(size_t)c2 * ldd + r] = src[(size_t)r * lds + c2];
}

// ATen's small bmm kernel (baddbmm_cpu_kernel, taken when rows * cols * contraction < 400): each
// output one f32 chain from zero in k order, acc = acc + R(a * b) (no FMA: measured against torch,
// f32), then alpha * acc for baddbmm. C[M, N] (ldc) = alpha * A[M, K] (lda) @ op(B) as gm_op_matmul.
static void small_bmm(const float *A, int lda, const float *B, int ldb, bool trans_b, float alpha, float *Cm, int ldc,
                      int M, int N, int K) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++)
        acc = acc + A[(size_t)i * lda + k] * (trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
      Cm[(size_t)i * ldc + j] = alpha == 1.0f ? acc : alpha * acc;
    }
}

// MKL's Intel AVX-512 kernel for torch's f32 q @ k^T of three query rows against three keys of
// 64-wide heads (a 3-token prefill; B^T with N <= 3 below the dot kernel's K; measured 2026-12-06,
// docs/numerics.md: 100% of 432 outputs on random operands): rows 0 and 2 put R(q_l k_l) in 32
// lanes and FMA q_(l+32) k_(l+32) onto them, then halve 16, 8, 4, 2, 1 (lane l + lane l + n); row 1
// runs 16 FMA chains from zero over l, l + 16, l + 32, l + 48, then halves 8, 4, 2, 1; X = R(alpha
// * r) (baddbmm's alpha on the sum, measured at 0.3 and 0.125 / 3). Other shapes of that kernel
// are not modelled. q rows at stride ldq, k [3, 64], X [3, len].
static void mkl_scores_3x3(const float *q, int ldq, const float *k, float alpha, float *X, int len) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      const float *a = q + (size_t)i * ldq, *b = k + (size_t)j * 64;
      float v[32] = {0.0f};
      int n = 32;
      if (i % 2 == 0) {
        for (int l = 0; l < 32; l++) v[l] = fmaf(a[l + 32], b[l + 32], a[l] * b[l]);
      } else {
        for (int l = 0; l < 64; l++) v[l % 16] = fmaf(a[l], b[l], v[l % 16]);
        n = 16;
      }
      for (n /= 2; n >= 1; n /= 2)
        for (int l = 0; l < n; l++) v[l] = v[l] + v[l + n];
      X[(size_t)i * len + j] = alpha * v[0];
    }
}

// Which view of its operands torch's bmm gets: A and B each as stored (row-major) or as a
// transposed view (ta, tb). The f16 orders depend on it.
// small_batch: a one-row (decode) product whose whole batch has at most 16^3 multiply-adds, which
// torch keeps in ATen's gemm even under oneDNN's f16 (the forward sets it; the backward leaves it).
typedef struct {
  bool ta, tb, small_batch;
} bmm_views;

static bool onednn_amx(void) { // oneDNN's f16 brgemm (AVX512_CORE_FP16 and up)
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  return ti && ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16;
}

// gm_op_matmul with op(B) given by data [K, N] (trans_b false) or [N, K] (true), run as want_trans
// (through a transposed copy where the two differ; on allocation failure: -1, nothing written).
static int matmul_as(const gm_op_ctx *one, bool want_trans, const float *A, int lda, const float *B, int ldb, bool trans_b,
                     float alpha, float *Cm, int ldc, int M, int N, int K) {
  if (want_trans == trans_b) {
    gm_op_matmul(one, A, lda, B, ldb, trans_b, NULL, alpha, Cm, ldc, M, N, K);
    return 0;
  }
  const int rows = trans_b ? N : K, cols = trans_b ? K : N;
  float *Bt = malloc((size_t)N * K * sizeof(float));
  if (!Bt) return -1;
  transpose(Bt, rows, B, ldb, rows, cols);
  gm_op_matmul(one, A, lda, Bt, rows, want_trans, NULL, alpha, Cm, ldc, M, N, K);
  free(Bt);
  return 0;
}

// torch.bmm / baddbmm(beta = 0, alpha) of one (batch, head), not rounded; A [M, K] (lda), op(B)
// as for gm_op_matmul, v the views torch passes:
//   - ATen's small kernel when M * N * K < 400 and small_ok (fwd_small in the forward);
//   - f16 under a target whose oneDNN ISA is AMX: oneDNN's f16 matmul, one f32 chain over k
//     whatever the views (gm_matmul_f16_torch's order for B transposed there); one row (a decode
//     step) its one-row kernels: q @ k^T (B a transposed view) 16 lane chains
//     (gm_matmul_f16_row16), P @ v (B as stored) one chain over k;
//   - f16 elsewhere: ATen's reduced-type gemm, by the views (measured under intel-avx512-bf16):
//     A transposed, B as stored: one chain over k (small_bmm's order, products exact); A as stored,
//     B transposed: the f32-arithmetic dot (gm_matmul_f16_torch, B transposed); both as stored or
//     both transposed: four partial sums (gm_matmul_f16_torch, B as stored);
//   - else the dtype's torch-order product (gm_op_matmul; on ctx one: one thread).
// Whether head_bmm takes ATen's small kernel, and whether it takes the dtype's plain torch-order
// product (gm_op_matmul) otherwise: not f16, and not bf16 where oneDNN has no bf16 (ATen's gemm).
static bool bmm_small(bool small_ok, int M, int N, int K) { return small_ok && (int64_t)M * N * K < 400; }

// Whether torch's bmm of h's batch, slice multiply-adds per (batch, head), has at most 16^3
// multiply-adds in all: then it stays in ATen's gemm even where oneDNN takes the dtype.
static bool batch_small(const head_view *h, int64_t slice) { return (int64_t)h->bh * slice <= 4096; }

// Whether the forward's bmm of one (batch, head), slice multiply-adds, takes ATen's small kernel as
// torch's does: fewer than 400 multiply-adds, unless the whole batch goes to oneDNN first (f16
// under oneDNN's f16, bf16 under AVX512_CORE and up: more than 16^3 multiply-adds over the batch);
// in a cached step (its bmm does not know the cache) only under the Intel targets, whose decode
// steps follow torch's (check_fidelity.py --decode: meg f16 after a 3-token prompt missed from 6
// keys under intel-avx512-bf16 without it, and under intel-avx512-fp16 with it but without the
// batch rule); zen4 keeps a decoded row equal to its full-forward row there by choice.
static bool fwd_small(const head_view *h, int64_t slice) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  if (slice >= 400) return false;
  if (h->t0 > 0 && !(ti && (ti->mkl == GM_MKL_SGEMM_INTEL_AVX512 || ti->mkl == GM_MKL_SGEMM_INTEL_AVX2))) return false;
  const gm_dtype dt = h->c->dtype;
  const bool onednn = ti && ((dt == GM_F16 && ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16) ||
                             (dt == GM_BF16 && ti->onednn >= GM_ONEDNN_AVX512_CORE));
  return !onednn || batch_small(h, slice);
}
static bool bmm_plain(const gm_op_ctx *one) {
  const gm_onednn_isa isa = gm_torch_target_get_info(gm_torch_target_active())->onednn;
  return one->dtype != GM_F16 && !(one->dtype == GM_BF16 && isa == GM_ONEDNN_AVX2);
}

static int head_bmm(const gm_op_ctx *one, bool small_ok, bmm_views v, const float *A, int lda, const float *B, int ldb,
                    bool trans_b, float alpha, float *Cm, int ldc, int M, int N, int K) {
  if (bmm_small(small_ok, M, N, K)) {
    small_bmm(A, lda, B, ldb, trans_b, alpha, Cm, ldc, M, N, K);
    return 0;
  }
  if (bmm_plain(one)) {
    gm_op_matmul(one, A, lda, B, ldb, trans_b, NULL, alpha, Cm, ldc, M, N, K);
    return 0;
  }
  const bool amx = one->dtype == GM_F16 && onednn_amx() && !(M == 1 && v.small_batch);
  if (amx && M == 1 && !v.ta && v.tb == trans_b) { // a decode step: oneDNN's one-row kernels (check_fidelity.py --decode)
    if (trans_b) gm_matmul_f16_row16(A, B, ldb, NULL, alpha, Cm, N, K); // q @ k^T: 16 lane chains
    else gm_matmul_f16_onednn(A, lda, false, B, ldb, false, NULL, alpha, Cm, ldc, 1, N, K, 1); // P @ v: one chain
    return 0;
  }
  if (!amx && v.ta && !v.tb) {
    small_bmm(A, lda, B, ldb, trans_b, alpha, Cm, ldc, M, N, K);
    return 0;
  }
  if (matmul_as(one, amx || (!v.ta && v.tb), A, lda, B, ldb, trans_b, alpha, Cm, ldc, M, N, K) == 0) return 0;
  if (!amx) return -1;
  small_bmm(A, lda, B, ldb, trans_b, alpha, Cm, ldc, M, N, K); // AMX's chain, without the copy
  return 0;
}

// X[T, len] = alpha * q @ k^T in f32 as torch's f32 baddbmm(beta = 0) computes it (transformers'
// upcast path; q, k hold f16 values, so every product is exact in f32): one FMA per l in order,
// from zero; then the scaling, by where torch runs it (measured with f16-valued operands of wide
// exponent range, hd 8/16/64, T 7-64, 1 thread): ATen's small kernel (T * len * hd < 400) and
// MKL's Intel AVX-512 sgemm scale the sum, alpha * acc; MKL on Zen 4 scales k first, alpha * k
// rounded, then the chain. MKL's AVX2 sgemm scales the sum at T 16, hd 8 and scales k at T 64,
// hd 8 (100% each); between them neither order holds everywhere (T 25: 98.6%): the sum is scaled
// up to 2048 multiply-adds per head, k above (`info` lists it among avx2's f32 limits).
static void upcast_scores(const head_view *h, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  const int64_t work = (int64_t)h->T * h->len * hd;
  const bool scale_sum = work < 400 || (ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX512) ||
                         (ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX2 && work <= 2048);
  for (int i = 0; i < h->T; i++)
    for (int j = 0; j < h->len; j++) {
      float acc = 0.0f;
      if (scale_sum) {
        for (int l = 0; l < hd; l++) acc = fmaf(q[(size_t)i * ldq + l], k[(size_t)j * hd + l], acc);
        acc = alpha * acc;
      } else {
        for (int l = 0; l < hd; l++) acc = fmaf(q[(size_t)i * ldq + l], alpha * k[(size_t)j * hd + l], acc);
      }
      X[(size_t)i * h->len + j] = acc;
    }
}

// Whether MKL's batched sgemm (torch's f32 baddbmm of b slices T x hd x T, a prefill's scores) folds
// alpha into k^T in every slice on t threads, where one thread per slice multiplies the sums (T <
// 192): only on more threads than slices, from T = 64, and below 2 b threads only where ceil(b T /
// t) >= 64, at 2 b for even T too (measured under the Intel AVX-512 kernel, head sizes 32 and 64,
// b 4, 12, 16, 24, t b + 1 .. 3 b, T 50..190: tools/ref/gen_attention_fold_goldens.py's cases and
// scans like them). A head size hd above 64 folds from T = hd on the same terms (hd 80, 96 and 128
// with b 8 on 9..24 threads, T 60..135: 8 x 99 x 128 on 24 threads also folds, not modelled;
// above 128 not measured: false); b 1..3 run other rules (b 1 on 2 threads folds at T 65): not modelled.
static bool batch_folds(int b, int T, int hd, int t) {
  if (hd > 128 || T >= 192 || T < (hd > 64 ? hd : 64) || t <= b || b < 4) return false;
  const bool rows = ((int64_t)b * T + t - 1) / t >= 64;
  return t > 2 * b || rows || (t == 2 * b && T % 2 == 0);
}

// X[i, j] = alpha * q_i . k_j (f32 accumulation, gm_op_matmul) for at least the keys row i sees
// (j <= t0 + i), in blocks of 64 query rows (the last up to 65: a block of one row would run MKL's
// one-row kernel), each computing keys [0, t0 + its last row]: about half the products of the full
// [T, len] square for a prefill. Entries past a block's keys are left as they were. Every dtype's
// product of two rows or more is defined element by element, so any such block gives the bits of
// the full square, with three exceptions without a cache: ATen's small kernel when T * len * hd < 400
// (small_bmm, any dtype), and in f32 (k^T passed as stored): MKL's Intel AVX-512 packed path,
// which folds alpha into B, for T and len >= 192 (baddbmm's alpha != 1 only;
// gm_f32_torch_blocks): the full square in one call; under avx2 always the full square (MKL's
// AVX2 row groups of six count from the top) with k passed as B transposed, as torch's view of
// k^T reaches MKL (its big-product kernels start at 56 rows and columns for B^T, at 72 as stored),
// alpha folded into k (R(alpha * k)) for T and len >= 56 (measured under
// MKL_ENABLE_INSTRUCTIONS=AVX2: 48..55 multiply the sums, 56.. fold); and
// MKL's batched sgemm on more torch threads than slices, which folds alpha into k^T (batch_folds).
// One thread: the caller runs heads in parallel.
static int causal_scores(const head_view *h, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  const int T = h->T, len = h->len, t0 = h->t0, rb = 64;
  gm_op_ctx one = *h->c;
  one.threads = 1;
  one.bmm_slice = true; // torch runs these as one bmm over the batch and heads
  one.bmm_batch = h->bh;
  one.bmm_threads = h->c->threads;
  if (fwd_small(h, (int64_t)T * len * hd)) { // ATen's small bmm kernel: the whole square
    small_bmm(q, ldq, k, hd, true, alpha, X, len, T, len, hd);
    return 0;
  }
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  if (one.dtype == GM_F32 && t0 == 0 && T == 3 && len == 3 && hd == 64 && ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX512) {
    mkl_scores_3x3(q, ldq, k, alpha, X, len); // a 3-token prefill under MKL's Intel AVX-512 sgemm
    return 0;
  }
  float *kT = NULL;
  const bool avx2 = ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX2, intel = ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX512;
  if (t0 == 0 && one.dtype == GM_F32 && avx2) {
    // avx2: MKL groups the rows from the top (in row blocks): the square in one call, k^T passed as
    // torch's view passes it (B transposed: the big-product kernels from 56 rows and columns)
    const float *kb = k;
    if (T >= 56 && len >= 56 && alpha != 1.0f) { // MKL's AVX2 kernels fold alpha into B there
      if (!(kT = malloc((size_t)hd * len * sizeof(float)))) return -1;
      for (size_t i = 0; i < (size_t)hd * len; i++) kT[i] = alpha * k[i];
      kb = kT;
      alpha = 1.0f;
    }
    gm_op_matmul(&one, q, ldq, kb, hd, true, NULL, alpha, X, len, T, len, hd);
    free(kT);
    return 0;
  }
  if (t0 == 0 && one.dtype == GM_F32) {
    if (!(kT = malloc((size_t)hd * len * sizeof(float)))) return -1;
    transpose(kT, len, k, hd, len, hd);
    if (intel && alpha != 1.0f && batch_folds(h->bh, T, hd, h->c->threads)) {
      for (size_t i = 0; i < (size_t)hd * len; i++) kT[i] = alpha * kT[i];
      alpha = 1.0f;
    }
    if (T >= 192 && len >= 192 && alpha != 1.0f) {
      gm_op_matmul(&one, q, ldq, kT, len, false, NULL, alpha, X, len, T, len, hd);
      free(kT);
      return 0;
    }
  }
  const bmm_views v = {false, true, batch_small(h, (int64_t)T * len * hd)}; // k^T: a view of the cache's k
  int rc = 0;
  for (int i0 = 0, i1; i0 < T && !rc; i0 = i1) {
    i1 = T - i0 <= rb + 1 ? T : i0 + rb; // never a last block of one row: MKL's one-row kernel would run
    const float *qi = q + (size_t)i0 * ldq;
    float *Xi = X + (size_t)i0 * len;
    if (kT) gm_op_matmul(&one, qi, ldq, kT, len, false, NULL, alpha, Xi, len, i1 - i0, t0 + i1, hd);
    else rc = head_bmm(&one, false, v, qi, ldq, k, hd, true, alpha, Xi, len, i1 - i0, t0 + i1, hd);
  }
  free(kT);
  return rc;
}

// Softmax input X [T, len] of one (batch, head): masked entries (j > t0 + i) set to 0.
static int head_scores(const head_view *h, const score_rule *s, const float *q, int ldq, const float *k, int hd,
                       float *X) {
  const gm_op_ctx *c = h->c;
  const int T = h->T, len = h->len;
  if (s->upcast && c->dtype != GM_F32) upcast_scores(h, s->alpha, q, ldq, k, hd, X);
  else if (causal_scores(h, s->alpha, q, ldq, k, hd, X)) return -1;
  for (int i = 0; i < T; i++) {
    float *x = X + (size_t)i * len;
    int vis = h->t0 + i + 1;
    round_unless(c, s->upcast, x, vis);
    if (s->div1 != 0.0f) {
      gm_div_row_f32(x, vis, s->div1);
      round_unless(c, false, x, vis);
    }
    if (s->div2 != 0.0f) {
      gm_div_row_f32(x, vis, s->div2);
      round_unless(c, false, x, vis);
    }
    if (s->coeff != 0.0f) {
      for (int j = 0; j < vis; j++) x[j] = x[j] * s->coeff;
      round_unless(c, s->x_f32, x, vis);
    }
    if (vis < len) memset(x + vis, 0, (size_t)(len - vis) * sizeof(float));
  }
  return 0;
}

// P = R(softmax(X)) row by row in place, masked entries stay 0.
// X = softmax of the rows of S (row by row: each copied while it is in cache; S may be X).
static void head_softmax(const head_view *h, const score_rule *s, const float *S, float *X) {
  for (int i = 0; i < h->T; i++) {
    float *x = X + (size_t)i * h->len;
    if (S != X) memcpy(x, S + (size_t)i * h->len, (size_t)h->len * sizeof(float));
    int vis = h->t0 + i + 1;
    gm_softmax_row_f32(x, vis, h->len - vis, s->mask, h->c->dtype != GM_F32 && !s->x_f32);
    gm_op_round(h->c, x, (size_t)vis);
  }
}

int gm_op_attention_fwd(const gm_op_ctx *c, const gm_op_attn *a, float *out, float *scores, float *probs,
                        const float *qkv) {
  const int D = a->C, H = a->NH, hd = D / H, B = a->B, T = a->T, len = a->t0 + a->T, l = a->layer;
  const size_t N = (size_t)B * T, per_head = (size_t)T * len;
  float *kl = a->k_cache, *vl = a->v_cache;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int hh = 0; hh < H; hh++) {
        const float *row = qkv + ((size_t)b * T + t) * 3 * D;
        size_t at = (((size_t)b * H + hh) * a->max_t + a->t0 + t) * hd;
        memcpy(kl + at, row + D + hh * hd, (size_t)hd * sizeof(float));
        memcpy(vl + at, row + 2 * D + hh * hd, (size_t)hd * sizeof(float));
      }
  const score_rule s = rule_of(c, a);
  const head_view hv = {c, T, a->t0, len, B * H};
  int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads) reduction(| : failed)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    failed |= head_scores(&hv, &s, qkv + (size_t)b * T * 3 * D + hh * hd, 3 * D, kl + (size_t)bh * a->max_t * hd, hd,
                          scores + bh * per_head) != 0;
  }
  if (failed) return gm_fail("attention: out of memory");
  const int64_t shape[4] = {B, H, T, len};
  if (gm_op_probe(c, l, GM_PT_SCORES, scores, 4, shape)) return -1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads)
  for (int bh = 0; bh < B * H; bh++) head_softmax(&hv, &s, scores + bh * per_head, probs + bh * per_head);
  if (gm_op_probe(c, l, GM_PT_PROBS, probs, 4, shape)) return -1;
  gm_op_ctx one = *c;
  one.threads = 1;
  one.bmm_slice = true; // torch runs these as one bmm over the batch and heads
  one.bmm_batch = B * H;
  one.bmm_threads = c->threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads) reduction(| : failed)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    const float *P = probs + bh * per_head, *V = vl + (size_t)bh * a->max_t * hd;
    float *O = out + (size_t)b * T * D + hh * hd;
    const int64_t slice = (int64_t)T * len * hd;
    failed |= head_bmm(&one, fwd_small(&hv, slice), (bmm_views){false, false, batch_small(&hv, slice)}, P, len, V, hd,
                       false, 1.0f, O, D, T, hd, len) != 0;
  }
  if (failed) return gm_fail("attention: out of memory");
  gm_op_round(c, out, N * D);
  return 0;
}

// ---- backward -------------------------------------------------------------------------------------

// ATen's softmax backward of one row (_softmax_backward_data, last dim), in place: dy[0..n)
// becomes (dy - sum(dy * y)) * y, in W lanes (16 under ATen's AVX512 capability, 8 under AVX2).
// f32 kernel (reduced = false): lane l starts at R(dy_l * y_l) and adds the rounded products of
// its later full vectors; the tail (n % W lanes) adds with an FMA when tail_fma (torch's
// one-thread code) else R(dy * y) then an add (its parallel region); then the lanes fold as a tree
// (l ^ W/2, ..., ^ 1). A row shorter than W: the rounded products added one by one in order.
// Reduced (f16/bf16 rows, f32 opmath; products exact): 2W-element steps as two W-lane halves, the
// tail into the first half then the second, halves added, the same tree; shorter than 2W: the
// halves' lanes added pairwise (lanes past W onto lanes 0..), then the W (or n <= W) lanes one by
// one. Not rounded here.
static int aten_lanes(void) { return gm_torch_target_get_info(gm_torch_target_active())->aten == GM_ATEN_AVX512 ? 16 : 8; }

static float tree_fold(const float *v, int W) {
  float w[16], u[16];
  memcpy(w, v, (size_t)W * sizeof(float));
  for (int s = W / 2; s >= 1; s >>= 1) {
    for (int i = 0; i < W; i++) u[i] = w[i] + w[i ^ s];
    memcpy(w, u, (size_t)W * sizeof(float));
  }
  return w[0];
}

static float seq_sum(const float *v, int n) {
  float s = v[0];
  for (int i = 1; i < n; i++) s = s + v[i];
  return s;
}

static float softmax_bwd_dot_f32(const float *dy, const float *y, int n, int W, bool tail_fma) {
  float acc[16];
  if (n < W) {
    for (int i = 0; i < n; i++) acc[i] = dy[i] * y[i];
    return seq_sum(acc, n);
  }
  for (int l = 0; l < W; l++) acc[l] = dy[l] * y[l];
  int d = W;
  for (; d + W <= n; d += W)
    for (int l = 0; l < W; l++) acc[l] = acc[l] + dy[d + l] * y[d + l];
  for (int l = 0; d + l < n; l++) acc[l] = tail_fma ? fmaf(dy[d + l], y[d + l], acc[l]) : acc[l] + dy[d + l] * y[d + l];
  return tree_fold(acc, W);
}

static float softmax_bwd_dot_reduced(const float *dy, const float *y, int n, int W) {
  float a0[16], a1[16];
  if (n < 2 * W) {
    for (int i = 0; i < W && i < n; i++) a0[i] = dy[i] * y[i];
    if (n <= W) return seq_sum(a0, n);
    for (int i = 0; i + W < n; i++) a0[i] = a0[i] + dy[W + i] * y[W + i];
    return seq_sum(a0, W);
  }
  for (int l = 0; l < W; l++) {
    a0[l] = dy[l] * y[l];
    a1[l] = dy[W + l] * y[W + l];
  }
  int d = 2 * W;
  for (; d + 2 * W <= n; d += 2 * W)
    for (int l = 0; l < W; l++) {
      a0[l] = a0[l] + dy[d + l] * y[d + l];
      a1[l] = a1[l] + dy[d + W + l] * y[d + W + l];
    }
  int r = n - d;
  for (int l = 0; l < W && l < r; l++) a0[l] = a0[l] + dy[d + l] * y[d + l];
  for (int l = 0; l + W < r; l++) a1[l] = a1[l] + dy[d + W + l] * y[d + W + l];
  for (int l = 0; l < W; l++) a0[l] = a0[l] + a1[l];
  return tree_fold(a0, W);
}

static void softmax_bwd_row(float *dy, const float *y, int n, bool reduced, bool tail_fma) {
  const int W = aten_lanes();
  float s = reduced ? softmax_bwd_dot_reduced(dy, y, n, W) : softmax_bwd_dot_f32(dy, y, n, W, tail_fma);
  for (int i = 0; i < n; i++) dy[i] = (dy[i] - s) * y[i];
}

// One torch.bmm of a backward (head_bmm, torch's views v), rounded to the dtype. 0, or -1 (out of memory).
static int bwd_bmm(const gm_op_ctx *one, bmm_views v, const float *A, int lda, const float *B, int ldb, bool trans_b,
                   float *Cm, int ldc, int M, int N, int K) {
  if (head_bmm(one, true, v, A, lda, B, ldb, trans_b, 1.0f, Cm, ldc, M, N, K)) return -1;
  gm_round_rows(one->dtype, Cm, (size_t)ldc, M, N);
  return 0;
}

// A backward bmm whose A is a transposed view, op(A) = A^T for A [K, M] (lda): where head_bmm would
// take the plain bf16 product, gm_op_matmul_t packs A^T straight from A (gm_matmul_bf16_ta, the
// same bits as the product of A^T made contiguous); in f32 under MKL's AVX2 sgemm (avx2 target)
// gm_op_matmul_t runs its order for A transposed (blocks of 96: GM_F32_BLOCKS_AVX2_96); else A^T
// is copied into tbuf and run through bwd_bmm. Rounded to the dtype either way. 0, or -1 (out of
// memory).
static int bwd_bmm_ta(const gm_op_ctx *one, bmm_views v, const float *A, int lda, float *tbuf, const float *B, int ldb,
                      float *Cm, int ldc, int M, int N, int K) {
  const bool mkl_avx2 = gm_torch_target_get_info(gm_torch_target_active())->mkl == GM_MKL_SGEMM_INTEL_AVX2;
  if ((one->dtype == GM_BF16 || (one->dtype == GM_F32 && mkl_avx2)) && !bmm_small(true, M, N, K) && bmm_plain(one)) {
    if (gm_op_matmul_t(one, A, lda, true, B, ldb, false, NULL, 1.0f, Cm, ldc, M, N, K)) return -1;
    gm_round_rows(one->dtype, Cm, (size_t)ldc, M, N);
    return 0;
  }
  transpose(tbuf, K, A, lda, K, M);
  return bwd_bmm(one, v, tbuf, K, B, ldb, false, Cm, ldc, M, N, K);
}

int gm_op_attention_bwd(const gm_op_ctx *c, const gm_op_attn *a, float *dqkv, float *dscores, const float *dout,
                        const float *qkv, const float *probs, const float *scores) {
  const int D = a->C, H = a->NH, hd = D / H, B = a->B, T = a->T, len = a->t0 + a->T;
  if (a->t0 != 0) return gm_fail("attention backward: t0 = %d (training runs without a cache)", a->t0);
  const score_rule s = rule_of(c, a);
  if (s.upcast) return gm_fail("attention backward: reorder_and_upcast_attn is not reproduced");
  const bool f32_softmax = c->dtype == GM_F32 || s.x_f32; // ATen's f32 kernel (megatron: the f32 softmax)
  const bool recompute = c->dtype != GM_F32 && s.x_f32;   // softmax's saved output is its f32 result
  if (recompute && !scores) return gm_fail("attention backward: the f32 softmax needs the forward's scores");
  const bool baddbmm = c->profile->scores == GM_SCORES_BADDBMM;
  const size_t per_head = (size_t)T * len;
  const size_t scratch = (size_t)hd * len + (size_t)(len > hd ? len : hd) * T + (recompute ? per_head : 0);
  int failed = 0;
  gm_op_ctx one = *c;
  one.threads = 1;
  one.bmm_slice = true; // torch runs these as one bmm over the batch and heads
  one.bmm_batch = B * H;
  one.bmm_threads = c->threads;
  // one scratch per thread for all its heads (a fresh one per head was a fresh mapping each time)
#pragma omp parallel num_threads(c->threads) reduction(| : failed)
  {
    float *buf = malloc(scratch * sizeof(float));
    failed |= buf == NULL;
#pragma omp for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
      if (!buf) continue;
      float *tmp = buf, *pT = tmp + (size_t)hd * len, *y32 = pT + (size_t)(len > hd ? len : hd) * T;
      const int b = bh / H, hh = bh % H, ld = 3 * D;
      const float *q = qkv + (size_t)b * T * ld + hh * hd, *k = q + D, *v = q + 2 * D;
      const float *dO = dout + (size_t)b * T * D + hh * hd;
      float *dq = dqkv + (size_t)b * T * ld + hh * hd, *dk = dq + D, *dv = dq + 2 * D;
      const float *P = probs + bh * per_head;
      float *dS = dscores + bh * per_head;
      // dP = dO @ v^T; dv = P^T @ dO
      int rc = bwd_bmm(&one, (bmm_views){false, true, false}, dO, D, v, ld, true, dS, len, T, len, hd);
      rc |= bwd_bmm_ta(&one, (bmm_views){true, false, false}, P, len, pT, dO, D, dv, ld, len, hd, T);
      // softmax backward (the saved output: P, or megatron's f32 softmax of the scores)
      const float *Y = P;
      if (recompute) {
        memcpy(y32, scores + bh * per_head, per_head * sizeof(float));
        for (int i = 0; i < T; i++) gm_softmax_row_f32(y32 + (size_t)i * len, i + 1, len - i - 1, s.mask, false);
        for (int i = 0; i < T; i++) memset(y32 + (size_t)i * len + i + 1, 0, (size_t)(len - i - 1) * sizeof(float));
        Y = y32;
      }
      for (int i = 0; i < T; i++) {
        float *x = dS + (size_t)i * len;
        softmax_bwd_row(x, Y + (size_t)i * len, len, !f32_softmax, c->threads == 1);
        // rounded here for a dtype softmax, and for an f32 softmax in a dtype run without the coeff
        // (hf+softmax=fp32, autocast: the f32 scores' cast/promotion backward rounds dX itself)
        if (s.coeff == 0.0f) gm_op_round(&one, x, (size_t)len);
        memset(x + i + 1, 0, (size_t)(len - i - 1) * sizeof(float)); // the mask's where / masked_fill
        if (s.coeff != 0.0f) {                                        // x = f32(S) * L: its backward, then f32(S)'s
          for (int j = 0; j <= i; j++) x[j] = x[j] * s.coeff;
          gm_op_round(&one, x, (size_t)len);
        }
        if (s.div2 != 0.0f) { // S / (l+1), then S / R(sqrt(hd)): grad / divisor, rounded
          gm_div_row_f32(x, i + 1, s.div2);
          gm_op_round(&one, x, (size_t)(i + 1));
        }
        if (s.div1 != 0.0f) {
          gm_div_row_f32(x, i + 1, s.div1);
          gm_op_round(&one, x, (size_t)(i + 1));
        }
      }
      // dq = dS @ (k^T)^T, k^T a transposed view of the cache's contiguous k, so its transpose is k
      // as stored; dk^T = q^T @ dS, q^T a transposed view
      rc |= bwd_bmm(&one, (bmm_views){false, false, false}, dS, len, k, ld, false, dq, ld, T, hd, len);
      rc |= bwd_bmm_ta(&one, (bmm_views){true, false, false}, q, ld, pT, dS, len, tmp, len, hd, len, T); // q^T [hd, T]
      transpose(dk, ld, tmp, len, hd, len);
      failed |= rc != 0;
      if (baddbmm && s.alpha != 1.0f) { // baddbmm's backward: R(bmm) * alpha, rounded
        for (int i = 0; i < T; i++) {
          float *r1 = dq + (size_t)i * ld, *r2 = dk + (size_t)i * ld;
          for (int j = 0; j < hd; j++) r1[j] = r1[j] * s.alpha, r2[j] = r2[j] * s.alpha;
          gm_op_round(&one, r1, (size_t)hd);
          gm_op_round(&one, r2, (size_t)hd);
        }
      }
    }
    free(buf);
  }
  if (failed) return gm_fail("attention backward: out of memory");
  return 0;
}
