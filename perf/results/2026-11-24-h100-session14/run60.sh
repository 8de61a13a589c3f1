#!/usr/bin/env bash
# session 14, run 60: CPU A/B again, cpu2 (f5833eb) vs cpu3 (huge-page advice), kNN k = 8, 1M and 10M points, alternating rounds
set -u
for f in .dev/cpu2/bench.xz .dev/cpu3/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
for r in 1 2 3 4; do for b in cpu2 cpu3; do echo "== 1M round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --builder auto --quiet --reps 7 --k 8 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done; done
for r in 1 2 3; do for b in cpu2 cpu3; do echo "== 10M round $r $b"; .dev/$b/bench --n 10000000 --m 1000000 --builder auto --quiet --reps 5 --k 8 --ops knn,closest 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done; done
