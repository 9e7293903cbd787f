#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds dtsim into build/ (Release).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
