// torch-cpu mode: routes each variant to the emulation of the PyTorch code path it takes.
#include "kernels/gelu/gelu_ops.h"

static bool is_aten_kernel(gm_gelu_variant v) {
  return v == GM_GELU_ERF || v == GM_GELU_PYTORCH_TANH || v == GM_GELU_10;
}

int gm_gelu_torch_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  return is_aten_kernel(v) ? gm_gelu_torch_aten_fwd(v, dt, x, y, n, threads)
                           : gm_gelu_torch_ops_fwd(v, dt, x, y, n, threads);
}

int gm_gelu_torch_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads) {
  return is_aten_kernel(v) ? gm_gelu_torch_aten_bwd(v, dt, x, dy, dx, n, threads)
                           : gm_gelu_torch_ops_bwd(v, dt, x, dy, dx, n, threads);
}

bool gm_gelu_torch_mkl_loaded(void) { return gm_gelu_torch_ops_have_mkl(); }
