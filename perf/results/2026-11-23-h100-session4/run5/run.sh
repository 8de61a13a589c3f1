#!/usr/bin/env bash
# session 4, run 5: pooled Kokkos allocations, async Morton order, one-node-per-iteration
# traversal, team finisher v2, OpenMP-native CPU primitives
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
G=.dev/new/kdforge-bench-cuda; C=.dev/new/kdforge-bench-omp
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
{
for b in 2 3 4; do
  echo "=== GPU bucket $b"; $G $C1 --k 1,8,16 --ops build,knn,closest,radius_count,radius --bucket-levels $b --json $OUT/gpu.jsonl 2>&1 | grep -v "^N \|^all"
done
echo "=== GPU fresh"; $G $C1 --k 8 --ops build,knn,closest,radius --results fresh 2>&1 | grep -v "^N \|^all"
echo "=== GPU plain cudaMalloc, fresh"; KDFORGE_CUDA_MALLOC=plain $G $C1 --k 8 --ops build,knn,closest,radius --results fresh 2>&1 | grep -v "^N \|^all"
echo "=== GPU widest/tags"; $G $C1 --builder partition,tags --split widest --ops build 2>&1 | grep -v "^N \|^all"
echo "=== GPU 10M"; $G --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^N \|^all"
} > $OUT/gpu.txt 2>&1
$G $C1 --k 8 --ops build,knn,closest,radius --trace 2>&1 | grep "trace:" | grep -v "View::destruction" > $OUT/trace.txt
ncu --kernel-name-base demangled --kernel-name regex:"KnnSorted|FinishSubtree" --launch-skip 0 --launch-count 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 0 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu.txt 2>&1
export OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
{
echo "=== CPU default + nanoflann"; $C --n 1000000 --m 1000000 --reps 5 --builder auto --quiet --k 1,8 --ops build,knn,closest,radius --nanoflann 2>&1 | grep -v "^N \|^all"
for t in stack stack_free; do for o in as_given morton; do for b in 2 3; do
  echo "=== CPU $t $o bucket $b"; $C --n 1000000 --m 1000000 --reps 5 --builder auto --quiet --k 1,8 --ops knn,closest,radius --traversal $t --order $o --bucket-levels $b 2>&1 | grep -v "^N \|^all\|build"
done; done; done
} > $OUT/cpu.txt 2>&1
compute-sanitizer --tool memcheck --print-limit 5 $G --n 20000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition,tags --quiet 2>&1 | tail -2 > $OUT/memcheck.txt
compute-sanitizer --tool memcheck --print-limit 5 $G --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --split widest --dim 4 --quiet 2>&1 | tail -2 >> $OUT/memcheck.txt
(timeout 300 .dev/new/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?" >> $OUT/memcheck.txt)
cat $OUT/gpu.txt; grep -E "trace: (build|knn|closest|radius)|outside|morton|knn::k|radius::|finish|presort" $OUT/trace.txt; cat $OUT/cpu.txt | grep -E "===|knn|closest|radius"; cat $OUT/memcheck.txt; tail -3 $OUT/gpu_tests.txt
grep -E "FinishSubtree|KnnSorted|Duration|Active Threads|Issued Warp" $OUT/ncu.txt | cut -c1-120 | head -20
