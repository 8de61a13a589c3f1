#!/usr/bin/env bash
# The main job: on a fresh machine, install what is missing, build kdforge's
# benchmark driver for this machine (Cuda when an NVIDIA GPU and nvcc are
# present, else OpenMP on all cores) and run the default workload, printing a
# table of verified timings.
#
#   bash perf/run-main.sh [kdforge-bench flags...]    (e.g. --n 1000000 --m 1000000)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash cmake/install-deps.sh
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
backend=${KDFORGE_BACKEND:-OpenMP}
if [ -z "${KDFORGE_BACKEND:-}" ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  backend=Cuda
fi
build=${KDFORGE_BUILD_DIR:-build-main-$backend}
echo "[kdforge] building the benchmark driver for $backend in $build"
cmake -S . -B "$build" -G Ninja -DKDFORGE_BACKEND="$backend" -DCMAKE_BUILD_TYPE=Release \
      -DKDFORGE_ENABLE_TESTS=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target kdforge-bench
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  if [ "$backend" = Cuda ]; then args=(--n 1000000 --m 1000000 --reps 10)
  else args=(--n 200000 --m 200000 --reps 3); fi
fi
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
echo "[kdforge] $build/perf/kdforge-bench ${args[*]}"
"$build/perf/kdforge-bench" "${args[@]}"
