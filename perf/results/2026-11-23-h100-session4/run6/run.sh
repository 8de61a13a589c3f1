#!/usr/bin/env bash
# session 4, run 6: fused sides (builder), defaults; kNN/closest kernel profile and SASS
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
G=.dev/new/kdforge-bench-cuda
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
{
for b in 1 2; do echo "=== GPU bucket $b"; $G $C1 --k 1,8,16 --ops build,knn,closest,radius_count,radius --bucket-levels $b 2>&1 | grep -v "^N \|^all\|^kdforge 0"; done
echo "=== GPU widest/tags"; $G $C1 --builder partition,tags --split widest --ops build 2>&1 | grep -v "^N \|^all\|^kdforge 0"
echo "=== GPU 10M"; $G --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^N \|^all\|^kdforge 0"
echo "=== GPU double 1M"; $G $C1 --dtype double --k 8 --ops build,knn,closest,radius 2>&1 | grep -v "^N \|^all\|^kdforge 0"
} > $OUT/gpu.txt 2>&1
$G $C1 --k 8 --ops build,knn,closest,radius --trace 2>&1 | grep "trace:" | grep -v "View::destruction" > $OUT/trace.txt
for op in "knn --k 8" closest; do
ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --metrics smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__inst_executed.sum,smsp__thread_inst_executed.sum $G --n 1000000 --m 1000000 --reps 1 --warmup 0 --builder partition --ops $op --verify 16 --quiet > "$OUT/ncu_${op%% *}.txt" 2>&1
done
cuobjdump -sass $G > /tmp/all.sass 2>/dev/null
python3 - <<'PY'
import re, os
txt=open('/tmp/all.sass').read()
funcs=re.split(r'\n\s*Function : ', txt)
out=os.environ['OUT']
for f in funcs:
    name=f.split('\n',1)[0]
    if 'KnnSortedFunctor' in name and 'LeftBalancedTree' in name and 'Lb1ELb0E' not in name:
        if 'KnnResult' in name and 'Li8EE' in name and 'float' not in name:
            pass
    if 'KnnSortedFunctor' in name and 'LeftBalancedTreeIN6Kokkos9CudaSpaceEfLi3EiEE' in name:
        tag='k8' if 'Li8EEE' in name else ('k1' if 'Li1EEE' in name else None)
        if tag:
            fn=f'{out}/sass_{tag}_{"col" if "ColumnResult" in name else "knn"}.txt'
            open(fn,'w').write(name+'\n'+f)
            print(fn, len(re.findall(r'/\*[0-9a-f]{4}\*/', f)))
PY
cat $OUT/gpu.txt; grep -E "trace: (build|knn|closest|radius)|morton|knn::k|radius::|finish|presort" $OUT/trace.txt
for f in $OUT/ncu_*.txt; do echo $f; grep -E "Duration|Registers Per|Active Threads|Issued Warp|Executed Ipc A|No Eligible|Achieved Occ|inst_executed|stalled" $f | head -14; done
(timeout 300 .dev/new/kdforge_tests > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -3 $OUT/gpu_tests.txt
compute-sanitizer --tool memcheck --print-limit 5 $G --n 50000 --m 3000 --k 1,8,40 --reps 1 --warmup 0 --verify 100 --builder partition,tags --split widest --quiet 2>&1 | tail -2
compute-sanitizer --tool memcheck --print-limit 5 $G --n 300000 --m 3000 --k 8 --reps 1 --warmup 0 --verify 100 --builder partition --dim 2 --quiet 2>&1 | tail -2
