#!/usr/bin/env python3
"""Reference training runs: 20 optimizer steps of transformers' GPT2LMHeadModel on given batches.

Each step: zero_grad; loss = model(batch, labels=batch).loss; loss.backward();
total_norm = torch.nn.utils.clip_grad_norm_(params, CLIP) (the clip coefficient max_norm / (norm + 1e-6),
applied when below 1, as Megatron writes it); optimizer.step(); scheduler.step(). The optimizer is
torch.optim.AdamW (foreach=False: _single_tensor_adam; and fused=True), the schedule transformers'
get_cosine_schedule_with_warmup (LambdaLR: step k uses base_lr * lambda(k - 1)). The model is the
golden checkpoints tests/golden/model/{base, quick_untied, relu} in f32 with each profile's pieces swapped in (gm_profiles,
gen_grad_goldens.py's Megatron GELU with its custom backward), dropout off (eval mode).

Writes tests/golden/targets/intel-amx/train/: batches.npy (int32 [20, B, T], drawn from numpy's
default_rng(7)) and index.json: per case (profile, optimizer, threads) and step, the f32 loss and
total norm as hex bits, the lr, and gm_hash64 of every parameter's f32 bits concatenated in
checkpoint order after the step. Run from the repo root on an Intel AMX host (the matmul orders of
the gradients are that CPU class's): python3 tools/ref/gen_train_goldens.py
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

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "train")
STEPS, B, T = 20, 2, 16
LR, WARMUP, WD, BETAS, EPS, CLIP = 3e-3, 4, 0.1, (0.9, 0.95), 1e-8, 1.0
# (checkpoint, profile, optimizer, threads); quick_untied's sigmoid GELU and relu's (tied lm_head) need no MKL VML in f32
CASES = [("base", "hf", "adamw", 1), ("base", "hf", "adamw", 2), ("base", "megatron", "adamw", 1),
         ("base", "hf", "adamw-fused", 1), ("quick_untied", "hf", "adamw", 1), ("quick_untied", "hf", "adamw", 2),
         ("relu", "hf", "adamw", 1)]


def weights_hash(model):
    parts = [p.detach().contiguous().view(torch.int32).numpy().view(np.uint32).ravel()
             for _, p in model.named_parameters()]
    return f"{gm_inputs.hash64(np.concatenate(parts)):016x}"


def hexf(x):
    return f"{int(torch.tensor(float(x), dtype=torch.float32).view(torch.int32).item()) & 0xffffffff:08x}"


def run(model_name, profile, opt_name, threads, batches):
    torch.set_num_threads(threads)
    model = gg.load(model_name, profile, torch.float32)
    params = [p for _, p in model.named_parameters()]
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, foreach=False,
                            fused=True if opt_name == "adamw-fused" else None)
    sched = get_cosine_schedule_with_warmup(opt, WARMUP, STEPS)
    attention = {"hf": gg.gm_profiles.ORIGINAL_EAGER, "megatron": gg.gm_profiles.megatron_attention}[profile]
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = attention
    steps = []
    try:
        for k in range(STEPS):
            ids = torch.as_tensor(batches[k]).long()
            opt.zero_grad(set_to_none=True)
            loss = model(ids, labels=ids).loss
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(params, CLIP)
            lr = opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
            steps.append(dict(loss=hexf(loss.item()), loss_value=loss.item(), grad_norm=hexf(norm.item()), lr=lr,
                              weights=weights_hash(model)))
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER
    return steps


def main():
    if not gg.host_is_intel_amx():
        print("gen_train_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    vocab = min(json.load(open(os.path.join("tests", "golden", "model", m, "config.json")))["vocab_size"]
                for m in {c[0] for c in CASES})
    batches = np.random.default_rng(7).integers(0, vocab, size=(STEPS, B, T), dtype=np.int32)
    np.save(os.path.join(OUT, "batches.npy"), batches)
    index = dict(torch=torch.__version__, cpu=gm_inputs.cpu_model(), steps=STEPS, batch=B, seq=T, lr=LR,
                 warmup=WARMUP, schedule="transformers cosine with warmup", weight_decay=WD, betas=list(BETAS), eps=EPS,
                 clip=CLIP, hash="gm_hash64 of every parameter's f32 bits, concatenated in checkpoint order", cases={})
    for model_name, profile, opt_name, threads in CASES:
        steps = run(model_name, profile, opt_name, threads, batches)
        index["cases"][f"{model_name}/{profile}_{opt_name}_t{threads}"] = dict(model=model_name, profile=profile,
                                                                              optimizer=opt_name, threads=threads,
                                                                              steps=steps)
        print(f"{model_name} {profile} {opt_name} threads={threads}: loss {steps[0]['loss_value']:.5f} -> "
              f"{steps[-1]['loss_value']:.5f}")
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
