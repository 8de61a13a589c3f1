#!/usr/bin/env bash
# session 11, run 36: per-kernel GPU times of closest / kNN calls (ncu), SASS of the bench
set -u
f=.dev/s25/new-bench.xz; python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz}
B=.dev/s25/new-bench
which ncu cuobjdump nvdisasm nsys
for ops in closest "knn --k 8"; do
  echo "== ncu $ops"
  KDFORGE_VARIANT=0 timeout 200 ncu --metrics gpu__time_duration.sum --csv --print-units base $B --n 1000000 --m 1000000 --reps 2 --builder partition --ops $ops --quiet > $OUT/ncu_${ops// /_}.csv 2>$OUT/ncu_err.txt; echo rc $?
done
echo "== sass"; cuobjdump -sass $B 2>/dev/null | xz -T4 -3 > $OUT/bench_sass.xz; ls -la $OUT
