#!/usr/bin/env bash
# session 13, run 50: s33 kNN k=8 with regroup caps and bucket levels (options only, no rebuild)
set -u
[ -x .dev/s33/bench ] || { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/s33/bench.xz && chmod +x .dev/s33/bench; }
nvidia-smi --query-gpu=name --format=csv,noheader
N=.dev/s33/bench
for r in 1 2; do
for c in 0 100 130 160 200; do echo "== k8 regroup $c"; $N --n 1000000 --m 1000000 --reps 10 --builder partition --k 8 --ops knn --regroup $c --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for bl in 1 3; do echo "== k8 bucket levels $bl"; $N --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8 --ops knn,closest --bucket-levels $bl --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
echo "== default"; $N --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "
