// MLP activations of the GPT-2 forward, f32.
#include "model/gpt2_internal.h"

#include <math.h>
#include <omp.h>

// Private f32 transcription of transformers' activations, op by op with f32 rounding after each op
// (what eager PyTorch computes for f32, up to libm's last-bit choices). Used only while
// gm_gelu_fwd cannot evaluate the profile's mode (gm_profile.private_gelu).
static float private_gelu(gm_gelu_variant v, float x) {
  const float c = 0.7978845608028654f; // sqrt(2/pi) rounded to f32
  switch (v) {
  case GELU_ERF: return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
  case GELU_PYTHON: { float t = x / 1.41421356237309515f; return x * 0.5f * (1.0f + erff(t)); }
  case GELU_NEW:
  case GELU_ACCURATE: { float x3 = x * x * x; float in = c * (x + 0.044715f * x3); return 0.5f * x * (1.0f + tanhf(in)); }
  case GELU_FAST: { float in = x * 0.7978845608f * (1.0f + 0.044715f * x * x); return 0.5f * x * (1.0f + tanhf(in)); }
  case GELU_PYTORCH_TANH: { float in = c * (x + 0.044715f * x * x * x); return 0.5f * x * (1.0f + tanhf(in)); }
  case QUICK_GELU: { float s = 1.0f / (1.0f + expf(-(1.702f * x))); return x * s; }
  case GELU_10: { float g = x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)); return g < -10.0f ? -10.0f : g > 10.0f ? 10.0f : g; }
  case GELU_MEGATRON: { float in = 0.79788456f * x * (1.0f + 0.044715f * x * x); return x * 0.5f * (1.0f + tanhf(in)); }
  case OPENAI_GELU: { float in = 0.7978845608028654f * x * (1.0f + 0.044715f * x * x); return 0.5f * x * (1.0f + tanhf(in)); }
  default: return NAN;
  }
}

int gpt2_act_f32(const gm_profile *p, gm_activation a, const float *x, float *y, size_t n, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  long ln = (long)n;
  switch (a.kind) {
  case GM_ACT_RELU: // torch relu: max(x, 0) (NaN propagates)
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < ln; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] == x[i] ? 0.0f : x[i]);
    return 0;
  case GM_ACT_SILU: // torch silu: x / (1 + exp(-x)) in f32
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < ln; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
    return 0;
  case GM_ACT_GELU_FAMILY:
    if (!p->private_gelu) {
      gm_gelu_spec s = {a.gelu, p->gelu_mode};
      return gm_gelu_fwd(s, GM_F32, x, y, n, threads);
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < ln; i++) y[i] = private_gelu(a.gelu, x[i]);
    return 0;
  }
  return gm_fail("unknown activation kind %d", (int)a.kind);
}
