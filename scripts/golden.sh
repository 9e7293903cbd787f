#!/usr/bin/env bash
# Writes the golden records (tests/golden/) anew from the current build: every shipped scenario and every bench case.
# Prints which records moved and where; a commit that moves a number says which moved and why (docs/testing.md).
#   bash scripts/golden.sh               # all
#   bash scripts/golden.sh validation/   # only the records whose path contains the string
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
if [ $# -gt 0 ]; then
  build/tests/golden/dtsim_golden write --dtsim build/dtsim --only "$1"
else
  build/tests/golden/dtsim_golden write --dtsim build/dtsim
fi
