"""Times one training step of transformers' GPT2LMHeadModel (eager attention, PyTorch CPU, dropout off)
with torch.optim.AdamW (default: _single_tensor_adam; and fused=True), runs `gptmeg bench train --json`
on the same shape in the same run, and prints both side by side for each thread count, with the ratio
torch / gptmeg (above 1: gptmeg is faster).

  python3 bench/train_vs_torch.py --gptmeg build/gptmeg [--threads 1 2] [--config gpt2|tiny] [--batch 4] [--seq 64]
                                  [--dtype f32|bf16|f16]

--dtype bf16 (f16): torch's model and AdamW run in pure bf16 (the issue's baseline: model.to(torch.bfloat16)),
gptmeg runs its bf16-megatron (fp16-megatron) step: the backward on the bf16 copy, AdamW on f32 main weights,
the copy refreshed; more optimizer work than pure bf16, the same forward and backward dtype.

A step is zero_grad, forward with labels, loss.backward(), optimizer.step(); the figure is the median of
--steps steps after --warmup ones.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gptmeg", default="build/gptmeg")
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--config", default="gpt2", choices=["gpt2", "tiny"])
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=64)
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--warmup", type=int, default=2)
ap.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"])
args = ap.parse_args()
try:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    print("bench/train_vs_torch.py: PyTorch / transformers are not installed (pip install -r tools/ref/requirements.txt); skipped")
    sys.exit(0)

if args.config == "gpt2":
    cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
else:  # gptmeg's tiny: 2 layers, n_embd 64, 4 heads, n_positions 128
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
cfg._attn_implementation = "eager"


def torch_step_seconds(threads, fused):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = GPT2LMHeadModel(cfg).train().to({"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[args.dtype])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq))
    times = []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()
        opt.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gptmeg_step(threads):
    cmd = [args.gptmeg, "bench", "train", "--config", args.config, "--batch", str(args.batch), "--seq", str(args.seq),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--threads", str(threads), "--dtype", args.dtype, "--json"]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        print(f"  gptmeg bench train failed: {e}")
        return None


print(f"one training step, GPT-2 {args.config}, B={args.batch}, T={args.seq}, {args.dtype}, torch {torch.__version__}")
for th in args.threads:
    t_def = torch_step_seconds(th, False)
    t_fused = torch_step_seconds(th, True)
    g = gptmeg_step(th)
    line = f"threads {th}: torch AdamW {t_def:.3f} s, fused {t_fused:.3f} s"
    if g:
        s = g["step_s"]
        line += (f"; gptmeg {s:.3f} s (forward+backward {g['grad_s']:.3f} s, AdamW {g['optim_s']:.4f} s at "
                 f"{g['optim_gbps']:.1f} GB/s, memcpy {g['memcpy_gbps']:.1f} GB/s); torch/gptmeg {t_def / s:.2f}x "
                 f"(fused {t_fused / s:.2f}x)")
    print(line)
