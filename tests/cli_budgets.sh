#!/usr/bin/env bash
# The certified budgets (tests/budgets/gelu_certified.json) and their tables in docs/numerics.md
# section 6 agree: tools/certify_budgets.py --check renders the tables from the file and compares;
# a table edited by hand is caught, and --docs-only writes it back. (The budgets themselves are
# held against the kernels by tests/test_gelu_accurate.c.)
# Usage: bash tests/cli_budgets.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
if ! python3 -c 'import json' 2>/dev/null; then echo "SKIP: no python3"; finish cli_budgets; exit; fi
S=tools/certify_budgets.py
# fails_with NAME WANT CMD...: CMD exits 1 and prints WANT (the script's own messages, not gptmeg's)
fails_with() {
  local name=$1 want=$2; shift 2
  "$@" >"$T/out" 2>&1; local rc=$?
  [ $rc -eq 1 ] && grep -q -- "$want" "$T/out" && ok "$name" || bad "$name (exit $rc): $(head -c 300 "$T/out")"
}
expect 0 "docs tables agree with the budgets file" python3 $S --check
cp docs/numerics.md "$T/numerics.md"
# one certified figure changed by hand: gelu's f32 forward row, max ULP **2** -> **1**
sed -i 's/^\(| gelu (erf family) | fwd | [0-9,]* | \)\*\*2\*\*/\1**1**/' "$T/numerics.md"
if cmp -s docs/numerics.md "$T/numerics.md"; then bad "the test's edit did not apply"; fi
fails_with "a table edited by hand is caught" "differ from" python3 $S --check --docs "$T/numerics.md"
expect 0 "--docs-only writes the tables back" python3 $S --docs-only --docs "$T/numerics.md"
cmp -s docs/numerics.md "$T/numerics.md" && ok "rewritten docs identical to the committed ones" || bad "rewritten docs differ"
python3 - "$T/b.json" <<'PY'
import json, sys
d = json.load(open("tests/budgets/gelu_certified.json"))
d["certificates"] = d["certificates"][1:]
json.dump(d, open(sys.argv[1], "w"))
PY
fails_with "a missing certificate is caught" "certificates missing" python3 $S --check --json "$T/b.json"
finish cli_budgets
