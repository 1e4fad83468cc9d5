"""Times every GELU variant that PyTorch runs op by op (HF's gelu_python, gelu_new, gelu_accurate,
gelu_fast, quick_gelu; Megatron's gelu_megatron with its custom backward, openai_gelu), plus F.gelu
and F.gelu(approximate='tanh'), forward and backward, in PyTorch and as `gptmeg bench act --json`
VARIANT:torch-cpu in the same run, and prints Melem/s side by side.

  python3 bench/act_ops_vs_torch.py --gptmeg build/gptmeg [--threads 1] [--n 1048576] [--mkl] [--rounds 3]

Forward: y = f(x) on torch.randn(n)*3 in the dtype. Backward: torch.autograd.grad(y, x, dy) with the
graph kept (only the backward ops are timed), and "torch fwd+bwd": the forward and the backward
together, which is what it costs torch to get dx from x and dy, as gptmeg's backward does (it
recomputes the forward ops it needs).
--rounds R repeats the whole comparison R times (gptmeg's bench, then torch's timings) and keeps each
side's best per case, so a slow spell of a shared machine does not land on one side only.
--mkl sets GPTMEG_TORCH_MKL to torch's libtorch_cpu.so, so gptmeg's f32 tanh/erf/exp are MKL VML
as torch's are (bit for bit); without it they are glibc double results rounded (not torch's bits).
"""
import argparse, json, os, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--gptmeg", default="build/gptmeg")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--n", type=int, action="append")
ap.add_argument("--mkl", action="store_true")
ap.add_argument("--dtype", action="append")
ap.add_argument("--rounds", type=int, default=1)
args = ap.parse_args()
try:
    import torch
    import torch.nn.functional as F
    from transformers.activations import ACT2FN
except ImportError:
    print("bench/act_ops_vs_torch.py: PyTorch and transformers are needed; skipped")
    sys.exit(0)

torch.set_num_threads(args.threads)
sizes = args.n or [1 << 20, 1 << 25]
dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
if args.dtype:
    dtypes = {k: v for k, v in dtypes.items() if k in args.dtype}


def megatron_fwd(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class MegatronGeLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return megatron_fwd(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
        ff = 0.5 * x * ((1 - t * t) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + t)
        return ff * g


def openai_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))


fns = {"gelu": lambda x: F.gelu(x), "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
       "gelu_python": ACT2FN["gelu_python"], "gelu_new": ACT2FN["gelu_new"],
       "gelu_accurate": ACT2FN["gelu_accurate"], "gelu_fast": ACT2FN["gelu_fast"],
       "gelu_megatron": MegatronGeLU.apply, "openai_gelu": openai_gelu, "quick_gelu": ACT2FN["quick_gelu"]}


def best_time(fn, min_s):
    best, start, reps = 1e30, time.perf_counter(), 0
    while time.perf_counter() - start < min_s or reps < 3:
        t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0); reps += 1
    return best


env = dict(os.environ)
if args.mkl:
    env["GPTMEG_TORCH_MKL"] = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
cmd = [args.gptmeg, "bench", "act", "--json", "--threads", str(args.threads)]
for v in fns:
    cmd += ["--spec", v + ":torch-cpu"]
for d in dtypes:
    cmd += ["--dtype", d]


def keep_best(best, key, value):
    best[key] = max(best.get(key, 0.0), value)


gm, tt = {}, {}  # (n, dtype, variant, direction) -> best Melem/s: gptmeg, torch ("both": fwd+bwd)
for _ in range(args.rounds):
    for n in sizes:
        out = subprocess.run(cmd + ["--n", str(n)], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr); sys.exit(1)
        for r in json.loads(out.stdout):
            keep_best(gm, (r["n"], r["dtype"], r["spec"].split(":")[0], r["direction"]), r["melem_per_s"])
    for n in sizes:
        min_s = 0.5 if n >= 1 << 24 else 0.15
        for dn, dt in dtypes.items():
            x = (torch.randn(n) * 3).to(dt)
            dy = torch.randn(n).to(dt)
            for v, fn in fns.items():
                xr = x.clone().requires_grad_(True)
                y = fn(xr)
                keep_best(tt, (n, dn, v, "fwd"), n / best_time(lambda: fn(x), min_s) * 1e-6)
                keep_best(tt, (n, dn, v, "bwd"),
                          n / best_time(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True), min_s) * 1e-6)
                keep_best(tt, (n, dn, v, "both"), n / best_time(lambda: torch.autograd.grad(fn(xr), xr, dy), min_s) * 1e-6)

print(f"threads={args.threads} torch={torch.__version__} rounds={args.rounds} gptmeg f32 tanh/erf/exp: "
      f"{'MKL VML (GPTMEG_TORCH_MKL)' if args.mkl else 'glibc double, rounded (no GPTMEG_TORCH_MKL)'}")
print(f"{'variant':18} {'dtype':5} {'dir':3} {'n':>9} {'torch Melem/s':>13} {'torch-cpu':>10} {'tc/torch':>8} "
      f"{'torch fwd+bwd':>13} {'tc/(fwd+bwd)':>12}")
for n in sizes:
    for dn in dtypes:
        for v in fns:
            for direction in ("fwd", "bwd"):
                tm, tc = tt[(n, dn, v, direction)], gm.get((n, dn, v, direction), float("nan"))
                line = f"{v:18} {dn:5} {direction:3} {n:9d} {tm:13.1f} {tc:10.1f} {tc / tm:8.2f}"
                if direction == "bwd":
                    tb = tt[(n, dn, v, "both")]
                    line += f" {tb:13.1f} {tc / tb:12.2f}"
                print(line, flush=True)
