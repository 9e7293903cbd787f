# Written by scripts/bench_growth.py from docs/perf/growth.csv; run from the repository root.
set terminal pngcairo size 1650,500 font ",11"
set output "docs/img/perf-growth.png"
set datafile separator ","
set logscale xy
set grid
set key top left Left reverse samplen 2
set ylabel "seconds per simulated step (5 runs each)"
set yrange [0.005:2]
set multiplot layout 1,3 title "dtsim cost growth, GPT-3 175B (tp 8, pp 16, 1F1B, folded), shared 2-core Xeon"
set xlabel "devices (dp 1 to 32; 96 microbatches per pipeline)"
set xrange [64:8192]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "devices" ? $4 : 1/0) with linespoints pt 7 title "user CPU: slope 0.95 (largest three: 1.70)",      "" using ($2):(strcol(1) eq "devices" ? $3 : 1/0) with linespoints pt 6 dt 2 title "wall (best run)"
set xlabel "layers (1,024 GPUs, 192 microbatches)"
set xrange [10:300]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "layers" ? $4 : 1/0) with linespoints pt 7 title "user CPU: slope 0.21 (largest three: 0.53)",      "" using ($2):(strcol(1) eq "layers" ? $3 : 1/0) with linespoints pt 6 dt 2 title "wall (best run)"
set xlabel "microbatches per pipeline (1,024 GPUs)"
set xrange [10:2000]
plot "docs/perf/growth.csv" using ($2):(strcol(1) eq "microbatches" ? $4 : 1/0) with linespoints pt 7 title "user CPU: slope 0.34 (largest three: 0.65)",      "" using ($2):(strcol(1) eq "microbatches" ? $3 : 1/0) with linespoints pt 6 dt 2 title "wall (best run)"
unset multiplot
