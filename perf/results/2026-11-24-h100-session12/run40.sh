#!/usr/bin/env bash
# session 12, run 40: s27 committed vs s28 (split policy fixed per kernel, state write-back, 32-bit cap counter,
# sums from the first square) vs s29 (s28 + third regroup pass, KDFORGE_REGROUP2 = cap of the second pass); GPU tests of s28; SASS of s28
set -u
for f in .dev/s27/new-bench.xz .dev/s28/new-bench.xz .dev/s28/kdforge_tests.xz .dev/s29/new-bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests s28"; (timeout 420 .dev/s28/kdforge_tests --duration=true > $OUT/gpu_tests_run40.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run40.txt
B=.dev/s27/new-bench; N=.dev/s28/new-bench; X=.dev/s29/new-bench
for r in 1 2; do
  for b in B N; do echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
  for c in 0 15 25 35; do echo "== round $r X regroup2=$c"; KDFORGE_REGROUP2=$c $X --n 1000000 --m 1000000 --reps 10 --builder partition --k 1 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
done
for b in B N; do echo "== 10M $b"; ${!b} --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
for c in 0 20 30; do echo "== 10M X regroup2=$c"; KDFORGE_REGROUP2=$c $X --n 10000000 --m 1000000 --reps 5 --builder partition --k 1 --ops closest --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | grep -v " build "; done
echo "== widest s27 vs s28"; for b in B N; do ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
cuobjdump -sass $N > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p) and 'LeftBalancedTree' in p and 'EfLi3EiE' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn_sass_s28.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
