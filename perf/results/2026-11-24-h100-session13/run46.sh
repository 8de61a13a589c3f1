#!/usr/bin/env bash
# session 13, run 46: CPU A/B on the 16 host cores: committed (s0) vs deferred stack-walk visits (s32), OpenMP
set -u
for f in .dev/s0/omp-bench.xz .dev/s32/omp-bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz" | head -5
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
for r in 1 2 3; do for b in s0 s32; do echo "== CPU round $r $b"; .dev/$b/omp-bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
