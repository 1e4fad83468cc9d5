#!/usr/bin/env python3
"""Certified error bounds of the accurate GELU kernels: one data file, its docs tables.

tests/budgets/gelu_certified.json holds one certificate per variant x mode x dtype x direction,
each the output of `gptmeg act certify VARIANT:MODE --dtype DT [--grad] --json` (every input
against the correctly rounded result; the backward with dy = 1). tests/test_gelu_accurate.c
reads its budgets from that file, and docs/numerics.md section 6 shows it: the tables between
the `gelu-certified` marker comments are rendered from the file by this script, never by hand.

  tools/certify_budgets.py              f16/bf16 rows re-run (exhaustive, a few seconds in all);
                                        f32 rows kept, their worst input re-checked on this build;
                                        the JSON and the docs tables rewritten
  tools/certify_budgets.py --full-f32   the f32 rows re-run too, over all 2^32 inputs (about 2
                                        minutes per variant per direction on two threads; 40-60
                                        minutes in all; checkpointed under build/certify/)
  tools/certify_budgets.py --docs-only  no runs: the docs tables rewritten from the JSON
  tools/certify_budgets.py --check      no runs, no writes: exit 1 if the docs tables are not
                                        what the JSON renders (tests/cli_budgets.sh)
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JSON_PATH = os.path.join(ROOT, "tests", "budgets", "gelu_certified.json")
DOCS_PATH = os.path.join(ROOT, "docs", "numerics.md")

# gm_gelu_variant order (gptmeg act list); the family decides the f32 table's grouping.
VARIANTS = ["gelu", "gelu_python", "gelu_new", "gelu_accurate", "gelu_fast", "gelu_pytorch_tanh",
            "gelu_megatron", "openai_gelu", "quick_gelu", "gelu_10"]
FAMILY = {"gelu": "erf", "gelu_python": "erf", "gelu_10": "erf", "quick_gelu": "sigmoid"}
MODES = ["accurate"]  # the modes with a certified bound; the others are measured (section 7)
DTYPES = ["f16", "bf16", "f32"]
DIRECTIONS = ["fwd", "bwd"]
KEYS = ["variant", "mode", "dtype", "direction", "max_ulp", "n", "ulp_histogram", "worst_input",
        "worst_got", "worst_exact", "implementation", "source"]

ABOUT = ("Certified error bounds (ULPs of the dtype against the correctly rounded result) of GELU "
         "kernels, one per variant x mode x dtype x direction; the backward with dy = 1. Written by "
         "tools/certify_budgets.py from `gptmeg act certify ... --json`; read by "
         "tests/test_gelu_accurate.c as its budgets; rendered into docs/numerics.md section 6.")
RANDOM_DY_ABOUT = ("Allowance over a backward certificate when dy is not 1 (tests with random dy): "
                   "the product dy*f'(x) adds a rounding the dy = 1 certificate does not see. "
                   "Measured, not certified: f32 erf family 2 ULP at random dy against 1 at dy = 1 "
                   "(docs/numerics.md 6.2 sample, section 7); f16/bf16 0 on every pattern.")


def key(c):
    return (c["variant"], c["mode"], c["dtype"], c["direction"])


def certify(gptmeg, variant, mode, dtype, direction, threads, rng=None, checkpoint=None):
    cmd = [gptmeg, "act", "certify", f"{variant}:{mode}", "--dtype", dtype, "--threads", str(threads), "--json"]
    if direction == "bwd":
        cmd.append("--grad")
    if rng is not None:
        cmd += ["--range", rng]
    if checkpoint:
        cmd += ["--checkpoint", checkpoint]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out), cmd


def shown(cmd):
    """The command as the docs and the JSON record it (binary as `gptmeg`, no checkpoint)."""
    parts = ["gptmeg"] + cmd[1:]
    if "--checkpoint" in parts:
        i = parts.index("--checkpoint")
        del parts[i:i + 2]
    return " ".join(parts)


def exact_value(dtype, v):
    """v as the dtype value it stands for: cJSON prints some doubles to 15 digits, a hair off the
    f32/f16/bf16 value, and the JSON should hold the value itself (the test's witness input)."""
    if isinstance(v, str):
        return v
    return struct.unpack("<e" if dtype == "f16" else "<f", struct.pack("<e" if dtype == "f16" else "<f", v))[0]


def row_from(j, variant, mode, cmd, source):
    dt = j["dtype"]
    row = {"variant": variant, "mode": mode, "dtype": dt, "direction": j["direction"],
           "max_ulp": j["max_ulp"], "n": j["n"], "ulp_histogram": j["ulp_histogram"],
           "worst_input": exact_value(dt, j["worst_input"]), "worst_got": exact_value(dt, j["worst_got"]),
           "worst_exact": exact_value(dt, j["worst_exact"]),
           "implementation": j["implementation"], "source": source or shown(cmd)}
    return row


def load(path):
    with open(path) as f:
        return json.load(f)


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def fnum(v):
    return v if isinstance(v, str) else "%.8g" % v


def commas(n):
    return f"{int(n):,}"


def render_16(certs):
    by = {key(c): c for c in certs}
    lines = ["| variant | f16 fwd | f16 bwd | bf16 fwd | bf16 bwd |", "|---|---|---|---|---|"]
    for v in VARIANTS:
        cells = []
        for dt in ("f16", "bf16"):
            for d in DIRECTIONS:
                c = by.get((v, "accurate", dt, d))
                cells.append("?" if c is None else str(c["max_ulp"]))
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return lines


def render_f32(certs):
    by = {key(c): c for c in certs}
    order = [v for fam in ("tanh", "sigmoid", "erf") for v in VARIANTS if FAMILY.get(v, "tanh") == fam]
    lines = ["| variant | direction | inputs | max ULP | inputs at 0 ULP | at 1 ULP | at 2 ULP | worst input | time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in DIRECTIONS:
        for v in order:
            c = by.get((v, "accurate", "f32", d))
            if c is None:
                lines.append(f"| {v} ({FAMILY.get(v, 'tanh')} family) | {d} | ? | ? | | | | | |")
                continue
            h = c["ulp_histogram"]
            t = f"{c['seconds']:.0f} s on {c['threads']} threads" if "seconds" in c else ""
            lines.append(f"| {v} ({FAMILY.get(v, 'tanh')} family) | {'fwd' if d == 'fwd' else 'bwd (dy = 1)'} | "
                         f"{commas(c['n'])} | **{c['max_ulp']}** | {commas(h['0'])} | {commas(h['1'])} | {commas(h['2'])} | "
                         f"x = {fnum(c['worst_input'])} (got {fnum(c['worst_got'])}, exact {fnum(c['worst_exact'])}) | {t} |")
    return lines


TABLES = {"gelu-certified-16": render_16, "gelu-certified-f32": render_f32}


def render_docs(text, certs):
    """text with each marked table replaced by its rendering; raises if a marker is missing."""
    for name, fn in TABLES.items():
        begin, end = f"<!-- {name}: begin (tools/certify_budgets.py writes this table from tests/budgets/gelu_certified.json) -->", f"<!-- {name}: end -->"
        i, k = text.find(begin), text.find(end)
        if i < 0 or k < i:
            raise SystemExit(f"certify_budgets: {DOCS_PATH} lacks the markers of {name}")
        text = text[:i + len(begin)] + "\n" + "\n".join(fn(certs)) + "\n" + text[k:]
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gptmeg", default=os.path.join(ROOT, "build", "gptmeg"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--full-f32", action="store_true", help="re-run the f32 rows over all 2^32 inputs")
    ap.add_argument("--docs-only", action="store_true", help="no runs: rewrite the docs tables from the JSON")
    ap.add_argument("--check", action="store_true", help="no runs, no writes: exit 1 if the docs disagree with the JSON")
    ap.add_argument("--json", default=JSON_PATH)
    ap.add_argument("--docs", default=DOCS_PATH)
    a = ap.parse_args()

    doc = load(a.json) if os.path.exists(a.json) else {}
    old = {key(c): c for c in doc.get("certificates", [])}
    with open(a.docs) as f:
        text = f.read()

    if a.check:
        want = render_docs(text, doc.get("certificates", []))
        missing = [k for k in ((v, m, dt, d) for v in VARIANTS for m in MODES for dt in DTYPES for d in DIRECTIONS) if k not in old]
        if missing:
            print(f"certify_budgets: {len(missing)} certificates missing from {a.json}, first {missing[0]}")
            return 1
        if want != text:
            print(f"certify_budgets: the tables in {a.docs} differ from {a.json}; run tools/certify_budgets.py --docs-only")
            return 1
        print(f"certify_budgets: {a.docs} agrees with {a.json} ({len(old)} certificates)")
        return 0

    certs = []
    if not a.docs_only:
        for v in VARIANTS:
            for m in MODES:
                for dt in DTYPES:
                    for d in DIRECTIONS:
                        k = (v, m, dt, d)
                        if dt != "f32":
                            j, cmd = certify(a.gptmeg, v, m, dt, d, a.threads)
                            certs.append(row_from(j, v, m, cmd, None))
                        elif a.full_f32:
                            os.makedirs(os.path.join(ROOT, "build", "certify"), exist_ok=True)
                            ck = os.path.join(ROOT, "build", "certify", f"{v}_{m}_{dt}_{d}.ckpt")
                            t0 = time.time()
                            j, cmd = certify(a.gptmeg, v, m, dt, d, a.threads, checkpoint=ck)
                            row = row_from(j, v, m, cmd, shown(cmd) + " (all 2^32 inputs, " + time.strftime("%Y-%m-%d") + ")")
                            row["seconds"], row["threads"] = round(j.get("seconds", time.time() - t0)), a.threads
                            certs.append(row)
                        else:
                            if k not in old:
                                raise SystemExit(f"certify_budgets: no f32 certificate for {k} in {a.json}; run with --full-f32")
                            c = dict(old[k])
                            for f in ("worst_input", "worst_got", "worst_exact"):
                                c[f] = exact_value(dt, c[f])
                            # The recorded worst input must still give the recorded error on this build.
                            w = c["worst_input"]
                            j, _ = certify(a.gptmeg, v, m, dt, d, 1, rng=f"{w!r}:{w!r}")
                            if j["max_ulp"] != c["max_ulp"]:
                                print(f"certify_budgets: WARNING {k}: this build gives {j['max_ulp']} ULP at the recorded worst "
                                      f"input x = {w!r}, the certificate {c['max_ulp']}: re-run with --full-f32", file=sys.stderr)
                            certs.append(c)
        doc = {"about": ABOUT, "random_dy_about": RANDOM_DY_ABOUT,
               "random_dy_slack_ulp": doc.get("random_dy_slack_ulp", {"f16": 0, "bf16": 0, "f32": 1}),
               "certificates": [{k2: c[k2] for k2 in KEYS + ["seconds", "threads"] if k2 in c} for c in certs]}
        write_json(a.json, doc)
        print(f"certify_budgets: wrote {len(certs)} certificates to {a.json}")
    else:
        certs = doc["certificates"]
    new = render_docs(text, certs)
    if new != text:
        with open(a.docs, "w") as f:
            f.write(new)
        print(f"certify_budgets: rewrote the tables in {a.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
