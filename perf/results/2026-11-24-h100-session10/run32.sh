#!/usr/bin/env bash
# session 10, run 32: regrouped kNN walks (s22) -- automatic vs off (--regroup 0) vs caps, same binary; GPU tests
set -u
for f in .dev/s22/new-bench.xz .dev/s22/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s22/new-bench
C="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
for r in 1 2; do for g in 0 -1; do echo "== regroup $g round $r"; $B $C --k 1,8,16 --ops knn,closest --regroup $g 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"; done; done
for g in 50 60 90 110; do echo "== regroup $g k1"; $B $C --k 1 --ops knn,closest --regroup $g 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"; done
for g in 120 140 180 200; do echo "== regroup $g k8"; $B $C --k 8 --ops knn --regroup $g 2>&1 | grep -E "^1000000 .*(knn|closest)|FAIL|rror"; done
for g in 0 -1; do echo "== regroup $g 10M"; $B --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet --regroup $g 2>&1 | grep -E "^10000000 .*(knn|closest)|FAIL|rror"; done
echo "== trace"; $B --n 1000000 --m 1000000 --reps 2 --builder partition --k 1,8 --ops closest,knn --trace 2>&1 | grep -E "knn|morton|sort|closest" | tail -30
echo "== GPU tests"; (timeout 450 .dev/s22/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
echo "== memcheck"
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 $B --n 50000 --m 70000 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn,closest --quiet 2>&1 | tail -2
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 $B --n 5 --m 70000 --k 1,8 --reps 1 --warmup 0 --verify 100 --builder partition --ops knn --regroup 1 --quiet 2>&1 | tail -2
