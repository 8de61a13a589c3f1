#!/usr/bin/env bash
# session 14, run 57: CPU A/B on the 16 host cores, committed (cpu0) vs final (cpu2: every per-query kernel on
# Kokkos' dynamic schedule on CPUs); transparent huge pages; GPU tests and a GPU bench round of the final code
set -u
for f in .dev/cpu0/bench.xz .dev/cpu2/bench.xz .dev/gpu/bench.xz .dev/gpu/tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
lscpu | grep -E "Model name|^CPU\(s\)" | head -3
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1); $(ldd --version 2>&1 | head -1)"
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
A="--n 1000000 --m 1000000 --builder auto --quiet"
for r in 1 2 3; do for b in cpu0 cpu2; do echo "== CPU round $r $b"; .dev/$b/bench $A --reps 5 --k 1,8,16 --ops build,knn,closest,radius_count,radius 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
echo "== CPU cpu2 malloc hugetlb=1"; GLIBC_TUNABLES=glibc.malloc.hugetlb=1 .dev/cpu2/bench $A --reps 5 --k 8 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== CPU cpu2 malloc hugetlb=0"; .dev/cpu2/bench $A --reps 5 --k 8 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== CPU cpu2 10M build"; .dev/cpu2/bench --n 10000000 --m 1000000 --builder auto --quiet --reps 3 --k 8 --ops build,knn 2>&1 | grep -E "^10000000 |FAIL|rror"
unset OMP_NUM_THREADS OMP_PLACES OMP_PROC_BIND
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests"; (timeout 450 .dev/gpu/tests --duration=true > $OUT/gpu_tests_run57.txt 2>&1; echo "rc=$?"); tail -4 $OUT/gpu_tests_run57.txt
echo "== GPU bench final"; .dev/gpu/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
