"""Writes tests/golden/inputs.json: hashes of the golden input streams as computed in Python,
so the C twin (src/core/inputs.c) is checked against this one."""
import json, os, sys
sys.path.insert(0, os.path.dirname(__file__))
import gm_inputs as gi

out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/inputs.json"
doc = {"generator": "tools/ref/gen_inputs_fixture.py",
       "f32_streams": [{"seed": s, "n": n, "hash": "%016x" % gi.hash64(gi.golden_f32_inputs(s, n))}
                       for s, n in [(1, 10), (1, 100003), (7, 4099), (123456789, 1000)]],
       "all_u16_hash": "%016x" % gi.hash64(gi.all_u16()),
       "abc_hash": "%016x" % gi.hash64(b"abc")}
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
print("wrote", out)
