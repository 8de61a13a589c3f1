#!/usr/bin/env bash
# session 14, run 56: CPU A/B on the 16 host cores: committed (cpu0) vs cpu1 (kNN kernels on Kokkos' dynamic schedule on CPUs), OpenMP
set -u
for f in .dev/cpu0/bench.xz .dev/cpu1/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
lscpu | grep -E "Model name|^CPU\(s\)" | head -3
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
for r in 1 2 3; do for b in cpu0 cpu1; do echo "== CPU round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done; done
for b in cpu0 cpu1; do echo "== CPU close $b"; OMP_PROC_BIND=close .dev/$b/bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 8 --ops knn --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
