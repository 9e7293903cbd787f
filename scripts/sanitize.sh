#!/usr/bin/env bash
# Builds the programs and the tests with AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs
# every test there but the validation sets (tests/validation: each replays dozens of large runs, minutes under the
# sanitizers; the plain build runs them). A sanitizer report ends the program with an error, failing its test.
# See docs/hardening.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# One translation unit per 8 files of a target (CMAKE_UNITY_BUILD): the headers' templates are compiled once per
# batch rather than once per file (docs/hardening.md, "Timings in CI").
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Left out here, run by the plain build: the sweeps that fork simulation processes while their progress thread runs
# (unit tests Sweep.*, cli.sweep_tiny, the MPI test). GCC 12's AddressSanitizer allocator is not fork-safe: a child
# forked while another thread is inside it blocks on its first allocation (seen 2026-11-24 in CI on
# Sweep.QuietWritesNothingAndProgressIsPlainOffATerminal and Sweep.LinkedKeysMoveTogether, both hung for 600 s;
# the plain build's allocator, tcmalloc, takes its locks around fork (pthread_atfork), as glibc's malloc does, so the
# plain build is not affected).
forking_sweeps='^Sweep\.|^cli\.sweep|^cli\.same_results_jobs_and_mpi$'
# Also left out: the golden records of the three mixture-of-experts validation runs (their expert all-to-alls of
# thousands of flows take 5-30 s each in the Release build, minutes unoptimised) and of the 1,013-plan search bench
# case (14 s in the Release build), and the ep 128 Qwen3 bench case on GB200 racks (4.5 s of CPU in the Release
# build); the plain build checks them. And Qwen3-235B on 256 GB200 (52 s here in CI on 2026-11-28): the same
# shape as DeepSeek-V3 on 256 GB200, which runs here (hybridep all-to-alls, interleaved 1F1B, 16-tray segments,
# mxfp8, the same stack), the model run here on 256 B200 and on 512 GB200 (bench case qwen3-235b-512-gb200-ep64).
large_records='^golden\.scenarios\.validation\.(deepseek-v3-2048-h800|bridge-2509-deepseek-v3-1024|bridge-2511-qwen3-235b-256|bridge-2604-qwen3-235b-256-gb200-mxfp8)$|^golden\.bench\.(sweep-1000|search-.*|qwen3-235b-512-gb200-ep128)$'
# Also left out: `dtsim compare` of GPT-3 XL with the partitioning burden (516 plans of 40 A100 simulated in child
# processes, 55 s here in CI on 2026-11-28); cli.compare_burden_two_gpus runs the same code here on 48 plans.
repeated_commands='^cli\.compare_gpt3_xl$'
# Also left out: the property tests that replay hundreds of plans of Mixtral 8x7B, DeepSeek-V3 and the GPT-3 and
# Llama 3 search spaces to check one inequality on each (the step bound never above the replayed step; every ZB-V
# order builds). Under the sanitizers they took 24 to 327 s each, 1,032 s together of the 1,621 s all tests took
# (a CI run of 2026-11-28, 902 tests). The same code paths run here on smaller plans: StepBound's tiny GPT, tiny MoE,
# paired-chunk, tied-embedding and paired interleaved Mixtral tests and ZbVOrders.AnyPassTimesBuildAnOrder; the plain
# build runs the large ones.
# And the folded-against-unfolded check of Qwen3-235B on 512 GB200 (three every-device replays, 18 s in Release).
heavy_properties='^FoldingMatrix\.ExpertGroupsAcrossNvlRacksReplayTheSlowestPipeline$|^StepBound\.NeverAboveTheSimulatedStep(OnDeepSeekV3PlansWithContextParallelism|WithPipelineHandOffsAcrossNodesOnEverySchedule|WithAllToAllsAcrossNodes|WithTheGradientsCollectives)$|^ZbVOrders\.EveryPlanOfThe(Gpt3Full|Llama3)SpaceBuilds$'
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -E "^validation\.|$forking_sweeps|$large_records|$repeated_commands|$heavy_properties"
