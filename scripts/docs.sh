#!/usr/bin/env bash
# Writes docs/yaml-reference.md's key tables anew from the keys' declarations (sim/*/*_keys.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
build/dtsim_docs write docs/yaml-reference.md
