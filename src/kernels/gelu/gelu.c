// GELU family: names, facts, spec parsing, and dispatch to the mode implementations.
#include "kernels/gelu/gelu_impl.h"

#include <stdio.h>
#include <string.h>

static const gm_gelu_info infos[GM_GELU_N_VARIANTS] = {
    [GM_GELU_ERF] = {"gelu", "torch F.gelu(x) (HF 'gelu', GELUActivation)",
                  "x*0.5*(1+erf(x*M_SQRT1_2)), one kernel",
                  "dy*(cdf + x*pdf), cdf=0.5*(1+erf(x*M_SQRT1_2)), pdf=(M_2_SQRTPI*M_SQRT1_2*0.5)*exp(-0.5*x*x)"},
    [GM_GELU_PYTHON] = {"gelu_python", "HF transformers activations.py GELUActivation(use_gelu_python=True)",
                     "x*0.5*(1.0+erf(x/sqrt(2.0))), op by op", "autograd of the ops"},
    [GM_GELU_NEW] = {"gelu_new", "HF transformers NewGELUActivation (GPT-2's own)",
                  "0.5*x*(1.0+tanh(sqrt(2/pi)*(x+0.044715*pow(x,3.0)))), op by op", "autograd of the ops"},
    [GM_GELU_ACCURATE] = {"gelu_accurate", "HF transformers AccurateGELUActivation",
                       "0.5*x*(1+tanh(c*(x+0.044715*pow(x,3)))), c=sqrt(2/pi) precomputed, op by op",
                       "autograd of the ops"},
    [GM_GELU_FAST] = {"gelu_fast", "HF transformers FastGELUActivation",
                   "0.5*x*(1.0+tanh(x*0.7978845608*(1.0+0.044715*x*x))), op by op", "autograd of the ops"},
    [GM_GELU_PYTORCH_TANH] = {"gelu_pytorch_tanh", "torch F.gelu(x, approximate='tanh') (HF PytorchGELUTanh)",
                           "0.5*x*(1+tanh(kBeta*(x+kKappa*x*x*x))), kBeta=M_SQRT2*M_2_SQRTPI*0.5, kKappa=0.044715, one kernel",
                           "dy*(0.5*(1+t) + 0.5*x*(1-t*t)*kBeta*(1+3*kKappa*x*x)), t=tanh(inner)"},
    [GM_GELU_MEGATRON] = {"gelu_megatron", "Megatron-LM fused_bias_gelu.py bias_gelu, BLOOM bloom_gelu_forward",
                       "x*0.5*(1.0+tanh(0.79788456*x*(1+0.044715*x*x)))",
                       "custom: t=tanh(0.79788456*x*(1+0.044715*x*x)); dy*(0.5*x*((1-t*t)*(0.79788456+0.1070322243*x*x)) + 0.5*(1+t))"},
    [GM_OPENAI_GELU] = {"openai_gelu", "Megatron-LM openai_gelu",
                     "0.5*x*(1.0+tanh(0.7978845608028654*x*(1.0+0.044715*x*x))), op by op", "autograd of the ops"},
    [GM_QUICK_GELU] = {"quick_gelu", "HF transformers QuickGELUActivation", "x*sigmoid(1.702*x), op by op",
                    "autograd of the ops"},
    [GM_GELU_10] = {"gelu_10", "HF transformers ClippedGELUActivation(-10, 10)", "clip(gelu(x), -10, 10)",
                 "autograd: gelu backward where -10 <= gelu(x) <= 10, else 0"},
};

static const char *mode_names[GM_GELU_N_MODES] = {"exact", "eager", "fused", "torch-cpu", "accurate"};

const gm_gelu_info *gm_gelu_variant_info(gm_gelu_variant v) {
  return (unsigned)v < GM_GELU_N_VARIANTS ? &infos[v] : NULL;
}

const char *gm_gelu_mode_name(gm_gelu_mode m) { return (unsigned)m < GM_GELU_N_MODES ? mode_names[m] : "?"; }

static void list_names(char *buf, size_t n, bool modes) {
  buf[0] = 0;
  int count = modes ? GM_GELU_N_MODES : GM_GELU_N_VARIANTS;
  for (int i = 0; i < count; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", i ? ", " : "", modes ? mode_names[i] : infos[i].name);
  }
}

int gm_gelu_variant_parse(const char *s, gm_gelu_variant *out) {
  for (int i = 0; i < GM_GELU_N_VARIANTS; i++)
    if (strcmp(s, infos[i].name) == 0) { *out = (gm_gelu_variant)i; return 0; }
  char valid[512];
  list_names(valid, sizeof valid, false);
  return gm_fail("unknown GELU variant '%s' (valid: %s)", s, valid);
}

int gm_gelu_mode_parse(const char *s, gm_gelu_mode *out) {
  for (int i = 0; i < GM_GELU_N_MODES; i++)
    if (strcmp(s, mode_names[i]) == 0) { *out = (gm_gelu_mode)i; return 0; }
  char valid[256];
  list_names(valid, sizeof valid, true);
  return gm_fail("unknown mode '%s' (valid: %s)", s, valid);
}

int gm_gelu_spec_parse(const char *s, gm_gelu_spec *out) {
  char name[64];
  const char *colon = strchr(s, ':');
  size_t len = colon ? (size_t)(colon - s) : strlen(s);
  if (len >= sizeof name) return gm_fail("GELU spec '%s' is too long", s);
  memcpy(name, s, len);
  name[len] = 0;
  if (gm_gelu_variant_parse(name, &out->variant)) return -1;
  out->mode = GM_MODE_ACCURATE;
  if (colon && gm_gelu_mode_parse(colon + 1, &out->mode)) return -1;
  return 0;
}

void gm_gelu_spec_format(gm_gelu_spec s, char *buf, size_t n) {
  snprintf(buf, n, "%s:%s", infos[s.variant].name, gm_gelu_mode_name(s.mode));
}

static int check_args(gm_gelu_spec s, gm_dtype dt) {
  if ((unsigned)s.variant >= GM_GELU_N_VARIANTS) return gm_fail("invalid GELU variant %d", (int)s.variant);
  if ((unsigned)s.mode >= GM_GELU_N_MODES) return gm_fail("invalid GELU mode %d", (int)s.mode);
  if (!gm_dtype_is_float(dt)) return gm_fail("GELU needs a float dtype, got %s", gm_dtype_name(dt));
  return 0;
}

int gm_gelu_fwd(gm_gelu_spec s, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  if (check_args(s, dt)) return -1;
  if (threads <= 0) threads = gm_threads_default();
  switch (s.mode) {
  case GM_MODE_EXACT: return gm_gelu_exact_fwd(s.variant, dt, x, y, n, threads);
  case GM_MODE_EAGER: return gm_gelu_eager_fwd(s.variant, dt, x, y, n, threads);
  case GM_MODE_FUSED: return gm_gelu_fused_fwd(s.variant, dt, x, y, n, threads);
  case GM_MODE_TORCH_CPU: return gm_gelu_torch_fwd(s.variant, dt, x, y, n, threads);
  case GM_MODE_ACCURATE: return gm_gelu_accurate_fwd(s.variant, dt, x, y, n, threads);
  default: return gm_fail("invalid mode");
  }
}

int gm_gelu_bwd(gm_gelu_spec s, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads) {
  if (check_args(s, dt)) return -1;
  if (threads <= 0) threads = gm_threads_default();
  switch (s.mode) {
  case GM_MODE_EXACT: return gm_gelu_exact_bwd(s.variant, dt, x, dy, dx, n, threads);
  case GM_MODE_EAGER: return gm_gelu_eager_bwd(s.variant, dt, x, dy, dx, n, threads);
  case GM_MODE_FUSED: return gm_gelu_fused_bwd(s.variant, dt, x, dy, dx, n, threads);
  case GM_MODE_TORCH_CPU: return gm_gelu_torch_bwd(s.variant, dt, x, dy, dx, n, threads);
  case GM_MODE_ACCURATE: return gm_gelu_accurate_bwd(s.variant, dt, x, dy, dx, n, threads);
  default: return gm_fail("invalid mode");
  }
}
