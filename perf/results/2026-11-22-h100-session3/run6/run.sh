#!/usr/bin/env bash
# session 3, run 6: two orders per flag/scan/scatter pass
set -u
export LD_LIBRARY_PATH=$PWD/build-gpu/lib:${LD_LIBRARY_PATH:-}
G=build-gpu/kdforge-bench-cuda
nvidia-smi -L
$G --n 1000000,10000000 --m 1000000 --k 8 --reps 10 --builder partition --ops build --quiet 2>&1 | tee $OUT/gpu_build.txt | tail -3
$G --n 1000000,10000000 --m 1000000 --reps 5 --builder partition,tags --ops build --split widest --quiet 2>&1 | tee $OUT/gpu_build_widest.txt | tail -5
$G --n 1000000 --m 1000000 --k 8 --reps 10 --builder partition --quiet 2>&1 | tee $OUT/gpu_1M.txt | tail -7
ncu --metrics gpu__time_duration.sum --csv --print-units base $G --n 1000000 --m 1000 --reps 1 --warmup 0 --builder partition --ops build --verify 16 --quiet > $OUT/ncu_build.csv 2>/dev/null
python3 - <<'PY'
import csv, os, re, collections
rows=list(csv.reader(open(os.environ['OUT']+'/ncu_build.csv')))
hdr=None; agg=collections.OrderedDict(); tot=0; cnt=0
for r in rows:
    if 'Kernel Name' in r: hdr=r; continue
    if hdr is None or len(r)!=len(hdr): continue
    d=dict(zip(hdr,r))
    if d.get('Metric Name')!='gpu__time_duration.sum': continue
    n=d['Kernel Name']; v=float(d['Metric Value'].replace(',',''))
    m=re.findall(r'(?:partition_detail|detail|kernels|backend)::(\w+)<', n)
    key=m[0] if m and m[0] not in ('ParallelFor',) else (m[-1] if m else re.sub(r'<.*','',n)[:50])
    a=agg.setdefault(key,[0,0.0]); a[0]+=1; a[1]+=v; tot+=v; cnt+=1
print('kernels', cnt, 'total ms (two builds: timed + memory)', tot/1e6)
for k,v in sorted(agg.items(), key=lambda x:-x[1][1])[:10]: print(f"{v[1]/1e6:8.3f} ms {v[0]:4d}x {k}")
PY
(cd build-gpu && timeout 400 ./kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
