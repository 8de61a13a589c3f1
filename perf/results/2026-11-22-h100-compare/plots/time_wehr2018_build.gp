# gnuplot script written by perf/report.py; run in this folder: gnuplot time_wehr2018_build.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "time_wehr2018_build.png"
set title "kdforge wehr2018: build, median time" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "time [ms]"
set key below noenhanced
set format x '10^{%L}'
plot "wehr2018_build_s0.dat" using 1:2 with linespoints lc 1 dt 1 pt 7 lw 2 title "kdforge partition (Cuda)", \
     "wehr2018_build_s1.dat" using 1:2 with linespoints lc 1 dt 4 pt 5 lw 2 title "kdforge partition (OpenMP)", \
     "wehr2018_build_s2.dat" using 1:2 with linespoints lc 2 dt 1 pt 7 lw 2 title "kdforge split_sort (Cuda)", \
     "wehr2018_build_s3.dat" using 1:2 with linespoints lc 2 dt 4 pt 5 lw 2 title "kdforge split_sort (OpenMP)", \
     "wehr2018_build_s4.dat" using 1:2 with linespoints lc 3 dt 1 pt 7 lw 2 title "kdforge tags (Cuda)", \
     "wehr2018_build_s5.dat" using 1:2 with linespoints lc 3 dt 4 pt 5 lw 2 title "kdforge tags (OpenMP)", \
     "wehr2018_build_s6.dat" using 1:2 with linespoints lc rgb 'black' dt 3 pt 9 lw 2 title "nanoflann (CPU)", \
     "wehr2018_build_paper0.dat" using 1:2 with linespoints lc 6 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU build (Table I), NVIDIA GeForce GTX 660", \
     "wehr2018_build_paper1.dat" using 1:2 with linespoints lc 7 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU build TPB 32 (Table II), NVIDIA Titan X, CUDA 8.0", \
     "wehr2018_build_paper2.dat" using 1:2 with linespoints lc 8 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU build TPB 64 (Table II), NVIDIA Titan X, CUDA 8.0", \
     "wehr2018_build_paper3.dat" using 1:2 with linespoints lc 9 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU build TPB 128 (Table II), NVIDIA Titan X, CUDA 8.0", \
     "wehr2018_build_paper4.dat" using 1:2 with linespoints lc 10 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 GPU build TPB 256 (Table II), NVIDIA Titan X, CUDA 8.0", \
     "wehr2018_build_paper5.dat" using 1:2 with linespoints lc 11 dt 2 lw 1 pt 4 title "from the paper: Wehr 2018 'Comparison' column R (Table II, TPB 32), NVIDIA Titan X, CUDA 8.0"
