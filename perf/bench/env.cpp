// kdforge-bench: the builder catalogue and facts about this build and machine.
#include "builders.hpp"
#include "options.hpp"

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <fstream>
#include <string>
#include <thread>

namespace kdforge_bench {

std::vector<BuilderInfo> builder_catalog() {
  std::vector<BuilderInfo> out;
  for_each_builder([&](auto* b) {
    using B = std::remove_pointer_t<decltype(b)>;
    out.push_back({B::name, B::description});
  });
  return out;
}

namespace {
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // x86: "model name"; some aarch64 kernels: "Model" or nothing at all
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto const colon = line.find(':');
      if (colon != std::string::npos) {
        auto const first = line.find_first_not_of(" \t", colon + 1);
        if (first != std::string::npos) return line.substr(first);
      }
    }
  }
  return "unknown CPU";
}
} // namespace

Environment environment() {
  Environment e;
  using Exec = Kokkos::DefaultExecutionSpace;
  e.backend = Exec::name();
  e.host_backend = Kokkos::DefaultHostExecutionSpace::name();
  e.kokkos_version = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                     std::to_string(KOKKOS_VERSION % 100);
  e.concurrency = int(Exec().concurrency());
  e.hardware_threads = std::thread::hardware_concurrency();
  e.cpu_model = cpu_model();
  e.device = e.cpu_model;
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same<Exec, Kokkos::Cuda>::value) {
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
      e.device = prop.name;
    else
      e.device = "unknown CUDA device";
  }
#endif
  return e;
}

} // namespace kdforge_bench
