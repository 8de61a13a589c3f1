#!/usr/bin/env bash
# session 12, run 41: s27 committed vs s28 (split policy fixed per kernel, state write-back, 32-bit cap counter, sums from
# the first square) vs s30 (s28 + bucket size as a kernel parameter, split component by level bit); GPU tests of s30; CPU old vs new
set -u
for f in .dev/s27/new-bench.xz .dev/s28/new-bench.xz .dev/s30/new-bench.xz .dev/s30/kdforge_tests.xz .dev/s30/new-cpu-bench.xz .dev/s30/old-cpu-bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== GPU tests s30"; (timeout 420 .dev/s30/kdforge_tests --duration=true > $OUT/gpu_tests_run41.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run41.txt
B=.dev/s27/new-bench; N1=.dev/s28/new-bench; N2=.dev/s30/new-bench
for r in 1 2; do
  for b in B N1 N2; do echo "== round $r $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done
done
for b in B N2; do echo "== widest $b"; ${!b} --n 1000000 --m 1000000 --reps 10 --builder partition --split widest --k 1,8 --ops knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
for b in B N2; do echo "== 10M $b"; ${!b} --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror"; done
echo "== round 3 B / N2 closest"; for b in B N2; do ${!b} --n 1000000 --m 1000000 --reps 20 --builder partition --k 1,8 --ops knn,closest --quiet 2>&1 | grep -E "^1000000 |FAIL|rror" | grep -v " build "; done
cuobjdump -sass $N2 > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p or 'RadiusCount' in p) and 'LeftBalancedTree' in p and 'EfLi3EiE' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn_sass_s30.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
export LD_LIBRARY_PATH=$PWD/.dev/lib OMP_NUM_THREADS=16 OMP_PLACES=threads OMP_PROC_BIND=spread
for r in 1 2; do for b in old new; do echo "== CPU round $r $b"; .dev/s30/$b-cpu-bench --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
