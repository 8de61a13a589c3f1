#!/usr/bin/env bash
# session 15, run 65: GPU tests of the chained insertion (build-cuda at HEAD + candidates.hpp), same-run A/B base0 / v1 (.dev/gpu/bench) / v5 (+ pending flip), ncu pipe use
set -u
x() { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $1 && chmod +x ${1%.xz}; }
for f in .dev/gpu/tests.xz .dev/gpu/bench.xz .dev/var/base0.xz .dev/var/v5.xz; do x $f || exit 1; done
cp .dev/gpu/bench .dev/var/v1
nvidia-smi --query-gpu=name --format=csv,noheader
(timeout 450 .dev/gpu/tests --duration=true > $OUT/gpu_tests_run65.txt 2>&1; echo "tests rc=$?"); tail -4 $OUT/gpu_tests_run65.txt
B="--n 1000000 --m 1000000 --builder partition --quiet --reps 10"
for r in 1 2 3; do for t in base0 v1 v5; do echo "== $t round $r"; .dev/var/$t $B --k 1,4,8,16 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror"; done; done
echo "== 10M"; for t in base0 v1 v5; do echo "-- $t"; .dev/var/$t --n 10000000 --m 1000000 --reps 5 --builder partition --quiet --k 8 --ops knn,closest 2>&1 | grep -E "^10000000 .*(knn|closest)|FAIL|rror"; done
for t in base0 v1 v5; do
  ncu --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --kernel-name-base demangled -k regex:KnnSortedFunctor -s 1 -c 1 --page raw .dev/var/$t $B --reps 2 --warmup 0 --k 8 --ops knn > $OUT/ncu_raw_$t.txt 2>&1
  echo "-- ncu $t"; grep -E "gpu__time_duration.sum|sm__inst_executed_pipe_(alu|fma|fmaheavy|fmalite)\.avg\.pct|sm__pipe_(alu|fma|fmaheavy|fmalite)_cycles_active\.avg\.pct|smsp__inst_executed.sum |sm__inst_executed.sum |issue_active.avg.pct|stalled_math|stalled_long_scoreboard" $OUT/ncu_raw_$t.txt | head -20
done
