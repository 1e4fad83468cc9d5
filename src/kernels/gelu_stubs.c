// Modes not built yet. Whoever implements a mode deletes its two stubs from this file.
#include "kernels/gelu_impl.h"

#define STUB_FWD(fn, name) \
  int fn(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int t) { \
    (void)v; (void)dt; (void)x; (void)y; (void)n; (void)t; return gm_fail("mode '%s' is not implemented yet", name); }
#define STUB_BWD(fn, name) \
  int fn(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int t) { \
    (void)v; (void)dt; (void)x; (void)dy; (void)dx; (void)n; (void)t; return gm_fail("mode '%s' backward is not implemented yet", name); }

STUB_FWD(gelu_exact_fwd, "exact")
STUB_BWD(gelu_exact_bwd, "exact")
STUB_FWD(gelu_fused_fwd, "fused")
STUB_BWD(gelu_fused_bwd, "fused")
STUB_FWD(gelu_eager_fwd, "eager")
STUB_BWD(gelu_eager_bwd, "eager")
STUB_FWD(gelu_torch_fwd, "torch-cpu")
STUB_BWD(gelu_torch_bwd, "torch-cpu")
STUB_FWD(gelu_accurate_fwd, "accurate")
STUB_BWD(gelu_accurate_bwd, "accurate")
