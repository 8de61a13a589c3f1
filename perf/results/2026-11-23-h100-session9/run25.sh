#!/usr/bin/env bash
# session 9, run 25: committed code (s16): bucket levels 2/3/4 with the branch-free kNN loop; trace of one call
set -u
for f in .dev/s16/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s16/kdforge-bench-cuda
C="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
for r in 1 2; do for bl in 2 3 4; do echo "== s16 bucket levels $bl round $r"; $B $C --k 1,8,16 --ops knn,closest,radius_count,radius --bucket-levels $bl 2>&1 | grep -E "^1000000 .*(knn|closest|radius)|FAIL|rror"; done; done
echo "== trace"; $B --n 1000000 --m 1000000 --reps 2 --builder partition --k 1,8 --ops knn,closest --trace 2>&1 | grep -vE "build::|presort|ViewFill|partition::" | tail -40
