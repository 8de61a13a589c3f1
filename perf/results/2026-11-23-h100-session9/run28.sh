#!/usr/bin/env bash
# session 9, run 28: the committed code's GPU rows on an H200 (the reference numbers were measured on one)
set -u
for f in .dev/s16/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
B=.dev/s16/kdforge-bench-cuda
for r in 1 2; do echo "== 1M round $r"; $B --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
echo "== 10M"; $B --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"
