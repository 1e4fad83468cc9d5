"""Golden for the '3x3 experiment' (issue 2): over 1000 f32 tensors of length 9, how often
torch.equal(F.gelu(x, approximate='tanh'), gelu_new(x)) holds on PyTorch's CPU, each tensor run on
its own with one thread, as the original report ran it.

Inputs: torch.manual_seed(0); torch.randn(1000, 9) (stored, base64 little-endian f32, so the test
does not depend on torch's generator), and gm_inputs.golden_f32_inputs(3, 9000) (rebuilt by the
test from src/core/inputs.c). Records per input set the fraction of whole tensors that are equal and
the number of equal elements (bitwise), and the CPU it ran on: torch.tanh on f32 goes through MKL
VML, whose code path depends on the CPU, so the fractions are this machine's.

Writes tests/golden/gelu_ops/experiment_3x3.json; tests/cli_act.sh reads it.
Run from the repo root: python3 tools/ref/gen_gelu_3x3_goldens.py
"""
import base64
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers.activations import ACT2FN

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs as gi  # noqa: E402

OUT = os.path.join("tests", "golden", "gelu_ops", "experiment_3x3.json")


def measure(x):
    gelu_new = ACT2FN["gelu_new"]
    tensors = elements = 0
    for j in range(x.shape[0]):
        a, b = F.gelu(x[j], approximate="tanh"), gelu_new(x[j])
        tensors += bool(torch.equal(a, b))
        elements += int(np.sum(a.numpy().view(np.uint32) == b.numpy().view(np.uint32)))
    return {"tensors_equal": tensors, "elements_equal": elements}


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    xn = torch.randn(1000, 9)
    xg = torch.from_numpy(gi.golden_f32_inputs(3, 9000).copy()).view(1000, 9)
    doc = {"generator": "tools/ref/gen_gelu_3x3_goldens.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "cpu": gi.cpu_model(), "tensors": 1000, "length": 9, "threads": 1,
           "a": "F.gelu(x, approximate='tanh')", "b": "transformers ACT2FN['gelu_new']",
           "normal_seed0": measure(xn),
           "normal_seed0_inputs_f32_b64": base64.b64encode(xn.numpy().astype("<f4").tobytes()).decode(),
           "golden_f32_inputs_seed3": measure(xg)}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("%s: normal %s, golden_f32_inputs(3) %s" % (OUT, doc["normal_seed0"], doc["golden_f32_inputs_seed3"]))


if __name__ == "__main__":
    main()
