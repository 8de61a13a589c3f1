#!/usr/bin/env bash
# session 11, run 37: counting-sort processing order + alternating regroup counters (s26) vs committed code (s25, variant 0)
set -u
for f in .dev/s25/new-bench.xz .dev/s26/new-bench.xz .dev/s26/kdforge_tests.xz .dev/s26/old-cpu-bench.xz .dev/s26/new-cpu-bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
OLD=.dev/s25/new-bench; NEW=.dev/s26/new-bench
for r in 1 2; do
  for b in OLD NEW; do
    echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
  done
done
for b in OLD NEW; do echo "== 10M $b"; ${!b} --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== ncu NEW closest"; timeout 200 ncu --metrics gpu__time_duration.sum --csv --print-units base $NEW --n 1000000 --m 1000000 --reps 2 --builder partition --ops closest --quiet > $OUT/ncu_new_closest.csv 2>/dev/null; echo rc $?
echo "== GPU tests"; (timeout 420 .dev/s26/kdforge_tests --duration=true > $OUT/gpu_tests_run37.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run37.txt
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
for r in 1 2; do for b in old new; do echo "== CPU round $r $b"; .dev/s26/$b-cpu-bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
