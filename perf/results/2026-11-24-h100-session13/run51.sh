#!/usr/bin/env bash
# session 13, run 51: H200, committed (s0) vs final (s33)
set -u
for f in .dev/s0/bench.xz .dev/s33/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2; do for b in s0 s33; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
for b in s0 s33; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
