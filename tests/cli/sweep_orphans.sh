#!/bin/sh
# A sweep whose own process is killed (SIGTERM or SIGKILL to it alone: `kill PID`, a batch system, the out-of-memory
# killer) takes its running simulations with it: no child goes on simulating a point, writing into PREFIX.points/,
# after the sweep is gone (before, a child of GPT-3 175B in full fidelity kept a core busy for a minute and wrote
# its row into the directory of the sweep that had been resumed meanwhile).
#   usage: sweep_orphans.sh DTSIM OUTDIR
set -eu
dtsim=$1
out=$2
rm -rf "$out"
mkdir -p "$out"

# alive PID: the process exists and is not a zombie waiting for a reaper
alive() {
  state=$(ps -o stat= -p "$1" 2>/dev/null || true)
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

for sig in TERM KILL; do
  "$dtsim" sweep scenarios/default.yaml --vary simulation.fidelity=full --vary training.micro_batch=1,2 \
    --jobs 2 --quiet --out "$out/$sig" &
  pid=$!
  children=""
  tries=0
  while [ -z "$children" ] && [ "$tries" -lt 200 ]; do
    sleep 0.05
    children=$(pgrep -P "$pid" || true)
    tries=$((tries + 1))
  done
  if [ -z "$children" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    echo "sweep_orphans: the sweep started no simulation within 10 s; nothing was tested"
    exit 1
  fi
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null || true
  for child in $children; do
    tries=0
    while alive "$child" && [ "$tries" -lt 100 ]; do
      sleep 0.05
      tries=$((tries + 1))
    done
    if alive "$child"; then
      kill -KILL "$child" 2>/dev/null || true
      echo "sweep_orphans: SIG$sig to the sweep left its simulation $child running"
      exit 1
    fi
  done
  echo "sweep_orphans: SIG$sig to the sweep ended its simulations ($(echo $children | wc -w) of them)"
done
echo "sweep_orphans: no simulation outlives its sweep"
