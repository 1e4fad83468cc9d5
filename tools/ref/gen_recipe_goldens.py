#!/usr/bin/env python3
"""Reference runs of the mixed-precision recipes bf16-megatron, fp16-megatron and fp16-deepspeed: 20 steps each.

The loop is Megatron-LM's mixed-precision optimizer (Float16OptimizerWithFloat16Params) written in
plain torch (Megatron needs CUDA): the model is transformers' GPT2LMHeadModel in bf16/fp16
(gm_profiles' pieces swapped in, as gen_train_goldens.py / gen_grad_goldens.py), its f32 main
weights are the dtype model's parameters widened (Megatron converts the model before building the
optimizer, which copies .float() of each parameter), and each step:

  zero_grad; loss = model(batch, labels=batch).loss
  bf16: loss.backward()                      fp16: (loss * scale).backward()   (scale: f32 tensor [1])
  main.grad = p.grad.float()                 (exact widening)
  fp16: found_inf via torch._amp_foreach_non_finite_check_and_unscale_(main grads, found_inf,
        scale.double().reciprocal().float()); DynamicGradScaler.update(found_inf) (transcribed:
        initial 2^32 unless the case says otherwise, min 1, growth 2 every 1000, backoff 0.5,
        hysteresis 2); on found_inf the step is skipped (no optimizer step, no scheduler step)
  total_norm = torch.nn.utils.clip_grad_norm_(main params, CLIP)   (gptmeg's f32 recipe's clip)
  AdamW(main params).step(); scheduler.step()
  p.data.copy_(main) for every model parameter (RNE to the dtype)

fp16-deepspeed is DeepSpeed's FP16_Optimizer (deepspeed/runtime/fp16/fused_optimizer.py at v0.5.8,
the DeepSpeed of Megatron-DeepSpeed/BigScience, with engine.py's backward and _take_model_step and
runtime/utils.py's get_grad_norm, get_global_norm and CheckOverflow), transcribed in plain torch
(DeepSpeed needs CUDA and does not run here: a transcription, as for Megatron) in the class
DeepSpeedFP16Optimizer below: the fp16 params flattened into one buffer (one param group), the f32
master its .float() copy, torch.optim.AdamW(foreach=False) over that master (DeepSpeed would wrap its
CUDA FusedAdam: not reproducible on CPU, torch's AdamW stands in), built after the lr scheduler as
Megatron-DeepSpeed builds them, so the constructor's zero-gradient optimizer step runs at the
schedule's first lr; each step (loss.float() * cur_scale).backward(), the overflow check,
_update_scale, skip or norm + unscale_and_clip_grads + step + copy back + scheduler.step().
`--recipe R` regenerates only the cases of recipe R in the existing index.json (the others are
loaded and written back unchanged).
bf16-autocast (run_autocast) is not a Megatron loop: the f32 model trained directly, its forward and loss
under torch.autocast('cpu', dtype=torch.bfloat16), loss.backward() outside, then the f32 clip and AdamW.

The optimizer, schedule, batches and hyperparameters are gen_train_goldens.py's (same batches:
numpy default_rng(7)). Writes tests/golden/targets/intel-amx/recipes/index.json: per case and step
the f32 loss and total norm as hex bits (norm null when skipped), the lr, the loss scale used for
the step's backward, skipped, and gm_hash64 of the f32 main weights' bits concatenated in
checkpoint order after the step. Run from the repo root on an Intel AMX host (the matmul orders of
the gradients are that CPU class's): python3 tools/ref/gen_recipe_goldens.py
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_grad_goldens as gg  # noqa: E402
import gm_inputs  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "recipes")
TRAIN = os.path.join("tests", "golden", "targets", "intel-amx", "train")
STEPS, B, T = 20, 2, 16
LR, WARMUP, WD, BETAS, EPS, CLIP = 3e-3, 4, 0.1, (0.9, 0.95), 1e-8, 1.0
# (checkpoint, profile, recipe, threads, initial loss scale for fp16)
CASES = [("base", "hf", "bf16-megatron", 1, None), ("base", "hf", "bf16-megatron", 2, None),
         ("quick_untied", "hf", "bf16-megatron", 1, None), ("base", "meg", "bf16-megatron", 1, None),
         ("base", "hf-legacy", "bf16-megatron", 1, None), ("base", "megatron", "bf16-megatron", 1, None),
         ("base", "hf", "fp16-megatron", 1, 2.0 ** 32), ("quick_untied", "hf", "fp16-megatron", 1, 2.0 ** 32),
         ("quick_untied", "hf", "fp16-megatron", 1, 2.0 ** 12)]
# fp16-deepspeed: (checkpoint, profile, recipe, threads, 2^initial_scale_power, loss_scale_window[,
# gradient_clipping]). From 2^16 the first step overflows; window 4 lets the scale grow back within 20
# steps and overflow again. Clipping 0 (off): the unscale alone, where a growth step's gradients are
# divided by the grown scale (halved) with no clip factor to absorb it.
CASES += [("base", "hf", "fp16-deepspeed", 1, 2.0 ** 16, 4), ("base", "hf", "fp16-deepspeed", 2, 2.0 ** 16, 4),
          ("quick_untied", "hf", "fp16-deepspeed", 1, 2.0 ** 16, 4),
          ("quick_untied", "hf", "fp16-deepspeed", 1, 2.0 ** 16, 4, 0.0)]
# bf16-autocast: torch.autocast("cpu", dtype=torch.bfloat16) around the forward of the f32 model (profiles as
# gen_autocast_grad_goldens.py loads them: hf, hf-legacy, meg), loss.backward() outside it, then the f32 loop (clip, AdamW on the f32 parameters)
CASES += [("base", "hf", "bf16-autocast", 1, None), ("base", "hf", "bf16-autocast", 2, None),
          ("quick_untied", "hf", "bf16-autocast", 1, None), ("base", "hf-legacy", "bf16-autocast", 1, None),
          ("base", "meg", "bf16-autocast", 1, None)]
DTYPE = {"bf16-megatron": torch.bfloat16, "fp16-megatron": torch.float16, "fp16-deepspeed": torch.float16}


class DynamicGradScaler:
    """Megatron-LM's DynamicGradScaler.update, transcribed (f32 tensor scale)."""

    def __init__(self, initial, min_scale=1.0, growth=2.0, backoff=0.5, interval=1000, hysteresis=2):
        self.scale = torch.tensor([initial], dtype=torch.float32)
        self.min_scale = torch.tensor([min_scale], dtype=torch.float32)
        self.growth, self.backoff = torch.tensor([growth]), torch.tensor([backoff])
        self.interval, self.hysteresis = interval, hysteresis
        self.growth_tracker, self.hysteresis_tracker = 0, hysteresis

    @property
    def inv_scale(self):
        return self.scale.double().reciprocal().float()

    def update(self, found_inf):
        if found_inf:
            self.growth_tracker = 0
            self.hysteresis_tracker -= 1
            if self.hysteresis_tracker <= 0:
                self.scale = torch.max(self.scale * self.backoff, self.min_scale)
        else:
            self.growth_tracker += 1
            if self.growth_tracker == self.interval:
                self.growth_tracker = 0
                self.hysteresis_tracker = self.hysteresis
                self.scale = self.scale * self.growth


class DeepSpeedFP16Optimizer:
    """DeepSpeed v0.5.8's FP16_Optimizer with a dynamic loss scale, one param group, no model/data
    parallelism (world size 1), transcribed. `optimizer` is built over the fp16 params (and its lr
    scheduler already attached), as the engine receives it."""

    def __init__(self, optimizer, init_scale, scale_window, min_scale=1, clip_grad=CLIP):
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
        self.flatten, self.unflatten = _flatten_dense_tensors, _unflatten_dense_tensors
        self.optimizer = optimizer
        assert len(optimizer.param_groups) == 1
        group = optimizer.param_groups[0]
        self.fp16 = list(group["params"])
        self.fp16_flat = self.flatten([p.clone().detach() for p in self.fp16])
        for p, q in zip(self.fp16, self.unflatten(self.fp16_flat, self.fp16)):
            p.data = q.data
        self.master = self.fp16_flat.clone().float().detach()
        self.master.requires_grad = True
        group["params"] = [self.master]
        # dynamic_loss_args: INITIAL_LOSS_SCALE = 2**initial_scale_power, SCALE_WINDOW, MIN_LOSS_SCALE
        # (DELAYED_SHIFT, the hysteresis, is in the dict but FP16_Optimizer does not read it)
        self.cur_iter, self.last_overflow_iter, self.scale_factor = 0, -1, 2
        self.cur_scale, self.scale_window, self.min_loss_scale = init_scale, scale_window, min_scale
        self.clip_grad = clip_grad
        # initialize_optimizer_states: one step on zero gradients
        self.master.grad = torch.zeros(self.master.size())
        self.optimizer.step()
        self.master.grad = None

    def backward(self, loss):
        scaled_loss = (loss.float()) * self.cur_scale
        scaled_loss.backward()

    @staticmethod
    def has_inf_or_nan(x):  # CheckOverflow._has_inf_or_nan
        cpu_sum = float(x.float().sum())
        return cpu_sum == float("inf") or cpu_sum == -float("inf") or cpu_sum != cpu_sum

    def update_scale(self, skip):  # _update_scale
        if skip:
            self.cur_scale = max(self.cur_scale / self.scale_factor, self.min_loss_scale)
            self.last_overflow_iter = self.cur_iter
        else:
            stable_interval = (self.cur_iter - self.last_overflow_iter) - 1
            if (stable_interval > 0) and (stable_interval % self.scale_window == 0):
                self.cur_scale *= self.scale_factor
        self.cur_iter += 1

    @staticmethod
    def get_grad_norm(parameters):  # runtime/utils.py, norm_type 2, mpu None
        total_norm = 0.
        for p in parameters:
            param_norm = p.grad.data.float().norm(2.0)
            total_norm += param_norm.item() ** 2.0
        total_norm_cuda = torch.FloatTensor([float(total_norm)])  # torch.cuda.FloatTensor there
        total_norm = total_norm_cuda[0].item() ** (1. / 2.0)
        if total_norm == float("inf") or total_norm == -float("inf") or total_norm != total_norm:
            total_norm = -1
        return total_norm

    @staticmethod
    def get_global_norm(norm_list):
        total_norm = 0.0
        for norm in norm_list:
            total_norm += norm ** 2.0
        return math.sqrt(total_norm)

    def combined_scale(self, total_norm):  # unscale_and_clip_grads(..., apply_scale=False)
        combined_scale = self.cur_scale
        if self.clip_grad > 0.:
            clip = ((total_norm / self.cur_scale) + 1e-6) / self.clip_grad
            if clip > 1:
                combined_scale = clip * self.cur_scale
        return combined_scale

    def step(self):
        """Returns (overflow, the scaled global norm, whether the current DeepSpeed's norm gives the
        same f32 unscale factor)."""
        fp16_params = [p for p in self.fp16 if p.grad is not None]
        overflow = any(self.has_inf_or_nan(p.grad.data) for p in fp16_params)
        self.update_scale(overflow)
        if overflow:
            for p in self.fp16:
                p.grad = None
            return True, None, None
        grads_flat = self.flatten([torch.zeros(p.size(), dtype=torch.float32) if p.grad is None else
                                   p.grad.to(torch.float32) for p in self.fp16])
        for p in self.fp16:
            p.grad = None
        self.master.grad = grads_flat
        all_groups_norm = self.get_grad_norm([self.master])
        # the data-parallel average of the norm through an f32 tensor (world size 1)
        scaled_norm = all_groups_norm * 1.0 / float(1)
        all_groups_norm_dp = torch.tensor(scaled_norm, dtype=torch.float).item()
        global_norm = self.get_global_norm([all_groups_norm_dp])
        # current DeepSpeed (get_flattened_grad_norm, no average): does it unscale by the same f32?
        current = self.get_global_norm([all_groups_norm])
        same = (torch.tensor(1. / self.combined_scale(current), dtype=torch.float32).item() ==
                torch.tensor(1. / self.combined_scale(global_norm), dtype=torch.float32).item())
        grads_flat.data.mul_(1. / self.combined_scale(global_norm))
        self.optimizer.step()
        self.master.grad = None
        for p, q in zip(self.fp16, self.unflatten(self.master, self.fp16)):
            p.data.copy_(q.data)
        return False, global_norm, same


def run_deepspeed(model_name, profile, threads, init_scale, window, clip, batches):
    torch.set_num_threads(threads)
    model = gg.load(model_name, profile, torch.float16)  # model.half() of the f32 checkpoint (RNE)
    # Megatron-DeepSpeed: the optimizer and its lr scheduler first, then deepspeed.initialize wraps them
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, foreach=False)
    sched = get_cosine_schedule_with_warmup(opt, WARMUP, STEPS)
    ds = DeepSpeedFP16Optimizer(opt, init_scale, window, clip_grad=clip)
    attention = {"hf": gg.gm_profiles.ORIGINAL_EAGER}[profile]
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = attention
    steps = []
    try:
        for k in range(STEPS):
            ids = torch.as_tensor(batches[k]).long()
            model.zero_grad(set_to_none=True)
            loss = model(ids, labels=ids).loss
            scale = ds.cur_scale
            ds.backward(loss)
            lr = opt.param_groups[0]["lr"]
            skipped, norm, same = ds.step()
            if not skipped:
                sched.step()  # engine._take_model_step: only when the step was applied
            steps.append(dict(loss=hexf(loss.item()), loss_value=loss.item(),
                              grad_norm=None if skipped else hexf(norm / ds.cur_scale),
                              grad_norm_scaled=None if skipped else norm, lr=lr, loss_scale=float(scale),
                              skipped=skipped, current_deepspeed_same=same, weights=weights_hash([ds.master])))
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER
    return steps


def run_autocast(model_name, profile, threads, batches):
    """The f32 model's parameters trained directly; each step's forward and loss under
    torch.autocast('cpu', bfloat16) (its cast cache: one bf16 rounding per weight per forward), the
    backward outside it, the parameters' f32 gradients clipped and stepped as gen_train_goldens.py's
    f32 loop. The hash is of the f32 parameters."""
    torch.set_num_threads(threads)
    model = gg.load(model_name, profile, torch.float32)  # gm_profiles' pieces, as gen_grad_goldens.py
    params = [p for _, p in model.named_parameters()]
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, foreach=False)
    sched = get_cosine_schedule_with_warmup(opt, WARMUP, STEPS)
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = {
        "hf": gg.gm_profiles.ORIGINAL_EAGER, "hf-legacy": gg.gm_profiles.legacy_attention,
        "meg": gg.gm_profiles.meg_attention}[profile]
    try:
        return autocast_steps(model, params, opt, sched, batches)
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER


def autocast_steps(model, params, opt, sched, batches):
    steps = []
    for k in range(STEPS):
        ids = torch.as_tensor(batches[k]).long()
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        assert loss.dtype == torch.float32
        loss.backward()
        assert all(p.grad.dtype == torch.float32 for p in params)
        lr = opt.param_groups[0]["lr"]
        norm = torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        sched.step()
        steps.append(dict(loss=hexf(loss.item()), loss_value=loss.item(), grad_norm=hexf(norm.item()), lr=lr,
                          loss_scale=1.0, skipped=False, weights=weights_hash(params)))
    return steps


def weights_hash(params):
    parts = [p.detach().contiguous().view(torch.int32).numpy().view(np.uint32).ravel() for p in params]
    return f"{gm_inputs.hash64(np.concatenate(parts)):016x}"


def hexf(x):
    return f"{int(torch.tensor(float(x), dtype=torch.float32).view(torch.int32).item()) & 0xffffffff:08x}"


def run(model_name, profile, recipe, threads, init_scale, batches):
    torch.set_num_threads(threads)
    dt = DTYPE[recipe]
    model = gg.load(model_name, profile, dt)  # model.to(dt): the checkpoint's f32 values rounded (RNE)
    params = [p for _, p in model.named_parameters()]
    # Megatron's main weights: .float() copies of the dtype model's parameters (Float16Module
    # converts the model before the optimizer is built; reload_model_params after a weights-only load)
    main = [p.detach().float().clone().requires_grad_(True) for p in params]
    opt = torch.optim.AdamW(main, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, foreach=False)
    sched = get_cosine_schedule_with_warmup(opt, WARMUP, STEPS)
    scaler = DynamicGradScaler(init_scale) if recipe == "fp16-megatron" else None
    attention = {"hf": gg.gm_profiles.ORIGINAL_EAGER, "hf-legacy": gg.gm_profiles.legacy_attention,
                 "meg": gg.gm_profiles.meg_attention, "megatron": gg.gm_profiles.megatron_attention}[profile]
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = attention
    steps = []
    try:
        for k in range(STEPS):
            ids = torch.as_tensor(batches[k]).long()
            model.zero_grad(set_to_none=True)
            loss = model(ids, labels=ids).loss
            scale = float(scaler.scale.item()) if scaler else 1.0
            if scaler:
                (loss * scaler.scale).backward()
            else:
                loss.backward()
            for p, m in zip(params, main):
                m.grad = p.grad.float()
            skipped = False
            if scaler:
                found_inf = torch.zeros(1)
                torch._amp_foreach_non_finite_check_and_unscale_([m.grad for m in main], found_inf, scaler.inv_scale)
                skipped = bool(found_inf.item() > 0)
                scaler.update(skipped)
            lr = opt.param_groups[0]["lr"]
            norm = None
            if not skipped:
                norm = torch.nn.utils.clip_grad_norm_(main, CLIP)
                opt.step()
                sched.step()
                with torch.no_grad():
                    for p, m in zip(params, main):
                        p.data.copy_(m)
            steps.append(dict(loss=hexf(loss.item()), loss_value=loss.item(),
                              grad_norm=None if norm is None else hexf(norm.item()), lr=lr, loss_scale=scale,
                              skipped=skipped, weights=weights_hash(main)))
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", help="regenerate only this recipe's cases, keeping the others of index.json")
    args = ap.parse_args()
    if not gg.host_is_intel_amx():
        print("gen_recipe_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    if args.recipe:
        with open(os.path.join(OUT, "index.json")) as f:
            old = json.load(f)
    elif os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT, exist_ok=True)
    batches = np.load(os.path.join(TRAIN, "batches.npy"))  # gen_train_goldens.py's (default_rng(7))
    assert batches.shape == (STEPS, B, T)
    index = dict(torch=torch.__version__, cpu=gm_inputs.cpu_model(), threads_note="torch.set_num_threads per case",
                 batches="tests/golden/targets/intel-amx/train/batches.npy", steps=STEPS, batch=B, seq=T, lr=LR,
                 warmup=WARMUP, schedule="transformers cosine with warmup", weight_decay=WD, betas=list(BETAS), eps=EPS,
                 clip=CLIP, optimizer="torch.optim.AdamW(foreach=False) on the f32 main weights",
                 env={k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")},
                 hash="gm_hash64 of the f32 main weights' bits, concatenated in checkpoint order", cases={})
    if args.recipe:  # the other recipes' cases as they are
        index = old
        index["cases"] = {k: v for k, v in old["cases"].items() if v["recipe"] != args.recipe}
    for model_name, profile, recipe, threads, init_scale, *rest in CASES:
        if args.recipe and recipe != args.recipe:
            continue
        key = f"{model_name}/{profile}_{recipe}_t{threads}" + (f"_s{int(np.log2(init_scale))}" if init_scale else "")
        if recipe == "fp16-deepspeed":
            window, clip = rest[0], rest[1] if len(rest) > 1 else CLIP
            key += f"_w{window}" + ("" if clip == CLIP else f"_clip{clip:g}")
            steps = run_deepspeed(model_name, profile, threads, init_scale, window, clip, batches)
            index["cases"][key] = dict(model=model_name, profile=profile, recipe=recipe, threads=threads,
                                       loss_scale_init=init_scale, loss_scale_window=window, clip=clip,
                                       reference="DeepSpeed v0.5.8 FP16_Optimizer transcribed (class "
                                       "DeepSpeedFP16Optimizer); torch AdamW(foreach=False) over the flat f32 master "
                                       "in place of DeepSpeed's CUDA FusedAdam; grad_norm = f32(scaled global norm / "
                                       "cur_scale after _update_scale)", steps=steps)
        elif recipe == "bf16-autocast":
            steps = run_autocast(model_name, profile, threads, batches)
            index["cases"][key] = dict(model=model_name, profile=profile, recipe=recipe, threads=threads,
                                       loss_scale_init=init_scale,
                                       reference="f32 GPT2LMHeadModel, forward and loss under torch.autocast('cpu', "
                                       "dtype=torch.bfloat16), loss.backward() outside, clip_grad_norm_ and "
                                       "AdamW(foreach=False) on the f32 parameters; weights = their hash", steps=steps)
        else:
            steps = run(model_name, profile, recipe, threads, init_scale, batches)
            index["cases"][key] = dict(model=model_name, profile=profile, recipe=recipe, threads=threads,
                                       loss_scale_init=init_scale, steps=steps)
        n_skip = sum(s["skipped"] for s in steps)
        print(f"{key}: loss {steps[0]['loss_value']:.5f} -> {steps[-1]['loss_value']:.5f}, {n_skip} skipped, "
              f"final scale {steps[-1]['loss_scale']}")
        if recipe == "fp16-megatron" and init_scale == 2.0 ** 32:
            assert n_skip >= 1, f"{key}: Megatron's initial scale 2^32 should overflow the fp16 gradients"
        if recipe == "fp16-deepspeed":
            scales = [s["loss_scale"] for s in steps]
            grew = any(b > a for a, b in zip(scales, scales[1:]))
            print(f"  scales {scales}; current DeepSpeed unscales the same: "
                  f"{all(s['current_deepspeed_same'] for s in steps if not s['skipped'])}")
            assert n_skip >= 2 and grew, f"{key}: the case should overflow, back off, grow and overflow again"
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
