#!/usr/bin/env bash
# session 9, run 26: CPU kNN on the 16-core host: per-thread cost at 1 and 16 threads, and child-node
# prefetch in the stack walk (pf) vs the committed walk (base), same run
set -u
for f in .dev/s17/kdforge-bench-omp-base.xz .dev/s17/kdforge-bench-omp-pf.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3|NUMA node\(s\)"
export OMP_PLACES=threads OMP_PROC_BIND=spread
S=.dev/s17/kdforge-bench-omp
echo "== 1 thread, base, 200K queries"; OMP_NUM_THREADS=1 $S-base --n 1000000 --m 200000 --reps 3 --builder auto --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"
echo "== 4 threads, base, 1M queries"; OMP_NUM_THREADS=4 $S-base --n 1000000 --m 1000000 --reps 3 --builder auto --k 8 --ops knn --quiet 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"
for r in 1 2; do for v in base pf; do echo "== 16 threads $v round $r"; OMP_NUM_THREADS=16 $S-$v --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"; done; done
echo "== 16 threads base with nanoflann"; OMP_NUM_THREADS=16 $S-base --n 1000000 --m 1000000 --reps 5 --builder auto --k 8 --ops build,knn,closest,radius --nanoflann --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
