#pragma once
// How many GPUs this process sees (CUDA_VISIBLE_DEVICES applied), asked
// before Kokkos is initialised, so that a process can pick its device; 0 in
// builds without a GPU backend. Target-specific, hence here: the CUDA
// runtime's device count (Kokkos 4 deprecates Kokkos::Cuda::detect_device_count).
#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kdforge::backend {

/// GPUs visible to this process; 0 where none is usable or the build has no
/// GPU backend.
inline int visible_gpu_count() {
#if defined(KOKKOS_ENABLE_CUDA)
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError(); // clear the sticky error of a machine without a driver
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

} // namespace kdforge::backend
