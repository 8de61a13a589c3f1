#!/usr/bin/env bash
# session 4, run 1 (GPU): baseline HEAD 8c2a5af vs bucket traversal + pooled allocation + result reuse
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
B=.dev/base/kdforge-bench-cuda; G=.dev/new/kdforge-bench-cuda
nvidia-smi -L
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
echo "=== base 1M"; $B $C1 --k 1,8,16 --ops build,knn,closest,radius_count,radius 2>&1 | tee $OUT/base_1M.txt | tail -7
echo "=== new fresh plain-malloc"; KDFORGE_CUDA_MALLOC=plain $G $C1 --k 8 --ops build,knn,closest,radius --results fresh 2>&1 | tee $OUT/new_fresh_plain.txt | tail -4
echo "=== new fresh pool"; $G $C1 --k 8 --ops build,knn,closest,radius --results fresh 2>&1 | tee $OUT/new_fresh_pool.txt | tail -4
for b in 0 1 2 3 4; do
  echo "=== new reuse bucket $b"; $G $C1 --k 1,8,16 --ops knn,closest,radius_count,radius --bucket-levels $b --json $OUT/gpu.jsonl 2>&1 | tee $OUT/new_b$b.txt | tail -6
done
echo "=== stack traversal, bucket 2/3"; for b in 2 3; do $G $C1 --k 8 --ops knn,closest,radius --traversal stack --bucket-levels $b 2>&1 | tail -3; done
echo "=== 10M base / new"
$B --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | tee $OUT/base_10M.txt | tail -4
$G --n 10000000 --m 1000000 --k 8 --reps 5 --builder partition --ops build,knn,closest,radius --quiet 2>&1 | tee $OUT/new_10M.txt | tail -4
echo "=== ncu knn k=8 bucket 0 / 3"
for b in 0 3; do
ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats $G --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --bucket-levels $b --quiet > $OUT/ncu_knn_b$b.txt 2>&1
grep -E "Duration|Registers Per|Block Size|Achieved Occupancy|Compute \(SM\) Throughput|Issued Warp|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Avg. Active Threads" $OUT/ncu_knn_b$b.txt | head -14
done
