#!/usr/bin/env python3
"""Megatron-LM checkpoint goldens for tests/test_megatron.c (run with /work/venv447/bin/python,
tools/ref/requirements-megatron.txt: transformers 4.47.1 over the pinned torch).

Each case under tests/golden/megatron/<case>/ is a small random GPT-2 (hidden 32, 4 heads, 2 layers,
padded vocab 128, 64 positions, ffn 128) saved as Megatron-LM saves it:
  latest_checkpointed_iteration.txt -> iter_0000010/ (or release/) -> mp_rank_TT[_PPP]/model_optim_rng.pt
  {'args': argparse.Namespace(...), 'checkpoint_version': v, 'iteration': 10,
   'model': {'language_model': {'embedding': {...}, 'transformer' or 'encoder': {...}}},
   'optimizer': {...}, 'rng_state': [{... 'np_rng_state': numpy state ...}]}
and ref/ (config.json + model.safetensors): transformers 4.47.1's
convert_megatron_gpt2_checkpoint.convert_megatron_checkpoint run on the unsharded (TP 1, PP 1)
state dict of the same model (its main() calls torch.load without weights_only, which torch >= 2.6
refuses for a Namespace, so the function is called directly on the in-memory dict). The causal
mask buffers (attn.bias, attn.masked_bias) and lm_head.weight (= wte) are left out of ref.
Tensor-parallel shards are cut the way Megatron's column/row-parallel layers hold them: QKV by
heads, each rank in its own checkpoint_version layout; dense_h_to_4h and the word embeddings by
rows; attention.dense and dense_4h_to_h by columns; the rest replicated. Pipeline stages hold
consecutive layers numbered from 0; the first holds the embeddings, the last final_layernorm.
hostile/: a Namespace in a plain pytorch_model.bin; a Megatron checkpoint whose args hold a
fractions.Fraction (not an allowed global).
v1_tp1: checkpoint_version 1 ([heads, hd, 3] QKV), hidden 16 (DS_DIMS).

Megatron-DeepSpeed (`--only ds`; the layout of microsoft/Megatron-DeepSpeed's save_checkpoint and
DeepSpeed's engine/PipelineModule, written here with the pinned torch.save, DeepSpeed itself not
installed): ds_tp1_pp1, ds_tp2_pp2, ds_flat (older DeepSpeed: views into one flat fp16 buffer per
stage, TP 1 x PP 2), ds_nopipe (--no-pipeline-parallel, TP 2: the weights in 'module'), all one
f16 model (hidden 16, 4 heads, 2 layers, vocab 128, 32 positions, ffn 64) whose reference is
ds_ref/ (the converter on its unsharded checkpoint_version 3.0 state dict). ds_hostile/ (a tiny
model): unknown_key, missing_layer, tp_mismatch, latest_missing, flat_outside (the storage's
element count shrunk in data.pkl so the last view runs past it). fuzz/corpus/megatron_ds/tiny.ds:
the seed of fuzz/fuzz_megatron_ds.c.
Re-running the Megatron-LM cases (`--only lm`) gives the same tensors and refs but new
.data/serialization_id records and torch RNG-state bytes in the rank files, so the committed ones
are kept; `--only ds` writes only the cases above.
No CPU dependence: the cases are data movement only (no matmul in the reference).
"""
import argparse
import fractions
import json
import os
import random
import shutil
from collections import OrderedDict

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import GPT2Config
from transformers.models.megatron_gpt2 import convert_megatron_gpt2_checkpoint as conv

OUT = os.path.join("tests", "golden", "megatron")
D, H, L, V, P, I = 32, 4, 2, 128, 64, 128
HD = D // H


def to_version(canon, ver, heads):
    """canon: [3*heads*HD, ...] in [3, heads, hd] order -> the checkpoint_version layout."""
    rest = canon.shape[1:]
    c = canon.reshape(3, heads, HD, *rest)
    if ver < 1:
        x = c
    elif ver < 2:
        x = c.permute(1, 2, 0, *range(3, 3 + len(rest)))  # [heads, hd, 3]
    else:
        x = c.permute(1, 0, 2, *range(3, 3 + len(rest)))  # [heads, 3, hd]
    return x.contiguous().reshape(3 * heads * HD, *rest)


def model(seed, dtype):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: (torch.randn(*s, generator=g) * 0.2).to(dtype)
    m = {"wte": r(V, D), "wpe": r(P, D), "lnf_w": 1 + r(D), "lnf_b": r(D), "layers": []}
    for _ in range(L):
        m["layers"].append({"ln1_w": 1 + r(D), "ln1_b": r(D), "qkv_w": r(3 * D, D), "qkv_b": r(3 * D),
                            "dense_w": r(D, D), "dense_b": r(D), "ln2_w": 1 + r(D), "ln2_b": r(D),
                            "h4h_w": r(I, D), "h4h_b": r(I), "4hh_w": r(D, I), "4hh_b": r(D)})
    return m


def shard_sd(m, ver, tp, t, pp, p, stack, attn):
    per = L // pp
    lm = {}
    if p == 0:
        lm["embedding"] = {"word_embeddings": {"weight": m["wte"].chunk(tp, 0)[t].clone()},
                           "position_embeddings": {"weight": m["wpe"].clone()}}
    tr = OrderedDict()
    hr = H // tp
    for ll in range(per):
        y = m["layers"][p * per + ll]
        k = f"layers.{ll}."
        tr[k + "input_layernorm.weight"] = y["ln1_w"].clone()
        tr[k + "input_layernorm.bias"] = y["ln1_b"].clone()
        qw = y["qkv_w"].reshape(3, H, HD, D)[:, t * hr:(t + 1) * hr].reshape(3 * hr * HD, D)
        qb = y["qkv_b"].reshape(3, H, HD)[:, t * hr:(t + 1) * hr].reshape(3 * hr * HD)
        tr[k + attn + ".query_key_value.weight"] = to_version(qw, ver, hr)
        tr[k + attn + ".query_key_value.bias"] = to_version(qb, ver, hr)
        tr[k + attn + ".dense.weight"] = y["dense_w"].chunk(tp, 1)[t].contiguous()
        tr[k + attn + ".dense.bias"] = y["dense_b"].clone()
        tr[k + "post_attention_layernorm.weight"] = y["ln2_w"].clone()
        tr[k + "post_attention_layernorm.bias"] = y["ln2_b"].clone()
        tr[k + "mlp.dense_h_to_4h.weight"] = y["h4h_w"].chunk(tp, 0)[t].clone()
        tr[k + "mlp.dense_h_to_4h.bias"] = y["h4h_b"].chunk(tp, 0)[t].clone()
        tr[k + "mlp.dense_4h_to_h.weight"] = y["4hh_w"].chunk(tp, 1)[t].contiguous()
        tr[k + "mlp.dense_4h_to_h.bias"] = y["4hh_b"].clone()
    if p == pp - 1:
        tr["final_layernorm.weight"] = m["lnf_w"].clone()
        tr["final_layernorm.bias"] = m["lnf_b"].clone()
    lm[stack] = tr
    mdl = {"language_model": lm}
    if pp > 1 and p == pp - 1:
        mdl["word_embeddings_for_head"] = {"weight": m["wte"].chunk(tp, 0)[t].clone()}
    return mdl


def args_ns(tp, pp, dtype, extra=None):
    a = argparse.Namespace(hidden_size=D, num_layers=L, num_attention_heads=H, ffn_hidden_size=I,
                           max_position_embeddings=P, padded_vocab_size=V, make_vocab_size_divisible_by=128,
                           bias_gelu_fusion=True, openai_gelu=False, layernorm_epsilon=1e-5,
                           tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp, params_dtype=dtype,
                           tokenizer_type="GPT2BPETokenizer", lr=1.5e-4, data_path=["my-gpt2_text_document"],
                           fp16=dtype == torch.float16, seed=1234)
    if extra:
        for k, v in extra.items():
            setattr(a, k, v)
    return a


def full_ckpt(mdl, a, ver):
    random.seed(1)
    np.random.seed(1)
    return {"args": a, "checkpoint_version": ver, "iteration": 10, "model": mdl,
            "optimizer": {"optimizer": {"state": {0: {"step": 10, "exp_avg": torch.zeros(4), "exp_avg_sq": torch.ones(4)}},
                                        "param_groups": [{"lr": 1.5e-4, "betas": (0.9, 0.95), "eps": 1e-8, "params": [0]}]},
                          "grad_scaler": {"scale": 65536.0, "growth_tracker": 3}},
            "rng_state": [{"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
                           "torch_rng_state": torch.get_rng_state(), "rng_tracker_states": {}}]}


def case(name, ver, tp, pp, dtype, stack="transformer", attn="attention", release=False, seed=0):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    m = model(seed, dtype)
    folder = "release" if release else "iter_0000010"
    os.makedirs(os.path.join(d, folder))
    with open(os.path.join(d, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("release" if release else "10")
    for p in range(pp):
        for t in range(tp):
            rank = f"mp_rank_{t:02d}" + (f"_{p:03d}" if pp > 1 else "")
            os.makedirs(os.path.join(d, folder, rank))
            sd = full_ckpt(shard_sd(m, ver, tp, t, pp, p, stack, attn), args_ns(tp, pp, dtype), ver)
            torch.save(sd, os.path.join(d, folder, rank, "model_optim_rng.pt"))
    # The reference: transformers' converter on the unsharded state dict.
    full = full_ckpt(shard_sd(m, ver, 1, 0, 1, 0, stack, attn), args_ns(1, 1, dtype), ver)
    cfg = GPT2Config(activation_function="gelu_fast", n_inner=I)
    out = conv.convert_megatron_checkpoint(argparse.Namespace(print_checkpoint_structure=False), full, cfg)
    cfg.architectures = ["GPT2LMHeadModel"]
    ref = {k: v.contiguous().clone() for k, v in out.items()
           if not k.endswith(".attn.bias") and not k.endswith(".attn.masked_bias") and k != "lm_head.weight"}
    os.makedirs(os.path.join(d, "ref"))
    save_file(ref, os.path.join(d, "ref", "model.safetensors"), metadata={"format": "pt"})
    cfg.save_pretrained(os.path.join(d, "ref"))


def hostile():
    d = os.path.join(OUT, "hostile")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.save({"w": torch.zeros(2), "args": argparse.Namespace(a=1)}, os.path.join(d, "namespace_plain.bin"))
    m = model(5, torch.float32)
    bad = os.path.join(d, "bad_args", "iter_0000010", "mp_rank_00")
    os.makedirs(bad)
    with open(os.path.join(d, "bad_args", "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("10")
    a = args_ns(1, 1, torch.float32, {"frac": fractions.Fraction(1, 3)})
    torch.save(full_ckpt(shard_sd(m, 3.0, 1, 0, 1, 0, "transformer", "attention"), a, 3.0), os.path.join(bad, "model_optim_rng.pt"))


# ---- Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed save_checkpoint + DeepSpeed's engine) ----
# DIR/latest ("global_step10") and DIR/latest_checkpointed_iteration.txt ("10") -> DIR/global_step10/:
#   mp_rank_XX_model_states.pt (XX: the model-parallel rank, pipe * TP + tp): DeepSpeed's engine state
#     (module: None with pipeline parallelism, the Megatron state dict with --no-pipeline-parallel;
#     optimizer, lr_scheduler, sparse_tensor_module_names (a set), ds_config, ...) updated with
#     Megatron's client state (args, checkpoint_version 3.0, iteration, tokens, rng_state, ...).
#   layer_NN-model_TT-model_states.pt: PipelineModule.save_state_dict, one file per layer with state
#     and TP rank, NN counted over the whole pipe (GPTModelPipe: 0 _to_float16 (no state), 1 the
#     embedding, 2.. the transformer layers, then the final LayerNorm; the tied embedding at the end
#     runs through a partial and writes no file). Newer DeepSpeed clones each tensor
#     (clone_tensors_for_torch_save); older DeepSpeed saved views into the flat fp16 buffer (ds_flat).
class dims:
    """Rebinds the model size for the Megatron-DeepSpeed cases (the Megatron-LM cases keep theirs)."""
    def __init__(self, d, h, l, v, p, i):
        self.new = (d, h, l, v, p, i)

    def __enter__(self):
        global D, H, L, V, P, I, HD
        self.keep = (D, H, L, V, P, I)
        D, H, L, V, P, I = self.new
        HD = D // H

    def __exit__(self, *exc):
        global D, H, L, V, P, I, HD
        D, H, L, V, P, I = self.keep
        HD = D // H


DS_DIMS = (16, 4, 2, 128, 32, 64)   # the DS cases: hidden 16, 4 heads, 2 layers, vocab 128, 32 positions, ffn 64
TINY_DIMS = (8, 2, 2, 16, 16, 32)   # ds_hostile and the fuzz seed


def ds_layer_sds(m, tp, t, attn="self_attention"):
    """The layer files' state dicts of TP rank t, in pipe order: [(NN, OrderedDict)]."""
    full = shard_sd(m, 3.0, tp, t, 1, 0, "encoder", attn)["language_model"]
    out = []
    emb = OrderedDict()
    emb["word_embeddings.weight"] = full["embedding"]["word_embeddings"]["weight"]
    emb["position_embeddings.weight"] = full["embedding"]["position_embeddings"]["weight"]
    out.append((1, emb))
    for ll in range(L):
        sd = OrderedDict((k[len(f"layers.{ll}."):], v) for k, v in full["encoder"].items() if k.startswith(f"layers.{ll}."))
        out.append((2 + ll, sd))
    out.append((2 + L, OrderedDict([("weight", full["encoder"]["final_layernorm.weight"]),
                                    ("bias", full["encoder"]["final_layernorm.bias"])])))
    for _, sd in out:  # as nn.Module.state_dict() returns it
        sd._metadata = OrderedDict([("", {"version": 1})])
    return out


def ds_state(a, module, tp, pp):
    random.seed(1)
    np.random.seed(1)
    st = {"module": module, "buffer_names": [], "optimizer": None, "param_shapes": None, "frozen_param_shapes": None,
          "shared_params": None, "frozen_param_fragments": None,
          "lr_scheduler": {"max_lr": 1.5e-4, "min_lr": 1e-5, "num_steps": 80, "warmup_steps": 2, "decay_style": "cosine"},
          "data_sampler": None, "random_ltd": None, "sparse_tensor_module_names": set(), "skipped_steps": 0,
          "global_steps": 10, "global_samples": 80, "dp_world_size": 1, "mp_world_size": tp * pp,
          "ds_config": {"train_batch_size": 8, "fp16": {"enabled": True, "initial_scale_power": 12},
                        "zero_optimization": {"stage": 0}}, "ds_version": "0.16.2"}
    st.update({"args": a, "checkpoint_version": 3.0, "iteration": 10, "tokens": 40960,
               "universal_checkpoint_info": {"universal_checkpoint_version": 0.2, "original_vocab_size": V - 3,
                                             "padded_vocab_size": V},
               "rng_state": [{"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
                              "torch_rng_state": torch.get_rng_state(), "rng_tracker_states": {}}]})
    return st


def ds_ref(d, m):
    full = full_ckpt(shard_sd(m, 3.0, 1, 0, 1, 0, "encoder", "self_attention"), args_ns(1, 1, m["wte"].dtype), 3.0)
    cfg = GPT2Config(activation_function="gelu_fast", n_inner=I)
    out = conv.convert_megatron_checkpoint(argparse.Namespace(print_checkpoint_structure=False), full, cfg)
    cfg.architectures = ["GPT2LMHeadModel"]
    ref = {k: v.contiguous().clone() for k, v in out.items()
           if not k.endswith(".attn.bias") and not k.endswith(".attn.masked_bias") and k != "lm_head.weight"}
    os.makedirs(d)
    save_file(ref, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg.save_pretrained(d)


def ds_dir(name, tag="global_step10"):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, tag))
    with open(os.path.join(d, "latest"), "w") as f:
        f.write(tag)
    with open(os.path.join(d, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("10")
    return d, os.path.join(d, tag)


def ds_case(name, m, tp, pp, flat=False, nopipe=False):
    d, g = ds_dir(name)
    dt = m["wte"].dtype
    extra = {"deepspeed": True, "no_pipeline_parallel": nopipe, "num_layers_per_virtual_pipeline_stage": None,
             "normalization": "layernorm", "untie_embeddings_and_output_weights": False}
    a = args_ns(tp, pp, dt, extra)
    if nopipe:
        for t in range(tp):
            sd = shard_sd(m, 3.0, tp, t, 1, 0, "encoder", "self_attention")
            torch.save(ds_state(a, sd, tp, 1), os.path.join(g, f"mp_rank_{t:02d}_model_states.pt"))
        return d
    for r in range(tp * pp):
        torch.save(ds_state(a, None, tp, pp), os.path.join(g, f"mp_rank_{r:02d}_model_states.pt"))
    for t in range(tp):
        files = ds_layer_sds(m, tp, t)
        if flat:  # older DeepSpeed: every tensor of a stage a view into one flat fp16 buffer
            stages = [files[:1 + L // pp], files[1 + L // pp:]] if pp == 2 else [files]
            for st in stages:
                n = sum(v.numel() for _, sd in st for v in sd.values())
                buf = torch.zeros(n + 256, dtype=dt)  # + the padding a flat buffer carries
                off = 128
                for _, sd in st:
                    for k in list(sd.keys()):
                        v = sd[k]
                        buf[off:off + v.numel()] = v.reshape(-1)
                        sd[k] = buf[off:off + v.numel()].view(v.shape)
                        off += v.numel()
        for nn, sd in files:
            torch.save(sd, os.path.join(g, f"layer_{nn:02d}-model_{t:02d}-model_states.pt"))
    return d


def ds_hostile(m):
    base = os.path.join(OUT, "ds_hostile")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    a = args_ns(1, 1, m["wte"].dtype, {"deepspeed": True})

    def mk(name, tp=1, args=a, skip=(), edit=None):
        d = os.path.join(base, name)
        g = os.path.join(d, "global_step10")
        os.makedirs(g)
        with open(os.path.join(d, "latest"), "w") as f:
            f.write("global_step10")
        for r in range(tp):
            st = ds_state(args, None, tp, 1)
            del st["rng_state"]  # small
            torch.save(st, os.path.join(g, f"mp_rank_{r:02d}_model_states.pt"))
        for t in range(tp):
            for nn, sd in ds_layer_sds(m, tp, t):
                if (nn, t) in skip:
                    continue
                if edit:
                    sd = edit(nn, t, sd)
                torch.save(sd, os.path.join(g, f"layer_{nn:02d}-model_{t:02d}-model_states.pt"))
        return d

    def unknown(nn, t, sd):  # a layer with an extra (unknown) key
        if nn == 2:
            sd["self_attention.rotary.inv_freq"] = torch.ones(4, dtype=sd["input_layernorm.weight"].dtype)
        return sd
    mk("unknown_key", edit=unknown)
    mk("missing_layer", skip={(2, 0)})
    mk("tp_mismatch", tp=2, args=args_ns(1, 1, m["wte"].dtype, {"deepspeed": True}))
    d = mk("latest_missing")
    with open(os.path.join(d, "latest"), "w") as f:
        f.write("global_step99")

    def outside(nn, t, sd):  # a view running past the end of its flat storage
        if nn == 3:
            w = sd["mlp.dense_4h_to_h.bias"]
            buf = torch.zeros(w.numel() + 8, dtype=w.dtype)
            sd["mlp.dense_4h_to_h.bias"] = buf[8:].view(w.shape)
        return sd
    mk("flat_outside", edit=outside)  # the generator then edits the stored size in the file (see below)
    # torch.save refuses to write a view outside its storage, so shrink the storage's recorded
    # element count in data.pkl: the view (offset 8, size D) now reaches past the storage's end.
    p = os.path.join(base, "flat_outside", "global_step10", "layer_03-model_00-model_states.pt")
    raw = bytearray(open(p, "rb").read())
    import re
    hits = [mt for mt in re.finditer(rb"(X\x03\x00\x00\x00cpu(?:q.)?|h.)K(.)t", bytes(raw), re.DOTALL) if mt.group(2)[0] == D + 8]
    assert len(hits) == 1, len(hits)
    raw[hits[0].start(2)] = D  # the buffer's numel (BININT1 D + 8) -> D
    with open(p, "wb") as f:
        f.write(raw)


def corpus():
    """fuzz/corpus/megatron_ds/tiny.ds: a tiny DS checkpoint (hidden 8, 2 heads, 2 layers, vocab 16,
    16 positions, ffn 32, TP 1 PP 1) as fuzz_megatron_ds.c reads it: the files joined by
    "\\n--gptmeg-ds--\\n": latest, mp_rank_00_model_states.pt, then layer_01.., layer_02.., ..."""
    import io
    m = model(9, torch.float16)
    a = args_ns(1, 1, torch.float16, {"deepspeed": True})
    parts = [b"global_step10"]
    st = ds_state(a, None, 1, 1)
    del st["rng_state"]  # keep the seed small
    bio = io.BytesIO()
    torch.save(st, bio)
    parts.append(bio.getvalue())
    for nn, sd in ds_layer_sds(m, 1, 0):
        bio = io.BytesIO()
        torch.save(sd, bio)
        parts.append(bio.getvalue())
    os.makedirs(os.path.join("fuzz", "corpus", "megatron_ds"), exist_ok=True)
    with open(os.path.join("fuzz", "corpus", "megatron_ds", "tiny.ds"), "wb") as f:
        f.write(b"\n--gptmeg-ds--\n".join(parts))


def ds_all():
    with dims(*DS_DIMS):
        m = model(6, torch.float16)
        shutil.rmtree(os.path.join(OUT, "ds_ref"), ignore_errors=True)
        ds_ref(os.path.join(OUT, "ds_ref"), m)
        ds_case("ds_tp1_pp1", m, 1, 1)
        ds_case("ds_tp2_pp2", m, 2, 2)
        ds_case("ds_flat", m, 1, 2, flat=True)
        ds_case("ds_nopipe", m, 2, 1, nopipe=True)
    with dims(*TINY_DIMS):
        ds_hostile(model(8, torch.float16))
        corpus()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["all", "lm", "ds"], default="all")
    which = ap.parse_args().only
    if which in ("all", "lm"):
        case("v0_tp1", 0, 1, 1, torch.float32, seed=1)
        case("v0_tp2", 0, 2, 1, torch.float16, seed=2, release=True)
        case("v2_tp1", 2.0, 1, 1, torch.float16, seed=3, stack="encoder", attn="self_attention")
        case("v3_tp2_pp2", 3.0, 2, 2, torch.float16, seed=4)
        hostile()
    if which in ("all", "ds"):
        with dims(*DS_DIMS):
            case("v1_tp1", 1.0, 1, 1, torch.float16, seed=7)
        ds_all()
