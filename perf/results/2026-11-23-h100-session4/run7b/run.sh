#!/usr/bin/env bash
# session 4, run 7b: fused sides A/B (builder), final default numbers GPU + CPU
set -u
for f in .dev/nofuse/kdforge-bench-cuda.xz .dev/new/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
F=.dev/new/kdforge-bench-cuda; U=.dev/nofuse/kdforge-bench-cuda; C=.dev/new/kdforge-bench-omp
{
for r in 1 2; do
  echo "=== fused $r"; $F --n 1000000,10000000 --m 1000 --reps 10 --builder partition --ops build --quiet 2>&1 | grep build
  echo "=== unfused $r"; $U --n 1000000,10000000 --m 1000 --reps 10 --builder partition --ops build --quiet 2>&1 | grep build
done
echo "=== widest fused / unfused"; $F --n 1000000 --m 1000 --reps 10 --builder partition --split widest --ops build --quiet 2>&1 | grep build; $U --n 1000000 --m 1000 --reps 10 --builder partition --split widest --ops build --quiet 2>&1 | grep build
} > $OUT/build_ab.txt 2>&1
{
echo "=== final GPU 1M"; $F --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --json $OUT/final.jsonl --quiet 2>&1 | grep -v "^all"
echo "=== final GPU 10M"; $F --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --json $OUT/final.jsonl --quiet 2>&1 | grep -v "^N \|^all\|^kdforge 0"
echo "=== final GPU 1M fresh results"; $F --n 1000000 --m 1000000 --reps 10 --builder partition --k 8 --ops knn,closest,radius --results fresh --quiet 2>&1 | grep -v "^N \|^all\|^kdforge 0\|build"
export OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
echo "=== final CPU 1M"; $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8 --ops build,knn,closest,radius --nanoflann --json $OUT/final.jsonl --quiet 2>&1 | grep -v "^all"
} > $OUT/final.txt 2>&1
cat $OUT/build_ab.txt $OUT/final.txt
echo "=== racecheck (builder teams in shared memory)"
compute-sanitizer --tool racecheck --print-limit 3 $F --n 200000 --m 1000 --k 8 --reps 1 --warmup 0 --verify 50 --builder partition --ops build --quiet > $OUT/racecheck.txt 2>&1; grep -E "RACECHECK|Warning|Error|hazard" $OUT/racecheck.txt | sort | uniq -c | head -12
grep -B2 -A12 "Warning" $OUT/racecheck.txt | head -40
echo "=== GPU tests"; (timeout 300 .dev/new/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
compute-sanitizer --tool memcheck --print-limit 5 $F --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition,tags --quiet 2>&1 | tail -2
