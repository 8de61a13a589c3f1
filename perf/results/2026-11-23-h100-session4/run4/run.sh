#!/usr/bin/env bash
# session 4, run 4 (GPU): timelines (--trace), traversal variants, finisher profile
set -u
G=.dev/new/kdforge-bench-cuda
C1="--n 1000000 --m 1000000 --reps 10 --builder partition --quiet"
$G $C1 --k 8 --ops build,knn,closest,radius --bucket-levels 3 --trace 2>&1 | grep -v "^N " > $OUT/trace.txt
grep -E "trace: |outside|kdforge::knn|morton|Knn|sort_by_key|Radius|radius|Sides|Finish|presort|build_left" $OUT/trace.txt | head -80
{
for v in 0 1 2; do for b in 3 4; do
  echo "=== variant $v bucket $b"; KDFORGE_WALK_VARIANT=$v $G $C1 --k 1,8 --ops knn,closest,radius_count,radius --bucket-levels $b 2>&1 | grep -v "^N \|^kdforge\|^all\|build"
done; done
} 2>&1 | tee $OUT/variants.txt
ncu --kernel-name-base demangled --kernel-name regex:FinishSubtreeTeams --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis $G --n 1000000 --m 1000 --reps 1 --warmup 0 --builder partition --ops build --verify 16 --quiet > $OUT/ncu_finish.txt 2>&1
grep -E "Duration|Block Size|Grid Size|Registers|Achieved Occupancy|Compute \(SM\)|Memory Throughput|Issued Warp|Warp Cycles Per Issued|Avg. Active|Stall|Bank|Shared" $OUT/ncu_finish.txt | head -30
