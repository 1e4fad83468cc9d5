// Which torch CPU target gptmeg's kernels reproduce bit for bit, op by op and dtype by dtype, and
// the PyTorch kernel family each op runs there. A row says "exact" only where the target's
// goldens (tests/golden/targets/) are matched by the tests; elsewhere the kernels run zen4's
// order and `gptmeg info`, the report and diverge say so (never a silent fallback).
// tests/test_target_matmul_f32.c, test_target_matmul_lowp.c (the matmuls) and tests/test_target_aten.c (softmax, F.gelu, the op-by-op
// GELUs) hold this table to the goldens both ways: an exact row must match, and a row that is not
// exact must not match everything (then the table is stale). Layer norm's goldens hold the same
// values under every target (the files differ only in the order of their metadata keys).
// The op-by-op GELUs' f32 tanh/erf/exp are MKL VML's (GPTMEG_TORCH_MKL): exact where that MKL runs
// on a CPU of the target's class (an Intel AVX-512 CPU; capped to AVX2 for the avx2 target).
#include "gptmeg/kernels.h"

#include <stdio.h>

const char *gm_kernel_op_name(gm_kernel_op op) {
  static const char *n[GM_KOP_N] = {"matmul", "layer_norm", "softmax", "F.gelu", "gelu ops"};
  return (unsigned)op < GM_KOP_N ? n[op] : "?";
}

// The PyTorch kernel behind op in dtype dt under target t, in words.
static const char *family(const gm_torch_target_info *ti, gm_kernel_op op, gm_dtype dt) {
  switch (op) {
  case GM_KOP_MATMUL:
    if (dt == GM_F32) return ti->mkl == GM_MKL_SGEMM_AMD_AVX512 ? "MKL sgemm, AMD AVX-512 kernel"
                             : ti->mkl == GM_MKL_SGEMM_INTEL_AVX512 ? "MKL sgemm, Intel AVX-512 kernel"
                                                                    : "MKL sgemm, Intel AVX2 kernel";
    if (dt == GM_BF16) return ti->onednn == GM_ONEDNN_AMX ? "oneDNN brgemm on AMX tiles (bf16)"
                              : ti->onednn == GM_ONEDNN_AVX2 ? "oneDNN gemm, AVX2 (bf16 widened)"
                              : ti->onednn == GM_ONEDNN_AVX512_CORE ? "oneDNN gemm, AVX512_CORE (bf16 widened)"
                                                                    : "oneDNN gemm, AVX512_CORE_BF16 (vdpbf16ps)";
    return ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16 ? "oneDNN, AVX512_CORE_FP16 / AMX-FP16 (f16)" : "ATen cpublas f16 gemm";
  case GM_KOP_LAYERNORM: return ti->aten == GM_ATEN_AVX512 ? "ATen layer_norm, AVX512 Vectorized" : "ATen layer_norm, AVX2 Vectorized";
  case GM_KOP_SOFTMAX: return ti->aten == GM_ATEN_AVX512 ? "ATen softmax, AVX512 (SLEEF exp)" : "ATen softmax, AVX2 (SLEEF exp)";
  case GM_KOP_GELU_ATEN: // approximate='none' (n >= 2) in oneDNN where it takes the dtype; tanh always ATen
    if (dt == GM_F32) return ti->onednn >= GM_ONEDNN_AVX512_CORE ? "oneDNN eltwise gelu_erf (minimax), ATen GELU (tanh), AVX512"
                                                                 : "oneDNN eltwise gelu_erf (AVX2, Abramowitz-Stegun), ATen GELU (tanh), AVX2";
    if (dt == GM_BF16 && ti->onednn >= GM_ONEDNN_AVX512_CORE_BF16) return "oneDNN eltwise gelu_erf (vcvtneps2bf16), ATen GELU (tanh)";
    if (dt == GM_BF16 && ti->onednn >= GM_ONEDNN_AVX512_CORE) return "oneDNN eltwise gelu_erf (emulated bf16 rounding), ATen GELU (tanh)";
    if (dt == GM_F16 && ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16) return "oneDNN eltwise gelu_erf (f16), ATen GELU (tanh)";
    return ti->aten == GM_ATEN_AVX512 ? "ATen GELU, AVX512 Vectorized" : "ATen GELU, AVX2 Vectorized";
  case GM_KOP_GELU_OPS:
    return ti->aten == GM_ATEN_AVX512 ? "ATen elementwise ops, AVX512 (MKL VML tanh/erf in f32)"
                                      : "ATen elementwise ops, AVX2 (MKL VML tanh/erf in f32)";
  default: return "?";
  }
}

// Not reproduced yet: one bit per dtype (f32, f16, bf16) per op, per target. From the targets'
// goldens (tests/golden/targets/, tests/test_target_*.c).
enum { F32 = 1, F16 = 2, BF16 = 4, ALL = 7 };
static const unsigned NOT_EXACT[GM_TT_N][GM_KOP_N] = {
    [GM_TT_ZEN4] = {0, 0, 0, 0, 0},
    [GM_TT_INTEL_AMX] = {0}, // matmul f32, f16, bf16: PARTIAL below
    [GM_TT_INTEL_AVX512_BF16] = {0},
    [GM_TT_INTEL_AVX512] = {0},
    [GM_TT_AVX2] = {0}, // matmul f32, bf16: PARTIAL below
};

// Reproduced on the goldens' shapes but known to part from torch elsewhere: bits per dtype, and what
// is missing (the measurement behind it is in docs/numerics.md, "Torch CPU targets").
static const unsigned PARTIAL[GM_TT_N][GM_KOP_N] = {
    [GM_TT_INTEL_AMX] = {[GM_KOP_MATMUL] = F32 | F16 | BF16},
    [GM_TT_INTEL_AVX512_BF16] = {[GM_KOP_MATMUL] = F32},
    [GM_TT_INTEL_AVX512] = {[GM_KOP_MATMUL] = F32 | BF16},
    [GM_TT_AVX2] = {[GM_KOP_MATMUL] = F32 | BF16},
    [GM_TT_INTEL_AVX512_FP16] = {[GM_KOP_MATMUL] = F32 | F16},
};
static const char *partial_limits(gm_torch_target t, gm_kernel_op op, gm_dtype dt) {
  if (t == GM_TT_AVX2 && op == GM_KOP_MATMUL && dt == GM_F32)
    return "a 3-token prefill's 3x3x64 q @ k^T (37% of the logits), N of 1 and 2, the "
           "4..6-row kernels' "
           "leftover columns at large N (e.g. 55x768x767 B^T), "
           "2-thread orders outside the measured splits (K and N multiples of 64 at the grids' points, e.g. odd "
           "shapes and N <= 352 above 128 rows) and A transposed on 2 threads; on 3 or more threads above 384 "
           "rows, MKL's K cut below 49 rows, grids below 160 columns where M < N (below 128 where M >= N), "
           "the row parts below N 56, K below 256 as 2-D products, "
           "A transposed, and the "
           "batched P @ V on more threads than heads (16 threads, 12 heads, T 200; a 4-head model on 6 and 8) "
           "(the 1-thread order, or the row parts, runs), "
           "and the scaling of reorder_and_upcast_attn's f32 baddbmm between 2048 and about 32768 "
           "multiply-adds per head are not reproduced (1 thread: GPT-2 124M's f32 logits bit-identical at 27 token "
           "counts from 2 to 96 (not 3), at 122, 128, 150, 256 and 300, on 2 threads at T 7, 13, 19, 25, 29, 32, 64, 128 and 300; 256- and 384-wide 65-character models on 2 threads at T 8 to 128, its gradients at B 1 T 77 and 100, B 2 T 64, B 4 T 128 and 256 and on 2 threads at B 2 T 64; its logits on 3, 4, 5, 6, 8 and 12 threads at every T measured from 1 to 512 and on 16 at T 300)";
  if (op == GM_KOP_MATMUL && dt == GM_F32)
    return "the B^T kernel for N <= 3 below K = 24 M beyond a 3-token prefill's 3x3x64 q @ k^T, the K split's "
           "region beyond GPT-2's shapes (e.g. 47x1691x382 and 323x1981x316 on 2 threads), on 4 or more threads "
           "beyond the measured rows (6 and 10..16 threads past K / 8), below 32 columns, from 176 rows below 379 "
           "columns (e.g. 300x1600x300 on 5), odd thread counts that cut K for many rows (e.g. 323x1981x316 on 3), "
           "few rows against N <= 64 t on 8 or more threads where MKL also splits the rows into 3 or more K parts "
           "or the work is small (e.g. 16x768x96 B^T and 2x768x256 on 32; the row-grouped K cut is reproduced "
           "elsewhere, 8 to 64 threads, in two parts at any width), a B^T last column chunk of 3 columns, or of 1 "
           "or 2 outside MKL's narrow kernel's measured shapes (GPT-2 XL's lm_head's last column at a few tokens on "
           "30, 32 and 40 threads; a 65-column lm_head's last column at 32 to 63 tokens on 40 and more, at 17 to 31 "
           "on 9, 18 and 22), baddbmm's alpha folded on more "
           "threads than heads beyond head size 128 or below 4 slices, the one-row B^T kernel's column chunks below "
           "8192 columns on more than 32 threads or below the 2-thread split's start, and the transposed packed "
           "path's exact K "
           "cut-off (65..99) are not reproduced (GPT-2 124M's "
           "f32 logits bit-identical on 1 to 64 threads from 2 tokens, its gradients on 1 to 32, the "
           "medium, large and XL shapes' logits from 2 to 300 tokens on 2 to 8 threads and at 5 and 16 tokens on 16 "
           "to 28, at 64 to 128 tokens on 10 to 20 and XL's at 17 to 300 on 26 to 48; 256 to 640 wide models, "
           "nanoGPT's 384-wide shape included, on 1 to 16 threads, and 65-character lm_heads 256, 384 and 768 wide "
           "at 2 to 31 tokens on 3 to 64 threads, 768 wide to 128 tokens on 12 to 20 (MKL's narrow kernel for a last "
           "chunk of 1 or 2 columns, the dot kernel's work edge by thread count, the row-grouped cut's row blocks); "
           "the packed path's halves of a K "
           "below 768 "
           "on one thread; MKL's one-row kernels, its dot kernel's orders on threads, B^T with any alpha and B as stored "
           "with its K cut on any thread count, are reproduced: greedy decode bit-identical to transformers' "
           "generate)";
  if (t == GM_TT_INTEL_AMX && op == GM_KOP_MATMUL && dt == GM_BF16)
    return "oneDNN's K chunks, K splits, K-tail calls, K tiles (narrower than 32 where they divide a call) and "
           "the blocking of batched (3-D) products follow a model of its blocking heuristics (validated against "
           "torch on every shape and thread count tried: GPT-2 124M's logits and gradients bit-identical on 1 to 8 "
           "threads, its logits from 32 to 500 tokens; products of at most 16^3 multiply-adds in ATen's orders); "
           "one column (oneDNN's GEMV path) as its one-row kernels, and the tiny-K shapes AMX declines as oneDNN's "
           "AVX512_CORE_BF16 brgemm (one VDPBF16PS chain); not reproduced: an odd K over 32 with A as stored where "
           "oneDNN's micro heuristic decides";
  if ((t == GM_TT_INTEL_AVX512 || t == GM_TT_AVX2) && op == GM_KOP_MATMUL && dt == GM_BF16)
    return "torch's 2-thread K split for some shapes (e.g. M 2, K 3072 addmm) and subnormal bf16 inputs (the packed "
           "path reads them as zero) are not reproduced";
  if ((t == GM_TT_INTEL_AMX || t == GM_TT_INTEL_AVX512_FP16) && op == GM_KOP_MATMUL && dt == GM_F16)
    return "oneDNN's order above 16^3 multiply-adds (ATen's below) checked on the goldens' shapes, GPT-2 124M's "
           "forward and gradients (1 and 2 threads), live one-row products (K 768-50257), a 32-wide GPT-2's "
           "gradients at 3 and 8 tokens (the backward's products of 16^3 multiply-adds or fewer) and a 96-wide one's "
           "greedy decode (one-row B^T with K % 64 != 0), all bit-identical, and under intel-amx 270 random 2-D "
           "products (M 2-400, K 2-1300, N 2-900; addmm, mm, F.linear, mm(x, W^T), dW; 1-4 threads); batched "
           "products other than GPT-2's attention are not verified";
  return "";
}

gm_target_support gm_target_support_get(gm_torch_target t, gm_kernel_op op, gm_dtype dt) {
  gm_target_support s = {false, false, "?", ""};
  const gm_torch_target_info *ti = gm_torch_target_get_info(t);
  if (!ti || (unsigned)op >= GM_KOP_N) return s;
  unsigned bit = dt == GM_F32 ? F32 : dt == GM_F16 ? F16 : dt == GM_BF16 ? BF16 : 0;
  s.partial = bit && (PARTIAL[t][op] & bit);
  s.exact = bit && !(NOT_EXACT[t][op] & bit) && !s.partial;
  if (s.partial) s.limits = partial_limits(t, op, dt);
  // f32 tanh/erf/exp of the op-by-op GELUs are MKL VML's, reachable only through torch's own library.
  // And MKL picks its VML code by CPU: the target's results need MKL running on a CPU of its vendor
  // and ISA (zen4's on an AMD CPU, the Intel targets' on an Intel one with their ISA).
  if (op == GM_KOP_GELU_OPS && dt == GM_F32) {
    const gm_cpu *h = gm_cpu_host();
    const bool intel = h->vendor_id == GM_CPU_VENDOR_INTEL;
    const bool ok = ti->mkl == GM_MKL_SGEMM_AMD_AVX512 ? h->vendor_id == GM_CPU_VENDOR_AMD && h->simd == GM_SIMD_AVX512
                    : ti->mkl == GM_MKL_SGEMM_INTEL_AVX512 ? intel && h->simd == GM_SIMD_AVX512
                                                            : intel && h->simd >= GM_SIMD_AVX2;
    if (!gm_torch_lib_path(NULL) || !ok) s.exact = false;
  }
  s.family = family(ti, op, dt);
  return s;
}

int gm_target_gaps(gm_torch_target t, const gm_dtype *dts, int n_dts, char *buf, size_t n) {
  int count = 0;
  size_t k = 0;
  if (n) buf[0] = 0;
  for (int op = 0; op < GM_KOP_N; op++)
    for (int d = 0; d < n_dts; d++) {
      gm_target_support s = gm_target_support_get(t, (gm_kernel_op)op, dts[d]);
      if (s.exact) continue;
      if (k < n)
        k += (size_t)snprintf(buf + k, n - k, "%s%s%s%s%s", count ? ", " : "", n_dts > 1 ? gm_dtype_name(dts[d]) : "",
                              n_dts > 1 ? " " : "", gm_kernel_op_name((gm_kernel_op)op), s.partial ? " (in part)" : "");
      count++;
    }
  return count;
}
