# gnuplot script written by perf/report.py; run in this folder: gnuplot time_hu2015_knn_k4.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "time_hu2015_knn_k4.png"
set title "kdforge hu2015: knn k=4, median time" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "time [ms]"
set key below noenhanced
set format x '10^{%L}'
plot "hu2015_knn_k4_s0.dat" using 1:2 with linespoints lc 1 dt 1 pt 7 lw 2 title "kdforge partition (Cuda)", \
     "hu2015_knn_k4_s1.dat" using 1:2 with linespoints lc 1 dt 4 pt 5 lw 2 title "kdforge partition (OpenMP)", \
     "hu2015_knn_k4_s2.dat" using 1:2 with linespoints lc 2 dt 1 pt 7 lw 2 title "kdforge split_sort (Cuda)", \
     "hu2015_knn_k4_s3.dat" using 1:2 with linespoints lc 2 dt 4 pt 5 lw 2 title "kdforge split_sort (OpenMP)", \
     "hu2015_knn_k4_s4.dat" using 1:2 with linespoints lc 3 dt 1 pt 7 lw 2 title "kdforge tags (Cuda)", \
     "hu2015_knn_k4_s5.dat" using 1:2 with linespoints lc 3 dt 4 pt 5 lw 2 title "kdforge tags (OpenMP)", \
     "hu2015_knn_k4_s6.dat" using 1:2 with linespoints lc rgb 'black' dt 3 pt 9 lw 2 title "nanoflann (CPU)", \
     "hu2015_knn_k4_paper0.dat" using 1:2 with linespoints lc 6 dt 2 lw 1 pt 4 title "from the paper: Hu 2015 GPU kNN k=4, NVIDIA GeForce GTX 660", \
     "hu2015_knn_k4_paper1.dat" using 1:2 with linespoints lc 7 dt 2 lw 1 pt 4 title "from the paper: Hu 2015 serial CPU kNN k=4, Intel Core i7-960, one thread"
