#!/usr/bin/env bash
# session 11, run 38: final code (s27: regroup counters taking turns) vs committed code (s25, variant 0); GPU tests
set -u
for f in .dev/s25/new-bench.xz .dev/s27/new-bench.xz .dev/s27/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests"; (timeout 420 .dev/s27/kdforge_tests --duration=true > $OUT/gpu_tests_run38.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run38.txt
OLD=.dev/s25/new-bench; NEW=.dev/s27/new-bench
for r in 1 2 3; do for b in OLD NEW; do echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v build; done; done
echo "== final NEW"; $NEW --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== final NEW 10M"; $NEW --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"
