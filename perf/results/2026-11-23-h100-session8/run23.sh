#!/usr/bin/env bash
# session 8, run 23: GPU tests after the review (BucketCursor reused, fixed-bound loop without dead pops) (s14), memcheck
set -u
for f in .dev/s14/kdforge_tests.xz .dev/s12/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests"; (timeout 450 .dev/s14/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck s12"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 .dev/s12/kdforge-bench-cuda --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest,radius_count,radius --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s12/kdforge-bench-cuda --n 50000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --dim 4 --split widest --ops knn,closest --quiet 2>&1 | tail -2
timeout 40 compute-sanitizer --tool memcheck --print-limit 5 .dev/s12/kdforge-bench-cuda --n 5 --m 300 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest --quiet 2>&1 | tail -2
