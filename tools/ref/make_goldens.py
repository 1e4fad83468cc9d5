#!/usr/bin/env python3
"""`make goldens`: regenerate the goldens this machine can produce, each where it belongs.

torch's bits depend on the CPU class (the torch CPU targets, src/core/target.c), so where a golden
goes depends on the machine that makes it (tests/golden/targets/README.md):
  - on a zen4 host the project's generators (tools/ref/gen_*_goldens.py) write tests/golden/ in place
    (the base set, zen4's bits);
  - on any other host they run once per target the host can produce (its own class natively, the
    classes below it under the dispatch caps of check_fidelity.py's TARGET_ENV), each run in a
    scratch worktree of HEAD (so tests/golden/ is never overwritten with another class's bits), and
    every golden whose content differs from zen4's (tensors and arrays bit for bit, JSON without
    the keys that describe the machine) is copied to tests/golden/targets/<target>/, with a
    MACHINE.txt naming the CPU and settings; files there that now equal zen4's are reported, not
    removed;
  - the generators that only the intel-amx class makes (they write tests/golden/targets/intel-amx/
    themselves: the AMX blocking, the training goldens) run in place on an intel-amx host only;
  - the Megatron generators (transformers 4.47.1: --python-megatron) run in place on every host
    (checkpoint conversions, no CPU-dependent arithmetic).
Run from the repo root after building, with the pinned torch (tools/ref/requirements.txt):
  python3 tools/ref/make_goldens.py [--gptmeg build/gptmeg] [--target NAME ... | --target all]
      [--python-megatron PY] [--only gen_matmul_goldens.py ...]
The worktree is HEAD's: uncommitted changes to the generators are not in it (commit them first).
"""
import argparse
import glob
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_fidelity import PRODUCIBLE, TARGET_ENV, host_target  # noqa: E402

# written only by the intel-amx class (into tests/golden/targets/intel-amx/)
AMX_ONLY = {"amx_blocking", "autocast_grad", "bf16_amx_chunk", "bf16_amx_threads", "bf16_amx_tiles", "bf16_onerow", "grad",
            "linear_bwd", "matmul_mt", "recipe", "train"}
MEGATRON = {"megatron", "ngc"}
# take the target as an argument and write tests/golden/targets/<target>/ themselves
TARGET_ARG = {"attention_bwd": lambda t: [t], "act_bwd": lambda t: ["--target", t], "lmloss": lambda t: ["--target", t],
              "matmul_kparts": lambda t: ["--target", t], "matmul_avx2": lambda t: ["--target", t],
              "matmul_onerow": lambda t: ["--target", t], "decode": lambda t: ["--target", t],
              "attention_fold": lambda t: ["--target", t], "matmul_narrow": lambda t: ["--target", t]}
# goldens whose generator covers the targets itself (gen_optim_goldens.py writes optim_avx2.* beside
# optim.*, its avx2 run): not copied into a target's folder
OWN_TARGETS = ("optim/",)
# JSON keys that describe the machine or the environment, not torch's results
META = {"cpu", "avx512_fp16", "torch_version", "torch", "transformers", "cpu_capability", "onednn", "torch_lib", "target",
        "machine", "settings", "generated", "torch_env", "env", "generator", "note"}


def gen_name(path):
    return os.path.basename(path)[len("gen_"):-len("_goldens.py")]


def content(path, data):
    """What a golden says, without what describes the machine that made it."""
    if path.endswith(".npy"):
        import numpy as np
        a = np.load(io.BytesIO(data))
        return (str(a.dtype), a.shape, a.tobytes())
    if path.endswith(".safetensors"):
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        header.pop("__metadata__", None)
        return (json.dumps(header, sort_keys=True), data[8 + n:])
    if path.endswith(".json"):
        def strip(x):
            if isinstance(x, dict):
                return {k: strip(v) for k, v in x.items() if k not in META}
            if isinstance(x, list):
                return [strip(v) for v in x]
            return x
        return strip(json.loads(data))
    if path.endswith(".bin"):  # torch.save: the tensors, not the zip's bytes
        import torch
        d = torch.load(io.BytesIO(data), weights_only=True)
        return {k: (str(v.dtype), tuple(v.shape), v.numpy().tobytes()) for k, v in d.items()}
    return data


def git(*args, cwd="."):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def run_gen(py, gen, extra, cwd, env):
    t0 = time.time()
    r = subprocess.run([py, gen, *extra], cwd=cwd, env=env, capture_output=True, text=True)
    print(f"   {os.path.basename(gen)} {' '.join(extra)}: rc {r.returncode}, {time.time() - t0:.0f} s", flush=True)
    if r.returncode:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-4000:])
        raise SystemExit(f"make_goldens: {gen} failed")


def in_place(args, gens):
    for g in gens:
        py = args.python_megatron if gen_name(g) in MEGATRON else sys.executable
        if gen_name(g) in MEGATRON and subprocess.run(
                [py, "-c", "import transformers.models.megatron_gpt2.convert_megatron_gpt2_checkpoint"],
                capture_output=True).returncode:
            print(f"SKIP {g}: needs transformers 4.47.1 (--python-megatron / PYTHON_MEGATRON)")
            continue
        run_gen(py, g, [], ".", dict(os.environ))


def for_target(args, t, host, gens):
    """The base generators under target t's caps in a worktree; t's differing goldens copied out."""
    repo = os.getcwd()
    tmp = tempfile.mkdtemp(prefix=f"gptmeg-goldens-{t}-")
    wt = os.path.join(tmp, "wt")
    git("worktree", "add", "--detach", wt, "HEAD")
    try:
        shared = os.path.realpath(os.path.join(repo, "..", "shared"))
        if os.path.isdir(shared):
            os.symlink(shared, os.path.join(tmp, "shared"))
        os.symlink(os.path.dirname(os.path.abspath(args.gptmeg)), os.path.join(wt, "build"))
        env = dict(os.environ, **({} if t == host else TARGET_ENV[t]))
        print(f"== {t}: torch with {' '.join(f'{k}={v}' for k, v in TARGET_ENV[t].items()) if t != host else 'no caps (native)'}")
        run_gen(sys.executable, "tools/ref/gen_inputs_fixture.py", [], wt, env)
        for g in gens:
            name = gen_name(g)
            run_gen(sys.executable, g, TARGET_ARG[name](t) if name in TARGET_ARG else [], wt, env)
        changed = [l[3:] for l in git("status", "--porcelain", "--untracked-files=all", "tests/golden", cwd=wt).decode().splitlines()]
        dest_root = os.path.join(repo, "tests", "golden", "targets", t)
        copied, same = [], []
        for p in sorted(changed):
            rel = p[len("tests/golden/"):]
            new = open(os.path.join(wt, p), "rb").read()
            if rel.startswith(f"targets/{t}/"):  # the target-aware generators' own files
                rel_t = rel[len(f"targets/{t}/"):]
                base = os.path.join(repo, "tests", "golden", rel_t)
                if os.path.exists(base) and content(p, new) == content(p, open(base, "rb").read()):
                    same.append(rel_t)
                    continue
                rel = rel_t
            elif rel.startswith("targets/") or rel.startswith(OWN_TARGETS):
                continue  # another target's file (an intel-amx default), or a generator that covers targets itself
            else:
                base = subprocess.run(["git", "show", f"HEAD:{p}"], capture_output=True).stdout
                if base and content(p, new) == content(p, base):
                    same.append(rel)
                    continue
            dest = os.path.join(dest_root, rel)
            copied.append(rel)
            if os.path.exists(dest) and content(p, new) == content(p, open(dest, "rb").read()):
                continue  # the same results as the file there: left as it is (no metadata churn)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.exists(dest):
                os.chmod(dest, 0o644)
            shutil.copyfile(os.path.join(wt, p), dest)
            os.chmod(dest, 0o444)
        stale = [r for r in same if os.path.exists(os.path.join(dest_root, r))]
        info = {}
        for l in open("/proc/cpuinfo"):
            k, _, v = l.partition(":")
            info.setdefault(k.strip(), v.strip())
        cpu = f"{info.get('model name', '?')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')}, stepping {info.get('stepping', '?')})"
        flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
        import torch
        with open(os.path.join(dest_root, "MACHINE.txt" if not args.only else os.devnull), "w") as f:  # all or nothing
            f.write(f"setting: {'native' if t == host else 'capped'} on an {host} machine, {time.strftime('%Y-%m-%d')}\n"
                    f"environment: {' '.join(f'{k}={v}' for k, v in TARGET_ENV[t].items()) if t != host else 'none'}\n"
                    f"cpu: {cpu}\nflags: {' '.join(x for x in flags if x.startswith(('amx', 'avx512_bf16', 'avx512_fp16', 'avx512f', 'avx2')))}\n"
                    f"torch: {torch.__version__}\ngenerators: tools/ref/gen_*_goldens.py at {git('rev-parse', '--short', 'HEAD').decode().strip()}"
                    f" (tools/ref/make_goldens.py)\nfiles differing from zen4's by content: {len(copied)}\n")
        print(f"   {t}: {len(copied)} goldens differ from zen4's -> tests/golden/targets/{t}/"
              + (f"; now equal to zen4's but kept there: {', '.join(stale)}" if stale else ""))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", wt], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gptmeg", default=os.path.join("build", "gptmeg"))
    ap.add_argument("--target", nargs="+", default=["all"])
    ap.add_argument("--python-megatron", default=os.environ.get("PYTHON_MEGATRON", sys.executable))
    ap.add_argument("--only", nargs="+", help="only these generators (file names)")
    args = ap.parse_args()
    if not os.path.exists(os.path.join("tools", "ref", "make_goldens.py")):
        raise SystemExit("make_goldens: run from the repo root")
    host = host_target(args.gptmeg)
    gens = sorted(glob.glob(os.path.join("tools", "ref", "gen_*_goldens.py")))
    if args.only:
        gens = [g for g in gens if os.path.basename(g) in args.only]
    base = [g for g in gens if gen_name(g) not in AMX_ONLY | MEGATRON]
    print(f"make_goldens: this machine's torch CPU target is {host}")
    if host == "zen4":
        run_gen(sys.executable, "tools/ref/gen_inputs_fixture.py", [], ".", dict(os.environ))
        in_place(args, [g for g in base if gen_name(g) != "attention_bwd"])  # its file is intel-amx's (no zen4 one)
    else:
        targets = PRODUCIBLE[host] if args.target == ["all"] else args.target
        for t in targets:
            if t not in PRODUCIBLE[host]:
                raise SystemExit(f"make_goldens: a {host} machine cannot produce {t} (it makes {', '.join(PRODUCIBLE[host])})")
            for_target(args, t, host, base)
    if host == "intel-amx":
        in_place(args, [g for g in gens if gen_name(g) in AMX_ONLY])
    in_place(args, [g for g in gens if gen_name(g) in MEGATRON])


if __name__ == "__main__":
    main()
