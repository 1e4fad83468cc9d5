#!/usr/bin/env bash
# Checks that gptmeg can be built here: a C compiler and cmake on PATH, and each library it links
# (SLEEF, MPFR + GMP, cJSON, PCRE2, OpenBLAS's CBLAS, zlib, OpenMP) usable, by compiling and linking a
# tiny program against it with the compiler CMake will use ($CC, else cc). The package manager is
# not asked, so libraries built from source or installed without dpkg count, and a non-root user
# with everything present passes. One combined probe when all is well (a fraction of a second);
# only when it fails is each library probed alone, to name what is missing.
# Missing pieces map to Debian packages: as root with apt-get they are installed; otherwise the
# exact `sudo apt-get install` line is printed (or, without apt-get, the missing libraries are
# named) and the script exits 1.
# Testing: GPTMEG_DEPS_BREAK="sleef cjson" makes those probes include a header that does not
# exist, to show the missing-library path on a complete machine (it never installs anything).
set -eu

cc_bin=${CC:-cc}
missing_pkgs=""   # Debian packages to install
missing_what=""   # what is missing, in words
need() { # need PACKAGE WHAT
  case " $missing_pkgs " in *" $1 "*) ;; *) missing_pkgs="$missing_pkgs $1" ;; esac
  missing_what="$missing_what, $2"
}

# ---- tools -------------------------------------------------------------------------------------
have_cc=1
command -v "$cc_bin" >/dev/null 2>&1 || { have_cc=0; need build-essential "a C compiler ($cc_bin)"; }
command -v cmake >/dev/null 2>&1 || need cmake "cmake"

# ---- libraries: name | Debian package | header | library flags | a call that must link ----------
probes='sleef|libsleef-dev|sleef.h|-lsleef -lm|Sleef_expf_u10(1.0f);
mpfr|libmpfr-dev|mpfr.h|-lmpfr -lgmp|mpfr_t m; mpfr_init2(m, 64); mpfr_clear(m);
gmp|libgmp-dev|gmp.h|-lgmp|mpz_t z; mpz_init(z); mpz_clear(z);
cjson|libcjson-dev|cjson/cJSON.h|-lcjson|cJSON_Delete(cJSON_Parse("1"));
pcre2|libpcre2-dev|pcre2.h|-lpcre2-8|int e; PCRE2_SIZE o; pcre2_compile((PCRE2_SPTR)"a", 1, 0, &e, &o, NULL);
openblas|libopenblas-dev|cblas.h|-lopenblas|float a = 1, b = 1, c = 0; cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
zlib|zlib1g-dev|zlib.h|-lz|(void)crc32(0L, NULL, 0);
openmp|build-essential|omp.h|-fopenmp|(void)omp_get_max_threads();'

if [ "$have_cc" = 1 ]; then
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gptmeg-deps.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # Debian keeps OpenBLAS's cblas.h in a per-variant directory (CMakeLists.txt searches it too).
  arch=$("$cc_bin" -print-multiarch 2>/dev/null || true)
  incs=""
  for d in "/usr/include/$arch/openblas-pthread" "/usr/include/$arch/openblas-openmp" \
           "/usr/include/$arch/openblas-serial" /usr/include/openblas; do
    [ -d "$d" ] && incs="$incs -I$d"
  done
  # probe NAMES...: compiles and links one program that uses every named library; 0 if it links.
  probe() {
    local src="$tmp/p.c" flags="" name pkg hdr libs call
    printf '#define PCRE2_CODE_UNIT_WIDTH 8\n#include <stddef.h>\n' >"$src"
    for want in "$@"; do
      while IFS='|' read -r name pkg hdr libs call; do
        [ "$name" = "$want" ] || continue
        case " ${GPTMEG_DEPS_BREAK:-} " in *" $name "*) hdr="gptmeg-deps-no-such-header.h" ;; esac
        printf '#include <%s>\n' "$hdr" >>"$src"
        flags="$flags $libs"
      done <<<"$probes"
    done
    printf 'int main(int argc, char **argv) {\n  (void)argv;\n  if (argc > 99) {\n' >>"$src"
    for want in "$@"; do
      while IFS='|' read -r name pkg hdr libs call; do
        [ "$name" = "$want" ] && printf '    { %s }\n' "$call" >>"$src"
      done <<<"$probes"
    done
    printf '  }\n  return 0;\n}\n' >>"$src"
    # shellcheck disable=SC2086  # flags are word lists on purpose
    "$cc_bin" $incs -o "$tmp/p" "$src" $flags >"$tmp/log" 2>&1
  }
  all=$(while IFS='|' read -r name _; do printf '%s ' "$name"; done <<<"$probes")
  # shellcheck disable=SC2086
  if ! probe $all; then
    while IFS='|' read -r name pkg hdr libs _; do
      if [ "$name" = openmp ] && "$cc_bin" --version 2>/dev/null | grep -qi clang; then
        pkg=libomp-dev # gcc ships its OpenMP runtime; clang needs LLVM's
      fi
      probe "$name" || need "$pkg" "$name ($hdr, $libs)"
    done <<<"$probes"
    if [ -z "$missing_pkgs" ]; then # each links alone but not together: show why, do not guess
      echo "gptmeg: the libraries link one by one but not together; the compiler said:" >&2
      sed 's/^/  /' "$tmp/log" >&2
      exit 1
    fi
  fi
else # without a compiler nothing can be probed: ask for every library package (no-ops if present)
  missing_what="$missing_what; without a C compiler the libraries were not checked"
  for pkg in $(while IFS='|' read -r _ p _; do printf '%s ' "$p"; done <<<"$probes"); do
    case " $missing_pkgs " in *" $pkg "*) ;; *) missing_pkgs="$missing_pkgs $pkg" ;; esac
  done
fi

[ -z "$missing_pkgs" ] && exit 0

missing_what=${missing_what#, }
if [ -n "${GPTMEG_DEPS_INSTALLED:-}" ]; then
  echo "gptmeg: still missing after apt-get installed$missing_pkgs: $missing_what" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ -z "${GPTMEG_DEPS_BREAK:-}" ]; then
  echo "gptmeg: missing $missing_what; installing Debian packages:$missing_pkgs" >&2
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  apt-get install -y --no-install-recommends $missing_pkgs >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends $missing_pkgs >&2; }
  GPTMEG_DEPS_INSTALLED=1 exec "$BASH" "$0" # probe again: the packages must supply what was missing
elif command -v apt-get >/dev/null 2>&1; then
  echo "gptmeg: missing $missing_what. Run:" >&2
  echo "  sudo apt-get install -y$missing_pkgs" >&2
  exit 1
else
  echo "gptmeg: missing $missing_what (on Debian:$missing_pkgs); install them and run make again" >&2
  exit 1
fi
