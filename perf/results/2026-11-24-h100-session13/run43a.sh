#!/usr/bin/env bash
# session 13, run 43a: GPU tests of s32 (deferred first descent); one round of the new bench
set -u
for f in .dev/s32/bench.xz .dev/s32/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
N=.dev/s32/bench
echo "== round 1 N"; $N --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== GPU tests s32"; (timeout 400 .dev/s32/kdforge_tests --duration=true > $OUT/gpu_tests_run43.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run43.txt
cuobjdump -sass $N > /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p) and 'LeftBalancedTree' in p and 'EfLi3EiE' in p]
print(len(keep), 'kept')
with lzma.open(os.environ['OUT'] + '/knn_sass_s32.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
