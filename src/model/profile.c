// Numerics profiles: each is one setting of every knob in gm_profile (NUMERICS.md section 6).
#include "gptmeg/model.h"

#include <stdio.h>
#include <string.h>

const char *const gm_profile_names[] = {"hf", "hf-legacy", "meg", "megatron", NULL};
const char *const gm_profile_knobs[] = {"ln", "scores", "mask", "softmax", "act", "qk-layer-scaling", "bias-act", NULL};

int gm_profile_get(const char *name, gm_dtype dt, gm_profile *out) {
  memset(out, 0, sizeof *out);
  if (dt != GM_F32 && dt != GM_F16 && dt != GM_BF16)
    return gm_fail("a model runs in f32, f16 or bf16, not %s", gm_dtype_name(dt));
  // hf: current transformers, eager attention; the GELU formulas op by op as eager PyTorch runs
  // them (the GELU library's torch-cpu mode, evaluated with PyTorch's one-thread split, so the
  // bits do not depend on gptmeg's thread count).
  out->dtype = dt;
  out->layer_norm = GM_LN_NATIVE;
  out->scores = GM_SCORES_MATMUL_DIV;
  out->mask = GM_MASK_FINFO;
  out->softmax = GM_SOFTMAX_DTYPE;
  out->act_from_config = true;
  out->gelu_mode = GM_MODE_TORCH_CPU;
  out->act_override = (gm_gelu_spec){GM_GELU_MEGATRON, out->gelu_mode};
  out->honor_upcast_option = true;
  if (!strcmp(name, "hf")) {
  } else if (!strcmp(name, "hf-legacy")) { // transformers <= 4.19: masked_bias = -1e4
    out->mask = GM_MASK_NEG_1E4;
  } else if (!strcmp(name, "meg")) { // the three GPTMeg overrides on top of hf
    out->layer_norm = GM_LN_F32;
    out->scores = GM_SCORES_BADDBMM;
    out->act_from_config = false; // Megatron's jit gelu, op by op (TorchScript does not fuse on CPU)
    out->honor_upcast_option = false;
  } else if (!strcmp(name, "megatron")) { // Megatron-DeepSpeed defaults
    out->layer_norm = GM_LN_F32;
    out->scores = GM_SCORES_BADDBMM;
    out->qk_layer_scaling = true;
    out->mask = GM_MASK_NEG_1E4;
    out->softmax = GM_SOFTMAX_F32;
    out->act_from_config = false;
    out->act_override = (gm_gelu_spec){GM_GELU_MEGATRON, GM_MODE_TORCH_CPU}; // evaluated on f32 tensors: see act_bias_fused
    out->act_bias_fused = true;
    out->honor_upcast_option = false;
  } else {
    return gm_fail("unknown numerics profile '%s' (valid: hf, hf-legacy, meg, megatron)", name);
  }
  snprintf(out->name, sizeof out->name, "%s", name);
  return 0;
}

static int on_off(const char *knob, const char *v, bool *out) {
  if (!strcmp(v, "on")) *out = true;
  else if (!strcmp(v, "off")) *out = false;
  else return gm_fail("--%s takes on or off, not '%s'", knob, v);
  return 0;
}

int gm_profile_set_knob(gm_profile *p, const char *knob, const char *v) {
  if (!strcmp(knob, "ln")) {
    if (!strcmp(v, "native")) p->layer_norm = GM_LN_NATIVE;
    else if (!strcmp(v, "fp32")) p->layer_norm = GM_LN_F32;
    else return gm_fail("--ln takes native or fp32, not '%s'", v);
  } else if (!strcmp(knob, "scores")) {
    if (!strcmp(v, "matmul-div")) p->scores = GM_SCORES_MATMUL_DIV;
    else if (!strcmp(v, "baddbmm")) p->scores = GM_SCORES_BADDBMM;
    else return gm_fail("--scores takes matmul-div or baddbmm, not '%s'", v);
    p->honor_upcast_option = false;
  } else if (!strcmp(knob, "mask")) {
    if (!strcmp(v, "finfo")) p->mask = GM_MASK_FINFO;
    else if (!strcmp(v, "-1e4")) p->mask = GM_MASK_NEG_1E4;
    else if (!strcmp(v, "-inf")) p->mask = GM_MASK_NEG_INF;
    else return gm_fail("--mask takes finfo, -1e4 or -inf, not '%s'", v);
  } else if (!strcmp(knob, "softmax")) {
    if (!strcmp(v, "dtype")) p->softmax = GM_SOFTMAX_DTYPE;
    else if (!strcmp(v, "fp32")) p->softmax = GM_SOFTMAX_F32;
    else return gm_fail("--softmax takes dtype or fp32, not '%s'", v);
  } else if (!strcmp(knob, "act")) {
    if (!strcmp(v, "config")) {
      p->act_from_config = true;
    } else {
      gm_gelu_spec s;
      // a bare variant keeps the profile's mode (torch-cpu), not the library's default
      if (!strchr(v, ':')) {
        if (gm_gelu_variant_parse(v, &s.variant)) return gm_fail("--act: %s", gm_errmsg());
        s.mode = p->gelu_mode;
      } else if (gm_gelu_spec_parse(v, &s)) {
        return gm_fail("--act: %s", gm_errmsg());
      }
      p->act_from_config = false;
      p->act_override = s;
    }
  } else if (!strcmp(knob, "qk-layer-scaling")) {
    if (on_off(knob, v, &p->qk_layer_scaling)) return -1;
  } else if (!strcmp(knob, "bias-act")) {
    if (!strcmp(v, "fused")) p->act_bias_fused = true;
    else if (!strcmp(v, "separate")) p->act_bias_fused = false;
    else return gm_fail("--bias-act takes fused or separate, not '%s'", v);
  } else {
    return gm_fail("unknown profile knob '--%s' (valid: --ln, --scores, --mask, --softmax, --act, --qk-layer-scaling, --bias-act)",
                   knob);
  }
  size_t n = strlen(p->name);
  snprintf(p->name + n, sizeof p->name - n, "+%s=%s", knob, v);
  return 0;
}

void gm_profile_describe(const gm_profile *p, char *buf, size_t n) {
  static const char *ln[] = {"native (torch layer_norm in the dtype: f32 inside, one rounding)",
                             "fp32 (layer_norm(x.float(), w.float(), b.float()) cast back)"};
  static const char *sc[] = {"matmul-div (q@k^T rounded, / sqrt(hd) rounded, / (layer+1) rounded)",
                             "baddbmm (alpha = 1/sqrt(hd) [/(layer+1)] applied before the one rounding)"};
  static const char *mk[] = {"finfo (finfo(dtype).min)", "-1e4", "-inf"};
  static const char *sm[] = {"dtype (f32 inside, rounded once to the dtype)",
                             "fp32 (scores widened to f32, scaled there, softmax, cast)"};
  char act[64];
  if (p->act_from_config) snprintf(act, sizeof act, "config activation_function, GELU family in %s mode", gm_gelu_mode_name(p->gelu_mode));
  else gm_gelu_spec_format(p->act_override, act, sizeof act);
  snprintf(buf, n,
           "profile           %s\n"
           "dtype             %s\n"
           "ln                %s\n"
           "scores            %s\n"
           "qk-layer-scaling  %s\n"
           "mask              %s\n"
           "softmax           %s\n"
           "act               %s\n"
           "bias-act          %s\n"
           "upcast option     %s\n",
           p->name, gm_dtype_name(p->dtype), ln[p->layer_norm], sc[p->scores],
           p->qk_layer_scaling ? "on (alpha /= L, scores * L in f32 before softmax, L = layer+1)" : "off",
           mk[p->mask], sm[p->softmax], act,
           p->act_bias_fused ? "fused (c_fc without bias; x = y + b in f32, GELU in f32, one rounding)"
                             : "separate (c_fc adds its bias before its one rounding)",
           p->honor_upcast_option ? "honoured (config.reorder_and_upcast_attn: q, k in f32, baddbmm, softmax f32)"
                                  : "ignored");
}
