// Internal interface between the GELU dispatcher (gelu.c) and the per-mode implementations.
// Every function: x, y/dy/dx are arrays of n elements of dtype dt (f16/bf16 as uint16_t bits).
// Returns 0, or sets gm_fail and returns non-zero (e.g. a dtype the mode does not support).
#ifndef GPTMEG_GELU_IMPL_H
#define GPTMEG_GELU_IMPL_H

#include "gptmeg/gelu.h"

#include <stddef.h>

// Threads worth starting for one elementwise pass over n elements: at most one per 32768 elements
// (PyTorch's at::internal::GRAIN_SIZE), at least one; below that, waking a thread costs more than
// its share. Only for loops whose bits do not depend on the split (not the torch-cpu emulation of
// torch's own chunking, gelu_torch_aten.c).
enum { GELU_THREAD_GRAIN = 32768 };
static inline int gelu_threads_for(size_t n, int threads) {
  size_t most = n / GELU_THREAD_GRAIN;
  if (threads < 1 || most < 1) return 1;
  return (size_t)threads < most ? threads : (int)most;
}

// gelu_exact.c: MPFR, correctly rounded to dt.
int gm_gelu_exact_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_exact_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
// gelu_fused.c: whole formula in opmath, one rounding.
int gm_gelu_fused_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_fused_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
// gelu_eager.c: op by op, rounding to dt after every op (autograd graph for the backward).
int gm_gelu_eager_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_eager_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
// gelu_torch_*.c: bit-for-bit the pinned PyTorch CPU.
int gm_gelu_torch_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_torch_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
// gelu_torch_aten*.c: PyTorch's one-kernel ops F.gelu (none / tanh), for gelu, gelu_pytorch_tanh
// and the F.gelu inside gelu_10. gelu_torch_ops*.c: the written formulas as PyTorch runs their ops.
// gelu_torch.c routes between the two.
int gm_gelu_torch_aten_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_torch_aten_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
int gm_gelu_torch_ops_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_torch_ops_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);
// gelu_accurate*.c: gptmeg's accurate kernels.
int gm_gelu_accurate_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads);
int gm_gelu_accurate_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads);

#endif
