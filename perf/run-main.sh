#!/usr/bin/env bash
# The main job: on a fresh machine, install what is missing, build kdforge's
# benchmark driver for this machine's CPU (OpenMP, all cores) and, when an
# NVIDIA GPU and nvcc are present, for the GPU (Cuda), then run the quick
# comparison (perf/compare.sh --quick: the papers' workload sizes up to 1M
# points, the nanoflann baseline on the CPU) and print its table of verified
# timings, GPU/CPU speedups and the paths of the plots.
#
#   bash perf/run-main.sh                     the quick comparison (a few minutes)
#   bash perf/run-main.sh --full              the full workload list (up to 10M points)
#   bash perf/run-main.sh [kdforge-bench flags...]
#                                             one run of the driver instead (GPU build where there
#                                             is one), e.g. --n 1000000 --m 1000000 --k 1,8,16
# Environment: KDFORGE_BACKEND=OpenMP|Serial|Threads|Cuda forces one backend;
# KDFORGE_RESULTS=DIR puts the results elsewhere (default build-main-results/<UTC time>);
# KDFORGE_BUILD_DIR / KDFORGE_CUDA_BUILD_DIR: build folders (default build-main-<backend>);
# CMAKE_BUILD_PARALLEL_LEVEL=N limits the build's parallel jobs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash cmake/install-deps.sh
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

gpu=0
if [ -z "${KDFORGE_BACKEND:-}" ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 &&
   command -v nvcc >/dev/null; then
  gpu=1
fi
build_bench() { # build_bench BACKEND -> prints the binary's path
  local backend="$1" build="build-main-$1"
  if [ "$backend" = Cuda ]; then build=${KDFORGE_CUDA_BUILD_DIR:-$build}; else build=${KDFORGE_BUILD_DIR:-$build}; fi
  echo "[kdforge] building the benchmark driver for $backend in $build" >&2
  cmake -S . -B "$build" -G Ninja -DKDFORGE_BACKEND="$backend" -DCMAKE_BUILD_TYPE=Release \
        -DKDFORGE_ENABLE_TESTS=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF >/dev/null
  cmake --build "$build" --target kdforge-bench >&2
  echo "$build/perf/kdforge-bench"
}

export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
if [ $# -gt 0 ] && [ "$1" != --full ]; then # one driver run with the given flags
  backend=${KDFORGE_BACKEND:-OpenMP}
  [ "$gpu" = 1 ] && backend=Cuda
  bin=$(build_bench "$backend")
  echo "[kdforge] $bin $*"
  exec "$bin" "$@"
fi

list=(--quick)
[ "${1:-}" = --full ] && list=()
cpu_bin=$(build_bench "${KDFORGE_BACKEND:-OpenMP}")
compare=(--cpu "$cpu_bin")
if [ "$gpu" = 1 ]; then
  compare+=(--gpu "$(build_bench Cuda)")
else
  echo "[kdforge] no NVIDIA GPU with nvcc here: CPU comparison only" >&2
fi
out=${KDFORGE_RESULTS:-build-main-results/$(date -u +%Y%m%dT%H%M%SZ)}
echo "[kdforge] perf/compare.sh ${compare[*]} --out $out ${list[*]}" >&2
bash perf/compare.sh "${compare[@]}" --out "$out" "${list[@]}"
