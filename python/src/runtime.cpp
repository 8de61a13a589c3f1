// The Python module's Kokkos runtime: initialised on first use (or by
// kdforge.initialize), finalised at interpreter exit once every tree has
// released its Views; and the CUDA details of the caller's GPU arrays
// (which device they are on, the stream that produced them).
#include "space.hpp"

#include <kdforge/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <string>

namespace kdforge_python {

namespace {
bool g_initialized_here = false;
}

std::string compiled_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "Cuda";
#elif defined(KOKKOS_ENABLE_OPENMP)
  return "OpenMP";
#elif defined(KOKKOS_ENABLE_THREADS) || defined(KOKKOS_ENABLE_PTHREAD)
  return "Threads";
#else
  return "Serial";
#endif
}

bool compiled_for_gpu() { return !exec_on_host; }

void initialize(int num_threads, int device_id) {
  if (Kokkos::is_initialized()) return;
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings s;
  s.set_disable_warnings(true); // e.g. OMP_PROC_BIND unset: the Python process decides about binding
  if (num_threads > 0) s.set_num_threads(num_threads);
  if (device_id >= 0) s.set_device_id(device_id);
  Kokkos::initialize(s);
#else
  Kokkos::InitArguments a;
  a.disable_warnings = true;
  if (num_threads > 0) a.num_threads = num_threads;
  if (device_id >= 0) a.device_id = device_id;
  Kokkos::initialize(a);
#endif
  g_initialized_here = true;
}

bool is_initialized() { return Kokkos::is_initialized(); }

void finalize() {
  if (g_initialized_here && Kokkos::is_initialized()) Kokkos::finalize();
  g_initialized_here = false;
}

RuntimeInfo runtime_info() {
  RuntimeInfo info;
  info.backend = compiled_backend();
  info.gpu = compiled_for_gpu();
  info.kokkos_version = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
                        "." + std::to_string(KOKKOS_VERSION % 100);
  if (Kokkos::is_initialized()) {
    info.concurrency = Exec().concurrency();
#if defined(KOKKOS_ENABLE_CUDA)
    info.device_id = Kokkos::Cuda().cuda_device();
#endif
  }
  return info;
}

void synchronize_stream(std::uintptr_t stream) {
#if defined(KOKKOS_ENABLE_CUDA)
  // __cuda_array_interface__ v3: 1 is the legacy default stream, 2 the
  // per-thread one; the runtime takes both as stream handles
  if (stream != 0) {
    cudaError_t const e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream));
    KDFORGE_REQUIRE(e == cudaSuccess, "python", "waiting for the input's CUDA stream failed: ", cudaGetErrorString(e));
  }
#else
  (void)stream;
#endif
}

int device_of_pointer(std::uintptr_t ptr) {
#if defined(KOKKOS_ENABLE_CUDA)
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<void const*>(ptr)) != cudaSuccess) {
    (void)cudaGetLastError(); // not a CUDA pointer: clear the sticky-free error
    return -1;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged ? attr.device : -1;
#else
  (void)ptr;
  return -1;
#endif
}

void check_device_of(ArrayRef const& a, char const* what) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (a.rows == 0 || a.ptr == 0) return;
  int const dev = device_of_pointer(a.ptr);
  int const mine = Kokkos::Cuda().cuda_device();
  KDFORGE_REQUIRE(dev >= 0, "python", what, " are not in GPU memory CUDA knows (pass a CuPy array, a PyTorch CUDA "
                  "tensor or a NumPy array)");
  KDFORGE_REQUIRE(dev == mine, "python", what, " are on GPU ", dev, ", and kdforge runs on GPU ", mine,
                  "; move them (cupy.cuda.Device(", mine, ") / tensor.to('cuda:", mine,
                  "')) or pick the GPU with kdforge.initialize(device_id=", dev, ") before the first tree");
#else
  (void)a;
  (void)what;
#endif
}

} // namespace kdforge_python
