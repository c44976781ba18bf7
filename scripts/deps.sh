#!/usr/bin/env bash
# Installs the Debian 12 packages portc needs to build and test, only those missing.
# Uses sudo only when not running as root. Sourced by main.sh and test.sh.
set -euo pipefail
need=()
for pkg in gcc g++ make cmake libgtest-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
