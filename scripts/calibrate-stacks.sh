#!/usr/bin/env bash
# Re-fits the efficiency factors of every shipped software stack on its named calibration runs
# (hardware/stacks/calibration/STACK.csv) and records the errors of its check runs (STACK-check.csv), which give
# its interval. Run after any change to the modelled physics; docs/validation.md shows the results.
#   usage: bash scripts/calibrate-stacks.sh [STACK ...]   (default: every stack with a calibration file)
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim=${DTSIM:-build/dtsim}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
stacks=("$@")
if [ ${#stacks[@]} -eq 0 ]; then
  for f in hardware/stacks/calibration/*.csv; do
    case $f in *-check.csv) ;; *) stacks+=("$(basename "$f" .csv)") ;; esac
  done
fi
for s in "${stacks[@]}"; do
  fit=compute
  # A stack may name the factors it fits in its calibration file: '# fit: compute,communication'.
  if grep -q '^# fit:' "hardware/stacks/calibration/$s.csv"; then
    fit=$(sed -n 's/^# fit: *//p' "hardware/stacks/calibration/$s.csv")
  fi
  check=()
  [ -f "hardware/stacks/calibration/$s-check.csv" ] && check=(--check "hardware/stacks/calibration/$s-check.csv")
  echo "== $s (fit: $fit)"
  "$dtsim" calibrate "hardware/stacks/calibration/$s.csv" --stack "hardware/stacks/$s.yaml" \
    --out "hardware/stacks/$s.yaml" --fit "$fit" --name "$(sed -n 's/^name: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "hardware/stacks/$s.yaml" | sed 's/ (calibrated on .*)$//')" "${check[@]}"
done
