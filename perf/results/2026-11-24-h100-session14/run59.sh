#!/usr/bin/env bash
# session 14, run 59: CPU A/B on the 16 host cores, f5833eb (cpu2) vs cpu3 (tree nodes and result Views marked
# MADV_HUGEPAGE when kdforge allocates them); cpu2 with glibc's malloc hugetlb tunable (every large allocation) for reference
set -u
for f in .dev/cpu2/bench.xz .dev/cpu3/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
A="--n 1000000 --m 1000000 --builder auto --quiet"
for r in 1 2 3; do for b in cpu2 cpu3; do echo "== CPU round $r $b"; .dev/$b/bench $A --reps 5 --k 1,8,16 --ops build,knn,closest,radius_count,radius 2>&1 | grep -E "^1000000 |FAIL|rror"; done
  echo "== CPU round $r cpu2 hugetlb=1"; GLIBC_TUNABLES=glibc.malloc.hugetlb=1 .dev/cpu2/bench $A --reps 5 --k 8 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for b in cpu2 cpu3; do echo "== CPU 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --builder auto --quiet --reps 3 --k 8 --ops build,knn 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== AnonHugePages while cpu3 runs"; (.dev/cpu3/bench $A --reps 20 --k 8 --ops knn > /dev/null 2>&1 &) ; sleep 6; grep AnonHugePages /proc/meminfo; wait
