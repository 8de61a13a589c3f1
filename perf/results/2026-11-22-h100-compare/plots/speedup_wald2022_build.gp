# gnuplot script written by perf/report.py; run in this folder: gnuplot speedup_wald2022_build.gp
set terminal pngcairo size 1000,750 enhanced font 'Sans,10'
set output "speedup_wald2022_build.png"
set title "kdforge wald2022: build, GPU speedup" noenhanced
set logscale xy
set grid xtics ytics mxtics mytics
set xlabel 'N (points)'
set ylabel "speedup [x]"
set key below noenhanced
set format x '10^{%L}'
plot "wald2022_build_speedup_partition.dat" using 1:2 with linespoints lw 2 pt 7 title "partition: GPU vs CPU (same builder)", \
     "wald2022_build_speedup_partition_nanoflann.dat" using 1:2 with linespoints dt 2 lw 2 pt 6 title "partition GPU vs nanoflann CPU", \
     "wald2022_build_speedup_split_sort.dat" using 1:2 with linespoints lw 2 pt 7 title "split_sort: GPU vs CPU (same builder)", \
     "wald2022_build_speedup_split_sort_nanoflann.dat" using 1:2 with linespoints dt 2 lw 2 pt 6 title "split_sort GPU vs nanoflann CPU", \
     "wald2022_build_speedup_tags.dat" using 1:2 with linespoints lw 2 pt 7 title "tags: GPU vs CPU (same builder)", \
     "wald2022_build_speedup_tags_nanoflann.dat" using 1:2 with linespoints dt 2 lw 2 pt 6 title "tags GPU vs nanoflann CPU"
