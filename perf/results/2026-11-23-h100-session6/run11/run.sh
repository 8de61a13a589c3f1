#!/usr/bin/env bash
# session 6, run 11: merged trail walk (pops as iterations; fixed-bound radius shortcut) as the GPU default
set -u
D=.dev/s6b
for f in $D/kdforge_tests.xz $D/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
G=$D/kdforge-bench-cuda
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz|L3"
echo "== GPU tests"; (timeout 240 $D/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
for r in 1 2; do
for tr in auto stack_free; do
  echo "== $tr b2 round $r"
  timeout 60 $G --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --traversal $tr --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-110
done; done > $OUT/ab.txt; cat $OUT/ab.txt
for b in 1 3; do
  echo "== auto b$b"
  timeout 60 $G --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8 --ops knn,closest,radius_count,radius --bucket-levels $b --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all\|build" | cut -c1-110
done > $OUT/buckets.txt; cat $OUT/buckets.txt
for rb in 8 16; do
  echo "== auto radius buffer $rb"
  timeout 60 $G --n 1000000 --m 1000000 --reps 10 --builder partition --ops radius --radius-buffer $rb --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all\|build" | cut -c1-110
done > $OUT/rbuf.txt; cat $OUT/rbuf.txt
echo "== 10M"; timeout 90 $G --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-110 | tee $OUT/ten.txt
for op in "knn" "closest" "radius_count"; do
  echo "== ncu $op"
  timeout 90 ncu --kernel-name-base demangled --kernel-name regex:"KnnSorted|RadiusCount" --launch-skip 1 --launch-count 1 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,launch__registers_per_thread $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops $op --verify 16 --quiet > $OUT/ncu_$op.txt 2>&1
  grep -E "gpu__time|inst_executed|registers" $OUT/ncu_$op.txt
done
echo "== ncu: every kernel of one closest call (clocks not locked)"
timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base $G --n 1000000 --m 1000000 --reps 1 --warmup 0 --builder partition --ops closest --verify 16 --quiet > $OUT/ncu_all.csv 2>/dev/null
python3 - $OUT/ncu_all.csv <<'PY'
import csv,sys
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10]
h=rows[0]; ki=h.index("Kernel Name"); vi=h.index("Metric Value")
for r in rows[1:][-12:]: print(f"{float(r[vi])/1000:9.1f} us  {r[ki][:100]}")
PY
echo "== memcheck"
timeout 120 compute-sanitizer --tool memcheck --print-limit 5 $G --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
timeout 90 compute-sanitizer --tool memcheck --print-limit 5 $G --n 300000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --split widest --dim 4 --quiet 2>&1 | tail -2
