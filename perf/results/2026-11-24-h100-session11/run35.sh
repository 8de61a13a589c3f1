#!/usr/bin/env bash
# session 11, run 35: pending planes kept in shared memory (variant 2, TeamPolicy) vs reloaded by pop iterations (0)
set -u
for f in .dev/s25/new-bench.xz .dev/s25/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s25/new-bench
run() { $B --n 1000000 --m 1000000 --reps 10 --builder partition "$@" --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v build; }
for r in 1 2; do
  for v in 0 2; do
    echo "== round $r variant $v (regroup auto)"; KDFORGE_VARIANT=$v run --k 1,8,16 --ops knn,closest
    echo "== round $r variant $v regroup 0"; KDFORGE_VARIANT=$v run --k 1 --ops knn,closest --regroup 0
  done
done
for c in 30 40 50 70; do echo "== variant 2 regroup $c"; KDFORGE_VARIANT=2 run --k 1 --ops knn,closest --regroup $c; done
for c in 80 110 150; do echo "== variant 2 regroup $c k=8"; KDFORGE_VARIANT=2 run --k 8 --ops knn --regroup $c; done
for v in 0 2; do echo "== 10M variant $v"; KDFORGE_VARIANT=$v $B --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v build; done
echo "== GPU tests variant 2"; (KDFORGE_VARIANT=2 timeout 400 .dev/s25/kdforge_tests --duration=true > $OUT/gpu_tests_v2.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_v2.txt
