#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, KDFORGE_ENABLE_FUZZ=ON) with clang
# on the Serial backend, and runs each for SECONDS on its corpus: the seeds
# of tests/fuzz/corpus/<target> and the working corpus the earlier runs grew
# in the build tree. A crashing, hanging or leaking input is saved as
# <build>/crashes/<target>/crash-*; copy it into tests/fuzz/corpus/<target>
# once fixed, and the replay entries (kdforge_fuzz_replay_*) keep it tested.
#
#   bash tests/fuzz/run.sh [SECONDS] [TARGET...]     (default: 60 s, every target)
#
# Environment:
#   KDFORGE_FUZZ_BUILD  the build tree (default ./build-fuzz)
#   KDFORGE_FUZZ_JOBS   targets run at once (default: the number of cores, at most 2)
#   KDFORGE_FUZZ_SEED   libFuzzer's random seed (default: a new one each run; the
#                       test command fixes it, so its findings repeat)
#   KDFORGE_BUILD_JOBS  compile jobs (default: the number of cores)
# Prints one line per target: executions, coverage (edges), features, corpus
# size, and the result; exits 1 if any target found a problem.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
here=$PWD
seconds=${1:-60}
shift || true
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "tests/fuzz/run.sh: SECONDS must be a whole number >= 1 (got '$seconds')" >&2; exit 2; }
build=${KDFORGE_FUZZ_BUILD:-$here/build-fuzz}
jobs=${KDFORGE_BUILD_JOBS:-$(nproc)}
cores=$(nproc)
parallel=${KDFORGE_FUZZ_JOBS:-$((cores < 2 ? cores : 2))}

cxx=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$cxx" ] || { echo "tests/fuzz/run.sh: clang++ not found (Debian: clang libclang-rt-14-dev; cmake/install-deps.sh)" >&2; exit 2; }

cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKDFORGE_BACKEND=Serial \
      -DKDFORGE_ENABLE_FUZZ=ON -DKDFORGE_ENABLE_PERF=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then # the list in tests/fuzz/CMakeLists.txt
  targets=($(sed -n 's/^set(KDFORGE_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt))
fi
cmake --build "$build" --parallel "$jobs" --target "${targets[@]/#/kdforge_fuzz_}"

# the largest input each target takes: file readers read whole files, the
# API targets read a few hundred bytes
max_len() { case $1 in points_*|mesh_*) echo 4096 ;; *) echo 1024 ;; esac; }

run_one() {
  local t=$1 work=$build/corpus/$1 crashes=$build/crashes/$1 log=$build/logs/$1.log
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  # the first directory receives new inputs; the seeds are read only
  local rc=0
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    "$build/tests/fuzz/kdforge_fuzz_$t" "$work" "$here/tests/fuzz/corpus/$t" -max_total_time="$seconds" \
    -max_len="$(max_len "$t")" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${KDFORGE_FUZZ_SEED:+-seed="$KDFORGE_FUZZ_SEED"} >"$log" 2>&1 || rc=$?
  local stats runs
  stats=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n1 | \
          sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\2 \3 \4/' || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1 || true)
  local cov ft corp
  read -r cov ft corp <<<"${stats:-? ? ?}"
  if [ $rc -eq 0 ]; then
    printf '%-11s %10s runs in %ss, cov %s, ft %s, corpus %s: clean\n' "$t" "${runs:-?}" "$seconds" "$cov" "$ft" "$corp"
  else
    printf '%-11s %10s runs, cov %s: FAILED (exit %s); the input is in %s, the log in %s\n' "$t" "${runs:-?}" "$cov" "$rc" \
           "$crashes" "$log"
    grep -m3 -E 'ERROR|runtime error|kdforge fuzz|fuzz_[a-z]+:' "$log" | sed 's/^/    /' || true
  fi
  return $rc
}

failed=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$parallel" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit $failed
