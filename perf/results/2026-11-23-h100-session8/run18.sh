#!/usr/bin/env bash
# session 8, run 18: persistent threads (static / dynamic) for kNN and closest point vs one thread per query
set -u
for f in .dev/s7/kdforge-bench-cuda.xz .dev/s11/kdforge-bench-cuda.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
OLD=.dev/s7/kdforge-bench-cuda; NEW=.dev/s11/kdforge-bench-cuda
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
A="--n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest --quiet"
F() { grep -v "^kdforge 0\|^N \|^all" | cut -c1-105; }
for r in 1 2; do
  echo "== OLD round $r"; timeout 60 $OLD $A 2>&1 | F
  for t in 0 33792 67584 135168 270336 -33792 -67584 -135168 -270336; do
    echo "== NEW threads $t round $r"; KDFORGE_EXP_THREADS=$t timeout 60 $NEW $A 2>&1 | F
  done
done 2>&1 | tee $OUT/persistent.txt
echo "== ncu"
for t in 0 -135168 135168; do KDFORGE_EXP_THREADS=$t timeout 120 ncu --kernel-name-base demangled --kernel-name regex:KnnSorted\|KnnPersistent --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats $NEW --n 1000000 --m 1000000 --k 8 --reps 1 --warmup 1 --builder partition --ops knn --verify 16 --quiet > $OUT/ncu_$t.txt 2>&1; echo "-- ncu $t"; grep -E "Duration|Registers Per|Block Size|Grid Size|Achieved Occupancy|Theoretical Occ|Issued Warp|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Avg. Active Threads|Executed Instructions  " $OUT/ncu_$t.txt | head -16; done
