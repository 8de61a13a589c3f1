#!/usr/bin/env bash
# session 14, run 54: committed (s0) vs s36 (GPU candidate insertion: one compare per slot, predicated selects), same run; SASS + registers of s36
set -u
for f in .dev/s0/bench.xz .dev/s36/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3; do
  for b in s0 s36; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in s0 s36; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
for b in s0 s36; do echo "== widest $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in s0 s36; do echo "== regs $b"; cuobjdump -res-usage .dev/$b/bench | python3 perf/results/2026-11-24-h100-session14/regs.py | sort | uniq; done
cuobjdump -sass .dev/s36/bench > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if 'KnnSortedFunctor' in p and 'LeftBalancedTree' in p and 'EfLi3EiE' in p and 'SplitPolicyE0' in p and 'Li8EE' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn8_sass_s36.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
