#!/usr/bin/env bash
# session 15, run 66: GPU tests of the final code (chained insertion + pending flip), SASS of its k8 kernel, the issue's GPU rows
set -u
x() { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $1 && chmod +x ${1%.xz}; }
for f in .dev/gpu/tests.xz .dev/gpu/bench.xz; do x $f || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
(timeout 450 .dev/gpu/tests --duration=true > $OUT/gpu_tests_run66.txt 2>&1; echo "tests rc=$?"); tail -4 $OUT/gpu_tests_run66.txt
cuobjdump -sass -fun '_ZN6Kokkos4Impl33cuda_parallel_launch_local_memoryINS0_11ParallelForIN7kdforge6detail16KnnSortedFunctorINS4_14FixedSplitTreeINS3_16LeftBalancedTreeINS_9CudaSpaceEfLi3EiEELNS3_11SplitPolicyE0EEENS_4ViewIPNS3_5PointIfLi3EEEJS8_EEENSC_IPiJS8_NS_12MemoryTraitsILj1EEEEEENS3_9KnnResultIS8_fiEELi8EEENS_11RangePolicyIJNS_4CudaEEEESP_EEEEvT_' .dev/gpu/bench > $OUT/final.k8.sass 2>&1; echo "final k8 kernel: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/final.k8.sass) instructions"
for r in 1 2; do echo "== GPU bench round $r"; .dev/gpu/bench --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops build,knn,closest,radius_count,radius --quiet 2>&1 | grep -E "^1000000 |FAIL|rror"; done | tee $OUT/bench_1M.txt
echo "== 10M"; .dev/gpu/bench --n 10000000 --m 1000000 --reps 10 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -E "^10000000 |FAIL|rror" | tee $OUT/bench_10M.txt
echo "== 10M build, kernel durations (ncu, real clocks)"
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --csv .dev/gpu/bench --n 10000000 --m 1000 --reps 1 --warmup 0 --builder partition --ops build --quiet > $OUT/build10M_durations.csv 2>&1; echo rc=$?
python3 - <<'PY'
import csv,os,re,collections
rows=list(csv.reader(open(os.environ['OUT']+'/build10M_durations.csv')))
h=None; k=[]
for r in rows:
    if 'Kernel Name' in r: h=r; continue
    if h and len(r)==len(h):
        d=dict(zip(h,r)); n=re.sub(r'\(.*','',d['Kernel Name']); n=re.sub(r'<.*','',n.split('ParallelFor<')[-1]) if 'ParallelFor<' in n else n.split('<')[0].split()[-1]
        k.append((int(d['ID']),float(d['Metric Value'].replace(',',''))/1e3,n))
# the timed build is the last one: from the last presort onwards
starts=[i for i,(id_,t,n) in enumerate(k) if 'PresortKeys' in n]
s=starts[-3] if len(starts)>=3 else 0
c=collections.OrderedDict()
for id_,t,n in k[s:]:
    c.setdefault(n,[0,0]); c[n][0]+=t; c[n][1]+=1
tot=sum(t for _,t,_ in k[s:])
print(f"kernels of the last build: {tot:.0f} us")
for n,(t,cnt) in sorted(c.items(),key=lambda x:-x[1][0]): print(f"{t:9.1f} us {cnt:4d}x {n[:90]}")
PY
for op in knn closest; do
  timeout 100 ncu --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy -k regex:KnnSortedFunctor -s 1 -c 1 .dev/gpu/bench --n 1000000 --m 1000000 --builder partition --quiet --reps 2 --warmup 0 --k 8 --ops $op > $OUT/ncu_$op.txt 2>&1
  echo "-- ncu $op"; grep -E "Duration|Issue Slots Busy|Executed Ipc Active|highest-utilized|Achieved Occupancy|Registers|No Eligible|Warp Cycles Per Issued" $OUT/ncu_$op.txt | head -12
done
