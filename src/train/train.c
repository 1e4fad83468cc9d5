// The training loop: per step a batch (drawn from the token stream, or the given one), the loss and
// gradients (gm_gpt2_grad), the global gradient norm and Megatron's clip, the learning rate of the
// schedule, AdamW on every tensor (gptmeg/optim.h), then validation and checkpoints when due.
// Numerics contract: the f32 recipe's update of every parameter is the optimizer's (bit for bit
// torch's _single_tensor_adam or fused kernel, see optim.h); the gradients are gm_gpt2_grad's. The
// run is a function of (weights, options, seed, step): resuming a checkpoint of step k and running
// to n gives the bits of a run straight to n (the sampler state, moments and step are saved).
// The Megatron recipes (bf16-megatron, fp16-megatron) keep f32 main weights (the gm_gpt2 the caller
// passes; a fresh run starts them at the dtype weights widened, as Megatron's optimizer copies its
// fp16/bf16 model's parameters) and a working copy in the dtype; per step, as the torch reference of
// tools/ref/gen_recipe_goldens.py runs it: the working copy's gm_gpt2_grad (fp16: with the loss's
// gradient = the loss scale), the gradients widened to f32 exactly (the buffers are f32 storage of
// dtype values: they are the main gradients), fp16: gm_unscale_grads by
// f32(1/double(scale)) and the scaler's update, the step skipped (no Adam, no lr step) on inf/NaN;
// then the same clip and AdamW as f32 on the main weights, and the working copy = round(main)
// (gm_gpt2_set_weights).
// fp16-deepspeed is DeepSpeed's FP16_Optimizer (deepspeed/runtime/fp16/fused_optimizer.py, v0.5.x as
// Megatron-DeepSpeed/BigScience ran it; tools/ref/gen_recipe_goldens.py transcribes it in torch): the
// master is one flat f32 buffer, the exact widening of the fp16 weights (not the checkpoint's f32
// values); its constructor steps the optimizer once on zero gradients at the schedule's first lr (Adam's
// count then runs one ahead, the fp16 copy is not refreshed); per step the backward with the loss's
// gradient = f32(cur_scale), the overflow check on the fp16 gradients, FP16_Optimizer's _update_scale
// (gm_deepspeed_fp16opt_update) BEFORE the unscale, skip on overflow; else the flat norm in f32
// (gm_l2_norm_f32 over the whole buffer), squared, summed and rooted in double through two f32
// roundings as get_grad_norm / the data-parallel average / get_global_norm do, combined_scale =
// cur_scale (the updated one) times the clip factor when it exceeds 1, every gradient times
// f32(1 / combined_scale), Adam over the flat buffer, the fp16 copy = round(master).
// bf16-autocast is torch.autocast('cpu', bfloat16) around the forward of an f32 model: the caller's
// f32 weights are the parameters themselves (a fresh run starts at the checkpoint's values), a bf16
// working copy of them feeds the linears (gm_gpt2_grad_opts.autocast), the gradients are f32
// (gm_gpt2_grad under autocast); then the f32 recipe's clip and AdamW, and the copy = round(m).
#include "gptmeg/kernels.h"
#include "gptmeg/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gm_recipe_name(gm_recipe r) {
  static const char *names[GM_N_RECIPES] = {"f32", "fp16-megatron", "bf16-megatron", "bf16-autocast",
                                                  "fp16-deepspeed"};
  return (unsigned)r < GM_N_RECIPES ? names[r] : "?";
}

int gm_recipe_parse(const char *s, gm_recipe *out) {
  for (int r = 0; r < GM_N_RECIPES; r++)
    if (!strcmp(s, gm_recipe_name((gm_recipe)r))) { *out = (gm_recipe)r; return 0; }
  return gm_fail("unknown recipe '%s' (recipes: f32, fp16-megatron, bf16-megatron, fp16-deepspeed, bf16-autocast)", s);
}

void gm_train_opts_default(gm_train_opts *o) {
  memset(o, 0, sizeof *o);
  o->recipe = GM_RECIPE_F32;
  o->B = 4;
  o->T = 64;
  o->seed = 1337;
  o->clip = 1.0;
  o->eval_every = 100;
  o->eval_batches = 4;
  gm_train_set_optimizer(o, 6e-4, 0, false, 0.1, 0.9, 0.95, 1e-8, false);
}

void gm_train_set_optimizer(gm_train_opts *o, double lr, long warmup, bool cosine, double weight_decay, double beta1,
                            double beta2, double eps, bool fused) {
  o->adam = gm_adam_cfg_default(GM_ADAMW, fused ? GM_ADAM_FUSED : GM_ADAM_SINGLE);
  o->adam.beta1 = beta1;
  o->adam.beta2 = beta2;
  o->adam.eps = eps;
  o->adam.weight_decay = weight_decay;
  memset(&o->lr, 0, sizeof o->lr);
  o->lr.kind = cosine ? GM_LR_HF_COSINE : GM_LR_CONSTANT;
  o->lr.max_lr = lr;
  o->lr.warmup_steps = warmup;
  o->lr.decay_steps = o->steps;
  o->lr.num_cycles = 0.5;
}

int gm_train_state_init(gm_train_state *s, const gm_gpt2 *m, const gm_train_opts *o) {
  memset(s, 0, sizeof *s);
  if (gm_gpt2_alloc_like(&s->exp_avg, m) || gm_gpt2_alloc_like(&s->exp_avg_sq, m)) {
    gm_train_state_free(s);
    return -1;
  }
  gm_rng_seed(&s->rng, o->seed);
  gm_megatron_scaler_init(&s->scaler, o->loss_scale_init > 0 ? o->loss_scale_init : 4294967296.0, 1.0, 2.0, 0.5, 1000, 2);
  gm_deepspeed_scaler_init(&s->ds_scaler, o->loss_scale_init > 0 ? o->loss_scale_init : 65536.0, 2.0,
                           o->loss_scale_window > 0 ? o->loss_scale_window : 1000, 1.0, 1, false);
  return 0;
}

// The dtype the recipe's forward and backward run in.
// (bf16-autocast: the profile's, bf16; its parameters stay f32)
static gm_dtype recipe_dtype(gm_recipe r) {
  return r == GM_RECIPE_FP16_MEGATRON || r == GM_RECIPE_FP16_DEEPSPEED ? GM_F16
         : r == GM_RECIPE_BF16_MEGATRON || r == GM_RECIPE_BF16_AUTOCAST ? GM_BF16
                                                                       : GM_F32;
}

void gm_train_state_free(gm_train_state *s) {
  gm_gpt2_free(&s->exp_avg);
  gm_gpt2_free(&s->exp_avg_sq);
  memset(s, 0, sizeof *s);
}

static int check_opts(const gm_gpt2 *m, const gm_train_state *s, const gm_train_opts *o) {
  if (!o->profile) return gm_fail("training needs a numerics profile");
  if ((unsigned)o->recipe >= GM_N_RECIPES) return gm_fail("unknown recipe %d", (int)o->recipe);
  const gm_dtype dt = recipe_dtype(o->recipe);
  if (o->recipe == GM_RECIPE_BF16_AUTOCAST) {
    // transformers' own eager attention is what autocast is reproduced for (docs/training.md)
    const char *pn = o->profile->name; // the profiles whose pieces compose with autocast (checked against torch)
    if (strcmp(pn, "hf") != 0 && strcmp(pn, "hf-legacy") != 0 && strcmp(pn, "meg") != 0)
      return gm_fail("recipe %s is reproduced under profiles hf, hf-legacy and meg only (megatron's fused "
                     "bias-GELU would meet an f32 bias under torch.autocast), not '%s'", gm_recipe_name(o->recipe), pn);
    if (m->mixed_dtypes || m->file_dtype != GM_F32)
      return gm_fail("the checkpoint holds %s weights, but recipe %s trains an f32 checkpoint (autocast keeps the parameters f32)",
                     m->mixed_dtypes ? "mixed-dtype" : gm_dtype_name(m->file_dtype), gm_recipe_name(o->recipe));
  }
  if (o->profile->dtype != dt || m->dtype != GM_F32)
    return gm_fail("recipe %s trains f32 (main) weights under a %s profile (got weights %s, profile %s)",
                   gm_recipe_name(o->recipe), gm_dtype_name(dt), gm_dtype_name(m->dtype), gm_dtype_name(o->profile->dtype));
  // a checkpoint fits a recipe when its weights are f32, or already the recipe's dtype (the main
  // weights are then their exact widening, as Megatron's .float() copies of bf16/fp16 parameters)
  if (m->mixed_dtypes || (m->file_dtype != GM_F32 && m->file_dtype != dt))
    return gm_fail("the checkpoint holds %s weights, but recipe %s trains an f32%s%s checkpoint",
                   m->mixed_dtypes ? "mixed-dtype" : gm_dtype_name(m->file_dtype), gm_recipe_name(o->recipe),
                   dt == GM_F32 ? "" : " or ", dt == GM_F32 ? "" : gm_dtype_name(dt));
  if (o->B <= 0 || o->T <= 0) return gm_fail("batch %d x %d: both must be > 0", o->B, o->T);
  if (o->T > m->cfg.n_positions) return gm_fail("--seq %d exceeds the model's n_positions %d", o->T, m->cfg.n_positions);
  if (o->steps < s->step) return gm_fail("--steps %ld is below the resumed step %ld", o->steps, s->step);
  if (!o->batches && (!o->train_tokens || o->n_train < o->T))
    return gm_fail("the training tokens (%lld) are fewer than one sequence of %d", (long long)o->n_train, o->T);
  if (o->batches && o->n_batches < o->steps)
    return gm_fail("%ld batches given for %ld steps: one batch a step is needed", o->n_batches, o->steps);
  if (o->val_tokens && o->eval_every > 0 && o->n_val < o->T)
    return gm_fail("the validation tokens (%lld) are fewer than one sequence of %d", (long long)o->n_val, o->T);
  for (int64_t i = 0; o->train_tokens && i < o->n_train; i++)
    if (o->train_tokens[i] < 0 || o->train_tokens[i] >= m->cfg.vocab_size)
      return gm_fail("training token %lld is id %d, outside the vocabulary [0, %d)", (long long)i, o->train_tokens[i],
                     m->cfg.vocab_size);
  return 0;
}

// The batch of step `step` (1-based) into ids [B, T]: the given one, or B windows of T tokens at
// offsets drawn uniformly from the sampler.
static void draw_batch(const gm_train_opts *o, gm_train_state *s, long step, int32_t *ids) {
  const size_t bt = (size_t)o->B * o->T;
  if (o->batches) {
    memcpy(ids, o->batches + (size_t)(step - 1) * bt, bt * sizeof *ids);
    return;
  }
  const uint64_t span = (uint64_t)(o->n_train - o->T) + 1;
  for (int b = 0; b < o->B; b++) {
    uint64_t at = gm_rng_u64(&s->rng) % span;
    memcpy(ids + (size_t)b * o->T, o->train_tokens + at, (size_t)o->T * sizeof *ids);
  }
}

// Mean loss over eval_batches fixed batches of the validation stream (windows spread evenly over it),
// forward only; gptmeg's double cross-entropy of the f32 logits.
// m: the weights in the profile's dtype, or under autocast the f32 weights and ac their bf16 copy.
static int val_loss(const gm_gpt2 *m, const gm_gpt2 *ac, const gm_train_opts *o, double *out) {
  const int B = o->B, T = o->T, V = m->cfg.vocab_size, nb = o->eval_batches > 0 ? o->eval_batches : 1;
  int32_t *ids = malloc((size_t)B * T * sizeof *ids);
  float *logits = malloc((size_t)B * T * V * sizeof *logits);
  if (!ids || !logits) { free(ids), free(logits); return gm_fail("out of memory for the validation batch"); }
  const int64_t windows = o->n_val - T + 1, count = (int64_t)nb * B;
  double sum = 0;
  int rc = 0;
  gm_op_ctx c;
  gm_op_ctx_init(&c, o->profile, o->threads, NULL, NULL);
  for (int k = 0; k < nb && !rc; k++) {
    for (int b = 0; b < B; b++) {
      int64_t w = ((int64_t)k * B + b) * windows / count;
      memcpy(ids + (size_t)b * T, o->val_tokens + w, (size_t)T * sizeof *ids);
    }
    gm_gpt2_run_opts ro = {0};
    ro.profile = o->profile;
    ro.tokens = ids;
    ro.B = B;
    ro.T = T;
    ro.logits = logits;
    ro.threads = o->threads;
    ro.autocast = ac;
    double l = 0;
    rc = gm_gpt2_run(m, &ro) || gm_op_crossentropy_fwd(&c, &l, NULL, NULL, logits, ids, B, T, V);
    sum += l;
  }
  free(ids);
  free(logits);
  *out = sum / nb;
  return rc ? -1 : 0;
}

// ---- the optimizer, tensor by tensor (gptmeg/optim.h) ------------------------------------------
// count: this step's Adam step count (1 for the first)
static int optimizer_step(gm_gpt2 *m, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o, double lr, float *norm, long count) {
  const size_t cap = (size_t)m->cfg.n_layer * 12 + 6;
  gm_gpt2_tensor *tw = calloc(4 * cap, sizeof *tw);
  if (!tw) return gm_fail("out of memory");
  gm_gpt2_tensor *tg = tw + cap, *tm = tg + cap, *tv = tm + cap;
  int n = gm_gpt2_tensors(m, tw);
  int rc = n < 0 || gm_gpt2_tensors(g, tg) < 0 || gm_gpt2_tensors(&s->exp_avg, tm) < 0 || gm_gpt2_tensors(&s->exp_avg_sq, tv) < 0;
  const float **gp = rc ? NULL : malloc((size_t)n * sizeof *gp);
  size_t *gn = rc ? NULL : malloc((size_t)n * sizeof *gn);
  if (!rc && (!gp || !gn)) rc = gm_fail("out of memory");
  if (!rc) {
    for (int i = 0; i < n; i++) { gp[i] = tg[i].data; gn[i] = tg[i].numel; }
    float total = o->clip > 0 ? gm_clip_grad_norm_torch((float *const *)gp, gn, n, o->clip, o->threads)
                : norm               ? gm_grad_global_norm(gp, gn, n)
                                     : 0.0f;
    if (norm) *norm = total;
    for (int i = 0; i < n && !rc; i++) { // the moments live in s's model-shaped tensors; step counts before this one
      gm_adam_state st = {tw[i].numel, count - 1, tm[i].data, tv[i].data};
      rc = gm_adam_step(&o->adam, &st, tw[i].data, tg[i].data, tw[i].numel, lr, o->threads > 0 ? o->threads : 1);
    }
  }
  free(gp);
  free(gn);
  free(tw);
  return rc ? -1 : 0;
}

int gm_train_optimizer_step(gm_gpt2 *m, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o, double lr, float *norm) {
  return optimizer_step(m, g, s, o, lr, norm, s->step);
}

// fp16: unscale every gradient by the scaler's inverse scale and check for inf/NaN (torch's
// _amp_foreach_non_finite_check_and_unscale_ over the main gradients); true when found.
static int unscale(gm_gpt2 *g, float inv, int threads, bool *found) {
  const size_t cap = (size_t)g->cfg.n_layer * 12 + 6;
  gm_gpt2_tensor *t = calloc(cap, sizeof *t);
  float **p = calloc(cap, sizeof *p);
  size_t *n = calloc(cap, sizeof *n);
  int k = t && p && n ? gm_gpt2_tensors(g, t) : gm_fail("out of memory");
  for (int i = 0; i < k; i++) { p[i] = t[i].data; n[i] = t[i].numel; }
  if (k >= 0) *found = gm_unscale_grads(p, n, k, inv, threads > 0 ? threads : 1);
  free(t), free(p), free(n);
  return k < 0 ? -1 : 0;
}

// ---- fp16-deepspeed: FP16_Optimizer's step over the flat master (DeepSpeed v0.5.x) ----------------
// The flat buffers are the models' storages: one allocation in model.parameters() order (the tied
// lm_head once), which is how _flatten_dense_tensors lays out the one parameter group. m (the f32
// master), g (the f32 gradients, fp16 values as stored) and the two moments are (n_params) f32 each.
static int ds_adam(gm_gpt2 *m, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o, double lr, long count) {
  gm_adam_state st = {(size_t)m->n_params, count - 1, s->exp_avg.storage, s->exp_avg_sq.storage};
  return gm_adam_step(&o->adam, &st, m->storage, g->storage, (size_t)m->n_params, lr, o->threads > 0 ? o->threads : 1);
}

// FP16_Optimizer.__init__: the master = the fp16 weights widened (work's storage holds them), then
// initialize_optimizer_states: one optimizer step on zero gradients at the lr the scheduler set when it
// was built (the schedule's step 0; Megatron-DeepSpeed builds it before deepspeed.initialize). The
// fp16 weights are not refreshed from it.
static int ds_init(gm_gpt2 *m, const gm_gpt2 *work, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o) {
  gm_round_copy(work->dtype, m->storage, m->storage, (size_t)m->n_params, o->threads); // work's values, widened
  memset(g->storage, 0, (size_t)g->n_params * sizeof(float));
  return ds_adam(m, g, s, o, gm_lr_at(&o->lr, 0), 1);
}

// step() after the overflow check and _update_scale found no overflow: the norm, unscale_and_clip_grads,
// the optimizer. *norm gets the unscaled norm f32(scaled_norm / cur_scale) (the current DeepSpeed's
// _global_grad_norm; 0.5.x stashed the scaled one).
static int ds_step(gm_gpt2 *m, gm_gpt2 *g, gm_train_state *s, const gm_train_opts *o, double lr, float *norm, long count) {
  const size_t n = (size_t)g->n_params;
  // get_grad_norm: total = 0. + flat.float().norm(2).item() ** 2.0; torch.cuda.FloatTensor([total])[0].item() ** (1/2)
  float n32 = gm_l2_norm_f32(g->storage, n);
  double total = 0.0 + pow((double)n32, 2.0);
  double gn = pow((double)(float)total, 1.0 / 2.0);
  if (isinf(gn) || isnan(gn)) gn = -1;
  // step(): the data-parallel average through an f32 tensor (world size 1), then get_global_norm([norm])
  double avg = (double)(float)(gn * 1.0 / 1.0);
  double scaled = sqrt(0.0 + pow(avg, 2.0));
  // unscale_and_clip_grads with the scale _update_scale has just set
  const double cur = s->ds_scaler.cur_scale;
  double combined = cur;
  if (o->clip > 0) {
    double clip = ((scaled / cur) + 1e-6) / o->clip;
    if (clip > 1) combined = clip * cur;
  }
  const float f = (float)(1.0 / combined); // grad.mul_(1. / combined_scale): the Python float as f32
  float *gp = g->storage;
  for (size_t i = 0; i < n; i++) gp[i] = gp[i] * f;
  if (norm) *norm = (float)(scaled / cur);
  return ds_adam(m, g, s, o, lr, count);
}

static int save_due(const gm_train_opts *o, const gm_gpt2 *m, const gm_train_state *s) {
  if (!o->out_dir) return 0;
  bool due = s->step == o->steps || (o->save_every > 0 && s->step % o->save_every == 0);
  if (!due) return 0;
  size_t n = strlen(o->out_dir) + 32;
  char *dir = malloc(n);
  if (!dir) return gm_fail("out of memory");
  snprintf(dir, n, "%s/step-%06ld", o->out_dir, s->step);
  int rc = gm_train_save(dir, m, s, o);
  free(dir);
  return rc;
}

int gm_train_run(gm_gpt2 *m, gm_train_state *s, const gm_train_opts *o) {
  if (check_opts(m, s, o)) return -1;
  const gm_dtype dt = recipe_dtype(o->recipe);
  // ac (bf16-autocast): the forward and backward run on m (f32) with work, m's bf16 copy, for the linears
  // (autocast's cached weight casts: one rounding per weight per forward), gradients f32 into g
  const bool ac = o->recipe == GM_RECIPE_BF16_AUTOCAST;
  const bool mixed = dt != GM_F32 && !ac, scaled = o->recipe == GM_RECIPE_FP16_MEGATRON, ds = o->recipe == GM_RECIPE_FP16_DEEPSPEED;
  gm_gpt2 work, g; // the weights the forward/backward run on (mixed: the dtype copy of m), the gradients
  memset(&work, 0, sizeof work);
  if (mixed || ac) {
    if (gm_gpt2_alloc_working(&work, m, dt)) return -1; // bf16: the matrices as the kernels' pairs only
    if (gm_gpt2_set_weights(&work, m, o->threads)) { gm_gpt2_free(&work); return -1; }
  }
  const gm_gpt2 *w = mixed ? &work : m;
  if (gm_gpt2_alloc_like(&g, w)) { gm_gpt2_free(&work); return -1; }
  int32_t *ids = malloc((size_t)o->B * o->T * sizeof *ids);
  int rc = ids ? 0 : gm_fail("out of memory for a batch");
  if (!rc && ds && s->step == 0) rc = ds_init(m, &work, &g, s, o); // a fresh run: FP16_Optimizer's constructor
  // a fresh Megatron run: the main weights are the dtype model's widened (Float16Module converts the
  // model before the optimizer copies .float() of its parameters; a checkpoint without optimizer
  // state is loaded into the dtype model, then reload_model_params copies them again)
  // (the working copy's values are round(m): rounding m in place gives them, widened)
  if (!rc && mixed && !ds && s->step == 0) gm_round_copy(dt, m->storage, m->storage, (size_t)m->n_params, o->threads);
  while (!rc && s->step < o->steps) {
    double t0 = gm_now_s();
    gm_train_step r;
    memset(&r, 0, sizeof r);
    r.step = s->step + 1;
    draw_batch(o, s, r.step, ids);
    r.loss_scale = scaled ? s->scaler.scale : ds ? s->ds_scaler.cur_scale : 1.0;
    // DeepSpeed: scaled_loss = loss.float() * cur_scale (a Python float: f32(cur_scale) in the product)
    gm_gpt2_grad_opts go = {o->profile, ids, NULL, o->B, o->T, o->threads,
                            scaled ? s->scaler.scale : ds ? (float)s->ds_scaler.cur_scale : 1.0f, ac ? &work : NULL};
    if ((rc = gm_gpt2_grad(w, &go, &g, &r.loss, NULL))) break;
    if (!isfinite(r.loss)) {
      rc = gm_fail("step %ld: the loss is %g under %s (the run diverged); stopping", r.step, r.loss, gm_recipe_name(o->recipe));
      break;
    }
    // g's f32 storage holds the dtype's values: it is the f32 main gradients (exact widening)
    if (scaled) {
      bool found = false;
      if ((rc = unscale(&g, gm_megatron_scaler_inv(&s->scaler), o->threads, &found))) break;
      gm_megatron_scaler_update(&s->scaler, found);
      r.skipped = found; // Megatron: no optimizer step, no lr step, no grad norm
    } else if (ds) { // CheckOverflow on the fp16 gradients (inv 1: nothing scaled), then _update_scale
      bool found = false;
      if ((rc = unscale(&g, 1.0f, o->threads, &found))) break;
      gm_deepspeed_fp16opt_update(&s->ds_scaler, found);
      r.skipped = found; // the engine skips the lr scheduler's step too
    }
    s->step = r.step;
    r.lr = gm_lr_at(&o->lr, s->opt_steps); // the schedule advances with the optimizer steps taken
    if (r.skipped) r.grad_norm = NAN;
    else {
      s->opt_steps++; // the optimizer's step count (bias corrections) includes this step
      if (ds ? (rc = ds_step(m, &g, s, o, r.lr, &r.grad_norm, s->opt_steps + 1))
             : (rc = optimizer_step(m, &g, s, o, r.lr, &r.grad_norm, s->opt_steps)))
        break;
      if ((mixed || ac) && (rc = gm_gpt2_set_weights(&work, m, o->threads))) break;
    }
    s->tokens += (long)o->B * o->T;
    r.tokens = s->tokens;
    r.val_loss = NAN;
    if (o->val_tokens && o->eval_every > 0 && (r.step % o->eval_every == 0 || r.step == o->steps))
      if ((rc = val_loss(w, ac ? &work : NULL, o, &r.val_loss))) break;
    r.seconds = gm_now_s() - t0;
    if (o->on_step) o->on_step(o->ctx, &r);
    rc = save_due(o, m, s);
  }
  free(ids);
  gm_gpt2_free(&g);
  gm_gpt2_free(&work);
  return rc;
}
