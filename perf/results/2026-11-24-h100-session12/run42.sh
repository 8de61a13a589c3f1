#!/usr/bin/env bash
# session 12, run 42: s27 committed vs s28 vs s31 (s30 with the level masks as constexpr variables); GPU tests of s31; SASS
set -u
for f in .dev/s27/new-bench.xz .dev/s28/new-bench.xz .dev/s31/new-bench.xz .dev/s31/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
B=.dev/s27/new-bench; N1=.dev/s28/new-bench; N3=.dev/s31/new-bench
for r in 1 2 3; do
  for b in B N1 N3; do echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
done
for b in B N3; do echo "== widest $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 1,8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in B N1 N3; do echo "== 10M $b"; ${!b} --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== GPU tests s31"; (timeout 420 .dev/s31/kdforge_tests --duration=true > $OUT/gpu_tests_run42.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run42.txt
cuobjdump -sass $N3 > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p or 'RadiusCount' in p) and 'LeftBalancedTree' in p and 'EfLi3EiE' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn_sass_s31.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
