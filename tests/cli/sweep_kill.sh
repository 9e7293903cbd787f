#!/bin/sh
# A sweep killed (SIGKILL, with its children) at several moments and resumed each time must end with the same
# files, byte for byte, as the same sweep run without a stop. The kills come later and later, from before the first
# row to the writing of the final files, until a run ends by itself; a row cut short while it was being appended to
# the journal, and a point file cut short before its rename, are also left behind, as a stop inside those writes
# would leave them.
#   usage: sweep_kill.sh DTSIM OUTDIR
set -eu
dtsim=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
# 192 points of the tiny scenario, two at a time (no spaces inside an argument: the list is split on them).
args="sweep scenarios/tiny.yaml --vary parallel.tp=1,2 --vary training.micro_batch=1,2,4,8
      --vary training.seq_len=256,512,1024 --vary training.precision=bf16,fp16 --vary training.global_batch=16,32,48,64
      --jobs 2 --quiet"
# shellcheck disable=SC2086
"$dtsim" $args --out "$out/whole"
total=$(wc -l < "$out/whole.jsonl")

kills=0
delay_ms=30
while [ ! -e "$out/killed.csv" ] && [ "$delay_ms" -le 8000 ]; do
  # shellcheck disable=SC2086
  "$dtsim" $args --out "$out/killed" &
  pid=$!
  sleep "$(awk "BEGIN { print $delay_ms / 1000 }")"
  # Stopped first, so that it forks no child while its children are killed, then killed with them.
  kill -STOP "$pid" 2>/dev/null || true
  pkill -KILL -P "$pid" 2>/dev/null || true
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ ! -e "$out/killed.csv" ]; then
    kills=$((kills + 1))
    journal=$(cat "$out/killed.partial.jsonl" 2>/dev/null | wc -l)
    echo "sweep_kill: killed after $delay_ms ms, $journal of $total rows in the journal"
    # A stop inside a write, the second time: half a row at the end of the journal, a point file half written.
    if [ "$kills" -eq 2 ]; then
      head -c 37 "$out/whole.jsonl" >> "$out/killed.partial.jsonl"
      mkdir -p "$out/killed.points"
      head -c 21 "$out/whole.jsonl" > "$out/killed.points/3.json.tmp"
    fi
  fi
  delay_ms=$((delay_ms * 3 / 2))
done
[ "$kills" -ge 3 ] || { echo "sweep_kill: only $kills runs were stopped mid-way; nothing was tested"; exit 1; }

# shellcheck disable=SC2086
"$dtsim" $args --out "$out/killed"
for f in csv jsonl; do
  if ! cmp "$out/whole.$f" "$out/killed.$f"; then
    echo "sweep_kill: the resumed sweep's .$f differs from the uninterrupted one"
    exit 1
  fi
done
echo "sweep_kill: resumed after $kills kills to the same $total rows, byte for byte"
