"""Live peer suite (make peer): fresh random inputs every run, each GELU variant computed by the
installed PyTorch / transformers (the real activation classes from transformers.activations, and
Megatron-LM's formulas written as its fused_bias_gelu.py writes them), compared bit for bit with
`gptmeg act eval VARIANT:torch-cpu` on the same inputs, forward and backward, for f32/bf16/f16
and 1 and 2 threads.

  python3 tools/ref/peer_gelu.py --gptmeg build/gptmeg [--seed S] [--n N]
Exit status 1 if any case is not bit-identical.
"""
import argparse, os, subprocess, sys, tempfile, time

import numpy as np
import torch
import torch.nn.functional as F
from transformers.activations import ACT2FN


def megatron_bias_gelu(x):  # Megatron-LM fused_bias_gelu.bias_gelu with bias 0, as plain ops
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def megatron_bias_gelu_back(g, x):
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
    return ff * g


class MegatronGeLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return megatron_bias_gelu(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return megatron_bias_gelu_back(g, x)


def openai_gelu(x):  # Megatron-LM megatron/model/utils.py
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))


VARIANTS = {
    "gelu": ACT2FN["gelu"], "gelu_python": ACT2FN["gelu_python"], "gelu_new": ACT2FN["gelu_new"],
    "gelu_accurate": ACT2FN["gelu_accurate"], "gelu_fast": ACT2FN["gelu_fast"],
    "gelu_pytorch_tanh": ACT2FN["gelu_pytorch_tanh"], "gelu_megatron": MegatronGeLU.apply,
    "openai_gelu": openai_gelu, "quick_gelu": ACT2FN["quick_gelu"], "gelu_10": ACT2FN["gelu_10"],
}
DTYPES = {"f32": (torch.float32, "<f4"), "bf16": (torch.bfloat16, "<u2"), "f16": (torch.float16, "<u2")}


def to_np(t, dt):
    return t.detach().view(torch.int16).numpy().view("<u2") if dt != "f32" else t.detach().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gptmeg", default="build/gptmeg")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--n", type=int, default=100003)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    print(f"peer suite: torch {torch.__version__}, seed {args.seed}, n {args.n}")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for dn, (tdt, npdt) in DTYPES.items():
                x = (torch.randn(args.n) * 4).to(tdt)
                dy = torch.randn(args.n).to(tdt)
                np.save(os.path.join(tmp, "x.npy"), to_np(x, dn))
                np.save(os.path.join(tmp, "dy.npy"), to_np(dy, dn))
                for name, fn in VARIANTS.items():
                    xr = x.clone().requires_grad_(True)
                    y = fn(xr)
                    y.backward(dy)
                    for direction, ref in (("fwd", y), ("bwd", xr.grad)):
                        out = os.path.join(tmp, "out.npy")
                        cmd = [args.gptmeg, "act", "eval", f"{name}:torch-cpu", "--dtype", dn,
                               "--in", os.path.join(tmp, "x.npy"), "--out", out, "--threads", str(threads)]
                        if direction == "bwd":
                            cmd += ["--grad", "--dy", os.path.join(tmp, "dy.npy")]
                        r = subprocess.run(cmd, capture_output=True, text=True)
                        if r.returncode != 0:
                            print(f"  {name:18} {dn:4} {direction} t={threads}: gptmeg failed: {r.stderr.strip()}")
                            failures += 1
                            continue
                        got = np.load(out).view(np.uint16 if dn != "f32" else np.uint32)
                        want = to_np(ref, dn).view(np.uint16 if dn != "f32" else np.uint32)
                        eq = float(np.mean(got == want))
                        ok = eq == 1.0
                        failures += not ok
                        print(f"  {name:18} {dn:4} {direction} t={threads}: {'ok' if ok else 'DIFFERS'} "
                              f"(bitwise equal {eq:.6f})")
    print("peer suite:", "all bit-identical" if failures == 0 else f"{failures} cases differ")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
