# gnuplot script written by perf/report.py; run in this folder: gnuplot time_hu2015_build.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "time_hu2015_build.png"
set title "kdforge hu2015: build, median time" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "time [ms]"
set key below noenhanced
set format x '10^{%L}'
plot "hu2015_build_s0.dat" using 1:2 with linespoints lc 1 dt 1 pt 7 lw 2 title "kdforge partition (Cuda)", \
     "hu2015_build_s1.dat" using 1:2 with linespoints lc 1 dt 4 pt 5 lw 2 title "kdforge partition (OpenMP)", \
     "hu2015_build_s2.dat" using 1:2 with linespoints lc 2 dt 1 pt 7 lw 2 title "kdforge split_sort (Cuda)", \
     "hu2015_build_s3.dat" using 1:2 with linespoints lc 2 dt 4 pt 5 lw 2 title "kdforge split_sort (OpenMP)", \
     "hu2015_build_s4.dat" using 1:2 with linespoints lc 3 dt 1 pt 7 lw 2 title "kdforge tags (Cuda)", \
     "hu2015_build_s5.dat" using 1:2 with linespoints lc 3 dt 4 pt 5 lw 2 title "kdforge tags (OpenMP)", \
     "hu2015_build_s6.dat" using 1:2 with linespoints lc rgb 'black' dt 3 pt 9 lw 2 title "nanoflann (CPU)", \
     "hu2015_build_paper0.dat" using 1:2 with linespoints lc 6 dt 2 lw 1 pt 4 title "from the paper: Hu 2015 GPU build, NVIDIA GeForce GTX 660", \
     "hu2015_build_paper1.dat" using 1:2 with linespoints lc 7 dt 2 lw 1 pt 4 title "from the paper: Hu 2015 serial CPU build, Intel Core i7-960, one thread"
