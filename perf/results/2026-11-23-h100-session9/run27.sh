#!/usr/bin/env bash
# session 9, run 27: radius visitors' trail loop as one straight sequence (s18) vs committed code (s16), same run;
# GPU tests of s18; memcheck
set -u
for f in .dev/s16/kdforge-bench-cuda.xz .dev/s18/kdforge-bench-cuda.xz .dev/s18/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
C="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
for r in 1 2 3; do for v in s16 s18; do echo "== $v round $r"; .dev/$v/kdforge-bench-cuda $C --k 8 --ops knn,radius_count,radius 2>&1 | grep -E "^1000000 .*(knn|closest|radius)|FAIL|rror"; done; done
for v in s16 s18; do echo "== $v 10M"; .dev/$v/kdforge-bench-cuda --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops radius_count,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== s18 widest"; .dev/s18/kdforge-bench-cuda $C --k 8 --ops radius_count,radius --split widest 2>&1 | grep -E "^1000000 .*(radius)|FAIL|rror"
echo "== GPU tests s18"; (timeout 420 .dev/s18/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck s18"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 .dev/s18/kdforge-bench-cuda --n 50000 --m 3000 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s18/kdforge-bench-cuda --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --dim 4 --split widest --ops radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s18/kdforge-bench-cuda --n 5 --m 300 --k 1 --reps 1 --warmup 0 --verify 100 --builder partition --ops radius_count,radius --quiet 2>&1 | tail -2
