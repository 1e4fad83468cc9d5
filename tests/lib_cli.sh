# Shared helpers of the CLI tests, sourced by tests/cli_*.sh (named lib_ so that CMake's cli_*.sh
# glob does not run it as a test; ctest runs `bash tests/cli_X.sh path/to/gptmeg` from the repo
# root). Sets G (the binary, $1) and T (a
# temporary folder removed on exit), counts failures in `fails`, and defines:
#   ok NAME / bad NAME           record a pass / a failure
#   expect CODE NAME CMD...      run CMD; wants exit status CODE, and for CODE 1 exactly one
#                                'gptmeg: ' line on stderr (stdout in $T/out, stderr in $T/err);
#                                returns 1 when the check failed
#   expect_in CODE NAME FILE CMD...  the same with FILE on stdin
#   finish NAME                  prints the summary; exit status 0 only without failures
#   npy_header DESCR SHAPE       prints a v1 .npy header (64-byte aligned) for DESCR ('<f4', '<i8',
#                                ...) and SHAPE (a Python tuple, e.g. '(2, 3)'); the data follows it
set -u
# The CLI tests compare with the zen4 goldens (tests/golden): pin that torch CPU target.
export GPTMEG_TORCH_TARGET=zen4
# No notes on stderr (a CPU without the target's fast instructions would print one): exit-1 checks want one line.
export GPTMEG_QUIET=1
G=${1:?usage: bash tests/cli_X.sh path/to/gptmeg}
T=$(mktemp -d /tmp/gptmeg_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
check_status() { # check_status RC CODE NAME
  local rc=$1 code=$2 name=$3
  if [ "$rc" -ne "$code" ]; then bad "$name (exit $rc, wanted $code): $(head -c 300 "$T/err")"; return 1; fi
  if [ "$code" -eq 1 ] && { [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q '^gptmeg: ' "$T/err"; }; then
    bad "$name: wanted one 'gptmeg: ' line on stderr, got: $(cat "$T/err")"; return 1
  fi
  ok "$name"
}
expect() {
  local code=$1 name=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  check_status $? "$code" "$name"
}
expect_in() {
  local code=$1 name=$2 in=$3; shift 3
  "$@" <"$in" >"$T/out" 2>"$T/err"
  check_status $? "$code" "$name"
}
finish() {
  echo "$1: $fails failed"
  [ "$fails" -eq 0 ]
}
npy_header() {
  local dict="{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
  local pad=$(( (64 - (10 + ${#dict} + 1) % 64) % 64 ))
  local hl=$(( ${#dict} + pad + 1 ))
  printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((hl & 255)))\\x$(printf %02x $((hl >> 8)))"
  printf '%s' "$dict"; printf "%${pad}s" ''; printf '\n'
}
