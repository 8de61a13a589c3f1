#!/usr/bin/env bash
# session 3, run 5: fused tag update, 6 finished levels on GPUs, packed candidates, read-only node loads
set -u
export LD_LIBRARY_PATH=$PWD/build-gpu/lib:${LD_LIBRARY_PATH:-}
G=build-gpu/kdforge-bench-cuda; C=build-gpu/kdforge-bench-omp
nvidia-smi -L
echo "=== GPU 1M"
$G --n 1000000 --m 1000000 --k 1,8,16 --reps 10 --builder partition --quiet --json $OUT/gpu.jsonl 2>&1 | tee $OUT/gpu_1M.txt | tail -8
$G --n 1000000 --m 1000000 --reps 10 --builder partition --ops radius --radius-buffer 16 --quiet 2>&1 | tail -2
$G --n 1000000 --m 1000000 --reps 10 --builder partition,tags --ops build --split widest --quiet 2>&1 | tail -3
echo "=== GPU 10M"
$G --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | tee $OUT/gpu_10M.txt | tail -5
echo "=== CPU 16 threads"
export OMP_NUM_THREADS=16 OMP_PROC_BIND=spread OMP_PLACES=threads
$C --n 1000000 --m 1000000 --k 8 --reps 5 --builder auto --ops build,knn,closest,radius --nanoflann --quiet 2>&1 | tee $OUT/cpu_1M.txt | tail -9
$C --n 1000000 --m 1000000 --k 8 --reps 5 --builder auto --ops knn,closest,radius --order morton --quiet 2>&1 | tee $OUT/cpu_1M_morton.txt | tail -4
$C --n 10000000 --m 100000 --reps 3 --builder auto --ops build --quiet 2>&1 | tail -2
echo "=== ncu kernel sum of a 1M build"
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
for k,v in sorted(agg.items(), key=lambda x:-x[1][1])[:14]: print(f"{v[1]/1e6:8.3f} ms {v[0]:4d}x {k}")
PY
echo "=== ncu kNN k=8"
ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 0 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_knn.txt 2>&1
grep -E "Duration|Registers Per|Block Size|Achieved Occupancy|Memory Throughput|Compute \(SM\) Throughput|Issued Warp|Warp Cycles Per Issued" $OUT/ncu_knn.txt | head -12
echo "=== GPU tests"
(cd build-gpu && timeout 400 ./kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt
