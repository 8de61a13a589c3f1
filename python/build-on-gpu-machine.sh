#!/usr/bin/env bash
# Builds kdforge's Python module on the machine that has the GPU, for the
# Python found there, against a Kokkos install carried over: for the GPU
# (the Cuda backend, the default) or for the host's cores (OpenMP); then
# runs the Python tests (the GPU ones too, in a Cuda build) and the
# benchmark against scipy and cupyx. Needs CMake, ninja (or make), a C++
# compiler (and nvcc for Cuda), and a Python with NumPy, pybind11 (pip is
# fine), pytest, SciPy and CuPy (PyTorch optional); no Debian packages.
#
#   bash python/build-on-gpu-machine.sh [KOKKOS_PREFIX [Cuda|OpenMP]]
#
# KOKKOS_PREFIX: a Kokkos built for that backend, e.g. the prefix that
# `bash cmake/kokkos-bootstrap.sh Cuda` (or `OpenMP`) prints, about 6 MB,
# copied from a machine where it was built; default $Kokkos_ROOT, else the
# newest ~/.cache/kdforge/kokkos-*-Cuda-sm90 (kokkos-*-OpenMP).
# An OpenMP build runs the benchmark with OMP_NUM_THREADS (default: every
# core), OMP_PLACES=threads and OMP_PROC_BIND=spread, as the C++ numbers of
# docs/performance.md are measured.
#
# Environment:
#   PYTHON      the interpreter (default python3)
#   BUILD       the build tree (default build-py-cuda, build-py-omp)
#   BENCH_ARGS  bench.py's flags (default: its 1M x 1M, k = 8); "skip" skips it
#   TEST_ARGS   pytest's flags (default -q); "skip" skips the tests
#   JOBS        parallel compile jobs (default: all cores)
#   CMAKE_ARGS  more arguments for the configure step, e.g.
#               "-DKDFORGE_ENABLE_BLAS=OFF" to leave the host BLAS out
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
py=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH

backend=${2:-Cuda}
die() { echo "build-on-gpu-machine: $*" >&2; exit 1; }
case "$backend" in
  Cuda) build=${BUILD:-build-py-cuda}; pattern="kokkos-*-Cuda-sm90" ;;
  OpenMP) build=${BUILD:-build-py-omp}; pattern="kokkos-*-OpenMP" ;;
  *) die "backend '$backend': expected Cuda or OpenMP" ;;
esac
prefix=${1:-${Kokkos_ROOT:-}}
if [ -z "$prefix" ]; then
  prefix=$(ls -dt "$HOME"/.cache/kdforge/$pattern 2>/dev/null | head -n1 || true)
fi
if [ -z "$prefix" ] || { [ ! -d "$prefix/lib/cmake/Kokkos" ] && [ ! -d "$prefix/lib64/cmake/Kokkos" ]; }; then
  die "no Kokkos install at '${prefix}': pass its prefix (bash cmake/kokkos-bootstrap.sh $backend prints it)"
fi
compiler=()
if [ "$backend" = Cuda ]; then
  [ -x "$prefix/bin/nvcc_wrapper" ] || die "$prefix/bin/nvcc_wrapper is missing: is $prefix a Kokkos built with Cuda?"
  command -v nvcc >/dev/null || die "nvcc is not on PATH"
  compiler=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
fi
pyexe=$(command -v "$py") || die "no $py"
"$pyexe" -c "import numpy" || die "$pyexe has no NumPy"
pybind11_dir=$("$pyexe" -m pybind11 --cmakedir) || die "$pyexe has no pybind11 (pip install pybind11)"
inc=$("$pyexe" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
[ -f "$inc/Python.h" ] || die "the headers of $pyexe are missing ($inc/Python.h)"
gen=()
command -v ninja >/dev/null && [ ! -f "$build/CMakeCache.txt" ] && gen=(-G Ninja)

echo "=== configure: $backend backend, Kokkos at $prefix, $("$pyexe" --version), pybind11 at $pybind11_dir"
# shellcheck disable=SC2086
cmake -S . -B "$build" "${gen[@]}" -DKDFORGE_BACKEND="$backend" -DCMAKE_BUILD_TYPE=Release \
      -DKokkos_ROOT="$prefix" -DKDFORGE_BOOTSTRAP_KOKKOS=OFF "${compiler[@]}" \
      -DCMAKE_PROJECT_INCLUDE="$PWD/python/carried-kokkos.cmake" \
      -DKDFORGE_ENABLE_PYTHON=ON -DKDFORGE_PYTHON_INTERPRETER="$pyexe" -Dpybind11_DIR="$pybind11_dir" \
      -DKDFORGE_ENABLE_TESTS=OFF -DKDFORGE_ENABLE_PERF=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF ${CMAKE_ARGS:-}
echo "=== build (the module: minutes with nvcc)"
start=$(date +%s)
cmake --build "$build" --target kdforge_python --parallel "$jobs"
echo "=== built in $(( $(date +%s) - start )) s: $build/python/kdforge"

export PYTHONPATH="$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}"
if [ "$backend" = OpenMP ]; then
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_PLACES=${OMP_PLACES:-threads} OMP_PROC_BIND=${OMP_PROC_BIND:-spread}
fi
"$pyexe" -c "import kdforge; print('kdforge', kdforge.__version__, kdforge.runtime_info())"
failed=0
if [ "${TEST_ARGS:-}" != skip ]; then
  echo "=== the Python tests"
  # shellcheck disable=SC2086
  "$pyexe" -m pytest -p no:cacheprovider ${TEST_ARGS:--q} python/tests || failed=1
fi
if [ "${BENCH_ARGS:-}" != skip ]; then
  echo "=== the benchmark"
  # shellcheck disable=SC2086
  "$pyexe" python/bench.py ${BENCH_ARGS:-} || failed=1
fi
exit $failed
