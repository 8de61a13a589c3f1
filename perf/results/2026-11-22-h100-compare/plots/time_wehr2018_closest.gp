# gnuplot script written by perf/report.py; run in this folder: gnuplot time_wehr2018_closest.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "time_wehr2018_closest.png"
set title "kdforge wehr2018: closest, median time" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "time [ms]"
set key below noenhanced
set format x '10^{%L}'
plot "wehr2018_closest_s0.dat" using 1:2 with linespoints lc 1 dt 1 pt 7 lw 2 title "kdforge partition (Cuda)", \
     "wehr2018_closest_s1.dat" using 1:2 with linespoints lc 1 dt 4 pt 5 lw 2 title "kdforge partition (OpenMP)", \
     "wehr2018_closest_s2.dat" using 1:2 with linespoints lc 2 dt 1 pt 7 lw 2 title "kdforge split_sort (Cuda)", \
     "wehr2018_closest_s3.dat" using 1:2 with linespoints lc 2 dt 4 pt 5 lw 2 title "kdforge split_sort (OpenMP)", \
     "wehr2018_closest_s4.dat" using 1:2 with linespoints lc 3 dt 1 pt 7 lw 2 title "kdforge tags (Cuda)", \
     "wehr2018_closest_s5.dat" using 1:2 with linespoints lc 3 dt 4 pt 5 lw 2 title "kdforge tags (OpenMP)", \
     "wehr2018_closest_s6.dat" using 1:2 with linespoints lc rgb 'black' dt 3 pt 9 lw 2 title "nanoflann (CPU)", \
     "wehr2018_closest_paper0.dat" using 1:2 with linespoints lc 6 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU approx. NN, 100,000 queries (Table III), NVIDIA Titan X, CUDA 8.0"
