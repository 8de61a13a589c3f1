#!/usr/bin/env bash
# session 8, run 21: on the branch-free kNN loop: persistent threads (static / dynamic), launch bounds for k=8
set -u
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/s13/kdforge-bench-cuda.xz && chmod +x .dev/s13/kdforge-bench-cuda
NEW=.dev/s13/kdforge-bench-cuda
A="--n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest"
F() { grep -v "^kdforge 0\|^N " | cut -c1-140; }
for r in 1 2; do
  for t in 0 67584 135168 270336 -67584 -135168 -270336; do
    echo "== threads $t round $r"; KDFORGE_EXP_THREADS=$t timeout 60 $NEW $A 2>&1 | F
  done
  echo "== launch bounds k8 round $r"; KDFORGE_EXP_LB=1 timeout 60 $NEW $A 2>&1 | F
done 2>&1 | tee $OUT/persistent2.txt
for t in 0 -135168 135168; do KDFORGE_EXP_THREADS=$t timeout 120 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted\|KnnPersistent --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats $NEW --n 1000000 --m 1000000 --k 1 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_k1_$t.txt 2>&1; echo "-- ncu k1 $t"; grep -E "Duration|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Avg. Active Threads|Executed Instructions  |L1/TEX Hit|L2 Hit" $OUT/ncu_k1_$t.txt | head -10; done
KDFORGE_EXP_LB=1 timeout 120 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted --launch-skip 1 --launch-count 1 --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats $NEW --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_k8_lb.txt 2>&1; echo "-- ncu k8 lb"; grep -E "Duration|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Avg. Active Threads|Executed Instructions  |Block Size" $OUT/ncu_k8_lb.txt | head -10
