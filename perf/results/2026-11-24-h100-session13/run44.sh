#!/usr/bin/env bash
# session 13, run 44: committed (s0) vs deferred first descent (s32), same run: 1M rounds, widest, 10M, regroup caps
set -u
for f in .dev/s0/bench.xz .dev/s32/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s0/bench; N=.dev/s32/bench
for r in 1 2 3; do
  for b in B N; do echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in B N; do echo "== widest $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in B N; do echo "== 10M $b"; ${!b} --n 10000000 --m 1000000 --reps 5 --builder partition --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
for c in 0 40 50; do for b in B N; do echo "== $b closest regroup $c"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops closest --regroup $c --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done; done
