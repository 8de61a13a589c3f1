#!/usr/bin/env bash
# session 13, run 45: ncu of the kNN kernels, committed (s0) vs deferred first descent (s32)
set -u
for f in .dev/s0/bench.xz .dev/s32/bench.xz; do [ -x ${f%.xz} ] || { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz}; } || exit 1; done
which ncu || ls /usr/local/cuda/bin/ncu
NCU=$(which ncu || echo /usr/local/cuda/bin/ncu)
for b in s0 s32; do
  for op in "--k 8 --ops knn" "--k 1 --ops closest --regroup 0"; do
    echo "== $b $op"
    $NCU --kernel-name-base mangled --kernel-name regex:KnnSorted --launch-count 3 --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section InstructionStats \
      --metrics smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_read.sum \
      .dev/$b/bench --n 1000000 --m 1000000 --reps 1 --warmup 0 --builder partition $op --quiet > $OUT/ncu_${b}_$(echo $op | tr -d ' -').txt 2>&1
    grep -E "Grid Size|Duration|Issue Slots Busy|No Eligible|Executed Ipc A|Achieved Occupancy|inst_executed.sum|sectors_pipe|requests_pipe|thread_inst_executed_per|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Stall|lts__t_sectors" $OUT/ncu_${b}_$(echo $op | tr -d ' -').txt | head -80
  done
done
