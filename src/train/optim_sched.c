// Learning-rate schedules: the lr fed to the optimizer at each step, in double as the Python
// references compute it (math.cos is glibc's cos, the same as C's).
//
// Numerics contract: every operation below is the reference's own double operation in its order
// (checked bit for bit against the lr each step of the golden runs, tests/test_optim.c):
//   Megatron-LM OptimizerParamScheduler.get_lr (megatron/core/optimizer_param_scheduler.py), with
//   num_steps = step:
//     warmup_steps > 0 and num_steps <= warmup_steps: init_lr + (max_lr - init_lr) * num_steps / warmup_steps
//     num_steps > decay_steps: min_lr
//     else ratio = (num_steps - warmup) / (decay_steps - warmup),
//          coeff = 0.5 * (cos(pi * ratio) + 1.0), lr = min_lr + coeff * (max_lr - min_lr)
//   transformers get_cosine_schedule_with_warmup under torch's LambdaLR: lr = base_lr * f(step),
//     f = step / max(1, warmup) while step < warmup, else
//     max(0, 0.5 * (1 + cos(pi * num_cycles * 2 * progress))),
//     progress = (step - warmup) / max(1, total - warmup).
#include "gptmeg/optim.h"

#include <math.h>

static const double PI = 3.141592653589793; // math.pi

static double megatron(const gm_lr_schedule *s, long num_steps) {
  if (s->warmup_steps > 0 && num_steps <= s->warmup_steps)
    return s->init_lr + ((s->max_lr - s->init_lr) * (double)num_steps / (double)s->warmup_steps);
  if (num_steps > s->decay_steps) return s->min_lr;
  double decay_ratio = (double)(num_steps - s->warmup_steps) / (double)(s->decay_steps - s->warmup_steps);
  double delta_lr = s->max_lr - s->min_lr;
  double coeff = 0.5 * (cos(PI * decay_ratio) + 1.0);
  return s->min_lr + coeff * delta_lr;
}

static double hf_cosine(const gm_lr_schedule *s, long step) {
  long w = s->warmup_steps;
  double f;
  if (step < w) {
    f = (double)step / (double)(w > 1 ? w : 1);
  } else {
    long span = s->decay_steps - w;
    double progress = (double)(step - w) / (double)(span > 1 ? span : 1);
    double c = 0.5 * (1.0 + cos(PI * s->num_cycles * 2.0 * progress));
    f = c > 0.0 ? c : 0.0; // Python's max(0.0, c): 0.0 when c is not greater
  }
  return s->max_lr * f;
}

double gm_lr_at(const gm_lr_schedule *s, long step) {
  switch (s->kind) {
  case GM_LR_MEGATRON: return megatron(s, step);
  case GM_LR_HF_COSINE: return hf_cosine(s, step);
  case GM_LR_CONSTANT:
  default: return s->max_lr;
  }
}
