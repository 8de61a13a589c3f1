#!/usr/bin/env bash
# session 11, run 34: pending planes kept in a local array (variant 1) vs reloaded by pop iterations (0)
set -u
for f in .dev/s24/new-bench.xz .dev/s24/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s24/new-bench
for r in 1 2; do
  for v in 0 1; do
    echo "== round $r variant $v (regroup auto)"
    KDFORGE_VARIANT=$v $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
    echo "== round $r variant $v regroup 0"
    KDFORGE_VARIANT=$v $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops knn,closest --regroup 0 --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
  done
done
for c in 25 35 45 60; do echo "== variant 1 regroup $c"; KDFORGE_VARIANT=1 $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops knn,closest --regroup $c --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for c in 90 120 160; do echo "== variant 1 regroup $c k=8"; KDFORGE_VARIANT=1 $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 8 --ops knn --regroup $c --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
for v in 0 1; do echo "== 10M variant $v"; KDFORGE_VARIANT=$v $B --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== GPU tests variant 1"; (KDFORGE_VARIANT=1 timeout 400 .dev/s24/kdforge_tests --duration=true > $OUT/gpu_tests_v1.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_v1.txt
