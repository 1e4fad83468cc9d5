#!/usr/bin/env python3
"""NGC-shaped Megatron zips for tests/test_megatron_zip.c (run from the repo root with
/work/venv447/bin/python, tools/ref/requirements-megatron.txt: transformers 4.47.1 over the pinned
torch 2.15.0 CPU).

NVIDIA's megatron_lm_345m_v0.0.zip is a zip holding release/mp_rank_00/model_optim_rng.pt, a
legacy-format (pre-1.6) torch.save of a Megatron-LM checkpoint without 'checkpoint_version'
(version 0). Here the same shape with the small model of gen_megatron_goldens.py (hidden 32,
4 heads, 2 layers, padded vocab 128, float16, args as argparse.Namespace, NumPy RNG and
optimizer state), saved with _use_new_zipfile_serialization=False, put in zips by Python's
zipfile:
  stored.zip    release/mp_rank_00/model_optim_rng.pt, ZIP_STORED
  deflated.zip  the same entry, ZIP_DEFLATED
  nested.zip    megatron_lm_345m/iter_0000010/mp_rank_00/model_optim_rng.pt, ZIP_DEFLATED, beside
                a README entry (the "*/mp_rank_00/model_optim_rng.pt" rule)
ref/ (config.json + model.safetensors) is transformers 4.47.1's converter as its main() runs on
deflated.zip: zipfile opens release/mp_rank_00/model_optim_rng.pt, torch.load reads it (with
weights_only=False: torch >= 2.6 refuses the Namespace otherwise, which is the only change from
main()), the GPT2Config main() spells out with the activation from args, then
convert_megatron_checkpoint. Buffers (attn.bias, attn.masked_bias) and lm_head.weight (= wte)
are left out of ref.
hostile/: small_deflated.zip / small_stored.zip (the entry holds a 4 KiB head of the .pt, so a
read fails in the torch reader) and edits of their central directories (a CRC-32 that lies, an uncompressed size
too small and too large, a local header offset outside the file), a stored entry whose CRC-32
lies, a zip without the entry, a zip with a second rank, and a zip bomb (4 MiB of zeros deflated
to a few KiB: ratio over 64:1).
"""
import argparse
import io
import os
import shutil
import struct
import sys
import zipfile

import torch
from safetensors.torch import save_file
from transformers import GPT2Config
from transformers.models.megatron_gpt2 import convert_megatron_gpt2_checkpoint as conv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_megatron_goldens as g  # noqa: E402  (the model, the shards and the args)

OUT = os.path.join("tests", "golden", "megatron_zip")
ENTRY = "release/mp_rank_00/model_optim_rng.pt"


def legacy_bytes():
    m = g.model(7, torch.float16)
    sd = g.full_ckpt(g.shard_sd(m, 0, 1, 0, 1, 0, "transformer", "attention"), g.args_ns(1, 1, torch.float16), 0)
    del sd["checkpoint_version"]  # absent, as in the 2019 NGC file: version 0
    b = io.BytesIO()
    torch.save(sd, b, _use_new_zipfile_serialization=False)
    return b.getvalue()


def write_zip(path, entries, method):
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, data in entries:
            z.writestr(name, data)


def reference(zpath):
    with zipfile.ZipFile(zpath, "r") as checkpoint:
        with checkpoint.open(ENTRY) as pytorch_dict:
            input_state_dict = torch.load(pytorch_dict, map_location="cpu", weights_only=False)
    ds_args = input_state_dict.get("args", None)
    if ds_args.bias_gelu_fusion:
        activation_function = "gelu_fast"
    elif ds_args.openai_gelu:
        activation_function = "gelu_new"
    else:
        activation_function = "gelu"
    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=1024, n_layer=24, n_head=16, n_inner=4096,
                        activation_function=activation_function, resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                        layer_norm_epsilon=1e-5, initializer_range=0.02, summary_type="cls_index", summary_use_proj=True,
                        summary_activation=None, summary_proj_to_labels=True, summary_first_dropout=0.1,
                        scale_attn_weights=True, use_cache=True, bos_token_id=50256, eos_token_id=50256)
    config.architectures = ["GPT2LMHeadModel"]
    out = conv.convert_megatron_checkpoint(argparse.Namespace(print_checkpoint_structure=False), input_state_dict, config)
    ref = {k: v.contiguous().clone() for k, v in out.items()
           if not k.endswith(".attn.bias") and not k.endswith(".attn.masked_bias") and k != "lm_head.weight"}
    d = os.path.join(OUT, "ref")
    os.makedirs(d)
    save_file(ref, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(d)


def central(buf, name):
    """Offset of the central directory header of entry name."""
    i = buf.find(b"PK\x01\x02")
    while i >= 0:
        nl = struct.unpack_from("<H", buf, i + 28)[0]
        if bytes(buf[i + 46:i + 46 + nl]) == name.encode():
            return i
        i = buf.find(b"PK\x01\x02", i + 4)
    raise KeyError(name)


def edit(src, dst, name, field, fn):
    buf = bytearray(open(src, "rb").read())
    c = central(buf, name)
    off = {"crc": 16, "usize": 24, "loff": 42}[field]
    v = struct.unpack_from("<I", buf, c + off)[0]
    struct.pack_into("<I", buf, c + off, fn(v, len(buf)))
    open(dst, "wb").write(bytes(buf))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(os.path.join(OUT, "hostile"))
    pt = legacy_bytes()
    write_zip(os.path.join(OUT, "stored.zip"), [(ENTRY, pt)], zipfile.ZIP_STORED)
    write_zip(os.path.join(OUT, "deflated.zip"), [(ENTRY, pt)], zipfile.ZIP_DEFLATED)
    write_zip(os.path.join(OUT, "nested.zip"), [("megatron_lm_345m/README.txt", b"a small model\n"),
                                                ("megatron_lm_345m/iter_0000010/mp_rank_00/model_optim_rng.pt", pt)],
              zipfile.ZIP_DEFLATED)
    reference(os.path.join(OUT, "deflated.zip"))
    h = lambda n: os.path.join(OUT, "hostile", n)
    # Each edit is refused before the torch file is parsed: a 4 KiB head of it keeps them small.
    small = pt[:4096]
    dz, sz = h("small_deflated.zip"), h("small_stored.zip")
    write_zip(dz, [(ENTRY, small)], zipfile.ZIP_DEFLATED)
    write_zip(sz, [(ENTRY, small)], zipfile.ZIP_STORED)
    edit(dz, h("crc.zip"), ENTRY, "crc", lambda v, n: v ^ 0x1)
    edit(sz, h("stored_crc.zip"), ENTRY, "crc", lambda v, n: v ^ 0x1)
    edit(dz, h("size_small.zip"), ENTRY, "usize", lambda v, n: v - 1)
    edit(dz, h("size_big.zip"), ENTRY, "usize", lambda v, n: v + 1000)
    edit(dz, h("outside.zip"), ENTRY, "loff", lambda v, n: n + 100)
    write_zip(h("no_entry.zip"), [("release/mp_rank_00/model.pt", pt[:64])], zipfile.ZIP_DEFLATED)
    write_zip(h("two_ranks.zip"), [(ENTRY, small), ("release/mp_rank_01/model_optim_rng.pt", small)], zipfile.ZIP_DEFLATED)
    write_zip(h("bomb.zip"), [(ENTRY, bytes(4 << 20))], zipfile.ZIP_DEFLATED)
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("Made by tools/ref/gen_ngc_goldens.py (run from the repo root with /work/venv447/bin/python: torch 2.15.0 CPU,\n"
                "transformers 4.47.1; Intel Xeon, Sapphire Rapids class). No arithmetic is involved: the tensors are moved\n"
                "bit for bit, so the CPU does not matter. See the script's docstring for each file.\n")


if __name__ == "__main__":
    main()
