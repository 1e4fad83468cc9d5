"""Times transformers' GPT2LMHeadModel (eager attention, PyTorch CPU, model.to(dtype)) on the shape
`gptmeg bench model` uses, runs `gptmeg bench model --json` in the same run, and prints both side by side
for each thread count: GEMM GFLOP/s (torch.mm vs gptmeg's matmul), prefill tokens/s (one forward
of --prefill tokens, best of 2) as generation runs it (logits_to_keep=1 on both sides: only the last
position's logits, what generate() asks transformers for) and, as a second figure, with every
position's logits (logits_to_keep=0 / gptmeg's all-logits prefill), decode tokens/s (greedy steps
through past_key_values after a --prompt-token prefill), and the ratio gptmeg / torch.

  python3 bench/model_vs_torch.py --gptmeg build/gptmeg [--threads 1 2] [--config gpt2] [--dtypes f32 bf16 f16]

PyTorch's f16 CPU kernels are slow (minutes for a 512-token prefill), so for f16 the prefill, prompt
and decode lengths are cut by --f16-scale (default 8) on both sides.
"""
import argparse
import json
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gptmeg", default="build/gptmeg")
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--config", default="gpt2", choices=["gpt2", "tiny"])
ap.add_argument("--prefill", type=int, default=512)
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--decode", type=int, default=64)
ap.add_argument("--gemm", type=int, default=2048)
ap.add_argument("--dtypes", nargs="+", default=["f32"], choices=["f32", "f16", "bf16"])
ap.add_argument("--f16-scale", type=int, default=8)
args = ap.parse_args()
try:
    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    print("bench/model_vs_torch.py: PyTorch / transformers are not installed (pip install -r tools/ref/requirements.txt); skipped")
    sys.exit(0)

if args.config == "gpt2":
    cfg = GPT2Config()
else:  # gptmeg's tiny: 2 layers, n_embd 64, 4 heads, n_positions 128
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128)
cfg._attn_implementation = "eager"
torch.manual_seed(1)
model32 = GPT2LMHeadModel(cfg).eval()
assert model32.config._attn_implementation == "eager"
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
V = cfg.vocab_size
ids = torch.randint(0, V, (1, max(args.prefill, args.prompt)))


def torch_gemm(n, dt):
    a, b = (torch.rand(n, n) - 0.5).to(dt), (torch.rand(n, n) - 0.5).to(dt)
    best = 1e30
    for _ in range(3):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


@torch.no_grad()
def torch_prefill(model, T, keep):
    """tokens/s of one forward of T tokens, best of 2; keep: logits_to_keep (0: every position)."""
    best = 1e30
    for _ in range(2):
        t0 = time.perf_counter()
        out = model(ids[:, :T], logits_to_keep=keep)
        best = min(best, time.perf_counter() - t0)
    assert out.logits.shape[1] == (keep if keep else T)
    return T / best


@torch.no_grad()
def torch_decode(model, prompt, steps):
    out = model(ids[:, :prompt], use_cache=True, logits_to_keep=1)
    past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
    t0 = time.perf_counter()
    for _ in range(steps):
        out = model(nxt, past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
    return steps / (time.perf_counter() - t0)


print(f"config {args.config}: torch {torch.__version__}, transformers {transformers.__version__}")
for dts, th in [(d, t) for d in args.dtypes for t in args.threads]:
    k = args.f16_scale if dts == "f16" else 1
    prefill, prompt, decode, gemm = args.prefill // k, args.prompt // k, max(args.decode // k, 1), args.gemm // (2 if k > 1 else 1)
    model = model32.to(TORCH_DTYPE[dts])
    if th == args.threads[0]:
        print(f"\n{dts}: prefill {prefill} tokens, decode {decode} after {prompt}, gemm {gemm}^3 {dts}")
        print(f"{'threads':>7} {'':>8} {'gemm GF/s':>10} {'prefill tok/s':>14} {'prefill % gemm':>15} "
              f"{'all-logits tok/s':>17} {'all % gemm':>11} {'decode tok/s':>13} {'decode ms/tok':>14}")
    cmd = [args.gptmeg, "bench", "model", "--json", "--config", args.config, "--threads", str(th), "--prefill",
           str(prefill), "--prompt", str(prompt), "--decode", str(decode), "--gemm", str(gemm), "--dtype", dts]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        sys.exit(1)
    g = json.loads(res.stdout)
    torch.set_num_threads(th)
    tg = torch_gemm(gemm, TORCH_DTYPE[dts])
    tp = torch_prefill(model, prefill, 1)
    ta = torch_prefill(model, prefill, 0)
    td = torch_decode(model, prompt, decode)
    # the same FLOP count per token as gptmeg's (its JSON): kept rows' lm_head only, or all of it
    tp_gf = g["prefill_gflops"] / g["prefill_tokens_per_s"] * tp
    ta_gf = g["prefill_all_logits_gflops"] / g["prefill_all_logits_tokens_per_s"] * ta
    # gptmeg's own matmul in the run's dtype (torch's summation order), beside torch's GEMM
    gg = g.get("gemm_dtype_gflops", g["gemm_gflops"])
    gp = g.get("prefill_pct_of_dtype_gemm", g["prefill_pct_of_gemm"])
    gpa = g.get("prefill_all_logits_pct_of_dtype_gemm", g["prefill_all_logits_pct_of_gemm"])
    print(f"{th:7d} {'gptmeg':>8} {gg:10.1f} {g['prefill_tokens_per_s']:14.1f} {gp:14.0f}% "
          f"{g['prefill_all_logits_tokens_per_s']:17.1f} {gpa:10.0f}% "
          f"{g['decode_tokens_per_s']:13.1f} {g['decode_ms_per_token']:14.2f}")
    print(f"{'':7} {'torch':>8} {tg:10.1f} {tp:14.1f} {100 * tp_gf / tg:14.0f}% {ta:17.1f} {100 * ta_gf / tg:10.0f}% "
          f"{td:13.1f} {1e3 / td:14.2f}")
    print(f"{'':7} {'ratio':>8} {gg / tg:10.2f} {g['prefill_tokens_per_s'] / tp:14.2f} {'':>15} "
          f"{g['prefill_all_logits_tokens_per_s'] / ta:17.2f} {'':>11} {g['decode_tokens_per_s'] / td:13.2f}")
    print(f"{'':7} {'memory':>8} gptmeg VmHWM {g['vm_hwm_bytes'] / 2**20:.0f} MiB generation path "
          f"({g['vm_hwm_over_weights_kv']:.2f}x weights {g['weights_bytes'] / 2**20:.0f} MiB + KV "
          f"{max(g['kv_bytes_prefill'], g['kv_bytes_decode']) / 2**20:.0f} MiB), "
          f"{g['vm_hwm_all_logits_bytes'] / 2**20:.0f} MiB after the all-logits prefill")
    sys.stdout.flush()
print("ratio = gptmeg / torch (above 1: gptmeg faster); prefill = logits_to_keep=1 on both sides, all-logits = every "
      "position's logits on both sides")
