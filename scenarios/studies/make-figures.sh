#!/bin/sh
# Regenerates the figures of docs/studies.md: run from the repository root after `bash scripts/build.sh`.
# Results go to build/studies/ (CSV, JSONL, reports), figures to docs/img/.
set -eu
out=build/studies
mkdir -p "$out"

# 1. Megatron-LM weak scaling against the published points (dtsim_validation exits 1 when its bounds are not met).
build/dtsim_validation tests/validation/megatron_2021_weak_scaling.csv --csv "$out/megatron-2021.csv" || true
build/dtsim plot "$out/megatron-2021.csv" --kind scaling --y hardware_tflops_per_device --group series \
    --title "Megatron-LM weak scaling (Narayanan et al. 2021, Table 1): 1.7B on 32 to 1T on 3,072 A100" \
    --out docs/img/megatron-2021-weak-scaling

# 2. GPT-3 175B strong scaling on A100, 64 to 3,072 GPUs.
build/dtsim sweep scenarios/studies/gpt3-175b-a100.yaml --vary devices=64,128,256,512,1024,1536,2048,3072 \
    --out "$out/gpt3-strong" --quiet
build/dtsim plot "$out/gpt3-strong.csv" --out docs/img/gpt3-175b-strong-scaling-a100 \
    --title "GPT-3 175B strong scaling on A100 (global batch 1,536; tp 8, pp 8)"

# 2b. The same plan in weak scaling: 96 sequences per replica of 64 GPUs.
build/dtsim sweep scenarios/studies/gpt3-175b-a100.yaml \
    --vary "devices=64,128,256,512,1024,1536,2048,3072;training.global_batch=96,192,384,768,1536,2304,3072,4608" \
    --out "$out/gpt3-weak" --quiet
build/dtsim plot "$out/gpt3-weak.csv" --out docs/img/gpt3-175b-weak-scaling-a100 \
    --title "GPT-3 175B weak scaling on A100 (96 sequences per 64 GPUs; tp 8, pp 8)"

# 3. NIC bandwidth what-if, 100 to 800 Gb/s per NIC, on 512 and 3,072 GPUs.
build/dtsim sweep scenarios/studies/gpt3-175b-a100.yaml --vary devices=512,3072 \
    --vary "hardware.network.nic.bandwidth=100..800x2 Gb/s" --out "$out/gpt3-nic" --quiet
build/dtsim plot "$out/gpt3-nic.csv" --kind whatif --x hardware.network.nic.bandwidth --group devices \
    --title "GPT-3 175B on A100 (tp 8, pp 8): NIC bandwidth what-if" --out docs/img/gpt3-175b-nic-whatif

# 4. GPU clusters against Cerebras CS-2 systems on four models (scenarios/compare/, docs/comparison.md).
build/dtsim sweep scenarios/compare/gpt3-xl-a100.yaml scenarios/compare/gpt3-xl-h100.yaml \
    scenarios/compare/gpt3-xl-cs2.yaml scenarios/compare/gpt-j-6b-a100.yaml scenarios/compare/gpt-j-6b-h100.yaml \
    scenarios/compare/gpt-j-6b-cs2.yaml scenarios/compare/gpt-neox-20b-a100.yaml \
    scenarios/compare/gpt-neox-20b-h100.yaml scenarios/compare/gpt-neox-20b-cs2.yaml \
    scenarios/compare/gpt3-175b-a100.yaml scenarios/compare/gpt3-175b-h100.yaml scenarios/compare/gpt3-175b-cs2.yaml \
    --out "$out/gpu-vs-wafer" --quiet
build/dtsim plot "$out/gpu-vs-wafer.csv" --kind bars \
    --title "Four models on A100 and H100 clusters and on CS-2 systems of comparable power" \
    --out docs/img/studies-gpu-vs-wafer

# 4b. The same comparison as scaling curves: GPT-3 175B on 128 to 1,024 A100 and on 4 to 32 CS-2, by power.
build/dtsim sweep scenarios/compare/gpt3-175b-a100.yaml --vary devices=128,256,512,1024 \
    --out "$out/gpt3-a100-power" --quiet
build/dtsim sweep scenarios/compare/gpt3-175b-cs2.yaml --vary "devices=4,8,16,32;parallel.dp=4,8,16,32" \
    --out "$out/gpt3-cs2-power" --quiet
build/dtsim plot "$out/gpt3-a100-power.csv" "$out/gpt3-cs2-power.csv" --kind scaling --x power_w --y tokens_per_s \
    --group hardware --title "GPT-3 175B on A100 clusters and on CS-2 systems, by power (global batch 1,536)" \
    --out docs/img/studies-gpu-vs-wafer-scaling

# 5. Mixtral 8x7B on 64 H100: expert parallelism 1 to 8 against load imbalance (docs/parallelism.md).
build/dtsim sweep scenarios/examples/mixtral-8x7b-h100x64.yaml --vary parallel.ep=1,2,4,8 \
    --vary training.expert_imbalance=1,1.5 --out "$out/mixtral-ep" --quiet
build/dtsim plot "$out/mixtral-ep.csv" --kind whatif --x parallel.ep --group training.expert_imbalance \
    --title "Mixtral 8x7B on 64 H100 (tp 8, ZeRO-1): expert parallelism and load imbalance" \
    --out docs/img/mixtral-8x7b-ep-whatif

# A report of the strong-scaling study, as an example of dtsim report.
build/dtsim report "$out/gpt3-strong.csv" --scenario scenarios/studies/gpt3-175b-a100.yaml \
    --out "$out/gpt3-strong-report"

# docs/ keeps the PNG files only; the scripts and SVGs are under build/studies/ with the data.
for f in megatron-2021-weak-scaling gpt3-175b-strong-scaling-a100 gpt3-175b-weak-scaling-a100 \
         gpt3-175b-nic-whatif studies-gpu-vs-wafer studies-gpu-vs-wafer-scaling mixtral-8x7b-ep-whatif; do
  mv "docs/img/$f.gp" "docs/img/$f.svg" "$out/"
done
