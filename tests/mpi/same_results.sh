#!/bin/sh
# The files of a sweep and the JSON of a search are byte-identical with 1 process, 2 processes and 2 MPI ranks.
# Usage: same_results.sh DTSIM MPIEXEC OUTDIR (run from the source tree).
set -eu
dtsim=$1 mpiexec=$2 out=$3
# Root in CI containers; one machine with few cores; no shared-memory single copy (ptrace is often not allowed).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="$mpiexec --oversubscribe -np 2"
rm -rf "$out" && mkdir -p "$out"

# tp 3 does not divide the 8 devices: failing rows must be identical too.
sweep="sweep tests/unit/data/sweep/tiny-8.yaml --vary parallel.tp=1,2,3 --vary training.micro_batch=1,2,4 --quiet"
$dtsim $sweep --jobs 1 --out "$out/j1"
$dtsim $sweep --jobs 2 --out "$out/j2"
$mpi $dtsim $sweep --jobs 1 --out "$out/mpi"
# 9 points, each a record starting with its number (a failing point's reason is one quoted field over several lines,
# one per error: tp 3 gives dp's and the heads', hidden_size's and intermediate_size's).
test "$(grep -cE '^[0-9]+,' "$out/j1.csv")" -eq 9
for f in j2 mpi; do
  cmp "$out/j1.csv" "$out/$f.csv"
  cmp "$out/j1.jsonl" "$out/$f.jsonl"
done

search="search scenarios/tiny.yaml --format json --quiet"
$dtsim $search --jobs 1 > "$out/search-j1.json"
$dtsim $search --jobs 2 > "$out/search-j2.json"
$mpi $dtsim $search --jobs 1 > "$out/search-mpi.json"
grep -Eq '"scenario_plan_rank(_range)?"' "$out/search-j1.json"
cmp "$out/search-j1.json" "$out/search-j2.json"
cmp "$out/search-j1.json" "$out/search-mpi.json"
echo "same results with 1, 2 processes and 2 MPI ranks"
