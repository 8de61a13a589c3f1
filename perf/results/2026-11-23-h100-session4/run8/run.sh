#!/usr/bin/env bash
# session 4, run 8: the committed code's GPU tests, memcheck, one bench row set
set -u
for f in .dev/final/kdforge_tests.xz .dev/final/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
G=.dev/final/kdforge-bench-cuda
(timeout 300 .dev/final/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
compute-sanitizer --tool memcheck --print-limit 5 $G --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition,tags --quiet 2>&1 | tail -2
compute-sanitizer --tool memcheck --print-limit 5 $G --n 300000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --split widest --dim 4 --quiet 2>&1 | tail -2
$G --n 1000000,10000000 --m 1000000 --reps 10 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | tee $OUT/bench.txt | grep -v "^kdforge 0"
