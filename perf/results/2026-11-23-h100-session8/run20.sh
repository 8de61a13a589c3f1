#!/usr/bin/env bash
# session 8, run 20: branch-free kNN trail loop (s12) vs the committed code (s7); ncu; SASS of the new k8 loop
set -u
for f in .dev/s7/kdforge-bench-cuda.xz .dev/s12/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
OLD=.dev/s7/kdforge-bench-cuda; NEW=.dev/s12/kdforge-bench-cuda
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
A="--n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --quiet"
F() { grep -v "^kdforge 0\|^N \|^all" | cut -c1-105; }
for r in 1 2; do for v in OLD NEW; do echo "== $v round $r"; timeout 60 ${!v} $A 2>&1 | F; done; done 2>&1 | tee $OUT/ab.txt
echo "== NEW 10M"; timeout 90 $NEW --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops knn,closest --quiet 2>&1 | F
echo "== NEW widest"; timeout 90 $NEW --n 1000000 --m 1000000 --reps 5 --builder partition --split widest --k 8 --ops knn,closest --quiet 2>&1 | F
for v in OLD NEW; do for k in 8 1; do timeout 120 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats ${!v} --n 1000000 --m 1000000 --k $k --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_${v}_k$k.txt 2>&1; echo "-- ncu $v k=$k"; grep -E "Duration|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Avg. Active Threads|Executed Instructions  " $OUT/ncu_${v}_k$k.txt | head -10; done; done
cuobjdump -sass $NEW > /tmp/all.sass 2>&1
python3 - <<'P'
import lzma, os
s = open('/tmp/all.sass').read().split('Function : ')
keep = [p for p in s if 'KnnSorted' in p and 'LeftBalancedTreeINS_9CudaSpaceEfLi3Ei' in p]
with lzma.open(os.environ['OUT'] + '/knn_f3_new.sass.xz', 'wt') as f: f.write('Function : '.join([''] + keep))
P
