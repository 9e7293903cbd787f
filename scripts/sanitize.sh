#!/usr/bin/env bash
# Builds the programs and the tests with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs
# every test there but the validation sets (tests/validation: each replays dozens of large runs, minutes under the
# sanitizers; the plain build runs them). A sanitizer report ends the program with an error, failing its test.
# See docs/hardening.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mpi_test='^cli\.same_results_jobs_and_mpi$'
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -E "^validation\.|$mpi_test"
# Open MPI keeps its own and its plugins' allocations to the end of the program, which LeakSanitizer reports as
# leaks in libmpi: the test under mpirun runs without the leak check (every other check stays).
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 ctest --test-dir build-asan --output-on-failure -R "$mpi_test"
