#!/usr/bin/env bash
# session 10, run 31: offsets computed once per node + one-counter bucket cursor (s21 new) vs committed code (s21 base), same run; GPU tests of new
set -u
for f in .dev/s21/base-bench.xz .dev/s21/new-bench.xz .dev/s21/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
C="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
for r in 1 2; do for v in base new; do echo "== $v round $r"; .dev/s21/$v-bench $C --k 1,8,16 --ops knn,closest,radius_count,radius 2>&1 | grep -E "^1000000 .*(knn|closest|radius)|FAIL|rror"; done; done
for v in base new; do echo "== $v 10M"; .dev/s21/$v-bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^10000000 .*(knn|closest|radius)|FAIL|rror"; done
echo "== GPU tests new"; (timeout 450 .dev/s21/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck new"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 .dev/s21/new-bench --n 50000 --m 3000 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s21/new-bench --n 5 --m 300 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,radius_count,radius --quiet 2>&1 | tail -2
