#!/usr/bin/env bash
# session 13, run 49: GPU tests of s33 (final code); full rows of s33 (1M, widest, 10M) with the committed s0 beside it
set -u
for f in .dev/s0/bench.xz .dev/s33/bench.xz .dev/s33/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests s33"; (timeout 420 .dev/s33/kdforge_tests --duration=true > $OUT/gpu_tests_run49.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run49.txt
for r in 1 2; do for b in s0 s33; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
for b in s0 s33; do echo "== widest $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 1,8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in s0 s33; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
