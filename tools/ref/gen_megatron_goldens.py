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


if __name__ == "__main__":
    case("v0_tp1", 0, 1, 1, torch.float32, seed=1)
    case("v0_tp2", 0, 2, 1, torch.float16, seed=2, release=True)
    case("v2_tp1", 2.0, 1, 1, torch.float16, seed=3, stack="encoder", attn="self_attention")
    case("v3_tp2_pp2", 3.0, 2, 2, torch.float16, seed=4)
    hostile()
