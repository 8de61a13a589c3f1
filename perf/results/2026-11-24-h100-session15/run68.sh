#!/usr/bin/env bash
# session 15, run 68: the CPU rows with the final code (OpenMP build, the lent host's 16 cores)
set -u
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/cpu/bench.xz && chmod +x .dev/cpu/bench || exit 1
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
nproc; grep -m1 "model name" /proc/cpuinfo
for r in 1 2 3; do echo "== CPU round $r"; .dev/cpu/bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done | tee $OUT/cpu_1M.txt
echo "== nanoflann, same invocation"; .dev/cpu/bench --n 1000000 --m 1000000 --reps 3 --builder auto --k 8 --ops build,knn --nanoflann --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | tee $OUT/cpu_nanoflann.txt
