#!/usr/bin/env bash
# session 4, run 7a: persistent lanes (new) vs one query per lane (prev, run 6 binary); GPU tests
set -u
for f in .dev/prev/kdforge-bench-cuda.xz .dev/new/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
N=.dev/new/kdforge-bench-cuda; P=.dev/prev/kdforge-bench-cuda
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet --ops knn,closest,radius_count,radius --k 1,8,16"
{
for r in 1 2; do
  echo "=== prev (one query per lane) $r"; $P $C1 2>&1 | grep -v "^N \|^all\|^kdforge 0\|build"
  echo "=== new (persistent lanes) $r"; $N $C1 2>&1 | grep -v "^N \|^all\|^kdforge 0\|build"
done
echo "=== new bucket 1"; $N $C1 --bucket-levels 1 2>&1 | grep -v "^N \|^all\|^kdforge 0\|build"
echo "=== new 10M"; $N --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops knn,closest,radius --quiet 2>&1 | grep -v "^N \|^all\|^kdforge 0\|build"
} > $OUT/queries.txt 2>&1
ncu --kernel-name-base demangled --kernel-name regex:PersistentQueries --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum $N --n 1000000 --m 1000000 --reps 1 --warmup 0 --builder partition --ops knn --k 8 --verify 16 --quiet > $OUT/ncu_knn.txt 2>&1
cat $OUT/queries.txt
grep -E "Duration|Registers Per|Active Threads|Issued Warp|Achieved Occ|Block Size|inst_executed" $OUT/ncu_knn.txt | head -12
(timeout 300 .dev/new/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
compute-sanitizer --tool memcheck --print-limit 5 $N --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --quiet 2>&1 | tail -2
compute-sanitizer --tool racecheck --print-limit 5 $N --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 50 --builder partition --ops knn,radius --quiet 2>&1 | tail -2
