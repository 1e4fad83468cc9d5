// Placeholder until this part is built; its owner deletes this file.
#include "kernels/gelu_impl.h"

int gelu_eager_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int t) {
  (void)v; (void)dt; (void)x; (void)y; (void)n; (void)t;
  return gm_fail("GELU mode 'eager' is not implemented yet");
}
int gelu_eager_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int t) {
  (void)v; (void)dt; (void)x; (void)dy; (void)dx; (void)n; (void)t;
  return gm_fail("GELU mode 'eager' is not implemented yet");
}
int gelu_torch_ops_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int t) {
  (void)v; (void)dt; (void)x; (void)y; (void)n; (void)t;
  return gm_fail("GELU mode 'torch-cpu' is not implemented yet");
}
int gelu_torch_ops_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int t) {
  (void)v; (void)dt; (void)x; (void)dy; (void)dx; (void)n; (void)t;
  return gm_fail("GELU mode 'torch-cpu' is not implemented yet");
}
