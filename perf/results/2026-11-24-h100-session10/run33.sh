#!/usr/bin/env bash
# session 10, run 33: final code (s23): automatic regroup for k = 1 only; GPU tests; 1M rows
set -u
for f in .dev/s23/new-bench.xz .dev/s23/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests"; (timeout 450 .dev/s23/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
B=.dev/s23/new-bench
for r in 1 2; do echo "== final round $r"; $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
echo "== final 10M"; $B --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"
