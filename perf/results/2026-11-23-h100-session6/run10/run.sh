#!/usr/bin/env bash
# session 6, run 10: trail / trail_flat vs stack-free on the GPU, GPU tests, ncu per walk, CPU rows on the host
set -u
for f in .dev/s6/kdforge_tests.xz .dev/s6/kdforge-bench-cuda.xz .dev/s6/kdforge-bench-omp.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
G=.dev/s6/kdforge-bench-cuda; C=.dev/s6/kdforge-bench-omp
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L3"
for tr in stack_free trail trail_flat; do
  echo "== $tr"
  timeout 60 $G --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --traversal $tr --quiet 2>&1 | tee $OUT/bench_$tr.txt | grep -v "^kdforge 0"
done
echo "== GPU tests"; (timeout 240 .dev/s6/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
for tr in trail trail_flat stack_free; do for b in 1 3; do
  echo "== $tr b$b"
  timeout 60 $G --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8 --ops knn,closest,radius --traversal $tr --bucket-levels $b --quiet 2>&1 | tee $OUT/bench_${tr}_b$b.txt | grep -v "^kdforge 0\|^N "
done; done
for tr in stack_free trail trail_flat; do
  echo "== ncu knn k=8 $tr"
  timeout 90 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,launch__registers_per_thread $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --traversal $tr --quiet > $OUT/ncu_$tr.txt 2>&1
  grep -E "gpu__time|inst_executed|registers" $OUT/ncu_$tr.txt
done
export OMP_PLACES=threads OMP_PROC_BIND=spread
for t in 8 16; do
  echo "== CPU $t threads"; OMP_NUM_THREADS=$t timeout 120 $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8 --ops build,knn,closest,radius --nanoflann --quiet 2>&1 | tee $OUT/cpu_$t.txt | grep -v "^kdforge 0"
done
echo "== CPU 16 threads, trail / stack_free"; OMP_NUM_THREADS=16 timeout 90 $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 8 --ops knn,closest,radius --traversal trail --quiet 2>&1 | grep -v "^kdforge 0\|^N "
OMP_NUM_THREADS=16 timeout 90 $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 8 --ops knn,closest,radius --traversal stack_free --quiet 2>&1 | grep -v "^kdforge 0\|^N "
