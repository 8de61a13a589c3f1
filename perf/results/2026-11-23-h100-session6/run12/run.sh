#!/usr/bin/env bash
# session 6, run 12: trail v2 (branches end in continue; side bits for the fixed-bound shortcut) vs v1, GPU tests of v2
set -u
for f in .dev/s6b/kdforge-bench-cuda.xz .dev/s6c/kdforge_tests.xz .dev/s6c/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
V1=.dev/s6b/kdforge-bench-cuda; V2=.dev/s6c/kdforge-bench-cuda
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
echo "== GPU tests"; (timeout 240 .dev/s6c/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
for r in 1 2; do for v in V1 V2; do
  echo "== $v round $r"
  timeout 60 ${!v} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all\|build" | cut -c1-100
done; done > $OUT/ab.txt; cat $OUT/ab.txt
echo "== V2 stack_free"; timeout 60 $V2 --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --traversal stack_free --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all\|build" | cut -c1-100
for op in knn closest; do
  echo "== ncu V2 $op"
  timeout 90 ncu --kernel-name-base demangled --kernel-name regex:"KnnSorted" --launch-skip 1 --launch-count 1 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,launch__registers_per_thread $V2 --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops $op --verify 16 --quiet > $OUT/ncu_$op.txt 2>&1
  grep -E "gpu__time|inst_executed|registers" $OUT/ncu_$op.txt
done
echo "== V2 10M"; timeout 90 $V2 --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-100
echo "== memcheck V2"
timeout 120 compute-sanitizer --tool memcheck --print-limit 5 $V2 --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
