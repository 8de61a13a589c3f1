#!/usr/bin/env bash
# session 4, run 2 (GPU): while-while stack-free traversal, team finisher; kernel breakdowns
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
G=.dev/new/kdforge-bench-cuda
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
{
for b in 2 3 4; do
  echo "=== reuse bucket $b"; $G $C1 --k 1,8,16 --ops build,knn,closest,radius_count,radius --bucket-levels $b --json $OUT/gpu.jsonl 2>&1 | grep -v "^N "
done
echo "=== fresh, default"; $G $C1 --k 8 --ops build,knn,closest,radius --results fresh 2>&1 | grep -v "^N "
echo "=== widest / tags 1M"; $G $C1 --builder partition,tags --split widest --ops build 2>&1 | grep -v "^N "
echo "=== 10M"; $G --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^N "
} 2>&1 | tee $OUT/bench.txt
echo "=== ncu: every kernel of one knn k=8 call and two 1M builds (clocks not locked)"
ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 0 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_all.csv 2>/dev/null
python3 - <<'PY' | tee $OUT/ncu_summary.txt
import csv, os, re
rows=list(csv.reader(open(os.environ['OUT']+'/ncu_all.csv')))
hdr=None; seq=[]
for r in rows:
    if 'Kernel Name' in r: hdr=r; continue
    if hdr is None or len(r)!=len(hdr): continue
    d=dict(zip(hdr,r))
    if d.get('Metric Name')!='gpu__time_duration.sum': continue
    n=d['Kernel Name']; v=float(d['Metric Value'].replace(',',''))/1e3
    m=re.findall(r'kdforge::(?:\w+::)*(\w+)<', n)
    key=m[0] if m else re.sub(r'\(.*','',n)[:60]
    seq.append((key,v))
print('kernels', len(seq))
# the build kernels come first (timed build + tracked build); show the last 12 (knn call) and per-name sums
for k,v in seq[-12:]: print(f'  tail {v:9.1f} us  {k}')
agg={}
for k,v in seq: a=agg.setdefault(k,[0,0.0]); a[0]+=1; a[1]+=v
for k,v in sorted(agg.items(), key=lambda x:-x[1][1])[:16]: print(f'{v[1]:9.1f} us {v[0]:4d}x {k}')
PY
echo "=== ncu knn k=8 bucket 3"
ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section InstructionStats $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --bucket-levels 3 --quiet > $OUT/ncu_knn.txt 2>&1
grep -E "Duration|Registers Per|Block Size|Achieved Occupancy|Compute \(SM\) Throughput|Issued Warp|No Eligible|Warp Cycles Per Issued|Avg. Active Threads|Executed Instructions  " $OUT/ncu_knn.txt | head -12
