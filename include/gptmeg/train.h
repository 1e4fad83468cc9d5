// gptmeg train: the training loop over gm_gpt2_grad and the optimizer (gptmeg/optim.h): batches,
// learning-rate schedule, clipping, AdamW, validation, checkpoints that resume bit for bit.
// Layer: train (core < io < kernels < tok < ops < model < train < lab < cli).
#ifndef GPTMEG_TRAIN_H
#define GPTMEG_TRAIN_H

#include "gptmeg/model.h"
#include "gptmeg/optim.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Precision recipes (docs/training.md "Recipes"): f32, fp16-megatron, bf16-megatron, bf16-autocast and
// fp16-deepspeed. Checkpoints store the name, not the value.
typedef enum {
  GM_RECIPE_F32 = 0,       // f32 weights, activations, gradients and optimizer
  GM_RECIPE_FP16_MEGATRON, // fp16 weights + fp32 main weights, Megatron's dynamic loss scale
  GM_RECIPE_BF16_MEGATRON, // bf16 weights + fp32 main weights and gradient accumulation
  GM_RECIPE_BF16_AUTOCAST, // torch.autocast('cpu', bfloat16) over f32 weights (profiles hf, hf-legacy, meg), f32 gradients and AdamW
  GM_RECIPE_FP16_DEEPSPEED, // fp16 weights + one flat fp32 master, DeepSpeed FP16_Optimizer's loss scale and unscale+clip
  GM_N_RECIPES
} gm_recipe;
const char *gm_recipe_name(gm_recipe r);
int gm_recipe_parse(const char *s, gm_recipe *out); // error lists the valid names

typedef struct {
  long step;          // 1-based: the optimizer steps taken so far, this one included
  float loss;         // the batch's training loss (f32, transformers' causal-LM loss)
  double lr;          // the learning rate this step used
  float grad_norm;    // the global L2 norm of the gradients before clipping (NaN on a skipped step)
  double loss_scale;  // the scale this step's backward used: 1 under f32 and bf16 recipes
  bool skipped;       // fp16: an overflow skipped the update
  double val_loss;    // NaN unless this step evaluated the validation tokens
  long tokens;        // tokens trained on so far
  double seconds;     // wall time of this step
} gm_train_step;

typedef void (*gm_train_step_fn)(void *ctx, const gm_train_step *s);

// One run. Zero-initialise, then set what is needed (gm_train_opts_default fills the usual values).
typedef struct {
  const gm_profile *profile; // numerics profile (its dtype must fit the recipe: f32 for GM_RECIPE_F32)
  gm_recipe recipe;
  int B, T;                  // batch, sequence length (T <= n_positions)
  long steps;                // optimizer steps to reach (counted from 0, including resumed ones)
  // data: either a token stream from which batches are drawn ...
  const int32_t *train_tokens;
  int64_t n_train;           // >= T
  const int32_t *val_tokens; // or NULL: no validation
  int64_t n_val;
  // ... or given batches [n_batches, B, T], step s (1-based) using batch s - 1 (labels = inputs)
  const int32_t *batches;
  long n_batches;
  uint64_t seed;             // the batch sampler's seed
  int threads;
  gm_adam_cfg adam;          // AdamW or Adam, single-tensor or fused, betas, eps, weight decay (gptmeg/optim.h)
  gm_lr_schedule lr;         // the schedule; step k (1-based) uses gm_lr_at(&lr, k - 1)
  double clip;               // max global grad norm (torch.nn.utils.clip_grad_norm_); <= 0: off
  double loss_scale_init;    // fp16-megatron: the dynamic loss scale's initial value (0: Megatron's 2^32);
                             // min 1, growth 2 every 1000 clean steps, backoff 0.5, hysteresis 2.
                             // fp16-deepspeed: 2^initial_scale_power (0: 2^16, the BigScience-style config's)
  long loss_scale_window;    // fp16-deepspeed: loss_scale_window (0: 1000); min_loss_scale 1, factor 2
  long eval_every;           // validation loss every K steps (and at the last); 0: never
  int eval_batches;          // validation batches of B x T (fixed windows of val_tokens)
  long save_every;           // checkpoint every K steps (and at the last); 0: only at the last
  const char *out_dir;       // checkpoints: OUT/step-NNNNNN/ and OUT/last -> the newest; NULL: none
  gm_train_step_fn on_step;  // called after every step (may be NULL)
  int (*on_save)(void *ctx, const char *dir); // called with each checkpoint's directory before it is
                             // renamed into place, to add files (a tokenizer); non-zero fails the save
  void *ctx;
} gm_train_opts;

// B 4, T 64, seed 1337, AdamW (single-tensor, betas 0.9/0.95, eps 1e-8, wd 0.1), constant lr 6e-4,
// clip 1.0, validation every 100 steps over 4 batches; everything else zero.
void gm_train_opts_default(gm_train_opts *o);
// The optimizer in one call: AdamW with these betas, eps and weight decay (fused: torch's fused=True
// kernel), lr peak `lr` after `warmup` linear steps, then, when cosine, transformers' cosine decay to 0
// at o->steps (set o->steps first), else constant.
void gm_train_set_optimizer(gm_train_opts *o, double lr, long warmup, bool cosine, double weight_decay, double beta1,
                            double beta2, double eps, bool fused);

// Optimizer state and progress of a run (resumable).
typedef struct {
  long step;
  gm_gpt2 exp_avg, exp_avg_sq; // the moments, in the model's layout (gm_gpt2_alloc_like)
  gm_rng rng;                  // the batch sampler
  long tokens;
  long opt_steps;              // optimizer steps taken (step minus fp16's skipped steps): Adam's step count
                               // and the lr schedule's position
  gm_megatron_scaler scaler;   // fp16-megatron's loss scale (saved in train_state.json)
  gm_deepspeed_scaler ds_scaler; // fp16-deepspeed's: FP16_Optimizer's scale and iteration counters
                               // (gm_deepspeed_fp16opt_update; saved in train_state.json). Under
                               // fp16-deepspeed Adam's step count is opt_steps + 1: FP16_Optimizer's
                               // constructor steps the optimizer once on zero gradients
} gm_train_state;

// Fresh state for m (zero moments, step 0, the sampler seeded from o->seed, the loss scaler at
// o->loss_scale_init or 2^32, DeepSpeed's at o->loss_scale_init or 2^16 with o->loss_scale_window).
int gm_train_state_init(gm_train_state *s, const gm_gpt2 *m, const gm_train_opts *o);
void gm_train_state_free(gm_train_state *s);

// Trains m in place from s->step to o->steps. Under the f16/bf16 recipes m holds the f32 main weights
// (what checkpoints save); the forward and backward run on a copy rounded to the profile's dtype,
// refreshed from m after every update (gm_gpt2_set_weights). Returns 0, or fails (bad options, a NaN loss under
// f32, I/O); the last complete checkpoint is never overwritten in place (written under a
// temporary name, then renamed).
int gm_train_run(gm_gpt2 *m, gm_train_state *s, const gm_train_opts *o);

// One optimizer step of m from its gradients g at learning rate lr: the global gradient norm (into
// *norm unless NULL), torch's clip_grad_norm_ when o->clip > 0, then o->adam on every tensor with
// s's moments, s->step being this step's count (1 for the first). What gm_train_run does per step
// (there with s->opt_steps as the count, which fp16's skipped steps leave behind s->step).
int gm_train_optimizer_step(gm_gpt2 *m, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o, double lr, float *norm);

// A checkpoint directory: config.json + model.safetensors (transformers loads it), optim.safetensors
// (the moments), train_state.json (step, tokens, sampler state, recipe, profile, shapes), and what
// o->on_save adds (vocab.json, merges.txt). Writing is atomic: DIR.tmp is filled then renamed over DIR.
int gm_train_save(const char *dir, const gm_gpt2 *m, const gm_train_state *s, const gm_train_opts *o);
// Loads a checkpoint written by gm_train_save into m and s; refuses one of another model shape,
// recipe, profile or batch shape than o's (one line naming what differs).
int gm_train_load(const char *dir, gm_gpt2 *m, gm_train_state *s, const gm_train_opts *o);

#ifdef __cplusplus
}
#endif
#endif
