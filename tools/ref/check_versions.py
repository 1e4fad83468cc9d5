"""Refuses to regenerate goldens with peers other than the pinned ones (tools/ref/requirements.txt)."""
import importlib, os, sys

here = os.path.dirname(os.path.abspath(__file__))
bad = []
for line in open(os.path.join(here, "requirements.txt")):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        mod = importlib.import_module(name)
    except ImportError:
        bad.append(f"{name} is not installed (want {want}): pip install -r tools/ref/requirements.txt")
        continue
    got = getattr(mod, "__version__", "?").split("+")[0]
    if got != want:
        bad.append(f"{name} {got} is installed, the goldens are pinned to {want}")
if bad:
    print("\n".join("tools/ref: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
print("tools/ref: peers match the pins")
