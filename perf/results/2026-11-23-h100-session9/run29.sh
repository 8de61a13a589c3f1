#!/usr/bin/env bash
# session 9, run 29: CPU (16 Xeon cores) bucket levels 3 / 4 / 5 with the stack walk, committed code (s19)
set -u
for f in .dev/s19/kdforge-bench-omp.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
export OMP_PLACES=threads OMP_PROC_BIND=spread OMP_NUM_THREADS=16
lscpu | grep -E "Model name|MHz"
for r in 1 2 3; do for bl in 3 4 5; do echo "== bucket levels $bl round $r"; .dev/s19/kdforge-bench-omp --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops knn,closest,radius --bucket-levels $bl --quiet 2>&1 | grep -E "^1000000 .*(knn|closest|radius)|FAIL|rror"; done; done
