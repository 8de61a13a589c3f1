#!/usr/bin/env bash
# session 14, run 61: GPU tests and one GPU bench round of the final code (huge-page advice for host Views; GPU kernels unchanged)
set -u
for f in .dev/gpu/bench.xz .dev/gpu/tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
(timeout 450 .dev/gpu/tests --duration=true > $OUT/gpu_tests_run61.txt 2>&1; echo "rc=$?"); tail -4 $OUT/gpu_tests_run61.txt
grep -i "huge" $OUT/gpu_tests_run61.txt | head -3
for r in 1 2; do echo "== GPU bench round $r"; .dev/gpu/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
echo "== 10M"; .dev/gpu/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"
