// gptmeg kernels: the GELU family (docs/numerics.md section 3, the variants) under the evaluation
// modes of its section 4 (the modes and their contracts).
#ifndef GPTMEG_GELU_H
#define GPTMEG_GELU_H

#include "gptmeg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// gm_gelu_variant (the ten formulas) is in gptmeg/core.h: config.json names one.
typedef enum {
  GM_MODE_EXACT = 0,  // formula over the reals, correctly rounded to the output dtype (MPFR)
  GM_MODE_EAGER,      // op by op: each op widens to opmath, computes correctly rounded, rounds to dtype
  GM_MODE_FUSED,      // whole formula in f32 opmath (f64 for f64), one rounding at the end
  GM_MODE_TORCH_CPU,  // bit-for-bit the pinned PyTorch on this CPU for the same length and threads
  GM_MODE_ACCURATE,   // gptmeg's own: same function, rewritten to stay within a few ULPs of exact
  GM_GELU_N_MODES
} gm_gelu_mode;

typedef struct {
  gm_gelu_variant variant;
  gm_gelu_mode mode;
} gm_gelu_spec;

// Static facts about a variant (for `act list`).
typedef struct {
  const char *name;      // "gelu_new"
  const char *source;    // "HF transformers activations.py NewGELUActivation"
  const char *formula;   // forward as written at the source
  const char *backward;  // backward rule
} gm_gelu_info;

const gm_gelu_info *gm_gelu_variant_info(gm_gelu_variant v);
const char *gm_gelu_mode_name(gm_gelu_mode m);
int gm_gelu_variant_parse(const char *s, gm_gelu_variant *out); // error lists the valid names
int gm_gelu_mode_parse(const char *s, gm_gelu_mode *out);
int gm_gelu_spec_parse(const char *s, gm_gelu_spec *out);        // "VARIANT:MODE" or "VARIANT" (accurate)
// Writes "variant:mode" into buf.
void gm_gelu_spec_format(gm_gelu_spec s, char *buf, size_t n);

// Forward: y[i] = gelu(x[i]) for i < n. x and y have dtype dt (f16/bf16 as uint16_t bits).
// threads <= 0 means the default. torch-cpu mode's bits depend on n and threads (as PyTorch's do);
// every other mode gives the same bits for any thread count.
int gm_gelu_fwd(gm_gelu_spec s, gm_dtype dt, const void *x, void *y, size_t n, int threads);
// Backward: dx[i] = dy[i] * d gelu/dx (x[i]) under the variant's backward rule (autograd of the
// written ops, or the custom rule of gelu_megatron).
int gm_gelu_bwd(gm_gelu_spec s, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n,
                int threads);

// torch-cpu, op-by-op variants in f32: true when MKL's VML was loaded from GPTMEG_TORCH_MKL, so
// torch.tanh/erf/exp (and with them gelu_new, gelu_python, ...) are bit for bit PyTorch's; false:
// those three ops are computed in double and rounded to f32 (not promised bit exact).
bool gm_gelu_torch_mkl_loaded(void);

#ifdef __cplusplus
}
#endif
#endif
