#!/usr/bin/env bash
# Installs kdforge's build dependencies from Debian's packages when missing
# (as root, or through sudo). Kokkos itself is bootstrapped by CMake.
set -euo pipefail
pkgs=(cmake ninja-build g++ make patch xz-utils libtbb-dev doctest-dev libcli11-dev nlohmann-json3-dev
      # the test command's compiler cache (tests/run-tests.sh)
      ccache
      # the benchmark driver's baseline and the comparison report's plots (perf/)
      libnanoflann-dev python3 gnuplot-nox
      # the descriptor benchmark's baselines (perf/descriptors; faiss on OpenBLAS, not the reference BLAS)
      libflann-dev liblz4-dev libfaiss-dev libopenblas0-pthread
      # brute-force kNN through the BLAS (kernels/query/brute_force_gemm.hpp)
      libopenblas-dev
      # the renderer and the ray benchmark (perf/rays): mesh files, PNG output, the Embree baseline
      libstb-dev libembree-dev
      # the ICP tracking benchmark's baselines (perf/icp; optional: built only where found)
      libopen3d-dev libpcl-dev
      # the API reference (cmake --build <build> --target docs)
      doxygen
      # the fuzz targets (tests/fuzz/run.sh): clang with libFuzzer and the sanitizer runtimes
      clang libclang-rt-14-dev
      # the distributed tree (kdforge::mpi, tests/mpi, perf/mpi): Open MPI and its mpirun
      libopenmpi-dev openmpi-bin
      # the Python module (python/): pybind11, the interpreter's headers and NumPy; its tests
      # against SciPy with pytest; `pip install --no-build-isolation .` with setuptools and wheel
      pybind11-dev python3-pybind11 python3-dev python3-numpy python3-scipy python3-pytest
      python3-setuptools python3-wheel python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "[kdforge] installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
