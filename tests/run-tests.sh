#!/usr/bin/env bash
# The test command: on a fresh Debian machine, installs what is missing,
# builds kdforge for each CPU backend and runs its test suite (the Serial one
# under AddressSanitizer and UndefinedBehaviorSanitizer), runs every fuzz
# target for a minute, and compiles (without running) the Cuda kernels where
# nvcc exists, so CUDA code cannot rot on machines without a GPU.
#
#   bash tests/run-tests.sh
#
# Also: the API reference (Doxygen, warnings are errors), and, where the
# Kokkos 4.6.01 source release is at hand, the OpenMP suite against that
# Kokkos (built once into the cache like the bootstrapped 3.4.1).
#
# Environment:
#   KDFORGE_TEST_BACKENDS  CPU backends to build and test (default "Serial OpenMP")
#   KDFORGE_CUDA           auto (default: compile the driver and a Cuda compile check if nvcc exists)
#                          | full (compile everything, the Cuda suite too) | run (full, and run it on a GPU) | off
#   KDFORGE_BUILD_ROOT     where build trees go (default ./build-tests)
#   KDFORGE_KOKKOS_RELEASE the Kokkos 4.6.01 tarball (default ../shared/vendor/kokkos-4.6.01.tar.gz
#                          beside the checkout); "off" skips that suite
#   KDFORGE_KOKKOS4_FEATURES the features of that suite (default build;public_api;primitives;bucket;vvh;rays:
#                          every builder, every query through the public API, every backend
#                          primitive; "all" for every one)
#   KDFORGE_SANITIZE       ON (default): the Serial suite is built with ASan + UBSan, a subset of the
#                          features (tests/README.md, Sanitizers); OFF: the whole Serial suite, plain
#   KDFORGE_FUZZ_SECONDS   seconds each libFuzzer target runs after replaying its corpus
#                          (default 60, two at a time; 0 skips; tests/README.md, Fuzzing)
#   KDFORGE_FUZZ_SEED      their random seed (default 1)
#   KDFORGE_CCACHE         ON (default, where ccache is installed): every compile goes through
#                          ccache, its cache in ~/.cache/kdforge/ccache (CCACHE_DIR overrides),
#                          so a clean clone of sources compiled before rebuilds only what changed
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
here=$PWD
backends=${KDFORGE_TEST_BACKENDS:-Serial OpenMP}
cuda=${KDFORGE_CUDA:-auto}
root=${KDFORGE_BUILD_ROOT:-$here/build-tests}
jobs=${KDFORGE_BUILD_JOBS:-$(nproc)}

# every step's wall time, printed as it ends and again at the end, so the
# test command's cost on a CI machine shows step by step
step_names=() step_secs=()
step_start=$SECONDS
step_end() { # step_end NAME: the time since the last step ended
  local d=$((SECONDS - step_start))
  step_names+=("$1") step_secs+=("$d")
  echo "=== kdforge: $1 took ${d} s"
  step_start=$SECONDS
}
step_summary() {
  echo "=== kdforge: wall time by step"
  for i in "${!step_names[@]}"; do printf '  %-40s %6s s\n' "${step_names[$i]}" "${step_secs[$i]}"; done
  printf '  %-40s %6s s\n' total "$SECONDS"
}
ccache_report() { :; } # the compiler cache's hits and misses, where it is on (below)
trap 'ccache_report; step_summary' EXIT

bash cmake/install-deps.sh
step_end "dependencies"

if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

# --- the compiler cache: paths are hashed relative to the checkout
# (CCACHE_BASEDIR, CCACHE_NOHASHDIR), so one clone's objects serve the next
# clone of the same sources. CMake reads the launcher from the environment
# when it configures a new build tree: every build below uses it, the
# examples' consumer projects and the fuzz targets included.
if [ "${KDFORGE_CCACHE:-ON}" = ON ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kdforge/ccache}
  export CCACHE_BASEDIR=$here CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
  # depend mode: the compiler's own dependency file (-MD), not a separate
  # preprocessor run, lists the headers; ccache cannot preprocess through
  # Kokkos' nvcc_wrapper, so without it no Cuda object would be cached
  export CCACHE_DEPEND=1
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  ccache --zero-stats >/dev/null
  ccache_report() { echo "=== kdforge: compiler cache ($CCACHE_DIR)"; ccache --show-stats | grep -E 'Hits|Misses' || true; }
fi
# ---

# --- the Python module (python/): built and its pytest suite run in the
# OpenMP build only (ctest's kdforge_python); the other builds leave it out
python_off=(-DKDFORGE_ENABLE_PYTHON=OFF)
# ---

failed=0
for b in $backends; do
  echo "=== kdforge: $b backend: configure, build, test"
  # the benchmark driver's checks and the examples against the installed
  # package run in the OpenMP build; other CPU backends build the suite alone
  extra=()
  [ "$b" = OpenMP ] || extra=(-DKDFORGE_ENABLE_PERF=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF "${python_off[@]}")
  # --- sanitizers (tests/README.md, Sanitizers): the Serial suite is the sanitized one
  if [ "$b" = Serial ] && [ "${KDFORGE_SANITIZE:-ON}" = ON ]; then
    extra+=(-DKDFORGE_SANITIZE=ON)
  fi
  # ---
  # the distributed tree (kdforge::mpi: tests/mpi, run by ctest with mpirun
  # on 1..4 ranks) is built and tested in the OpenMP build only
  [ "$b" = OpenMP ] || extra+=(-DKDFORGE_ENABLE_MPI=OFF)
  # the features the sanitized Serial suite ran on Kokkos::Serial run on
  # OpenMP alone in the OpenMP build (the others on both)
  if [ "$b" = OpenMP ] && [[ " $backends " == *" Serial "* ]] && [ "${KDFORGE_SANITIZE:-ON}" = ON ]; then
    sanitized=$(sed -n 's/^set(KDFORGE_SANITIZE_FEATURES "\([^"]*\)".*/\1/p' tests/CMakeLists.txt)
    extra+=(-DKDFORGE_TEST_SERIAL_ELSEWHERE="$sanitized")
  fi
  cmake -S . -B "$root/$b" -G Ninja -DKDFORGE_BACKEND="$b" -DCMAKE_BUILD_TYPE=Release "${extra[@]}"
  cmake --build "$root/$b" --parallel "$jobs"
  step_end "$b: configure and build"
  # the Serial suite's entries are single-threaded: as many at once as there are cores
  ctest_jobs=1
  [ "$b" = Serial ] && ctest_jobs=$jobs
  (cd "$root/$b" && OMP_PROC_BIND=false ctest --output-on-failure -j "$ctest_jobs") || failed=1
  step_end "$b: ctest"
done

if [[ " $backends " == *" OpenMP "* ]] && command -v doxygen >/dev/null; then
  echo "=== kdforge: API reference (Doxygen)"
  cmake --build "$root/OpenMP" --target docs || failed=1
  step_end "API reference"
fi

# --- fuzzing (tests/README.md, Fuzzing): every libFuzzer target for a minute, two at a time
fuzz_seconds=${KDFORGE_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" != 0 ]; then
  echo "=== kdforge: fuzzing, $fuzz_seconds s per target"
  # a fixed seed: what the minute finds, it finds again on the next run of the same tree
  KDFORGE_FUZZ_SEED=${KDFORGE_FUZZ_SEED:-1} KDFORGE_FUZZ_BUILD="$root/fuzz" bash tests/fuzz/run.sh "$fuzz_seconds" || failed=1
  step_end "fuzzing: build and run"
fi
# ---

release=${KDFORGE_KOKKOS_RELEASE:-$here/../shared/vendor/kokkos-4.6.01.tar.gz}
if [ "$release" != off ] && [ -f "$release" ]; then
  echo "=== kdforge: OpenMP backend against Kokkos $(basename "$release"): configure, build, test"
  # without a BLAS, so that configuration (brute force by tiles alone) is compiled and tested too;
  # the features that reach every layer, builder and backend primitive (the whole suite ran above):
  # build for the point builders, bucket, vvh and rays for Hu's and Zhou's
  prefix=$(KDFORGE_KOKKOS_TARBALL="$release" bash cmake/kokkos-bootstrap.sh OpenMP | tail -n1)
  cmake -S . -B "$root/OpenMP-kokkos4" -G Ninja -DKDFORGE_BACKEND=OpenMP -DCMAKE_BUILD_TYPE=Release \
        -DKokkos_ROOT="$prefix" -DKDFORGE_BOOTSTRAP_KOKKOS=OFF -DKDFORGE_ENABLE_PERF=OFF -DKDFORGE_ENABLE_EXAMPLES=OFF \
        -DKDFORGE_ENABLE_MPI=OFF -DKDFORGE_ENABLE_BLAS=OFF \
        -DKDFORGE_TEST_FEATURE_SUBSET="${KDFORGE_KOKKOS4_FEATURES:-build;public_api;primitives;bucket;vvh;rays}" \
        "${python_off[@]}"
  cmake --build "$root/OpenMP-kokkos4" --parallel "$jobs"
  step_end "Kokkos 4: bootstrap, configure and build"
  (cd "$root/OpenMP-kokkos4" && OMP_PROC_BIND=false ctest --output-on-failure) || failed=1
  step_end "Kokkos 4: ctest"
fi

if [ "$cuda" != off ] && command -v nvcc >/dev/null; then
  echo "=== kdforge: Cuda backend: configure and compile (sm_90)"
  cmake -S . -B "$root/Cuda" -G Ninja -DKDFORGE_BACKEND=Cuda -DCMAKE_BUILD_TYPE=Release
  if [ "$cuda" = run ] || [ "$cuda" = full ]; then
    cmake --build "$root/Cuda" --parallel "$jobs"
  else
    # without a GPU: the benchmark driver's float 3-D case (every query
    # kernel of the point trees; its other cases are the same templates at
    # other D and T, minutes of nvcc each) and the instantiations it leaves
    # out (tests/cuda_compile_check.cpp); the full suite takes many times as long
    cmake --build "$root/Cuda" --parallel "$jobs" --target kdforge-bench-float3 kdforge_cuda_check
  fi
  step_end "Cuda: configure and compile"
  if [ "$cuda" = run ]; then
    (cd "$root/Cuda" && ctest --output-on-failure) || failed=1
    step_end "Cuda: ctest"
  else
    echo "=== kdforge: Cuda configuration compiled, not run (no GPU here; tests/README.md: running the tests on a GPU)"
  fi
elif [ "$cuda" = run ]; then
  echo "KDFORGE_CUDA=run but nvcc was not found" >&2; failed=1
fi
exit $failed
