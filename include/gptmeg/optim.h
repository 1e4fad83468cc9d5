// gptmeg train: the optimizer module. Adam/AdamW, learning-rate schedules, gradient clipping by the
// global L2 norm, loss scalers, and the optimizer state's file, each reproducing a reference
// bit for bit where docs/training.md says so (checked by tests/test_optim.c against goldens from
// torch 2.15 CPU, tools/ref/gen_optim_goldens.py).
//
// Parameters and gradients are flat f32 arrays of n elements (one tensor of a model each; call once
// per tensor). Every function here is elementwise or a fixed-order reduction: the bits do not
// depend on `threads` (torch's are the same for 1 and 2 threads too, measured).
#ifndef GPTMEG_OPTIM_H
#define GPTMEG_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gptmeg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- Adam / AdamW ---------------------------------------------------------------------------------

typedef enum {
  GM_ADAM = 0, // torch.optim.Adam: L2 weight decay, grad = grad + wd * param
  GM_ADAMW     // torch.optim.AdamW: decoupled weight decay, param *= 1 - lr * wd
} gm_adam_kind;

typedef enum {
  GM_ADAM_SINGLE = 0, // foreach=False (_single_tensor_adam); foreach=True gives the same bits on CPU
  GM_ADAM_FUSED       // fused=True (ATen's fused Adam CPU kernel)
} gm_adam_impl;

typedef struct {
  gm_adam_kind kind;
  gm_adam_impl impl;
  double beta1, beta2; // torch's defaults 0.9, 0.999
  double eps;          // 1e-8
  double weight_decay; // Adam 0, AdamW 0.01 (torch's defaults)
} gm_adam_cfg;

// torch's defaults for kind and impl: betas (0.9, 0.999), eps 1e-8, weight_decay 0 (Adam) / 0.01 (AdamW).
gm_adam_cfg gm_adam_cfg_default(gm_adam_kind kind, gm_adam_impl impl);

// One tensor's optimizer state: torch's state["step"], state["exp_avg"], state["exp_avg_sq"].
typedef struct {
  size_t n;          // elements
  long step;         // steps taken (torch keeps it as an f32 tensor: exact up to 2^24)
  float *exp_avg;    // (n) f32, first moment
  float *exp_avg_sq; // (n) f32, second moment
} gm_adam_state;

// Zeroed moments of n elements, step 0 (what torch's lazy state init makes). 0 or gm_fail.
int gm_adam_state_init(gm_adam_state *s, size_t n);
void gm_adam_state_free(gm_adam_state *s);

// One optimizer step of one tensor at learning rate lr (the value the schedule gives for this
// step): s->step += 1, then the update of cfg->impl. param is (n) f32, updated in place; grad is
// (n) f32, read only (Adam's weight decay works on a copy, as torch's grad.add does). n must equal
// s->n. param, grad and the state's buffers must not alias. threads >= 1 (the bits do not depend on
// it). 0, or gm_fail (bad cfg, lr, n mismatch; then nothing changed, step not counted).
int gm_adam_step(const gm_adam_cfg *cfg, gm_adam_state *s, float *param, const float *grad,
                 size_t n, double lr, int threads);

// How the single-tensor step takes exp_avg_sq.sqrt(): torch sends f32 sqrt to MKL VML
// (vmsSqrt, high accuracy), whose AVX-512 code is not correctly rounded (1 ulp below in ~0.7% of
// random inputs) while its AVX2 code is. Under an intel-* torch CPU target gptmeg calls vmsSqrt from
// torch's own library (gm_torch_lib_path) when it finds it ("mkl-vml"), else computes what it computes
// with AVX-512F's vrsqrt14ps and one Newton step ("mkl-vml-avx512", bit-identical to it, measured);
// on a CPU without AVX-512F, and under avx2 and zen4, the IEEE sqrtf ("ieee"). Names the one in force.
// The fused step uses IEEE sqrt always.
const char *gm_adam_sqrt_name(void);

// Times gm_adam_step (AdamW, single) over a buffer of n elements for `iters` steps and returns the
// seconds per step (the first step not counted); *gbps gets the bytes moved per step (param and
// both moments read and written, grad read: 28 bytes an element) over that time. For `gptmeg bench`.
double gm_adam_bench(size_t n, int iters, int threads, double *gbps);

// ---- learning-rate schedules -------------------------------------------------------------------------

typedef enum {
  GM_LR_CONSTANT = 0,  // max_lr every step
  GM_LR_MEGATRON,      // Megatron-LM OptimizerParamScheduler: linear warmup from init_lr, cosine to min_lr
  GM_LR_HF_COSINE      // transformers get_cosine_schedule_with_warmup through torch's LambdaLR
} gm_lr_kind;

typedef struct {
  gm_lr_kind kind;
  double max_lr;      // the peak lr (HF: the optimizer's lr, LambdaLR's base_lr)
  double min_lr;      // Megatron: the floor after decay (HF: unused)
  double init_lr;     // Megatron: the lr warmup starts from (usually 0)
  long warmup_steps;  // both
  long decay_steps;   // Megatron: lr_decay_steps (min_lr after it); HF: num_training_steps
  double num_cycles;  // HF: 0.5 by default
} gm_lr_schedule;

// The lr the optimizer uses at optimizer step `step` (0 for the first step), as a Python float:
// Megatron: get_lr() with num_steps = step (its scheduler starts at step(0) and steps after each
// optimizer step; iteration-based counting); HF: base_lr * lambda(step) (LambdaLR's lr before its
// step+1-th scheduler.step()).
double gm_lr_at(const gm_lr_schedule *s, long step);

// ---- gradient clipping ---------------------------------------------------------------------------------

// The L2 norm of one f32 tensor x (n), as torch.linalg.vector_norm(x) computes it on CPU (ATen's
// norm-two reduction, AVX2 build under every target: 8 lanes, folded in order, the tail of n % 8
// in order; the exact roundings in src/train/optim_clip.c; IEEE sqrt).
float gm_l2_norm_f32(const float *x, size_t n);

// The global L2 norm of k tensors grads[i] (ns[i] f32 each): the norm of the k per-tensor norms, as
// torch.nn.utils.clip_grad_norm_ computes it on CPU (also Megatron's CPU order).
float gm_grad_global_norm(const float *const *grads, const size_t *ns, int k);

// torch.nn.utils.clip_grad_norm_(max_norm): coef = f32(1 / (total + f32(1e-6))) * f32(max_norm)
// clamped to 1, every grad multiplied by it (in f32, even when it is 1). grads[i] (ns[i]) f32, in
// place. Returns the total norm (f32).
float gm_clip_grad_norm_torch(float *const *grads, const size_t *ns, int k, double max_norm, int threads);

// Megatron's clip_grad_norm_fp32 + clip_grad_by_total_norm_fp32: total = (norm^2 in f32) ** 0.5 in
// double, coef = max_norm / (total + 1e-6) in double; when coef < 1 every grad *= f32(coef).
// Returns total (double). *clipped (may be NULL) says whether it scaled.
double gm_clip_grad_norm_megatron(float *const *grads, const size_t *ns, int k, double max_norm,
                                  int threads, bool *clipped);

// ---- loss scaling --------------------------------------------------------------------------------------

// Megatron's DynamicGradScaler (f32 scale). Defaults: gm_megatron_scaler_init(s, 2^32, 1, 2, 0.5, 1000, 2).
typedef struct {
  float scale, min_scale, growth_factor, backoff_factor;
  int growth_interval, hysteresis;
  int growth_tracker, hysteresis_tracker;
} gm_megatron_scaler;
void gm_megatron_scaler_init(gm_megatron_scaler *s, double initial_scale, double min_scale,
                             double growth_factor, double backoff_factor, int growth_interval, int hysteresis);
void gm_megatron_scaler_update(gm_megatron_scaler *s, bool found_inf);
// inv_scale = scale.double().reciprocal().float()
float gm_megatron_scaler_inv(const gm_megatron_scaler *s);

// DeepSpeed's fp16 DynamicLossScaler (Python-float scale). DeepSpeed's config defaults:
// gm_deepspeed_scaler_init(s, 2^16, 2, 1000, 1, 2, false) (initial_scale_power 16, hysteresis 2).
// raise_error_at_min_scale is not modelled: at min_scale an overflow keeps the scale.
typedef struct {
  double cur_scale, scale_factor, min_scale;
  long scale_window, cur_iter, last_overflow_iter;
  int delayed_shift, cur_hysteresis;
  bool consecutive_hysteresis;
} gm_deepspeed_scaler;
void gm_deepspeed_scaler_init(gm_deepspeed_scaler *s, double init_scale, double scale_factor,
                              long scale_window, double min_scale, int delayed_shift, bool consecutive_hysteresis);
void gm_deepspeed_scaler_update(gm_deepspeed_scaler *s, bool overflow);
// DeepSpeed's FP16_Optimizer (deepspeed/runtime/fp16/fused_optimizer.py, the optimizer DeepSpeed's
// fp16 engine wraps a fused Adam in) keeps its own scale, not a DynamicLossScaler: its _update_scale
// has no hysteresis (the config's "hysteresis" is not passed to it) and counts the window one
// iteration later: on an overflow cur_scale = max(cur_scale / 2, min_scale) and the iteration is
// remembered; else the scale doubles when (cur_iter - last_overflow_iter - 1) is > 0 and a multiple
// of scale_window. cur_iter advances every call. Same struct (delayed_shift, cur_hysteresis and
// consecutive_hysteresis are not used), initialised by gm_deepspeed_scaler_init.
void gm_deepspeed_fp16opt_update(gm_deepspeed_scaler *s, bool overflow);

// torch._amp_foreach_non_finite_check_and_unscale_ on CPU (what Megatron calls with its inv_scale):
// every grads[i] (ns[i]) f32 *= inv_scale (skipped when inv_scale == 1); returns true when any
// element was inf or NaN before scaling (torch's found_inf).
bool gm_unscale_grads(float *const *grads, const size_t *ns, int k, float inv_scale, int threads);

// ---- optimizer state file --------------------------------------------------------------------------------

// A versioned little-endian binary file of k tensors' Adam states (docs/training.md "State file"):
// magic "GMOPTST1", u32 version 1, u32 optimizer (gm_adam_kind), u32 impl, u32 k, then per tensor
// u64 n, i64 step, n f32 exp_avg, n f32 exp_avg_sq; then the cfg (5 f64: beta1, beta2, eps,
// weight_decay, reserved 0). Written atomically.
int gm_adam_state_save(const char *path, const gm_adam_cfg *cfg, const gm_adam_state *states, int k);
// Reads it into states[0..k) (already gm_adam_state_init'ed to their sizes). A file of another
// version, optimizer kind, tensor count or any other tensor size, or a truncated one, is one
// gm_fail naming the mismatch; states are unchanged then. The file's betas/eps/wd need not match
// cfg (torch's load_state_dict restores them; here the caller's cfg wins).
int gm_adam_state_load(const char *path, const gm_adam_cfg *cfg, gm_adam_state *states, int k);

#ifdef __cplusplus
}
#endif
#endif
