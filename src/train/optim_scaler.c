// Loss scalers for f16 training: Megatron's DynamicGradScaler, DeepSpeed's DynamicLossScaler and
// the scale DeepSpeed's FP16_Optimizer keeps itself, and the unscale of the gradients with the
// inf/NaN check.
//
// Numerics contract: Megatron's scale is an f32 tensor: backoff is max(f32(scale * 0.5), min_scale)
// and growth f32(scale * 2) (exact while in range; growth past FLT_MAX gives inf, as torch's does);
// inv_scale = f32(1 / (double)scale). DeepSpeed's is a Python float (double): scale / 2 clamped to
// min_scale, scale * 2 (the same arithmetic in FP16_Optimizer's _update_scale, which has no
// hysteresis and counts its window one iteration later). The state machines step as their sources
// do (docs/training.md "Loss scaling"); checked against transcriptions of those sources run in
// Python (tools/ref/gen_optim_goldens.py; FP16_Optimizer's through the fp16-deepspeed recipe's
// goldens, tools/ref/gen_recipe_goldens.py; neither package runs on this CPU-only machine). The
// unscale is torch._amp_foreach_non_finite_check_and_unscale_ on CPU: g = g * inv_scale in f32
// (skipped when inv_scale == 1), found_inf when any g was not finite (checked against torch).
#include "gptmeg/optim.h"

#include <math.h>

void gm_megatron_scaler_init(gm_megatron_scaler *s, double initial_scale, double min_scale,
                             double growth_factor, double backoff_factor, int growth_interval, int hysteresis) {
  s->scale = (float)initial_scale;
  s->min_scale = (float)min_scale;
  s->growth_factor = (float)growth_factor;
  s->backoff_factor = (float)backoff_factor;
  s->growth_interval = growth_interval;
  s->hysteresis = hysteresis;
  s->growth_tracker = 0;
  s->hysteresis_tracker = hysteresis;
}

void gm_megatron_scaler_update(gm_megatron_scaler *s, bool found_inf) {
  if (found_inf) {
    s->growth_tracker = 0;
    s->hysteresis_tracker -= 1;
    if (s->hysteresis_tracker <= 0) {
      float b = s->scale * s->backoff_factor;
      s->scale = b > s->min_scale || isnan(b) ? b : s->min_scale; // torch.max propagates NaN
    }
  } else {
    s->growth_tracker += 1;
    if (s->growth_tracker == s->growth_interval) {
      s->growth_tracker = 0;
      s->hysteresis_tracker = s->hysteresis;
      s->scale = s->scale * s->growth_factor;
    }
  }
}

float gm_megatron_scaler_inv(const gm_megatron_scaler *s) { return (float)(1.0 / (double)s->scale); }

void gm_deepspeed_scaler_init(gm_deepspeed_scaler *s, double init_scale, double scale_factor,
                              long scale_window, double min_scale, int delayed_shift, bool consecutive_hysteresis) {
  s->cur_scale = init_scale;
  s->scale_factor = scale_factor;
  s->min_scale = min_scale;
  s->scale_window = scale_window;
  s->cur_iter = 0;
  s->last_overflow_iter = -1;
  s->delayed_shift = delayed_shift;
  s->cur_hysteresis = delayed_shift;
  s->consecutive_hysteresis = consecutive_hysteresis;
}

// Python's % of a non-negative left operand; (cur_iter - last_overflow_iter) is always >= 1.
void gm_deepspeed_scaler_update(gm_deepspeed_scaler *s, bool overflow) {
  if (overflow) {
    if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
      double next = s->cur_scale / s->scale_factor;
      s->cur_scale = next > s->min_scale ? next : s->min_scale; // max(next, min_scale)
    } else {
      s->cur_hysteresis -= 1;
    }
    s->last_overflow_iter = s->cur_iter;
  } else {
    if (s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
    if ((s->cur_iter - s->last_overflow_iter) % s->scale_window == 0) {
      if (!s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
      s->cur_scale *= s->scale_factor;
    }
  }
  s->cur_iter += 1;
}

// FP16_Optimizer._update_scale (DeepSpeed 0.5.x and current master agree).
void gm_deepspeed_fp16opt_update(gm_deepspeed_scaler *s, bool overflow) {
  if (overflow) {
    double next = s->cur_scale / s->scale_factor;
    s->cur_scale = next > s->min_scale ? next : s->min_scale; // max(cur_scale / scale_factor, min_loss_scale)
    s->last_overflow_iter = s->cur_iter;
  } else {
    long stable = (s->cur_iter - s->last_overflow_iter) - 1;
    if (stable > 0 && stable % s->scale_window == 0) s->cur_scale *= s->scale_factor;
  }
  s->cur_iter += 1;
}

bool gm_unscale_grads(float *const *grads, const size_t *ns, int k, float inv_scale, int threads) {
  if (threads < 1) threads = 1;
  int found = 0;
  for (int i = 0; i < k; i++) {
    float *g = grads[i];
    long long n = (long long)ns[i];
#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : found) if (n >= 65536)
    for (long long j = 0; j < n; j++) {
      float x = g[j];
      if (!isfinite(x)) found |= 1;
      g[j] = inv_scale == 1.0f ? x : x * inv_scale;
    }
  }
  return found != 0;
}
