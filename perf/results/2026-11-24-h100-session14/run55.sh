#!/usr/bin/env bash
# session 14, run 55: where the CPU kNN k = 8 call goes on the 16 host cores (committed code, OpenMP): trace, order, bucket levels, walks, threads
set -u
f=.dev/cpu0/bench.xz; python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1
B=.dev/cpu0/bench
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3" | head -8
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
A="--n 1000000 --m 1000000 --builder auto --quiet"
for r in 1 2; do echo "== default round $r"; $B $A --reps 5 --k 1,8,16 --ops build,knn,closest,radius 2>&1 | grep -E "^1000000 |FAIL|rror"; done
echo "== trace k=8"; $B $A --reps 1 --k 8 --ops knn --trace 2>&1 | tail -30
for o in as_given morton; do echo "== order $o"; $B $A --reps 5 --k 8 --ops knn --order $o 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for bl in 2 3 4; do echo "== bucket levels $bl"; $B $A --reps 5 --k 8 --ops knn --bucket-levels $bl 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for t in trail stack_free; do echo "== traversal $t"; $B $A --reps 5 --k 8 --ops knn --traversal $t 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for p in close; do echo "== bind $p"; OMP_PROC_BIND=$p $B $A --reps 5 --k 8 --ops knn 2>&1 | grep -E "^1000000 |FAIL|rror"; done
echo "== unbound"; env -u OMP_PROC_BIND -u OMP_PLACES $B $A --reps 5 --k 8 --ops knn 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== 1 thread (m = 100000)"; OMP_NUM_THREADS=1 $B --n 1000000 --m 100000 --builder auto --quiet --reps 3 --k 8 --ops knn 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== nanoflann"; $B $A --reps 3 --k 8 --ops knn --nanoflann 2>&1 | grep -E "^1000000 |FAIL|rror"
