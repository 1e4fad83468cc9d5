#!/usr/bin/env bash
# CLI tests for gptmeg report: files written atomically, JSON content sane, page self-contained,
# failures leave nothing behind. Uses a small f32 sample (f16/bf16 are always exhaustive).
# Usage: bash tests/cli_report.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
no_temps() { ls -d "$T"/*.tmp.* "$T"/*.old.* >/dev/null 2>&1 && bad "temporaries left: $(ls "$T")" || ok "no temporaries left"; }

expect 0 "report --help" "$G" report --help
expect 2 "report bad option" "$G" report --frob
expect 2 "report bad --n" "$G" report --n 0
expect 2 "report bad --train-steps" "$G" report --train-steps -1
if expect 0 "report small" "$G" report --n 3000 --out "$T/rep" --threads 2 --train-steps 4; then
  [ -s "$T/rep/index.html" ] && [ -s "$T/rep/report.json" ] && ok "index.html and report.json written" || bad "report files missing"
  grep -q "report: $T/rep/index.html" "$T/out" && ok "prints the path" || bad "path not printed: $(tail -3 "$T/out")"
  grep -q "Can gelu_new be replaced by gelu_pytorch_tanh" "$T/out" && ok "prints the verdict summary" || bad "no summary"
  H="$T/rep/index.html"
  grep -q 'id="verdict"' "$H" && ok "page has the verdict section" || bad "no verdict section"
  v=$(grep -o 'id="verdict"' -b "$H" | head -1 | cut -d: -f1); m=$(grep -o 'id="matrix"' -b "$H" | head -1 | cut -d: -f1)
  [ -n "$v" ] && [ -n "$m" ] && [ "$v" -lt "$m" ] && ok "verdict comes before the matrix" || bad "section order"
  [ "$(grep -c '<svg' "$H")" -ge 33 ] && ok "inline SVG plots and matrices" || bad "svg count $(grep -c '<svg' "$H")"
  grep -Eq '(src|href)="https?:|@import|<script' "$H" && bad "page loads external resources or scripts" || ok "page is self-contained"
  tail -c 20 "$H" | grep -q '</html>' && ok "page complete" || bad "page truncated"
  grep -q '<h2 id="extra[0-9]">Does a change of GELU change training?</h2>' "$H" && grep -q 'run-to-run noise of a batch-order change' "$H" &&
    ok "page has the training section" || bad "no training section"
  grep -q 'docs/numerics.md' "$H" && ok "page points to docs/numerics.md" || bad "no docs/numerics.md link"
  grep -q 'no torch installation with MKL VML was found\|through MKL VML loaded from torch' "$H" && ok "page says whether torch-cpu f32 ops are bit exact" || bad "no MKL statement"
  grep -q 'but not bitwise: [0-9.]*% of outputs differ, by up to [0-9]* ULP, at most [0-9.e+-]* apart' "$H" && ok "f32 verdict gives the absolute gap" || bad "f32 verdict lacks the absolute gap"
  if python3 -c 'import json' 2>/dev/null; then
    python3 - "$T/rep/report.json" <<'PY' && ok "report.json content sane" || bad "report.json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert set(j['dtypes']) == {'f32', 'f16', 'bf16'}
assert j['dtypes']['f16']['n'] == 63488 and j['dtypes']['bf16']['n'] == 65280
assert 3000 <= j['dtypes']['f32']['n'] <= 3000 + 200
assert len(j['verdict']) == 9
for v in j['verdict']:
    assert v['a'].startswith('gelu_new:') and v['b'].startswith('gelu_pytorch_tanh:')
    if 'stats' in v:
        s = v['stats']
        assert 0 <= s['equal_fraction'] <= s['allclose_fraction'] <= 1
        assert sum(s['ulp_histogram'].values()) == s['n']
for d in j['dtypes'].values():
    n_ok = 50 - len(d['unavailable'])
    assert len(d['pairs']) == n_ok * (n_ok - 1) // 2, (len(d['pairs']), n_ok)
    for name, s in d['vs_exact'].items():
        if name.endswith(':exact'):
            assert s['equal_fraction'] == 1 and s['max_ulp'] == 0, name
for t in j['tensor_equal']:
    assert 'error' in t or 0 <= t['tensor_equal_fraction'] <= 1
tc = j['sections']['Does a change of GELU change training?']
r = tc['result']
assert 'gelu_pytorch_tanh' in tc['statement'] and r['a'] == 'hf' and r['b'].startswith('hf+act=gelu_pytorch_tanh')
assert len(r['per_step']) == 4 and len(r['noise']['per_step']) == 4
assert r['first_weights_differ'] == 1 and r['final_weight_drift'] > 0
assert 0 < r['drift_vs_noise'] < 1, r['drift_vs_noise']
PY
  else grep -q '"verdict"' "$T/rep/report.json" && grep -q '"pairs"' "$T/rep/report.json" && ok "report.json keys (grep)" || bad "report.json keys"; fi
  no_temps
  # a second run replaces the old report in place
  expect 0 "report over an existing report (--json)" "$G" report --n 1000 --out "$T/rep" --json --train-steps 0
  if python3 -c 'import json' 2>/dev/null; then
    python3 -c "import json,sys; j=json.load(open('$T/out')); sys.exit(0 if len(j['verdict']) == 9 and j['report'].endswith('/index.html') else 1)" \
      && ok "report --json prints the verdict" || bad "report --json: $(head -c 300 "$T/out")"
  else grep -q '"verdict"' "$T/out" && ok "report --json (grep)" || bad "report --json"; fi
  grep -q '"n_f32":	1000' "$T/rep/report.json" && ok "old report replaced" || bad "old report not replaced"
  grep -q 'change training' "$T/rep/report.json" && bad "--train-steps 0 still wrote the training section" || ok "--train-steps 0 leaves the training section out"
  no_temps
fi
mkdir -p "$T/notreport"; echo keep >"$T/notreport/mine.txt"
expect 1 "report refuses a directory that is not a report" "$G" report --n 500 --out "$T/notreport"
[ "$(cat "$T/notreport/mine.txt")" = keep ] && [ "$(ls "$T/notreport")" = mine.txt ] && ok "foreign directory untouched" || bad "foreign directory changed"
expect 1 "report into a missing parent" "$G" report --n 500 --out "$T/no/such/dir"
[ ! -e "$T/no" ] && ok "nothing created for a missing parent" || bad "left $T/no"
no_temps
finish cli_report
