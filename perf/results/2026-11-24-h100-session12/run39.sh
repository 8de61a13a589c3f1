#!/usr/bin/env bash
# session 12, run 39: SASS of the committed k1/k8 kNN kernels (float, D = 3, int)
set -u
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/s27/new-bench.xz && chmod +x .dev/s27/new-bench
which cuobjdump nvdisasm
cuobjdump -sass .dev/s27/new-bench > /tmp/all.sass; ls -la /tmp/all.sass
python3 - <<'PY'
import re, lzma, os
txt = open('/tmp/all.sass').read()
parts = re.split(r'(?=\n\s*Function : )', txt)
keep = [p for p in parts if ('KnnSortedFunctor' in p or 'KnnResumeFunctor' in p or 'RadiusCount' in p) and 'EfLi3EiE' in p]
print(len(parts), 'functions;', len(keep), 'kept')
for p in keep: print(p.strip().split('\n')[0][:300])
with lzma.open(os.environ['OUT'] + '/knn_sass.txt.xz', 'wt') as f: f.write('\n'.join(keep))
PY
