#!/usr/bin/env bash
# Installs dtsim's build dependencies from Debian's packages, only those that are missing.
# Idempotent and quiet when everything is already there. Needs root (or sudo) when something is missing.
# Arguments name more packages to install the same way (scripts/fuzz.sh: clang and its libFuzzer runtime).
set -euo pipefail
packages=(g++ cmake make pkg-config libsimgrid-dev libboost-graph-dev libyaml-cpp-dev gnuplot-nox
          libgtest-dev libcli11-dev nlohmann-json3-dev openmpi-bin libopenmpi-dev libgoogle-perftools-dev
          procps pybind11-dev python3-dev python3-pytest "$@")  # procps: pkill, for the test that kills a sweep (tests/cli/sweep_kill.sh)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq >/dev/null
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
