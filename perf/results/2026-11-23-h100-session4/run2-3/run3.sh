#!/usr/bin/env bash
# session 4, run 3: CPU (16 host cores) variants + GPU test suite + memcheck
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
G=.dev/new/kdforge-bench-cuda; C=.dev/new/kdforge-bench-omp
nproc; lscpu | grep -E "Model name|Thread|Core|Socket|L2|L3"
export OMP_NUM_THREADS=16 OMP_PLACES=threads
C1="--n 1000000 --m 1000000 --reps 5 --builder auto --quiet"
{
echo "=== CPU nanoflann + default"; OMP_PROC_BIND=spread $C $C1 --k 1,8 --ops build,knn,closest,radius --nanoflann 2>&1 | grep -v "^N "
for bind in spread false; do for o in as_given morton; do for b in 0 3; do
  echo "=== CPU bind=$bind order=$o bucket=$b"; OMP_PROC_BIND=$bind $C $C1 --k 1,8 --ops knn,closest,radius --order $o --bucket-levels $b --json $OUT/cpu.jsonl 2>&1 | grep -v "^N " | grep -v build
done; done; done
echo "=== CPU fresh results"; OMP_PROC_BIND=spread $C $C1 --k 8 --ops knn,radius --results fresh 2>&1 | grep -v "^N "
echo "=== CPU partition builder"; OMP_PROC_BIND=spread $C $C1 --builder partition --ops build 2>&1 | grep -v "^N "
} 2>&1 | tee $OUT/cpu.txt
echo "=== memcheck"
compute-sanitizer --tool memcheck --print-limit 5 $G --n 20000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition,tags --quiet 2>&1 | tail -6
compute-sanitizer --tool memcheck --print-limit 5 $G --n 20000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --split widest --dim 4 --quiet 2>&1 | tail -3
echo "=== GPU tests"; (timeout 400 .dev/new/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
