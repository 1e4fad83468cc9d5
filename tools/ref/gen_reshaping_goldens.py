#!/usr/bin/env python3
"""transformers' checkpoint_reshaping_and_interoperability.py on the Megatron-LM goldens, for
tests/test_megatron_reshaping.c (issue 24's Evidence). Run with /work/venv/bin/python from the
repository root: the pinned torch 2.15.0 and transformers 4.57.3, which ships the tool as
transformers/models/megatron_gpt2/checkpoint_reshaping_and_interoperability.py.

For each of v0_tp1, v0_tp2, v1_tp1, v2_tp1, v3_tp2_pp2 under tests/golden/megatron/ (written by
tools/ref/gen_megatron_goldens.py; read here, never changed) the tool's
convert_checkpoint_from_megatron_to_transformers converts the tracked iteration folder
(iter_0000010/ or release/), and <case>/ref_reshaping/ keeps what it wrote: config.json as the
tool saved it, and its tensors as model.safetensors (f32, made contiguous; the tool always
converts to torch.float32). Left out of the safetensors, after checking them here: lm_head.weight
(bit-identical to transformer.wte.weight), h.N.attn.bias (the tril of ones causal mask) and
h.N.attn.masked_bias (-1e4). provenance.json says what was run and patched.

What had to be done to run the tool (and nothing else):
- torch.load: the tool calls torch.load(..., weights_only=True) on the rank files; torch >= 2.6
  refuses the pickled argparse.Namespace (args) and NumPy RNG state there, so torch.load is
  wrapped for the duration of the call to pass weights_only=False (the files are our own goldens).
- No `megatron` package is needed: in 4.57.3 only the transformers -> Megatron direction imports
  megatron (megatron.core, megatron.training.tokenizer); the Megatron -> transformers function
  imports nothing from it, and the goldens' pickles name no megatron class.
- Tokenizer: with --tokenizer_name unset the tool downloads openai-community/gpt2's tokenizer only
  to record its class name; this machine is offline, so --tokenizer_name is set to a temp folder
  holding tests/fixtures/tok/{vocab,merges} and a tokenizer_config.json naming GPT2Tokenizer.
  AutoTokenizer gives GPT2TokenizerFast, the class the hub tokenizer gives, so config.json's
  tokenizer_class is what the default would write; the tokenizer files it then saves are not kept.
- The flaw "writes from the wrong dict": the save step reads
      for tensors in state_dict_split.filename_to_tensors.values():
          shards = {tensor: state_dict[tensor] for tensor in tensors}
  i.e. from `state_dict` (the rank-0 Megatron checkpoint loaded for its args) instead of
  `output_state_dict`, and keeps only the tensor dict of the last shard, which the following
  `for shard_file, shard in shards.items(): torch.save(...)` then takes for {file: dict}. Run as
  shipped it stops with KeyError('transformer.wpe.weight') (checked here on every case, the error
  recorded in provenance.json). The patch replaces exactly those two lines by
      shards = {}
      for filename, tensors in state_dict_split.filename_to_tensors.items():
          shards[filename] = {tensor: output_state_dict[tensor] for tensor in tensors}
  (the module's source is edited in memory, the replacement asserted to match once, and executed as
  a module; everything else runs as shipped). With the default --max_shard_size 10GB there is one
  shard, which huggingface_hub names model.safetensors: the tool writes it with torch.save, so that
  file is a torch zip pickle under a safetensors name (another flaw, left as is: it is read back
  here with torch.load(weights_only=True) given an open file, since the pinned torch hands a path
  ending in .safetensors to safetensors' loader, which refuses it).
The other known flaw is not patched: for checkpoint_version 0 at TP > 1 (v0_tp2) the tool joins
the ranks' QKV and then reads the result as one [3, heads, head_dim] block, where each rank holds
its own [3, heads/TP, head_dim] block (Megatron reorders per rank); its c_attn there is the ranks'
blocks side by side. The test asserts gptmeg differs from it there, by exactly that permutation,
and equals ref/ (Megatron's per-rank order).
No CPU dependence: data movement and dtype widening only (no arithmetic on the values).
"""
import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import types

import torch
import transformers
from safetensors.torch import save_file
from transformers.models.megatron_gpt2 import checkpoint_reshaping_and_interoperability as shipped

OUT = os.path.join("tests", "golden", "megatron")
CASES = ["v0_tp1", "v0_tp2", "v1_tp1", "v2_tp1", "v3_tp2_pp2"]

WRONG = ("    for tensors in state_dict_split.filename_to_tensors.values():\n"
         "        shards = {tensor: state_dict[tensor] for tensor in tensors}\n")
RIGHT = ("    shards = {}\n"
         "    for filename, tensors in state_dict_split.filename_to_tensors.items():\n"
         "        shards[filename] = {tensor: output_state_dict[tensor] for tensor in tensors}\n")


def patched_module():
    src = open(shipped.__file__).read()
    assert src.count(WRONG) == 1, "the tool's save step is not the one this patch expects"
    mod = types.ModuleType("reshaping_patched")
    mod.__file__ = shipped.__file__
    exec(compile(src.replace(WRONG, RIGHT), shipped.__file__, "exec"), mod.__dict__)
    return mod


class load_with_pickles:
    """torch.load(..., weights_only=False) while the tool runs (args is an argparse.Namespace)."""
    def __enter__(self):
        self.keep = torch.load

        def load(*a, **k):
            k["weights_only"] = False
            return self.keep(*a, **k)
        torch.load = load

    def __exit__(self, *exc):
        torch.load = self.keep


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def tool_args(load, save, tok):
    return argparse.Namespace(load_path=load, save_path=save, print_checkpoint_structure=False, tokenizer_name=tok,
                              max_shard_size="10GB", megatron_path=None, convert_checkpoint_from_megatron_to_transformers=True)


def tokenizer_dir(tmp):
    d = os.path.join(tmp, "tok")
    os.makedirs(d)
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join("tests", "fixtures", "tok", f), d)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "GPT2Tokenizer"}, f)
    return d


def run_case(name, mod, tmp, tok):
    d = os.path.join(OUT, name)
    track = open(os.path.join(d, "latest_checkpointed_iteration.txt")).read().strip()
    load = os.path.join(d, "release" if track == "release" else f"iter_{int(track):07d}")
    # As shipped: fails in its save step.
    save0 = os.path.join(tmp, name + "_shipped")
    os.makedirs(save0)
    shipped_error = None
    with load_with_pickles():
        try:
            shipped.convert_checkpoint_from_megatron_to_transformers(tool_args(load, save0, tok))
        except KeyError as e:
            shipped_error = f"KeyError({e})"
    assert shipped_error == "KeyError('transformer.wpe.weight')", shipped_error
    # Patched (the save step only).
    save = os.path.join(tmp, name)
    os.makedirs(save)
    with load_with_pickles():
        mod.convert_checkpoint_from_megatron_to_transformers(tool_args(load, save, tok))
    written = sorted(os.listdir(save))
    assert "model.safetensors" in written and "pytorch_model.bin" not in written, written
    with open(os.path.join(save, "model.safetensors"), "rb") as f:
        assert f.read(2) == b"PK", "expected torch.save's zip under the safetensors name"
    with open(os.path.join(save, "model.safetensors"), "rb") as f:  # a file object: torch.load would take
        sd = torch.load(f, map_location="cpu", weights_only=True)    # a *.safetensors path for safetensors
    cfg = json.load(open(os.path.join(save, "config.json")))
    n = cfg["n_positions"]
    assert torch.equal(sd["lm_head.weight"], sd["transformer.wte.weight"])
    keep = {}
    for k, v in sd.items():
        assert v.dtype == torch.float32, (k, v.dtype)
        if k == "lm_head.weight":
            continue
        if k.endswith(".attn.bias"):
            assert torch.equal(v, torch.tril(torch.ones(n, n)).view(1, 1, n, n)), k
            continue
        if k.endswith(".attn.masked_bias"):
            assert v.item() == -1e4, k
            continue
        keep[k] = v.contiguous().clone()
    out = os.path.join(d, "ref_reshaping")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    save_file(keep, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(os.path.join(save, "config.json"), os.path.join(out, "config.json"))
    prov = {"tool": "transformers/models/megatron_gpt2/checkpoint_reshaping_and_interoperability.py",
            "function": "convert_checkpoint_from_megatron_to_transformers",
            "transformers": transformers.__version__, "torch": torch.__version__,
            "python": platform.python_version(), "machine": platform.machine(), "cpu": cpu_name(),
            "load_path": os.path.relpath(load, d), "files_written": written,
            "shipped_run": shipped_error,
            "patch": {"replaced": WRONG, "by": RIGHT},
            "torch_load": "weights_only=False (args is an argparse.Namespace; torch >= 2.6 refuses it otherwise)",
            "tokenizer_name": "a temp folder: tests/fixtures/tok vocab/merges + tokenizer_config.json GPT2Tokenizer (offline)",
            "model_safetensors_written_by_tool_as": "a torch.save zip pickle (read back with torch.load weights_only=True)",
            "left_out": {"lm_head.weight": "bit-identical to transformer.wte.weight",
                         "transformer.h.N.attn.bias": "tril(ones(n_positions, n_positions)) as (1, 1, n, n) f32",
                         "transformer.h.N.attn.masked_bias": "-1e4 f32 scalar"},
            "cpu_dependence": "none (data movement and exact f16 -> f32 widening)"}
    with open(os.path.join(out, "provenance.json"), "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
        f.write("\n")
    print(name, "->", out, len(keep), "tensors")


def main():
    assert transformers.__version__ == "4.57.3" and torch.__version__.startswith("2.15.0"), \
        (transformers.__version__, torch.__version__)
    mod = patched_module()
    with tempfile.TemporaryDirectory() as tmp:
        tok = tokenizer_dir(tmp)
        for name in CASES:
            run_case(name, mod, tmp, tok)


if __name__ == "__main__":
    sys.exit(main())
