#!/usr/bin/env bash
# session 13, run 47: committed (s0) vs s33 (every trail descent deferred, stack deferral host-only), same run
set -u
for f in .dev/s0/bench.xz .dev/s33/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3; do
  for b in s0 s33; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in s0 s33; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
for c in 0 40 50; do echo "== s33 closest regroup $c"; .dev/s33/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops closest --regroup $c --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
