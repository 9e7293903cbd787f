# dtsim plot: scaling chart of build/studies/llama3-70b-h100-power.csv
# Written by `dtsim plot`; to draw it again, run `gnuplot llama3-70b-gpu-vs-wafer-scaling.gp` in this directory.
# Makes llama3-70b-gpu-vs-wafer-scaling.svg and llama3-70b-gpu-vs-wafer-scaling.png.

$g0 << EOD
44800 102764.1493 102764.1493 100
89600 204557.8392 205528.2986 99.52782197
179200 405640.3312 411056.5973 98.68235515
358400 797733.033 822113.1946 97.03445198
EOD
$g1 << EOD
48000 182690.8541 182690.8541 100
96000 364360.1826 365381.7081 99.72042237
192000 720533.4413 730763.4163 98.60009755
384000 1409400.983 1461526.833 96.43346615
EOD
$g2 << EOD
57600 184546.9326 184546.9326 100
115200 367498.359 369093.8652 99.56772344
230400 728455.2469 738187.7305 98.68157067
460800 1382284.673 1476375.461 93.62690655
EOD
$g3 << EOD
45000 20667.80738 20667.80738 100
90000 41320.29396 41335.61476 99.96293559
180000 82579.3728 82671.22953 99.88888912
360000 164914.4284 165342.4591 99.7411248
EOD

do for [out_i = 1:2] {
if (out_i == 1) {
  set terminal svg size 1000,780 dynamic noenhanced font 'Sans,11' fontscale 1.3 linewidth 1.2 background rgb 'white'
  set output "llama3-70b-gpu-vs-wafer-scaling.svg"
} else {
  set terminal pngcairo size 1000,780 noenhanced font 'Sans,11' linewidth 1.2 background rgb 'white'
  set output "llama3-70b-gpu-vs-wafer-scaling.png"
}
reset
set datafile missing 'NaN'
set border 3 lw 1 lc rgb '#555555'
set tics nomirror out scale 0.6 textcolor rgb '#333333'
set grid back lt 1 lw 1 lc rgb '#E6E6E6', lt 1 lw 0.6 lc rgb '#F2F2F2'
set key noautotitle textcolor rgb '#222222' samplen 2.5 spacing 1.15
set title font ',15' textcolor rgb '#111111'
set style line 1 lc rgb '#4E79A7' lw 2.2 pt 7 ps 1.0
set style line 2 lc rgb '#E15759' lw 2.2 pt 7 ps 1.0
set style line 3 lc rgb '#59A14F' lw 2.2 pt 7 ps 1.0
set style line 4 lc rgb '#F28E2B' lw 2.2 pt 7 ps 1.0
set style line 5 lc rgb '#B07AA1' lw 2.2 pt 7 ps 1.0
set style line 6 lc rgb '#76B7B2' lw 2.2 pt 7 ps 1.0
set style line 7 lc rgb '#EDC948' lw 2.2 pt 7 ps 1.0
set style line 8 lc rgb '#9C755F' lw 2.2 pt 7 ps 1.0
set style line 9 lc rgb '#FF9DA7' lw 2.2 pt 7 ps 1.0
set style line 10 lc rgb '#BAB0AC' lw 2.2 pt 7 ps 1.0
set multiplot
set lmargin at screen 0.11
set rmargin at screen 0.95
set logscale x 2
set xrange [34461.53846:599040]
set label 99 "Llama 3 70B on H100, B200, GB200 NVL72 and CS-3, by power (global batch 1,152 x 8,192)" at screen 0.5, screen 0.965 center font ',15' textcolor rgb '#111111'
set tmargin at screen 0.7902564103
set bmargin at screen 0.42
set ylabel "throughput (tokens/s)"
set logscale y 10
set yrange [13778.53825:2214563.191]
set ytics ("20k" 20000, "" 30000 1, "" 40000 1, "50k" 50000, "" 60000 1, "" 70000 1, "" 80000 1, "" 90000 1, "100k" 100000, "200k" 200000, "" 300000 1, "" 400000 1, "500k" 500000, "" 600000 1, "" 700000 1, "" 800000 1, "" 900000 1, "1M" 1000000, "2M" 2000000)
set grid ytics mytics
set format y '%g'
set key at screen 0.11, screen 0.935 top left vertical Left reverse box lc rgb '#CCCCCC' width 1
set xtics ("" 44800, "" 45000, "" 48000, "" 57600, "" 89600, "" 90000, "" 96000, "" 115200, "" 179200, "" 180000, "" 192000, "" 230400, "" 358400, "" 360000, "" 384000, "" 460800)
plot $g0 using 1:2 with linespoints ls 1 title "DGX H100, 8 x NDR 400 Gb/s per node, rail-optimized fat tree", \
     $g0 using 1:3 with lines ls 1 dt (10,6) lw 1.5 notitle, \
     $g1 using 1:2 with linespoints ls 2 title "DGX B200, 8 x NDR 400 Gb/s per node, rail-optimized fat tree", \
     $g1 using 1:3 with lines ls 2 dt (10,6) lw 1.5 notitle, \
     $g2 using 1:2 with linespoints ls 3 title "GB200 NVL72, 18 trays of 4 GPUs in one NVLink domain, 4 x NDR 400 Gb/s per tray", \
     $g2 using 1:3 with lines ls 3 dt (10,6) lw 1.5 notitle, \
     $g3 using 1:2 with linespoints ls 4 title "Cerebras CS-3 (WSE-3) with MemoryX and SwarmX", \
     $g3 using 1:3 with lines ls 4 dt (10,6) lw 1.5 notitle, \
     NaN with lines lc rgb '#555555' dt (10,6) lw 1.5 title "ideal linear scaling from the smallest point"
unset label 99
unset logscale y
set ytics autofreq
set grid nomytics
set tmargin at screen 0.36
set bmargin at screen 0.10
set ylabel 'parallel efficiency (%)'
set xlabel "power (kW, log2 scale)"
set yrange [80:110]
set ytics 10
set xtics ("" 44800, "" 45000, "48" 48000, "57.6" 57600, "" 89600, "" 90000, "96" 96000, "115.2" 115200, "" 179200, "" 180000, "192" 192000, "230.4" 230400, "" 358400, "" 360000, "384" 384000, "460.8" 460800)
unset key
plot 100 with lines lc rgb '#777777' dt (10,6) lw 1.5 notitle, \
     $g0 using 1:4 with linespoints ls 1 notitle, \
     $g1 using 1:4 with linespoints ls 2 notitle, \
     $g2 using 1:4 with linespoints ls 3 notitle, \
     $g3 using 1:4 with linespoints ls 4 notitle, \
     $g0 every ::3 using 1:4:(sprintf('%.0f%%', $4)) with labels left offset 1.2,0 font ',10' textcolor ls 1 notitle, \
     $g1 every ::3 using 1:4:(sprintf('%.0f%%', $4)) with labels left offset 1.2,0 font ',10' textcolor ls 2 notitle, \
     $g2 every ::3 using 1:4:(sprintf('%.0f%%', $4)) with labels left offset 1.2,0 font ',10' textcolor ls 3 notitle, \
     $g3 every ::3 using 1:4:(sprintf('%.0f%%', $4)) with labels left offset 1.2,0 font ',10' textcolor ls 4 notitle
unset multiplot
set output
}
