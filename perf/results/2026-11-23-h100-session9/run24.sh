#!/usr/bin/env bash
# session 9, run 24: kNN pops from stored plane distances (s15) vs pops as loop iterations (s12, session 8);
# bucket levels with s15; 10M; GPU tests of s15; memcheck
set -u
for f in .dev/s12/kdforge-bench-cuda.xz .dev/s15/kdforge-bench-cuda.xz .dev/s15/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
C="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
for r in 1 2; do for v in s12 s15; do echo "== $v round $r"; .dev/$v/kdforge-bench-cuda $C --k 1,8,16 --ops knn,closest,radius_count,radius 2>&1 | grep -E "^1000000 .*(knn|closest|radius)|FAIL|rror"; done; done
for bl in 1 3; do echo "== s15 bucket levels $bl"; .dev/s15/kdforge-bench-cuda $C --k 1,8 --ops knn,closest --bucket-levels $bl 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"; done
echo "== s15 10M"; .dev/s15/kdforge-bench-cuda --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"
echo "== s15 widest D=3"; .dev/s15/kdforge-bench-cuda $C --k 8 --ops knn,closest --split widest 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"
echo "== GPU tests s15"; (timeout 420 .dev/s15/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck s15"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 .dev/s15/kdforge-bench-cuda --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s15/kdforge-bench-cuda --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --dim 4 --split widest --ops knn,closest --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s15/kdforge-bench-cuda --n 5 --m 300 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest --quiet 2>&1 | tail -2
