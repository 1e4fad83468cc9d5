// Which torch CPU target gptmeg's kernels reproduce bit for bit, op by op and dtype by dtype, and
// the PyTorch kernel family each op runs there. A row says "exact" only where the target's
// goldens (tests/golden/targets/) are matched by the tests; elsewhere the kernels run zen4's
// order and `gptmeg info`, the report and diverge say so (never a silent fallback).
// tests/test_targets.c holds this table to the goldens both ways: an exact row must match, and a
// row that is not exact must not match everything (then the table is stale).
#include "gptmeg/kernels.h"

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
    return ti->onednn == GM_ONEDNN_AMX ? "oneDNN, AVX512_CORE_FP16 / AMX-FP16 (f16)" : "ATen cpublas f16 gemm";
  case GM_KOP_LAYERNORM: return ti->aten == GM_ATEN_AVX512 ? "ATen layer_norm, AVX512 Vectorized" : "ATen layer_norm, AVX2 Vectorized";
  case GM_KOP_SOFTMAX: return ti->aten == GM_ATEN_AVX512 ? "ATen softmax, AVX512 (SLEEF exp)" : "ATen softmax, AVX2 (SLEEF exp)";
  case GM_KOP_GELU_ATEN:
    if (dt != GM_F32 && ti->onednn >= GM_ONEDNN_AVX512_CORE) return "oneDNN eltwise GELU";
    return ti->aten == GM_ATEN_AVX512 ? "ATen GELU, AVX512 Vectorized" : "ATen GELU, AVX2 Vectorized";
  case GM_KOP_GELU_OPS:
    return ti->aten == GM_ATEN_AVX512 ? "ATen elementwise ops, AVX512 (MKL VML tanh/erf in f32)"
                                      : "ATen elementwise ops, AVX2 (MKL VML tanh/erf in f32)";
  default: return "?";
  }
}

// Not reproduced yet: one bit per dtype (f32, f16, bf16) per op, per target. From the targets'
// goldens (tests/golden/targets/, tests/test_targets.c).
enum { F32 = 1, F16 = 2, BF16 = 4, ALL = 7 };
static const unsigned NOT_EXACT[GM_TT_N][GM_KOP_N] = {
    [GM_TT_ZEN4] = {0, 0, 0, 0, 0},
    [GM_TT_INTEL_AMX] = {[GM_KOP_MATMUL] = F16 | BF16},
    [GM_TT_INTEL_AVX512_BF16] = {[GM_KOP_GELU_ATEN] = F16 | BF16},
    [GM_TT_INTEL_AVX512] = {[GM_KOP_MATMUL] = BF16, [GM_KOP_GELU_ATEN] = F16 | BF16},
    [GM_TT_AVX2] = {[GM_KOP_MATMUL] = F32 | BF16, [GM_KOP_SOFTMAX] = ALL, [GM_KOP_GELU_ATEN] = ALL, [GM_KOP_GELU_OPS] = ALL},
};

gm_target_support gm_target_support_get(gm_torch_target t, gm_kernel_op op, gm_dtype dt) {
  gm_target_support s = {false, "?"};
  const gm_torch_target_info *ti = gm_torch_target_get_info(t);
  if (!ti || (unsigned)op >= GM_KOP_N) return s;
  unsigned bit = dt == GM_F32 ? F32 : dt == GM_F16 ? F16 : dt == GM_BF16 ? BF16 : 0;
  s.exact = bit && !(NOT_EXACT[t][op] & bit);
  // f32 tanh/erf/exp of the op-by-op GELUs are MKL VML's, reachable only through torch's own library.
  if (op == GM_KOP_GELU_OPS && dt == GM_F32 && !gm_torch_lib_path(NULL)) s.exact = false;
  s.family = family(ti, op, dt);
  return s;
}
