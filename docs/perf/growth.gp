# Written by scripts/bench_growth.py from docs/perf/growth.csv; run from the repository root.
set terminal pngcairo size 1650,500 font ",11"
set output "docs/img/perf-growth.png"
set datafile separator ","
set logscale xy
set grid
set key top left Left reverse samplen 2
set ylabel "instructions of simulate() per step (millions)"
set yrange [1:10000]
set multiplot layout 1,3 title "dtsim cost growth, GPT-3 175B (tp 8, pp 16, 1F1B, folded), callgrind"
set xlabel "devices (dp 1 to 32; 96 microbatches per pipeline)"
set xrange [64:8192]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "devices" ? $7 : 1/0) with linespoints pt 7 title "slope 0.04 (largest three: 0.01)"
set xlabel "layers (1,024 GPUs, 192 microbatches)"
set xrange [10:300]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "layers" ? $7 : 1/0) with linespoints pt 7 title "slope 0.44 (largest three: 0.64)"
set xlabel "microbatches per pipeline (1,024 GPUs)"
set xrange [10:2000]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "microbatches" ? $7 : 1/0) with linespoints pt 7 title "slope 0.69 (largest three: 0.91)"
unset multiplot
