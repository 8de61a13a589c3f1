#!/usr/bin/env bash
# session 15, run 67 (H200): the GPU rows, final code vs base0 (75c42a0), same run
set -u
x() { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $1 && chmod +x ${1%.xz}; }
for f in .dev/gpu/bench.xz .dev/var/base0.xz; do x $f || exit 1; done
cp .dev/gpu/bench .dev/var/final
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for r in 1 2; do for t in base0 final; do echo "== $t round $r"; .dev/var/$t --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done | tee $OUT/bench_1M.txt
for t in base0 final; do echo "== 10M $t"; .dev/var/$t --n 10000000 --m 1000000 --reps 10 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done | tee $OUT/bench_10M.txt
