#!/usr/bin/env bash
# Builds kdforge's Python module for the GPU (the Cuda backend) on the
# machine that has the GPU, against a Kokkos Cuda install, for the Python
# found there; then runs the Python tests (the GPU ones included) and the
# benchmark against scipy and cupyx. Needs nvcc, CMake, ninja (or make), a
# C++ compiler for nvcc's host side, and a Python with NumPy, pybind11 (pip
# is fine), pytest, SciPy and CuPy (PyTorch optional); no Debian packages.
#
#   bash python/build-on-gpu-machine.sh [KOKKOS_PREFIX]
#
# KOKKOS_PREFIX: a Kokkos built with Cuda for the GPU's architecture, e.g.
# the prefix `bash cmake/kokkos-bootstrap.sh Cuda` prints (about 6 MB; copy
# it from a machine where it was built); default $Kokkos_ROOT, else the
# newest ~/.cache/kdforge/kokkos-*-Cuda-sm90.
#
# Environment:
#   PYTHON      the interpreter (default python3)
#   BUILD       the build tree (default build-py-cuda)
#   BENCH_ARGS  bench.py's flags (default: its 1M x 1M, k = 8); "skip" skips it
#   TEST_ARGS   pytest's flags (default -q); "skip" skips the tests
#   JOBS        parallel compile jobs (default: all cores)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
py=${PYTHON:-python3}
build=${BUILD:-build-py-cuda}
jobs=${JOBS:-$(nproc)}
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH

prefix=${1:-${Kokkos_ROOT:-}}
if [ -z "$prefix" ]; then
  prefix=$(ls -dt "$HOME"/.cache/kdforge/kokkos-*-Cuda-sm90 2>/dev/null | head -n1 || true)
fi
die() { echo "build-on-gpu-machine: $*" >&2; exit 1; }
if [ -z "$prefix" ] || { [ ! -d "$prefix/lib/cmake/Kokkos" ] && [ ! -d "$prefix/lib64/cmake/Kokkos" ]; }; then
  die "no Kokkos Cuda install at '${prefix}': pass its prefix (bash cmake/kokkos-bootstrap.sh Cuda prints it)"
fi
[ -x "$prefix/bin/nvcc_wrapper" ] || die "$prefix/bin/nvcc_wrapper is missing: is $prefix a Kokkos built with Cuda?"
command -v nvcc >/dev/null || die "nvcc is not on PATH"
pyexe=$(command -v "$py") || die "no $py"
"$pyexe" -c "import numpy" || die "$pyexe has no NumPy"
pybind11_dir=$("$pyexe" -m pybind11 --cmakedir) || die "$pyexe has no pybind11 (pip install pybind11)"
inc=$("$pyexe" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
[ -f "$inc/Python.h" ] || die "the headers of $pyexe are missing ($inc/Python.h)"
gen=()
command -v ninja >/dev/null && [ ! -f "$build/CMakeCache.txt" ] && gen=(-G Ninja)

echo "=== configure: Cuda backend, Kokkos at $prefix, $("$pyexe" --version), pybind11 at $pybind11_dir"
cmake -S . -B "$build" "${gen[@]}" -DKDFORGE_BACKEND=Cuda -DCMAKE_BUILD_TYPE=Release \
      -DKokkos_ROOT="$prefix" -DKDFORGE_BOOTSTRAP_KOKKOS=OFF -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" \
      -DKDFORGE_ENABLE_PYTHON=ON -DKDFORGE_PYTHON_INTERPRETER="$pyexe" -Dpybind11_DIR="$pybind11_dir" \
      -DKDFORGE_ENABLE_TESTS=OFF -DKDFORGE_ENABLE_PERF=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF
echo "=== build (the module: a few minutes)"
start=$(date +%s)
cmake --build "$build" --target kdforge_python --parallel "$jobs"
echo "=== built in $(( $(date +%s) - start )) s: $build/python/kdforge"

export PYTHONPATH="$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}"
"$pyexe" -c "import kdforge; print('kdforge', kdforge.__version__, kdforge.runtime_info())"
failed=0
if [ "${TEST_ARGS:-}" != skip ]; then
  echo "=== the Python tests (GPU tests included)"
  # shellcheck disable=SC2086
  "$pyexe" -m pytest -p no:cacheprovider ${TEST_ARGS:--q} python/tests || failed=1
fi
if [ "${BENCH_ARGS:-}" != skip ]; then
  echo "=== the benchmark"
  # shellcheck disable=SC2086
  "$pyexe" python/bench.py ${BENCH_ARGS:-} || failed=1
fi
exit $failed
