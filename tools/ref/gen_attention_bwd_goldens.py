#!/usr/bin/env python3
"""Attention backward goldens from PyTorch CPU autograd for tests/test_attention_bwd.c.

One GPT-2 attention layer as each numerics profile runs it: transformers 4.57.3's
GPT2Attention.forward (eager_attention_forward for "hf", tools/ref/gm_profiles.py's
legacy_attention / meg_attention / megatron_attention patched in for the others, as
gm_profiles.run does), as GPT2LMHeadModel calls it by default (use_cache: a DynamicCache, whose
copies of k and v the attention reads; the mask create_causal_mask builds), between c_attn's
output qkv [B, T, 3C] (a leaf) and c_proj's input (c_proj the identity); out.backward(dout)
gives dqkv. The operands' layouts (views or copies) pick torch's kernels for f16 off AMX, so the
cache matters: with use_cache=False, B > 1, k^T is a copy instead of a view. Inputs are made by a generator the C test repeats (gen_values
below: a 64-bit LCG, 24-bit uniform in [-2, 2), rounded to the dtype), so only the result is
stored: per case, one FNV-1a 32 hash of each row of dqkv (3C values as f32 bits, the dtype's
values widened), so the test reports the fraction of identical rows.

Cases: f32 "hf" the full grid B {1, 2} x NH {2, 4} x hd {4, 8, 64} x T {1, 5, 16, 24, 64} x
layer {0 (no inverse-layer scaling), 2 (scale_attn_by_inverse_layer_idx)}; every other profile
and dtype (B, NH) in {(1, 2), (2, 4)} with the same hd, T, layers; five cases at T = 200. Each at
torch.set_num_threads(1) and (2): one line with threads "12" when both give the same bits, else a
line for each. Writes tests/golden/targets/TARGET/attention_bwd/attention_bwd.txt (TARGET the first argument,
default intel-amx; the torch settings in its header; for another target only the cases whose bits
differ from intel-amx's file). Run from the repo root on the target's CPU
or under the caps that imitate it (tests/golden/targets/README.md), e.g.
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 python tools/ref/gen_attention_bwd_goldens.py intel-avx512-bf16.
Made on an Intel Xeon with AMX.
"""
import os
import platform
import sys

import torch
from transformers import DynamicCache, GPT2Config
from transformers.masking_utils import create_causal_mask
from transformers.models.gpt2 import modeling_gpt2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_profiles  # noqa: E402

TARGET = sys.argv[1] if len(sys.argv) > 1 else "intel-amx"  # the folder: run under its caps (targets/README.md)
OUT = os.path.join("tests", "golden", "targets", TARGET, "attention_bwd")
HDS = [4, 8, 64]
TS = [1, 5, 16, 24, 64]  # 24: a softmax row with a tail (not a multiple of 16); 200 in five more cases
LAYERS = [0, 2]
MASK64 = (1 << 64) - 1


def gen_values(seed, n, dtype):
    """n values: s = s * 6364136223846793005 + 1442695040888963407 (mod 2^64) from s = seed,
    u = (s >> 40) / 2^24, x = 4u - 2 in f32 (exact), rounded to dtype (RNE)."""
    s = seed & MASK64
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & MASK64
        out.append((s >> 40) * (4.0 / 16777216.0) - 2.0)
    return torch.tensor(out, dtype=torch.float32).to(dtype)


def fnv_rows(x):
    """FNV-1a 32 of each row's f32 bytes (little-endian)."""
    b = x.float().contiguous().view(torch.int32).numpy().astype("<i4")
    hs = []
    for row in b:
        h = 0x811C9DC5
        for byte in row.tobytes():
            h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
        hs.append(h)
    return hs


class Fixed(torch.nn.Module):
    """c_attn replaced by the leaf qkv (its input ignored)."""

    def __init__(self, t):
        super().__init__()
        self.t = t

    def forward(self, h):
        return self.t


def attention_grad(profile, dtype, B, NH, hd, T, layer, threads, with_out=False):
    """dqkv of GPT2Attention.forward as GPT2LMHeadModel runs it by default (use_cache: a
    DynamicCache, so k and v reach the attention function as the cache's contiguous copies; the
    4-D mask create_causal_mask builds), c_attn's output a leaf, c_proj the identity. with_out:
    (dqkv, the forward's output [B, T, C])."""
    torch.set_num_threads(threads)
    C = NH * hd
    cfg = GPT2Config(n_embd=C, n_head=NH, n_layer=3, n_positions=max(64, T),
                     scale_attn_by_inverse_layer_idx=(layer == 2))
    cfg._attn_implementation = "eager"
    module = modeling_gpt2.GPT2Attention(cfg, layer_idx=layer).to(dtype).eval()
    seed = ((B * 131 + NH) * 131 + hd) * 131 + T
    qkv = gen_values(seed, B * T * 3 * C, dtype).reshape(B, T, 3 * C).requires_grad_(True)
    dout = gen_values(seed + 7, B * T * C, dtype).reshape(B, T, C)
    module.c_attn = Fixed(qkv)
    module.c_proj = torch.nn.Identity()
    emb = torch.zeros(B, T, C, dtype=dtype)
    cache = DynamicCache()
    pos = torch.arange(T)
    mask = create_causal_mask(config=cfg, input_embeds=emb, attention_mask=None, cache_position=pos,
                              past_key_values=cache, position_ids=pos.unsqueeze(0))
    fn = {"hf": gm_profiles.ORIGINAL_EAGER, "hf-legacy": gm_profiles.legacy_attention,
          "meg": gm_profiles.meg_attention, "megatron": gm_profiles.megatron_attention}[profile]
    if profile in ("meg", "megatron"):
        module.reorder_and_upcast_attn = False
    modeling_gpt2.eager_attention_forward = fn
    try:
        o = module(emb, past_key_values=cache, cache_position=pos, attention_mask=mask)[0]
    finally:
        modeling_gpt2.eager_attention_forward = gm_profiles.ORIGINAL_EAGER
    o.backward(dout)
    return (qkv.grad, o.detach()) if with_out else qkv.grad


def cases():
    for profile in gm_profiles.PROFILES:
        for dname in ["f32", "f16", "bf16"]:
            full = profile == "hf" and dname == "f32"
            bnh = [(b, nh) for b in (1, 2) for nh in (2, 4)] if full else [(1, 2), (2, 4)]
            for (B, NH) in bnh:
                for hd in HDS:
                    for T in TS:
                        for layer in LAYERS:
                            yield profile, dname, B, NH, hd, T, layer
    # long rows: MKL's Intel packed path (T, len >= 192) folds baddbmm's alpha into B
    yield from [("meg", "f32", 1, 2, 8, 200, 0), ("megatron", "f32", 1, 2, 8, 200, 2), ("hf", "f32", 1, 2, 64, 200, 2),
                ("megatron", "bf16", 1, 2, 8, 200, 2), ("meg", "f16", 1, 2, 8, 200, 2)]


BASE = "intel-amx"  # the full file; the other targets' files hold only the cases whose bits differ


def case_groups(lines):
    """{case key (the first 7 fields): [its lines]} in order."""
    groups = {}
    for ln in lines:
        if ln and not ln.startswith("#"):
            groups.setdefault(" ".join(ln.split()[:7]), []).append(ln)
    return groups


def only_differing(lines):
    """The lines of the cases whose lines differ from BASE's file (which must exist)."""
    with open(os.path.join("tests", "golden", "targets", BASE, "attention_bwd", "attention_bwd.txt")) as f:
        base = case_groups(f.read().split("\n"))
    return [ln for key, group in case_groups(lines).items() if base.get(key) != group for ln in group]


def write(lines, n_cases):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    kept = lines if TARGET == BASE else only_differing(lines)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "attention_bwd.txt"), "w") as f:
        f.write(f"# gen_attention_bwd_goldens.py: torch {torch.__version__}, transformers "
                f"{__import__('transformers').__version__}, cpu '{cpu}', capability "
                f"{torch.backends.cpu.get_cpu_capability()}, mkldnn {torch.backends.mkldnn.is_available()}, "
                f"env ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '')} "
                f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '')} "
                f"MKL_ENABLE_INSTRUCTIONS={os.environ.get('MKL_ENABLE_INSTRUCTIONS', '')}\n")
        f.write("# profile dtype B NH hd T layer threads (12: both gave these bits), then FNV-1a 32 of each row of dqkv [B*T, 3C] (f32 bits)\n")
        if TARGET != BASE:
            f.write(f"# only the cases whose bits differ from {BASE}'s file; every other case: as there\n")
        for ln in kept:
            f.write(ln + "\n")
    print(f"gen_attention_bwd_goldens: {n_cases} cases, {len(case_groups(kept))} written -> {OUT}/attention_bwd.txt")


def main():
    lines = []
    n = 0
    for profile, dname, B, NH, hd, T, layer in cases():
        hs = [fnv_rows(attention_grad(profile, gm_profiles.DTYPES[dname], B, NH, hd, T, layer, th).reshape(B * T, -1))
              for th in (1, 2)]
        head = f"{profile} {dname} {B} {NH} {hd} {T} {layer}"
        if hs[0] == hs[1]:  # one line for both thread counts
            lines.append(f"{head} 12 " + " ".join(f"{h:08x}" for h in hs[0]))
        else:
            for th in (1, 2):
                lines.append(f"{head} {th} " + " ".join(f"{h:08x}" for h in hs[th - 1]))
        n += 1
    write(lines, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
