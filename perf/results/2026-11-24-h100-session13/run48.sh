#!/usr/bin/env bash
# session 13, run 48: s33 vs s34 (s33 + LaunchBounds<128, 12> for the k <= 8 kernel: 40 registers), committed s0 as reference; SASS of s33
set -u
for f in .dev/s0/bench.xz .dev/s33/bench.xz .dev/s34/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3; do
  for b in s0 s33 s34; do echo "== round $r $b"; .dev/$b/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 8 --ops knn --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in s33 s34; do echo "== 10M $b"; .dev/$b/bench --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
cuobjdump -res-usage .dev/s33/bench | grep -A1 "KnnSortedFunctor.*SplitPolicyE0.*KnnResult.*Li8EE" | grep -o "REG:[0-9]*\|STACK:[0-9]*" | head -4
cuobjdump -res-usage .dev/s34/bench | grep -A1 "KnnSortedFunctor.*SplitPolicyE0.*KnnResult.*Li8EE" | grep -o "REG:[0-9]*\|STACK:[0-9]*" | head -4
cuobjdump -sass .dev/s33/bench > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p) and 'LeftBalancedTree' in p and 'EfLi3EiE' in p and 'SplitPolicyE0' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn_sass_s33.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
