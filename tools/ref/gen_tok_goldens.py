"""Goldens for the GPT-2 BPE tokenizer (src/tok), from HF transformers' GPT2Tokenizer (slow,
Python) and GPT2TokenizerFast (Rust), built from local files only:

  tests/fixtures/tok/{vocab,merges}  the project's own tiny byte-level BPE (256 byte tokens, merges
                                     trained below on text written for it, '<|endoftext|>' last)
  tests/golden/tok/fixture.json      ids of sample texts under that fixture (slow == fast asserted)
  tests/golden/tok/gpt2.json         ids under ../shared/data/gpt2-bpe: tinyshakespeare (count,
                                     gm_hash64 of the int32 ids, first 200) and stress.txt in full

Usage: python3 tools/ref/gen_tok_goldens.py   (from the repo root)
"""
import json
import os
import sys
import warnings

import numpy as np
import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import hash64  # noqa: E402

warnings.filterwarnings("ignore")
from transformers import GPT2Tokenizer, GPT2TokenizerFast  # noqa: E402
import transformers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "data")
FIX = os.path.join(ROOT, "tests", "fixtures", "tok")
GOLD = os.path.join(ROOT, "tests", "golden", "tok")
PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

TRAIN_TEXT = """\
The gptmeg project is a small C library and command line tool for numerically faithful GELU
activations and GPT-2 inference. Every kernel states its numerics contract: the inputs, the
accumulation type and where the result is rounded. Tests compare the library with the real peers,
PyTorch and transformers, bit for bit, and never with numbers typed by hand. The tokenizer turns
text into tokens and tokens back into text; it doesn't drop a byte, and it won't guess. We'll
measure the speed, we've written the tests, and they're run under sanitizers. Don't panic!
Numbers like 1234, 2024 and 3.14159 are split into digits and groups; spaces    and tabs\tand
newlines\n\nare kept. Ça marche aussi en français, naïve café, déjà vu. 你好世界。 Привет мир.
"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def train_fixture(n_merges=300):
    """Plain byte-level BPE training: most frequent adjacent pair first, ties by the pair's text."""
    b2u = bytes_to_unicode()
    words = {}
    for w in PAT.findall(TRAIN_TEXT * 3):
        key = tuple(b2u[b] for b in w.encode("utf-8"))
        words[key] = words.get(key, 0) + 1
    vocab = {b2u[b]: i for i, b in enumerate(b2u)}  # ids 0..255 in GPT-2's alphabet order
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + c
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        merges.append(best)
        vocab[best[0] + best[1]] = len(vocab)
        new = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        words = new
    vocab["<|endoftext|>"] = len(vocab)
    os.makedirs(FIX, exist_ok=True)
    with open(os.path.join(FIX, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(FIX, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    return len(vocab), len(merges)


def tokenizers(d):
    v, m = os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt")
    return GPT2Tokenizer(vocab_file=v, merges_file=m), GPT2TokenizerFast(vocab_file=v, merges_file=m)


def both(slow, fast, text, what):
    a = slow.encode(text)
    b = fast.encode(text)
    if a != b:
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        print(f"  DISAGREE on {what}: slow and fast differ first at id {i}")
    return a, b


def main():
    nv, nm = train_fixture()
    print(f"fixture: {nv} tokens, {nm} merges -> {FIX}")
    stress = open(os.path.join(GOLD, "stress.txt"), "rb").read().decode("utf-8")
    slow, fast = tokenizers(FIX)
    samples = [TRAIN_TEXT, "the tokenizer", " the the the", "Don't DON'T", "aaaaaaaaaaaaa", "1234567", "<|endoftext|>", stress]
    fx = []
    for s in samples:
        a, b = both(slow, fast, s, "fixture sample")
        assert a == b
        fx.append({"text": s, "ids": a})
    with open(os.path.join(GOLD, "fixture.json"), "w", encoding="utf-8") as f:
        json.dump({"peer": f"transformers {transformers.__version__} GPT2Tokenizer == GPT2TokenizerFast", "samples": fx}, f, ensure_ascii=False)

    d = os.path.join(SHARED, "gpt2-bpe")
    if not os.path.exists(os.path.join(d, "vocab.json")):
        print("no ../shared/data/gpt2-bpe: gpt2.json not regenerated")
        return
    slow, fast = tokenizers(d)
    shakes = open(os.path.join(SHARED, "tinyshakespeare", "input.txt"), "rb").read().decode("utf-8")
    sa, sb = both(slow, fast, shakes, "tinyshakespeare")
    ta, tb = both(slow, fast, stress, "stress.txt")
    ids = np.array(sb, dtype="<i4")
    out = {
        "peer": f"transformers {transformers.__version__}; ids below are GPT2TokenizerFast's",
        "slow_equals_fast": {"tinyshakespeare": sa == sb, "stress": ta == tb},
        "tinyshakespeare": {"bytes": len(shakes.encode("utf-8")), "count": len(sb), "hash64_i32": str(hash64(ids)), "first": sb[:200]},
        "stress": {"ids": tb, "slow_ids": ta if ta != tb else None},
    }
    with open(os.path.join(GOLD, "gpt2.json"), "w") as f:
        json.dump(out, f)
    print(f"gpt2: tinyshakespeare {len(sb)} ids, stress {len(tb)} ids, slow==fast: {sa == sb}, {ta == tb}")


if __name__ == "__main__":
    main()
