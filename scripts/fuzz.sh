#!/usr/bin/env bash
# Fuzzes the scenario, model, hardware and stack loaders and calibrate's runs CSV (tests/fuzz/fuzz_inputs.cpp) with
# clang's libFuzzer, seeded with the shipped YAML, JSON and CSV (scenarios/, models/, hardware/) and the error
# fixtures (tests/config_errors/). Builds
# into build-fuzz/; new inputs that reach new code are kept in build-fuzz/corpus/ between runs; a crashing input is
# written to build-fuzz/findings/ and the script fails. See docs/hardening.md.
#   usage: scripts/fuzz.sh [libFuzzer flags]     e.g. -max_total_time=60 (CI) or -runs=1000000
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh clang libclang-rt-14-dev
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DDTSIM_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target dtsim_fuzz_inputs
seeds=build-fuzz/seeds
rm -rf "$seeds" && mkdir -p "$seeds" build-fuzz/corpus build-fuzz/findings
# One seed per shipped file, named after its path (scenarios/wafer/x.yaml -> scenarios_wafer_x.yaml).
find scenarios models hardware tests/config_errors -type f \( -name '*.yaml' -o -name '*.json' -o -name '*.csv' \) | while read -r f; do
  cp "$f" "$seeds/$(echo "$f" | tr / _)"
done
# Inputs of up to 8 KiB: twice the largest shipped file. An input that takes over 10 s is a finding (a hang), not
# a wait of libFuzzer's default 20 minutes.
build-fuzz/tests/fuzz/dtsim_fuzz_inputs build-fuzz/corpus "$seeds" -artifact_prefix=build-fuzz/findings/ \
  -max_len=8192 -timeout=10 -print_final_stats=1 "$@"
