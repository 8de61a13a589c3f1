# gnuplot script written by perf/report.py; run in this folder: gnuplot time_wald2022_build.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "time_wald2022_build.png"
set title "kdforge wald2022: build, median time" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "time [ms]"
set key below noenhanced
set format x '10^{%L}'
plot "wald2022_build_s0.dat" using 1:2 with linespoints lc 1 dt 1 pt 7 lw 2 title "kdforge partition (Cuda)", \
     "wald2022_build_s1.dat" using 1:2 with linespoints lc 1 dt 4 pt 5 lw 2 title "kdforge partition (OpenMP)", \
     "wald2022_build_s2.dat" using 1:2 with linespoints lc 2 dt 1 pt 7 lw 2 title "kdforge split_sort (Cuda)", \
     "wald2022_build_s3.dat" using 1:2 with linespoints lc 2 dt 4 pt 5 lw 2 title "kdforge split_sort (OpenMP)", \
     "wald2022_build_s4.dat" using 1:2 with linespoints lc 3 dt 1 pt 7 lw 2 title "kdforge tags (Cuda)", \
     "wald2022_build_s5.dat" using 1:2 with linespoints lc 3 dt 4 pt 5 lw 2 title "kdforge tags (OpenMP)", \
     "wald2022_build_s6.dat" using 1:2 with linespoints lc rgb 'black' dt 3 pt 9 lw 2 title "nanoflann (CPU)", \
     "wald2022_build_paper0.dat" using 1:2 with linespoints lc 6 dt 2 lw 1 pt 4 title "from the paper: Wald 2022 build float4, NVIDIA RTX 8000", \
     "wald2022_build_paper1.dat" using 1:2 with linespoints lc 7 dt 2 lw 1 pt 4 title "from the paper: Wald 2022 build float4, NVIDIA A-6000 (as printed)", \
     "wald2022_build_paper2.dat" using 1:2 with linespoints lc 8 dt 2 lw 1 pt 4 title "from the paper: Wald 2022 build float4, NVIDIA RTX 3090 Ti"
