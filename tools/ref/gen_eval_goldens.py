#!/usr/bin/env python3
"""Golden perplexities for tests/test_eval.c and tests/cli_eval.sh, from transformers itself.

The recipe is the one in transformers' docs, "Perplexity of fixed-length models": windows of
max_length tokens moving by stride, the targets of the overlap set to -100, loss = model(ids,
labels=targets).loss, accumulated as nll_sum += loss * (valid targets - 1) and n_tokens +=
(valid targets - 1), ppl = exp(nll_sum / n_tokens). GPT2LMHeadModel, attn_implementation="eager",
CPU, f32, one thread. Writes tests/golden/eval/:
  tokens.npy       int64 [N]  random ids in [0, 400) for tests/golden/model/base (vocab 400, P 64)
  text_tokens.npy  int64 [M]  tests/fixtures/eval/sample.txt through GPT2TokenizerFast built from
                              ../shared/data/gpt2-bpe (skipped, keeping the old file, when absent)
  index.json       the cases: ctx, stride, ppl, nll, n_tokens, n_windows; for the text, the model
                   is `gptmeg init --config tiny --seed 5` with every parameter multiplied by 4 in
                   f32 (so no weights are committed; the C test rebuilds it with gm_gpt2_init_random)
Run from the repo root after building: python3 tools/ref/gen_eval_goldens.py [--gptmeg build/gptmeg]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import GPT2LMHeadModel, GPT2TokenizerFast

OUT = os.path.join("tests", "golden", "eval")
BASE = os.path.join("tests", "golden", "model", "base")
TEXT = os.path.join("tests", "fixtures", "eval", "sample.txt")
BPE = os.path.join("..", "shared", "data", "gpt2-bpe")
N_BASE = 300
BASE_CASES = [(64, 64), (64, 32), (64, 47), (32, 24), (16, 5), (2, 1), (64, 1), (7, 7)]
TEXT_INIT = dict(config="tiny", seed=5, scale=4.0)
TEXT_CASES = [(128, 128), (128, 64), (100, 37)]


def perplexity(model, ids, max_length, stride):
    """The docs' loop, verbatim in behaviour (ids: LongTensor [1, seq_len])."""
    seq_len = ids.size(1)
    nll_sum = 0.0
    n_tokens = 0
    n_windows = 0
    prev_end_loc = 0
    for begin_loc in range(0, seq_len, stride):
        end_loc = min(begin_loc + max_length, seq_len)
        trg_len = end_loc - prev_end_loc
        input_ids = ids[:, begin_loc:end_loc]
        target_ids = input_ids.clone()
        target_ids[:, :-trg_len] = -100
        with torch.no_grad():
            neg_log_likelihood = model(input_ids, labels=target_ids).loss
        num_valid_tokens = (target_ids != -100).sum().item()
        num_loss_tokens = num_valid_tokens - target_ids.size(0)
        nll_sum += neg_log_likelihood * num_loss_tokens
        n_tokens += num_loss_tokens
        n_windows += 1
        prev_end_loc = end_loc
        if end_loc == seq_len:
            break
    avg_nll = nll_sum / n_tokens
    return dict(ctx=max_length, stride=stride, ppl=float(torch.exp(avg_nll)), nll=float(avg_nll),
                n_tokens=int(n_tokens), n_windows=n_windows)


def load(d):
    m = GPT2LMHeadModel.from_pretrained(d, attn_implementation="eager", dtype=torch.float32).eval()
    assert m.config._attn_implementation == "eager"
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gptmeg", default=os.path.join("build", "gptmeg"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    index_path = os.path.join(OUT, "index.json")
    old = json.load(open(index_path)) if os.path.exists(index_path) else {}

    model = load(BASE)
    gen = torch.Generator().manual_seed(4242)
    tokens = torch.randint(0, model.config.vocab_size, (1, N_BASE), generator=gen)
    np.save(os.path.join(OUT, "tokens.npy"), tokens[0].numpy().astype(np.int64))
    base = [perplexity(model, tokens, c, s) for c, s in BASE_CASES]
    for r in base:
        print(f"base ctx {r['ctx']:3d} stride {r['stride']:3d}: ppl {r['ppl']:.6f} over {r['n_tokens']} tokens, {r['n_windows']} windows")

    index = dict(torch=torch.__version__, transformers=__import__("transformers").__version__,
                 base=dict(model=BASE, tokens="tokens.npy", cases=base))
    if os.path.exists(os.path.join(BPE, "vocab.json")):
        tok = GPT2TokenizerFast(vocab_file=os.path.join(BPE, "vocab.json"), merges_file=os.path.join(BPE, "merges.txt"))
        text = open(TEXT, encoding="utf-8").read()
        ids = tok(text, return_tensors="pt").input_ids
        np.save(os.path.join(OUT, "text_tokens.npy"), ids[0].numpy().astype(np.int64))
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([args.gptmeg, "init", "--config", TEXT_INIT["config"], "--seed", str(TEXT_INIT["seed"]),
                            "--out", d], check=True, stdout=subprocess.DEVNULL)
            tm = load(d)
        with torch.no_grad():
            for p in tm.parameters():  # tied lm_head is wte: scaled once
                p.mul_(TEXT_INIT["scale"])
        text_cases = [perplexity(tm, ids, c, s) for c, s in TEXT_CASES]
        for r in text_cases:
            print(f"text ctx {r['ctx']:3d} stride {r['stride']:3d}: ppl {r['ppl']:.6f} over {r['n_tokens']} tokens")
        index["text"] = dict(file=TEXT, tokens="text_tokens.npy", n_tokens=int(ids.size(1)), init=TEXT_INIT,
                             cases=text_cases)
    elif "text" in old:
        print(f"{BPE} is absent: keeping the text golden as it is", file=sys.stderr)
        index["text"] = old["text"]
    with open(index_path, "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
