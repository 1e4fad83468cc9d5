#!/usr/bin/env python3
"""Optimizer-module goldens from PyTorch CPU for tests/test_optim.c (docs/training.md).

Inputs are not stored: every parameter and gradient comes from gm_optim_fill (splitmix64 of
(seed << 32) + i turned into an f32 with a random sign, a 23-bit mantissa, a binary exponent in
[emin, emax] and ~1% exact zeros), which tests/test_optim.c computes identically in C.

Writes tests/golden/optim/optim.safetensors + optim.json (f64 values, hashes, settings): torch as
it runs on this CPU (the intel-amx target); and optim_avx2.* from a second pass this script starts
itself under the avx2 target's torch environment (ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
MKL_ENABLE_INSTRUCTIONS=AVX2: ATen's 8-lane kernels, MKL's AVX2 code):
  adam cases: torch.optim.AdamW / Adam over the tensors of SIZES (one optimizer, one param group),
    STEPS steps, lr set each step by a schedule (constant; Megatron's OptimizerParamScheduler
    warmup + cosine, transcribed below since Megatron needs CUDA; transformers'
    get_cosine_schedule_with_warmup through torch's LambdaLR), single-tensor (foreach=False) or
    fused=True; foreach=True is run too and must give the single-tensor bits (else this script fails).
    "<case>.lr" (JSON, f64 [STEPS]): the lr each step used; "<case>.<j>.{param,exp_avg,exp_avg_sq}" the
    final state of tensor j for the small ones, and for all of them an FNV-1a 64 hash of each
    final f32 buffer in the metadata ("hashes").
    Each case runs with 1 and 2 torch threads; they must agree (else this script fails).
  clip: torch.nn.utils.clip_grad_norm_ over the SIZES tensors' grads, max_norm 1.0 (clips) and
    1e30 (does not): "clip.<m>.total_norm" f32 [1], clipped grads as above; and Megatron's
    clip_grad_by_total_norm_fp32 transcribed (total_norm**2 in f32, .item()**0.5 in double,
    coefficient in double, grads * coefficient when it is < 1).
  scalers: found_inf sequences (f32 0/1) and the scale after each update of Megatron's
    DynamicGradScaler (f32 tensor math) and DeepSpeed's DynamicLossScaler (Python floats), both
    transcribed from their sources (neither package runs here); and torch's
    _amp_foreach_non_finite_check_and_unscale_ on grads with inf/NaN.
Run from the repo root: /work/venv/bin/python tools/ref/gen_optim_goldens.py
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import cpu_model  # noqa: E402
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "optim")
SIZES = [1, 5, 16, 31, 33, 100, 1000, 4099, 100003, 23, 28, 52, 173]  # tails of 0..15 past 16-lane bodies
FULL_MAX = 200    # tensors up to this size are stored in full (all are hashed)
STEPS = 24
M64 = (1 << 64) - 1
AVX2_ENV = "ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2"  # src/core/target.c


def fill(seed, n, emin, emax):
    """gm_optim_fill: f32 [n] from splitmix64((seed << 32) + i)."""
    with np.errstate(over="ignore"):
        x = (np.uint64(seed) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    mant = z & np.uint64(0x7FFFFF)
    e = np.uint64(emin + 127) + ((z >> np.uint64(23)) % np.uint64(emax - emin + 1))
    sign = z >> np.uint64(63)
    bits = (sign << np.uint64(31)) | (e << np.uint64(23)) | mant
    bits = np.where(((z >> np.uint64(40)) % np.uint64(97)) == 0, np.uint64(0), bits)
    return torch.from_numpy(bits.astype(np.uint32).view(np.float32).copy())


def fnv(t):
    h = 0xCBF29CE484222325
    for b in t.contiguous().numpy().tobytes():
        h = ((h ^ b) * 0x100000001B3) & M64
    return f"{h:016x}"


def grad_for(case_seed, j, step, n):
    if j == 2 and step == 5:
        return torch.zeros(n)  # one all-zero gradient
    return fill(case_seed * 100000 + j * 1000 + step, n, -60, 12)


# Megatron-LM OptimizerParamScheduler.get_lr (megatron/core/optimizer_param_scheduler.py), linear
# warmup then cosine decay. Megatron's scheduler starts with step(0) and counts each optimizer step
# after it (train_step: optimizer.step(), then opt_param_scheduler.step(increment)), so the k-th
# optimizer step (from 0) runs at get_lr() with num_steps = k (iteration-based: increment 1).
def megatron_lr(num_steps, init_lr, max_lr, min_lr, warmup, decay_steps):
    if warmup > 0 and num_steps <= warmup:
        return init_lr + ((max_lr - init_lr) * float(num_steps) / float(warmup))
    if num_steps > decay_steps:
        return min_lr
    decay_ratio = float(num_steps - warmup) / float(decay_steps - warmup)
    delta_lr = max_lr - min_lr
    coeff = 0.5 * (math.cos(math.pi * decay_ratio) + 1.0)
    return min_lr + coeff * delta_lr


# (name, optimizer, mode, schedule, lr, weight_decay, betas, eps, seed)
CASES = [
    ("adamw_single_megatron", "adamw", "single", "megatron", 6e-4, 0.1, (0.9, 0.95), 1e-8, 1),
    ("adamw_single_hf", "adamw", "single", "hf", 3e-3, 0.01, (0.9, 0.999), 1e-8, 2),
    ("adam_single_const", "adam", "single", "const", 1e-3, 0.05, (0.9, 0.999), 1e-6, 3),
    ("adamw_single_nowd", "adamw", "single", "const", 2e-3, 0.0, (0.8, 0.99), 1e-8, 4),
    ("adamw_fused_hf", "adamw", "fused", "hf", 3e-3, 0.01, (0.9, 0.999), 1e-8, 2),
    ("adam_fused_megatron", "adam", "fused", "megatron", 6e-4, 0.1, (0.9, 0.95), 1e-8, 5),
    ("adamw_fused_lerp_big", "adamw", "fused", "const", 1e-3, 0.1, (0.3, 0.999), 1e-8, 6),
    ("adamw_single_lerp_big", "adamw", "single", "const", 1e-3, 0.1, (0.3, 0.999), 1e-8, 6),
]
SCHED = {"warmup": 5, "decay": 20, "min_lr_frac": 0.1, "hf_total": 22}


def run_case(case, mode, threads):
    name, opt, _, sched, lr, wd, betas, eps, seed = case
    torch.set_num_threads(threads)
    params = [torch.nn.Parameter(fill(7000 + seed * 100 + j, n, -12, 1)) for j, n in enumerate(SIZES)]
    kw = dict(lr=lr, betas=betas, eps=eps, weight_decay=wd)
    if mode == "fused":
        kw["fused"] = True
    else:
        kw["foreach"] = mode == "foreach"
    o = (torch.optim.AdamW if opt == "adamw" else torch.optim.Adam)(params, **kw)
    hf = None
    if sched == "hf":
        from transformers import get_cosine_schedule_with_warmup
        hf = get_cosine_schedule_with_warmup(o, SCHED["warmup"], SCHED["hf_total"])
    lrs = []
    for step in range(STEPS):
        if sched == "megatron":
            o.param_groups[0]["lr"] = megatron_lr(step, 0.0, lr, lr * SCHED["min_lr_frac"],
                                                  SCHED["warmup"], SCHED["decay"])
        lrs.append(o.param_groups[0]["lr"])
        for j, p in enumerate(params):
            p.grad = grad_for(seed, j, step, p.numel())
        o.step()
        if hf is not None:
            hf.step()
    st = []
    for p in params:
        s = o.state[p]
        st.append((p.detach().clone(), s["exp_avg"].clone(), s["exp_avg_sq"].clone()))
    return lrs, st


def same(a, b):
    return all(torch.equal(x.view(torch.int32), y.view(torch.int32)) for ta, tb in zip(a, b) for x, y in zip(ta, tb))


def main():
    avx2 = "--avx2" in sys.argv
    t, meta_hash, js = {}, {}, {}
    foreach_equal = {}
    for case in CASES:
        name, mode = case[0], case[2]
        lrs, st = run_case(case, mode, 1)
        lrs2, st2 = run_case(case, mode, 2)
        if lrs2 != lrs or not same(st, st2):
            sys.exit(f"{name}: 1 and 2 threads differ")
        if mode == "single":
            _, stf = run_case(case, "foreach", 1)
            foreach_equal[name] = same(st, stf)
            if not foreach_equal[name]:
                sys.exit(f"{name}: foreach=True differs from foreach=False")
        js[f"{name}.lr"] = lrs
        for j, (p, m, v) in enumerate(st):
            if p.numel() <= FULL_MAX:
                t[f"{name}.{j}.param"], t[f"{name}.{j}.exp_avg"], t[f"{name}.{j}.exp_avg_sq"] = p, m, v
            meta_hash[f"{name}.{j}"] = [fnv(p), fnv(m), fnv(v)]
    torch.set_num_threads(1)
    # ---- gradient clipping ----
    for mi, max_norm in enumerate([1.0, 1e30]):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            ps = [torch.nn.Parameter(torch.zeros(n)) for n in SIZES]
            for j, p in enumerate(ps):
                p.grad = fill(500 + j, p.numel(), -20, 3)
            tn = torch.nn.utils.clip_grad_norm_(ps, max_norm)
            g = [p.grad.clone() for p in ps]
            if threads == 1:
                tn1, g1 = tn, g
            elif not torch.equal(tn.view(torch.int32), tn1.view(torch.int32)) or not same([g], [g1]):
                sys.exit("clip_grad_norm_: 1 and 2 threads differ")
        torch.set_num_threads(1)
        t[f"clip.{mi}.total_norm"] = tn1.reshape(1).float()
        t[f"clip.{mi}.per_tensor"] = torch.stack([torch.linalg.vector_norm(fill(500 + j, n, -20, 3), 2)
                                                  for j, n in enumerate(SIZES)])
        for j, gj in enumerate(g1):
            if gj.numel() <= FULL_MAX:
                t[f"clip.{mi}.{j}.grad"] = gj
            meta_hash[f"clip.{mi}.{j}"] = [fnv(gj)]
        # Megatron clip_grad_norm_fp32 on CPU tensors (its local l2 norm: torch.norm per tensor, then
        # the norm of those), clip_grad_by_total_norm_fp32.
        gs = [fill(500 + j, n, -20, 3) for j, n in enumerate(SIZES)]
        gn = torch.norm(torch.stack([torch.norm(x) for x in gs]))
        total = (gn ** 2.0).item() ** (1.0 / 2.0)
        coeff = max_norm / (total + 1.0e-6)
        if coeff < 1.0:
            gs = [x * coeff for x in gs]
        js[f"mclip.{mi}.total_norm"] = total
        for j, gj in enumerate(gs):
            if gj.numel() <= FULL_MAX:
                t[f"mclip.{mi}.{j}.grad"] = gj
            meta_hash[f"mclip.{mi}.{j}"] = [fnv(gj)]
    # ---- loss scalers ----
    rng = np.random.default_rng(11)
    for si, (nsteps, window, hyst, init) in enumerate([(3000, 1000, 2, 2.0 ** 32), (400, 7, 2, 2.0 ** 16),
                                                       (300, 5, 1, 4.0), (200, 3, 3, 2.0 ** 16)]):
        found = (rng.random(nsteps) < 0.04).astype(np.float32)
        found[20:24] = 1  # a burst
        if si == 2:
            found[100:140] = 1  # drive the scale to its minimum
        fl = torch.from_numpy(found)
        # Megatron DynamicGradScaler (megatron/core/optimizer/grad_scaler.py), CPU tensors.
        scale = torch.tensor([init], dtype=torch.float)
        min_scale, growth, backoff = torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([0.5])
        growth_tracker, hyst_tracker = 0, hyst
        ms, minv = [], []
        for f in found:
            if f:
                growth_tracker = 0
                hyst_tracker -= 1
                if hyst_tracker <= 0:
                    scale = torch.max(scale * backoff, min_scale)
            else:
                growth_tracker += 1
                if growth_tracker == window:
                    growth_tracker = 0
                    hyst_tracker = hyst
                    scale = scale * growth
            ms.append(scale.item())
            minv.append(scale.double().reciprocal().float().item())
        # DeepSpeed DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py),
        # raise_error_at_min_scale=False, consecutive_hysteresis False (si odd: True).
        cur_scale, cur_iter, last_of, cur_h = init, 0, -1, hyst
        cons = si % 2 == 1
        ds = []
        for f in found:
            if f:
                if hyst == 1 or cur_h == 1:
                    cur_scale = max(cur_scale / 2.0, 1.0)
                else:
                    cur_h -= 1
                last_of = cur_iter
            else:
                if cons:
                    cur_h = hyst
                if (cur_iter - last_of) % window == 0:
                    if not cons:
                        cur_h = hyst
                    cur_scale *= 2.0
            cur_iter += 1
            ds.append(float(cur_scale))
        t[f"scaler.{si}.found_inf"] = fl
        t[f"scaler.{si}.megatron_scale"] = torch.tensor(ms, dtype=torch.float32)
        t[f"scaler.{si}.megatron_inv"] = torch.tensor(minv, dtype=torch.float32)
        js[f"scaler.{si}.deepspeed_scale"] = ds
        meta_hash[f"scaler.{si}"] = [str(nsteps), str(window), str(hyst), repr(init)]
    # unscale: grads * inv_scale with the inf/NaN check, as Megatron calls it
    for ui, (scale, bad) in enumerate([(2.0 ** 16, None), (2.0 ** 32, "inf"), (3.0, "nan")]):
        inv = torch.tensor([scale], dtype=torch.float).double().reciprocal().float()
        gs = [fill(900 + ui * 10 + j, n, -10, 30) for j, n in enumerate(SIZES[:7])]
        if bad:
            gs[3][7] = float(bad)
        found = torch.zeros(1)
        torch._amp_foreach_non_finite_check_and_unscale_(gs, found, inv)
        t[f"unscale.{ui}.found_inf"] = found
        for j, g in enumerate(gs):
            t[f"unscale.{ui}.{j}.grad"] = g
    meta = {"torch": torch.__version__, "sizes": json.dumps(SIZES), "steps": str(STEPS),
            "cases": json.dumps([list(c[:5]) + [c[5], list(c[6]), c[7], c[8]] for c in CASES]),
            "sched": json.dumps(SCHED), "hashes": json.dumps(meta_hash),
            "foreach_equal": json.dumps(foreach_equal),
            "cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_env": AVX2_ENV if avx2 else "", "target": "avx2" if avx2 else "intel-amx",
            "threads": "1 and 2 (identical)"}
    os.makedirs(OUT, exist_ok=True)
    fn = os.path.join(OUT, "optim_avx2.safetensors" if avx2 else "optim.safetensors")
    save_file({k: v.contiguous() for k, v in t.items()}, fn, metadata={"torch": torch.__version__})
    js.update(meta)
    js["hashes"], js["cases"], js["sched"], js["sizes"] = meta_hash, json.loads(meta["cases"]), SCHED, SIZES
    js["foreach_equal"] = foreach_equal
    with open(fn.replace(".safetensors", ".json"), "w") as f:
        json.dump(js, f, indent=0)
    print(f"gen_optim_goldens: {len(CASES)} adam cases, clip, scalers -> {fn}")
    if not avx2:
        env = dict(os.environ, **dict(kv.split("=") for kv in AVX2_ENV.split()))
        return subprocess.call([sys.executable, __file__, "--avx2"], env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
