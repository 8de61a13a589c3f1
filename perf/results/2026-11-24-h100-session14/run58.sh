#!/usr/bin/env bash
# session 14, run 58: GPU A/B, f5833eb (gpu) vs buf (kNN candidates wait in a one-candidate buffer; a lane's
# second candidate makes every waiting lane of the warp insert; CAP >= 8), same run; registers
set -u
for f in .dev/gpu/bench.xz .dev/buf/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3; do
  for b in gpu buf; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in gpu buf; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8,16 --ops knn --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
for b in gpu buf; do echo "== clustered $b"; .dev/$b/bench --n 1000000 --m 1000000 --dist clustered --reps 5 --builder partition --k 8 --ops knn --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in gpu buf; do echo "== regs $b"; cuobjdump -res-usage .dev/$b/bench | python3 perf/results/2026-11-24-h100-session14/regs.py | sort | uniq; done
