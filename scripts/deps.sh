#!/usr/bin/env bash
# Checks the Debian packages gptmeg builds against; installs the missing ones with apt-get when
# run as root, otherwise prints the exact line to run and fails.
set -eu
pkgs="build-essential cmake pkg-config libsleef-dev libmpfr-dev libgmp-dev libopenblas-dev libpcre2-dev libcjson-dev"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "gptmeg: installing missing Debian packages:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends $missing >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends $missing >&2; }
else
  echo "gptmeg: missing Debian packages. Run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
