#!/bin/sh
# Every name libgptmeg.a exports starts with gm_ (a ctest; internal helpers are static).
# Usage: tools/check_symbols.sh build/libgptmeg.a
lib=${1:?usage: tools/check_symbols.sh LIBGPTMEG_A}
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^gm_/ { print $3 }' | sort -u)
if [ -n "$bad" ]; then
  echo "$lib exports names without the gm_ prefix:" $bad
  exit 1
fi
echo "$lib: $(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l) exported names, all gm_"
