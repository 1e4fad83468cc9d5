#!/usr/bin/env python3
"""Reference runs of the mixed-precision recipes bf16-megatron and fp16-megatron: 20 steps each.

The loop is Megatron-LM's mixed-precision optimizer (Float16OptimizerWithFloat16Params) written in
plain torch (Megatron needs CUDA): the model is transformers' GPT2LMHeadModel in bf16/fp16
(gm_profiles' pieces swapped in, as gen_train_goldens.py / gen_grad_goldens.py), its f32 main
weights are copies of the checkpoint's f32 values, and each step:

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

The optimizer, schedule, batches and hyperparameters are gen_train_goldens.py's (same batches:
numpy default_rng(7)). Writes tests/golden/targets/intel-amx/recipes/index.json: per case and step
the f32 loss and total norm as hex bits (norm null when skipped), the lr, the loss scale used for
the step's backward, skipped, and gm_hash64 of the f32 main weights' bits concatenated in
checkpoint order after the step. Run from the repo root on an Intel AMX host (the matmul orders of
the gradients are that CPU class's): python3 tools/ref/gen_recipe_goldens.py
"""
import json
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
DTYPE = {"bf16-megatron": torch.bfloat16, "fp16-megatron": torch.float16}


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


def weights_hash(params):
    parts = [p.detach().contiguous().view(torch.int32).numpy().view(np.uint32).ravel() for p in params]
    return f"{gm_inputs.hash64(np.concatenate(parts)):016x}"


def hexf(x):
    return f"{int(torch.tensor(float(x), dtype=torch.float32).view(torch.int32).item()) & 0xffffffff:08x}"


def run(model_name, profile, recipe, threads, init_scale, batches):
    torch.set_num_threads(threads)
    dt = DTYPE[recipe]
    ref = gg.load(model_name, profile, torch.float32)  # the checkpoint's f32 values: the main weights
    main = [p.detach().clone().requires_grad_(True) for _, p in ref.named_parameters()]
    model = gg.load(model_name, profile, dt)  # model.to(dt): RNE, as p.data.copy_(main) rounds
    params = [p for _, p in model.named_parameters()]
    assert len(params) == len(main)
    with torch.no_grad():  # the dtype model is round(main) (checks the load's rounding)
        for p, m in zip(params, main):
            assert torch.equal(p, m.to(dt))
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
    if not gg.host_is_intel_amx():
        print("gen_recipe_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    batches = np.load(os.path.join(TRAIN, "batches.npy"))  # gen_train_goldens.py's (default_rng(7))
    assert batches.shape == (STEPS, B, T)
    index = dict(torch=torch.__version__, cpu=gm_inputs.cpu_model(), threads_note="torch.set_num_threads per case",
                 batches="tests/golden/targets/intel-amx/train/batches.npy", steps=STEPS, batch=B, seq=T, lr=LR,
                 warmup=WARMUP, schedule="transformers cosine with warmup", weight_decay=WD, betas=list(BETAS), eps=EPS,
                 clip=CLIP, optimizer="torch.optim.AdamW(foreach=False) on the f32 main weights",
                 env={k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")},
                 hash="gm_hash64 of the f32 main weights' bits, concatenated in checkpoint order", cases={})
    for model_name, profile, recipe, threads, init_scale in CASES:
        steps = run(model_name, profile, recipe, threads, init_scale, batches)
        key = f"{model_name}/{profile}_{recipe}_t{threads}" + (f"_s{int(np.log2(init_scale))}" if init_scale else "")
        index["cases"][key] = dict(model=model_name, profile=profile, recipe=recipe, threads=threads,
                                   loss_scale_init=init_scale, steps=steps)
        n_skip = sum(s["skipped"] for s in steps)
        print(f"{key}: loss {steps[0]['loss_value']:.5f} -> {steps[-1]['loss_value']:.5f}, {n_skip} skipped, "
              f"final scale {steps[-1]['loss_scale']}")
        if recipe == "fp16-megatron" and init_scale == 2.0 ** 32:
            assert n_skip >= 1, f"{key}: Megatron's initial scale 2^32 should overflow the fp16 gradients"
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
