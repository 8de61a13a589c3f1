#!/usr/bin/env bash
# session 7, run 15: trail walk with cell distances (s8) vs plane tests (s7); ncu; GPU tests and memcheck of s8
set -u
for f in .dev/s7/kdforge-bench-cuda.xz .dev/s8/kdforge-bench-cuda.xz .dev/s8/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
S7=.dev/s7/kdforge-bench-cuda; S8=.dev/s8/kdforge-bench-cuda
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for r in 1 2; do for v in S7 S8; do
  echo "== $v round $r"
  timeout 60 ${!v} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
done; done 2>&1 | tee $OUT/ab.txt
echo "== S8 10M"; timeout 90 $S8 --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
for v in S7 S8; do
  echo "== ncu knn k=8 $v"
  timeout 90 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,launch__registers_per_thread ${!v} --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_$v.txt 2>&1
  grep -E "gpu__time|inst_executed|registers" $OUT/ncu_$v.txt
done
echo "== GPU tests S8"; (timeout 420 .dev/s8/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck S8"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 $S8 --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 $S8 --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,radius --traversal stack --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 $S8 --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --dim 4 --split widest --ops knn,radius --quiet 2>&1 | tail -2
