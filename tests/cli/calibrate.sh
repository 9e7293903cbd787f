#!/bin/sh
# dtsim calibrate, end to end on the tiny scenario:
#  1. one measured run, one factor: the calibrated stack reproduces the measured step time within 0.5%;
#  2. more factors than runs is an input error (exit 2) that says so;
#  3. a factor no run depends on (communication, on one GPU) is an input error that says why.
#   usage: calibrate.sh DTSIM WORKDIR   (run from the repository root)
set -u
dtsim=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
root=$(pwd)
fail() { echo "FAIL: $*"; exit 1; }

cat > "$work/runs.csv" <<CSV
# the tiny scenario, 'measured' 30% slower than dtsim's uncorrected model
scenario,measured_step_time_s,label
$root/scenarios/tiny.yaml,0.0050,tiny
CSV
"$dtsim" calibrate "$work/runs.csv" --out "$work/stack.yaml" > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "calibrate exited $?"; }
grep -q "fitted factors: compute" "$work/out.txt" || fail "no fitted compute factor printed"
step=$("$dtsim" run scenarios/tiny.yaml --set stack="$work/stack.yaml" --format json | sed -n 's/^  "step_time_s": \(.*\),$/\1/p')
awk -v s="$step" 'BEGIN { e = s / 0.0050 - 1; if (e < 0) e = -e; exit !(e < 0.005) }' || fail "calibrated step $step s, measured 0.0050 s"

"$dtsim" calibrate "$work/runs.csv" --out "$work/x.yaml" --fit compute,communication > "$work/two.txt" 2>&1
[ $? -eq 2 ] || fail "two factors on one run: expected exit 2"
grep -q "expected at most as many factors as runs" "$work/two.txt" || fail "two factors on one run: message"

cat > "$work/one-gpu.csv" <<CSV
scenario,measured_step_time_s,set
$root/scenarios/tiny.yaml,0.02,devices=1 parallel.tp=1 parallel.pp=1 training.global_batch=4
CSV
"$dtsim" calibrate "$work/one-gpu.csv" --out "$work/y.yaml" --fit communication > "$work/comm.txt" 2>&1
[ $? -eq 2 ] || { cat "$work/comm.txt"; fail "communication on one GPU: expected exit 2"; }
grep -q "the factor 'communication' cannot be determined by these runs" "$work/comm.txt" || fail "communication: message"
echo "calibrate: round trip, too many factors and an undetermined factor all as expected"
