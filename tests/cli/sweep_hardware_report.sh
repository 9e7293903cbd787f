#!/bin/sh
# Issue 14: `dtsim sweep --vary hardware=../hardware/X.yaml` takes the paths as values (their ".." is no range), and
# `dtsim report` of the sweep names every hardware in its title and shows hardware names, not file paths, in its
# table.
#   usage: sweep_hardware_report.sh DTSIM WORKDIR   (run from the repository root)
set -u
dtsim=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$dtsim" sweep scenarios/tiny.yaml --vary hardware=../hardware/dgx-a100-80gb.yaml,../hardware/dgx-h100.yaml \
  --out "$work/s" --quiet > "$work/sweep.txt" 2>&1 || { cat "$work/sweep.txt"; fail "sweep exited $?"; }
[ "$(grep -c ',ok,' "$work/s.csv")" -eq 2 ] || fail "expected 2 simulated points in $work/s.csv"
"$dtsim" report "$work/s.csv" --out "$work/report" > "$work/report.txt" 2>&1 || { cat "$work/report.txt"; fail "report exited $?"; }
grep -q '^# dtsim report: tiny-gpt on DGX A100 80GB and DGX H100$' "$work/report/report.md" || fail "title: $(head -1 "$work/report/report.md")"
grep -q '^| DGX H100 | ok |' "$work/report/report.md" || fail "no row named DGX H100 in the table"
grep -q 'dgx-h100.yaml | ok' "$work/report/report.md" && fail "the table shows the hardware file's path"
echo "all as expected"
